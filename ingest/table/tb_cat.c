/* SPDX-License-Identifier: Apache-2.0
 *
 * tb_cat.c: what a long-lived process keeps of its tables between queries
 * (warehouse.h, tb_cat): the replayed state of each table's log at the
 * newest version seen, with the ETag of that version's object, and open
 * parts (their source, sizes and parsed footers). Log versions and parts are
 * immutable objects, so neither can go stale; a query lists the log from the
 * kept version on (tb__table_open_known) to see what others committed, and
 * pins what it finds -- or, when the warehouse allows it (tb_wh.reuse_ms), a
 * reader takes a state that a List showed to be the newest a moment ago as
 * it is.
 *
 * Both are chained hash tables under one mutex each. States are copied in
 * and out (a query gets a copy it owns: the lock is never held while S3 is
 * asked anything). Parts are shared by reference count and evicted in least
 * recently used order, beyond max_parts, when no query holds them.
 */
#include "errf.h"
#include "tb_int.h"
#include "warehouse.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT_BUCKETS 256

typedef struct cat_state {
    struct cat_state *next;
    char *key; /* "bucket/root" */
    tb_snapshot s;
    char etag[S3_ETAG_MAX];
    int64_t listed_ms; /* tb__mono_ms() of the List that showed s the newest; 0: none */
} cat_state;

struct tb_part_ref {
    struct tb_part_ref *next;                /* hash chain */
    struct tb_part_ref *lru_prev, *lru_next; /* most recent first */
    char *key;                               /* "bucket/object key" */
    tb_source_open_fn open;
    void *arg;
    rs_source *src;
    tp_reader *rd;
    int refs;
    size_t slot; /* its hash chain */
    tb_cat *cat;
};

struct tb_cat {
    pthread_mutex_t mu;
    cat_state *states[CAT_BUCKETS];
    bool probed; /* the store's conditional writes were checked once */
    pthread_mutex_t pmu;
    tb_part_ref *parts[CAT_BUCKETS];
    tb_part_ref *lru_head, *lru_tail;
    size_t n_parts, max_parts;
};

static size_t slot(const char *a, const char *b)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = a; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    h = (h ^ '/') * 1099511628211ull;
    for (const char *p = b; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return (size_t)(h % CAT_BUCKETS);
}

static bool key_is(const char *k, const char *a, const char *b)
{
    size_t n = strlen(a);
    return strncmp(k, a, n) == 0 && k[n] == '/' && strcmp(k + n + 1, b) == 0;
}

static char *key_make(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *k = malloc(na + nb + 2);
    if (k) {
        memcpy(k, a, na);
        k[na] = '/';
        memcpy(k + na + 1, b, nb + 1);
    }
    return k;
}

int tb_cat_create(tb_cat **out, size_t max_parts)
{
    tb_cat *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->pmu, NULL);
    c->max_parts = max_parts ? max_parts : TB_CAT_DEFAULT_PARTS;
    *out = c;
    return 0;
}

static void part_free(tb_part_ref *p)
{
    tp_reader_destroy(&p->rd);
    rs_destroy(&p->src);
    free(p->key);
    free(p);
}

void tb_cat_destroy(tb_cat **cp)
{
    if (!cp || !*cp)
        return;
    tb_cat *c = *cp;
    for (size_t i = 0; i < CAT_BUCKETS; i++) {
        for (cat_state *e = c->states[i], *n; e; e = n) {
            n = e->next;
            tb__snapshot_deinit(&e->s);
            free(e->key);
            free(e);
        }
        for (tb_part_ref *p = c->parts[i], *n; p; p = n) {
            n = p->next;
            assert(p->refs == 0); /* every query released its parts */
            part_free(p);
        }
    }
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->pmu);
    free(c);
    *cp = NULL;
}

/* ---- table states ----------------------------------------------------------------- */

static cat_state *state_find_locked(tb_cat *c, const char *bucket, const char *root)
{
    for (cat_state *e = c->states[slot(bucket, root)]; e; e = e->next)
        if (key_is(e->key, bucket, root))
            return e;
    return NULL;
}

int tb__cat_get(tb_cat *c, const char *bucket, const char *root, tb_snapshot **out,
                char etag[S3_ETAG_MAX], int64_t *listed_ms)
{
    *listed_ms = 0;
    *out = NULL;
    tb_snapshot *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    pthread_mutex_lock(&c->mu);
    cat_state *e = state_find_locked(c, bucket, root);
    int rc = e ? tb__snapshot_copy(s, &e->s) : -ENOENT;
    if (e) {
        snprintf(etag, S3_ETAG_MAX, "%s", e->etag);
        *listed_ms = e->listed_ms;
    }
    pthread_mutex_unlock(&c->mu);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* Whether s would replace entry e (locked). */
static bool newer(const cat_state *e, const tb_snapshot *s, const char *etag, bool force)
{
    if (!e || force)
        return true;
    if (s->version != e->s.version)
        return s->version > e->s.version;
    return etag[0] && strcmp(etag, e->etag) != 0;
}

void tb__cat_publish(tb_cat *c, const char *bucket, const char *root, const tb_snapshot *s,
                     const char *etag, int64_t listed_ms, bool force)
{
    if (!s->schema.cols)
        return;
    pthread_mutex_lock(&c->mu);
    cat_state *e = state_find_locked(c, bucket, root);
    bool want = newer(e, s, etag, force);
    if (!want && e->s.version == s->version && listed_ms > e->listed_ms &&
        (!etag[0] || !e->etag[0] || strcmp(etag, e->etag) == 0))
        e->listed_ms = listed_ms; /* the same state, seen the newest later */
    pthread_mutex_unlock(&c->mu);
    if (!want)
        return;
    /* the copy is made outside the lock; a racing publisher of a newer state
     * wins below */
    cat_state *n = calloc(1, sizeof(*n));
    if (!n || !(n->key = key_make(bucket, root)) || tb__snapshot_copy(&n->s, s) < 0) {
        if (n)
            free(n->key);
        free(n);
        return; /* only a saving is lost */
    }
    snprintf(n->etag, sizeof(n->etag), "%s", etag);
    n->listed_ms = listed_ms;
    pthread_mutex_lock(&c->mu);
    cat_state **pp = &c->states[slot(bucket, root)];
    while (*pp && !key_is((*pp)->key, bucket, root))
        pp = &(*pp)->next;
    cat_state *old = *pp;
    if (newer(old, s, etag, force)) {
        n->next = old ? old->next : NULL;
        *pp = n;
        if (!old)
            n->next = NULL;
        n = old;
    }
    pthread_mutex_unlock(&c->mu);
    if (n) {
        tb__snapshot_deinit(&n->s);
        free(n->key);
        free(n);
    }
}

void tb__cat_forget(tb_cat *c, const char *bucket, const char *root)
{
    pthread_mutex_lock(&c->mu);
    cat_state **pp = &c->states[slot(bucket, root)];
    while (*pp && !key_is((*pp)->key, bucket, root))
        pp = &(*pp)->next;
    cat_state *old = *pp;
    if (old)
        *pp = old->next;
    pthread_mutex_unlock(&c->mu);
    if (old) {
        tb__snapshot_deinit(&old->s);
        free(old->key);
        free(old);
    }
}

void tb_cat_expire(tb_cat *c)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < CAT_BUCKETS; i++)
        for (cat_state *e = c->states[i]; e; e = e->next)
            e->listed_ms = 0;
    pthread_mutex_unlock(&c->mu);
}

bool tb__cat_probed(tb_cat *c)
{
    pthread_mutex_lock(&c->mu);
    bool p = c->probed;
    pthread_mutex_unlock(&c->mu);
    return p;
}

void tb__cat_set_probed(tb_cat *c)
{
    pthread_mutex_lock(&c->mu);
    c->probed = true;
    pthread_mutex_unlock(&c->mu);
}

/* ---- open parts ------------------------------------------------------------------- */

static void lru_unlink_locked(tb_cat *c, tb_part_ref *p)
{
    if (p->lru_prev)
        p->lru_prev->lru_next = p->lru_next;
    else
        c->lru_head = p->lru_next;
    if (p->lru_next)
        p->lru_next->lru_prev = p->lru_prev;
    else
        c->lru_tail = p->lru_prev;
    p->lru_prev = p->lru_next = NULL;
}

static void lru_front_locked(tb_cat *c, tb_part_ref *p)
{
    p->lru_next = c->lru_head;
    p->lru_prev = NULL;
    if (c->lru_head)
        c->lru_head->lru_prev = p;
    c->lru_head = p;
    if (!c->lru_tail)
        c->lru_tail = p;
}

static tb_part_ref *part_find_locked(tb_cat *c, const char *bucket, const char *key,
                                     tb_source_open_fn open, void *arg)
{
    for (tb_part_ref *p = c->parts[slot(bucket, key)]; p; p = p->next)
        if (p->open == open && p->arg == arg && key_is(p->key, bucket, key))
            return p;
    return NULL;
}

/* Unlinks unused parts from the LRU end while over the bound; returns them
 * chained by next, to free outside the lock. */
static tb_part_ref *evict_locked(tb_cat *c)
{
    tb_part_ref *dead = NULL;
    for (tb_part_ref *p = c->lru_tail; p && c->n_parts > c->max_parts;) {
        tb_part_ref *prev = p->lru_prev;
        if (p->refs == 0) {
            tb_part_ref **pp = &c->parts[p->slot];
            while (*pp && *pp != p)
                pp = &(*pp)->next;
            if (*pp)
                *pp = p->next;
            lru_unlink_locked(c, p);
            c->n_parts--;
            p->next = dead;
            dead = p;
        }
        p = prev;
    }
    return dead;
}

static int part_open(tb_cat *c, const tb_table *t, const char *name, const tb_part *known,
                     tb_source_open_fn open, void *arg, tb_part_ref **out, rs_source **src,
                     tp_reader **r, char *err, size_t errlen);

int tb_cat_part_open(tb_cat *c, const tb_table *t, const char *name, tb_source_open_fn open,
                     void *arg, tb_part_ref **out, rs_source **src, tp_reader **r, char *err,
                     size_t errlen)
{
    return part_open(c, t, name, NULL, open, arg, out, src, r, err, errlen);
}

int tb_cat_part_open_known(tb_cat *c, const tb_table *t, const tb_part *p, tb_part_ref **out,
                           rs_source **src, tp_reader **r, char *err, size_t errlen)
{
    return part_open(c, t, p->name, tb_part_known(t, p) ? p : NULL, NULL, NULL, out, src, r, err,
                     errlen);
}

static int part_open(tb_cat *c, const tb_table *t, const char *name, const tb_part *known,
                     tb_source_open_fn open, void *arg, tb_part_ref **out, rs_source **src,
                     tp_reader **r, char *err, size_t errlen)
{
    *out = NULL;
    *src = NULL;
    *r = NULL;
    char key[1100];
    if (tb_part_key(t, name, key, sizeof(key)) < 0)
        return errf_fail(err, errlen, -EINVAL, "part name %s is too long", name);
    const char *bucket = tb_table_bucket(t);
    if (!open) { /* the table's part I/O: the same for every table of a warehouse */
        const tb_io *io = tb__table_io(t);
        open = io->open;
        arg = io->open ? io->open_arg : NULL;
    }
    pthread_mutex_lock(&c->pmu);
    tb_part_ref *p = part_find_locked(c, bucket, key, open, arg);
    if (p) {
        p->refs++;
        lru_unlink_locked(c, p);
        lru_front_locked(c, p);
    }
    pthread_mutex_unlock(&c->pmu);
    if (!p) {
        tb_part_ref *n = calloc(1, sizeof(*n));
        if (!n || !(n->key = key_make(bucket, key))) {
            free(n);
            return errf_fail(err, errlen, -ENOMEM, "out of memory");
        }
        n->open = open;
        n->arg = arg;
        n->cat = c;
        int rc = known  ? tb_part_open_known(t, known, &n->src, &n->rd, err, errlen)
                 : open ? tb_part_open_via(t, name, open, arg, &n->src, &n->rd, err, errlen)
                        : tb_part_open(t, name, &n->src, &n->rd, err, errlen);
        if (rc < 0) {
            part_free(n);
            return rc;
        }
        pthread_mutex_lock(&c->pmu);
        p = part_find_locked(c, bucket, key, open, arg);
        if (p) { /* another query opened it meanwhile: share that one */
            p->refs++;
        } else {
            p = n;
            n = NULL;
            p->refs = 1;
            p->slot = slot(bucket, key);
            tb_part_ref **head = &c->parts[p->slot];
            p->next = *head;
            *head = p;
            lru_front_locked(c, p);
            c->n_parts++;
        }
        tb_part_ref *dead = evict_locked(c);
        pthread_mutex_unlock(&c->pmu);
        if (n)
            part_free(n);
        while (dead) {
            tb_part_ref *next = dead->next;
            part_free(dead);
            dead = next;
        }
    }
    *out = p;
    *src = p->src;
    *r = p->rd;
    return 0;
}

void tb_part_release(tb_part_ref **pp)
{
    if (!pp || !*pp)
        return;
    tb_part_ref *p = *pp;
    tb_cat *c = p->cat;
    pthread_mutex_lock(&c->pmu);
    assert(p->refs > 0);
    p->refs--;
    tb_part_ref *dead = evict_locked(c);
    pthread_mutex_unlock(&c->pmu);
    while (dead) {
        tb_part_ref *next = dead->next;
        part_free(dead);
        dead = next;
    }
    *pp = NULL;
}

size_t tb_cat_parts(tb_cat *c)
{
    pthread_mutex_lock(&c->pmu);
    size_t n = c->n_parts;
    pthread_mutex_unlock(&c->pmu);
    return n;
}
