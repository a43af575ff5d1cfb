// The few libcurl calls `floor --url` needs, typed for Swift (curl_easy_setopt is variadic).
// Each easy handle is set up the way the harness's curl-multi sets up its own, so that the floor's
// composite run adds exactly the model's hops to raw libcurl's work and nothing else.
#ifndef CFLOORCURL_H
#define CFLOORCURL_H
#include <curl/curl.h>

/// A multi handle with curl-multi's connection limits for `handles` easy handles.
CURLM *floor_multi_new(long handles);
/// An easy handle for GET `url` over HTTP/1.1, counting the body's bytes into `*received`, with
/// `header` ("Name: value", or NULL) added to the request; if `read_head`, the response's header lines
/// are handed to a header callback that only counts their bytes (libcurl's side of giving a client
/// the head).
CURL *floor_easy_new(const char *url, long long *received, const char *header, int read_head);
/// Attaches / reads back the caller's pointer (CURLOPT_PRIVATE / CURLINFO_PRIVATE).
void floor_easy_set_private(CURL *easy, void *pointer);
void *floor_easy_private(CURL *easy);
/// The next finished transfer from curl_multi_info_read, or NULL; `*status` is its HTTP status, and
/// `*failed` is 1 unless it ended with CURLE_OK and a status in 200-399 (the harness's rule).
CURL *floor_multi_next_done(CURLM *multi, int *failed, long *status);

/// What `--contract` keeps per easy handle: the response head, kept in C as it arrives (its lines
/// appended to a buffer reused across transfers, started afresh at each status line, as a library must
/// keep a head whole to give the operation its `response`), and whether the handle goes direct.
typedef struct floor_handle_state {
    char *bytes;
    size_t length, capacity;
    /// Whether the handle is set to go direct (see `floor_easy_go_direct`).
    int direct;
} floor_handle_state;
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
#endif
