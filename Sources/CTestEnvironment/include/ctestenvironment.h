// The test process's environment, set before any test (or Foundation) runs. Linked into the test
// bundle only; the library and onet never link it.
#ifndef CTESTENVIRONMENT_H
#define CTESTENVIRONMENT_H

/// The directory this test process made for itself and set as XDG_CACHE_HOME before main, so that
/// URLCache.shared and anything else that caches writes there and never into the user's ~/.cache.
/// Removed at exit. NULL if it could not be made (XDG_CACHE_HOME is then left as it was).
const char *cte_private_cache_home(void);

#endif
