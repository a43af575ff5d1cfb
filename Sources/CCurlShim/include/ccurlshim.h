// Typed wrappers around libcurl's variadic calls, which Swift cannot call directly (one per argument
// type and one per callback type), and the few C declarations Swift does not import on its own.
#ifndef CCURLSHIM_H
#define CCURLSHIM_H

// curl.h is part of no module map, so both CCurl and this module include it textually, and Clang makes
// whichever of the two it loads first in a compile job the owner of curl's declarations. Every Swift
// file that imports one of them imports both, or curl's names vanish from files whose job loaded the
// other first (seen as "cannot find 'CURLE_OK' in scope" in some builds and not others).
#include <curl/curl.h>
// C declarations Swift's Glibc module leaves out: malloc_usable_size (MallocThresholds.swift) and
// eventfd (WakeupChannel.swift).
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__linux__)
#include <sys/eventfd.h>
#endif
#include <stddef.h>

// MARK: - curl_easy_setopt
CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode ccurl_easy_setopt_ptr(CURL *handle, CURLoption option, void *value);
CURLcode ccurl_easy_setopt_str(CURL *handle, CURLoption option, const char *value);
CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *list);
/// CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature.
CURLcode ccurl_easy_setopt_write_function(CURL *handle, CURLoption option, curl_write_callback callback);
CURLcode ccurl_easy_setopt_read_function(CURL *handle, curl_read_callback callback);
CURLcode ccurl_easy_setopt_seek_function(CURL *handle, curl_seek_callback callback);
CURLcode ccurl_easy_setopt_prereq_function(CURL *handle, curl_prereq_callback callback);
CURLcode ccurl_easy_setopt_ssl_ctx_function(CURL *handle, curl_ssl_ctx_callback callback);
CURLcode ccurl_easy_setopt_opensocket_function(CURL *handle, curl_opensocket_callback callback);
CURLcode ccurl_easy_setopt_closesocket_function(CURL *handle, curl_closesocket_callback callback);

/// Blob options (CURLOPT_CAINFO_BLOB, CURLOPT_SSLCERT_BLOB, …); libcurl copies the bytes.
CURLcode ccurl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length);

// MARK: - curl_easy_getinfo
CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *out);
CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *out);
CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **out);
CURLcode ccurl_easy_getinfo_ptr(CURL *handle, CURLINFO info, void **out);

// MARK: - curl_multi_setopt
CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

// MARK: - curl_share_setopt
/// CURLSHOPT_SHARE / CURLSHOPT_UNSHARE take a curl_lock_data value.
CURLSHcode ccurl_share_setopt_long(CURLSH *share, CURLSHoption option, long value);

// MARK: - Constants that do not import into Swift as usable values
/// CURL_READFUNC_ABORT, returned by a read callback to abort the transfer.
size_t ccurl_readfunc_abort(void);
/// CURL_READFUNC_PAUSE, returned by a read callback to pause the upload.
size_t ccurl_readfunc_pause(void);

// MARK: - Network-thread confinement (debug assertions)
/// Marks the calling thread as the network thread `owner` runs (a thread-local, never cleared).
void ccurl_mark_network_thread(const void *owner);
/// 1 on a thread marked by ccurl_mark_network_thread, 0 elsewhere.
int ccurl_is_network_thread(void);
/// The owner the calling thread was marked with; NULL off every network thread.
const void *ccurl_current_network_thread(void);

#endif
