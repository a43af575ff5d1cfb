// A TLS front for the test server, over the system's OpenSSL (libssl): it accepts TLS connections on a port
// (the kernel's choice unless given) and relays each one's plaintext, both ways, over its own connection to a plain HTTP
// server on 127.0.0.1, recording every handshake. For tests and the demo only; the library never links it.
#ifndef CTESTTLS_H
#define CTESTTLS_H

#include <stddef.h>

/// A running front: a listening socket, a thread accepting on it and one thread per connection.
typedef struct ctt_front ctt_front;

/// Told of each handshake as it ends, on that connection's thread, before any of its plaintext is relayed:
/// `completed` is 1 or 0 (failed, or cut short by `ctt_front_stop`); `protocol` is the ALPN protocol
/// chosen, NUL-terminated, or NULL for none. It must not call `ctt_front_stop`.
typedef void (*ctt_handshake_observer)(void *context, int completed, const char *protocol);

/// Starts a front on `host` (an IPv4 or IPv6 literal, or a name getaddrinfo resolves), on `port`, or on a
/// port the kernel chooses when it is 0, relaying each connection to `backend_port` on 127.0.0.1. It speaks TLS 1.2 and 1.3,
/// presenting `chain` (DER certificates one after another, leaf first) with `key_pem`, the leaf's private
/// key. With `client_ca_length` > 0, a client certificate issued by `client_ca` (DER) is required and
/// verified (no host name check), and a handshake without one fails. `alpn` (`alpn_length` bytes, in
/// ALPN's wire format: each name preceded by its length) lists the protocols the server accepts in
/// preference order; the first of them the client offers is chosen, and with none in common the
/// handshake goes on without ALPN. Nothing is kept of the arguments but `observer` and its `context`.
/// Returns NULL on failure, with a reason in `error` (at most `error_size` bytes).
ctt_front *ctt_front_start(const char *host, int port, int backend_port, const unsigned char *chain,
                           size_t chain_length, const char *key_pem, const unsigned char *client_ca,
                           size_t client_ca_length, const unsigned char *alpn, size_t alpn_length,
                           ctt_handshake_observer observer, void *observer_context, char *error, size_t error_size);

/// The port the front listens on.
int ctt_front_port(const ctt_front *front);

/// Stops the front and frees it: closes the listening socket, ends every connection (close_notify where
/// the handshake completed, then both sockets closed), and waits for every thread. Call once.
void ctt_front_stop(ctt_front *front);

#endif
