// libbrotlienc, for the test server's brotli (`br`) bodies only; the library links just the decoder.
#include <brotli/encode.h>
