/* SPDX-License-Identifier: Apache-2.0
 *
 * Blocking HTTP for tests on loopback, on libcurl: one request per call on a
 * fresh connection, whole answer in memory. libcurl codes become -errno here and
 * nowhere else in the harness.
 * Thread-safety: none (curl_global_init runs on first use).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "h_int.h"

typedef struct h_buf {
    char *data;
    size_t len;
    size_t cap;
    int oom;
} h_buf;

static size_t h_buf_append(h_buf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap != 0 ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (d == NULL) {
            b->oom = 1;
            return 0;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

static size_t h_on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    return h_buf_append(arg, p, size * nmemb);
}

typedef struct h_upload {
    const char *p;
    size_t left;
} h_upload;

static size_t h_on_read(char *p, size_t size, size_t nmemb, void *arg)
{
    h_upload *u = arg;
    size_t n = size * nmemb < u->left ? size * nmemb : u->left;
    memcpy(p, u->p, n);
    u->p += n;
    u->left -= n;
    return n;
}

static int h_curl_errno(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
    case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return -ECONNRESET;
    case CURLE_OUT_OF_MEMORY: return -ENOMEM;
    default: return -EIO;
    }
}

int h_http(const h_http_req *req, h_http_resp *resp)
{
    static int inited;
    if (!inited) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return -ENOMEM;
        inited = 1;
    }
    if (resp != NULL)
        memset(resp, 0, sizeof(*resp));
    CURL *c = curl_easy_init();
    if (c == NULL)
        return -ENOMEM;
    h_buf body = {0}, head = {0};
    h_upload up = {req->body, req->body_len};
    struct curl_slist *hdrs = NULL;
    const char *method = req->method;
    if (method == NULL)
        method = req->body != NULL ? "PUT" : "GET";

    curl_easy_setopt(c, CURLOPT_URL, req->url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(req->timeout_ms > 0 ? req->timeout_ms : 60000));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, h_on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, h_on_data);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &head);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, h_on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &up);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->body_len);
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body != NULL ? req->body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    /* No "Expect: 100-continue" wait: tests on loopback want the body at once.
     * Only with a body: curl 7.88's SigV4 signs the suppressed header too. */
    if (req->body != NULL)
        hdrs = curl_slist_append(hdrs, "Expect:");
    for (int i = 0; req->headers != NULL && req->headers[i] != NULL; i++)
        hdrs = curl_slist_append(hdrs, req->headers[i]);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    if (req->aws_sigv4 != NULL) {
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, req->aws_sigv4);
        if (req->userpwd != NULL)
            curl_easy_setopt(c, CURLOPT_USERPWD, req->userpwd);
    }

    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    int rc;
    if (body.oom || head.oom)
        rc = -ENOMEM;
    else if (cc != CURLE_OK)
        rc = h_curl_errno(cc);
    else
        rc = (int)status;
    if (resp != NULL && rc > 0) {
        resp->status = status;
        resp->body = body.data;
        resp->body_len = body.len;
        resp->headers = head.data;
        resp->headers_len = head.len;
    } else {
        free(body.data);
        free(head.data);
    }
    return rc;
}

int h_http_get(const char *url, h_http_resp *resp)
{
    h_http_req req = {.method = "GET", .url = url};
    return h_http(&req, resp);
}

void h_http_resp_deinit(h_http_resp *resp)
{
    if (resp == NULL)
        return;
    free(resp->body);
    free(resp->headers);
    memset(resp, 0, sizeof(*resp));
}

int h_http_header(const h_http_resp *resp, const char *name, char *buf, size_t len)
{
    if (resp->headers == NULL)
        return -ENOENT;
    size_t nlen = strlen(name);
    /* Search the last header block (after 1xx/redirect blocks). */
    const char *p = resp->headers;
    int found = -ENOENT;
    while (*p != '\0') {
        const char *eol = strchr(p, '\n');
        size_t llen = eol != NULL ? (size_t)(eol - p) : strlen(p);
        if (strncmp(p, "HTTP/", 5) == 0)
            found = -ENOENT;
        if (llen > nlen && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1;
            const char *e = p + llen;
            while (v < e && isspace((unsigned char)*v))
                v++;
            while (e > v && isspace((unsigned char)e[-1]))
                e--;
            size_t vlen = (size_t)(e - v);
            if (vlen + 1 > len) {
                found = -ENAMETOOLONG;
            } else {
                memcpy(buf, v, vlen);
                buf[vlen] = '\0';
                found = (int)vlen;
            }
        }
        p += llen;
        if (*p == '\n')
            p++;
    }
    return found;
}
