// libbrotlidec, for decoding brotli (`br`) response bodies in the library itself (see ContentDecoder).
#include <brotli/decode.h>
