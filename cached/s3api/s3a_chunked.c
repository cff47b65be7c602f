/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_chunked.c: the aws-chunked decoder of s3a_chunked.h, a byte-driven
 * state machine:
 *
 *   LINE --"<hex>[;chunk-signature=<sig>]\r\n"--> DATA (size > 0) --size bytes-->
 *   DATA_CR --\r--> DATA_LF --\n (chunk signature checked)--> LINE
 *   LINE --size 0 (its signature checked)--> TRAILER --lines, then "\r\n"
 *   (trailer signature and checksum checked)--> DONE
 *
 * Lines (chunk heads, trailers) are gathered in a 4 KiB buffer, so a line may
 * be split anywhere; data is handed out straight from the caller's input.
 */
#include "s3a_chunked.h"
#include "s3_sigv4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define EMPTY_SHA256      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define LINE_MAX_BYTES    4096
#define DEFAULT_MAX_CHUNK (16u << 20)

enum st { ST_LINE, ST_DATA, ST_DATA_CR, ST_DATA_LF, ST_TRAILER, ST_DONE, ST_FAILED };

struct s3a_chunked {
    s3a_payload kind;
    bool sig;      /* chunk signatures */
    bool trailers; /* trailer lines may follow the 0-chunk */
    unsigned char key[32];
    char prev[65];
    char date[17];
    char scope[S3A_SCOPE_MAX];
    s3a_ck_alg ck;
    s3a_checksum sum;
    char trailer_name[64];
    int64_t declared;
    uint64_t decoded, offset;
    size_t max_chunk;
    enum st st;
    char line[LINE_MAX_BYTES + 1];
    size_t line_len;
    uint64_t left;
    char chunk_sig[65];
    EVP_MD_CTX *md;
    s3a_buf trailer_bytes;
    bool got_ck, got_tsig;
    char ck_b64[S3A_CK_B64_MAX];
    char tsig[65];
    int trailer_lines;
};

int s3a_chunked_create(s3a_chunked **out, const s3a_chunked_config *cfg, s3a_error *err)
{
    *out = NULL;
    if (cfg->payload != S3A_PAYLOAD_STREAMING_SIGNED &&
        cfg->payload != S3A_PAYLOAD_STREAMING_SIGNED_TRAILER &&
        cfg->payload != S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER)
        return s3a_error_set(err, 400, "InvalidArgument",
                             "aws-chunked encoding is not supported with the specified "
                             "x-amz-content-sha256 value");
    bool sig = cfg->payload != S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    if (sig && cfg->auth == NULL)
        return s3a_error_set(err, 400, "InvalidRequest",
                             "a signed aws-chunked body needs a SigV4-signed request");
    s3a_chunked *d = calloc(1, sizeof *d);
    if (d == NULL)
        return -ENOMEM;
    d->kind = cfg->payload;
    d->sig = sig;
    d->trailers = cfg->payload != S3A_PAYLOAD_STREAMING_SIGNED;
    d->declared = cfg->decoded_length;
    d->max_chunk = cfg->max_chunk_bytes ? cfg->max_chunk_bytes : DEFAULT_MAX_CHUNK;
    if (sig) {
        memcpy(d->key, cfg->auth->signing_key, 32);
        memcpy(d->prev, cfg->auth->seed_signature, 65);
        memcpy(d->date, cfg->auth->amz_date, 17);
        snprintf(d->scope, sizeof d->scope, "%s", cfg->auth->scope);
        d->md = EVP_MD_CTX_new();
        if (d->md == NULL) {
            free(d);
            return -ENOMEM;
        }
    }
    if (cfg->trailer != NULL && cfg->trailer[0] != '\0') {
        /* one checksum header, e.g. "x-amz-checksum-crc32" */
        const char *t = cfg->trailer;
        while (*t == ' ')
            t++;
        size_t n = strlen(t);
        while (n > 0 && t[n - 1] == ' ')
            n--;
        char name[64];
        if (n < sizeof name) {
            memcpy(name, t, n);
            name[n] = '\0';
        } else {
            name[0] = '\0';
        }
        d->ck = s3a_checksum_by_header(name);
        if (!d->trailers || d->ck == S3A_CK_NONE || d->ck == S3A_CK_MD5) {
            s3a_chunked_destroy(&d);
            return s3a_error_set(err, 400, "InvalidRequest",
                                 "x-amz-trailer must name one x-amz-checksum-* header "
                                 "(crc32, crc32c, crc64nvme, sha1 or sha256) of a "
                                 "STREAMING-*-TRAILER upload");
        }
        for (size_t i = 0; i <= n; i++)
            d->trailer_name[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
        if (s3a_checksum_init(&d->sum, d->ck) < 0) {
            s3a_chunked_destroy(&d);
            return -ENOMEM;
        }
    }
    d->st = ST_LINE;
    *out = d;
    return 0;
}

void s3a_chunked_destroy(s3a_chunked **pd)
{
    if (pd == NULL || *pd == NULL)
        return;
    s3a_chunked *d = *pd;
    if (d->md)
        EVP_MD_CTX_free(d->md);
    s3a_checksum_deinit(&d->sum);
    s3a_buf_free(&d->trailer_bytes);
    OPENSSL_cleanse(d->key, sizeof d->key);
    free(d);
    *pd = NULL;
}

static int fail(s3a_chunked *d, s3a_error *err, const char *what)
{
    d->st = ST_FAILED;
    return s3a_error_set(err, 400, "InvalidRequest",
                         "the aws-chunked body is malformed at byte %llu: %s",
                         (unsigned long long)d->offset, what);
}

static bool is_hexlow64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* hex(HMAC(key, "<algo>\n<date>\n<scope>\n<prev>\n<middle><hash>")), compared
 * with want in constant time; on success want becomes the previous one. */
static int check_sig(s3a_chunked *d, const char *algo, const char *middle, const char *hash,
                     const char *want, s3a_error *err, const char *what)
{
    char sts[512];
    int n = snprintf(sts, sizeof sts, "%s\n%s\n%s\n%s\n%s%s", algo, d->date, d->scope, d->prev,
                     middle, hash);
    char sig[65];
    if (n < 0 || (size_t)n >= sizeof sts || s3__sigv4_hmac_hex(d->key, sts, (size_t)n, sig) < 0) {
        d->st = ST_FAILED;
        return -ENOMEM;
    }
    if (CRYPTO_memcmp(sig, want, 64) != 0) {
        d->st = ST_FAILED;
        return s3a_error_set(err, 403, "SignatureDoesNotMatch",
                             "The request signature we calculated does not match the signature "
                             "you provided: %s",
                             what);
    }
    memcpy(d->prev, sig, 65);
    return 0;
}

static void hash_hex(EVP_MD_CTX *md, char out[65])
{
    unsigned char h[32];
    unsigned int hl = 0;
    EVP_DigestFinal_ex(md, h, &hl);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = "0123456789abcdef"[h[i] >> 4];
        out[2 * i + 1] = "0123456789abcdef"[h[i] & 15];
    }
    out[64] = '\0';
}

/* A chunk head, without its CRLF. */
static int chunk_line(s3a_chunked *d, char *l, size_t n, s3a_error *err)
{
    size_t i = 0;
    uint64_t size = 0;
    while (i < n && s3a_hex_digit(l[i]) >= 0) {
        if (i >= 15)
            return fail(d, err, "a chunk size of more than 15 hex digits");
        size = size * 16 + (uint64_t)s3a_hex_digit(l[i]);
        i++;
    }
    if (i == 0)
        return fail(d, err, "a chunk must start with its size in hex");
    if (d->sig) {
        static const char ext[] = ";chunk-signature=";
        if (n - i != sizeof ext - 1 + 64 || memcmp(l + i, ext, sizeof ext - 1) != 0 ||
            !is_hexlow64(l + i + sizeof ext - 1, 64))
            return fail(d, err,
                        "a signed chunk's size must be followed by ;chunk-signature= "
                        "and 64 lower-case hex digits");
        memcpy(d->chunk_sig, l + i + sizeof ext - 1, 64);
        d->chunk_sig[64] = '\0';
    } else if (i != n) {
        return fail(d, err, "an unsigned chunk's size line must hold only the size");
    }
    if (size > d->max_chunk) {
        d->st = ST_FAILED;
        return s3a_error_set(err, 400, "InvalidRequest",
                             "a chunk of %llu bytes is larger than this server accepts (%zu)",
                             (unsigned long long)size, d->max_chunk);
    }
    if (d->declared >= 0 && d->decoded + size > (uint64_t)d->declared) {
        d->st = ST_FAILED;
        return s3a_error_set(err, 400, "IncompleteBody",
                             "the aws-chunked body holds more than the %lld bytes "
                             "x-amz-decoded-content-length announced",
                             (long long)d->declared);
    }
    if (size > 0) {
        d->left = size;
        d->st = ST_DATA;
        if (d->sig)
            EVP_DigestInit_ex(d->md, EVP_sha256(), NULL);
        return 0;
    }
    /* the final chunk: no data, signed all the same */
    if (d->sig) {
        int rc = check_sig(d, "AWS4-HMAC-SHA256-PAYLOAD", EMPTY_SHA256 "\n", EMPTY_SHA256,
                           d->chunk_sig, err, "the final chunk's signature");
        if (rc < 0)
            return rc;
    }
    d->st = ST_TRAILER;
    return 0;
}

static int end_of_body(s3a_chunked *d, s3a_error *err)
{
    if (d->kind == S3A_PAYLOAD_STREAMING_SIGNED_TRAILER) {
        if (!d->got_tsig) {
            d->st = ST_FAILED;
            return s3a_error_set(err, 403, "SignatureDoesNotMatch",
                                 "the signed trailer has no x-amz-trailer-signature");
        }
        EVP_DigestInit_ex(d->md, EVP_sha256(), NULL);
        EVP_DigestUpdate(d->md, d->trailer_bytes.p ? d->trailer_bytes.p : "", d->trailer_bytes.len);
        char h[65];
        hash_hex(d->md, h);
        int rc = check_sig(d, "AWS4-HMAC-SHA256-TRAILER", "", h, d->tsig, err,
                           "the trailer's signature");
        if (rc < 0)
            return rc;
    }
    if (d->ck != S3A_CK_NONE) {
        if (!d->got_ck) {
            d->st = ST_FAILED;
            return s3a_error_set(err, 400, "InvalidRequest",
                                 "x-amz-trailer announced %s but the body ended without it",
                                 d->trailer_name);
        }
        unsigned char dig[S3A_CK_DIGEST_MAX];
        s3a_checksum_final(&d->sum, dig);
        int rc = s3a_checksum_verify(d->ck, dig, d->ck_b64, err);
        if (rc < 0) {
            d->st = ST_FAILED;
            return rc;
        }
    }
    if (d->declared >= 0 && d->decoded != (uint64_t)d->declared) {
        d->st = ST_FAILED;
        return s3a_error_set(err, 400, "IncompleteBody",
                             "You did not provide the number of bytes specified by the "
                             "x-amz-decoded-content-length HTTP header (%llu of %lld).",
                             (unsigned long long)d->decoded, (long long)d->declared);
    }
    d->st = ST_DONE;
    return 0;
}

/* A trailer line without its CRLF ("" ends the body). */
static int trailer_line(s3a_chunked *d, char *l, size_t n, s3a_error *err)
{
    if (n == 0)
        return end_of_body(d, err);
    if (!d->trailers)
        return fail(d, err, "the final chunk must be followed by an empty line");
    if (++d->trailer_lines > 8)
        return fail(d, err, "more than 8 trailer lines");
    char *colon = memchr(l, ':', n);
    if (colon == NULL || colon == l)
        return fail(d, err, "a trailer line must be name:value");
    size_t nl = (size_t)(colon - l);
    char name[64];
    if (nl >= sizeof name)
        return fail(d, err, "a trailer name is too long");
    for (size_t i = 0; i < nl; i++)
        name[i] = (char)(l[i] >= 'A' && l[i] <= 'Z' ? l[i] + 32 : l[i]);
    name[nl] = '\0';
    const char *v = colon + 1;
    size_t vl = n - nl - 1;
    while (vl > 0 && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
    if (d->kind == S3A_PAYLOAD_STREAMING_SIGNED_TRAILER &&
        strcmp(name, "x-amz-trailer-signature") == 0) {
        if (d->got_tsig || !is_hexlow64(v, vl))
            return fail(d, err, "x-amz-trailer-signature must be 64 lower-case hex digits, once");
        memcpy(d->tsig, v, 64);
        d->tsig[64] = '\0';
        d->got_tsig = true;
        return 0;
    }
    if (d->got_tsig)
        return fail(d, err, "x-amz-trailer-signature must be the last trailer");
    if (d->ck == S3A_CK_NONE || strcmp(name, d->trailer_name) != 0) {
        d->st = ST_FAILED;
        return s3a_error_set(err, 400, "InvalidRequest",
                             "the trailer %s was not announced in x-amz-trailer", name);
    }
    if (d->got_ck || vl >= sizeof d->ck_b64)
        return fail(d, err, "the checksum trailer is repeated or too long");
    memcpy(d->ck_b64, v, vl);
    d->ck_b64[vl] = '\0';
    d->got_ck = true;
    /* what the trailer signature covers: each line as name:value\n */
    s3a_buf_add(&d->trailer_bytes, l, n);
    s3a_buf_add(&d->trailer_bytes, "\n", 1);
    return d->trailer_bytes.oom ? -ENOMEM : 0;
}

int s3a_chunked_feed(s3a_chunked *d, const void *data, size_t len, s3a_chunk_data_fn out, void *arg,
                     s3a_error *err)
{
    const char *p = data;
    while (len > 0) {
        switch (d->st) {
        case ST_FAILED:
            return s3a_error_set(err, 400, "InvalidRequest",
                                 "the aws-chunked body was already refused");
        case ST_DONE: return fail(d, err, "bytes after the end of the body");
        case ST_DATA: {
            size_t n = len < d->left ? len : (size_t)d->left;
            if (d->sig)
                EVP_DigestUpdate(d->md, p, n);
            if (d->ck != S3A_CK_NONE)
                s3a_checksum_update(&d->sum, p, n);
            if (out)
                out(arg, p, n);
            d->decoded += n;
            d->left -= n;
            d->offset += n;
            p += n;
            len -= n;
            if (d->left == 0)
                d->st = ST_DATA_CR;
            break;
        }
        case ST_DATA_CR:
        case ST_DATA_LF: {
            char want = d->st == ST_DATA_CR ? '\r' : '\n';
            if (*p != want)
                return fail(d, err, "a chunk's data must be followed by CRLF (its size is wrong?)");
            p++, len--, d->offset++;
            if (d->st == ST_DATA_CR) {
                d->st = ST_DATA_LF;
                break;
            }
            d->st = ST_LINE;
            if (d->sig) {
                char h[65];
                hash_hex(d->md, h);
                int rc = check_sig(d, "AWS4-HMAC-SHA256-PAYLOAD", EMPTY_SHA256 "\n", h,
                                   d->chunk_sig, err, "a chunk's signature");
                if (rc < 0)
                    return rc;
            }
            break;
        }
        case ST_LINE:
        case ST_TRAILER: {
            const char *lf = memchr(p, '\n', len);
            size_t take = lf ? (size_t)(lf - p) + 1 : len;
            if (d->line_len + take > LINE_MAX_BYTES)
                return fail(d, err, "a chunk or trailer line longer than 4 KiB");
            memcpy(d->line + d->line_len, p, take);
            d->line_len += take;
            d->offset += take;
            p += take;
            len -= take;
            if (lf == NULL)
                break;
            size_t n = d->line_len;
            if (n < 2 || d->line[n - 2] != '\r')
                return fail(d, err, "lines must end in CRLF");
            n -= 2;
            d->line[n] = '\0';
            d->line_len = 0;
            int rc = d->st == ST_LINE ? chunk_line(d, d->line, n, err)
                                      : trailer_line(d, d->line, n, err);
            if (rc < 0)
                return rc;
            break;
        }
        }
    }
    return 0;
}

int s3a_chunked_finish(s3a_chunked *d, s3a_error *err)
{
    if (d->st == ST_DONE)
        return 0;
    /* the JS SDK ends an unsigned stream without a checksum right after "0\r\n" */
    if (d->st == ST_TRAILER && d->kind == S3A_PAYLOAD_STREAMING_UNSIGNED_TRAILER &&
        d->line_len == 0 && d->trailer_lines == 0 && d->ck == S3A_CK_NONE)
        return end_of_body(d, err);
    if (d->st == ST_FAILED)
        return s3a_error_set(err, 400, "InvalidRequest",
                             "the aws-chunked body was already refused");
    d->st = ST_FAILED;
    return s3a_error_set(err, 400, "IncompleteBody",
                         "You did not provide the number of bytes specified by the "
                         "Content-Length HTTP header: the aws-chunked body stopped after "
                         "%llu bytes, before its final chunk",
                         (unsigned long long)d->offset);
}

uint64_t s3a_chunked_decoded(const s3a_chunked *d)
{
    return d->decoded;
}

s3a_ck_alg s3a_chunked_checksum(const s3a_chunked *d, char b64[S3A_CK_B64_MAX])
{
    if (d->st != ST_DONE || !d->got_ck) {
        b64[0] = '\0';
        return S3A_CK_NONE;
    }
    memcpy(b64, d->ck_b64, sizeof d->ck_b64);
    return d->ck;
}
