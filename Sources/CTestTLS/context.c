// The front's TLS context (identity, versions, ALPN, client certificates) and its socket BIO.
#include "front_internal.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/// `what`, followed by OpenSSL's reason for the last error of this thread if it has one.
static void fail(char *error, size_t error_size, const char *what) {
    unsigned long code = ERR_get_error();
    char reason[256] = "";
    if (code != 0) ERR_error_string_n(code, reason, sizeof reason);
    snprintf(error, error_size, "%s%s%s", what, code != 0 ? ": " : "", reason);
    ERR_clear_error();
}

/// ALPN as the server prefers: the first of its own protocols the client also offers; with none in
/// common, the handshake goes on without ALPN.
static int select_protocol(SSL *ssl, const unsigned char **out, unsigned char *out_length,
                           const unsigned char *offered, unsigned int offered_length, void *argument) {
    (void)ssl;
    const struct ctt_front *front = argument;
    for (size_t ours = 0; ours < front->alpn_length; ours += 1 + (size_t)front->alpn[ours]) {
        const unsigned char *name = front->alpn + ours + 1;
        unsigned char length = front->alpn[ours];
        if (ours + 1 + length > front->alpn_length) break;
        for (size_t theirs = 0; theirs < offered_length; theirs += 1 + (size_t)offered[theirs]) {
            unsigned char offered_name_length = offered[theirs];
            if (theirs + 1 + offered_name_length > offered_length) break;
            if (offered_name_length == length && memcmp(offered + theirs + 1, name, length) == 0) {
                *out = name;
                *out_length = length;
                return SSL_TLSEXT_ERR_OK;
            }
        }
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/// Presents exactly the given chain: the leaf, then each further certificate as given (OpenSSL does not
/// build or complete it).
static int use_chain(SSL_CTX *context, const struct ctt_identity *identity, char *error, size_t error_size) {
    const unsigned char *next = identity->chain;
    const unsigned char *end = next + identity->chain_length;
    int leaf = 1;
    while (next < end) {
        X509 *certificate = d2i_X509(NULL, &next, (long)(end - next));
        if (certificate == NULL) {
            fail(error, error_size, "a certificate of the chain is not DER");
            return 0;
        }
        int used = leaf ? SSL_CTX_use_certificate(context, certificate) : SSL_CTX_add1_chain_cert(context, certificate);
        X509_free(certificate);
        if (used != 1) {
            fail(error, error_size, "OpenSSL refused a certificate of the chain");
            return 0;
        }
        leaf = 0;
    }
    if (leaf) {
        snprintf(error, error_size, "the chain has no certificate");
        return 0;
    }
    return 1;
}

static int use_key(SSL_CTX *context, const char *pem, char *error, size_t error_size) {
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = bio != NULL ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    int used = key != NULL && SSL_CTX_use_PrivateKey(context, key) == 1 && SSL_CTX_check_private_key(context) == 1;
    EVP_PKEY_free(key);
    if (!used) fail(error, error_size, "the private key is unreadable or does not match the certificate");
    return used;
}

/// Requires a client certificate that `der` (an authority) issued, and names that authority in the
/// certificate request.
static int require_client_certificate(SSL_CTX *context, const unsigned char *der, size_t length,
                                      char *error, size_t error_size) {
    X509 *authority = d2i_X509(NULL, &der, (long)length);
    int used = authority != NULL && X509_STORE_add_cert(SSL_CTX_get_cert_store(context), authority) == 1
               && SSL_CTX_add_client_CA(context, authority) == 1;
    X509_free(authority);
    if (!used) {
        fail(error, error_size, "the client certificate authority is unusable");
        return 0;
    }
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return 1;
}

SSL_CTX *ctt_make_context(struct ctt_front *front, const struct ctt_identity *identity, char *error,
                          size_t error_size) {
    SSL_CTX *context = SSL_CTX_new(TLS_server_method());
    if (context == NULL) {
        fail(error, error_size, "OpenSSL made no TLS context");
        return NULL;
    }
    static const unsigned char session_context[] = "onet-test-server";
    int ready = SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1
                && SSL_CTX_set_max_proto_version(context, TLS1_3_VERSION) == 1
                && SSL_CTX_set_session_id_context(context, session_context, sizeof session_context - 1) == 1;
    if (!ready) fail(error, error_size, "OpenSSL refused TLS 1.2 to 1.3");
    SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION);
    // Non-blocking writes that may take part of the buffer; what the server presents is exactly its chain.
    SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                              | SSL_MODE_NO_AUTO_CHAIN);
    ready = ready && use_chain(context, identity, error, error_size)
            && use_key(context, identity->key_pem, error, error_size);
    if (ready && identity->client_ca_length > 0) {
        ready = require_client_certificate(context, identity->client_ca, identity->client_ca_length, error, error_size);
    }
    if (!ready) {
        SSL_CTX_free(context);
        return NULL;
    }
    if (front->alpn_length > 0) SSL_CTX_set_alpn_select_cb(context, select_protocol, front);
    return context;
}

static int socket_of(BIO *bio) { return (int)(intptr_t)BIO_get_data(bio); }

static int is_transient(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == EINTR; }

static int bio_write(BIO *bio, const char *data, int length) {
    BIO_clear_retry_flags(bio);
    ssize_t sent = send(socket_of(bio), data, (size_t)length, MSG_NOSIGNAL);
    if (sent < 0 && is_transient(errno)) BIO_set_retry_write(bio);
    return (int)sent;
}

static int bio_read(BIO *bio, char *data, int length) {
    BIO_clear_retry_flags(bio);
    ssize_t received = recv(socket_of(bio), data, (size_t)length, 0);
    if (received < 0 && is_transient(errno)) BIO_set_retry_read(bio);
    return (int)received;
}

static long bio_control(BIO *bio, int command, long number, void *pointer) {
    (void)bio;
    (void)number;
    (void)pointer;
    // Writes go straight to the socket, so there is never anything to flush; nothing else applies.
    return command == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *bio) {
    BIO_set_init(bio, 1);
    return 1;
}

BIO_METHOD *ctt_make_socket_bio_method(void) {
    int index = BIO_get_new_index();
    if (index == -1) return NULL;
    BIO_METHOD *method = BIO_meth_new(index | BIO_TYPE_SOURCE_SINK, "onet test front socket");
    if (method == NULL) return NULL;
    if (BIO_meth_set_write(method, bio_write) != 1 || BIO_meth_set_read(method, bio_read) != 1
        || BIO_meth_set_ctrl(method, bio_control) != 1 || BIO_meth_set_create(method, bio_create) != 1) {
        BIO_meth_free(method);
        return NULL;
    }
    return method;
}

BIO *ctt_socket_bio(struct ctt_front *front, int fd) {
    BIO *bio = BIO_new(front->socket_bio);
    if (bio != NULL) BIO_set_data(bio, (void *)(intptr_t)fd);
    return bio;
}
