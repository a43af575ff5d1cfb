/* curl-multi: the benchmark's raw libcurl client, no library in between (bench/README.md).
 *
 * One thread, one multi handle, min(C, N) easy handles made once. A handle whose transfer ends is
 * removed and added again for the next request, so handles and their connections are reused;
 * curl_multi_poll waits for sockets. Bodies are counted and dropped in the write callback.
 *
 *   curl-multi --url URL --requests N --concurrency C [--method GET|POST] [--body-size BYTES]
 *              [--max-host-conns K] [--cacert FILE]
 *
 * --cacert FILE is CURLOPT_CAINFO, as with curl(1): FILE replaces the system bundle, so bench/run
 * passes the system bundle with the run's CA appended (libcurl then does the work it does for a
 * public server). With BENCH_H2=1 in the environment (the HTTP/2 workloads) it asks for HTTP/2 over
 * TLS and multiplexes, one connection per 128 streams unless --max-host-conns says otherwise.
 * Last line: RESULT requests=... errors=... wall_s=... rps=... mbps=... bytes=...
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct options {
    const char *url;
    const char *cacert;
    long requests, concurrency, body_size, max_host_conns;
    int post, http2;
};

/* One easy handle and the body bytes its current transfer received. */
struct slot {
    CURL *easy;
    long long received;
};

static void usage(const char *message) {
    fprintf(stderr, "curl-multi: %s\nusage: curl-multi --url URL --requests N --concurrency C "
            "[--method GET|POST] [--body-size BYTES] [--max-host-conns K] [--cacert FILE]\n", message);
    exit(2);
}

static long number(const char *flag, const char *value, long least) {
    char *end;
    long n = strtol(value, &end, 10);
    if (*value == '\0' || *end != '\0' || n < least) {
        fprintf(stderr, "curl-multi: %s needs a whole number of at least %ld, not %s\n", flag, least, value);
        exit(2);
    }
    return n;
}

static struct options parse(int argc, char **argv) {
    struct options o = { NULL, NULL, 1000, 1, 0, 0, 0, 0 };
    for (int i = 1; i < argc; i += 2) {
        const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!value) usage("an option lacks its value");
        if (!strcmp(flag, "--url")) o.url = value;
        else if (!strcmp(flag, "--requests")) o.requests = number(flag, value, 1);
        else if (!strcmp(flag, "--concurrency")) o.concurrency = number(flag, value, 1);
        else if (!strcmp(flag, "--body-size")) o.body_size = number(flag, value, 0);
        else if (!strcmp(flag, "--max-host-conns")) o.max_host_conns = number(flag, value, 0);
        else if (!strcmp(flag, "--cacert")) o.cacert = value;
        else if (!strcmp(flag, "--method")) {
            if (!strcasecmp(value, "POST")) o.post = 1;
            else if (strcasecmp(value, "GET")) usage("--method must be GET or POST");
        } else usage("unknown option");
    }
    if (!o.url) usage("--url is required");
    const char *h2 = getenv("BENCH_H2");
    o.http2 = h2 && !strcmp(h2, "1");
    return o;
}

static size_t count_body(char *data, size_t size, size_t count, void *slot) {
    (void)data;
    ((struct slot *)slot)->received += (long long)(size * count);
    return size * count;
}

static void configure(struct slot *s, const struct options *o, struct curl_slist *headers, const char *body) {
    CURL *e = s->easy;
    curl_easy_setopt(e, CURLOPT_URL, o->url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, count_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, o->http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);
    if (o->http2) curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    if (o->cacert) curl_easy_setopt(e, CURLOPT_CAINFO, o->cacert);
    if (o->post) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)o->body_size);
    }
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    struct options o = parse(argc, argv);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) { fprintf(stderr, "curl-multi: no libcurl\n"); return 1; }
    long handles = o.concurrency < o.requests ? o.concurrency : o.requests;
    char *body = o.post ? calloc(1, (size_t)o.body_size + 1) : NULL;
    struct slot *slots = calloc((size_t)handles, sizeof *slots);
    CURLM *multi = curl_multi_init();
    if ((o.post && !body) || !slots || !multi) { fprintf(stderr, "curl-multi: out of memory\n"); return 1; }
    if (body) memset(body, 'x', (size_t)o.body_size);

    /* No "Expect: 100-continue" round trip before a POST body; the body's type stated. */
    struct curl_slist *headers = curl_slist_append(NULL, "Expect:");
    if (o.post) headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    long host_conns = o.max_host_conns;
    if (o.http2 && host_conns == 0) host_conns = (handles + 127) / 128;
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, host_conns);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, handles > 16 ? handles : 16L);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, o.http2 ? CURLPIPE_MULTIPLEX : CURLPIPE_NOTHING);
    for (long i = 0; i < handles; i++) {
        slots[i].easy = curl_easy_init();
        if (!slots[i].easy) { fprintf(stderr, "curl-multi: no easy handle\n"); return 1; }
        curl_easy_setopt(slots[i].easy, CURLOPT_PRIVATE, &slots[i]);
        configure(&slots[i], &o, headers, body);
    }

    long started = 0, finished = 0, errors = 0, connections = 0;
    long long bytes = 0;
    double start = seconds_now();
    for (long i = 0; i < handles; i++, started++) curl_multi_add_handle(multi, slots[i].easy);
    while (finished < o.requests) {
        int running, queued;
        curl_multi_perform(multi, &running);
        CURLMsg *message;
        while ((message = curl_multi_info_read(multi, &queued))) {
            if (message->msg != CURLMSG_DONE) continue;
            struct slot *s = NULL;
            long status = 0, opened = 0;
            curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            curl_easy_getinfo(message->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            curl_easy_getinfo(message->easy_handle, CURLINFO_NUM_CONNECTS, &opened);
            connections += opened;
            finished++;
            if (message->data.result != CURLE_OK || status < 200 || status > 399) {
                if (++errors <= 3)
                    fprintf(stderr, "error: %s, status %ld\n", curl_easy_strerror(message->data.result), status);
            } else {
                bytes += s->received + (o.post ? o.body_size : 0);
            }
            s->received = 0;
            curl_multi_remove_handle(multi, s->easy);
            if (started < o.requests) { curl_multi_add_handle(multi, s->easy); started++; }
        }
        if (finished < o.requests) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    double wall = seconds_now() - start;

    printf("# client=curl-multi libcurl=%s handles=%ld http2=%d cacert=%s connections=%ld\n",
           curl_version_info(CURLVERSION_NOW)->version, handles, o.http2, o.cacert ? o.cacert : "-", connections);
    printf("RESULT requests=%ld errors=%ld wall_s=%.6f rps=%.2f mbps=%.3f bytes=%lld\n", finished, errors, wall,
           (double)(finished - errors) / wall, (double)bytes / 1e6 / wall, bytes);
    for (long i = 0; i < handles; i++) curl_easy_cleanup(slots[i].easy);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    free(slots);
    free(body);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
