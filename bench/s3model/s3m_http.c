/* SPDX-License-Identifier: Apache-2.0
 *
 * HTTP/1.1 framing for the S3 model: request and response heads (RFC 9112
 * sections 3, 4, 5, 6) and the chunked transfer coding (section 7.1), strict
 * where laxness would let a request be framed two ways (request smuggling):
 * CRLF line ends only, no folded headers, one Content-Length value, chunked as
 * the only transfer coding of a request, not both. Pure: no allocation, no I/O.
 * Thread-safety: reentrant.
 */
#include "s3m_http.h"

#include <errno.h>
#include <string.h>

#define S3M_MAX_LENGTH (UINT64_C(1) << 62)

static int s3m_is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field value characters: VCHAR, SP, HTAB, obs-text. */
static int s3m_is_vchar(unsigned char c)
{
    return c == '\t' || c == ' ' || (c > 0x20 && c != 0x7f);
}

static int s3m_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int s3m_ieq(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (alen != blen)
        return 0;
    for (size_t i = 0; i < alen; i++) {
        if (s3m_lower((unsigned char)a[i]) != s3m_lower((unsigned char)b[i]))
            return 0;
    }
    return 1;
}

/* Does the comma-separated list v[0, n) hold token tok (case-insensitive)? */
static int s3m_list_has(const char *v, size_t n, const char *tok)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > s && s3m_ieq(v + s, e - s, tok))
            return 1;
    }
    return 0;
}

/* Is the last element of the list v[0, n) the token tok? */
static int s3m_list_last_is(const char *v, size_t n, const char *tok)
{
    size_t e = n;
    while (e > 0 && (v[e - 1] == ' ' || v[e - 1] == '\t' || v[e - 1] == ','))
        e--;
    size_t s = e;
    while (s > 0 && v[s - 1] != ',')
        s--;
    while (s < e && (v[s] == ' ' || v[s] == '\t'))
        s++;
    return e > s && s3m_ieq(v + s, e - s, tok);
}

/* Finds the end of the head: returns the head length, 0 if incomplete, or an
 * error. Rejects a LF not preceded by CR and NUL bytes as soon as they appear. */
static int s3m_head_end(const char *buf, size_t len)
{
    size_t lim = len < S3M_MAX_HEAD ? len : S3M_MAX_HEAD;
    for (size_t i = 0; i < lim; i++) {
        if (buf[i] == '\0')
            return -EBADMSG;
        if (buf[i] == '\n') {
            if (i == 0 || buf[i - 1] != '\r')
                return -EBADMSG;
            if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')
                return (int)(i + 1);
        }
    }
    return len >= S3M_MAX_HEAD ? -EMSGSIZE : 0;
}

/* Parses "HTTP/1.x" at p[0, n); the minor version or -EBADMSG. */
static int s3m_version(const char *p, size_t n)
{
    if (n != 8 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1'))
        return -EBADMSG;
    return p[7] - '0';
}

typedef struct s3m_fields {
    int have_cl;
    uint64_t cl;
    int have_te;
    int te_chunked;      /* the last transfer coding is chunked */
    int te_only_chunked; /* the value is exactly "chunked" */
    int close;
    int keep_alive;
    int expect_continue;
} s3m_fields;

/* Parses the header lines in head[from, head_len - 2) (the final CRLF excluded). */
static int s3m_parse_fields(const char *head, size_t from, size_t head_len, s3m_fields *f)
{
    memset(f, 0, sizeof(*f));
    size_t end = head_len - 2;
    size_t pos = from;
    int count = 0;
    while (pos < end) {
        const char *line = head + pos;
        const char *cr = memchr(line, '\r', end - pos);
        if (cr == NULL || (size_t)(cr - head) + 1 >= head_len || cr[1] != '\n')
            return -EBADMSG;
        size_t n = (size_t)(cr - line);
        pos += n + 2;
        if (++count > S3M_MAX_HEADERS)
            return -EMSGSIZE;
        size_t i = 0;
        while (i < n && s3m_is_tchar((unsigned char)line[i]))
            i++;
        if (i == 0 || i >= n || line[i] != ':')
            return -EBADMSG; /* empty name, obs-fold, space before colon */
        const char *name = line;
        size_t name_len = i;
        i++;
        while (i < n && (line[i] == ' ' || line[i] == '\t'))
            i++;
        size_t vs = i, ve = n;
        for (size_t k = vs; k < ve; k++) {
            if (!s3m_is_vchar((unsigned char)line[k]))
                return -EBADMSG;
        }
        while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
            ve--;
        const char *v = line + vs;
        size_t vlen = ve - vs;
        if (s3m_ieq(name, name_len, "content-length")) {
            if (vlen == 0 || vlen > 19)
                return -EBADMSG;
            uint64_t x = 0;
            for (size_t k = 0; k < vlen; k++) {
                if (v[k] < '0' || v[k] > '9')
                    return -EBADMSG;
                x = x * 10 + (uint64_t)(v[k] - '0');
            }
            if (x > S3M_MAX_LENGTH || (f->have_cl && f->cl != x))
                return -EBADMSG;
            f->have_cl = 1;
            f->cl = x;
        } else if (s3m_ieq(name, name_len, "transfer-encoding")) {
            if (f->have_te)
                return -EBADMSG; /* split transfer-coding lists: refuse */
            f->have_te = 1;
            f->te_chunked = s3m_list_last_is(v, vlen, "chunked");
            f->te_only_chunked = s3m_ieq(v, vlen, "chunked");
        } else if (s3m_ieq(name, name_len, "connection")) {
            f->close |= s3m_list_has(v, vlen, "close");
            f->keep_alive |= s3m_list_has(v, vlen, "keep-alive");
        } else if (s3m_ieq(name, name_len, "expect")) {
            f->expect_continue |= s3m_ieq(v, vlen, "100-continue");
        }
    }
    return 0;
}

int s3m_parse_request(const char *buf, size_t len, s3m_req *out)
{
    memset(out, 0, sizeof(*out));
    if (len > 0 && !s3m_is_tchar((unsigned char)buf[0]))
        return -EBADMSG; /* binary junk (a TLS hello, ...) is refused at once */
    /* Validate the request line as soon as it is complete, so garbage is
     * refused at once rather than after S3M_MAX_HEAD bytes. */
    int head_len = s3m_head_end(buf, len);
    if (head_len < 0)
        return head_len;
    const char *cr = memchr(buf, '\r', len < S3M_MAX_HEAD ? len : S3M_MAX_HEAD);
    if (cr == NULL || (size_t)(cr - buf) + 1 >= len)
        return head_len == 0 ? 0 : -EBADMSG;
    if (cr[1] != '\n')
        return -EBADMSG;
    size_t line_len = (size_t)(cr - buf);
    size_t i = 0;
    while (i < line_len && s3m_is_tchar((unsigned char)buf[i]))
        i++;
    if (i == 0 || i > S3M_MAX_METHOD || i >= line_len || buf[i] != ' ')
        return -EBADMSG;
    memcpy(out->method, buf, i);
    out->method[i] = '\0';
    size_t ts = ++i;
    while (i < line_len && buf[i] > 0x20 && buf[i] != 0x7f)
        i++;
    if (i == ts || i >= line_len || buf[i] != ' ' || buf[ts] != '/')
        return -EBADMSG;
    out->target = buf + ts;
    out->target_len = i - ts;
    const char *q = memchr(out->target, '?', out->target_len);
    out->path_len = q != NULL ? (size_t)(q - out->target) : out->target_len;
    int minor = s3m_version(buf + i + 1, line_len - i - 1);
    if (minor < 0)
        return minor;
    out->http_minor = minor;
    if (head_len == 0)
        return 0;

    s3m_fields f;
    int rc = s3m_parse_fields(buf, line_len + 2, (size_t)head_len, &f);
    if (rc < 0)
        return rc;
    if (f.have_te) {
        if (f.have_cl || !f.te_only_chunked || minor == 0)
            return -EBADMSG;
        out->body = S3M_BODY_CHUNKED;
    } else if (f.have_cl && f.cl > 0) {
        out->body = S3M_BODY_LENGTH;
        out->content_length = f.cl;
    } else {
        out->body = S3M_BODY_NONE;
    }
    out->conn_close = f.close || (minor == 0 && !f.keep_alive);
    out->expect_continue = f.expect_continue;
    return head_len;
}

int s3m_parse_response(const char *buf, size_t len, const char *req_method, s3m_resp *out)
{
    memset(out, 0, sizeof(*out));
    int head_len = s3m_head_end(buf, len);
    if (head_len <= 0)
        return head_len;
    const char *cr = memchr(buf, '\r', (size_t)head_len);
    size_t line_len = (size_t)(cr - buf);
    /* "HTTP/1.x SSS[ reason]" */
    if (line_len < 12 || buf[8] != ' ')
        return -EBADMSG;
    int minor = s3m_version(buf, 8);
    if (minor < 0)
        return minor;
    int status = 0;
    for (int k = 9; k < 12; k++) {
        if (buf[k] < '0' || buf[k] > '9')
            return -EBADMSG;
        status = status * 10 + (buf[k] - '0');
    }
    if (status < 100 || (line_len > 12 && buf[12] != ' '))
        return -EBADMSG;
    for (size_t k = 12; k < line_len; k++) {
        if (!s3m_is_vchar((unsigned char)buf[k]))
            return -EBADMSG;
    }
    out->status = status;
    out->http_minor = minor;
    s3m_fields f;
    int rc = s3m_parse_fields(buf, line_len + 2, (size_t)head_len, &f);
    if (rc < 0)
        return rc;
    out->conn_close = f.close || (minor == 0 && !f.keep_alive);
    if ((req_method != NULL && strcmp(req_method, "HEAD") == 0) || status < 200 || status == 204 ||
        status == 304) {
        out->body = S3M_BODY_NONE;
    } else if (f.have_te) {
        out->body = f.te_chunked ? S3M_BODY_CHUNKED : S3M_BODY_UNTIL_CLOSE;
    } else if (f.have_cl) {
        out->body = f.cl > 0 ? S3M_BODY_LENGTH : S3M_BODY_NONE;
        out->content_length = f.cl;
    } else {
        out->body = S3M_BODY_UNTIL_CLOSE;
    }
    if (out->body == S3M_BODY_UNTIL_CLOSE)
        out->conn_close = 1;
    return head_len;
}

enum {
    C_SIZE = 0, /* zero state: expecting the first hex digit of a size line */
    C_SIZE_WS,
    C_EXT,
    C_SIZE_LF,
    C_DATA,
    C_DATA_CR,
    C_DATA_LF,
    C_TRAILER_START,
    C_TRAILER,
    C_TRAILER_LF,
    C_END_LF,
    C_DONE,
};

void s3m_chunked_init(s3m_chunked *c)
{
    memset(c, 0, sizeof(*c));
}

static int s3m_hex(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

ssize_t s3m_chunked_scan(s3m_chunked *c, const char *data, size_t len, int *done)
{
    *done = c->state == C_DONE;
    size_t i = 0;
    while (i < len && c->state != C_DONE) {
        unsigned char ch = (unsigned char)data[i];
        switch (c->state) {
        case C_SIZE: {
            int h = s3m_hex(ch);
            if (h >= 0) {
                if (c->left > (S3M_MAX_LENGTH >> 4))
                    return -EBADMSG;
                c->left = (c->left << 4) | (uint64_t)h;
                c->digits++;
            } else if (c->digits == 0) {
                return -EBADMSG;
            } else if (ch == ';') {
                c->state = C_EXT;
                c->line = 0;
            } else if (ch == '\r') {
                c->state = C_SIZE_LF;
            } else if (ch == ' ' || ch == '\t') {
                c->state = C_SIZE_WS;
            } else {
                return -EBADMSG;
            }
            i++;
            break;
        }
        case C_SIZE_WS:
            if (ch == ';') {
                c->state = C_EXT;
                c->line = 0;
            } else if (ch == '\r') {
                c->state = C_SIZE_LF;
            } else if (ch != ' ' && ch != '\t') {
                return -EBADMSG;
            }
            i++;
            break;
        case C_EXT:
            if (ch == '\r')
                c->state = C_SIZE_LF;
            else if (ch == '\n' || (ch < 0x20 && ch != '\t') || ++c->line > S3M_MAX_HEAD)
                return -EBADMSG;
            i++;
            break;
        case C_SIZE_LF:
            if (ch != '\n')
                return -EBADMSG;
            c->state = c->left == 0 ? C_TRAILER_START : C_DATA;
            c->digits = 0;
            i++;
            break;
        case C_DATA: {
            size_t n = len - i;
            if ((uint64_t)n > c->left)
                n = (size_t)c->left;
            c->left -= n;
            i += n;
            if (c->left == 0)
                c->state = C_DATA_CR;
            break;
        }
        case C_DATA_CR:
            if (ch != '\r')
                return -EBADMSG;
            c->state = C_DATA_LF;
            i++;
            break;
        case C_DATA_LF:
            if (ch != '\n')
                return -EBADMSG;
            c->state = C_SIZE;
            i++;
            break;
        case C_TRAILER_START:
            if (ch == '\r') {
                c->state = C_END_LF;
            } else if (s3m_is_tchar(ch)) {
                c->state = C_TRAILER;
                c->line = 1;
            } else {
                return -EBADMSG;
            }
            i++;
            break;
        case C_TRAILER:
            if (ch == '\r')
                c->state = C_TRAILER_LF;
            else if (ch == '\n' || !s3m_is_vchar(ch) || ++c->line > S3M_MAX_HEAD)
                return -EBADMSG;
            i++;
            break;
        case C_TRAILER_LF:
            if (ch != '\n')
                return -EBADMSG;
            c->state = C_TRAILER_START;
            i++;
            break;
        case C_END_LF:
            if (ch != '\n')
                return -EBADMSG;
            c->state = C_DONE;
            i++;
            break;
        default: return -EBADMSG;
        }
    }
    *done = c->state == C_DONE;
    return (ssize_t)i;
}
