// zlib, for decoding gzip and deflate response bodies in the library itself (see ContentDecoder).
#include <zlib.h>
