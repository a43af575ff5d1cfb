// libzstd, for decoding zstd response bodies in the library itself (see ContentDecoder), and for
// encoding them in the test server.
#include <zstd.h>
