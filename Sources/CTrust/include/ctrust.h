// X.509 checks for SecurityPolicy, and the ALPN protocol of a libcurl TLS connection, done by the same
// OpenSSL that libcurl uses for TLS.
// Certificates are DER bytes. No policy lives here: the rules are SecurityPolicy's; this file only
// asks OpenSSL.
#ifndef CTRUST_H
#define CTRUST_H

#include <stddef.h>

/// The certificates of a PEM bundle file (the system's CA bundle), parsed once by the caller and kept:
/// an opaque list, freed with ctrust_bundle_free. NULL when the file cannot be read; an empty list when
/// it holds no certificate.
void *ctrust_bundle_load(const char *path);
void ctrust_bundle_free(void *bundle);
/// How many certificates the bundle holds.
size_t ctrust_bundle_count(const void *bundle);

/// A trust store (an OpenSSL X509_STORE) whose anchors are `bundle`'s certificates (when not NULL,
/// shared, not parsed again) plus `anchors`. NULL when an anchor does not parse or memory runs out.
/// Safe to verify with from several threads at once; freed with ctrust_store_free.
void *ctrust_store_new(const void *bundle, const unsigned char *const *anchors, const size_t *anchor_lengths,
                       size_t anchor_count);
void ctrust_store_free(void *store);

/// For CURLOPT_SSL_CTX_FUNCTION: makes `store` the trust store of the SSL_CTX `ssl_ctx` (a reference is
/// taken; the store itself is not changed). Returns 1 on success.
int ctrust_install_store(void *ssl_ctx, void *store);

/// The protocol the TLS connection `ssl` (an OpenSSL `SSL *`, as libcurl's CURLINFO_TLS_SSL_PTR gives it)
/// agreed on by ALPN: `*name` points into the connection (not to be freed), `*length` bytes; `*name` is
/// NULL and `*length` 0 when the handshake chose none (or has not chosen yet).
void ctrust_alpn_selected(const void *ssl, const unsigned char **name, unsigned int *length);

/// The certification path OpenSSL built, leaf first, anchor last: DER bytes back to back.
typedef struct {
    unsigned char *bytes;
    size_t *lengths;
    size_t count;
} ctrust_path;

/// Verifies a presented chain (leaf first) against `store`'s anchors; any anchor may be an intermediate
/// or a leaf (partial chains). The other presented certificates are only candidates for the path.
/// `host` (NULL: no host check) is matched as a DNS name or, for an IP literal, as an IP address.
/// Returns 0 when the chain verifies, and then, when `path` is not NULL, fills it with the path that
/// verification built (free with ctrust_path_free); an OpenSSL X509_V_ERR_* code (> 0) when it does
/// not; -1 when a certificate cannot be parsed.
int ctrust_verify_chain(void *store, const unsigned char *const *chain, const size_t *chain_lengths,
                        size_t chain_count, const char *host, ctrust_path *path);
void ctrust_path_free(ctrust_path *path);

/// Whether `certificate`'s signature verifies with the public key of `issuer` (a certificate): 1 yes,
/// 0 no, -1 when either does not parse. Names, validity and extensions are not looked at.
int ctrust_is_signed_by(const unsigned char *certificate, size_t certificate_length, const unsigned char *issuer,
                        size_t issuer_length);

/// Whether the certificate matches `host` (DNS name or IP literal): 1 yes, 0 no, -1 unparsable.
int ctrust_matches_host(const unsigned char *der, size_t length, const char *host);

/// DER of the certificate's SubjectPublicKeyInfo, written to a buffer from malloc (`*out`, free
/// with ctrust_free). Returns its length, or -1 when the certificate cannot be parsed.
long ctrust_public_key(const unsigned char *der, size_t length, unsigned char **out);

/// DER of the first certificate in a PEM text (malloc'd, free with ctrust_free), starting the search
/// at `*offset` and advancing it past the certificate. Returns the length, or 0 when none is left.
long ctrust_next_pem_certificate(const char *pem, size_t pem_length, size_t *offset, unsigned char **out);

/// SHA-256 of `length` bytes into `out` (32 bytes): 1 on success, 0 when OpenSSL fails.
int ctrust_sha256(const unsigned char *data, size_t length, unsigned char *out);

void ctrust_free(void *pointer);

#endif
