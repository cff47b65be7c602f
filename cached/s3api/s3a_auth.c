/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_auth.c: verifying SigV4 (header and query) and SigV2 (query) the way
 * S3 does (s3a_auth.h). The SigV4 computation itself is the S3 client's
 * (client/s3/s3_sigv4.c: s3__sigv4_sign_with_key); what is here is reading what
 * the client sent back into that function's input:
 *
 *   raw path  --decode, re-encode once-->  canonical URI
 *   raw query --split on & and =, decode--> pairs (encoded and sorted there)
 *   SignedHeaders list --> those headers, repeats in arrival order
 *   x-amz-content-sha256 as sent --> payload hash
 *
 * then comparing the signature in constant time. SigV2 (HMAC-SHA1) is only
 * ever verified, never signed, so its string to sign lives here.
 */
#include "s3a_auth.h"
#include "s3_sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define EMPTY_SHA256       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define KEY_CACHE          32
#define MAX_EXPIRES        604800
#define MAX_SIGNED_HEADERS 64

typedef struct key_entry {
    bool used;
    char akid[S3A_ACCESS_KEY_MAX];
    char date[9];
    char region[64];
    uint64_t secret_fp;
    unsigned char key[32];
    uint64_t last;
} key_entry;

struct s3a_verifier {
    s3a_auth_config cfg;
    char region[64];
    key_entry keys[KEY_CACHE];
    uint64_t tick;
};

int s3a_verifier_create(s3a_verifier **out, const s3a_auth_config *cfg)
{
    *out = NULL;
    if (cfg == NULL || cfg->secret == NULL)
        return -EINVAL;
    const char *region = cfg->region ? cfg->region : "us-east-1";
    if (strlen(region) >= 64 || region[0] == '\0')
        return -EINVAL;
    s3a_verifier *v = calloc(1, sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    v->cfg = *cfg;
    snprintf(v->region, sizeof v->region, "%s", region);
    v->cfg.region = v->region;
    if (v->cfg.max_skew_s <= 0)
        v->cfg.max_skew_s = 900;
    *out = v;
    return 0;
}

void s3a_verifier_destroy(s3a_verifier **pv)
{
    if (pv == NULL || *pv == NULL)
        return;
    OPENSSL_cleanse((*pv)->keys, sizeof(*pv)->keys);
    free(*pv);
    *pv = NULL;
}

/* A fingerprint of the secret, to notice a changed secret; the cached key is
 * what authenticates, this only says when it is stale. */
static uint64_t fingerprint(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int cached_key(s3a_verifier *v, const char *akid, const char *secret, const char *date,
                      const char *region, unsigned char key[32])
{
    uint64_t fp = fingerprint(secret);
    key_entry *victim = &v->keys[0];
    v->tick++;
    for (int i = 0; i < KEY_CACHE; i++) {
        key_entry *e = &v->keys[i];
        if (e->used && e->secret_fp == fp && strcmp(e->akid, akid) == 0 &&
            strcmp(e->date, date) == 0 && strcmp(e->region, region) == 0) {
            e->last = v->tick;
            memcpy(key, e->key, 32);
            return 0;
        }
        if (!e->used || e->last < victim->last)
            victim = e;
    }
    int rc = s3__sigv4_signing_key(secret, date, region, "s3", key);
    if (rc < 0)
        return rc;
    if (strlen(akid) < sizeof victim->akid && strlen(region) < sizeof victim->region) {
        victim->used = true;
        snprintf(victim->akid, sizeof victim->akid, "%s", akid);
        snprintf(victim->date, sizeof victim->date, "%s", date);
        snprintf(victim->region, sizeof victim->region, "%s", region);
        victim->secret_fp = fp;
        memcpy(victim->key, key, 32);
        victim->last = v->tick;
    }
    return 0;
}

/* The query, decoded (s3a_query_parse). */
typedef s3a_query qparams;

static const char *qget(const qparams *q, const char *name)
{
    return s3a_query_get(q, name);
}

/* ---- pieces of SigV4 ---------------------------------------------------------------- */

/* S3 encodes the path once: decode what was sent, encode it again. */
static char *canonical_uri(const char *raw, int *rc)
{
    size_t n = raw ? strlen(raw) : 0;
    char *dec = s3a_pct_decode_dup(raw ? raw : "", n, rc);
    if (dec == NULL)
        return NULL;
    char *enc = s3__uri_encode(dec, strlen(dec), true);
    free(dec);
    if (enc == NULL)
        *rc = -ENOMEM;
    return enc;
}

typedef struct credential {
    char akid[S3A_ACCESS_KEY_MAX];
    char date[9];
    char region[64];
} credential;

/* "<akid>/<yyyymmdd>/<region>/s3/aws4_request", split from the right (a key id
 * may hold '/'). Returns NULL or the reason it is malformed. */
static const char *parse_credential(const char *s, credential *c)
{
    const char *slash[4];
    const char *end = s + strlen(s);
    const char *p = end;
    for (int i = 0; i < 4; i++) {
        while (p > s && p[-1] != '/')
            p--;
        if (p == s)
            return "the Credential must be <access key>/<date>/<region>/s3/aws4_request";
        slash[i] = p - 1;
        p--;
    }
    /* slash[3] ends the key id, slash[2] the date, slash[1] the region, slash[0] the service */
    size_t akl = (size_t)(slash[3] - s), dl = (size_t)(slash[2] - slash[3] - 1);
    size_t rl = (size_t)(slash[1] - slash[2] - 1), sl = (size_t)(slash[0] - slash[1] - 1);
    if (akl == 0 || akl >= sizeof c->akid)
        return "the access key id in the Credential is empty or too long";
    if (dl != 8)
        return "the date in the Credential must be yyyymmdd";
    if (rl == 0 || rl >= sizeof c->region)
        return "the region in the Credential is empty or too long";
    if (sl != 2 || strncmp(slash[1] + 1, "s3", 2) != 0 || strcmp(slash[0] + 1, "aws4_request") != 0)
        return "the Credential's scope must end in /s3/aws4_request";
    memcpy(c->akid, s, akl);
    c->akid[akl] = '\0';
    memcpy(c->date, slash[3] + 1, 8);
    c->date[8] = '\0';
    memcpy(c->region, slash[2] + 1, rl);
    c->region[rl] = '\0';
    for (int i = 0; i < 8; i++)
        if (c->date[i] < '0' || c->date[i] > '9')
            return "the date in the Credential must be yyyymmdd";
    return NULL;
}

static bool is_hex64(const char *s)
{
    if (s == NULL || strlen(s) != 64)
        return false;
    for (int i = 0; i < 64; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return false;
    }
    return true;
}

/* The payload the signature says comes: from x-amz-content-sha256 (header
 * auth) or X-Amz-Content-Sha256 (query). */
static int payload_kind(const char *v, s3a_auth *a, s3a_error *err)
{
    if (strcmp(v, "UNSIGNED-PAYLOAD") == 0) {
        a->payload = S3A_PAYLOAD_UNSIGNED;
    } else if (strcmp(v, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") == 0) {
        a->payload = S3A_PAYLOAD_STREAMING_SIGNED;
    } else if (strcmp(v, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") == 0) {
        a->payload = S3A_PAYLOAD_STREAMING_SIGNED_TRAILER;
    } else if (strcmp(v, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") == 0) {
        a->payload = S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    } else if (strncmp(v, "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", 40) == 0) {
        return s3a_error_set(err, 501, "NotImplemented",
                             "SigV4a streaming uploads (%s) are not supported; sign with "
                             "AWS4-HMAC-SHA256",
                             v);
    } else if (is_hex64(v)) {
        a->payload = S3A_PAYLOAD_SHA256;
        memcpy(a->payload_sha256, v, 65);
    } else {
        return s3a_error_set(err, 400, "InvalidArgument",
                             "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING-* "
                             "value or the SHA-256 of the body in lower-case hex");
    }
    return 0;
}

static bool has_body(const s3a_request *req)
{
    const char *cl = s3a_header_get(req->headers, req->n_headers, "content-length");
    const char *te = s3a_header_get(req->headers, req->n_headers, "transfer-encoding");
    return te != NULL || (cl != NULL && strcmp(cl, "0") != 0);
}

/* The headers named by a SignedHeaders list, for the signer: every header of
 * each name, in arrival order. */
static int signed_headers(const s3a_request *req, const char *list, s3__kv **out, size_t *n,
                          s3a_error *err)
{
    *out = NULL;
    *n = 0;
    size_t names = 1;
    for (const char *p = list; *p; p++)
        names += *p == ';';
    if (list[0] == '\0' || names > MAX_SIGNED_HEADERS)
        return s3a_error_set(err, 403, "SignatureDoesNotMatch",
                             "SignedHeaders must name between 1 and %d headers",
                             MAX_SIGNED_HEADERS);
    s3__kv *kv = calloc(req->n_headers + 1, sizeof *kv);
    if (kv == NULL)
        return -ENOMEM;
    size_t k = 0;
    bool host = false;
    const char *p = list;
    while (*p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        char name[128];
        if (len == 0 || len >= sizeof name) {
            free(kv);
            return s3a_error_set(err, 403, "SignatureDoesNotMatch",
                                 "SignedHeaders has an empty or overlong name");
        }
        memcpy(name, p, len);
        name[len] = '\0';
        host = host || strcmp(name, "host") == 0;
        bool found = false;
        for (size_t i = 0; i < req->n_headers; i++) {
            if (strcasecmp(req->headers[i].name, name) == 0) {
                /* the same header may be named twice in a bad list: take it once */
                bool dup = false;
                for (size_t j = 0; j < k; j++)
                    dup = dup || kv[j].value == req->headers[i].value;
                if (!dup && k < req->n_headers) {
                    kv[k].name = req->headers[i].name;
                    kv[k].value = req->headers[i].value;
                    k++;
                }
                found = true;
            }
        }
        if (!found) {
            free(kv);
            return s3a_error_set(err, 403, "SignatureDoesNotMatch",
                                 "the signed header '%s' is not in the request; a proxy may "
                                 "have removed it",
                                 name);
        }
        p += len;
        if (*p == ';')
            p++;
    }
    if (!host) {
        free(kv);
        return s3a_error_set(err, 403, "SignatureDoesNotMatch",
                             "SigV4 requires the host header to be signed");
    }
    *out = kv;
    *n = k;
    return 0;
}

static void mismatch(s3a_error *err, const char *akid, const s3__sign_output *o,
                     const char *provided)
{
    s3a_error_set(err, 403, "SignatureDoesNotMatch",
                  "The request signature we calculated does not match the signature you "
                  "provided. Check your key and signing method.");
    s3a_error_extra(err, "AWSAccessKeyId", akid, strlen(akid));
    if (o != NULL && o->string_to_sign)
        s3a_error_extra(err, "StringToSign", o->string_to_sign, strlen(o->string_to_sign));
    s3a_error_extra(err, "SignatureProvided", provided, strlen(provided));
    if (o != NULL && o->canonical_request)
        s3a_error_extra(err, "CanonicalRequest", o->canonical_request,
                        strlen(o->canonical_request));
}

/* The common end of header and query SigV4: the signature, compared. */
static int check_v4(s3a_verifier *v, const s3a_request *req, const credential *cr,
                    const char *amz_date, const char *signed_list, const char *signature,
                    const char *payload_hash, const qparams *q, bool drop_signature, s3a_auth *auth,
                    s3a_error *err)
{
    char secret[S3A_SECRET_MAX];
    void *principal = NULL;
    if (v->cfg.secret(v->cfg.secret_arg, cr->akid, secret, sizeof secret, &principal) < 0) {
        int rc = s3a_error_set(err, 403, "InvalidAccessKeyId",
                               "The AWS Access Key Id you provided does not exist in our records.");
        s3a_error_extra(err, "AWSAccessKeyId", cr->akid, strlen(cr->akid));
        return rc;
    }
    int rc = 0;
    s3__kv *hk = NULL;
    size_t nh = 0;
    s3__kv *qk = NULL;
    size_t nq = 0;
    char *uri = NULL;
    s3__sign_output o;
    memset(&o, 0, sizeof o);
    unsigned char key[32];

    rc = signed_headers(req, signed_list, &hk, &nh, err);
    if (rc < 0)
        goto out;
    uri = canonical_uri(req->path, &rc);
    if (uri == NULL) {
        rc = rc == -ENOMEM ? rc
                           : s3a_error_set(err, 400, "InvalidURI",
                                           "Couldn't parse the specified URI: a bad %%-escape "
                                           "in the path");
        goto out;
    }
    if (q->n > 0) {
        qk = calloc(q->n, sizeof *qk);
        if (qk == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < q->n; i++)
            if (!drop_signature || strcmp(q->p[i].name, "X-Amz-Signature") != 0) {
                qk[nq].name = q->p[i].name;
                qk[nq].value = q->p[i].value;
                nq++;
            }
    }
    rc = cached_key(v, cr->akid, secret, cr->date, cr->region, key);
    if (rc < 0)
        goto out;
    s3__sign_input in = {
        .method = req->method,
        .canonical_uri = uri,
        .query = qk,
        .n_query = nq,
        .headers = hk,
        .n_headers = nh,
        .payload_hash = payload_hash,
        .amz_date = amz_date,
        .region = cr->region,
        .service = "s3",
        .access_key = cr->akid,
    };
    rc = s3__sigv4_sign_with_key(&in, key, &o);
    if (rc < 0)
        goto out;
    bool ok = strlen(signature) == 64 && CRYPTO_memcmp(o.signature, signature, 64) == 0 &&
              strcmp(o.signed_headers, signed_list) == 0;
    if (!ok) {
        mismatch(err, cr->akid, &o, signature);
        if (strlen(signature) == 64 && CRYPTO_memcmp(o.signature, signature, 64) == 0)
            snprintf(err->message, sizeof err->message,
                     "SignedHeaders must be lower case, sorted and without repeats, as SigV4 "
                     "says: '%s' is not",
                     signed_list);
        rc = -EACCES;
        goto out;
    }
    snprintf(auth->access_key, sizeof auth->access_key, "%s", cr->akid);
    auth->principal = principal;
    memcpy(auth->seed_signature, signature, 64);
    auth->seed_signature[64] = '\0';
    memcpy(auth->amz_date, amz_date, 17);
    snprintf(auth->scope, sizeof auth->scope, "%s/%s/s3/aws4_request", cr->date, cr->region);
    memcpy(auth->signing_key, key, 32);
    rc = 0;
out:
    OPENSSL_cleanse(secret, sizeof secret);
    OPENSSL_cleanse(key, sizeof key);
    s3__sign_output_free(&o);
    free(uri);
    free(hk);
    free(qk);
    return rc;
}

static int region_check(const s3a_verifier *v, const credential *cr, bool query, s3a_error *err)
{
    if (!v->cfg.strict_region || strcmp(cr->region, v->region) == 0)
        return 0;
    int rc = s3a_error_set(
        err, 400, query ? "AuthorizationQueryParametersError" : "AuthorizationHeaderMalformed",
        "The authorization header is malformed; the region '%s' is wrong; "
        "expecting '%s'",
        cr->region, v->region);
    s3a_error_extra(err, "Region", v->region, strlen(v->region));
    return rc;
}

static void iso_time(int64_t t, char out[25])
{
    s3a_iso8601_ms(t * 1000, out);
    /* S3 writes these without milliseconds */
    out[19] = 'Z';
    out[20] = '\0';
}

/* ---- SigV4, Authorization header ------------------------------------------------------ */

static int verify_header_v4(s3a_verifier *v, const s3a_request *req, const char *authz,
                            const qparams *q, int64_t now, s3a_auth *auth, s3a_error *err)
{
    const char *p = authz + strlen("AWS4-HMAC-SHA256");
    char cred_s[512] = "", signed_list[1024] = "", signature[128] = "";
    bool got_c = false, got_h = false, got_s = false;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '\0')
            break;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && p[len - 1] == ' ')
            len--;
        char *dst = NULL;
        size_t cap = 0, skip = 0;
        if (strncmp(p, "Credential=", 11) == 0)
            dst = cred_s, cap = sizeof cred_s, skip = 11, got_c = true;
        else if (strncmp(p, "SignedHeaders=", 14) == 0)
            dst = signed_list, cap = sizeof signed_list, skip = 14, got_h = true;
        else if (strncmp(p, "Signature=", 10) == 0)
            dst = signature, cap = sizeof signature, skip = 10, got_s = true;
        if (dst != NULL) {
            if (len - skip >= cap)
                return s3a_error_set(err, 400, "AuthorizationHeaderMalformed",
                                     "The authorization header is malformed; a field is too long");
            memcpy(dst, p + skip, len - skip);
            dst[len - skip] = '\0';
        }
        p += len;
        while (*p == ' ')
            p++;
    }
    if (!got_c || !got_h || !got_s)
        return s3a_error_set(err, 400, "AuthorizationHeaderMalformed",
                             "The authorization header is malformed; it needs Credential=, "
                             "SignedHeaders= and Signature=");
    credential cr;
    const char *why = parse_credential(cred_s, &cr);
    if (why != NULL)
        return s3a_error_set(err, 400, "AuthorizationHeaderMalformed",
                             "The authorization header is malformed; %s", why);
    int rc = region_check(v, &cr, false, err);
    if (rc < 0)
        return rc;

    char amz[17];
    int64_t t;
    const char *xd = s3a_header_get(req->headers, req->n_headers, "x-amz-date");
    if (xd != NULL) {
        t = s3a_parse_amz_date(xd);
        if (t >= 0)
            memcpy(amz, xd, 17);
    } else {
        const char *d = s3a_header_get(req->headers, req->n_headers, "date");
        t = d ? s3a_parse_http_date(d) : -1;
        if (t >= 0)
            s3__amz_date(t, amz);
    }
    if (t < 0)
        return s3a_error_set(err, 403, "AccessDenied",
                             "AWS authentication requires a valid Date or x-amz-date header");
    if (strncmp(amz, cr.date, 8) != 0)
        return s3a_error_set(err, 400, "AuthorizationHeaderMalformed",
                             "Invalid credential date. Date is not the same as X-Amz-Date.");
    int64_t skew = now > t ? now - t : t - now;
    if (skew > v->cfg.max_skew_s) {
        rc = s3a_error_set(err, 403, "RequestTimeTooSkewed",
                           "The difference between the request time and the current time is "
                           "too large.");
        char st[25], ms[24];
        s3a_error_extra(err, "RequestTime", amz, 16);
        iso_time(now, st);
        s3a_error_extra(err, "ServerTime", st, strlen(st));
        int n = snprintf(ms, sizeof ms, "%lld", (long long)v->cfg.max_skew_s * 1000);
        s3a_error_extra(err, "MaxAllowedSkewMilliseconds", ms, (size_t)n);
        return rc;
    }

    const char *ph = s3a_header_get(req->headers, req->n_headers, "x-amz-content-sha256");
    if (ph == NULL) {
        if (has_body(req))
            return s3a_error_set(err, 400, "InvalidRequest",
                                 "Missing required header for this request: "
                                 "x-amz-content-sha256");
        ph = EMPTY_SHA256; /* what a signer without it (curl) hashed: no body */
    }
    rc = payload_kind(ph, auth, err);
    if (rc < 0)
        return rc;
    rc = check_v4(v, req, &cr, amz, signed_list, signature, ph, q, false, auth, err);
    if (rc == 0)
        auth->kind = S3A_AUTH_SIGV4;
    return rc;
}

/* ---- SigV4, presigned ------------------------------------------------------------------- */

static int verify_query_v4(s3a_verifier *v, const s3a_request *req, const qparams *q, int64_t now,
                           s3a_auth *auth, s3a_error *err)
{
    const char *alg = qget(q, "X-Amz-Algorithm"), *cred_s = qget(q, "X-Amz-Credential");
    const char *sig = qget(q, "X-Amz-Signature"), *date = qget(q, "X-Amz-Date");
    const char *list = qget(q, "X-Amz-SignedHeaders"), *exp_s = qget(q, "X-Amz-Expires");
    if (!alg || !cred_s || !sig || !date || !list || !exp_s)
        return s3a_error_set(err, 400, "AuthorizationQueryParametersError",
                             "Query-string authentication version 4 requires the "
                             "X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, "
                             "X-Amz-SignedHeaders, and X-Amz-Expires parameters.");
    if (strcmp(alg, "AWS4-HMAC-SHA256") != 0)
        return s3a_error_set(err, 400, "AuthorizationQueryParametersError",
                             "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
    int64_t t = s3a_parse_amz_date(date);
    if (t < 0)
        return s3a_error_set(err, 400, "AuthorizationQueryParametersError",
                             "X-Amz-Date must be in the ISO8601 Long Format "
                             "\"yyyyMMdd'T'HHmmss'Z'\"");
    char *end = NULL;
    errno = 0;
    long long exp = strtoll(exp_s, &end, 10);
    if (exp_s[0] == '\0' || *end != '\0' || errno != 0)
        return s3a_error_set(err, 400, "AuthorizationQueryParametersError",
                             "X-Amz-Expires should be a number");
    if (exp < 0)
        return s3a_error_set(err, 400, "AuthorizationQueryParametersError",
                             "X-Amz-Expires must be non-negative");
    if (exp > MAX_EXPIRES)
        return s3a_error_set(err, 400, "AuthorizationQueryParametersError",
                             "X-Amz-Expires must be less than a week (in seconds); that is, the "
                             "given X-Amz-Expires must be less than 604800 seconds");
    credential cr;
    const char *why = parse_credential(cred_s, &cr);
    if (why != NULL)
        return s3a_error_set(err, 400, "AuthorizationQueryParametersError",
                             "Error parsing the X-Amz-Credential parameter; %s", why);
    if (strncmp(date, cr.date, 8) != 0)
        return s3a_error_set(err, 400, "AuthorizationQueryParametersError",
                             "Invalid credential date. Date is not the same as X-Amz-Date.");
    int rc = region_check(v, &cr, true, err);
    if (rc < 0)
        return rc;
    if (t > now + v->cfg.max_skew_s)
        return s3a_error_set(err, 403, "AccessDenied", "Request is not valid yet");
    if (now > t + exp) {
        rc = s3a_error_set(err, 403, "AccessDenied", "Request has expired");
        char b[25];
        s3a_error_extra(err, "X-Amz-Expires", exp_s, strlen(exp_s));
        iso_time(t + exp, b);
        s3a_error_extra(err, "Expires", b, strlen(b));
        iso_time(now, b);
        s3a_error_extra(err, "ServerTime", b, strlen(b));
        return rc;
    }
    const char *ph = qget(q, "X-Amz-Content-Sha256");
    if (ph == NULL)
        ph = "UNSIGNED-PAYLOAD";
    rc = payload_kind(ph, auth, err);
    if (rc < 0)
        return rc;
    rc = check_v4(v, req, &cr, date, list, sig, ph, q, true, auth, err);
    if (rc == 0)
        auth->kind = S3A_AUTH_SIGV4_QUERY;
    return rc;
}

/* ---- SigV2, presigned ------------------------------------------------------------------- */

/* The sub-resources SigV2 signs (botocore's HmacV1Auth.QSAOfInterest). */
static const char *const v2_subresources[] = {
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
};

static bool v2_subresource(const char *name)
{
    for (size_t i = 0; i < sizeof v2_subresources / sizeof v2_subresources[0]; i++)
        if (strcmp(v2_subresources[i], name) == 0)
            return true;
    return false;
}

typedef struct amz_hdr {
    char *name;
    const char *value;
    size_t order;
} amz_hdr;

static int cmp_amz(const void *a, const void *b)
{
    const amz_hdr *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->order < y->order ? -1 : 1);
}

static void add_trimmed(s3a_buf *b, const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    s3a_buf_add(b, v, n);
}

/* METHOD \n Content-MD5 \n Content-Type \n Expires \n x-amz-*: ... \n /bucket/path?subres */
static int v2_string_to_sign(const s3a_request *req, const qparams *q, const char *expires,
                             s3a_buf *sts)
{
    const char *md5 = s3a_header_get(req->headers, req->n_headers, "content-md5");
    const char *ct = s3a_header_get(req->headers, req->n_headers, "content-type");
    s3a_buf_adds(sts, req->method);
    s3a_buf_add(sts, "\n", 1);
    if (md5)
        add_trimmed(sts, md5);
    s3a_buf_add(sts, "\n", 1);
    if (ct)
        add_trimmed(sts, ct);
    s3a_buf_add(sts, "\n", 1);
    s3a_buf_adds(sts, expires);
    s3a_buf_add(sts, "\n", 1);

    amz_hdr *h = calloc(req->n_headers + 1, sizeof *h);
    if (h == NULL)
        return -ENOMEM;
    size_t nh = 0;
    int rc = 0;
    for (size_t i = 0; i < req->n_headers; i++) {
        if (strncasecmp(req->headers[i].name, "x-amz-", 6) != 0)
            continue;
        char *nm = strdup(req->headers[i].name);
        if (nm == NULL) {
            rc = -ENOMEM;
            break;
        }
        for (char *c = nm; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        h[nh].name = nm;
        h[nh].value = req->headers[i].value;
        h[nh].order = i;
        nh++;
    }
    if (rc == 0) {
        qsort(h, nh, sizeof *h, cmp_amz);
        for (size_t i = 0; i < nh; i++) {
            bool same = i > 0 && strcmp(h[i].name, h[i - 1].name) == 0;
            if (same) {
                s3a_buf_add(sts, ",", 1);
            } else {
                if (i > 0)
                    s3a_buf_add(sts, "\n", 1);
                s3a_buf_adds(sts, h[i].name);
                s3a_buf_add(sts, ":", 1);
            }
            add_trimmed(sts, h[i].value);
        }
        if (nh > 0)
            s3a_buf_add(sts, "\n", 1);
    }
    for (size_t i = 0; i < nh; i++)
        free(h[i].name);
    free(h);
    if (rc < 0)
        return rc;

    if (req->vhost_bucket != NULL) {
        s3a_buf_add(sts, "/", 1);
        s3a_buf_adds(sts, req->vhost_bucket);
    }
    s3a_buf_adds(sts, req->path && req->path[0] ? req->path : "/");
    /* "name" or "name=value" as sent, value decoded, sorted by name (stable,
     * as Python's sort) */
    size_t *sub = calloc(q->n + 1, sizeof *sub);
    if (sub == NULL)
        return -ENOMEM;
    size_t ns = 0;
    for (size_t i = 0; i < q->n; i++)
        if (v2_subresource(q->p[i].name))
            sub[ns++] = i;
    for (size_t i = 1; i < ns; i++)
        for (size_t j = i; j > 0 && strcmp(q->p[sub[j - 1]].name, q->p[sub[j]].name) > 0; j--) {
            size_t t = sub[j];
            sub[j] = sub[j - 1];
            sub[j - 1] = t;
        }
    for (size_t i = 0; i < ns; i++) {
        s3a_buf_add(sts, i == 0 ? "?" : "&", 1);
        s3a_buf_adds(sts, q->p[sub[i]].name);
        if (q->p[sub[i]].has_eq) {
            s3a_buf_add(sts, "=", 1);
            s3a_buf_adds(sts, q->p[sub[i]].value);
        }
    }
    free(sub);
    return sts->oom ? -ENOMEM : 0;
}

static int verify_query_v2(s3a_verifier *v, const s3a_request *req, const qparams *q, int64_t now,
                           s3a_auth *auth, s3a_error *err)
{
    if (v->cfg.no_sigv2)
        return s3a_error_set(err, 400, "InvalidRequest",
                             "Signature Version 2 presigned URLs are turned off on this "
                             "endpoint; presign with Signature Version 4 (boto3: "
                             "Config(signature_version='s3v4'))");
    const char *akid = qget(q, "AWSAccessKeyId"), *sig = qget(q, "Signature");
    const char *expires = qget(q, "Expires");
    if (!akid || !sig || !expires)
        return s3a_error_set(err, 403, "AccessDenied",
                             "Query-string authentication requires the Signature, Expires and "
                             "AWSAccessKeyId parameters");
    char *end = NULL;
    errno = 0;
    long long exp = strtoll(expires, &end, 10);
    if (expires[0] == '\0' || *end != '\0' || errno != 0 || exp < 0)
        return s3a_error_set(err, 403, "AccessDenied",
                             "Expires must be a time in seconds since the epoch");
    if (now > exp) {
        int rc = s3a_error_set(err, 403, "AccessDenied", "Request has expired");
        char b[25];
        iso_time(exp, b);
        s3a_error_extra(err, "Expires", b, strlen(b));
        iso_time(now, b);
        s3a_error_extra(err, "ServerTime", b, strlen(b));
        return rc;
    }
    char secret[S3A_SECRET_MAX];
    void *principal = NULL;
    if (strlen(akid) >= S3A_ACCESS_KEY_MAX ||
        v->cfg.secret(v->cfg.secret_arg, akid, secret, sizeof secret, &principal) < 0) {
        int rc = s3a_error_set(err, 403, "InvalidAccessKeyId",
                               "The AWS Access Key Id you provided does not exist in our records.");
        s3a_error_extra(err, "AWSAccessKeyId", akid, strlen(akid));
        return rc;
    }
    s3a_buf sts = {0};
    int rc = v2_string_to_sign(req, q, expires, &sts);
    if (rc < 0) {
        OPENSSL_cleanse(secret, sizeof secret);
        s3a_buf_free(&sts);
        return rc;
    }
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    unsigned char *h = HMAC(EVP_sha1(), secret, (int)strlen(secret), (const unsigned char *)sts.p,
                            sts.len, mac, &maclen);
    OPENSSL_cleanse(secret, sizeof secret);
    if (h == NULL) {
        s3a_buf_free(&sts);
        return -ENOMEM;
    }
    char b64[64];
    int bl = EVP_EncodeBlock((unsigned char *)b64, mac, (int)maclen);
    bool ok = bl > 0 && strlen(sig) == (size_t)bl && CRYPTO_memcmp(b64, sig, (size_t)bl) == 0;
    if (!ok) {
        rc = s3a_error_set(err, 403, "SignatureDoesNotMatch",
                           "The request signature we calculated does not match the signature "
                           "you provided. Check your key and signing method.");
        s3a_error_extra(err, "AWSAccessKeyId", akid, strlen(akid));
        s3a_error_extra(err, "StringToSign", sts.p, sts.len);
        s3a_error_extra(err, "SignatureProvided", sig, strlen(sig));
        s3a_buf_free(&sts);
        return rc;
    }
    s3a_buf_free(&sts);
    auth->kind = S3A_AUTH_SIGV2_QUERY;
    auth->payload = S3A_PAYLOAD_UNSIGNED;
    snprintf(auth->access_key, sizeof auth->access_key, "%s", akid);
    auth->principal = principal;
    return 0;
}

/* ---- the entry ---------------------------------------------------------------------------- */

int s3a_verify(s3a_verifier *v, const s3a_request *req, int64_t now, s3a_auth *auth, s3a_error *err)
{
    memset(auth, 0, sizeof *auth);
    if (req == NULL || req->method == NULL || req->path == NULL)
        return s3a_error_set(err, 400, "InvalidRequest", "the request has no method or path");
    qparams q;
    int rc = s3a_query_parse(req->query, &q);
    if (rc < 0)
        return rc == -ENOMEM ? rc
                             : s3a_error_set(err, 400, "InvalidURI",
                                             "Couldn't parse the specified URI: a bad %%-escape "
                                             "in the query");
    const char *authz = s3a_header_get(req->headers, req->n_headers, "authorization");
    bool q4 =
        qget(&q, "X-Amz-Algorithm") || qget(&q, "X-Amz-Signature") || qget(&q, "X-Amz-Credential");
    bool q2 = qget(&q, "AWSAccessKeyId") || qget(&q, "Signature");
    if ((authz != NULL) + q4 + q2 > 1) {
        rc = s3a_error_set(err, 400, "InvalidArgument",
                           "Only one auth mechanism allowed; only the X-Amz-Algorithm query "
                           "parameter, Signature query string parameter or the Authorization "
                           "header should be specified");
    } else if (authz != NULL) {
        if (strncmp(authz, "AWS4-HMAC-SHA256 ", 17) == 0)
            rc = verify_header_v4(v, req, authz, &q, now, auth, err);
        else if (strncmp(authz, "AWS4-ECDSA-P256-SHA256", 22) == 0)
            rc = s3a_error_set(err, 501, "NotImplemented",
                               "SigV4a signatures (AWS4-ECDSA-P256-SHA256) are not supported; "
                               "sign with AWS4-HMAC-SHA256");
        else if (strncmp(authz, "AWS ", 4) == 0)
            rc = s3a_error_set(err, 400, "InvalidRequest",
                               "Signature Version 2 in the Authorization header is not "
                               "supported; sign with Signature Version 4 (AWS4-HMAC-SHA256)");
        else
            rc = s3a_error_set(err, 400, "InvalidRequest",
                               "The authorization mechanism you have provided is not "
                               "supported. Please use AWS4-HMAC-SHA256.");
    } else if (q4) {
        rc = verify_query_v4(v, req, &q, now, auth, err);
    } else if (q2) {
        rc = verify_query_v2(v, req, &q, now, auth, err);
    } else {
        auth->kind = S3A_AUTH_ANONYMOUS;
        auth->payload = S3A_PAYLOAD_UNSIGNED;
        const char *ph = s3a_header_get(req->headers, req->n_headers, "x-amz-content-sha256");
        if (ph != NULL && is_hex64(ph)) {
            auth->payload = S3A_PAYLOAD_SHA256;
            memcpy(auth->payload_sha256, ph, 65);
        }
        rc = 0;
    }
    s3a_query_free(&q);
    if (rc < 0)
        OPENSSL_cleanse(auth->signing_key, sizeof auth->signing_key);
    return rc;
}
