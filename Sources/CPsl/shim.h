// libpsl, the Public Suffix List (the one libcurl links too): the library refuses a cookie whose
// Domain attribute names a public suffix (see PublicSuffixList).
#include <libpsl.h>
