// The system libcurl headers, exposed to Swift as module CCurl.
#include <curl/curl.h>
