#include "ctrust.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

static X509 *parse(const unsigned char *der, size_t length) {
    const unsigned char *cursor = der;
    return d2i_X509(NULL, &cursor, (long)length);
}

static int is_ip_literal(const char *host) {
    return strchr(host, ':') != NULL || strspn(host, "0123456789.") == strlen(host);
}

int ctrust_verify_chain(const unsigned char *const *chain, const size_t *chain_lengths, size_t chain_count,
                        const unsigned char *const *anchors, const size_t *anchor_lengths, size_t anchor_count,
                        int use_system_store, const char *host) {
    if (chain_count == 0) return -1;
    int result = -1;
    X509 *leaf = NULL;
    X509_STORE *store = X509_STORE_new();
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    X509_STORE_CTX *context = X509_STORE_CTX_new();
    if (!store || !untrusted || !context) goto done;
    if (use_system_store && X509_STORE_set_default_paths(store) != 1) goto done;
    for (size_t i = 0; i < anchor_count; i++) {
        X509 *anchor = parse(anchors[i], anchor_lengths[i]);
        if (!anchor) goto done;
        X509_STORE_add_cert(store, anchor);
        X509_free(anchor);
    }
    leaf = parse(chain[0], chain_lengths[0]);
    if (!leaf) goto done;
    for (size_t i = 1; i < chain_count; i++) {
        X509 *certificate = parse(chain[i], chain_lengths[i]);
        if (!certificate) goto done;
        if (!sk_X509_push(untrusted, certificate)) { X509_free(certificate); goto done; }
    }
    if (X509_STORE_CTX_init(context, store, leaf, untrusted) != 1) goto done;
    X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(context);
    X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (host) {
        int set = is_ip_literal(host) ? X509_VERIFY_PARAM_set1_ip_asc(param, host)
                                      : X509_VERIFY_PARAM_set1_host(param, host, 0);
        if (set != 1) { result = X509_V_ERR_HOSTNAME_MISMATCH; goto done; }
    }
    result = X509_verify_cert(context) == 1 ? 0 : X509_STORE_CTX_get_error(context);
    if (result < 0) result = X509_V_ERR_UNSPECIFIED;
done:
    if (context) X509_STORE_CTX_free(context);
    if (untrusted) sk_X509_pop_free(untrusted, X509_free);
    if (leaf) X509_free(leaf);
    if (store) X509_STORE_free(store);
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
        if (!certificate) return 0;
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
