// What the front's three parts share: the TLS context (context.c), the listener and its records
// (front.c), and the relay each connection's thread runs (relay.c).
#ifndef CTESTTLS_FRONT_INTERNAL_H
#define CTESTTLS_FRONT_INTERNAL_H

#include "ctesttls.h"

#include <openssl/ssl.h>
#include <pthread.h>

/// One accepted connection and the thread relaying it.
struct ctt_connection {
    struct ctt_front *front;
    pthread_t thread;
    /// The client's socket (TLS) and this connection's own socket to the plain server; owned by the
    /// thread, which closes both before it ends.
    int client;
    int backend;
    /// Guarded by `front->lock`: set by the thread as its last act, so the acceptor may join it.
    int finished;
    /// Guarded by `front->lock`: the next connection in `front->connections`.
    struct ctt_connection *next;
};

struct ctt_front {
    /// Immutable once the threads start.
    SSL_CTX *context;
    BIO_METHOD *socket_bio;
    unsigned char *alpn;
    size_t alpn_length;
    int listener;
    int port;
    int backend_port;
    /// A pipe whose write end `ctt_front_stop` closes: every thread polls the read end, and its hang-up
    /// wakes them all at once.
    int stop_read;
    int stop_write;
    pthread_t acceptor;
    ctt_handshake_observer observer;
    void *observer_context;

    pthread_mutex_t lock;
    /// Guarded by `lock`: connections whose threads have not been joined yet.
    struct ctt_connection *connections;
};

/// What `ctt_front_start` was given to present.
struct ctt_identity {
    const unsigned char *chain;
    size_t chain_length;
    const char *key_pem;
    const unsigned char *client_ca;
    size_t client_ca_length;
};

/// A server context presenting `identity` (TLS 1.2 and 1.3), choosing ALPN from `front->alpn` and
/// verifying client certificates when asked; NULL on failure (reason in `error`).
SSL_CTX *ctt_make_context(struct ctt_front *front, const struct ctt_identity *identity, char *error, size_t error_size);

/// A BIO method reading and writing a socket with recv and send(MSG_NOSIGNAL): a client gone while the
/// front writes is an error, never SIGPIPE, whatever the process does with that signal.
BIO_METHOD *ctt_make_socket_bio_method(void);

/// A BIO over `fd` (not closed when the BIO is freed).
BIO *ctt_socket_bio(struct ctt_front *front, int fd);

/// The thread body of one connection: handshake, record, relay, close.
void *ctt_relay_connection(void *connection);

/// Tells the front's observer how a handshake ended.
void ctt_report_handshake(struct ctt_front *front, SSL *ssl, int completed);

#endif
