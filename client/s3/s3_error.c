/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_error.c: the one place where what S3 (or the network) said becomes an
 * s3_error: a -errno code callers can branch on and a one-line sentence a
 * person can act on, naming the operation, the object, the cause and a fix:
 *
 *   GET s3://b/k: access denied (403 SignatureDoesNotMatch): the signature does
 *   not match; check AWS_SECRET_ACCESS_KEY and the region
 *
 * The sentence is built only from the operation, bucket, key, endpoint (with
 * any user:password@ removed), S3's code and message, and libcurl's text;
 * credentials are never among its inputs. Text that came from the network is
 * flattened to one printable line and shortened so the sentence fits
 * S3_MSG_MAX.
 */
#include "s3_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Copy `in` into out[cap] as one printable line: control characters become
 * spaces, runs of spaces fold, and an over-long text ends with "...". */
static void flatten(const char *in, char *out, size_t cap)
{
    size_t j = 0;
    bool space = false;
    if (cap == 0)
        return;
    out[0] = '\0';
    if (in == NULL)
        return;
    for (size_t i = 0; in[i] != '\0'; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c < 0x20 || c == 0x7f || c == ' ') {
            space = j > 0;
            continue;
        }
        size_t need = (space ? 1 : 0) + 1;
        if (j + need + 1 > cap) {
            if (cap >= 4) {
                size_t k = j < cap - 4 ? j : cap - 4;
                /* do not cut a UTF-8 sequence in half */
                while (k > 0 && ((unsigned char)out[k] & 0xC0) == 0x80)
                    k--;
                memcpy(out + k, "...", 4);
                return;
            }
            break;
        }
        if (space)
            out[j++] = ' ';
        space = false;
        out[j++] = (char)c;
    }
    out[j] = '\0';
}

/* The endpoint without "user:password@" and without a query string. */
static void endpoint_display(const char *ep, char *out, size_t cap)
{
    char tmp[512];
    size_t j = 0;
    if (ep == NULL || ep[0] == '\0') {
        snprintf(out, cap, "%s", "the S3 endpoint");
        return;
    }
    const char *p = ep;
    const char *scheme = strstr(ep, "://");
    const char *host = scheme ? scheme + 3 : ep;
    const char *end = host + strcspn(host, "/?#");
    const char *at = NULL;
    for (const char *q = host; q < end; q++)
        if (*q == '@')
            at = q;
    for (; p < host && j + 1 < sizeof tmp; p++)
        tmp[j++] = *p;
    for (p = at ? at + 1 : host; *p && *p != '?' && *p != '#' && j + 1 < sizeof tmp; p++)
        tmp[j++] = *p;
    tmp[j] = '\0';
    flatten(tmp, out, cap);
}

typedef struct msg {
    char *p;
    size_t cap, len;
} msg;

__attribute__((format(printf, 2, 3))) static void add(msg *m, const char *fmt, ...)
{
    if (m->len + 1 >= m->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m->p + m->len, m->cap - m->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    m->len += (size_t)n;
    if (m->len >= m->cap)
        m->len = m->cap - 1;
}

static bool is(const char *code, const char *want)
{
    return code != NULL && strcmp(code, want) == 0;
}

/* "(403 SignatureDoesNotMatch)" or "(403)". */
static void add_status(msg *m, int status, const char *code)
{
    if (code != NULL && code[0] != '\0')
        add(m, "(%d %s)", status, code);
    else
        add(m, "(%d)", status);
}

static void add_attempts(msg *m, int attempts)
{
    if (attempts > 1)
        add(m, " after %d attempts", attempts);
}

/* S3's own words, for codes we have no better sentence for. */
static void add_server_message(msg *m, const char *s3_message)
{
    char t[160];
    flatten(s3_message, t, sizeof t);
    if (t[0] != '\0')
        add(m, ": %s", t);
}

static void fill_transport(msg *m, int *code, int terr, const char *tmsg, const char *ep,
                           int attempts)
{
    char why[160];
    flatten(tmsg != NULL && tmsg[0] != '\0' ? tmsg : strerror(-terr), why, sizeof why);
    switch (terr) {
    case -ECONNREFUSED:
        *code = -ECONNREFUSED;
        add(m, "cannot connect to %s (%s)", ep, why);
        add_attempts(m, attempts);
        add(m, "; is the S3 endpoint up? (set AWS_ENDPOINT_URL)");
        break;
    case -ETIMEDOUT:
        *code = -ETIMEDOUT;
        add(m, "timed out talking to %s (%s)", ep, why);
        add_attempts(m, attempts);
        add(m, "; check the network and the endpoint, or raise the timeout");
        break;
    case -ECONNRESET:
    case -ECONNABORTED:
    case -EPIPE:
        *code = -ECONNRESET;
        add(m, "the connection to %s broke (%s)", ep, why);
        add_attempts(m, attempts);
        add(m, "; check the network and the server's logs");
        break;
    case -ECANCELED:
        *code = -ECANCELED;
        add(m, "cancelled before it completed");
        break;
    case -EPROTO:
        /* TLS failures land here too (libcurl's SSL errors) */
        *code = -EPROTO;
        add(m,
            "TLS or protocol failure with %s (%s); check AWS_CA_BUNDLE for https, and that "
            "AWS_ENDPOINT_URL is an S3 server",
            ep, why);
        break;
    case -EHOSTUNREACH:
    case -ENETUNREACH:
    case -ENETDOWN:
        *code = -EIO;
        add(m, "cannot reach %s (%s)", ep, why);
        add_attempts(m, attempts);
        add(m, "; check the host name in AWS_ENDPOINT_URL and the network");
        break;
    default:
        *code = -EIO;
        add(m, "cannot talk to %s (%s)", ep, why);
        add_attempts(m, attempts);
        add(m, "; check AWS_ENDPOINT_URL, the network and AWS_CA_BUNDLE for https");
        break;
    }
}

static void fill_403(msg *m, const char *c)
{
    add(m, "access denied ");
    add_status(m, 403, c);
    if (is(c, "SignatureDoesNotMatch"))
        add(m, ": the signature does not match; check AWS_SECRET_ACCESS_KEY and the region");
    else if (is(c, "InvalidAccessKeyId"))
        add(m, ": the access key is unknown; check AWS_ACCESS_KEY_ID or AWS_PROFILE");
    else if (is(c, "RequestTimeTooSkewed"))
        add(m, ": the clock of this machine is off; synchronise it (NTP)");
    else if (is(c, "ExpiredToken") || is(c, "InvalidToken") || is(c, "TokenRefreshRequired"))
        add(m, ": the session token is not valid; refresh AWS_SESSION_TOKEN");
    else if (is(c, "AccessDenied"))
        add(m, ": check the credentials' permissions and the bucket policy");
    else
        add(m, ": check the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), the "
               "region and the bucket policy");
}

void s3__error_fill(s3_error *e, const char *op, const char *bucket, const char *key,
                    int http_status, int transport_err, const char *transport_msg,
                    const char *s3_code, const char *s3_message, const char *endpoint)
{
    if (e == NULL)
        return;
    int attempts = e->attempts;
    char code_clean[64];
    flatten(s3_code, code_clean, sizeof code_clean);
    const char *c = code_clean[0] ? code_clean : NULL;

    e->code = 0;
    e->http_status = http_status;
    snprintf(e->s3_code, sizeof e->s3_code, "%s", code_clean);
    e->message[0] = '\0';

    bool ok = transport_err == 0 && http_status >= 200 && http_status <= 299 && c == NULL;
    if (ok)
        return;

    msg m = {e->message, sizeof e->message, 0};
    char what[300], ep[200];
    /* Leave room for the cause: an object name takes at most about half. */
    char obj[256];
    snprintf(obj, sizeof obj, "s3://%s/%s", bucket ? bucket : "", key ? key : "");
    flatten(obj, what, 220);
    add(&m, "%s %s: ", op && op[0] ? op : "request", what);
    endpoint_display(endpoint, ep, sizeof ep);

    if (transport_err != 0) {
        fill_transport(&m, &e->code, transport_err, transport_msg, ep, attempts);
        return;
    }
    int s = http_status;
    if (s >= 200 && s <= 299) {
        /* A 200 carrying an <Error> body (CompleteMultipartUpload does this). */
        e->code = -EIO;
        add(&m, "S3 answered %d with an error (%s", s, c);
        add_server_message(&m, s3_message);
        add(&m, ")");
        add_attempts(&m, attempts);
        add(&m, "; try again");
        return;
    }
    switch (s) {
    case 403:
        e->code = -EACCES;
        fill_403(&m, c);
        return;
    case 404:
        e->code = -ENOENT;
        if (is(c, "NoSuchBucket")) {
            add(&m, "no such bucket ");
            add_status(&m, s, c);
            add(&m, "; check the bucket name and the endpoint");
        } else {
            add(&m, "no such key or bucket ");
            add_status(&m, s, c);
        }
        return;
    case 412:
        e->code = -ESTALE;
        add(&m, "the object changed since it was opened ");
        add_status(&m, s, c ? c : "PreconditionFailed");
        add(&m, "; re-open it");
        return;
    case 408:
        e->code = -ETIMEDOUT;
        add(&m, "the server timed out waiting for the request ");
        add_status(&m, s, c);
        add_attempts(&m, attempts);
        add(&m, "; check the network");
        return;
    case 301:
    case 307:
        e->code = -EIO;
        add(&m, "the bucket answers at another address ");
        add_status(&m, s, c);
        add(&m, "; set AWS_REGION to the bucket's region (or AWS_ENDPOINT_URL)");
        return;
    case 416:
        e->code = -EIO;
        add(&m, "the range is outside the object ");
        add_status(&m, s, c);
        add(&m, "; ask for bytes within its size");
        return;
    default: break;
    }
    if (is(c, "ExpiredToken") || is(c, "InvalidToken") || is(c, "TokenRefreshRequired")) {
        e->code = -EACCES;
        add(&m, "access denied ");
        add_status(&m, s, c);
        add(&m, ": the session token is not valid; refresh AWS_SESSION_TOKEN");
        return;
    }
    if (is(c, "AuthorizationHeaderMalformed")) {
        e->code = -EACCES;
        add(&m, "access denied ");
        add_status(&m, s, c);
        add(&m, ": the request was signed for the wrong region; set AWS_REGION");
        return;
    }
    e->code = -EIO;
    if (s == 503 || s == 429 || is(c, "SlowDown")) {
        add(&m, "S3 is throttling requests ");
        add_status(&m, s, c);
        add_attempts(&m, attempts);
        add(&m, "; lower the request rate or spread keys over more prefixes");
    } else if (s >= 500) {
        add(&m, "the server failed ");
        add_status(&m, s, c);
        add_server_message(&m, s3_message);
        add_attempts(&m, attempts);
        add(&m, "; try again later");
    } else {
        add(&m, "the request was refused ");
        add_status(&m, s, c);
        add_server_message(&m, s3_message);
    }
}
