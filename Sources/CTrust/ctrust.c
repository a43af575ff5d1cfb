#include "ctrust.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

static X509 *parse(const unsigned char *der, size_t length) {
    const unsigned char *cursor = der;
    if (!der || length == 0 || length > 0x7fffffff) return NULL;
    return d2i_X509(NULL, &cursor, (long)length);
}

static int is_ip_literal(const char *host) {
    return strchr(host, ':') != NULL || strspn(host, "0123456789.") == strlen(host);
}

void *ctrust_bundle_load(const char *path) {
    BIO *file = BIO_new_file(path, "r");
    if (!file) { ERR_clear_error(); return NULL; }
    STACK_OF(X509) *certificates = sk_X509_new_null();
    if (certificates) {
        X509 *certificate;
        while ((certificate = PEM_read_bio_X509(file, NULL, NULL, NULL)) != NULL) {
            if (!sk_X509_push(certificates, certificate)) X509_free(certificate);
        }
    }
    // The loop ends on "no start line" at the end of the file: not an error.
    ERR_clear_error();
    BIO_free(file);
    return certificates;
}

void ctrust_bundle_free(void *bundle) {
    if (bundle) sk_X509_pop_free((STACK_OF(X509) *)bundle, X509_free);
}

size_t ctrust_bundle_count(const void *bundle) {
    return bundle ? (size_t)sk_X509_num((const STACK_OF(X509) *)bundle) : 0;
}

void *ctrust_store_new(const void *bundle, const unsigned char *const *anchors, const size_t *anchor_lengths,
                       size_t anchor_count) {
    X509_STORE *store = X509_STORE_new();
    if (!store) return NULL;
    // Partial chains: an anchor may be an intermediate or a leaf. Set here, with trusted-first, so that
    // libcurl setting the same flags on an installed store changes nothing.
    X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_TRUSTED_FIRST);
    const STACK_OF(X509) *shared = (const STACK_OF(X509) *)bundle;
    for (int i = 0; shared && i < sk_X509_num(shared); i++) {
        if (X509_STORE_add_cert(store, sk_X509_value(shared, i)) != 1) goto fail;
    }
    for (size_t i = 0; i < anchor_count; i++) {
        X509 *anchor = parse(anchors[i], anchor_lengths[i]);
        if (!anchor) goto fail;
        int added = X509_STORE_add_cert(store, anchor);
        X509_free(anchor);
        if (added != 1) goto fail;
    }
    return store;
fail:
    ERR_clear_error();
    X509_STORE_free(store);
    return NULL;
}

void ctrust_store_free(void *store) {
    if (store) X509_STORE_free((X509_STORE *)store);
}

int ctrust_install_store(void *ssl_ctx, void *store) {
    if (!ssl_ctx || !store) return 0;
    SSL_CTX_set1_cert_store((SSL_CTX *)ssl_ctx, (X509_STORE *)store);
    return 1;
}

void ctrust_alpn_selected(const void *ssl, const unsigned char **name, unsigned int *length) {
    *name = NULL;
    *length = 0;
    if (ssl) SSL_get0_alpn_selected((const SSL *)ssl, name, length);
}

static int copy_path(STACK_OF(X509) *chain, ctrust_path *path) {
    int count = sk_X509_num(chain);
    size_t total = 0;
    path->count = 0;
    path->lengths = calloc((size_t)(count > 0 ? count : 1), sizeof(size_t));
    if (!path->lengths) return 0;
    for (int i = 0; i < count; i++) {
        int length = i2d_X509(sk_X509_value(chain, i), NULL);
        if (length <= 0) return 0;
        path->lengths[i] = (size_t)length;
        total += (size_t)length;
    }
    path->bytes = malloc(total > 0 ? total : 1);
    if (!path->bytes) return 0;
    unsigned char *cursor = path->bytes;
    for (int i = 0; i < count; i++) {
        if (i2d_X509(sk_X509_value(chain, i), &cursor) <= 0) return 0;
    }
    path->count = (size_t)count;
    return 1;
}

int ctrust_verify_chain(void *store, const unsigned char *const *chain, const size_t *chain_lengths,
                        size_t chain_count, const char *host, ctrust_path *path) {
    if (path) memset(path, 0, sizeof(*path));
    if (!store || chain_count == 0) return -1;
    int result = -1;
    X509 *leaf = NULL;
    STACK_OF(X509) *built = NULL;
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    X509_STORE_CTX *context = X509_STORE_CTX_new();
    if (!untrusted || !context) goto done;
    leaf = parse(chain[0], chain_lengths[0]);
    if (!leaf) goto done;
    for (size_t i = 1; i < chain_count; i++) {
        X509 *certificate = parse(chain[i], chain_lengths[i]);
        if (!certificate) goto done;
        if (!sk_X509_push(untrusted, certificate)) { X509_free(certificate); goto done; }
    }
    if (X509_STORE_CTX_init(context, (X509_STORE *)store, leaf, untrusted) != 1) goto done;
    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(context);
    X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (host) {
        int set = is_ip_literal(host) ? X509_VERIFY_PARAM_set1_ip_asc(param, host)
                                      : X509_VERIFY_PARAM_set1_host(param, host, 0);
        if (set != 1) { result = X509_V_ERR_HOSTNAME_MISMATCH; goto done; }
    }
    if (X509_verify_cert(context) != 1) {
        result = X509_STORE_CTX_get_error(context);
        if (result <= 0) result = X509_V_ERR_UNSPECIFIED;
        goto done;
    }
    result = 0;
    if (path) {
        built = X509_STORE_CTX_get1_chain(context);
        if (!built || !copy_path(built, path)) {
            ctrust_path_free(path);
            result = X509_V_ERR_OUT_OF_MEM;
        }
    }
done:
    ERR_clear_error();
    if (built) sk_X509_pop_free(built, X509_free);
    if (context) X509_STORE_CTX_free(context);
    if (untrusted) sk_X509_pop_free(untrusted, X509_free);
    if (leaf) X509_free(leaf);
    return result;
}

void ctrust_path_free(ctrust_path *path) {
    if (!path) return;
    free(path->bytes);
    free(path->lengths);
    memset(path, 0, sizeof(*path));
}

int ctrust_is_signed_by(const unsigned char *certificate, size_t certificate_length, const unsigned char *issuer,
                        size_t issuer_length) {
    X509 *subject = parse(certificate, certificate_length);
    X509 *signer = parse(issuer, issuer_length);
    int result = -1;
    if (subject && signer) {
        EVP_PKEY *key = X509_get0_pubkey(signer);
        result = key && X509_verify(subject, key) == 1 ? 1 : 0;
    }
    ERR_clear_error();
    X509_free(subject);
    X509_free(signer);
    return result;
}

int ctrust_matches_host(const unsigned char *der, size_t length, const char *host) {
    X509 *certificate = parse(der, length);
    if (!certificate) return -1;
    int matches = is_ip_literal(host) ? X509_check_ip_asc(certificate, host, 0)
                                      : X509_check_host(certificate, host, strlen(host), 0, NULL);
    X509_free(certificate);
    return matches == 1 ? 1 : 0;
}

long ctrust_public_key(const unsigned char *der, size_t length, unsigned char **out) {
    *out = NULL;
    X509 *certificate = parse(der, length);
    if (!certificate) return -1;
    unsigned char *buffer = NULL;
    int written = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(certificate), &buffer);
    X509_free(certificate);
    if (written <= 0) return -1;
    *out = malloc((size_t)written);
    if (!*out) { OPENSSL_free(buffer); return -1; }
    memcpy(*out, buffer, (size_t)written);
    OPENSSL_free(buffer);
    return written;
}

long ctrust_next_pem_certificate(const char *pem, size_t pem_length, size_t *offset, unsigned char **out) {
    *out = NULL;
    while (*offset < pem_length) {
        const char *start = pem + *offset;
        size_t remaining = pem_length - *offset;
        BIO *bio = BIO_new_mem_buf(start, (int)(remaining > 0x7fffffff ? 0x7fffffff : remaining));
        if (!bio) return 0;
        X509 *certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        size_t consumed = remaining - (size_t)BIO_pending(bio);
        BIO_free(bio);
        if (!certificate) { ERR_clear_error(); return 0; }
        *offset += consumed > 0 ? consumed : remaining;
        unsigned char *buffer = NULL;
        int written = i2d_X509(certificate, &buffer);
        X509_free(certificate);
        if (written <= 0) continue;
        *out = malloc((size_t)written);
        if (!*out) { OPENSSL_free(buffer); return 0; }
        memcpy(*out, buffer, (size_t)written);
        OPENSSL_free(buffer);
        return written;
    }
    return 0;
}

void ctrust_free(void *pointer) { free(pointer); }

int ctrust_sha256(const unsigned char *data, size_t length, unsigned char *out) {
    unsigned int written = 0;
    static const unsigned char empty = 0;
    if (EVP_Digest(data ? data : &empty, length, out, &written, EVP_sha256(), NULL) != 1) {
        ERR_clear_error();
        return 0;
    }
    return written == 32;
}
