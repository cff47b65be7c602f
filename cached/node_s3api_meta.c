/* SPDX-License-Identifier: Apache-2.0
 *
 * node_s3api_meta.c: the two tables the S3 API's workers share
 * (node_s3api.h), one mutex each.
 *
 * The version cache: (tenant, bucket, key) -> size, ETag, Last-Modified as
 * S3's HEAD said them, trusted for --s3-api-meta-ttl. A GET is pinned to the
 * version it finds here, so ranged GETs of one download (awscli sends one
 * per 8 MiB) cost S3 one HEAD, not one each. Direct-mapped: a slot per hash,
 * a colliding entry replaces the older (a lost entry costs one HEAD), so the
 * table never grows.
 *
 * The staged uploads: multipart uploads created through this node, and the
 * parts of them this node received, each in an unlinked file of the data
 * folder, until the upload is completed (its blocks are then placed from
 * them), aborted, or idle for a day. At most --s3-api-staging-max bytes are
 * kept: a part past it is not kept, and its blocks are filled on first read.
 *
 * The sequential reads: (tenant, bucket, key, version) -> the block the next
 * GET of a client reading it range after range would start at, direct-mapped
 * as the version cache; and the read-ahead bytes every GET of the node holds
 * (atomics: --s3-api-readahead-max, and the highest it reached).
 */
#include "node_s3api.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#define META_SLOTS     16384
#define SEQ_SLOTS      1024
#define SEQ_IDLE_MS    10000 /* a read not continued for this long is forgotten */
#define UPLOAD_IDLE_MS (24 * 3600 * 1000LL)

typedef struct meta_slot {
    char *name; /* tenant \0 bucket \0 key, malloc'd; NULL: empty */
    size_t len;
    ns3_meta m;
    int64_t expires_ms;
} meta_slot;

typedef struct seq_slot {
    uint64_t hash; /* of tenant, bucket, key, version; 0: empty */
    uint64_t first, next;
    int64_t last_ms;
} seq_slot;

struct ns3_tables {
    pthread_mutex_t seq_lock;
    seq_slot seq[SEQ_SLOTS];
    _Atomic int64_t ra_bytes, ra_peak;
    pthread_mutex_t meta_lock;
    meta_slot *slots;
    pthread_mutex_t stage_lock;
    ns3_upload **ups;
    size_t n_ups, cap_ups;
    uint64_t staged_bytes;
};

int ns3_meta_setup(node *n)
{
    struct ns3_tables *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->slots = calloc(META_SLOTS, sizeof(*t->slots));
    if (!t->slots) {
        free(t);
        return -ENOMEM;
    }
    pthread_mutex_init(&t->seq_lock, NULL);
    pthread_mutex_init(&t->meta_lock, NULL);
    pthread_mutex_init(&t->stage_lock, NULL);
    n->s3tables = t;
    return 0;
}

/* ---- the sequential reads and the read-ahead budget ---------------------------- */

bool ns3_seq_note(node *n, const bkey_object *obj, uint64_t first, uint64_t last)
{
    struct ns3_tables *t = n->s3tables;
    const char *parts[4] = {obj->tenant, obj->bucket, obj->key, obj->version};
    uint64_t h = 0;
    for (int i = 0; i < 4; i++)
        h = XXH3_64bits_withSeed(parts[i], strlen(parts[i]) + 1, h);
    h |= 1;
    int64_t now = ns3_now_ms();
    pthread_mutex_lock(&t->seq_lock);
    seq_slot *s = &t->seq[h % SEQ_SLOTS];
    bool hit =
        s->hash == h && now - s->last_ms < SEQ_IDLE_MS && first > s->first && first <= s->next;
    if (s->hash != h || now - s->last_ms >= SEQ_IDLE_MS) {
        s->hash = h;
        s->first = first;
        s->next = last + 1;
    } else if (last + 1 > s->next) {
        s->first = first;
        s->next = last + 1;
    }
    s->last_ms = now;
    pthread_mutex_unlock(&t->seq_lock);
    return hit;
}

bool ns3_ra_reserve(node *n, uint64_t bytes)
{
    struct ns3_tables *t = n->s3tables;
    int64_t max = n->conf.s3_api_readahead_max;
    int64_t cur = atomic_load(&t->ra_bytes);
    do {
        if (cur + (int64_t)bytes > max)
            return false;
    } while (!atomic_compare_exchange_weak(&t->ra_bytes, &cur, cur + (int64_t)bytes));
    int64_t now = cur + (int64_t)bytes, peak = atomic_load(&t->ra_peak);
    while (now > peak && !atomic_compare_exchange_weak(&t->ra_peak, &peak, now))
        ;
    return true;
}

void ns3_ra_release(node *n, uint64_t bytes)
{
    atomic_fetch_sub(&n->s3tables->ra_bytes, (int64_t)bytes);
}

int64_t ns3_ra_inflight(const node *n)
{
    return n->s3tables ? atomic_load(&n->s3tables->ra_bytes) : 0;
}

int64_t ns3_ra_peak(const node *n)
{
    return n->s3tables ? atomic_load(&n->s3tables->ra_peak) : 0;
}

void ns3_meta_teardown(node *n)
{
    struct ns3_tables *t = n->s3tables;
    if (!t)
        return;
    for (size_t i = 0; i < META_SLOTS; i++)
        free(t->slots[i].name);
    free(t->slots);
    for (size_t i = 0; i < t->n_ups; i++)
        ns3_upload_free(n, t->ups[i]);
    free(t->ups);
    pthread_mutex_destroy(&t->seq_lock);
    pthread_mutex_destroy(&t->meta_lock);
    pthread_mutex_destroy(&t->stage_lock);
    free(t);
    n->s3tables = NULL;
}

/* ---- the version cache ---------------------------------------------------------- */

static size_t meta_name(char *out, size_t cap, const char *tenant, const char *bucket,
                        const char *key)
{
    size_t a = strlen(tenant), b = strlen(bucket), c = strlen(key);
    if (a + b + c + 2 > cap)
        return 0;
    memcpy(out, tenant, a + 1);
    memcpy(out + a + 1, bucket, b + 1);
    memcpy(out + a + b + 2, key, c);
    return a + b + c + 2;
}

bool ns3_meta_get(node *n, const char *tenant, const char *bucket, const char *key, ns3_meta *m)
{
    struct ns3_tables *t = n->s3tables;
    if (!t || n->conf.s3_api_meta_ttl_ms <= 0)
        return false;
    char name[BKEY_TENANT_MAX + BKEY_BUCKET_MAX + BKEY_KEY_MAX + 8];
    size_t len = meta_name(name, sizeof(name), tenant, bucket, key);
    if (!len)
        return false;
    meta_slot *s = &t->slots[XXH3_64bits(name, len) % META_SLOTS];
    bool hit = false;
    pthread_mutex_lock(&t->meta_lock);
    if (s->name && s->len == len && memcmp(s->name, name, len) == 0 &&
        ns3_now_ms() < s->expires_ms) {
        *m = s->m;
        hit = true;
    }
    pthread_mutex_unlock(&t->meta_lock);
    return hit;
}

void ns3_meta_put(node *n, const char *tenant, const char *bucket, const char *key,
                  const ns3_meta *m)
{
    struct ns3_tables *t = n->s3tables;
    if (!t || n->conf.s3_api_meta_ttl_ms <= 0)
        return;
    char name[BKEY_TENANT_MAX + BKEY_BUCKET_MAX + BKEY_KEY_MAX + 8];
    size_t len = meta_name(name, sizeof(name), tenant, bucket, key);
    char *copy = len ? malloc(len) : NULL;
    if (!copy)
        return;
    memcpy(copy, name, len);
    meta_slot *s = &t->slots[XXH3_64bits(name, len) % META_SLOTS];
    pthread_mutex_lock(&t->meta_lock);
    char *old = s->name;
    s->name = copy;
    s->len = len;
    s->m = *m;
    s->expires_ms = ns3_now_ms() + n->conf.s3_api_meta_ttl_ms;
    pthread_mutex_unlock(&t->meta_lock);
    free(old);
}

void ns3_meta_forget(node *n, const char *tenant, const char *bucket, const char *key)
{
    struct ns3_tables *t = n->s3tables;
    if (!t)
        return;
    char name[BKEY_TENANT_MAX + BKEY_BUCKET_MAX + BKEY_KEY_MAX + 8];
    size_t len = meta_name(name, sizeof(name), tenant, bucket, key);
    if (!len)
        return;
    meta_slot *s = &t->slots[XXH3_64bits(name, len) % META_SLOTS];
    char *old = NULL;
    pthread_mutex_lock(&t->meta_lock);
    if (s->name && s->len == len && memcmp(s->name, name, len) == 0) {
        old = s->name;
        s->name = NULL;
    }
    pthread_mutex_unlock(&t->meta_lock);
    free(old);
}

/* ---- staged uploads ----------------------------------------------------------------- */

void ns3_upload_free(node *n, ns3_upload *u)
{
    (void)n;
    if (!u)
        return;
    for (size_t i = 0; i < u->n_parts; i++)
        if (u->parts[i].fd >= 0)
            close(u->parts[i].fd);
    free(u->parts);
    free(u);
}

/* The index of upload id, or -1. Under stage_lock. */
static ssize_t find_locked(struct ns3_tables *t, const char *id)
{
    for (size_t i = 0; i < t->n_ups; i++)
        if (strcmp(t->ups[i]->id, id) == 0)
            return (ssize_t)i;
    return -1;
}

static ns3_upload *remove_locked(struct ns3_tables *t, size_t i)
{
    ns3_upload *u = t->ups[i];
    t->ups[i] = t->ups[--t->n_ups];
    t->staged_bytes -= u->bytes;
    return u;
}

void ns3_stage_begin(node *n, const char *id, const char *tenant, const char *bucket,
                     const char *key)
{
    struct ns3_tables *t = n->s3tables;
    if (!t || n->conf.s3_api_staging_max <= 0 || strlen(id) >= sizeof(((ns3_upload *)0)->id))
        return;
    ns3_upload *u = calloc(1, sizeof(*u));
    if (!u)
        return;
    snprintf(u->id, sizeof(u->id), "%s", id);
    snprintf(u->tenant, sizeof(u->tenant), "%s", tenant);
    snprintf(u->bucket, sizeof(u->bucket), "%s", bucket);
    snprintf(u->key, sizeof(u->key), "%s", key);
    u->last_ms = ns3_now_ms();
    ns3_upload *idle[16];
    size_t n_idle = 0;
    pthread_mutex_lock(&t->stage_lock);
    /* uploads nobody finished for a day are let go */
    for (size_t i = 0; i < t->n_ups && n_idle < 16;)
        if (u->last_ms - t->ups[i]->last_ms > UPLOAD_IDLE_MS)
            idle[n_idle++] = remove_locked(t, i);
        else
            i++;
    if (t->n_ups == t->cap_ups) {
        size_t cap = t->cap_ups ? 2 * t->cap_ups : 16;
        ns3_upload **nu = realloc(t->ups, cap * sizeof(*nu));
        if (!nu) {
            pthread_mutex_unlock(&t->stage_lock);
            free(u);
            u = NULL;
            goto out;
        }
        t->ups = nu;
        t->cap_ups = cap;
    }
    t->ups[t->n_ups++] = u;
    pthread_mutex_unlock(&t->stage_lock);
out:
    for (size_t i = 0; i < n_idle; i++)
        ns3_upload_free(n, idle[i]);
}

void ns3_stage_part(node *n, const char *id, const ns3_part *p)
{
    struct ns3_tables *t = n->s3tables;
    int drop_fd = p->fd;
    if (!t)
        goto out;
    pthread_mutex_lock(&t->stage_lock);
    ssize_t i = find_locked(t, id);
    if (i >= 0 && t->staged_bytes + p->size <= (uint64_t)n->conf.s3_api_staging_max) {
        ns3_upload *u = t->ups[i];
        size_t k = 0;
        while (k < u->n_parts && u->parts[k].number < p->number)
            k++;
        if (k < u->n_parts && u->parts[k].number == p->number) {
            /* the part sent again: this one replaces it */
            drop_fd = u->parts[k].fd;
            u->bytes -= u->parts[k].size;
            t->staged_bytes -= u->parts[k].size;
            u->parts[k] = *p;
            u->bytes += p->size;
            t->staged_bytes += p->size;
        } else {
            if (u->n_parts == u->cap_parts) {
                size_t cap = u->cap_parts ? 2 * u->cap_parts : 16;
                ns3_part *np = realloc(u->parts, cap * sizeof(*np));
                if (np) {
                    u->parts = np;
                    u->cap_parts = cap;
                }
            }
            if (u->n_parts < u->cap_parts) {
                memmove(&u->parts[k + 1], &u->parts[k], (u->n_parts - k) * sizeof(*u->parts));
                u->parts[k] = *p;
                u->n_parts++;
                u->bytes += p->size;
                t->staged_bytes += p->size;
                drop_fd = -1;
            }
        }
        u->last_ms = ns3_now_ms();
    }
    pthread_mutex_unlock(&t->stage_lock);
out:
    if (drop_fd >= 0)
        close(drop_fd);
}

ns3_upload *ns3_stage_take(node *n, const char *id)
{
    struct ns3_tables *t = n->s3tables;
    if (!t)
        return NULL;
    pthread_mutex_lock(&t->stage_lock);
    ssize_t i = find_locked(t, id);
    ns3_upload *u = i >= 0 ? remove_locked(t, (size_t)i) : NULL;
    pthread_mutex_unlock(&t->stage_lock);
    return u;
}

void ns3_stage_drop(node *n, const char *id)
{
    ns3_upload_free(n, ns3_stage_take(n, id));
}
