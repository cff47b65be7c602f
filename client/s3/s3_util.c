/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_util.c: the two small string helpers of the S3 module that everything
 * else leans on. s3_etag_normalize is the one place an ETag is turned into the
 * bare version string ringcache keys blocks by (HEAD, GET and ListObjectsV2
 * spell the same ETag differently: quoted, weak "W/" prefix, stray spaces).
 * s3_url_parse splits "s3://bucket/key" and checks the bucket name against
 * S3's naming rules, so a typo is caught before any request is signed;
 * s3_url_explain says which rule a refused URL breaks.
 * s3_key_check refuses keys with dot segments, however they are spelled.
 */
#include "s3_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Trim [*b, *e) of surrounding white space. */
static void trim(const char **b, const char **e)
{
    while (*b < *e && is_space(**b))
        (*b)++;
    while (*e > *b && is_space((*e)[-1]))
        (*e)--;
}

static bool has_prefix(const char *b, const char *e, const char *p)
{
    size_t n = strlen(p);
    return (size_t)(e - b) >= n && memcmp(b, p, n) == 0;
}

static bool has_suffix(const char *b, const char *e, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(e - b) >= n && memcmp(e - n, s, n) == 0;
}

int s3_etag_normalize(const char *in, char *out, size_t cap)
{
    if (in == NULL || out == NULL || cap == 0)
        return -EINVAL;
    const char *b = in;
    const char *e = in + strlen(in);
    /* Peel until nothing changes, so that normalising a normalised ETag
     * leaves it as it is (a hostile '"abc""' must not become 'abc"' once and
     * 'abc' the next time). */
    for (;;) {
        const char *b0 = b, *e0 = e;
        trim(&b, &e);
        /* A weak validator ("W/" or "w/"): S3 never sends one, proxies may. */
        if (e - b >= 2 && (b[0] == 'W' || b[0] == 'w') && b[1] == '/')
            b += 2;
        /* Quotes, as HTTP spells them or a doubly-escaped XML body leaves them. */
        if (has_prefix(b, e, "&quot;"))
            b += 6;
        else if (b < e && *b == '"')
            b++;
        if (has_suffix(b, e, "&quot;"))
            e -= 6;
        else if (e > b && e[-1] == '"')
            e--;
        if (b == b0 && e == e0)
            break;
    }
    size_t n = (size_t)(e - b);
    if (n + 1 > cap)
        return -ENOSPC;
    memmove(out, b, n); /* in and out may be the same buffer */
    out[n] = '\0';
    return (int)n;
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* "192.168.5.4": S3 refuses bucket names formatted as an IPv4 address. */
static bool looks_like_ipv4(const char *s, size_t n)
{
    int dots = 0, digits = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            if (digits == 0)
                return false;
            dots++;
            digits = 0;
        } else if (s[i] >= '0' && s[i] <= '9') {
            if (++digits > 3)
                return false;
        } else {
            return false;
        }
    }
    return dots == 3 && digits > 0;
}

/* S3's rules for new buckets: 3-63 characters of a-z 0-9 . -, starting and
 * ending with a letter or digit, no "..", not an IP address, none of the
 * reserved prefixes and suffixes. true when the name keeps them; else the
 * rule it breaks goes to why (may be NULL), as the end of a sentence. */
static bool bucket_name_check(const char *s, size_t n, char *why, size_t cap)
{
    char dummy[1];
    if (why == NULL) {
        why = dummy;
        cap = sizeof dummy;
    }
    if (n < 3 || n > 63) {
        snprintf(why, cap, "it is %s than %d characters", n < 3 ? "shorter" : "longer",
                 n < 3 ? 3 : 63);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z') {
            snprintf(why, cap,
                     "it has an upper-case letter, '%c' (bucket names are lower "
                     "case)",
                     c);
            return false;
        }
        if (!is_lower_alnum((char)c) && c != '.' && c != '-') {
            if (c > ' ' && c < 127)
                snprintf(why, cap, "it has '%c', which bucket names cannot hold", c);
            else
                snprintf(why, cap,
                         "it has a control or non-ASCII byte, which bucket names "
                         "cannot hold");
            return false;
        }
        if (c == '.' && i > 0 && s[i - 1] == '.') {
            snprintf(why, cap, "it has two dots in a row");
            return false;
        }
    }
    if (!is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1])) {
        snprintf(why, cap, "it does not start and end with a letter or a digit");
        return false;
    }
    if (looks_like_ipv4(s, n)) {
        snprintf(why, cap, "it is written as an IP address");
        return false;
    }
    if (has_prefix(s, s + n, "xn--") || has_prefix(s, s + n, "sthree-")) {
        snprintf(why, cap, "it starts with a prefix S3 reserves (xn--, sthree-)");
        return false;
    }
    if (has_suffix(s, s + n, "-s3alias") || has_suffix(s, s + n, "--ol-s3")) {
        snprintf(why, cap, "it ends with a suffix S3 reserves (-s3alias, --ol-s3)");
        return false;
    }
    return true;
}

void s3_url_explain(const char *url, char *why, size_t cap)
{
    if (why == NULL || cap == 0)
        return;
    if (url == NULL || strncmp(url, "s3://", 5) != 0) {
        snprintf(why, cap,
                 "'%.300s' is not an S3 URL: write s3://bucket/key (or a glob "
                 "after the bucket)",
                 url ? url : "");
        return;
    }
    const char *b = url + 5;
    const char *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    char rule[128];
    if (!bucket_name_check(b, blen, rule, sizeof rule)) {
        snprintf(why, cap,
                 "'%.*s' in %.300s is not a valid bucket name: %s (S3's rules: 3 to "
                 "63 characters of lower-case letters, digits, '.' and '-', starting and ending "
                 "with a letter or digit)",
                 (int)(blen > 100 ? 100 : blen), b, url, rule);
        return;
    }
    const char *k = slash ? slash + 1 : "";
    if (strlen(k) > S3_KEY_MAX) {
        snprintf(why, cap, "the key of %.100s... is longer than S3's 1024 bytes", url);
        return;
    }
    snprintf(why, cap, "%.300s is a valid S3 URL", url);
}

int s3_url_parse(const char *url, char *bucket, size_t bucket_cap, char *key, size_t key_cap)
{
    if (url == NULL || bucket == NULL || key == NULL)
        return -EINVAL;
    if (strncmp(url, "s3://", 5) != 0)
        return -EINVAL;
    const char *b = url + 5;
    const char *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    if (!bucket_name_check(b, blen, NULL, 0))
        return -EINVAL;
    const char *k = slash ? slash + 1 : "";
    size_t klen = strlen(k);
    if (klen > S3_KEY_MAX) /* S3's limit on key length, in bytes */
        return -EINVAL;
    if (blen + 1 > bucket_cap || klen + 1 > key_cap)
        return -ENOSPC;
    memcpy(bucket, b, blen);
    bucket[blen] = '\0';
    memcpy(key, k, klen);
    key[klen] = '\0';
    return 0;
}

/* ---- keys ------------------------------------------------------------------ */

static int hex_val(unsigned char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* One round of %XX decoding in place; returns the new length (== n: none). */
static size_t pct_decode(unsigned char *p, size_t n)
{
    size_t w = 0;
    for (size_t r = 0; r < n; r++) {
        int hi, lo;
        if (p[r] == '%' && r + 2 < n && (hi = hex_val(p[r + 1])) >= 0 &&
            (lo = hex_val(p[r + 2])) >= 0) {
            p[w++] = (unsigned char)(hi << 4 | lo);
            r += 2;
        } else {
            p[w++] = p[r];
        }
    }
    return w;
}

/* Length of a dot at p (n bytes left): 1 for '.', 3 for U+FF0E or U+2024
 * (the forms Unicode normalisation turns into '.'), 0 for none. */
static size_t dot_at(const unsigned char *p, size_t n)
{
    if (n >= 1 && p[0] == '.')
        return 1;
    if (n >= 3 && ((p[0] == 0xEF && p[1] == 0xBC && p[2] == 0x8E) ||
                   (p[0] == 0xE2 && p[1] == 0x80 && p[2] == 0xA4)))
        return 3;
    return 0;
}

/* The number of dots a segment [p, p+n) consists of, or 0 if anything else. */
static int dots_only(const unsigned char *p, size_t n)
{
    int dots = 0;
    size_t k;
    while (n > 0 && (k = dot_at(p, n)) > 0) {
        p += k;
        n -= k;
        dots++;
    }
    return n == 0 ? dots : 0;
}

int s3_key_check(const char *key, size_t len, char *why, size_t cap)
{
    unsigned char buf[S3_KEY_MAX + 1];
    if (key == NULL && len > 0) {
        if (why && cap)
            snprintf(why, cap, "no key");
        return -EINVAL;
    }
    if (len > S3_KEY_MAX) {
        if (why && cap)
            snprintf(why, cap, "the key is %zu bytes, over S3's 1024", len);
        return -EINVAL;
    }
    if (len)
        memcpy(buf, key, len);
    size_t n = len;
    /* decode until nothing decodes: each round shortens the text */
    for (size_t k; (k = pct_decode(buf, n)) != n;)
        n = k;
    if (memchr(buf, '\0', n) != NULL) {
        if (why && cap)
            snprintf(why, cap, "the key holds a NUL byte (or %%00)");
        return -EINVAL;
    }
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && buf[i] != '/' && buf[i] != '\\')
            continue;
        int dots = dots_only(buf + start, i - start);
        if (dots == 1 || dots == 2) {
            if (why && cap)
                snprintf(why, cap,
                         "the key has a '%s' segment (as written or percent-encoded): a server "
                         "or proxy that resolves it would read another key, so it is refused "
                         "(name the object without '.' or '..' between slashes)",
                         dots == 1 ? "." : "..");
            return -EINVAL;
        }
        start = i + 1;
    }
    return 0;
}
