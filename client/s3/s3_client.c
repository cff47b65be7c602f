/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_client.c: the asynchronous S3 client. libcurl's multi interface is driven
 * from the caller's libevent loop (CURLMOPT_SOCKETFUNCTION registers each socket
 * as a libevent event, CURLMOPT_TIMERFUNCTION arms one libevent timer), so one
 * thread keeps many S3 requests in flight. Every request is one s3__req: built,
 * signed (SigV4, s3_sigv4.c), sent; on a retryable failure it sleeps on its own
 * timer (full-jitter backoff, s3_retry.c) and is sent again, within the
 * config's attempt count and time budget. A GET that is retried resumes after
 * the bytes it already delivered and is pinned to the first answer's ETag.
 *
 * Completion callbacks run from the loop (curl's timer fires first even for a
 * request that fails at once), never from inside the submitting call.
 */
#include "s3_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define S3__ERRBODY_MAX       (64u * 1024u)         /* error documents kept for the message */
#define S3__XMLBODY_MAX       (32u * 1024u * 1024u) /* list pages and MPU answers */
#define S3__MAX_QUERY         16
#define S3__MAX_EXTRA_HEADERS 8

typedef enum s3__op {
    S3__HEAD,
    S3__GET,
    S3__LIST,
    S3__PUT,
    S3__DELETE,
    S3__MPU_CREATE,
    S3__MPU_PART,
    S3__MPU_COMPLETE,
    S3__MPU_ABORT,
    S3__RAW,
} s3__op;

static const char *const s3__op_name[] = {
    [S3__HEAD] = "HEAD",
    [S3__GET] = "GET",
    [S3__LIST] = "LIST",
    [S3__PUT] = "PUT",
    [S3__DELETE] = "DELETE",
    [S3__MPU_CREATE] = "CreateMultipartUpload",
    [S3__MPU_PART] = "UploadPart",
    [S3__MPU_COMPLETE] = "CompleteMultipartUpload",
    [S3__MPU_ABORT] = "AbortMultipartUpload",
    [S3__RAW] = "S3",
};

typedef struct s3__buf {
    char *data;
    size_t len;
    size_t cap;
} s3__buf;

typedef struct s3__req s3__req;
struct s3__req {
    s3_client *c;
    s3__req *prev, *next;
    s3__op op;
    const char *method;
    char *bucket;
    char *key;
    s3__kv query[S3__MAX_QUERY]; /* owned strings */
    size_t n_query;
    s3__kv extra[S3__MAX_EXTRA_HEADERS]; /* s3_request's headers, signed; owned */
    size_t n_extra;

    /* request body (borrowed from the caller, or owned_body) */
    const char *body;
    size_t body_len;
    size_t body_off;
    char *owned_body;
    char body_hash[65];

    /* GET */
    s3_get_args get;
    uint64_t delivered;          /* bytes handed to the caller so far */
    uint64_t skip;               /* bytes to drop (server ignored Range) */
    char want_etag[S3_ETAG_MAX]; /* if_match, or the first answer's ETag */

    /* conditional PUT / CompleteMultipartUpload */
    bool if_none_match;
    char write_if_match[S3_ETAG_MAX];

    /* the current attempt */
    CURL *easy;
    struct curl_slist *headers;
    int attempts;
    struct timespec started;
    struct event *retry_timer;
    int status; /* of the final response of this attempt */
    bool headers_done;
    int abort_code; /* set when a callback aborted the transfer */
    char etag[S3_ETAG_MAX];
    uint64_t content_length;
    bool have_content_length;
    uint64_t range_start, range_total;
    bool have_range;
    int64_t last_modified;
    s3__buf body_in; /* XML answers and error documents */
    char curl_err[CURL_ERROR_SIZE];

    /* completion */
    union {
        s3_head_fn head;
        s3_get_fn get;
        s3_list_fn list;
        s3_put_fn put;
        s3_done_fn done;
        s3_mpu_create_fn mpu_create;
        s3_request_fn raw;
    } cb;
    void *arg;
};

typedef struct s3__sock {
    curl_socket_t fd;
    struct event *ev;
} s3__sock;

struct s3_client {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    s3_config cfg;
    char scheme[8];
    char host[256]; /* host[:port] of the endpoint */
    bool virtual_host;
    uint64_t rng;
    s3__req *reqs; /* in flight or waiting to retry */
    size_t n_reqs;
    s3_client_stats stats;
    bool in_destroy;
};

static pthread_once_t s3__curl_once = PTHREAD_ONCE_INIT;
static void s3__curl_global_init(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
}

/* ---- small helpers ------------------------------------------------------ */

static int s3__buf_append(s3__buf *b, const void *data, size_t len, size_t max)
{
    if (b->len + len > max)
        return -EFBIG;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p)
            return -ENOMEM;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

static int64_t s3__elapsed_ms(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)(now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

static int s3__transport_errno(CURLcode rc)
{
    switch (rc) {
    case CURLE_OK: return 0;
    case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
    case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return -EHOSTUNREACH;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return -ECONNRESET;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM: return -EPROTO;
    case CURLE_OUT_OF_MEMORY: return -ENOMEM;
    default: return -EIO;
    }
}

/* ---- libevent <-> libcurl glue ------------------------------------------ */

static void s3__check_done(s3_client *c);

static void s3__on_socket_event(evutil_socket_t fd, short what, void *arg)
{
    s3_client *c = arg;
    int flags = 0, running;
    if (what & EV_READ)
        flags |= CURL_CSELECT_IN;
    if (what & EV_WRITE)
        flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(c->multi, fd, flags, &running);
    s3__check_done(c);
}

static void s3__on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    s3_client *c = arg;
    int running;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    s3__check_done(c);
}

static int s3__socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    (void)easy;
    s3_client *c = userp;
    s3__sock *s = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            event_free(s->ev);
            free(s);
            curl_multi_assign(c->multi, fd, NULL);
        }
        return 0;
    }
    short kind = EV_PERSIST;
    if (what & CURL_POLL_IN)
        kind |= EV_READ;
    if (what & CURL_POLL_OUT)
        kind |= EV_WRITE;
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s)
            return -1;
        s->fd = fd;
        s->ev = event_new(c->base, fd, kind, s3__on_socket_event, c);
        if (!s->ev) {
            free(s);
            return -1;
        }
        curl_multi_assign(c->multi, fd, s);
    } else {
        event_del(s->ev);
        event_assign(s->ev, c->base, fd, kind, s3__on_socket_event, c);
    }
    event_add(s->ev, NULL);
    return 0;
}

static int s3__timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    s3_client *c = userp;
    if (timeout_ms < 0) {
        evtimer_del(c->timer);
        return 0;
    }
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(c->timer, &tv);
    return 0;
}

/* ---- request lifecycle -------------------------------------------------- */

static void s3__req_unlink(s3__req *r)
{
    s3_client *c = r->c;
    if (r->prev)
        r->prev->next = r->next;
    else if (c->reqs == r)
        c->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
    c->n_reqs--;
}

static void s3__attempt_cleanup(s3__req *r)
{
    if (r->easy) {
        curl_multi_remove_handle(r->c->multi, r->easy);
        curl_easy_cleanup(r->easy);
        r->easy = NULL;
    }
    curl_slist_free_all(r->headers);
    r->headers = NULL;
}

static void s3__req_free(s3__req *r)
{
    s3__attempt_cleanup(r);
    if (r->retry_timer)
        event_free(r->retry_timer);
    for (size_t i = 0; i < r->n_query; i++) {
        free((char *)r->query[i].name);
        free((char *)r->query[i].value);
    }
    for (size_t i = 0; i < r->n_extra; i++) {
        free((char *)r->extra[i].name);
        free((char *)r->extra[i].value);
    }
    free(r->bucket);
    free(r->key);
    free(r->owned_body);
    free(r->body_in.data);
    free(r);
}

static void s3__complete(s3__req *r, const s3_error *err);

static int s3__req_add_query(s3__req *r, const char *name, const char *value)
{
    if (r->n_query >= S3__MAX_QUERY)
        return -E2BIG;
    char *n = strdup(name), *v = strdup(value ? value : "");
    if (!n || !v) {
        free(n);
        free(v);
        return -ENOMEM;
    }
    r->query[r->n_query].name = n;
    r->query[r->n_query].value = v;
    r->n_query++;
    return 0;
}

static size_t s3__on_header(char *line, size_t size, size_t n, void *arg)
{
    s3__req *r = arg;
    size_t len = size * n;
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* a new response (after 100 Continue or a redirect): start over */
        const char *sp = memchr(line, ' ', len);
        r->status = sp ? atoi(sp + 1) : 0;
        r->headers_done = false;
        r->etag[0] = '\0';
        r->have_content_length = r->have_range = false;
        return len;
    }
    if (len <= 2) { /* the blank line that ends the headers */
        if (r->status >= 100 && r->status < 200)
            return len;
        r->headers_done = true;
        if (r->op == S3__GET && r->status >= 200 && r->status < 300 && r->want_etag[0] &&
            strcmp(r->etag, r->want_etag) != 0) {
            /* some servers ignore If-Match: compare the answer's version here */
            r->abort_code = -ESTALE;
            return 0;
        }
        if (r->op == S3__GET && r->status == 200 && r->get.offset + r->delivered > 0)
            r->skip = r->get.offset + r->delivered; /* Range ignored: whole object */
        return len;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return len;
    size_t nlen = (size_t)(colon - line);
    const char *v = colon + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    char val[512];
    size_t vlen = (size_t)(end - v);
    if (vlen >= sizeof(val))
        vlen = sizeof(val) - 1;
    memcpy(val, v, vlen);
    val[vlen] = '\0';

    if (nlen == 4 && strncasecmp(line, "etag", 4) == 0) {
        if (s3_etag_normalize(val, r->etag, sizeof(r->etag)) < 0)
            r->etag[0] = '\0';
    } else if (nlen == 14 && strncasecmp(line, "content-length", 14) == 0) {
        r->content_length = strtoull(val, NULL, 10);
        r->have_content_length = true;
    } else if (nlen == 13 && strncasecmp(line, "content-range", 13) == 0) {
        unsigned long long a, b, t;
        if (sscanf(val, "bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
            r->range_start = a;
            r->range_total = t;
            r->have_range = true;
        }
    } else if (nlen == 13 && strncasecmp(line, "last-modified", 13) == 0) {
        struct tm tm = {0};
        if (strptime(val, "%a, %d %b %Y %H:%M:%S", &tm))
            r->last_modified = (int64_t)timegm(&tm);
    }
    return len;
}

static size_t s3__on_body(char *data, size_t size, size_t n, void *arg)
{
    s3__req *r = arg;
    size_t len = size * n;
    s3_client *c = r->c;
    c->stats.bytes_in += len;
    bool ok = r->status >= 200 && r->status < 300;
    if (r->op != S3__GET || !ok) {
        size_t max = ok ? S3__XMLBODY_MAX : S3__ERRBODY_MAX;
        int rc = s3__buf_append(&r->body_in, data, len, max);
        if (rc == -EFBIG && !ok)
            return len; /* keep the first part of a huge error page */
        if (rc < 0) {
            r->abort_code = rc == -EFBIG ? -EPROTO : rc;
            return 0;
        }
        return len;
    }
    /* GET body */
    if (r->skip) {
        size_t s = r->skip < len ? (size_t)r->skip : len;
        r->skip -= s;
        data += s;
        len -= s;
        if (!len)
            return size * n;
    }
    if (r->get.length) {
        uint64_t left = r->get.length - r->delivered;
        if (len > left)
            len = (size_t)left; /* the server sent more than asked: drop it */
    }
    if (!len)
        return size * n;
    if (r->get.on_data) {
        int rc = r->get.on_data(data, len, r->get.data_arg);
        if (rc < 0) {
            r->abort_code = rc;
            return 0;
        }
    } else {
        if (r->delivered + len > r->get.cap) {
            r->abort_code = -ENOBUFS;
            return 0;
        }
        memcpy((char *)r->get.buf + r->delivered, data, len);
    }
    r->delivered += len;
    return size * n;
}

static size_t s3__on_read(char *out, size_t size, size_t n, void *arg)
{
    s3__req *r = arg;
    size_t want = size * n, left = r->body_len - r->body_off;
    if (want > left)
        want = left;
    memcpy(out, r->body + r->body_off, want);
    r->body_off += want;
    r->c->stats.bytes_out += want;
    return want;
}

static int s3__seek_body(void *arg, curl_off_t off, int origin)
{
    s3__req *r = arg;
    if (origin != SEEK_SET || off < 0 || (size_t)off > r->body_len)
        return CURL_SEEKFUNC_FAIL;
    r->body_off = (size_t)off;
    return CURL_SEEKFUNC_OK;
}

static int s3__add_header(s3__req *r, const char *name, const char *value)
{
    char line[4352];
    int n = snprintf(line, sizeof(line), "%s: %s", name, value);
    if (n < 0 || (size_t)n >= sizeof(line))
        return -E2BIG;
    struct curl_slist *h = curl_slist_append(r->headers, line);
    if (!h)
        return -ENOMEM;
    r->headers = h;
    return 0;
}

/* Build, sign and hand one attempt to curl. */
static int s3__attempt_start(s3__req *r)
{
    s3_client *c = r->c;
    const s3_config *cfg = &c->cfg;
    int rc = -ENOMEM;
    char *path_key = NULL, *query = NULL, *url = NULL;
    s3__sign_output sig = {0};

    r->status = 0;
    r->headers_done = false;
    r->abort_code = 0;
    r->etag[0] = '\0';
    r->have_content_length = r->have_range = false;
    r->body_in.len = 0;
    r->body_off = 0;
    r->curl_err[0] = '\0';

    /* path: "/bucket/key" (path style) or "/key" (virtual-hosted) */
    path_key = s3__uri_encode(r->key ? r->key : "", r->key ? strlen(r->key) : 0, true);
    query = s3__canonical_query(r->query, r->n_query);
    if (!path_key || !query)
        goto out;
    char host[320];
    char path[8192];
    if (!r->bucket[0]) { /* the service itself (ListBuckets) */
        snprintf(host, sizeof(host), "%s", c->host);
        rc = snprintf(path, sizeof(path), "/");
    } else if (c->virtual_host) {
        snprintf(host, sizeof(host), "%s.%s", r->bucket, c->host);
        rc = snprintf(path, sizeof(path), "/%s", path_key);
    } else {
        snprintf(host, sizeof(host), "%s", c->host);
        rc = snprintf(path, sizeof(path), "/%s%s%s", r->bucket, r->key ? "/" : "", path_key);
    }
    if (rc < 0 || (size_t)rc >= sizeof(path)) {
        rc = -ENAMETOOLONG;
        goto out;
    }
    size_t ulen = strlen(c->scheme) + strlen(host) + strlen(path) + strlen(query) + 8;
    url = malloc(ulen);
    if (!url) {
        rc = -ENOMEM;
        goto out;
    }
    snprintf(url, ulen, "%s://%s%s%s%s", c->scheme, host, path, query[0] ? "?" : "", query);

    CURL *e = curl_easy_init();
    if (!e) {
        rc = -ENOMEM;
        goto out;
    }
    r->easy = e;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->curl_err);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, s3__on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, s3__on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->connect_timeout_ms);
    /* a transfer that moves nothing for request_timeout is a timeout; a long
     * but moving transfer is not */
    long stall_s = cfg->request_timeout_ms / 1000;
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, stall_s > 0 ? stall_s : 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (cfg->ca_bundle[0])
        curl_easy_setopt(e, CURLOPT_CAINFO, cfg->ca_bundle);
    if (!cfg->verify_tls) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }

    if (strcmp(r->method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "PUT") == 0) {
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, s3__on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, r);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, s3__seek_body);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
    } else if (strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, s3__on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, r);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, s3__seek_body);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    } else if (strcmp(r->method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    }

    /* headers: signed ones first */
    char amz_date[17];
    s3__amz_date((int64_t)time(NULL), amz_date);
    const char *payload = r->body ? r->body_hash : NULL;
    char empty_hash[65];
    if (!payload) {
        s3__sha256_hex("", 0, empty_hash);
        payload = empty_hash;
    }
    s3__kv sh[4 + S3__MAX_EXTRA_HEADERS];
    size_t nsh = 0;
    sh[nsh++] = (s3__kv){"host", host};
    sh[nsh++] = (s3__kv){"x-amz-content-sha256", payload};
    sh[nsh++] = (s3__kv){"x-amz-date", amz_date};
    if (cfg->session_token[0] && !cfg->anonymous)
        sh[nsh++] = (s3__kv){"x-amz-security-token", cfg->session_token};
    for (size_t i = 0; i < r->n_extra; i++)
        sh[nsh++] = r->extra[i];
    for (size_t i = 1; i < nsh; i++) /* host is set by curl from the URL */
        if ((rc = s3__add_header(r, sh[i].name, sh[i].value)) < 0)
            goto out;
    if (!cfg->anonymous) {
        s3__sign_input in = {
            .method = r->method,
            .canonical_uri = path,
            .query = r->query,
            .n_query = r->n_query,
            .headers = sh,
            .n_headers = nsh,
            .payload_hash = payload,
            .amz_date = amz_date,
            .region = cfg->region,
            .service = "s3",
            .access_key = cfg->access_key,
            .secret_key = cfg->secret_key,
        };
        if ((rc = s3__sigv4_sign(&in, &sig)) < 0)
            goto out;
        if ((rc = s3__add_header(r, "Authorization", sig.authorization)) < 0)
            goto out;
    }
    /* unsigned headers */
    if (r->op == S3__GET) {
        uint64_t start = r->get.offset + r->delivered;
        char range[80];
        if (r->get.length) {
            uint64_t end = r->get.offset + r->get.length - 1;
            snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)start,
                     (unsigned long long)end);
            rc = s3__add_header(r, "Range", range);
        } else if (start > 0) {
            snprintf(range, sizeof(range), "bytes=%llu-", (unsigned long long)start);
            rc = s3__add_header(r, "Range", range);
        }
        if (rc < 0)
            goto out;
        if (r->want_etag[0]) {
            char q[S3_ETAG_MAX + 2];
            snprintf(q, sizeof(q), "\"%s\"", r->want_etag);
            if ((rc = s3__add_header(r, "If-Match", q)) < 0)
                goto out;
        }
    }
    if (r->if_none_match && (rc = s3__add_header(r, "If-None-Match", "*")) < 0)
        goto out;
    if (r->write_if_match[0]) {
        char q[S3_ETAG_MAX + 2];
        snprintf(q, sizeof(q), "\"%s\"", r->write_if_match);
        if ((rc = s3__add_header(r, "If-Match", q)) < 0)
            goto out;
    }
    if (r->body) {
        if ((rc = s3__add_header(r, "Expect", "")) < 0) /* no 100-continue wait */
            goto out;
        if (r->op == S3__MPU_COMPLETE || r->op == S3__MPU_CREATE)
            if ((rc = s3__add_header(r, "Content-Type", "application/xml")) < 0)
                goto out;
        if (r->op == S3__PUT || r->op == S3__MPU_PART)
            if ((rc = s3__add_header(r, "Content-Type", "application/octet-stream")) < 0)
                goto out;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);

    r->attempts++;
    c->stats.requests++;
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        rc = -ENOMEM;
        goto out;
    }
    rc = 0;
out:
    if (rc < 0)
        s3__attempt_cleanup(r);
    s3__sign_output_free(&sig);
    free(path_key);
    free(query);
    free(url);
    return rc;
}

static void s3__on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    s3__req *r = arg;
    int rc = s3__attempt_start(r);
    if (rc < 0) {
        s3_error err = {0};
        err.attempts = r->attempts;
        s3__error_fill(&err, s3__op_name[r->op], r->bucket, r->key, 0, rc,
                       "could not build the request", NULL, NULL, r->c->cfg.endpoint);
        s3__complete(r, &err);
    }
}

/* Deliver the result to the caller and free the request. */
static void s3__complete(s3__req *r, const s3_error *err)
{
    s3_client *c = r->c;
    s3__req_unlink(r);
    s3__attempt_cleanup(r);
    if (err->code)
        c->stats.failures++;
    const s3_error *e = err;
    switch (r->op) {
    case S3__HEAD: {
        s3_object_info info = {0};
        if (!e->code) {
            info.size = r->content_length;
            snprintf(info.etag, sizeof(info.etag), "%s", r->etag);
            info.last_modified = r->last_modified;
        }
        r->cb.head(e, e->code ? NULL : &info, r->arg);
        break;
    }
    case S3__GET: {
        s3_get_result res = {0};
        res.bytes = r->delivered;
        snprintf(res.etag, sizeof(res.etag), "%s", r->want_etag[0] ? r->want_etag : r->etag);
        res.object_size = r->have_range ? r->range_total : r->content_length;
        r->cb.get(e, &res, r->arg);
        break;
    }
    case S3__LIST: {
        s3_list_page page = {0};
        s3_error perr = *e;
        if (!e->code) {
            char msg[256];
            if (s3__xml_parse_list(r->body_in.data ? r->body_in.data : "", r->body_in.len, &page,
                                   msg, sizeof(msg)) < 0) {
                perr.code = -EPROTO;
                snprintf(perr.message, sizeof(perr.message),
                         "LIST s3://%s/%s: malformed answer from S3: %s", r->bucket,
                         r->key ? r->key : "", msg);
            }
        }
        r->cb.list(&perr, perr.code ? NULL : &page, r->arg);
        s3__list_page_free(&page);
        break;
    }
    case S3__PUT:
    case S3__MPU_PART: r->cb.put(e, e->code ? NULL : r->etag, r->arg); break;
    case S3__MPU_COMPLETE: {
        s3_error perr = *e;
        char etag[S3_ETAG_MAX] = "";
        if (!e->code) {
            char msg[256];
            int rc = s3__xml_parse_mpu_complete(r->body_in.data ? r->body_in.data : "",
                                                r->body_in.len, etag, msg, sizeof(msg));
            if (rc < 0) {
                perr.code = rc;
                snprintf(perr.message, sizeof(perr.message),
                         "CompleteMultipartUpload s3://%s/%s: %s", r->bucket, r->key, msg);
            }
        }
        r->cb.put(&perr, perr.code ? NULL : etag, r->arg);
        break;
    }
    case S3__MPU_CREATE: {
        s3_error perr = *e;
        char *upload_id = NULL;
        if (!e->code) {
            char msg[256];
            if (s3__xml_parse_mpu_initiate(r->body_in.data ? r->body_in.data : "", r->body_in.len,
                                           &upload_id, msg, sizeof(msg)) < 0) {
                perr.code = -EPROTO;
                snprintf(perr.message, sizeof(perr.message),
                         "CreateMultipartUpload s3://%s/%s: malformed answer: %s", r->bucket,
                         r->key, msg);
            }
        }
        r->cb.mpu_create(&perr, perr.code ? NULL : upload_id, r->arg);
        free(upload_id);
        break;
    }
    case S3__DELETE:
    case S3__MPU_ABORT: r->cb.done(e, r->arg); break;
    case S3__RAW: {
        char code[64] = "", msg[512] = "";
        const char *body = r->body_in.data ? r->body_in.data : ""; /* NUL-terminated */
        if (r->body_in.len && (r->status >= 300 || strstr(body, "</Error>")))
            s3__xml_parse_error(body, r->body_in.len, code, sizeof(code), msg, sizeof(msg));
        s3_response resp = {
            e->code && !e->http_status ? 0 : r->status, body, r->body_in.len, code, msg, r->etag};
        r->cb.raw(e, &resp, r->arg);
        break;
    }
    }
    s3__req_free(r);
}

/* One attempt ended: finish, or schedule a retry. */
static void s3__attempt_done(s3__req *r, CURLcode cc)
{
    s3_client *c = r->c;
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status)
        r->status = (int)status;
    int transport = 0;
    if (cc != CURLE_OK)
        transport = r->abort_code ? r->abort_code : s3__transport_errno(cc);
    /* A body that ends before its Content-Length is CURLE_PARTIAL_FILE, a reset. */

    char s3_code[64] = "", s3_msg[256] = "";
    bool ok = !transport && r->status >= 200 && r->status < 300;
    if (!transport && !ok && r->body_in.len)
        s3__xml_parse_error(r->body_in.data, r->body_in.len, s3_code, sizeof(s3_code), s3_msg,
                            sizeof(s3_msg));
    if (ok && r->op == S3__GET && !r->want_etag[0] && r->etag[0])
        snprintf(r->want_etag, sizeof(r->want_etag), "%s", r->etag); /* pin for retries */
    if (ok || (r->op == S3__DELETE && !transport && r->status == 404)) {
        s3_error none = {0};
        none.http_status = r->status;
        none.attempts = r->attempts;
        s3__complete(r, &none);
        return;
    }
    if (r->abort_code) {
        /* our own abort (version changed, buffer full, the caller said stop):
         * never retried */
        s3_error err = {0};
        err.attempts = r->attempts;
        if (transport == -ESTALE)
            s3__error_fill(&err, s3__op_name[r->op], r->bucket, r->key, 412, 0, NULL,
                           "PreconditionFailed",
                           "the answer's ETag differs from the version asked for", c->cfg.endpoint);
        else {
            err.code = transport;
            snprintf(err.message, sizeof(err.message), "%s s3://%s/%s: %s", s3__op_name[r->op],
                     r->bucket, r->key ? r->key : "",
                     transport == -ENOBUFS ? "the answer is larger than the buffer given"
                                           : strerror(-transport));
        }
        s3__complete(r, &err);
        return;
    }
    s3__attempt a = {r->status, transport, s3_code[0] ? s3_code : NULL};
    int64_t elapsed = s3__elapsed_ms(&r->started);
    if (s3__retry_should(&a) && r->attempts < c->cfg.max_attempts && !c->in_destroy) {
        int delay =
            s3__retry_delay_ms(r->attempts, c->cfg.retry_base_ms, c->cfg.retry_cap_ms, &c->rng);
        if (elapsed + delay < c->cfg.retry_budget_ms) {
            s3__attempt_cleanup(r);
            c->stats.retries++; /* a GET resumes at offset + delivered */
            struct timeval tv = {delay / 1000, (delay % 1000) * 1000};
            evtimer_add(r->retry_timer, &tv);
            return;
        }
    }
    s3_error err = {0};
    err.attempts = r->attempts;
    s3__error_fill(&err, s3__op_name[r->op], r->bucket, r->key, transport ? 0 : r->status,
                   transport, r->curl_err[0] ? r->curl_err : NULL, s3_code[0] ? s3_code : NULL,
                   s3_msg[0] ? s3_msg : NULL, c->cfg.endpoint[0] ? c->cfg.endpoint : c->host);
    if (r->if_none_match && !transport && r->status == 412) {
        err.code = -EEXIST; /* its own error: the key is taken, not "changed" */
        snprintf(err.message, sizeof(err.message),
                 "%s s3://%s/%s: the object already exists (If-None-Match: * did not hold)",
                 s3__op_name[r->op], r->bucket, r->key ? r->key : "");
    }
    s3__complete(r, &err);
}

static void s3__check_done(s3_client *c)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        s3__req *r = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode cc = msg->data.result;
        s3__attempt_done(r, cc);
    }
}

/* ---- public: client ----------------------------------------------------- */

static int s3__parse_endpoint(s3_client *c)
{
    const s3_config *cfg = &c->cfg;
    if (!cfg->endpoint[0]) {
        snprintf(c->scheme, sizeof(c->scheme), "https");
        snprintf(c->host, sizeof(c->host), "s3.%s.amazonaws.com", cfg->region);
        c->virtual_host = !cfg->path_style;
        return 0;
    }
    const char *p = cfg->endpoint;
    if (strncmp(p, "http://", 7) == 0) {
        snprintf(c->scheme, sizeof(c->scheme), "http");
        p += 7;
    } else if (strncmp(p, "https://", 8) == 0) {
        snprintf(c->scheme, sizeof(c->scheme), "https");
        p += 8;
    } else {
        return -EINVAL;
    }
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= sizeof(c->host))
        return -EINVAL;
    memcpy(c->host, p, n);
    c->host[n] = '\0';
    c->virtual_host = !cfg->path_style;
    return 0;
}

int s3_client_create(s3_client **out, const s3_config *cfg, struct event_base *base)
{
    pthread_once(&s3__curl_once, s3__curl_global_init);
    s3_client *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->base = base;
    c->cfg = *cfg;
    if (!c->cfg.region[0])
        snprintf(c->cfg.region, sizeof(c->cfg.region), "us-east-1");
    if (s3__parse_endpoint(c) < 0) {
        free(c);
        return -EINVAL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    c->rng = ((uint64_t)ts.tv_nsec << 17) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)c;
    if (!c->rng)
        c->rng = 0x9e3779b97f4a7c15ull;
    c->multi = curl_multi_init();
    c->timer = evtimer_new(base, s3__on_timer, c);
    if (!c->multi || !c->timer) {
        s3_client_destroy(&c);
        return -ENOMEM;
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, s3__socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, s3__timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    long maxc = cfg->max_connections > 0 ? cfg->max_connections : 64;
    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxc);
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, maxc);
    *out = c;
    return 0;
}

void s3_client_destroy(s3_client **cp)
{
    if (!cp || !*cp)
        return;
    s3_client *c = *cp;
    c->in_destroy = true;
    while (c->reqs) {
        s3__req *r = c->reqs;
        s3_error err = {0};
        err.code = -ECANCELED;
        err.attempts = r->attempts;
        snprintf(err.message, sizeof(err.message), "%s s3://%s/%s: cancelled (client shut down)",
                 s3__op_name[r->op], r->bucket, r->key ? r->key : "");
        s3__complete(r, &err);
    }
    if (c->multi)
        curl_multi_cleanup(c->multi);
    if (c->timer)
        event_free(c->timer);
    free(c);
    *cp = NULL;
}

size_t s3_client_inflight(const s3_client *c)
{
    return c->n_reqs;
}

void s3_client_stats_get(const s3_client *c, s3_client_stats *out)
{
    *out = c->stats;
}

/* ---- public: operations ------------------------------------------------- */

static s3__req *s3__req_new(s3_client *c, s3__op op, const char *method, const char *bucket,
                            const char *key)
{
    if (!bucket || (!bucket[0] && op != S3__RAW))
        return NULL;
    s3__req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->c = c;
    r->op = op;
    r->method = method;
    r->bucket = strdup(bucket);
    r->key = key ? strdup(key) : NULL;
    r->retry_timer = evtimer_new(c->base, s3__on_retry_timer, r);
    if (!r->bucket || (key && !r->key) || !r->retry_timer) {
        s3__req_free(r);
        return NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &r->started);
    return r;
}

static int s3__submit(s3__req *r)
{
    s3_client *c = r->c;
    if (c->in_destroy) {
        s3__req_free(r);
        return -ECANCELED;
    }
    r->next = c->reqs;
    if (c->reqs)
        c->reqs->prev = r;
    c->reqs = r;
    c->n_reqs++;
    int rc = s3__attempt_start(r);
    if (rc < 0) {
        s3__req_unlink(r);
        s3__req_free(r);
    }
    return rc;
}

static void s3__set_body(s3__req *r, const void *data, size_t len)
{
    r->body = data ? data : "";
    r->body_len = len;
    s3__sha256_hex(r->body, len, r->body_hash);
}

int s3_head(s3_client *c, const char *bucket, const char *key, s3_head_fn done, void *arg)
{
    if (!key)
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__HEAD, "HEAD", bucket, key);
    if (!r)
        return -ENOMEM;
    r->cb.head = done;
    r->arg = arg;
    return s3__submit(r);
}

int s3_get(s3_client *c, const s3_get_args *a, s3_get_fn done, void *arg)
{
    if (!a->key || (!a->buf && !a->on_data) || (a->if_match && strlen(a->if_match) >= S3_ETAG_MAX))
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__GET, "GET", a->bucket, a->key);
    if (!r)
        return -ENOMEM;
    r->get = *a;
    r->get.bucket = r->bucket;
    r->get.key = r->key;
    r->get.if_match = NULL;
    if (a->if_match)
        s3_etag_normalize(a->if_match, r->want_etag, sizeof(r->want_etag));
    r->cb.get = done;
    r->arg = arg;
    return s3__submit(r);
}

static int s3__list(s3_client *c, const char *bucket, const char *prefix, const char *delimiter,
                    const char *continuation_token, const char *start_after, int max_keys,
                    s3_list_fn done, void *arg);

int s3_list(s3_client *c, const char *bucket, const char *prefix, const char *delimiter,
            const char *continuation_token, int max_keys, s3_list_fn done, void *arg)
{
    return s3__list(c, bucket, prefix, delimiter, continuation_token, NULL, max_keys, done, arg);
}

int s3_list_from(s3_client *c, const char *bucket, const char *prefix, const char *start_after,
                 int max_keys, s3_list_fn done, void *arg)
{
    return s3__list(c, bucket, prefix, NULL, NULL, start_after, max_keys, done, arg);
}

static int s3__list(s3_client *c, const char *bucket, const char *prefix, const char *delimiter,
                    const char *continuation_token, const char *start_after, int max_keys,
                    s3_list_fn done, void *arg)
{
    s3__req *r = s3__req_new(c, S3__LIST, "GET", bucket, NULL);
    if (!r)
        return -ENOMEM;
    int rc = s3__req_add_query(r, "list-type", "2");
    if (!rc && prefix && prefix[0])
        rc = s3__req_add_query(r, "prefix", prefix);
    if (!rc && delimiter && delimiter[0])
        rc = s3__req_add_query(r, "delimiter", delimiter);
    if (!rc && continuation_token && continuation_token[0])
        rc = s3__req_add_query(r, "continuation-token", continuation_token);
    if (!rc && start_after && start_after[0])
        rc = s3__req_add_query(r, "start-after", start_after);
    if (!rc && max_keys > 0) {
        char n[16];
        snprintf(n, sizeof(n), "%d", max_keys);
        rc = s3__req_add_query(r, "max-keys", n);
    }
    if (rc < 0) {
        s3__req_free(r);
        return rc;
    }
    /* the key is used in messages only; keep the prefix there */
    r->cb.list = done;
    r->arg = arg;
    return s3__submit(r);
}

/* Copies a write condition into the request; -EINVAL for an ETag too long. */
static int s3__set_cond(s3__req *r, const s3_write_cond *cond)
{
    if (!cond)
        return 0;
    r->if_none_match = cond->if_none_match;
    if (cond->if_match &&
        s3_etag_normalize(cond->if_match, r->write_if_match, sizeof(r->write_if_match)) <= 0)
        return -EINVAL;
    return 0;
}

int s3_put(s3_client *c, const char *bucket, const char *key, const void *data, size_t len,
           s3_put_fn done, void *arg)
{
    return s3_put_cond(c, bucket, key, data, len, NULL, done, arg);
}

int s3_put_cond(s3_client *c, const char *bucket, const char *key, const void *data, size_t len,
                const s3_write_cond *cond, s3_put_fn done, void *arg)
{
    if (!key || !key[0])
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__PUT, "PUT", bucket, key);
    if (!r)
        return -ENOMEM;
    if (s3__set_cond(r, cond) < 0) {
        s3__req_free(r);
        return -EINVAL;
    }
    s3__set_body(r, data, len);
    r->cb.put = done;
    r->arg = arg;
    return s3__submit(r);
}

int s3_delete(s3_client *c, const char *bucket, const char *key, s3_done_fn done, void *arg)
{
    if (!key || !key[0])
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__DELETE, "DELETE", bucket, key);
    if (!r)
        return -ENOMEM;
    r->cb.done = done;
    r->arg = arg;
    return s3__submit(r);
}

int s3_mpu_create(s3_client *c, const char *bucket, const char *key, s3_mpu_create_fn done,
                  void *arg)
{
    if (!key || !key[0])
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__MPU_CREATE, "POST", bucket, key);
    if (!r)
        return -ENOMEM;
    int rc = s3__req_add_query(r, "uploads", "");
    if (rc < 0) {
        s3__req_free(r);
        return rc;
    }
    s3__set_body(r, "", 0);
    r->cb.mpu_create = done;
    r->arg = arg;
    return s3__submit(r);
}

int s3_mpu_upload_part(s3_client *c, const char *bucket, const char *key, const char *upload_id,
                       int part_number, const void *data, size_t len, s3_put_fn done, void *arg)
{
    if (!key || !upload_id || part_number < 1 || part_number > 10000)
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__MPU_PART, "PUT", bucket, key);
    if (!r)
        return -ENOMEM;
    char n[16];
    snprintf(n, sizeof(n), "%d", part_number);
    int rc = s3__req_add_query(r, "partNumber", n);
    if (!rc)
        rc = s3__req_add_query(r, "uploadId", upload_id);
    if (rc < 0) {
        s3__req_free(r);
        return rc;
    }
    s3__set_body(r, data, len);
    r->cb.put = done;
    r->arg = arg;
    return s3__submit(r);
}

int s3_mpu_complete(s3_client *c, const char *bucket, const char *key, const char *upload_id,
                    const char *const *part_etags, int n_parts, s3_put_fn done, void *arg)
{
    return s3_mpu_complete_cond(c, bucket, key, upload_id, part_etags, n_parts, NULL, done, arg);
}

int s3_mpu_complete_cond(s3_client *c, const char *bucket, const char *key, const char *upload_id,
                         const char *const *part_etags, int n_parts, const s3_write_cond *cond,
                         s3_put_fn done, void *arg)
{
    if (!key || !upload_id || n_parts < 1)
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__MPU_COMPLETE, "POST", bucket, key);
    if (!r)
        return -ENOMEM;
    int rc = s3__set_cond(r, cond);
    if (!rc)
        rc = s3__req_add_query(r, "uploadId", upload_id);
    if (!rc && !(r->owned_body = s3__xml_build_mpu_complete(part_etags, n_parts)))
        rc = -ENOMEM;
    if (rc < 0) {
        s3__req_free(r);
        return rc;
    }
    s3__set_body(r, r->owned_body, strlen(r->owned_body));
    r->cb.put = done;
    r->arg = arg;
    return s3__submit(r);
}

int s3_mpu_abort(s3_client *c, const char *bucket, const char *key, const char *upload_id,
                 s3_done_fn done, void *arg)
{
    if (!key || !upload_id)
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__MPU_ABORT, "DELETE", bucket, key);
    if (!r)
        return -ENOMEM;
    int rc = s3__req_add_query(r, "uploadId", upload_id);
    if (rc < 0) {
        s3__req_free(r);
        return rc;
    }
    r->cb.done = done;
    r->arg = arg;
    return s3__submit(r);
}

int s3_request(s3_client *c, const s3_request_args *a, s3_request_fn done, void *arg)
{
    if (!a->method || !a->bucket || a->n_query > S3__MAX_QUERY ||
        a->n_headers > S3__MAX_EXTRA_HEADERS || (!a->bucket[0] && a->key))
        return -EINVAL;
    static const char *const methods[] = {"GET", "HEAD", "PUT", "POST", "DELETE"};
    const char *method = NULL;
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strcmp(a->method, methods[i]) == 0)
            method = methods[i];
    if (!method)
        return -EINVAL;
    s3__req *r = s3__req_new(c, S3__RAW, method, a->bucket, a->key);
    if (!r)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; !rc && i < a->n_query; i++)
        rc = s3__req_add_query(r, a->query[i].name, a->query[i].value);
    for (size_t i = 0; !rc && i < a->n_headers; i++) {
        char *n = strdup(a->headers[i].name), *v = strdup(a->headers[i].value);
        if (!n || !v || strpbrk(v, "\r\n")) {
            free(n);
            free(v);
            rc = !n || !v ? -ENOMEM : -EINVAL;
            break;
        }
        r->extra[r->n_extra++] = (s3__kv){n, v};
    }
    if (rc < 0) {
        s3__req_free(r);
        return rc;
    }
    if (a->body || strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0)
        s3__set_body(r, a->body, a->body_len);
    r->cb.raw = done;
    r->arg = arg;
    return s3__submit(r);
}
