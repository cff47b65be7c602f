/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_get.c: conditionals and Range of GetObject / HeadObject (s3a_get.h).
 */
#include "s3a_get.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* [p, *end) of one ETag in a list, quotes and W/ and blanks taken off. */
static const char *etag_item(const char *p, const char **end, size_t *len)
{
    while (*p == ' ' || *p == '\t' || *p == ',')
        p++;
    const char *e = p;
    bool quoted = false;
    while (*e && (quoted || *e != ',')) {
        if (*e == '"')
            quoted = !quoted;
        e++;
    }
    *end = e;
    const char *s = p, *t = e;
    while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
        t--;
    if (t - s >= 2 && s[0] == 'W' && s[1] == '/')
        s += 2;
    if (t - s >= 2 && s[0] == '"' && t[-1] == '"') {
        s++;
        t--;
    }
    *len = (size_t)(t - s);
    return s;
}

bool s3a_etag_list_matches(const char *list, const char *etag)
{
    if (!list || !etag)
        return false;
    size_t elen = strlen(etag);
    if (elen >= 2 && etag[0] == '"' && etag[elen - 1] == '"') {
        etag++;
        elen -= 2;
    }
    const char *p = list;
    while (*p) {
        const char *end;
        size_t len;
        const char *item = etag_item(p, &end, &len);
        if ((len == 1 && item[0] == '*') || (len == elen && memcmp(item, etag, len) == 0))
            return true;
        if (end == p)
            break;
        p = end;
    }
    return false;
}

/* 1: one range of bytes parsed (first/last, suffix for "-n"); 0: ignore the
 * header; -1: 416. */
static int parse_range(const char *v, uint64_t size, uint64_t *first, uint64_t *last)
{
    while (*v == ' ')
        v++;
    if (strncasecmp(v, "bytes=", 6) != 0)
        return 0;
    v += 6;
    while (*v == ' ')
        v++;
    if (strchr(v, ','))
        return 0; /* several ranges: S3 sends the whole object */
    uint64_t a = 0, b = 0;
    bool has_a = false, has_b = false;
    while (*v >= '0' && *v <= '9') {
        if (a > (UINT64_MAX - 9) / 10)
            return 0;
        a = a * 10 + (uint64_t)(*v++ - '0');
        has_a = true;
    }
    while (*v == ' ')
        v++;
    if (*v++ != '-')
        return 0;
    while (*v == ' ')
        v++;
    while (*v >= '0' && *v <= '9') {
        if (b > (UINT64_MAX - 9) / 10)
            b = UINT64_MAX / 10; /* a huge last byte is clamped anyway */
        b = b * 10 + (uint64_t)(*v++ - '0');
        has_b = true;
    }
    while (*v == ' ')
        v++;
    if (*v || (!has_a && !has_b))
        return 0;
    if (!has_a) { /* the last b bytes */
        if (b == 0 || size == 0)
            return -1;
        *first = b >= size ? 0 : size - b;
        *last = size - 1;
        return 1;
    }
    if (a >= size || (has_b && b < a))
        return -1;
    *first = a;
    *last = has_b && b < size - 1 ? b : size - 1;
    return 1;
}

void s3a_get_decide(const s3a_get_object *obj, const s3a_get_headers *h, s3a_get_plan *out)
{
    memset(out, 0, sizeof(*out));
    int64_t lm = obj->last_modified;
    bool skip_ius = false, skip_ims = false;
    if (h->if_match) {
        if (!s3a_etag_list_matches(h->if_match, obj->etag)) {
            out->status = 412;
            out->condition = "If-Match";
            return;
        }
        skip_ius = true;
    }
    if (!skip_ius && h->if_unmodified_since) {
        int64_t t = s3a_parse_http_date(h->if_unmodified_since);
        if (t >= 0 && lm > t) {
            out->status = 412;
            out->condition = "If-Unmodified-Since";
            return;
        }
    }
    if (h->if_none_match) {
        if (s3a_etag_list_matches(h->if_none_match, obj->etag)) {
            out->status = 304;
            return;
        }
        skip_ims = true;
    }
    if (!skip_ims && h->if_modified_since) {
        int64_t t = s3a_parse_http_date(h->if_modified_since);
        if (t >= 0 && lm <= t) {
            out->status = 304;
            return;
        }
    }
    uint64_t first = 0, last = 0;
    int r = h->range ? parse_range(h->range, obj->size, &first, &last) : 0;
    if (r < 0) {
        out->status = 416;
        return;
    }
    if (r == 0) {
        out->status = 200;
        out->first = 0;
        out->last = obj->size ? obj->size - 1 : 0;
        out->count = obj->size;
        return;
    }
    out->status = 206;
    out->first = first;
    out->last = last;
    out->count = last - first + 1;
}

void s3a_http_date(int64_t unix_s, char out[30])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char mons[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    /* each field bounded, so that the 29 characters always fit */
    snprintf(out, 30, "%s, %02u %s %04u %02u:%02u:%02u GMT", days[(unsigned)tm.tm_wday % 7u],
             (unsigned)tm.tm_mday % 100u, mons[(unsigned)tm.tm_mon % 12u],
             (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)tm.tm_hour % 100u,
             (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u);
}
