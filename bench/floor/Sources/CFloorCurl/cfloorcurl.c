#include "cfloorcurl.h"
#include <stdlib.h>
#include <string.h>

static size_t floor_on_data(char *data, size_t size, size_t count, void *userdata) {
    (void)data;
    *(long long *)userdata += (long long)(size * count);
    return size * count;
}

static struct curl_slist *floor_headers(const char *header, int post) {
    static struct curl_slist *headers;   // made once, on the loop thread, before any transfer
    if (!headers) {
        headers = curl_slist_append(NULL, "Expect:");
        // curl-multi's explicit body type for a POST.
        if (headers && post) headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
        if (headers && header) headers = curl_slist_append(headers, header);
    }
    return headers;
}

CURLM *floor_multi_new(long handles, int http2) {
    CURLM *multi = curl_multi_init();
    if (!multi) return NULL;
    // As curl-multi: over HTTP/2, one connection per 128 streams (nginx's limit), multiplexed.
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, http2 ? (handles + 127) / 128 : 0L);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, handles > 16 ? handles : 16L);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)(http2 ? CURLPIPE_MULTIPLEX : CURLPIPE_NOTHING));
    return multi;
}

CURL *floor_easy_new(const char *url, long long *received, const char *header, int read_head, int post, int http2) {
    CURL *easy = curl_easy_init();
    if (!easy) return NULL;
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, floor_on_data);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, received);
    if (read_head) {
        curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, floor_on_data);
        curl_easy_setopt(easy, CURLOPT_HEADERDATA, received);
    }
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, floor_headers(header, post));
    curl_easy_setopt(easy, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)(http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1));
    if (http2) curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
    return easy;
}

void floor_easy_bundle_only(CURL *easy) {
    curl_easy_setopt(easy, CURLOPT_CAPATH, NULL);
}

void floor_easy_buffer_size(CURL *easy, long bytes) {
    curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, bytes);
}

void floor_easy_set_body(CURL *easy, const void *body, long long size) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
}

static size_t floor_on_read(char *buffer, size_t size, size_t count, void *userdata) {
    floor_handle_state *state = userdata;
    size_t left = (size_t)(state->body_size - state->body_offset);
    size_t length = size * count < left ? size * count : left;
    memcpy(buffer, state->body + state->body_offset, length);
    state->body_offset += (long long)length;
    return length;
}

void floor_easy_upload_by_read(CURL *easy, floor_handle_state *state) {
    curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "POST");
    curl_easy_setopt(easy, CURLOPT_READFUNCTION, floor_on_read);
    curl_easy_setopt(easy, CURLOPT_READDATA, state);
}

void floor_easy_read_body(CURL *easy, floor_handle_state *state, const void *body, long long size) {
    state->body = body;
    state->body_size = size;
    state->body_offset = 0;
    curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
}

int floor_easy_set_header_lines(CURL *easy, floor_handle_state *state, const char *const *lines, long count) {
    curl_slist_free_all(state->headers);
    state->headers = curl_slist_append(NULL, "Expect:");
    for (long i = 0; state->headers && i < count; i++) {
        struct curl_slist *longer = curl_slist_append(state->headers, lines[i]);
        if (!longer) curl_slist_free_all(state->headers);
        state->headers = longer;
    }
    if (!state->headers) return 0;
    return curl_easy_setopt(easy, CURLOPT_HTTPHEADER, state->headers) == CURLE_OK;
}

void floor_easy_set_private(CURL *easy, void *pointer) {
    curl_easy_setopt(easy, CURLOPT_PRIVATE, pointer);
}

void *floor_easy_private(CURL *easy) {
    char *pointer = NULL;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &pointer);
    return pointer;
}

CURL *floor_multi_next_done(CURLM *multi, int *failed, long *status_out) {
    int left = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &left))) {
        if (message->msg != CURLMSG_DONE) continue;
        long status = 0;
        curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        *failed = message->data.result != CURLE_OK || status < 200 || status > 399;
        *status_out = status;
        return message->easy_handle;
    }
    return NULL;
}

static size_t floor_on_head(char *data, size_t size, size_t count, void *userdata) {
    floor_handle_state *head = userdata;
    size_t length = size * count;
    if (length >= 5 && memcmp(data, "HTTP/", 5) == 0) head->length = 0;
    if (head->length + length > head->capacity) {
        size_t capacity = head->capacity ? head->capacity : 1024;
        while (capacity < head->length + length) capacity *= 2;
        char *grown = realloc(head->bytes, capacity);
        if (!grown) return 0;
        head->bytes = grown;
        head->capacity = capacity;
    }
    memcpy(head->bytes + head->length, data, length);
    head->length += length;
    return length;
}

void floor_easy_keep_head(CURL *easy, floor_handle_state *head) {
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, floor_on_head);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, head);
}

void floor_easy_set_url(CURL *easy, const char *url) {
    curl_easy_setopt(easy, CURLOPT_URL, url);
}

extern char **environ;

int floor_environment_names_proxy(void) {
    static const char *const names[] = {
        "http_proxy=", "https_proxy=", "HTTPS_PROXY=", "all_proxy=", "ALL_PROXY=",
    };
    if (!environ) return 0;
    for (char **entry = environ; *entry; entry++) {
        char first = (*entry)[0];
        if (first != 'h' && first != 'H' && first != 'a' && first != 'A') continue;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            if (strncmp(*entry, names[i], strlen(names[i])) == 0) return 1;
        }
    }
    return 0;
}

void floor_easy_go_direct(CURL *easy, floor_handle_state *state, int direct) {
    if (state->direct == direct) return;
    curl_easy_setopt(easy, CURLOPT_PROXY, direct ? "" : NULL);
    curl_easy_setopt(easy, CURLOPT_NOPROXY, direct ? "" : NULL);
    state->direct = direct;
}
