// X.509 checks for SecurityPolicy, done by the same OpenSSL that libcurl uses for TLS.
// Certificates are DER bytes. No logic beyond calling OpenSSL lives here.
#ifndef CTRUST_H
#define CTRUST_H

#include <stddef.h>

/// Verifies a presented chain (leaf first). Trust anchors are `anchors` plus, when `use_system_store`
/// is non-zero, the system's CA store; any anchor may be an intermediate or a leaf (partial chains).
/// `host` (NULL: no host check) is matched as a DNS name or, for an IP literal, as an IP address.
/// Returns 0 when the chain verifies, an OpenSSL X509_V_ERR_* code (> 0) when it does not,
/// and -1 when a certificate cannot be parsed.
int ctrust_verify_chain(const unsigned char *const *chain, const size_t *chain_lengths, size_t chain_count,
                        const unsigned char *const *anchors, const size_t *anchor_lengths, size_t anchor_count,
                        int use_system_store, const char *host);

/// Whether the certificate matches `host` (DNS name or IP literal): 1 yes, 0 no, -1 unparsable.
int ctrust_matches_host(const unsigned char *der, size_t length, const char *host);

/// DER of the certificate's SubjectPublicKeyInfo, written to a buffer from malloc (`*out`, free
/// with ctrust_free). Returns its length, or -1 when the certificate cannot be parsed.
long ctrust_public_key(const unsigned char *der, size_t length, unsigned char **out);

/// DER of the first certificate in a PEM text (malloc'd, free with ctrust_free), starting the search
/// at `*offset` and advancing it past the certificate. Returns the length, or 0 when none is left.
long ctrust_next_pem_certificate(const char *pem, size_t pem_length, size_t *offset, unsigned char **out);

void ctrust_free(void *pointer);

#endif
