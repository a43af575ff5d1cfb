// Typed wrappers around libcurl's variadic calls, which Swift cannot call directly (one per argument
// type and one per callback type), and the response header collector (headerblock.c), the one piece
// of logic kept in C: it runs for every header line of every response.
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
#include <stdint.h>

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
/// Marks the calling thread as a network thread (a thread-local flag, never cleared).
void ccurl_mark_network_thread(void);
/// 1 on a thread marked by ccurl_mark_network_thread, 0 elsewhere.
int ccurl_is_network_thread(void);

// MARK: - Response header collection (headerblock.c)
// curl calls its header function once per line. Field lines are only kept, as received, with where
// each field's name and value lie, until the block ends, so they stay in C: Swift is called for a
// block's status line, its end (the empty line) and a refusal, and takes the lines and fields then.

/// Events handed to `ccurl_header_block.on_event`, and returned by `ccurl_header_block_consume`.
/// A field line (or any line that is neither a status line nor the empty line) was kept.
#define CCURL_HEADER_FIELD 0
/// A status line ("HTTP/…") began a block: the kept lines were dropped.
#define CCURL_HEADER_STATUS 1
/// The empty line ended a block.
#define CCURL_HEADER_END 2
/// The block passed `limit` bytes; the line was not kept.
#define CCURL_HEADER_TOO_LARGE 3
/// No memory to keep the line.
#define CCURL_HEADER_NO_MEMORY 4

struct ccurl_header_block;
/// Where one field of a block lies in `bytes`: its name and its value, each trimmed of spaces and tabs.
typedef struct ccurl_field_span {
    int32_t name_start, name_end, value_start, value_end;
} ccurl_field_span;
/// What a block's fields say that every response is read for, noted as each field is found so that
/// Swift does not compare names again: where the first of each such field is, by its index in the spans.
typedef struct ccurl_head_summary {
    /// Index of the first `Content-Type`, `Content-Length` and `Content-Encoding` field; -1 for none.
    int32_t content_type, content_length, content_encoding;
    /// Whether any `Set-Cookie` field came (1) or none (0).
    int32_t has_set_cookie;
    /// Whether a later `Content-Length` value differs from the first one, compared as bytes (1) or not (0).
    int32_t conflicting_lengths;
} ccurl_head_summary;

/// A summary of no fields.
void ccurl_head_summary_clear(ccurl_head_summary *summary);
/// Notes field `index` of `spans` (which point into `bytes`), names compared ASCII case-insensitively.
/// Fields are noted in order, each once.
void ccurl_head_summary_note(ccurl_head_summary *summary, const unsigned char *bytes,
                             const ccurl_field_span *spans, size_t index);

/// Called for every event but CCURL_HEADER_FIELD, with the line as curl gave it; non-zero to go on.
typedef int (*ccurl_header_event_callback)(struct ccurl_header_block *block, const char *line, size_t length,
                                           int event);

/// One header block being received. Owned by one easy handle and used only on the network thread.
typedef struct ccurl_header_block {
    /// The block's lines after its status line, as received (line ends included): `count` bytes of
    /// `capacity`, malloc'd, kept across blocks and transfers.
    unsigned char *bytes;
    size_t count;
    size_t capacity;
    /// Bytes of the block so far, status line included; more than `limit` is refused.
    size_t block_bytes;
    size_t limit;
    /// Whether a kept line begins with a space or tab (obsolete folding of the line before): the
    /// spans then leave the folded values out, and the block is split again in Swift.
    int folded;
    /// The fields of the kept lines, in order: `span_count` of `span_capacity`, malloc'd, kept like
    /// `bytes`. A line without a colon or without a name has none.
    ccurl_field_span *spans;
    size_t span_count;
    size_t span_capacity;
    /// The spans' summary, kept as they are found. Unused for a folded block: Swift splits that again
    /// and summarises its own spans.
    ccurl_head_summary summary;
    /// The time stamped on each line (the network thread's clock of the loop turn), or NULL for
    /// CLOCK_MONOTONIC read at each line; and the stamp of the last line, in nanoseconds.
    const uint64_t *clock;
    uint64_t activity;
    /// Given back to `on_event` through the block: the transfer receiving the block.
    void *owner;
    ccurl_header_event_callback on_event;
} ccurl_header_block;

/// A block with no lines; NULL without memory. `on_event` may be NULL (then `consume` is the only use).
/// `limit` is held to INT32_MAX, so that every offset fits a span.
ccurl_header_block *ccurl_header_block_create(size_t limit, const uint64_t *clock, ccurl_header_event_callback on_event);
void ccurl_header_block_destroy(ccurl_header_block *block);
/// Back to no lines, no bytes counted, no activity: for a new hop.
void ccurl_header_block_reset(ccurl_header_block *block);
/// Drops the kept lines (an informational block ended).
void ccurl_header_block_clear_lines(ccurl_header_block *block);
/// Takes one line as curl gives it and says what it was (a CCURL_HEADER_ event); stamps activity.
int ccurl_header_block_consume(ccurl_header_block *block, const char *line, size_t length);
/// CURLOPT_HEADERFUNCTION, with CURLOPT_HEADERDATA a `ccurl_header_block *`: consume, then hand every
/// event but a kept field line to `on_event`; 0 (abort) when it says stop or nothing handles it.
size_t ccurl_header_callback(char *buffer, size_t size, size_t count, void *userdata);

#endif
