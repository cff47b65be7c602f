/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_sigv4.c: AWS Signature Version 4 for S3, written here rather than taken
 * from libcurl (whose --aws-sigv4 neither sorts nor encodes query parameters).
 * Builds the canonical request, the string to sign and the signature exactly
 * as AWS documents them, with OpenSSL 3 for SHA-256 and HMAC. The canonical
 * query string is also what the client puts in the URL, so what is signed is
 * byte for byte what is sent.
 *
 *   canonical request              string to sign
 *   -----------------              --------------
 *   METHOD \n                      AWS4-HMAC-SHA256 \n
 *   /encoded/uri \n                20130524T000000Z \n
 *   a=1&b=%20 \n                   20130524/us-east-1/s3/aws4_request \n
 *   host:h \n x-amz-date:d \n      hex(SHA256(canonical request))
 *   \n
 *   host;x-amz-date \n             signing key = HMAC chain over
 *   payload hash                   "AWS4"+secret, date, region, service, "aws4_request"
 *
 * The signing key is its own step (s3__sigv4_signing_key), so the S3 API's
 * verifier can derive it once per day and region and sign with it
 * (s3__sigv4_sign_with_key) through the same canonicalisation as the client.
 *
 * Pure and reentrant: no globals, nothing but malloc.
 */
#include "s3_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

/* A growable string; a failed allocation sticks (oom) and is checked once. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_grow(sbuf *s, size_t more)
{
    if (s->oom)
        return;
    if (s->len + more + 1 <= s->cap)
        return;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + more + 1)
        cap *= 2;
    char *p = realloc(s->p, cap);
    if (p == NULL) {
        s->oom = true;
        return;
    }
    s->p = p;
    s->cap = cap;
}

static void sb_add(sbuf *s, const char *d, size_t n)
{
    sb_grow(s, n);
    if (s->oom)
        return;
    memcpy(s->p + s->len, d, n);
    s->len += n;
    s->p[s->len] = '\0';
}

static void sb_adds(sbuf *s, const char *d)
{
    sb_add(s, d, strlen(d));
}

static void sb_addc(sbuf *s, char c)
{
    sb_add(s, &c, 1);
}

/* The string, or NULL (freed) on allocation failure; "" for an empty one. */
static char *sb_take(sbuf *s)
{
    if (!s->oom && s->p == NULL)
        sb_grow(s, 0);
    if (s->oom) {
        free(s->p);
        s->p = NULL;
        return NULL;
    }
    if (s->len == 0)
        s->p[0] = '\0';
    char *p = s->p;
    s->p = NULL;
    return p;
}

static const char hexdig[] = "0123456789ABCDEF";
static const char hexlow[] = "0123456789abcdef";

static bool unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static void sb_add_encoded(sbuf *s, const char *in, size_t len, bool keep_slash)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (unreserved(c) || (keep_slash && c == '/')) {
            sb_addc(s, (char)c);
        } else {
            char t[3] = {'%', hexdig[c >> 4], hexdig[c & 15]};
            sb_add(s, t, 3);
        }
    }
}

char *s3__uri_encode(const char *in, size_t len, bool keep_slash)
{
    sbuf s = {0};
    if (in != NULL)
        sb_add_encoded(&s, in, len, keep_slash);
    return sb_take(&s);
}

static void to_hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexlow[d[i] >> 4];
        out[2 * i + 1] = hexlow[d[i] & 15];
    }
    out[2 * n] = '\0';
}

void s3__sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    /* EVP_Digest fails only when OpenSSL cannot allocate its context: a
     * process in that state cannot sign anything; make it loud. */
    if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32) {
        fprintf(stderr, "level=fatal msg=\"SHA-256 failed in OpenSSL\"\n");
        abort();
    }
    to_hex(md, 32, out);
}

void s3__amz_date(int64_t unix_seconds, char out[17])
{
    time_t t = (time_t)unix_seconds;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0) {
        /* Out of what the format can say: the epoch, which S3 will refuse. */
        memset(&tm, 0, sizeof tm);
        tm.tm_year = 70;
        tm.tm_mday = 1;
    }
    /* Written digit by digit: every field is known to be in range here. */
    const int f[6] = {tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                      tm.tm_hour,        tm.tm_min,     tm.tm_sec};
    const int w[6] = {4, 2, 2, 2, 2, 2};
    char *p = out;
    for (int i = 0; i < 6; i++) {
        for (int d = w[i] - 1, v = f[i]; d >= 0; d--, v /= 10)
            p[d] = (char)('0' + v % 10);
        p += w[i];
        if (i == 2)
            *p++ = 'T';
    }
    *p++ = 'Z';
    *p = '\0';
}

/* ---- canonical query ---------------------------------------------------- */

typedef struct enc_pair {
    char *name;
    char *value;
} enc_pair;

static int cmp_pair(const void *a, const void *b)
{
    const enc_pair *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

char *s3__canonical_query(const s3__kv *query, size_t n)
{
    if (n == 0 || query == NULL)
        return strdup("");
    enc_pair *v = calloc(n, sizeof *v);
    if (v == NULL)
        return NULL;
    char *res = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *nm = query[i].name ? query[i].name : "";
        const char *vl = query[i].value ? query[i].value : "";
        v[i].name = s3__uri_encode(nm, strlen(nm), false);
        v[i].value = s3__uri_encode(vl, strlen(vl), false);
        if (v[i].name == NULL || v[i].value == NULL)
            goto out;
    }
    /* Sorting the encoded forms by byte is what AWS does ("sort by code point"). */
    qsort(v, n, sizeof *v, cmp_pair);
    sbuf s = {0};
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_addc(&s, '&');
        sb_adds(&s, v[i].name);
        sb_addc(&s, '=');
        sb_adds(&s, v[i].value);
    }
    res = sb_take(&s);
out:
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].value);
    }
    free(v);
    return res;
}

/* ---- canonical headers -------------------------------------------------- */

typedef struct canon_hdr {
    char *name;   /* lower case */
    char *value;  /* trimmed, inner runs of spaces folded to one */
    size_t order; /* original position, so equal names keep their order */
} canon_hdr;

static int cmp_hdr(const void *a, const void *b)
{
    const canon_hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

static char *lower_dup(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        d[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    d[n] = '\0';
    return d;
}

static bool hspace(char c)
{
    return c == ' ' || c == '\t';
}

static char *trim_fold_dup(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d == NULL)
        return NULL;
    size_t j = 0;
    bool pending_space = false;
    for (size_t i = 0; i < n; i++) {
        if (hspace(s[i])) {
            pending_space = j > 0;
            continue;
        }
        if (pending_space)
            d[j++] = ' ';
        pending_space = false;
        d[j++] = s[i];
    }
    d[j] = '\0';
    return d;
}

void s3__sign_output_free(s3__sign_output *out)
{
    if (out == NULL)
        return;
    free(out->canonical_request);
    free(out->string_to_sign);
    free(out->signed_headers);
    free(out->authorization);
    memset(out, 0, sizeof *out);
}

static int hmac256_n(const void *key, size_t keylen, const char *msg, size_t len,
                     unsigned char out[32])
{
    unsigned int olen = 0;
    if (HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, len, out, &olen) == NULL ||
        olen != 32)
        return -ENOMEM;
    return 0;
}

static int hmac256(const void *key, size_t keylen, const char *msg, unsigned char out[32])
{
    return hmac256_n(key, keylen, msg, strlen(msg), out);
}

int s3__sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          const char *service, unsigned char key[32])
{
    if (secret == NULL || date8 == NULL || region == NULL || service == NULL || key == NULL)
        return -EINVAL;
    /* HMAC("AWS4" + secret, date) -> region -> service -> "aws4_request" */
    sbuf k0 = {0};
    sb_adds(&k0, "AWS4");
    sb_adds(&k0, secret);
    int rc = -ENOMEM;
    if (!k0.oom && hmac256(k0.p, k0.len, date8, key) == 0 && hmac256(key, 32, region, key) == 0 &&
        hmac256(key, 32, service, key) == 0 && hmac256(key, 32, "aws4_request", key) == 0)
        rc = 0;
    if (k0.p) {
        OPENSSL_cleanse(k0.p, k0.len);
        free(k0.p);
    }
    if (rc < 0)
        OPENSSL_cleanse(key, 32);
    return rc;
}

int s3__sigv4_hmac_hex(const unsigned char key[32], const char *msg, size_t len, char out[65])
{
    unsigned char sig[32];
    if (hmac256_n(key, 32, msg, len, sig) < 0)
        return -ENOMEM;
    to_hex(sig, 32, out);
    return 0;
}

static bool sign_input_ok(const s3__sign_input *in)
{
    if (in->method == NULL || in->canonical_uri == NULL || in->payload_hash == NULL ||
        in->amz_date == NULL || strlen(in->amz_date) != 16 || in->region == NULL ||
        in->service == NULL || in->access_key == NULL ||
        (in->n_headers > 0 && in->headers == NULL) || (in->n_query > 0 && in->query == NULL))
        return false;
    for (size_t i = 0; i < in->n_headers; i++)
        if (in->headers[i].name == NULL || in->headers[i].value == NULL)
            return false;
    return true;
}

int s3__sigv4_sign(const s3__sign_input *in, s3__sign_output *out)
{
    if (in == NULL || out == NULL)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    if (!sign_input_ok(in) || in->secret_key == NULL)
        return -EINVAL;
    char date[9];
    memcpy(date, in->amz_date, 8);
    date[8] = '\0';
    unsigned char key[32];
    int rc = s3__sigv4_signing_key(in->secret_key, date, in->region, in->service, key);
    if (rc < 0)
        return rc;
    rc = s3__sigv4_sign_with_key(in, key, out);
    OPENSSL_cleanse(key, sizeof key);
    return rc;
}

int s3__sigv4_sign_with_key(const s3__sign_input *in, const unsigned char key[32],
                            s3__sign_output *out)
{
    if (in == NULL || out == NULL || key == NULL)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    if (!sign_input_ok(in))
        return -EINVAL;

    int rc = -ENOMEM;
    char *query = NULL;
    canon_hdr *h = NULL;
    size_t nh = in->n_headers;
    sbuf cr = {0}, sh = {0}, sts = {0}, auth = {0};

    query = s3__canonical_query(in->query, in->n_query);
    if (query == NULL)
        goto out;
    if (nh > 0) {
        h = calloc(nh, sizeof *h);
        if (h == NULL)
            goto out;
    }
    for (size_t i = 0; i < nh; i++) {
        h[i].name = lower_dup(in->headers[i].name);
        h[i].value = trim_fold_dup(in->headers[i].value);
        h[i].order = i;
        if (h[i].name == NULL || h[i].value == NULL)
            goto out;
    }
    if (nh > 0)
        qsort(h, nh, sizeof *h, cmp_hdr);

    /* Canonical request. A header that appears twice is one line, its values
     * joined by commas in the order given. */
    sb_adds(&cr, in->method);
    sb_addc(&cr, '\n');
    sb_adds(&cr, in->canonical_uri[0] ? in->canonical_uri : "/");
    sb_addc(&cr, '\n');
    sb_adds(&cr, query);
    sb_addc(&cr, '\n');
    for (size_t i = 0; i < nh; i++) {
        bool same = i > 0 && strcmp(h[i].name, h[i - 1].name) == 0;
        if (same) {
            sb_addc(&cr, ',');
        } else {
            if (i > 0) {
                sb_addc(&cr, '\n');
                sb_addc(&sh, ';');
            }
            sb_adds(&cr, h[i].name);
            sb_addc(&cr, ':');
            sb_adds(&sh, h[i].name);
        }
        sb_adds(&cr, h[i].value);
    }
    if (nh > 0)
        sb_addc(&cr, '\n');
    sb_addc(&cr, '\n');
    sb_add(&cr, sh.p ? sh.p : "", sh.len);
    sb_addc(&cr, '\n');
    sb_adds(&cr, in->payload_hash);
    if (cr.oom || sh.oom)
        goto out;

    char cr_hash[65];
    s3__sha256_hex(cr.p, cr.len, cr_hash);

    char date[9];
    memcpy(date, in->amz_date, 8);
    date[8] = '\0';
    sbuf scope = {0};
    sb_adds(&scope, date);
    sb_addc(&scope, '/');
    sb_adds(&scope, in->region);
    sb_addc(&scope, '/');
    sb_adds(&scope, in->service);
    sb_adds(&scope, "/aws4_request");
    char *scope_s = sb_take(&scope);
    if (scope_s == NULL)
        goto out;

    sb_adds(&sts, "AWS4-HMAC-SHA256\n");
    sb_adds(&sts, in->amz_date);
    sb_addc(&sts, '\n');
    sb_adds(&sts, scope_s);
    sb_addc(&sts, '\n');
    sb_adds(&sts, cr_hash);
    if (sts.oom) {
        free(scope_s);
        goto out;
    }

    if (s3__sigv4_hmac_hex(key, sts.p, sts.len, out->signature) < 0) {
        free(scope_s);
        goto out;
    }

    sb_adds(&auth, "AWS4-HMAC-SHA256 Credential=");
    sb_adds(&auth, in->access_key);
    sb_addc(&auth, '/');
    sb_adds(&auth, scope_s);
    sb_adds(&auth, ", SignedHeaders=");
    sb_add(&auth, sh.p ? sh.p : "", sh.len);
    sb_adds(&auth, ", Signature=");
    sb_adds(&auth, out->signature);
    free(scope_s);
    if (auth.oom)
        goto out;

    out->canonical_request = sb_take(&cr);
    out->string_to_sign = sb_take(&sts);
    out->signed_headers = sb_take(&sh);
    out->authorization = sb_take(&auth);
    if (!out->canonical_request || !out->string_to_sign || !out->signed_headers ||
        !out->authorization) {
        s3__sign_output_free(out);
        goto out;
    }
    rc = 0;
out:
    if (rc < 0)
        memset(out->signature, 0, sizeof out->signature);
    free(cr.p);
    free(sh.p);
    free(sts.p);
    free(auth.p);
    for (size_t i = 0; h && i < nh; i++) {
        free(h[i].name);
        free(h[i].value);
    }
    free(h);
    free(query);
    return rc;
}
