// Certificates and digests for the test server, made with the system's OpenSSL (libcrypto): a key,
// a certificate signed with another key, an MD5. For tests and the demo only; the library never links it.
#ifndef CTESTCRYPTO_H
#define CTESTCRYPTO_H

#include <stddef.h>

/// A new P-256 private key as PEM (PKCS#8), from malloc (free with ctc_free); NULL on failure.
char *ctc_new_key_pem(void);

/// An X.509 v3 certificate, DER, written to a buffer from malloc (`*out`, free with ctc_free); returns
/// its length, or -1 on failure. The subject is `subject_cn` with the public half of `subject_key_pem`;
/// the issuer is `issuer_cn`, signing with `issuer_key_pem` (ECDSA with SHA-256). An authority gets
/// critical basic constraints CA:TRUE and key usage keyCertSign and cRLSign; a leaf critical CA:FALSE,
/// critical key usage digitalSignature, extended key usage serverAuth and clientAuth, and the subject
/// alternative names in `alt_names` (OpenSSL's syntax, "DNS:localhost,IP:127.0.0.1"; NULL or empty: none).
/// Valid from `not_before` to `not_after` (seconds since 1970), with a random 127-bit serial number.
long ctc_sign_certificate(const char *subject_cn, const char *subject_key_pem,
                          const char *issuer_cn, const char *issuer_key_pem,
                          int is_authority, const char *alt_names,
                          long long not_before, long long not_after, unsigned char **out);

/// The MD5 digest of `length` bytes at `data`, into `out` (16 bytes). Returns 0, or -1 on failure.
int ctc_md5(const void *data, size_t length, unsigned char *out);

void ctc_free(void *pointer);

#endif
