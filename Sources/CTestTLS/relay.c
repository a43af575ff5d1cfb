// One connection's thread: the TLS handshake, then the plaintext relayed both ways between the client
// and the plain server until either side closes or the front stops.
#include "front_internal.h"

#include <errno.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

enum { relay_buffer_size = 16384 };

/// One direction's bytes in flight. It is filled only when empty and then drained, so a TLS write that
/// must be retried is retried with the same bytes, as OpenSSL requires.
struct relay_buffer {
    unsigned char bytes[relay_buffer_size];
    size_t start;
    size_t end;
};

struct relay {
    SSL *ssl;
    int client;
    int backend;
    int stop;
    /// From the client to the plain server, and back.
    struct relay_buffer upstream;
    struct relay_buffer downstream;
    /// The client sent close_notify or closed; its TLS failed or its connection was reset.
    int client_closed;
    int client_failed;
    /// The plain server closed; its connection was reset or refused a write.
    int backend_closed;
    int backend_failed;
    /// The front is stopping.
    int stopping;
    /// What each socket must become ready for before a blocked step can go on (poll events).
    short client_events;
    short backend_events;
};

static int is_empty(const struct relay_buffer *buffer) { return buffer->start == buffer->end; }

static void consume(struct relay_buffer *buffer, size_t count) {
    buffer->start += count;
    if (buffer->start == buffer->end) buffer->start = buffer->end = 0;
}

/// Waits until `fd` is ready for `events`; 0 then, -1 when the front stops first.
static int wait_for(int stop, int fd, short events) {
    struct pollfd fds[2] = {{.fd = fd, .events = events}, {.fd = stop, .events = POLLIN}};
    while (poll(fds, 2, -1) < 0) {
        if (errno != EINTR) return -1;
    }
    return fds[1].revents != 0 ? -1 : 0;
}

/// The poll events a TLS call that could not go on waits for (0: it failed for good).
static short events_for(SSL *ssl, int result) {
    switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ: return POLLIN;
    case SSL_ERROR_WANT_WRITE: return POLLOUT;
    default: return 0;
    }
}

static int handshake(SSL *ssl, int client, int stop) {
    for (;;) {
        ERR_clear_error();
        int result = SSL_accept(ssl);
        if (result == 1) return 1;
        short events = events_for(ssl, result);
        if (events == 0 || wait_for(stop, client, events) != 0) return 0;
    }
}

/// Each step returns 1 when it moved bytes or learnt of a close, 0 when it is blocked (and says on what)
/// or has nothing to do.
static int read_client(struct relay *relay) {
    if (!is_empty(&relay->upstream) || relay->client_closed) return 0;
    ERR_clear_error();
    int count = SSL_read(relay->ssl, relay->upstream.bytes, relay_buffer_size);
    if (count > 0) {
        relay->upstream.end = (size_t)count;
        return 1;
    }
    int reason = SSL_get_error(relay->ssl, count);
    short events = events_for(relay->ssl, count);
    if (events != 0) {
        relay->client_events |= events;
        return 0;
    }
    relay->client_closed = 1;
    // A clean close_notify is answered; an EOF without one, a reset or a TLS error is not.
    if (reason != SSL_ERROR_ZERO_RETURN) relay->client_failed = 1;
    return 1;
}

static int write_backend(struct relay *relay) {
    struct relay_buffer *buffer = &relay->upstream;
    if (is_empty(buffer)) return 0;
    ssize_t sent = send(relay->backend, buffer->bytes + buffer->start, buffer->end - buffer->start, MSG_NOSIGNAL);
    if (sent > 0) {
        consume(buffer, (size_t)sent);
        return 1;
    }
    if (sent < 0 && errno == EINTR) return 1;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        relay->backend_events |= POLLOUT;
        return 0;
    }
    relay->backend_failed = 1;
    return 1;
}

static int read_backend(struct relay *relay) {
    struct relay_buffer *buffer = &relay->downstream;
    if (!is_empty(buffer) || relay->backend_closed) return 0;
    ssize_t count = recv(relay->backend, buffer->bytes, relay_buffer_size, 0);
    if (count > 0) {
        buffer->end = (size_t)count;
        return 1;
    }
    if (count < 0 && errno == EINTR) return 1;
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        relay->backend_events |= POLLIN;
        return 0;
    }
    relay->backend_closed = 1;
    if (count < 0) relay->backend_failed = 1;
    return 1;
}

static int write_client(struct relay *relay) {
    struct relay_buffer *buffer = &relay->downstream;
    if (is_empty(buffer) || relay->client_failed) return 0;
    ERR_clear_error();
    int count = SSL_write(relay->ssl, buffer->bytes + buffer->start, (int)(buffer->end - buffer->start));
    if (count > 0) {
        consume(buffer, (size_t)count);
        return 1;
    }
    short events = events_for(relay->ssl, count);
    if (events != 0) {
        relay->client_events |= events;
        return 0;
    }
    relay->client_failed = 1;
    return 1;
}

/// Over when either side failed, or closed with nothing left to pass on from it.
static int is_over(const struct relay *relay) {
    return relay->client_failed || relay->backend_failed || (relay->client_closed && is_empty(&relay->upstream))
           || (relay->backend_closed && is_empty(&relay->downstream));
}

static void relay_plaintext(struct relay *relay) {
    for (;;) {
        relay->client_events = relay->backend_events = 0;
        // Every step is tried on each pass (`|`, not `||`); a pass that moved nothing waits.
        int progressed = read_client(relay) | write_backend(relay) | read_backend(relay) | write_client(relay);
        if (is_over(relay)) return;
        if (progressed) continue;
        // A socket nothing waits on is left out, so a hang-up on it cannot spin this loop.
        struct pollfd fds[3] = {
            {.fd = relay->client_events != 0 ? relay->client : -1, .events = relay->client_events},
            {.fd = relay->backend_events != 0 ? relay->backend : -1, .events = relay->backend_events},
            {.fd = relay->stop, .events = POLLIN},
        };
        if (poll(fds, 3, -1) < 0 && errno != EINTR) relay->stopping = 1;
        if (fds[2].revents != 0) relay->stopping = 1;
        if (relay->stopping) return;
    }
}

/// Closes both sockets: close_notify first where the client's TLS is intact (a client that never
/// answers it is not waited for), and a reset from the plain server passed on as a reset.
static void finish(struct relay *relay, int handshake_completed) {
    if (handshake_completed && !relay->client_failed && !relay->backend_failed) {
        ERR_clear_error();
        SSL_shutdown(relay->ssl);
    }
    if (relay->backend_failed) {
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        setsockopt(relay->client, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    close(relay->client);
    close(relay->backend);
}

void *ctt_relay_connection(void *argument) {
    struct ctt_connection *connection = argument;
    struct ctt_front *front = connection->front;
    // The buffers are too large for a comfortable stack frame.
    struct relay *relay = calloc(1, sizeof *relay);
    SSL *ssl = SSL_new(front->context);
    BIO *bio = ssl != NULL ? ctt_socket_bio(front, connection->client) : NULL;
    int completed = 0;
    if (relay != NULL && bio != NULL) {
        SSL_set_bio(ssl, bio, bio);
        bio = NULL;
        relay->ssl = ssl;
        relay->client = connection->client;
        relay->backend = connection->backend;
        relay->stop = front->stop_read;
        completed = handshake(ssl, connection->client, front->stop_read);
        ctt_report_handshake(front, ssl, completed);
        if (completed) relay_plaintext(relay);
        finish(relay, completed);
    } else {
        close(connection->client);
        close(connection->backend);
    }
    BIO_free(bio);
    SSL_free(ssl);
    free(relay);
    ERR_clear_error();
    pthread_mutex_lock(&front->lock);
    connection->finished = 1;
    pthread_mutex_unlock(&front->lock);
    return NULL;
}
