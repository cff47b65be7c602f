/* SPDX-License-Identifier: Apache-2.0
 *
 * src_s3url.c: the URLs ClickHouse users paste into s3(), split into the
 * bucket and the key (a glob), with the region or the endpoint they name:
 *
 *   s3://bucket/key                                   the query's S3 access
 *   https://bucket.s3.region.amazonaws.com/key        AWS, virtual-hosted
 *   https://bucket.s3-region.amazonaws.com/key        (the older dash form)
 *   https://bucket.s3.amazonaws.com/key               (us-east-1)
 *   https://s3.region.amazonaws.com/bucket/key        AWS, path style
 *   https://s3.amazonaws.com/bucket/key
 *   http(s)://host[:port]/bucket/key                  another endpoint, path
 *                                                     style (MinIO, a cache
 *                                                     node's S3 API)
 *
 * The key of an http(s) URL is percent-decoded (a browser's copy has %20 for
 * a space); an s3:// key is taken as written. A query string (?versionId=...)
 * is refused by name. Pure: no I/O.
 */
#include "src_int.h"

#include "s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int hexv(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Percent-decodes s into out; false when an escape is malformed or a byte
 * decodes to NUL. */
static bool pct_decode(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s; s++) {
        int c = (unsigned char)*s;
        if (c == '%') {
            int h = hexv(s[1]), l = h < 0 ? -1 : hexv(s[2]);
            if (h < 0 || l < 0 || (h == 0 && l == 0))
                return false;
            c = h * 16 + l;
            s += 2;
        }
        if (n + 1 >= cap)
            return false;
        out[n++] = (char)c;
    }
    out[n] = 0;
    return true;
}

/* "s3.REGION", "s3-REGION", "s3.dualstack.REGION", "s3": the region ("" for
 * the global endpoint); false when h is none of them. */
static bool aws_s3_label(const char *h, size_t n, char *region, size_t cap)
{
    if (n == 2 && strncmp(h, "s3", 2) == 0) {
        region[0] = 0;
        return true;
    }
    if (n < 4 || strncmp(h, "s3", 2) != 0 || (h[2] != '.' && h[2] != '-'))
        return false;
    const char *r = h + 3;
    size_t rn = n - 3;
    if (h[2] == '.' && rn > 10 && strncmp(r, "dualstack.", 10) == 0) {
        r += 10;
        rn -= 10;
    }
    if (!rn || rn >= cap || memchr(r, '.', rn))
        return false;
    memcpy(region, r, rn);
    region[rn] = 0;
    return true;
}

int src__s3_url_parse(const char *url, src_s3_url *u, char *why, size_t whylen)
{
    memset(u, 0, sizeof(*u));
    char s3url[2200];
    if (strncmp(url, "s3://", 5) == 0) {
        u->kind = SRC_URL_S3;
        snprintf(s3url, sizeof(s3url), "%s", url);
    } else {
        bool tls = strncasecmp(url, "https://", 8) == 0;
        if (!tls && strncasecmp(url, "http://", 7) != 0) {
            snprintf(why, whylen,
                     "bad S3 URL '%.300s': write s3://bucket/path/glob, "
                     "https://bucket.s3.region.amazonaws.com/path/glob or "
                     "http://host:port/bucket/path/glob",
                     url);
            return -EINVAL;
        }
        const char *host = url + (tls ? 8 : 7);
        const char *path = strchr(host, '/');
        size_t hn = path ? (size_t)(path - host) : strlen(host);
        if (strchr(url, '?') || strchr(url, '#')) {
            snprintf(why, whylen,
                     "the S3 URL '%.300s' has a query string or a fragment: "
                     "s3() reads the current version of the objects; drop what follows '?'",
                     url);
            return -EINVAL;
        }
        if (!hn || hn >= sizeof(u->endpoint) - 9 || memchr(host, '@', hn)) {
            snprintf(why, whylen, "bad host in the S3 URL '%.300s'", url);
            return -EINVAL;
        }
        char h[256];
        for (size_t i = 0; i < hn; i++)
            h[i] = (char)tolower((unsigned char)host[i]);
        h[hn] = 0;
        char *colon = strchr(h, ':');
        size_t bare = colon ? (size_t)(colon - h) : hn;
        static const char *const sfx[] = {".amazonaws.com", ".amazonaws.com.cn"};
        const char *rest = path ? path + 1 : "";
        char bucket[256] = "", keyenc[2100];
        for (size_t k = 0; k < 2 && !u->kind; k++) {
            size_t sl = strlen(sfx[k]);
            if (bare <= sl || strncmp(h + bare - sl, sfx[k], sl) != 0 || colon)
                continue;
            size_t ln = bare - sl; /* the labels before amazonaws.com */
            if (aws_s3_label(h, ln, u->region, sizeof(u->region))) {
                u->kind = SRC_URL_AWS; /* path style: the bucket leads the path */
                const char *sl2 = strchr(rest, '/');
                size_t bl = sl2 ? (size_t)(sl2 - rest) : strlen(rest);
                snprintf(bucket, sizeof(bucket), "%.*s", (int)bl, rest);
                rest = sl2 ? sl2 + 1 : "";
                break;
            }
            /* virtual-hosted: bucket.s3[.-]region, the bucket may hold dots */
            for (size_t i = ln; i-- > 0;) {
                if (h[i] != '.')
                    continue;
                if (aws_s3_label(h + i + 1, ln - i - 1, u->region, sizeof(u->region))) {
                    u->kind = SRC_URL_AWS;
                    snprintf(bucket, sizeof(bucket), "%.*s", (int)i, h);
                    break;
                }
            }
        }
        if (!u->kind) {
            u->kind = SRC_URL_ENDPOINT; /* http(s)://host[:port]/bucket/key */
            snprintf(u->endpoint, sizeof(u->endpoint), "%.*s", (int)(host - url + hn), url);
            const char *sl2 = strchr(rest, '/');
            size_t bl = sl2 ? (size_t)(sl2 - rest) : strlen(rest);
            snprintf(bucket, sizeof(bucket), "%.*s", (int)bl, rest);
            rest = sl2 ? sl2 + 1 : "";
        }
        if (!pct_decode(rest, keyenc, sizeof(keyenc))) {
            snprintf(why, whylen, "the S3 URL '%.300s' has a malformed %%-escape in its key", url);
            return -EINVAL;
        }
        if (snprintf(s3url, sizeof(s3url), "s3://%s/%s", bucket, keyenc) >= (int)sizeof(s3url)) {
            snprintf(why, whylen, "the key of the S3 URL '%.200s' is longer than S3 allows", url);
            return -EINVAL;
        }
        if (!bucket[0]) {
            snprintf(why, whylen, "the S3 URL '%.300s' names no bucket: write %s", url,
                     u->kind == SRC_URL_AWS ? "https://bucket.s3.region.amazonaws.com/path/glob"
                                            : "http://host:port/bucket/path/glob");
            return -EINVAL;
        }
    }
    int rc = s3_url_parse(s3url, u->bucket, sizeof(u->bucket), u->key, sizeof(u->key));
    if (rc < 0) {
        /* s3_url_explain names the rule the bucket breaks, or the key's length */
        char rule[700];
        s3_url_explain(s3url, rule, sizeof(rule));
        if (u->kind == SRC_URL_S3)
            snprintf(why, whylen, "%s", rule);
        else
            snprintf(why, whylen, "bad S3 URL '%.300s': %s", url, rule);
        return -EINVAL;
    }
    return 0;
}
