// The few libcurl calls `floor --url` needs, typed for Swift (curl_easy_setopt is variadic).
// Each easy handle is set up the way the harness's curl-multi sets up its own, so that the floor's
// composite run adds exactly the model's hops to raw libcurl's work and nothing else.
#ifndef CFLOORCURL_H
#define CFLOORCURL_H
#include <curl/curl.h>

/// A multi handle with curl-multi's connection limits for `handles` easy handles; with `http2`, as
/// curl-multi sets it under `BENCH_H2=1` (streams multiplexed, one connection per 128 handles).
CURLM *floor_multi_new(long handles, int http2);
/// What a handle keeps under `--contract` (or for a POST through a read callback): the response head,
/// kept in C as it arrives (its lines appended to a buffer reused across transfers, started afresh at
/// each status line, as a library must keep a head whole to give the operation its `response`), the
/// body being read, the request's header lines, and whether the handle goes direct.
typedef struct floor_handle_state {
    char *bytes;
    size_t length, capacity;
    /// With a read callback: the body of the POST under way and how much of it libcurl has taken.
    const char *body;
    long long body_size, body_offset;
    /// Whether the handle is set to go direct (see `floor_easy_go_direct`).
    int direct;
    /// The request header lines set on the handle by `floor_easy_set_header_lines`, or NULL.
    struct curl_slist *headers;
    /// The caller's header fields those lines were made from (a retained Swift object), or NULL.
    void *sent_fields;
} floor_handle_state;
/// Sets "Expect:" and `count` header `lines` ("Name: value") as the request headers of `easy`, kept in
/// `state` (the list set before is freed). 0 when out of memory or refused.
int floor_easy_set_header_lines(CURL *easy, floor_handle_state *state, const char *const *lines, long count);
/// An easy handle for GET `url` over HTTP/1.1 (with `http2`, HTTP/2 over TLS waiting to multiplex, as
/// curl-multi under `BENCH_H2=1`), counting the body's bytes into `*received`, with
/// `header` ("Name: value", or NULL) added to the request; if `read_head`, the response's header lines
/// are handed to a header callback that only counts their bytes (libcurl's side of giving a client
/// the head). With `post`, its shared header list also carries curl-multi's `Content-Type:
/// application/octet-stream`; the body is then given by `floor_easy_set_body` (from memory, as
/// curl-multi sends it) or by `floor_easy_upload_by_read` and `floor_easy_read_body` (a read callback,
/// as a library streams it).
CURL *floor_easy_new(const char *url, long long *received, const char *header, int read_head, int post,
                    int http2);
/// Trust from the CA bundle file alone, with no certificate directory (Debian's libcurl names both), so
/// that libcurl keeps the parsed bundle in the multi handle's CA cache instead of loading it again for
/// every new TLS connection, as onet does (`--ca-cache`).
void floor_easy_bundle_only(CURL *easy);
/// Sets the handle's receive buffer (`CURLOPT_BUFFERSIZE`), as a library that reads large bodies does.
void floor_easy_buffer_size(CURL *easy, long bytes);
/// The body of the next POST on `easy`: `size` bytes at `body`, which must stay valid until the
/// transfer ends (CURLOPT_POSTFIELDS does not copy).
void floor_easy_set_body(CURL *easy, const void *body, long long size);
/// Makes `easy` POST its bodies through a read callback copying from `state`'s body (once per handle).
void floor_easy_upload_by_read(CURL *easy, struct floor_handle_state *state);
/// The body the read callback hands over for the next POST on `easy`: `size` bytes at `body`, which must
/// stay valid until the transfer ends.
void floor_easy_read_body(CURL *easy, struct floor_handle_state *state, const void *body, long long size);
/// Attaches / reads back the caller's pointer (CURLOPT_PRIVATE / CURLINFO_PRIVATE).
void floor_easy_set_private(CURL *easy, void *pointer);
void *floor_easy_private(CURL *easy);
/// The next finished transfer from curl_multi_info_read, or NULL; `*status` is its HTTP status, and
/// `*failed` is 1 unless it ended with CURLE_OK and a status in 200-399 (the harness's rule).
CURL *floor_multi_next_done(CURLM *multi, int *failed, long *status);
/// Hands the response's header lines of `easy` to `head` instead of a callback that only counts them.
void floor_easy_keep_head(CURL *easy, floor_handle_state *head);
/// Sets the URL of the next transfer on a reused handle (a library's handles serve any request).
void floor_easy_set_url(CURL *easy, const char *url);
/// Whether the environment names a proxy libcurl would use (`http_proxy`, `https_proxy`,
/// `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY`): one pass over `environ`.
int floor_environment_names_proxy(void);
/// With `direct`, the handle goes direct and libcurl skips its five proxy `getenv` calls per
/// transfer; without, libcurl reads the environment again. Changes the handle only when `state->direct`
/// differs.
void floor_easy_go_direct(CURL *easy, floor_handle_state *state, int direct);
/// How many distinct footprint functions `floor_footprint` can call (footprint.c).
long floor_footprint_functions(void);
/// Calls footprint functions `first` ..< `first + count` (clamped to those there are) in turn on `value`.
unsigned long long floor_footprint(long first, long count, unsigned long long value);
/// How many distinct page-apart footprint functions `floor_footprint_paged` can call (footprint.c).
long floor_footprint_paged_functions(void);
/// As `floor_footprint`, with functions that each lie on a page of their own.
unsigned long long floor_footprint_paged(long first, long count, unsigned long long value);
/// Reads `lines` distinct 64-byte lines of footprint.c's data region (and writes every fourth), from
/// where the calling thread's last call stopped.
unsigned long long floor_data_touch(long lines, unsigned long long value);
#endif
