/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_sync.c: the blocking wrapper over the asynchronous S3 client, for tools
 * (the `ringcache` CLI), tests and benchmarks. Each s3_sync owns a private
 * event_base and runs it until the operation it was asked for is done. Long
 * transfers are built here from the async primitives: a parallel ranged GET
 * pinned to one version, a multipart upload with parts in flight that is
 * aborted on failure, and list/glob over every page.
 */
#include "s3_int.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S3__DEFAULT_PART (8ull * 1024 * 1024)

struct s3_sync {
    struct event_base *base;
    s3_client *client;
};

int s3_sync_create(s3_sync **out, const s3_config *cfg)
{
    s3_sync *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->base = event_base_new();
    if (!s->base) {
        free(s);
        return -ENOMEM;
    }
    int rc = s3_client_create(&s->client, cfg, s->base);
    if (rc < 0) {
        event_base_free(s->base);
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void s3_sync_destroy(s3_sync **sp)
{
    if (!sp || !*sp)
        return;
    s3_sync *s = *sp;
    s3_client_destroy(&s->client);
    event_base_free(s->base);
    free(s);
    *sp = NULL;
}

s3_client *s3_sync_client(s3_sync *s)
{
    return s->client;
}

static void s3__run_until(s3_sync *s, const bool *done)
{
    while (!*done)
        event_base_loop(s->base, EVLOOP_ONCE);
}

static void s3__submit_failed(s3_error *err, const char *op, const char *bucket, const char *key,
                              int rc)
{
    memset(err, 0, sizeof(*err));
    err->code = rc;
    snprintf(err->message, sizeof(err->message), "%s s3://%s/%s: %s", op, bucket ? bucket : "",
             key ? key : "",
             rc == -EINVAL ? "invalid request (check the bucket and key)" : strerror(-rc));
}

/* ---- HEAD ---------------------------------------------------------------- */

typedef struct {
    bool done;
    s3_error err;
    s3_object_info info;
} s3__head_wait;

static void s3__head_cb(const s3_error *err, const s3_object_info *info, void *arg)
{
    s3__head_wait *w = arg;
    w->err = *err;
    if (info)
        w->info = *info;
    w->done = true;
}

int s3_sync_head(s3_sync *s, const char *bucket, const char *key, s3_object_info *info,
                 s3_error *err)
{
    s3__head_wait w = {0};
    int rc = s3_head(s->client, bucket, key, s3__head_cb, &w);
    if (rc < 0) {
        s3__submit_failed(err, "HEAD", bucket, key, rc);
        return rc;
    }
    s3__run_until(s, &w.done);
    *err = w.err;
    if (w.err.code)
        return w.err.code;
    *info = w.info;
    info->key = NULL;
    return 0;
}

/* ---- GET (single stream or parallel ranges) ------------------------------ */

typedef struct s3__get_job s3__get_job;
typedef struct {
    s3__get_job *job;
    uint64_t off; /* absolute object offset of this part */
    uint64_t len;
    uint64_t written;
} s3__get_part;

struct s3__get_job {
    s3_sync *s;
    const s3_sync_get_args *a;
    int fd;
    bool seekable;
    off_t fd_base;      /* fd position of the first byte of the range */
    uint64_t range_off; /* first byte of the range */
    uint64_t total;     /* bytes in the range */
    uint64_t next;      /* next byte to hand to a part */
    uint64_t done_bytes;
    int inflight;
    bool failed;
    s3_error err;
    char etag[S3_ETAG_MAX];
    uint64_t object_size;
};

static int s3__part_write(const void *data, size_t len, void *arg)
{
    s3__get_part *p = arg;
    s3__get_job *j = p->job;
    if (j->fd >= 0) {
        const char *d = data;
        size_t left = len;
        while (left) {
            ssize_t n;
            if (j->seekable)
                n = pwrite(j->fd, d, left,
                           j->fd_base + (off_t)(p->off - j->range_off + p->written));
            else
                n = write(j->fd, d, left);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return -errno;
            }
            d += n;
            left -= (size_t)n;
            p->written += (uint64_t)n;
        }
    } else {
        uint64_t at = p->off - j->range_off + p->written;
        if (at + len > j->a->cap)
            return -ENOBUFS;
        memcpy((char *)j->a->buf + at, data, len);
        p->written += len;
    }
    j->done_bytes += len;
    if (j->a->progress)
        j->a->progress(j->done_bytes, j->total, j->a->progress_arg);
    return 0;
}

static void s3__get_launch(s3__get_job *j);

static void s3__part_done(const s3_error *err, const s3_get_result *res, void *arg)
{
    s3__get_part *p = arg;
    s3__get_job *j = p->job;
    j->inflight--;
    if (err->code && !j->failed) {
        j->failed = true;
        j->err = *err;
    } else if (!err->code) {
        if (!j->etag[0])
            snprintf(j->etag, sizeof(j->etag), "%s", res->etag);
        if (res->object_size)
            j->object_size = res->object_size;
        if (p->len && res->bytes < p->len && !j->failed) {
            /* the object is shorter than the range asked for: S3 trims */
            j->total -= p->len - res->bytes;
        }
    }
    free(p);
    if (!j->failed)
        s3__get_launch(j);
}

static void s3__get_launch(s3__get_job *j)
{
    const s3_sync_get_args *a = j->a;
    int par = a->parallel > 0 ? a->parallel : 1;
    uint64_t part = a->part_size ? a->part_size : S3__DEFAULT_PART;
    if (par == 1 || (j->fd >= 0 && !j->seekable))
        part = j->total ? j->total : UINT64_MAX; /* one stream */
    uint64_t end = j->range_off + j->total;
    while (!j->failed && j->inflight < par && j->next < end) {
        s3__get_part *p = calloc(1, sizeof(*p));
        if (!p) {
            j->failed = true;
            s3__submit_failed(&j->err, "GET", a->bucket, a->key, -ENOMEM);
            return;
        }
        p->job = j;
        p->off = j->next;
        p->len = end - j->next < part ? end - j->next : part;
        s3_get_args ga = {
            .bucket = a->bucket,
            .key = a->key,
            .offset = p->off,
            .length = p->len,
            .if_match = j->etag[0] ? j->etag : a->if_match,
            .on_data = s3__part_write,
            .data_arg = p,
        };
        int rc = s3_get(j->s->client, &ga, s3__part_done, p);
        if (rc < 0) {
            free(p);
            j->failed = true;
            s3__submit_failed(&j->err, "GET", a->bucket, a->key, rc);
            return;
        }
        j->next += p->len;
        j->inflight++;
    }
}

int64_t s3_sync_get(s3_sync *s, const s3_sync_get_args *a, s3_error *err)
{
    s3__get_job j = {0};
    j.s = s;
    j.a = a;
    j.fd = a->fd;
    j.range_off = a->offset;
    memset(err, 0, sizeof(*err));
    if (a->fd >= 0) {
        off_t pos = lseek(a->fd, 0, SEEK_CUR);
        j.seekable = pos >= 0;
        j.fd_base = pos >= 0 ? pos : 0;
    } else if (!a->buf) {
        s3__submit_failed(err, "GET", a->bucket, a->key, -EINVAL);
        return -EINVAL;
    }
    /* Know the size and pin the version first: every part is then of one
     * version (If-Match plus the ETag check), whatever happens to the object. */
    s3_object_info info;
    int rc = s3_sync_head(s, a->bucket, a->key, &info, err);
    if (rc < 0)
        return rc;
    if (a->if_match) {
        char want[S3_ETAG_MAX];
        s3_etag_normalize(a->if_match, want, sizeof(want));
        if (strcmp(want, info.etag) != 0) {
            s3__error_fill(err, "GET", a->bucket, a->key, 412, 0, NULL, "PreconditionFailed",
                           "the object's ETag differs from the version asked for", NULL);
            return err->code;
        }
    }
    snprintf(j.etag, sizeof(j.etag), "%s", info.etag);
    j.object_size = info.size;
    if (a->offset > info.size || (a->offset == info.size && info.size > 0)) {
        s3__error_fill(err, "GET", a->bucket, a->key, 416, 0, NULL, "InvalidRange",
                       "the range starts past the end of the object", NULL);
        return err->code;
    }
    uint64_t avail = info.size - a->offset;
    j.total = a->length && a->length < avail ? a->length : avail;
    if (a->fd < 0 && j.total > a->cap) {
        s3__submit_failed(err, "GET", a->bucket, a->key, -ENOBUFS);
        return -ENOBUFS;
    }
    j.next = j.range_off;
    if (j.total == 0)
        return 0;
    s3__get_launch(&j);
    while (j.inflight > 0)
        event_base_loop(s->base, EVLOOP_ONCE);
    if (j.failed) {
        *err = j.err;
        return j.err.code ? j.err.code : -EIO;
    }
    if (a->fd >= 0 && j.seekable)
        lseek(a->fd, j.fd_base + (off_t)j.done_bytes, SEEK_SET);
    return (int64_t)j.done_bytes;
}

/* ---- LIST and glob ------------------------------------------------------- */

typedef struct {
    bool done;
    s3_error err;
    char *next_token;
    bool truncated;
    s3_object_fn fn;
    void *arg;
    const s3_glob *glob;
    int stop;
    uint64_t seen;
} s3__list_wait;

static void s3__list_cb(const s3_error *err, const s3_list_page *page, void *arg)
{
    s3__list_wait *w = arg;
    w->err = *err;
    free(w->next_token);
    w->next_token = NULL;
    w->truncated = false;
    if (!err->code && page) {
        for (size_t i = 0; i < page->n_objects && !w->stop; i++) {
            w->seen++;
            if (w->glob && !s3_glob_match(w->glob, page->objects[i].key))
                continue;
            int rc = w->fn(&page->objects[i], w->arg);
            if (rc < 0)
                w->stop = rc;
        }
        w->truncated = page->truncated;
        if (page->next_token)
            w->next_token = strdup(page->next_token);
    }
    w->done = true;
}

static int s3__list_all(s3_sync *s, const char *bucket, const char *prefix, const s3_glob *g,
                        s3_object_fn fn, void *arg, s3_error *err)
{
    s3__list_wait w = {0};
    w.fn = fn;
    w.arg = arg;
    w.glob = g;
    memset(err, 0, sizeof(*err));
    for (;;) {
        w.done = false;
        int rc = s3_list(s->client, bucket, prefix, NULL, w.next_token, 1000, s3__list_cb, &w);
        if (rc < 0) {
            free(w.next_token);
            s3__submit_failed(err, "LIST", bucket, prefix, rc);
            return rc;
        }
        s3__run_until(s, &w.done);
        if (w.err.code) {
            *err = w.err;
            free(w.next_token);
            return w.err.code;
        }
        if (w.stop) {
            free(w.next_token);
            return w.stop;
        }
        if (!w.truncated)
            break;
        if (!w.next_token) {
            free(w.next_token);
            err->code = -EPROTO;
            snprintf(err->message, sizeof(err->message),
                     "LIST s3://%s/%s: S3 said the listing is truncated but gave no "
                     "continuation token",
                     bucket, prefix ? prefix : "");
            return -EPROTO;
        }
    }
    free(w.next_token);
    return 0;
}

int s3_sync_list(s3_sync *s, const char *bucket, const char *prefix, s3_object_fn fn, void *arg,
                 s3_error *err)
{
    return s3__list_all(s, bucket, prefix, NULL, fn, arg, err);
}

int s3_sync_glob(s3_sync *s, const char *bucket, const char *pattern, s3_object_fn fn, void *arg,
                 s3_error *err)
{
    s3_glob *g = NULL;
    int rc = s3_glob_create(&g, pattern);
    if (rc < 0) {
        memset(err, 0, sizeof(*err));
        err->code = rc;
        snprintf(err->message, sizeof(err->message),
                 "bad glob s3://%s/%s: unbalanced braces or an empty alternative", bucket, pattern);
        return rc;
    }
    rc = s3__list_all(s, bucket, s3_glob_prefix(g), g, fn, arg, err);
    s3_glob_destroy(&g);
    return rc;
}

/* ---- PUT (single or multipart) ------------------------------------------- */

typedef struct {
    bool done;
    s3_error err;
    char etag[S3_ETAG_MAX];
} s3__put_wait;

static void s3__put_cb(const s3_error *err, const char *etag, void *arg)
{
    s3__put_wait *w = arg;
    w->err = *err;
    if (etag)
        snprintf(w->etag, sizeof(w->etag), "%s", etag);
    w->done = true;
}

typedef struct s3__mpu s3__mpu;
typedef struct {
    s3__mpu *m;
    int number;
    char *buf;
} s3__mpu_part;

struct s3__mpu {
    s3_sync *s;
    const s3_sync_put_args *a;
    char *upload_id;
    uint64_t part_size;
    int n_parts;
    int next_part; /* 1-based */
    int inflight;
    uint64_t done_bytes;
    char **etags;
    bool failed;
    s3_error err;
};

static void s3__mpu_launch(s3__mpu *m);

static void s3__mpu_part_cb(const s3_error *err, const char *etag, void *arg)
{
    s3__mpu_part *p = arg;
    s3__mpu *m = p->m;
    m->inflight--;
    if (err->code) {
        if (!m->failed) {
            m->failed = true;
            m->err = *err;
        }
    } else {
        m->etags[p->number - 1] = strdup(etag ? etag : "");
        uint64_t off = (uint64_t)(p->number - 1) * m->part_size;
        uint64_t len = m->a->size - off < m->part_size ? m->a->size - off : m->part_size;
        m->done_bytes += len;
        if (m->a->progress)
            m->a->progress(m->done_bytes, m->a->size, m->a->progress_arg);
    }
    free(p->buf);
    free(p);
    if (!m->failed)
        s3__mpu_launch(m);
}

static void s3__mpu_fail(s3__mpu *m, int rc, const char *what)
{
    if (m->failed)
        return;
    m->failed = true;
    memset(&m->err, 0, sizeof(m->err));
    m->err.code = rc;
    snprintf(m->err.message, sizeof(m->err.message), "PUT s3://%s/%s: %s: %s", m->a->bucket,
             m->a->key, what, strerror(-rc));
}

static void s3__mpu_launch(s3__mpu *m)
{
    const s3_sync_put_args *a = m->a;
    int par = a->parallel > 0 ? a->parallel : 4;
    while (!m->failed && m->inflight < par && m->next_part <= m->n_parts) {
        int number = m->next_part;
        uint64_t off = (uint64_t)(number - 1) * m->part_size;
        size_t len = (size_t)(a->size - off < m->part_size ? a->size - off : m->part_size);
        s3__mpu_part *p = calloc(1, sizeof(*p));
        if (!p) {
            s3__mpu_fail(m, -ENOMEM, "out of memory");
            return;
        }
        p->m = m;
        p->number = number;
        const void *data;
        if (a->fd >= 0) {
            p->buf = malloc(len ? len : 1);
            if (!p->buf) {
                free(p);
                s3__mpu_fail(m, -ENOMEM, "out of memory");
                return;
            }
            size_t got = 0;
            while (got < len) {
                ssize_t n = pread(a->fd, p->buf + got, len - got, (off_t)(off + got));
                if (n < 0 && errno == EINTR)
                    continue;
                if (n <= 0) {
                    int e = n < 0 ? -errno : -EIO;
                    free(p->buf);
                    free(p);
                    s3__mpu_fail(m, e,
                                 n < 0 ? "cannot read the local file"
                                       : "the local file is shorter than its size");
                    return;
                }
                got += (size_t)n;
            }
            data = p->buf;
        } else {
            data = (const char *)a->data + off;
        }
        int rc = s3_mpu_upload_part(m->s->client, a->bucket, a->key, m->upload_id, number, data,
                                    len, s3__mpu_part_cb, p);
        if (rc < 0) {
            free(p->buf);
            free(p);
            s3__mpu_fail(m, rc, "cannot send a part");
            return;
        }
        m->next_part++;
        m->inflight++;
    }
}

typedef struct {
    bool done;
    s3_error err;
    char *upload_id;
} s3__create_wait;

static void s3__create_cb(const s3_error *err, const char *upload_id, void *arg)
{
    s3__create_wait *w = arg;
    w->err = *err;
    if (upload_id)
        w->upload_id = strdup(upload_id);
    w->done = true;
}

typedef struct {
    bool done;
    s3_error err;
} s3__done_wait;

static void s3__done_cb(const s3_error *err, void *arg)
{
    s3__done_wait *w = arg;
    w->err = *err;
    w->done = true;
}

static int s3__put_single(s3_sync *s, const s3_sync_put_args *a, char *etag_out, s3_error *err)
{
    char *owned = NULL;
    const void *data = a->data;
    if (a->fd >= 0) {
        owned = malloc(a->size ? a->size : 1);
        if (!owned) {
            s3__submit_failed(err, "PUT", a->bucket, a->key, -ENOMEM);
            return -ENOMEM;
        }
        size_t got = 0;
        while (got < a->size) {
            ssize_t n = pread(a->fd, owned + got, a->size - got, (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                int e = n < 0 ? -errno : -EIO;
                free(owned);
                s3__submit_failed(err, "PUT", a->bucket, a->key, e);
                return e;
            }
            got += (size_t)n;
        }
        data = owned;
    }
    s3__put_wait w = {0};
    int rc = s3_put_cond(s->client, a->bucket, a->key, data, a->size, &a->cond, s3__put_cb, &w);
    if (rc < 0) {
        free(owned);
        s3__submit_failed(err, "PUT", a->bucket, a->key, rc);
        return rc;
    }
    s3__run_until(s, &w.done);
    free(owned);
    *err = w.err;
    if (w.err.code)
        return w.err.code;
    if (a->progress)
        a->progress(a->size, a->size, a->progress_arg);
    if (etag_out)
        snprintf(etag_out, S3_ETAG_MAX, "%s", w.etag);
    return 0;
}

int s3_sync_put(s3_sync *s, const s3_sync_put_args *a, char *etag_out, s3_error *err)
{
    memset(err, 0, sizeof(*err));
    uint64_t part = a->part_size ? a->part_size : S3__DEFAULT_PART;
    if (part < 5ull * 1024 * 1024)
        part = 5ull * 1024 * 1024; /* S3's minimum for every part but the last */
    if (a->size <= part)
        return s3__put_single(s, a, etag_out, err);
    if ((a->size + part - 1) / part > 10000) {
        err->code = -EFBIG;
        snprintf(err->message, sizeof(err->message),
                 "PUT s3://%s/%s: %llu bytes need more than 10000 parts of %llu bytes; use a "
                 "larger part size",
                 a->bucket, a->key, (unsigned long long)a->size, (unsigned long long)part);
        return -EFBIG;
    }

    s3__create_wait cw = {0};
    int rc = s3_mpu_create(s->client, a->bucket, a->key, s3__create_cb, &cw);
    if (rc < 0) {
        s3__submit_failed(err, "CreateMultipartUpload", a->bucket, a->key, rc);
        return rc;
    }
    s3__run_until(s, &cw.done);
    if (cw.err.code) {
        *err = cw.err;
        free(cw.upload_id);
        return cw.err.code;
    }

    s3__mpu m = {0};
    m.s = s;
    m.a = a;
    m.upload_id = cw.upload_id;
    m.part_size = part;
    m.n_parts = (int)((a->size + part - 1) / part);
    m.next_part = 1;
    m.etags = calloc((size_t)m.n_parts, sizeof(char *));
    if (!m.etags)
        s3__mpu_fail(&m, -ENOMEM, "out of memory");
    else
        s3__mpu_launch(&m);
    while (m.inflight > 0)
        event_base_loop(s->base, EVLOOP_ONCE);

    if (!m.failed) {
        s3__put_wait w = {0};
        rc =
            s3_mpu_complete_cond(s->client, a->bucket, a->key, m.upload_id,
                                 (const char *const *)m.etags, m.n_parts, &a->cond, s3__put_cb, &w);
        if (rc < 0) {
            s3__mpu_fail(&m, rc, "cannot complete the upload");
        } else {
            s3__run_until(s, &w.done);
            if (w.err.code) {
                m.failed = true;
                m.err = w.err;
            } else if (etag_out) {
                snprintf(etag_out, S3_ETAG_MAX, "%s", w.etag);
            }
        }
    }
    if (m.failed) {
        /* leave nothing behind: abort the upload (its parts are deleted) */
        s3__done_wait aw = {0};
        if (s3_mpu_abort(s->client, a->bucket, a->key, m.upload_id, s3__done_cb, &aw) == 0)
            s3__run_until(s, &aw.done);
        *err = m.err;
        if (aw.err.code) {
            size_t n = strlen(err->message);
            snprintf(err->message + n, sizeof(err->message) - n,
                     "; the upload could not be aborted either (%d)", aw.err.http_status);
        }
    }
    for (int i = 0; m.etags && i < m.n_parts; i++)
        free(m.etags[i]);
    free(m.etags);
    free(m.upload_id);
    return m.failed ? (m.err.code ? m.err.code : -EIO) : 0;
}

/* ---- DELETE -------------------------------------------------------------- */

int s3_sync_delete(s3_sync *s, const char *bucket, const char *key, s3_error *err)
{
    s3__done_wait w = {0};
    int rc = s3_delete(s->client, bucket, key, s3__done_cb, &w);
    if (rc < 0) {
        s3__submit_failed(err, "DELETE", bucket, key, rc);
        return rc;
    }
    s3__run_until(s, &w.done);
    *err = w.err;
    return w.err.code;
}
