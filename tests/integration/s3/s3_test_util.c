/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_test_util.c: helpers for the S3 client's integration tests (see the header).
 */
#include "s3_test_util.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void t_s3_config(s3_config *cfg, const char *endpoint, const char *access, const char *secret)
{
    s3_config_init(cfg);
    snprintf(cfg->endpoint, sizeof(cfg->endpoint), "%s", endpoint);
    snprintf(cfg->access_key, sizeof(cfg->access_key), "%s", access ? access : "S3RVER");
    snprintf(cfg->secret_key, sizeof(cfg->secret_key), "%s", secret ? secret : "S3RVER");
    snprintf(cfg->region, sizeof(cfg->region), "us-east-1");
    cfg->path_style = true;
    cfg->retry_base_ms = 5;
    cfg->retry_cap_ms = 50;
}

void t_fill(void *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    unsigned char *p = buf;
    for (size_t i = 0; i < len; i++) {
        if ((i & 7) == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        p[i] = (unsigned char)(x >> ((i & 7) * 8));
    }
}

void *t_alloc_data(size_t len, uint64_t seed)
{
    void *p = malloc(len ? len : 1);
    if (p)
        t_fill(p, len, seed);
    return p;
}

typedef struct {
    s3_client *c;
    const char *bucket, *prefix;
    int n, next, inflight, max, done, failed;
    const void *data;
    size_t size;
    char keys[64][256];
    int slot_used[64];
} t_put_state;

static void t_put_launch(t_put_state *st);

typedef struct {
    t_put_state *st;
    int slot;
} t_put_slot;

static t_put_slot t_slots[64];

static void t_put_done(const s3_error *err, const char *etag, void *arg)
{
    t_put_slot *sl = arg;
    t_put_state *st = sl->st;
    if (err->code) {
        fprintf(stderr, "t_put_many: %s\n", err->message);
        st->failed = err->code;
    }
    st->slot_used[sl->slot] = 0;
    st->inflight--;
    st->done++;
    t_put_launch(st);
}

static void t_put_launch(t_put_state *st)
{
    while (!st->failed && st->inflight < st->max && st->next < st->n) {
        int slot = 0;
        while (st->slot_used[slot])
            slot++;
        snprintf(st->keys[slot], sizeof(st->keys[slot]), "%s%05d", st->prefix, st->next);
        t_slots[slot] = (t_put_slot){st, slot};
        int rc = s3_put(st->c, st->bucket, st->keys[slot], st->data, st->size, t_put_done,
                        &t_slots[slot]);
        if (rc < 0) {
            st->failed = rc;
            return;
        }
        st->slot_used[slot] = 1;
        st->inflight++;
        st->next++;
    }
}

int t_put_many(const s3_config *cfg, const char *bucket, const char *prefix, int n, size_t size,
               int inflight)
{
    struct event_base *base = event_base_new();
    t_put_state st = {0};
    st.bucket = bucket;
    st.prefix = prefix;
    st.n = n;
    st.max = inflight > 64 ? 64 : inflight;
    st.size = size;
    void *data = t_alloc_data(size, 7);
    st.data = data;
    int rc = s3_client_create(&st.c, cfg, base);
    if (rc == 0) {
        t_put_launch(&st);
        while (st.inflight > 0)
            event_base_loop(base, EVLOOP_ONCE);
        rc = st.failed;
        s3_client_destroy(&st.c);
    }
    event_base_free(base);
    free(data);
    return rc;
}

int t_put_object(const s3_config *cfg, const char *bucket, const char *key, const void *data,
                 size_t len, char *etag)
{
    return t_put_object_parallel(cfg, bucket, key, data, len, 1, etag);
}

int t_put_object_parallel(const s3_config *cfg, const char *bucket, const char *key,
                          const void *data, size_t len, int parallel, char *etag)
{
    s3_sync *s;
    int rc = s3_sync_create(&s, cfg);
    if (rc < 0)
        return rc;
    s3_error err;
    char tag[S3_ETAG_MAX];
    s3_sync_put_args pa = {.bucket = bucket,
                           .key = key,
                           .fd = -1,
                           .data = data,
                           .size = len,
                           .part_size = 64u << 20,
                           .parallel = parallel};
    rc = s3_sync_put(s, &pa, etag ? etag : tag, &err);
    if (rc < 0)
        fprintf(stderr, "put %s/%s: %s\n", bucket, key, err.message);
    s3_sync_destroy(&s);
    return rc;
}

h_s3 *t_start_s3(h_env *env, int version)
{
    h_s3 *s3 = NULL;
    h_s3_opts o = {0};
    o.version = version;
    int rc = h_s3_start(env, &s3, &o);
    if (rc == -ENOPKG)
        h_skip(h_last_error());
    if (rc < 0) {
        fprintf(stderr, "cannot start s3rver %d: %s\n", version, h_last_error());
        exit(1);
    }
    return s3;
}

int t_s3_setup(h_env **env, h_s3 **s3, s3_config *cfg, const char *test_name, int version)
{
    if (h_env_create(env, test_name) < 0)
        return -1;
    *s3 = t_start_s3(*env, version);
    t_s3_config(cfg, h_s3_endpoint(*s3), NULL, NULL);
    return 0;
}

int t_s3_teardown(h_env **env, h_s3 *s3)
{
    int st = h_proc_stop(h_s3_proc(s3), 5000);
    h_env_destroy(env);
    return st == 0 || st == 128 + 15 ? 0 : -1;
}
