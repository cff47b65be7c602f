/* SPDX-License-Identifier: Apache-2.0
 *
 * tb_s3.c: blocking S3 calls for the table layer over the asynchronous client
 * (s3.h) on a private event loop: conditional PUT, GET of a whole small
 * object, List by start-after (the log's "what is after version v"), DELETE
 * and the multipart primitives a streaming part upload needs. One tb__s3 per
 * thread.
 */
#include "tb_int.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

struct tb__s3 {
    struct event_base *base;
    s3_client *c;
    char *bucket;
};

int tb__s3_create(tb__s3 **out, const s3_config *cfg, const char *bucket)
{
    tb__s3 *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->base = event_base_new();
    s->bucket = strdup(bucket);
    int rc = s->base && s->bucket ? s3_client_create(&s->c, cfg, s->base) : -ENOMEM;
    if (rc < 0) {
        tb__s3_destroy(&s);
        return rc;
    }
    *out = s;
    return 0;
}

void tb__s3_destroy(tb__s3 **sp)
{
    if (!sp || !*sp)
        return;
    tb__s3 *s = *sp;
    s3_client_destroy(&s->c);
    if (s->base)
        event_base_free(s->base);
    free(s->bucket);
    free(s);
    *sp = NULL;
}

typedef struct {
    bool done;
    s3_error err;
    char etag[S3_ETAG_MAX];
    char *upload_id;
    tp__bytes body;
    size_t max;
    tb__list_fn fn;
    void *arg;
    int stop;
    char last[1100];
    bool truncated;
    size_t n;
} wait_t;

static void run(tb__s3 *s, wait_t *w)
{
    while (!w->done)
        event_base_loop(s->base, EVLOOP_ONCE);
}

static void submit_failed(s3_error *err, const char *op, const char *key, int rc)
{
    memset(err, 0, sizeof(*err));
    err->code = rc;
    snprintf(err->message, sizeof(err->message), "%s %s: cannot send the request: %s", op, key,
             strerror(-rc));
}

static void put_cb(const s3_error *err, const char *etag, void *arg)
{
    wait_t *w = arg;
    w->err = *err;
    if (etag)
        snprintf(w->etag, sizeof(w->etag), "%s", etag);
    w->done = true;
}

int tb__s3_put(tb__s3 *s, const char *key, const void *data, size_t len, const s3_write_cond *cond,
               s3_error *err)
{
    wait_t w = {0};
    int rc = s3_put_cond(s->c, s->bucket, key, data, len, cond, put_cb, &w);
    if (rc < 0) {
        submit_failed(err, "PUT", key, rc);
        return rc;
    }
    run(s, &w);
    *err = w.err;
    return w.err.code;
}

static int get_data(const void *data, size_t len, void *arg)
{
    wait_t *w = arg;
    if (w->body.len + len > w->max)
        return -EFBIG;
    return tp__bytes_add(&w->body, data, len);
}

typedef struct {
    wait_t w;
    int *left;
} many_t;

static void many_cb(const s3_error *err, const s3_get_result *res, void *arg)
{
    (void)res;
    many_t *m = arg;
    m->w.err = *err;
    m->w.done = true;
    (*m->left)--;
}

static int many_data(const void *data, size_t len, void *arg)
{
    return get_data(data, len, &((many_t *)arg)->w);
}

int tb__s3_get_many(tb__s3 *s, const char *const *keys, size_t n, char **bufs, size_t *lens,
                    size_t max, s3_error *err, size_t *failed)
{
    many_t *m = calloc(n ? n : 1, sizeof(*m));
    if (!m) {
        submit_failed(err, "GET", n ? keys[0] : "", -ENOMEM);
        *failed = 0;
        return -ENOMEM;
    }
    int left = 0, rc = 0;
    size_t i;
    for (i = 0; i < n; i++)
        bufs[i] = NULL;
    for (i = 0; i < n; i++) {
        m[i].w.max = max;
        m[i].left = &left;
        s3_get_args a = {
            .bucket = s->bucket, .key = keys[i], .on_data = many_data, .data_arg = &m[i]};
        rc = s3_get(s->c, &a, many_cb, &m[i]);
        if (rc < 0) {
            submit_failed(err, "GET", keys[i], rc);
            *failed = i;
            break;
        }
        left++;
    }
    while (left > 0) /* those sent finish (or fail) before the waits go away */
        event_base_loop(s->base, EVLOOP_ONCE);
    for (size_t j = 0; j < i && rc == 0; j++) {
        if (m[j].w.err.code || tp__bytes_u8(&m[j].w.body, 0) < 0) {
            *err = m[j].w.err;
            rc = m[j].w.err.code ? m[j].w.err.code : -ENOMEM;
            if (!m[j].w.err.code)
                submit_failed(err, "GET", keys[j], rc);
            *failed = j;
            break;
        }
        bufs[j] = (char *)m[j].w.body.p;
        lens[j] = m[j].w.body.len - 1;
        m[j].w.body.p = NULL;
    }
    for (size_t j = 0; j < n; j++)
        free(m[j].w.body.p);
    if (rc < 0)
        for (size_t j = 0; j < n; j++) {
            free(bufs[j]);
            bufs[j] = NULL;
        }
    free(m);
    return rc;
}

int tb__s3_get(tb__s3 *s, const char *key, char **buf, size_t *len, size_t max, s3_error *err)
{
    size_t failed;
    return tb__s3_get_many(s, &key, 1, buf, len, max, err, &failed);
}

static void list_cb(const s3_error *err, const s3_list_page *page, void *arg)
{
    wait_t *w = arg;
    w->err = *err;
    w->n = 0;
    w->truncated = false;
    if (!err->code && page) {
        for (size_t i = 0; i < page->n_objects && !w->stop; i++) {
            int rc = w->fn(&page->objects[i], w->arg);
            if (rc < 0)
                w->stop = rc;
        }
        w->n = page->n_objects;
        w->truncated = page->truncated;
        if (page->n_objects)
            snprintf(w->last, sizeof(w->last), "%s", page->objects[page->n_objects - 1].key);
    }
    w->done = true;
}

int tb__s3_list(tb__s3 *s, const char *prefix, const char *start_after, tb__list_fn fn, void *arg,
                s3_error *err)
{
    wait_t w = {0};
    w.fn = fn;
    w.arg = arg;
    snprintf(w.last, sizeof(w.last), "%s", start_after ? start_after : "");
    for (;;) {
        w.done = false;
        int rc = s3_list_from(s->c, s->bucket, prefix, w.last, 1000, list_cb, &w);
        if (rc < 0) {
            submit_failed(err, "LIST", prefix, rc);
            return rc;
        }
        run(s, &w);
        *err = w.err;
        if (w.err.code)
            return w.err.code;
        if (w.stop)
            return w.stop;
        if (!w.truncated || !w.n)
            return 0;
    }
}

static void done_cb(const s3_error *err, void *arg)
{
    wait_t *w = arg;
    w->err = *err;
    w->done = true;
}

int tb__s3_delete(tb__s3 *s, const char *key, s3_error *err)
{
    wait_t w = {0};
    int rc = s3_delete(s->c, s->bucket, key, done_cb, &w);
    if (rc < 0) {
        submit_failed(err, "DELETE", key, rc);
        return rc;
    }
    run(s, &w);
    *err = w.err;
    return w.err.code;
}

static void create_cb(const s3_error *err, const char *upload_id, void *arg)
{
    wait_t *w = arg;
    w->err = *err;
    if (upload_id)
        w->upload_id = strdup(upload_id);
    w->done = true;
}

int tb__s3_mpu_create(tb__s3 *s, const char *key, char **upload_id, s3_error *err)
{
    wait_t w = {0};
    int rc = s3_mpu_create(s->c, s->bucket, key, create_cb, &w);
    if (rc < 0) {
        submit_failed(err, "CreateMultipartUpload", key, rc);
        return rc;
    }
    run(s, &w);
    *err = w.err;
    if (!w.err.code && !w.upload_id) {
        err->code = -ENOMEM;
        return -ENOMEM;
    }
    *upload_id = w.upload_id;
    return w.err.code;
}

int tb__s3_mpu_part(tb__s3 *s, const char *key, const char *upload_id, int number, const void *data,
                    size_t len, char etag[S3_ETAG_MAX], s3_error *err)
{
    wait_t w = {0};
    int rc = s3_mpu_upload_part(s->c, s->bucket, key, upload_id, number, data, len, put_cb, &w);
    if (rc < 0) {
        submit_failed(err, "UploadPart", key, rc);
        return rc;
    }
    run(s, &w);
    *err = w.err;
    memcpy(etag, w.etag, S3_ETAG_MAX);
    return w.err.code;
}

int tb__s3_mpu_complete(tb__s3 *s, const char *key, const char *upload_id, const char *const *etags,
                        int n, const s3_write_cond *cond, s3_error *err)
{
    wait_t w = {0};
    int rc = s3_mpu_complete_cond(s->c, s->bucket, key, upload_id, etags, n, cond, put_cb, &w);
    if (rc < 0) {
        submit_failed(err, "CompleteMultipartUpload", key, rc);
        return rc;
    }
    run(s, &w);
    *err = w.err;
    return w.err.code;
}

int tb__s3_mpu_abort(tb__s3 *s, const char *key, const char *upload_id, s3_error *err)
{
    wait_t w = {0};
    int rc = s3_mpu_abort(s->c, s->bucket, key, upload_id, done_cb, &w);
    if (rc < 0) {
        submit_failed(err, "AbortMultipartUpload", key, rc);
        return rc;
    }
    run(s, &w);
    *err = w.err;
    return w.err.code;
}

void tb__random_hex(char out[33])
{
    uint8_t r[16];
    size_t got = 0;
    while (got < sizeof(r)) {
        ssize_t n = getrandom(r + got, sizeof(r) - got, 0);
        if (n > 0)
            got += (size_t)n;
    }
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
}
