// The front's listener: starting and stopping it, the thread accepting connections, and the handshake
// records.
#define _GNU_SOURCE   // accept4, pipe2
#include "front_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/// A listening socket on `host` and `*port`, or a port the kernel chooses when it is 0 (the port bound
/// in `*port`); -1 on failure.
static int listen_on(const char *host, int *port, char *error, size_t error_size) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *found = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", *port);
    int status = getaddrinfo(host, service, &hints, &found);
    if (status != 0) {
        snprintf(error, error_size, "cannot resolve %s: %s", host, gai_strerror(status));
        return -1;
    }
    int fd = -1;
    int reason = 0;
    for (struct addrinfo *address = found; address != NULL && fd < 0; address = address->ai_next) {
        fd = socket(address->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, address->ai_protocol);
        if (fd < 0) {
            reason = errno;
            continue;
        }
        int on = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (bind(fd, address->ai_addr, address->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
            reason = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    struct sockaddr_storage bound;
    socklen_t length = sizeof bound;
    if (fd >= 0 && getsockname(fd, (struct sockaddr *)&bound, &length) != 0) {
        reason = errno;
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        snprintf(error, error_size, "cannot listen on %s port %d: %s", host, *port, strerror(reason));
        return -1;
    }
    *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((struct sockaddr_in *)&bound)->sin_port);
    return fd;
}

/// Nagle off: otherwise a small response on a reused connection waits for the peer's delayed ACK.
static void send_at_once(int fd) {
    int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

/// A non-blocking socket connected to the plain server; -1 on failure.
static int connect_backend(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int connected;
    while ((connected = connect(fd, (struct sockaddr *)&address, sizeof address)) != 0 && errno == EINTR) {}
    int flags = fcntl(fd, F_GETFL);
    if (connected != 0 || flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        close(fd);
        return -1;
    }
    send_at_once(fd);
    return fd;
}

/// Joins and frees the connections whose threads have ended, or all of them (once no more can start).
static void reap(struct ctt_front *front, int all) {
    struct ctt_connection *ended = NULL;
    pthread_mutex_lock(&front->lock);
    struct ctt_connection **link = &front->connections;
    while (*link != NULL) {
        struct ctt_connection *connection = *link;
        if (all || connection->finished) {
            *link = connection->next;
            connection->next = ended;
            ended = connection;
        } else {
            link = &connection->next;
        }
    }
    pthread_mutex_unlock(&front->lock);
    while (ended != NULL) {
        struct ctt_connection *next = ended->next;
        pthread_join(ended->thread, NULL);
        free(ended);
        ended = next;
    }
}

/// Accepts one client, connects its plain-server side at once (so the plain server counts connections
/// as they arrive, in order) and starts its thread.
static void accept_one(struct ctt_front *front) {
    int client = accept4(front->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) return;
    send_at_once(client);
    int backend = connect_backend(front->backend_port);
    struct ctt_connection *connection = backend >= 0 ? calloc(1, sizeof *connection) : NULL;
    int started = 0;
    if (connection != NULL) {
        connection->front = front;
        connection->client = client;
        connection->backend = backend;
        pthread_mutex_lock(&front->lock);
        started = pthread_create(&connection->thread, NULL, ctt_relay_connection, connection) == 0;
        if (started) {
            connection->next = front->connections;
            front->connections = connection;
        }
        pthread_mutex_unlock(&front->lock);
    }
    if (!started) {
        free(connection);
        if (backend >= 0) close(backend);
        close(client);
    }
}

static void *accept_connections(void *argument) {
    struct ctt_front *front = argument;
    for (;;) {
        struct pollfd fds[2] = {{.fd = front->listener, .events = POLLIN}, {.fd = front->stop_read, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
        if (fds[1].revents != 0) break;
        if (fds[0].revents != 0) accept_one(front);
        reap(front, 0);
    }
    return NULL;
}

/// Frees what `ctt_front_start` made so far (every thread has ended or never started).
static void free_front(struct ctt_front *front) {
    if (front->listener >= 0) close(front->listener);
    if (front->stop_read >= 0) close(front->stop_read);
    if (front->stop_write >= 0) close(front->stop_write);
    SSL_CTX_free(front->context);
    BIO_meth_free(front->socket_bio);
    free(front->alpn);
    pthread_mutex_destroy(&front->lock);
    free(front);
}

/// Opens the stop pipe and starts accepting; 0 on failure.
static int start_accepting(struct ctt_front *front, char *error, size_t error_size) {
    int stop[2];
    if (pipe2(stop, O_CLOEXEC) != 0) {
        snprintf(error, error_size, "no pipe: %s", strerror(errno));
        return 0;
    }
    front->stop_read = stop[0];
    front->stop_write = stop[1];
    if (pthread_create(&front->acceptor, NULL, accept_connections, front) != 0) {
        snprintf(error, error_size, "no thread to accept connections");
        return 0;
    }
    return 1;
}

ctt_front *ctt_front_start(const char *host, int port, int backend_port, const unsigned char *chain,
                           size_t chain_length, const char *key_pem, const unsigned char *client_ca,
                           size_t client_ca_length, const unsigned char *alpn, size_t alpn_length,
                           ctt_handshake_observer observer, void *observer_context, char *error, size_t error_size) {
    struct ctt_front *front = calloc(1, sizeof *front);
    if (front == NULL) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    front->listener = front->stop_read = front->stop_write = -1;
    front->backend_port = backend_port;
    front->port = port;
    front->observer = observer;
    front->observer_context = observer_context;
    pthread_mutex_init(&front->lock, NULL);
    const struct ctt_identity identity = {.chain = chain, .chain_length = chain_length, .key_pem = key_pem,
                                          .client_ca = client_ca, .client_ca_length = client_ca_length};
    int ready = 0;
    if (alpn_length > 0 && (front->alpn = malloc(alpn_length)) == NULL) {
        snprintf(error, error_size, "out of memory");
    } else if ((front->socket_bio = ctt_make_socket_bio_method()) == NULL) {
        snprintf(error, error_size, "OpenSSL made no BIO method");
    } else {
        if (alpn_length > 0) memcpy(front->alpn, alpn, alpn_length);
        front->alpn_length = alpn_length;
        ready = (front->context = ctt_make_context(front, &identity, error, error_size)) != NULL
                && (front->listener = listen_on(host, &front->port, error, error_size)) >= 0
                && start_accepting(front, error, error_size);
    }
    if (!ready) {
        free_front(front);
        return NULL;
    }
    return front;
}

int ctt_front_port(const ctt_front *front) { return front->port; }

void ctt_front_stop(ctt_front *front) {
    // Every thread sees the pipe hang up: the acceptor ends, then each connection closes its sockets.
    close(front->stop_write);
    front->stop_write = -1;
    pthread_join(front->acceptor, NULL);
    reap(front, 1);
    free_front(front);
}

void ctt_report_handshake(struct ctt_front *front, SSL *ssl, int completed) {
    const unsigned char *chosen = NULL;
    unsigned int length = 0;
    if (completed) SSL_get0_alpn_selected(ssl, &chosen, &length);
    char protocol[256];
    int named = chosen != NULL && length > 0 && length < sizeof protocol;
    if (named) {
        memcpy(protocol, chosen, length);
        protocol[length] = '\0';
    }
    if (front->observer != NULL) front->observer(front->observer_context, completed, named ? protocol : NULL);
}
