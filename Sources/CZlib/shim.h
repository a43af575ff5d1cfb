// zlib: the library decodes gzip and deflate response bodies with it (see ContentDecoder); onet
// compresses request bodies and the test server its /gzip route with it.
#include <zlib.h>
