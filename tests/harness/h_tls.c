/* SPDX-License-Identifier: Apache-2.0
 *
 * h_tls.c: certificates for TLS tests and benchmarks (h_make_cert): a
 * self-signed P-256 certificate for 127.0.0.1 (or the names given to
 * h_make_cert_san) that is its own CA, so one file serves as the server's
 * certificate and as the client's trust anchor, and a second call gives an
 * unrelated CA for "wrong CA" cases.
 */
#include "harness.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_pem(const char *path, X509 *x, EVP_PKEY *key)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    int ok = x ? PEM_write_X509(f, x) : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    if (fclose(f) != 0 || ok != 1)
        return -EIO;
    return 0;
}

int h_make_cert(const char *cert_path, const char *key_path)
{
    return h_make_cert_san(cert_path, key_path, "IP:127.0.0.1");
}

int h_make_cert_san(const char *cert_path, const char *key_path, const char *san)
{
    /* the subject CN: the first name of the list, without its type */
    char cn[256];
    const char *colon = strchr(san, ':');
    snprintf(cn, sizeof(cn), "%s", colon ? colon + 1 : san);
    cn[strcspn(cn, ",")] = '\0';
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    int rc = -ENOMEM;
    if (!key || !x)
        goto out;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(getpid() ^ rand()));
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    const char *const exts[][2] = {
        {"basicConstraints", "critical,CA:TRUE"},
        {"subjectAltName", san},
        {"keyUsage", "critical,digitalSignature,keyCertSign"},
    };
    for (size_t i = 0; i < 3; i++) {
        X509_EXTENSION *e = X509V3_EXT_conf(NULL, &ctx, exts[i][0], exts[i][1]);
        if (!e) {
            rc = -EINVAL;
            goto out;
        }
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    if (X509_sign(x, key, EVP_sha256()) <= 0) {
        rc = -EINVAL;
        goto out;
    }
    if ((rc = write_pem(cert_path, x, NULL)) == 0)
        rc = write_pem(key_path, NULL, key);
out:
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}
