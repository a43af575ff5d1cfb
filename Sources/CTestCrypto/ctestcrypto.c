#include "ctestcrypto.h"

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

void ctc_free(void *pointer) { free(pointer); }

char *ctc_new_key_pem(void) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (key == NULL) return NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    char *pem = NULL;
    if (bio != NULL && PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) == 1) {
        char *data = NULL;
        long length = BIO_get_mem_data(bio, &data);
        if (length > 0 && (pem = malloc((size_t)length + 1)) != NULL) {
            memcpy(pem, data, (size_t)length);
            pem[length] = '\0';
        }
    }
    BIO_free(bio);
    EVP_PKEY_free(key);
    return pem;
}

static EVP_PKEY *read_key(const char *pem) {
    BIO *bio = BIO_new_mem_buf(pem, -1);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    return key;
}

/// A name with the one common name `cn`, as UTF8String (the same bytes for the subject and, later,
/// the issuer of the certificates it signs, which chain building compares).
static X509_NAME *common_name(const char *cn) {
    X509_NAME *name = X509_NAME_new();
    if (name != NULL && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) != 1) {
        X509_NAME_free(name);
        return NULL;
    }
    return name;
}

static int add_extension(X509 *certificate, X509V3_CTX *context, int nid, const char *value) {
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, context, nid, value);
    if (extension == NULL) return 0;
    int added = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return added;
}

static int set_serial(X509 *certificate) {
    BIGNUM *number = BN_new();
    int done = number != NULL && BN_rand(number, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1
        && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != NULL;
    BN_free(number);
    return done;
}

long ctc_sign_certificate(const char *subject_cn, const char *subject_key_pem,
                          const char *issuer_cn, const char *issuer_key_pem,
                          int is_authority, const char *alt_names,
                          long long not_before, long long not_after, unsigned char **out) {
    long length = -1;
    *out = NULL;
    EVP_PKEY *subject_key = read_key(subject_key_pem);
    EVP_PKEY *issuer_key = read_key(issuer_key_pem);
    X509_NAME *subject = common_name(subject_cn);
    X509_NAME *issuer = common_name(issuer_cn);
    X509 *certificate = X509_new();
    if (subject_key == NULL || issuer_key == NULL || subject == NULL || issuer == NULL || certificate == NULL) goto done;
    if (X509_set_version(certificate, X509_VERSION_3) != 1 || !set_serial(certificate)
        || X509_set_subject_name(certificate, subject) != 1 || X509_set_issuer_name(certificate, issuer) != 1
        || X509_set_pubkey(certificate, subject_key) != 1
        || ASN1_TIME_set(X509_getm_notBefore(certificate), (time_t)not_before) == NULL
        || ASN1_TIME_set(X509_getm_notAfter(certificate), (time_t)not_after) == NULL) goto done;
    X509V3_CTX context;
    X509V3_set_ctx(&context, NULL, certificate, NULL, NULL, 0);
    if (is_authority) {
        if (!add_extension(certificate, &context, NID_basic_constraints, "critical,CA:TRUE")
            || !add_extension(certificate, &context, NID_key_usage, "critical,keyCertSign,cRLSign")) goto done;
    } else {
        if (!add_extension(certificate, &context, NID_basic_constraints, "critical,CA:FALSE")
            || !add_extension(certificate, &context, NID_key_usage, "critical,digitalSignature")
            || !add_extension(certificate, &context, NID_ext_key_usage, "serverAuth,clientAuth")) goto done;
        if (alt_names != NULL && alt_names[0] != '\0'
            && !add_extension(certificate, &context, NID_subject_alt_name, alt_names)) goto done;
    }
    if (X509_sign(certificate, issuer_key, EVP_sha256()) <= 0) goto done;
    unsigned char *der = NULL;
    int written = i2d_X509(certificate, &der);
    if (written > 0) {
        *out = malloc((size_t)written);
        if (*out != NULL) {
            memcpy(*out, der, (size_t)written);
            length = written;
        }
    }
    OPENSSL_free(der);
done:
    X509_free(certificate);
    X509_NAME_free(issuer);
    X509_NAME_free(subject);
    EVP_PKEY_free(issuer_key);
    EVP_PKEY_free(subject_key);
    return length;
}

int ctc_md5(const void *data, size_t length, unsigned char *out) {
    unsigned int size = 0;
    return EVP_Digest(data, length, out, &size, EVP_md5(), NULL) == 1 && size == 16 ? 0 : -1;
}
