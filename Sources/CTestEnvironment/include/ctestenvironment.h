// The test process's environment, set before any test (or Foundation) runs. Linked into the test
// bundle only; the library and onet never link it.
#ifndef CTESTENVIRONMENT_H
#define CTESTENVIRONMENT_H

/// The directory this test process made for itself and set as XDG_CACHE_HOME before main, so that
/// URLCache.shared writes there and never into the user's cache directory. Every other entry of the
/// user's cache directory (then in ONET_TESTS_USER_CACHE_HOME) is linked into it, so the tools the tests
/// run keep their caches. Removed at exit. NULL if it could not be made (XDG_CACHE_HOME is then left as
/// it was).
const char *cte_private_cache_home(void);

#endif
