/* SPDX-License-Identifier: Apache-2.0
 *
 * tb_table.c: a table on S3 (protocol in table.h): the conditional-write
 * probe, opening (hint, one List, newest checkpoint, the versions after it),
 * catching up, the commit loop with writer ids and jittered retries, the
 * checkpoints, streaming part uploads, and the cleanup of removed and
 * orphaned parts.
 */
#include "errf.h"
#include "tb_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#define TB__MAX_LOG_OBJECT (256u << 20)

struct tb_table {
    tb_table_opts o;
    s3_config cfg;
    char *bucket, *root;
    tb__s3 *s3;
    tb_snapshot state;
    tb__put_hook_fn put_hook;
    void *put_hook_arg;
    tb_io io;
    tb_cat *cat;            /* shares the state with later opens (or NULL) */
    char etag[S3_ETAG_MAX]; /* of the state's version object, "" if unknown */
    int64_t listed_ms;      /* tb__mono_ms() before the last List that found the
                               state the newest (0: none); commits list first */
};

void tb_table_set_io(tb_table *t, const tb_io *io)
{
    if (io)
        t->io = *io;
    else
        memset(&t->io, 0, sizeof(t->io));
}

const tb_io *tb__table_io(const tb_table *t)
{
    return &t->io;
}

void tb__table_set_put_hook(tb_table *t, tb__put_hook_fn fn, void *arg)
{
    t->put_hook = fn;
    t->put_hook_arg = arg;
}

static int64_t now_ms(const tb_table_opts *o)
{
    if (o->clock)
        return o->clock(o->clock_arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tb__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void tkey(const tb_table *t, char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void tkey(const tb_table *t, char *buf, size_t cap, const char *fmt, ...)
{
    int n = snprintf(buf, cap, "%s/", t->root);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
}

static void version_key(const tb_table *t, uint64_t v, char *buf, size_t cap)
{
    tkey(t, buf, cap, "_log/%020llu.json", (unsigned long long)v);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0)
        ;
}

static uint32_t rand32(void)
{
    char h[33];
    tb__random_hex(h);
    return (uint32_t)strtoul(h + 24, NULL, 16);
}

/* ---- opening ------------------------------------------------------------------ */

static int table_new(tb_table **out, const tb_table_opts *o, char *err, size_t errlen)
{
    if (!o->bucket || !o->bucket[0] || !o->root || !o->root[0] || strlen(o->root) > 800 ||
        o->root[strlen(o->root) - 1] == '/')
        return errf_fail(err, errlen, -EINVAL,
                         "a table needs a bucket and a root folder without a trailing '/'");
    tb_table *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->o = *o;
    t->cfg = o->s3;
    t->bucket = strdup(o->bucket);
    t->root = strdup(o->root);
    t->o.bucket = t->bucket;
    t->o.root = t->root;
    if (!t->o.checkpoint_interval)
        t->o.checkpoint_interval = TB_DEFAULT_CHECKPOINT_INTERVAL;
    if (!t->o.commit_retries)
        t->o.commit_retries = TB_DEFAULT_COMMIT_RETRIES;
    if (!t->o.dedup_window)
        t->o.dedup_window = TB_DEFAULT_DEDUP_WINDOW;
    if (!t->o.dedup_window_seconds)
        t->o.dedup_window_seconds = TB_DEFAULT_DEDUP_WINDOW_SECONDS;
    if (!t->o.old_parts_lifetime)
        t->o.old_parts_lifetime = TB_DEFAULT_OLD_PARTS_LIFETIME;
    t->state.schema.version_col = -1;
    int rc = t->bucket && t->root ? tb__s3_create(&t->s3, &t->cfg, t->bucket) : -ENOMEM;
    if (rc < 0) {
        tb_table_destroy(&t);
        return errf_fail(err, errlen, rc, "cannot set up the S3 client for table s3://%s/%s",
                         o->bucket, o->root);
    }
    *out = t;
    return 0;
}

void tb_table_destroy(tb_table **tp)
{
    if (!tp || !*tp)
        return;
    tb_table *t = *tp;
    if (t->cat)
        tb__cat_publish(t->cat, t->bucket, t->root, &t->state, t->etag, t->listed_ms, false);
    tb__snapshot_deinit(&t->state);
    tb__s3_destroy(&t->s3);
    free(t->bucket);
    free(t->root);
    free(t);
    *tp = NULL;
}

static int probe(tb_table *t, char *err, size_t errlen)
{
    char key[1024], hex[33];
    tb__random_hex(hex);
    tkey(t, key, sizeof(key), "_probe/%s", hex);
    s3_write_cond c = {.if_none_match = true};
    s3_error e;
    int rc = tb__s3_put(t->s3, key, "probe 1\n", 8, &c, &e);
    if (rc < 0)
        return errf_fail(err, errlen, rc, "cannot write to the table's store: %s", e.message);
    rc = tb__s3_put(t->s3, key, "probe 2\n", 8, &c, &e);
    s3_error de;
    tb__s3_delete(t->s3, key, &de);
    if (rc == 0)
        return errf_fail(err, errlen, -ENOTSUP,
                         "the S3 store at %s accepted a second write of s3://%s/%s with "
                         "If-None-Match: *, so it does not honour conditional writes, which the "
                         "table's commit log needs to let exactly one writer take each version; "
                         "use a store that does (AWS S3, MinIO, Cloudflare R2)",
                         t->cfg.endpoint[0] ? t->cfg.endpoint : "AWS", t->bucket, key);
    if (rc != -EEXIST)
        return errf_fail(err, errlen, rc, "cannot probe the store's conditional writes: %s",
                         e.message);
    return 0;
}

typedef struct {
    const char *prefix;
    size_t plen;
    uint64_t *versions;
    size_t n, cap;
    bool have_ckpt;
    uint64_t ckpt;
    char first_etag[S3_ETAG_MAX], last_etag[S3_ETAG_MAX]; /* of versions[0], [n - 1] */
    int64_t listed_ms; /* tb__mono_ms() before the List was sent */
    int rc;
} log_list;

static int list_log_cb(const s3_object_info *o, void *arg)
{
    log_list *l = arg;
    const char *k = o->key;
    if (strncmp(k, l->prefix, l->plen) != 0)
        return 0;
    k += l->plen;
    if (strspn(k, "0123456789") != 20)
        return 0;
    uint64_t v = strtoull(k, NULL, 10);
    if (strcmp(k + 20, ".checkpoint.json") == 0) {
        if (!l->have_ckpt || v > l->ckpt)
            l->ckpt = v;
        l->have_ckpt = true;
        return 0;
    }
    if (strcmp(k + 20, ".json") != 0)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        uint64_t *p = realloc(l->versions, cap * sizeof(uint64_t));
        if (!p)
            return l->rc = -ENOMEM;
        l->versions = p;
        l->cap = cap;
    }
    if (!l->n)
        snprintf(l->first_etag, sizeof(l->first_etag), "%s", o->etag);
    snprintf(l->last_etag, sizeof(l->last_etag), "%s", o->etag);
    l->versions[l->n++] = v;
    return 0;
}

/* Parses a checkpoint object into t->state. */
static int apply_checkpoint(tb_table *t, const char *key, uint64_t ckpt, const char *buf,
                            size_t len, char *err, size_t errlen)
{
    char msg[256];
    int rc = tb__checkpoint_parse(buf, len, &t->state, msg, sizeof(msg));
    if (rc == 0 && t->state.version != ckpt)
        rc = errf_fail(msg, sizeof(msg), -EBADMSG, "it holds version %llu",
                       (unsigned long long)t->state.version);
    if (rc < 0) {
        tb__snapshot_deinit(&t->state);
        return errf_fail(err, errlen, rc, "checkpoint s3://%s/%s is damaged: %s", t->bucket, key,
                         msg);
    }
    return 0;
}

/* Parses log version v and applies it to t->state. */
static int apply_version(tb_table *t, const char *key, uint64_t v, const char *buf, size_t len,
                         char *err, size_t errlen)
{
    tb__version ver;
    char msg[256];
    int rc = tb__version_parse(buf, len, &ver, msg, sizeof(msg));
    if (rc == 0 && ver.version != v) {
        tb__version_free(&ver);
        rc = errf_fail(msg, sizeof(msg), -EBADMSG, "it says it is version %llu",
                       (unsigned long long)ver.version);
    }
    if (rc < 0)
        return errf_fail(err, errlen, rc, "log object s3://%s/%s is damaged: %s", t->bucket, key,
                         msg);
    rc = tb__apply(&t->state, &ver, t->o.dedup_window, t->o.dedup_window_seconds, msg,
                   sizeof(msg));
    tb__version_free(&ver);
    if (rc < 0)
        return errf_fail(err, errlen, rc, "table s3://%s/%s: %s", t->bucket, t->root, msg);
    return 0;
}

/* Log objects fetched at once: a checkpoint and the versions after it cost
 * one round trip per batch instead of one each. */
#define REPLAY_BATCH 32

/* Reads and applies the listing's versions from `from` on, in order; with
 * ckpt (the key of checkpoint from - 1), that checkpoint first, fetched in
 * the same round trip as the first versions. */
static int replay(tb_table *t, const log_list *l, uint64_t from, const char *ckpt, char *err,
                  size_t errlen)
{
    size_t first = 0;
    while (first < l->n && l->versions[first] < from)
        first++;
    for (size_t i = first; i < l->n; i++)
        if (l->versions[i] != from + (i - first))
            return errf_fail(err, errlen, -EBADMSG,
                             "the log of table s3://%s/%s misses version %llu (found %llu next)",
                             t->bucket, t->root, (unsigned long long)(from + (i - first)),
                             (unsigned long long)l->versions[i]);
    char keys[REPLAY_BATCH][1024];
    const char *kp[REPLAY_BATCH];
    char *bufs[REPLAY_BATCH];
    size_t lens[REPLAY_BATCH];
    size_t i = first;
    bool with_ckpt = ckpt != NULL;
    while (i < l->n || with_ckpt) {
        size_t n = 0;
        if (with_ckpt) {
            snprintf(keys[n], sizeof(keys[n]), "%s", ckpt);
            n++;
        }
        size_t v0 = i;
        for (; i < l->n && n < REPLAY_BATCH; i++, n++)
            version_key(t, l->versions[i], keys[n], sizeof(keys[n]));
        for (size_t j = 0; j < n; j++)
            kp[j] = keys[j];
        s3_error e;
        size_t bad = 0;
        int rc = tb__s3_get_many(t->s3, kp, n, bufs, lens, TB__MAX_LOG_OBJECT, &e, &bad);
        if (rc < 0) {
            if (with_ckpt && bad == 0)
                return errf_fail(err, errlen, rc, "cannot read checkpoint %llu: %s",
                                 (unsigned long long)(from - 1), e.message);
            return errf_fail(err, errlen, rc, "cannot read log version %llu: %s",
                             (unsigned long long)l->versions[v0 + bad - with_ckpt], e.message);
        }
        size_t j = 0;
        if (with_ckpt)
            rc = apply_checkpoint(t, keys[j], from - 1, bufs[j], lens[j], err, errlen), j++;
        for (; j < n && rc == 0; j++)
            rc = apply_version(t, keys[j], l->versions[v0 + j - with_ckpt], bufs[j], lens[j], err,
                               errlen);
        for (j = 0; j < n; j++)
            free(bufs[j]);
        if (rc < 0)
            return rc;
        with_ckpt = false;
    }
    if (l->n && t->state.version == l->versions[l->n - 1])
        snprintf(t->etag, sizeof(t->etag), "%s", l->last_etag);
    return 0;
}

static int load(tb_table *t, char *err, size_t errlen)
{
    char key[1024], prefix[1024], after[1024];
    s3_error e;
    char *buf = NULL;
    size_t len;
    bool have_hint = false;
    uint64_t hint = 0;
    tkey(t, key, sizeof(key), "_log/_last_checkpoint");
    int rc = tb__s3_get(t->s3, key, &buf, &len, 4096, &e);
    if (rc == 0) {
        tj_val j;
        const tj_val *v;
        if (tj_parse(buf, len, &j, NULL, 0) == 0 && (v = tj_get(&j, "version")) &&
            v->kind == TJ_INT && v->i >= 0) {
            have_hint = true;
            hint = (uint64_t)v->i;
        }
        tj_free(&j);
        free(buf);
    } else if (rc != -ENOENT) {
        return errf_fail(err, errlen, rc, "cannot open table s3://%s/%s: %s", t->bucket, t->root,
                         e.message);
    }
    tkey(t, prefix, sizeof(prefix), "_log/");
    if (have_hint)
        tkey(t, after, sizeof(after), "_log/%020llu", (unsigned long long)hint);
    else
        after[0] = 0;
    log_list l = {.prefix = prefix, .plen = strlen(prefix)};
    l.listed_ms = tb__mono_ms();
    rc = tb__s3_list(t->s3, prefix, after, list_log_cb, &l, &e);
    if (rc < 0 || l.rc < 0) {
        free(l.versions);
        return errf_fail(err, errlen, rc < 0 ? rc : l.rc,
                         "cannot list the log of table s3://%s/%s: %s", t->bucket, t->root,
                         rc < 0 ? e.message : "out of memory");
    }
    if (!l.n && !l.have_ckpt) {
        free(l.versions);
        return errf_fail(err, errlen, -ENOENT,
                         "there is no table at s3://%s/%s (its log %s has no version)", t->bucket,
                         t->root, prefix);
    }
    tb__snapshot_deinit(&t->state);
    t->state.schema.version_col = -1;
    t->etag[0] = 0;
    uint64_t from = 0;
    if (l.have_ckpt) {
        tkey(t, key, sizeof(key), "_log/%020llu.checkpoint.json", (unsigned long long)l.ckpt);
        from = l.ckpt + 1;
    } else if (have_hint) {
        free(l.versions);
        return errf_fail(err, errlen, -EBADMSG,
                         "table s3://%s/%s: checkpoint %llu named by _last_checkpoint is missing",
                         t->bucket, t->root, (unsigned long long)hint);
    }
    rc = replay(t, &l, from, l.have_ckpt ? key : NULL, err, errlen);
    free(l.versions);
    if (rc == 0 && !t->state.schema.cols)
        rc = errf_fail(err, errlen, -EBADMSG, "table s3://%s/%s has no version 0", t->bucket,
                       t->root);
    if (rc == 0)
        t->listed_ms = l.listed_ms;
    return rc;
}

int tb_table_open(tb_table **out, const tb_table_opts *o, char *err, size_t errlen)
{
    *out = NULL;
    tb_table *t = NULL;
    int rc = table_new(&t, o, err, errlen);
    if (rc < 0)
        return rc;
    if ((o->writer && (rc = probe(t, err, errlen)) < 0) || (rc = load(t, err, errlen)) < 0) {
        tb_table_destroy(&t);
        return rc;
    }
    *out = t;
    return 0;
}

/* Lists the table's log versions after the key `after` into *l (zeroed by
 * the caller), the log's prefix into prefix[cap], which l points at. 0, or
 * -errno with err filled and l's versions freed. */
static int list_log(tb_table *t, char *prefix, size_t cap, const char *after, log_list *l,
                    char *err, size_t errlen)
{
    tkey(t, prefix, cap, "_log/");
    l->prefix = prefix;
    l->plen = strlen(prefix);
    l->listed_ms = tb__mono_ms();
    s3_error e;
    int rc = tb__s3_list(t->s3, prefix, after, list_log_cb, l, &e);
    if (rc < 0 || l->rc < 0) {
        free(l->versions);
        l->versions = NULL;
        return errf_fail(err, errlen, rc < 0 ? rc : l->rc,
                         "cannot list the log of table s3://%s/%s: %s", t->bucket, t->root,
                         rc < 0 ? e.message : "out of memory");
    }
    return 0;
}

/* From a state known to be the table's at version N (a long-lived process
 * keeps it: log versions are immutable): one List of _log/ from N on. When
 * version N is still there with the ETag it had, only the newer versions are
 * read; when it is gone or another object (the table was dropped and made
 * again), or a checkpoint was written since, the log is read from scratch
 * (*reloaded). */
static int catch_up(tb_table *t, const char *etag, bool *reloaded, char *err, size_t errlen)
{
    char prefix[1024], after[1024];
    uint64_t n = t->state.version;
    tkey(t, after, sizeof(after), "_log/%020llu", (unsigned long long)n); /* N itself too */
    log_list l = {0};
    int rc = list_log(t, prefix, sizeof(prefix), after, &l, err, errlen);
    if (rc < 0)
        return rc;
    bool same = l.n && l.versions[0] == n && (!etag[0] || strcmp(etag, l.first_etag) == 0) &&
                !(l.have_ckpt && l.ckpt > n);
    if (!same) {
        free(l.versions);
        *reloaded = true;
        return load(t, err, errlen);
    }
    snprintf(t->etag, sizeof(t->etag), "%s", l.first_etag);
    rc = replay(t, &l, n + 1, NULL, err, errlen);
    free(l.versions);
    if (rc == 0)
        t->listed_ms = l.listed_ms;
    return rc;
}

int tb__table_open_known(tb_table **out, const tb_table_opts *o, const tb_snapshot *known,
                         const char *etag, int64_t listed_ms, bool reuse, bool probe_first,
                         tb_cat *cat, char *err, size_t errlen)
{
    *out = NULL;
    tb_table *t = NULL;
    int rc = table_new(&t, o, err, errlen);
    if (rc < 0)
        return rc;
    bool reloaded = !known;
    if (probe_first && (rc = probe(t, err, errlen)) < 0)
        goto fail;
    if (known) {
        tb__snapshot_deinit(&t->state);
        if ((rc = tb__snapshot_copy(&t->state, known)) < 0) {
            t->state.schema.version_col = -1;
            rc = errf_fail(err, errlen, -ENOMEM, "out of memory");
            goto fail;
        }
        if (reuse) {
            snprintf(t->etag, sizeof(t->etag), "%s", etag ? etag : "");
            t->listed_ms = listed_ms;
            rc = 0;
        } else {
            rc = catch_up(t, etag ? etag : "", &reloaded, err, errlen);
        }
    } else {
        rc = load(t, err, errlen);
    }
    if (rc < 0)
        goto fail;
    t->cat = cat;
    if (cat)
        tb__cat_publish(cat, t->bucket, t->root, &t->state, t->etag, t->listed_ms, reloaded);
    *out = t;
    return 0;
fail:
    tb_table_destroy(&t);
    return rc;
}

int tb_table_refresh(tb_table *t, char *err, size_t errlen)
{
    char prefix[1024], after[1024];
    version_key(t, t->state.version, after, sizeof(after));
    log_list l = {0};
    int rc = list_log(t, prefix, sizeof(prefix), after, &l, err, errlen);
    if (rc < 0)
        return rc;
    rc = replay(t, &l, t->state.version + 1, NULL, err, errlen);
    free(l.versions);
    if (rc == 0)
        t->listed_ms = l.listed_ms;
    return rc;
}

int tb_table_snapshot(tb_table *t, tb_snapshot **out, char *err, size_t errlen)
{
    tb_snapshot *s = malloc(sizeof(*s));
    if (!s || tb__snapshot_copy(s, &t->state) < 0) {
        free(s);
        return errf_fail(err, errlen, -ENOMEM, "out of memory copying table s3://%s/%s's state",
                         t->bucket, t->root);
    }
    *out = s;
    return 0;
}

uint64_t tb_table_version(const tb_table *t)
{
    return t->state.version;
}
const char *tb_table_bucket(const tb_table *t)
{
    return t->bucket;
}
const s3_config *tb_table_s3(const tb_table *t)
{
    return &t->cfg;
}

int tb_part_key(const tb_table *t, const char *name, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s/data/%s.part", t->root, name);
    return n < 0 || (size_t)n >= cap ? -ENOSPC : 0;
}

void tb_block_id(const char *partition, const uint8_t data_hash[16], const char *token,
                 uint64_t seq, char out[TB_NAME_MAX])
{
    XXH128_hash_t h;
    if (token) {
        XXH3_state_t *st = XXH3_createState();
        char s[32];
        int n = snprintf(s, sizeof(s), "_%llu", (unsigned long long)seq);
        if (st) {
            XXH3_128bits_reset(st);
            XXH3_128bits_update(st, token, strlen(token));
            XXH3_128bits_update(st, s, (size_t)n);
            h = XXH3_128bits_digest(st);
            XXH3_freeState(st);
        } else {
            h = XXH3_128bits(token, strlen(token));
            h.low64 ^= seq;
        }
    } else {
        h = XXH3_128bits(data_hash, 16);
    }
    snprintf(out, TB_NAME_MAX, "%.63s_%016llx%016llx", partition, (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

/* ---- creating ----------------------------------------------------------------- */

static int schema_check(const tb_schema *s, char *err, size_t errlen)
{
    if (!s->n_cols || s->n_cols > TP_MAX_COLUMNS || !s->cols)
        return errf_fail(err, errlen, -EINVAL, "a table needs 1 to %d columns", TP_MAX_COLUMNS);
    for (uint32_t i = 0; i < s->n_cols; i++) {
        if (!s->cols[i].name || !s->cols[i].name[0] || !tp__type_valid(&s->cols[i].info))
            return errf_fail(err, errlen, -EINVAL, "column %u needs a name and a known type", i);
        for (uint32_t k = 0; k < i; k++)
            if (strcmp(s->cols[k].name, s->cols[i].name) == 0)
                return errf_fail(err, errlen, -EINVAL, "column %s is named twice", s->cols[i].name);
    }
    for (uint32_t k = 0; k < s->n_key; k++)
        if (s->key_cols[k] >= s->n_cols || s->cols[s->key_cols[k]].nullable)
            return errf_fail(err, errlen, -EINVAL,
                             "ORDER BY entry %u must be a column that is not Nullable", k);
    if (s->version_col >= (int32_t)s->n_cols)
        return errf_fail(err, errlen, -EINVAL, "the version column is not a column");
    const char *eng = s->engine ? s->engine : "MergeTree";
    if (strcmp(eng, "MergeTree") && strcmp(eng, "ReplacingMergeTree"))
        return errf_fail(err, errlen, -EINVAL,
                         "engine %s is not supported (MergeTree and ReplacingMergeTree are)", eng);
    return 0;
}

int tb_table_create(const tb_table_opts *o, const tb_schema *schema, char *err, size_t errlen)
{
    int rc = schema_check(schema, err, errlen);
    if (rc < 0)
        return rc;
    tb_table *t = NULL;
    if ((rc = table_new(&t, o, err, errlen)) < 0)
        return rc;
    if ((rc = probe(t, err, errlen)) < 0) {
        tb_table_destroy(&t);
        return rc;
    }
    tb__version v = {0};
    tb__random_hex(v.writer);
    v.time_ms = now_ms(&t->o);
    v.has_schema = true;
    v.schema = *schema;
    if (!v.schema.engine)
        v.schema.engine = "MergeTree";
    if (!v.schema.schema_version)
        v.schema.schema_version = 1;
    if (!v.schema.index_granularity)
        v.schema.index_granularity = TP_DEFAULT_GRANULARITY;
    v.schema_version = v.schema.schema_version;
    tp__bytes b = {0};
    char key[1024];
    version_key(t, 0, key, sizeof(key));
    s3_write_cond c = {.if_none_match = true};
    s3_error e;
    rc = tb__version_write(&v, &b);
    if (!rc)
        rc = tb__s3_put(t->s3, key, b.p, b.len, &c, &e);
    free(b.p);
    if (rc == -EEXIST)
        errf_fail(err, errlen, rc, "table s3://%s/%s exists already", t->bucket, t->root);
    else if (rc < 0)
        errf_fail(err, errlen, rc, "cannot create table s3://%s/%s: %s", t->bucket, t->root,
                  rc == -ENOMEM ? "out of memory" : e.message);
    tb_table_destroy(&t);
    return rc;
}

/* ---- committing ---------------------------------------------------------------- */

static void write_checkpoint(tb_table *t)
{
    tp__bytes b = {0};
    if (tb__checkpoint_write(&t->state, &b) < 0) {
        free(b.p);
        return;
    }
    char key[1024];
    tkey(t, key, sizeof(key), "_log/%020llu.checkpoint.json", (unsigned long long)t->state.version);
    s3_write_cond c = {.if_none_match = true};
    s3_error e;
    int rc = tb__s3_put(t->s3, key, b.p, b.len, &c, &e);
    free(b.p);
    if (rc < 0 && rc != -EEXIST)
        return; /* best effort: readers replay a few more versions */
    char hint[64];
    int n =
        snprintf(hint, sizeof(hint), "{\"version\":%llu}\n", (unsigned long long)t->state.version);
    tkey(t, key, sizeof(key), "_log/_last_checkpoint");
    tb__s3_put(t->s3, key, hint, (size_t)n, NULL, &e);
}

static bool dedup_known(const tb_snapshot *s, const char *id)
{
    for (size_t i = s->n_dedup; i-- > 0;)
        if (strcmp(s->dedup[i].id, id) == 0)
            return true;
    return false;
}

static bool removed_known(const tb_snapshot *s, const char *name)
{
    for (size_t i = 0; i < s->n_removed; i++)
        if (strcmp(s->removed[i].name, name) == 0)
            return true;
    return false;
}

static int check_request(const tb_commit *c, char *err, size_t errlen)
{
    bool ok = c->kind == TB_COMMIT_INSERT     ? c->n_add >= 1 && !c->n_remove && !c->n_purge
              : c->kind == TB_COMMIT_MERGE    ? c->n_add == 1 && c->n_remove >= 1 && !c->n_purge
              : c->kind == TB_COMMIT_PURGE    ? !c->n_add && !c->n_remove && c->n_purge >= 1
              : c->kind == TB_COMMIT_TRUNCATE ? !c->n_add && !c->n_remove && !c->n_purge
                                              : false;
    if (!ok)
        return errf_fail(err, errlen, -EINVAL,
                         "a commit adds parts (insert), replaces inputs by one part (merge), "
                         "forgets removed parts (purge) or removes every part (truncate), not a "
                         "mix");
    for (size_t i = 0; i < c->n_add; i++) {
        const tb_part_add *a = &c->add[i];
        if (!a->name || !tb__name_ok(a->name) || !a->partition || !tb__name_ok(a->partition) ||
            strlen(a->partition) > 63 || !a->rows || !a->bytes ||
            (a->block_id && !tb__name_ok(a->block_id)))
            return errf_fail(err, errlen, -EINVAL,
                             "part %zu of the commit needs a name, a partition id of "
                             "[A-Za-z0-9_-], rows and bytes",
                             i);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(c->add[k].name, a->name))
                return errf_fail(err, errlen, -EINVAL, "the commit adds part %s twice", a->name);
    }
    for (size_t i = 0; i < c->n_remove; i++)
        if (!c->remove[i] || !tb__name_ok(c->remove[i]))
            return errf_fail(err, errlen, -EINVAL, "merge input %zu is not a part name", i);
    for (size_t i = 0; i < c->n_purge; i++)
        if (!c->purge[i] || !tb__name_ok(c->purge[i]))
            return errf_fail(err, errlen, -EINVAL, "purge entry %zu is not a part name", i);
    return 0;
}

/* Builds this attempt's version over the current state. 1: nothing to write. */
static int build(tb_table *t, const tb_commit *c, tb__version *v, char *err, size_t errlen)
{
    const tb_snapshot *s = &t->state;
    memset(v, 0, sizeof(*v));
    v->version = s->version + 1;
    tb__random_hex(v->writer);
    v->time_ms = now_ms(&t->o);
    if (v->time_ms < s->time_ms)
        v->time_ms = s->time_ms; /* keep log times monotone across clocks */
    v->kind = c->kind;
    v->schema_version = s->schema.schema_version ? s->schema.schema_version : 1;
    v->add = calloc(c->n_add + 1, sizeof(tb_part));
    v->dedup = calloc(c->n_add + 1, sizeof(tb_dedup_id));
    size_t n_remove = c->kind == TB_COMMIT_TRUNCATE ? s->n_parts : c->n_remove;
    v->remove = calloc(n_remove + 1, sizeof(char *));
    v->purge = calloc(c->n_purge + 1, sizeof(char *));
    if (!v->add || !v->dedup || !v->remove || !v->purge)
        return -ENOMEM;
    if (c->kind == TB_COMMIT_MERGE) {
        for (size_t i = 0; i < c->n_remove; i++)
            if (!tb_snapshot_part(s, c->remove[i]))
                return errf_fail(err, errlen, -ESTALE,
                                 "table s3://%s/%s: part %s, an input of the merge, is no longer "
                                 "active (a racing commit removed it); drop the merged part",
                                 t->bucket, t->root, c->remove[i]);
    }
    bool whole_dup = false;
    for (size_t i = 0; c->whole && i < c->n_add && !whole_dup; i++)
        whole_dup = c->add[i].block_id && dedup_known(s, c->add[i].block_id);
    for (size_t i = 0; i < c->n_add; i++) {
        const tb_part_add *a = &c->add[i];
        if (c->dup_out)
            c->dup_out[i] = 0;
        if (whole_dup) {
            if (c->dup_out)
                c->dup_out[i] = 1;
            continue;
        }
        if (a->block_id) {
            bool dup = dedup_known(s, a->block_id);
            for (size_t k = 0; k < v->n_dedup && !dup; k++)
                dup = !strcmp(v->dedup[k].id, a->block_id);
            if (dup) {
                if (c->dup_out)
                    c->dup_out[i] = 1;
                continue;
            }
            v->dedup[v->n_dedup].time_ms = v->time_ms;
            if (!(v->dedup[v->n_dedup].id = strdup(a->block_id)))
                return -ENOMEM;
            v->n_dedup++;
        }
        if (tb_snapshot_part(s, a->name))
            return errf_fail(err, errlen, -EINVAL, "part %s is in the table already", a->name);
        tb_part *p = &v->add[v->n_add];
        p->name = strdup(a->name);
        p->partition = strdup(a->partition);
        if (!p->name || !p->partition)
            return -ENOMEM;
        v->n_add++;
        p->rows = a->rows;
        p->bytes = a->bytes;
        p->granules = a->granules;
        p->compressed_bytes = a->compressed_bytes;
        p->uncompressed_bytes = a->uncompressed_bytes;
        if (a->etag && a->etag[0] && strlen(a->etag) < S3_ETAG_MAX && !(p->etag = strdup(a->etag)))
            return -ENOMEM;
        if (c->kind == TB_COMMIT_INSERT) {
            p->min_block = p->max_block = v->version;
            p->level = 0;
        } else {
            p->min_block = a->min_block;
            p->max_block = a->max_block < a->min_block ? a->min_block : a->max_block;
            p->level = a->level;
        }
    }
    for (size_t i = 0; i < n_remove; i++, v->n_remove++)
        if (!(v->remove[i] =
                  strdup(c->kind == TB_COMMIT_TRUNCATE ? s->parts[i].name : c->remove[i])))
            return -ENOMEM;
    for (size_t i = 0; i < c->n_purge; i++) {
        if (!removed_known(s, c->purge[i]))
            continue;
        if (!(v->purge[v->n_purge] = strdup(c->purge[i])))
            return -ENOMEM;
        v->n_purge++;
    }
    if (!v->n_add && !v->n_remove && !v->n_purge)
        return 1;
    return 0;
}

typedef struct {
    char (*ids)[33];
    size_t n, cap;
} attempts_t;

static bool mine(const attempts_t *a, const char *w)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->ids[i], w))
            return true;
    return false;
}

int tb_commit_run(tb_table *t, const tb_commit *c, tb_commit_result *res, char *err, size_t errlen)
{
    t->etag[0] = 0; /* the state moves on without a listing */
    tb_commit_result r = {0};
    int rc = check_request(c, err, errlen);
    if (rc < 0)
        return rc;
    attempts_t at = {0};
    char last[S3_MSG_MAX] = "";
    bool done = false;
    for (uint32_t try = 0; try < t->o.commit_retries && !done; try++) {
        done = true; /* every path but a retry ends the loop */
        if (try) {
            uint32_t cap = 10u << (try < 7 ? try : 7);
            sleep_ms((int)(rand32() % (cap + 1)));
        }
        if ((rc = tb_table_refresh(t, err, errlen)) < 0)
            break;
        tb__version v;
        rc = build(t, c, &v, err, errlen);
        if (rc != 0) {
            tb__version_free(&v);
            if (rc == 1) { /* nothing left: every block known, or nothing to purge */
                rc = 0;
                r.version = t->state.version;
            } else if (rc == -ENOMEM) {
                errf_fail(err, errlen, rc, "out of memory committing to table s3://%s/%s",
                          t->bucket, t->root);
            }
            break;
        }
        if (at.n == at.cap) {
            size_t cap = at.cap ? at.cap * 2 : 8;
            void *p = realloc(at.ids, cap * sizeof(*at.ids));
            if (!p) {
                tb__version_free(&v);
                rc = -ENOMEM;
                break;
            }
            at.ids = p;
            at.cap = cap;
        }
        memcpy(at.ids[at.n++], v.writer, 33);
        tp__bytes b = {0};
        char key[1024];
        version_key(t, v.version, key, sizeof(key));
        s3_write_cond cond = {.if_none_match = true};
        s3_error e;
        rc = tb__version_write(&v, &b);
        if (!rc) {
            rc = tb__s3_put(t->s3, key, b.p, b.len, &cond, &e);
            if (t->put_hook) {
                int hrc = t->put_hook(t->put_hook_arg, key, rc);
                if (hrc != rc && hrc < 0)
                    snprintf(e.message, sizeof(e.message), "PUT %.400s: %s (injected)", key,
                             strerror(-hrc));
                rc = hrc;
            }
            r.attempts++;
        }
        free(b.p);
        if (rc == 0) {
            char msg[256];
            rc = tb__apply(&t->state, &v, t->o.dedup_window, t->o.dedup_window_seconds, msg,
                           sizeof(msg));
            r.version = v.version;
            r.n_added = v.n_add;
            tb__version_free(&v);
            if (rc < 0) {
                errf_fail(err, errlen, rc, "table s3://%s/%s: %s", t->bucket, t->root, msg);
                break;
            }
            if (t->state.version % t->o.checkpoint_interval == 0)
                write_checkpoint(t);
            break;
        }
        tb__version_free(&v);
        if (rc == -ENOMEM)
            break;
        snprintf(last, sizeof(last), "%s", e.message);
        /* 412, or no clear answer (timeout, reset, 5xx after the client's own
         * retries): look at what is there now */
        char *got;
        size_t len;
        s3_error ge;
        int grc = tb__s3_get(t->s3, key, &got, &len, TB__MAX_LOG_OBJECT, &ge);
        if (grc == -ENOENT) {
            /* nothing there (yet): retry. An attempt of ours that is still in
             * flight can only land at this same version, which the retry
             * targets again while the log has not moved; if it lands first,
             * the retry's 412 finds our writer id there. */
            rc = -EBUSY;
            done = false;
            continue;
        }
        if (grc < 0) {
            rc = errf_fail(err, errlen, grc,
                           "table s3://%s/%s: the commit of version %s may or may not have "
                           "landed, and reading it back failed: %s",
                           t->bucket, t->root, key, ge.message);
            break;
        }
        tb__version lv;
        char msg[256];
        int prc = tb__version_parse(got, len, &lv, msg, sizeof(msg));
        free(got);
        if (prc < 0) {
            rc = errf_fail(err, errlen, prc, "log object s3://%s/%s is damaged: %s", t->bucket, key,
                           msg);
            break;
        }
        if (mine(&at, lv.writer)) {
            /* an attempt that timed out landed after all */
            rc = tb__apply(&t->state, &lv, t->o.dedup_window, t->o.dedup_window_seconds, msg,
                           sizeof(msg));
            r.version = lv.version;
            r.n_added = lv.n_add;
            r.landed_after_timeout = true;
            if (c->dup_out)
                for (size_t i = 0; i < c->n_add; i++) {
                    c->dup_out[i] = 1;
                    for (size_t k = 0; k < lv.n_add; k++)
                        if (!strcmp(lv.add[k].name, c->add[i].name))
                            c->dup_out[i] = 0;
                }
            tb__version_free(&lv);
            if (rc < 0)
                errf_fail(err, errlen, rc, "table s3://%s/%s: %s", t->bucket, t->root, msg);
            else if (t->state.version % t->o.checkpoint_interval == 0)
                write_checkpoint(t);
            break;
        }
        tb__version_free(&lv);
        rc = -EBUSY; /* lost the race: re-read and retry */
        done = false;
    }
    if (!done) {
        rc = -EBUSY;
        errf_fail(err, errlen, rc,
                  "table s3://%s/%s: gave up committing after %d attempts (other writers took "
                  "every version first, or the store failed: %s)",
                  t->bucket, t->root, r.attempts, last[0] ? last : "lost every race");
    }
    free(at.ids);
    if (res)
        *res = r;
    return rc;
}

/* ---- uploads -------------------------------------------------------------------- */

struct tb_upload {
    tb__s3 *s3;
    tb_io io; /* put: gathered in buf up to io.put_max, then put */
    char bucket[64];
    char key[1100];
    char name[TB_NAME_MAX];
    size_t part_size;
    tp__bytes buf;
    char *upload_id;
    char **etags;
    int n_parts, cap;
    uint64_t total;
    bool finished, failed;
    char err[S3_MSG_MAX + 64];
    char etag[S3_ETAG_MAX]; /* put_v told it */
};

int tb_upload_create(tb_upload **out, const tb_table *t, const char *partition, size_t part_size,
                     char *err, size_t errlen)
{
    *out = NULL;
    if (!partition || !tb__name_ok(partition) || strlen(partition) > 63)
        return errf_fail(err, errlen, -EINVAL,
                         "partition id \"%s\" must be 1 to 63 of [A-Za-z0-9_-]",
                         partition ? partition : "");
    tb_upload *u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    char hex[33];
    tb__random_hex(hex);
    snprintf(u->name, sizeof(u->name), "%s_%s", partition, hex);
    tb_part_key(t, u->name, u->key, sizeof(u->key));
    u->part_size = part_size ? part_size : 8u << 20;
    if (u->part_size < 5u << 20)
        u->part_size = 5u << 20;
    u->io = t->io;
    snprintf(u->bucket, sizeof(u->bucket), "%s", t->bucket);
    if (u->io.put && !u->io.put_max)
        u->io.put_max = 256u << 20;
    int rc = tb__s3_create(&u->s3, &t->cfg, t->bucket);
    if (rc < 0) {
        free(u);
        return errf_fail(err, errlen, rc, "cannot set up an S3 client for an upload");
    }
    *out = u;
    return 0;
}

const char *tb_upload_etag(const tb_upload *u)
{
    return u->etag;
}

const char *tb_upload_name(const tb_upload *u)
{
    return u->name;
}
size_t tb_upload_memory(const void *arg)
{
    const tb_upload *u = arg;
    return u->buf.cap;
}

const char *tb_upload_error(const tb_upload *u)
{
    return u->err;
}

static int upload_piece(tb_upload *u, const void *data, size_t len)
{
    s3_error e;
    int rc;
    if (!u->upload_id && (rc = tb__s3_mpu_create(u->s3, u->key, &u->upload_id, &e)) < 0) {
        snprintf(u->err, sizeof(u->err), "%s", e.message);
        return rc;
    }
    if (u->n_parts == u->cap) {
        int cap = u->cap ? u->cap * 2 : 16;
        char **p = realloc(u->etags, (size_t)cap * sizeof(char *));
        if (!p)
            return -ENOMEM;
        u->etags = p;
        u->cap = cap;
    }
    char etag[S3_ETAG_MAX];
    if (u->n_parts >= 10000) {
        snprintf(u->err, sizeof(u->err), "the part needs more than 10000 pieces of %zu bytes",
                 u->part_size);
        return -EFBIG;
    }
    rc = tb__s3_mpu_part(u->s3, u->key, u->upload_id, u->n_parts + 1, data, len, etag, &e);
    if (rc < 0) {
        snprintf(u->err, sizeof(u->err), "%s", e.message);
        return rc;
    }
    if (!(u->etags[u->n_parts] = strdup(etag)))
        return -ENOMEM;
    u->n_parts++;
    return 0;
}

int tb_upload_write(void *arg, const void *data, size_t len)
{
    tb_upload *u = arg;
    if (u->failed || u->finished)
        return -EINVAL;
    int rc = tp__bytes_add(&u->buf, data, len);
    u->total += len;
    if (u->io.put && u->total <= u->io.put_max)
        return rc; /* gathered whole for the put at finish */
    while (!rc && u->buf.len >= u->part_size) {
        rc = upload_piece(u, u->buf.p, u->part_size);
        if (!rc) {
            memmove(u->buf.p, u->buf.p + u->part_size, u->buf.len - u->part_size);
            u->buf.len -= u->part_size;
        }
    }
    if (rc < 0)
        u->failed = true;
    return rc;
}

int tb_upload_finish(tb_upload *u, uint64_t *size_out, char *err, size_t errlen)
{
    if (u->failed || u->finished)
        return errf_fail(err, errlen, -EINVAL, "upload of %s: %s", u->key,
                         u->failed ? u->err : "finished already");
    s3_write_cond c = {.if_none_match = true};
    s3_error e;
    int rc;
    e.message[0] = 0;
    if (!u->upload_id && u->io.put_v) {
        char v[S3_ETAG_MAX > 130 ? S3_ETAG_MAX : 130] = "";
        rc = u->io.put_v(u->io.put_arg, u->bucket, u->key, u->buf.p, u->buf.len, v, u->err,
                         sizeof(u->err));
        if (rc == 0 && strlen(v) < sizeof(u->etag))
            snprintf(u->etag, sizeof(u->etag), "%s", v);
    } else if (!u->upload_id && u->io.put) {
        rc = u->io.put(u->io.put_arg, u->bucket, u->key, u->buf.p, u->buf.len, u->err,
                       sizeof(u->err));
    } else if (!u->upload_id) {
        rc = tb__s3_put(u->s3, u->key, u->buf.p, u->buf.len, &c, &e);
    } else {
        rc = u->buf.len ? upload_piece(u, u->buf.p, u->buf.len) : 0;
        if (!rc)
            rc = tb__s3_mpu_complete(u->s3, u->key, u->upload_id, (const char *const *)u->etags,
                                     u->n_parts, &c, &e);
    }
    if (rc < 0) {
        u->failed = true;
        return errf_fail(err, errlen, rc, "cannot upload part object s3://%s: %s", u->key,
                         u->err[0] ? u->err : e.message);
    }
    u->finished = true;
    if (size_out)
        *size_out = u->total;
    free(u->buf.p);
    u->buf = (tp__bytes){0};
    return 0;
}

void tb_upload_destroy(tb_upload **up)
{
    if (!up || !*up)
        return;
    tb_upload *u = *up;
    if (u->upload_id && !u->finished) {
        s3_error e;
        tb__s3_mpu_abort(u->s3, u->key, u->upload_id, &e);
    }
    for (int i = 0; i < u->n_parts; i++)
        free(u->etags[i]);
    free(u->etags);
    free(u->upload_id);
    free(u->buf.p);
    tb__s3_destroy(&u->s3);
    free(u);
    *up = NULL;
}

/* ---- reading, deleting, cleanup ---------------------------------------------------- */

static int open_s3(void *arg, const char *bucket, const char *key, rs_source **out, char *err,
                   size_t errlen)
{
    return rs_s3_open(out, (const s3_config *)arg, bucket, key, err, errlen);
}

int tb_part_open_via(const tb_table *t, const char *name, tb_source_open_fn open, void *arg,
                     rs_source **src, tp_reader **r, char *err, size_t errlen)
{
    *src = NULL;
    *r = NULL;
    char key[1100];
    if (tb_part_key(t, name, key, sizeof(key)) < 0)
        return errf_fail(err, errlen, -EINVAL, "part name %s is too long", name);
    char msg[RS_MSG_MAX];
    int rc = open(arg, t->bucket, key, src, msg, sizeof(msg));
    if (rc < 0)
        return errf_fail(err, errlen, rc, "cannot open part %s: %s", name, msg);
    rc = tp_reader_open(r, *src, name, err, errlen);
    if (rc < 0)
        rs_destroy(src);
    return rc;
}

bool tb_part_known(const tb_table *t, const tb_part *p)
{
    return p->etag && p->etag[0] && t->io.open_known;
}

int tb_part_open_known(const tb_table *t, const tb_part *p, rs_source **src, tp_reader **r,
                       char *err, size_t errlen)
{
    if (!tb_part_known(t, p))
        return tb_part_open(t, p->name, src, r, err, errlen);
    *src = NULL;
    *r = NULL;
    char key[1100], msg[RS_MSG_MAX];
    if (tb_part_key(t, p->name, key, sizeof(key)) < 0)
        return errf_fail(err, errlen, -EINVAL, "part name %s is too long", p->name);
    int rc =
        t->io.open_known(t->io.open_arg, t->bucket, key, p->bytes, p->etag, src, msg, sizeof(msg));
    if (rc < 0)
        return errf_fail(err, errlen, rc, "cannot open part %s: %s", p->name, msg);
    rc = tp_reader_open(r, *src, p->name, err, errlen);
    if (rc < 0)
        rs_destroy(src);
    return rc;
}

int tb_part_open(const tb_table *t, const char *name, rs_source **src, tp_reader **r, char *err,
                 size_t errlen)
{
    if (t->io.open)
        return tb_part_open_via(t, name, t->io.open, t->io.open_arg, src, r, err, errlen);
    return tb_part_open_via(t, name, open_s3, (void *)&t->cfg, src, r, err, errlen);
}

int tb_part_delete(tb_table *t, const char *name, char *err, size_t errlen)
{
    char key[1100];
    if (tb_part_key(t, name, key, sizeof(key)) < 0)
        return errf_fail(err, errlen, -EINVAL, "part name %s is too long", name);
    s3_error e;
    int rc = tb__s3_delete(t->s3, key, &e);
    return rc < 0 ? errf_fail(err, errlen, rc, "%s", e.message) : 0;
}

typedef struct {
    tb_table *t;
    const char *prefix;
    size_t plen;
    int64_t now;
    char **keys; /* collected in the listing's callback, deleted after it:
                      no S3 call may run from inside the loop's callback */
    size_t n, cap;
    int rc;
} orphan_scan;

static int orphan_cb(const s3_object_info *o, void *arg)
{
    orphan_scan *s = arg;
    const char *k = o->key + s->plen;
    size_t n = strlen(k);
    if (strncmp(o->key, s->prefix, s->plen) != 0 || n < 6 || strcmp(k + n - 5, ".part") != 0)
        return 0;
    char name[TB_NAME_MAX];
    if (n - 5 >= sizeof(name))
        return 0;
    memcpy(name, k, n - 5);
    name[n - 5] = 0;
    if (tb_snapshot_part(&s->t->state, name) || removed_known(&s->t->state, name))
        return 0;
    if (o->last_modified * 1000 + (int64_t)s->t->o.old_parts_lifetime * 1000 > s->now)
        return 0; /* maybe a commit still under way */
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **p = realloc(s->keys, cap * sizeof(char *));
        if (!p)
            return s->rc = -ENOMEM;
        s->keys = p;
        s->cap = cap;
    }
    if (!(s->keys[s->n] = strdup(o->key)))
        return s->rc = -ENOMEM;
    s->n++;
    return 0;
}

int tb_cleanup(tb_table *t, bool orphans, tb_cleanup_result *res, char *err, size_t errlen)
{
    tb_cleanup_result r = {0};
    int rc = tb_table_refresh(t, err, errlen);
    if (rc < 0)
        return rc;
    int64_t now = now_ms(&t->o);
    size_t n = 0;
    char **purge = calloc(t->state.n_removed + 1, sizeof(char *));
    if (!purge)
        return -ENOMEM;
    for (size_t i = 0; i < t->state.n_removed && !rc; i++) {
        const tb_part *p = &t->state.removed[i];
        if (p->removed_ms + (int64_t)t->o.old_parts_lifetime * 1000 > now)
            continue;
        if ((rc = tb_part_delete(t, p->name, err, errlen)) < 0)
            break;
        if (!(purge[n++] = strdup(p->name)))
            rc = -ENOMEM;
    }
    r.deleted = n;
    if (!rc && n) {
        tb_commit c = {.kind = TB_COMMIT_PURGE, .purge = (const char *const *)purge, .n_purge = n};
        tb_commit_result cr;
        rc = tb_commit_run(t, &c, &cr, err, errlen);
        r.version = cr.version;
    }
    for (size_t i = 0; i < n; i++)
        free(purge[i]);
    free(purge);
    if (!rc && orphans) {
        char prefix[1100];
        tkey(t, prefix, sizeof(prefix), "data/");
        orphan_scan s = {.t = t, .prefix = prefix, .plen = strlen(prefix), .now = now};
        s3_error e;
        rc = tb__s3_list(t->s3, prefix, NULL, orphan_cb, &s, &e);
        if (rc < 0)
            errf_fail(err, errlen, rc, "cannot list the parts of table s3://%s/%s: %s", t->bucket,
                      t->root, s.rc ? "out of memory" : e.message);
        for (size_t i = 0; i < s.n; i++) {
            if (!rc && (rc = tb__s3_delete(t->s3, s.keys[i], &e)) < 0)
                errf_fail(err, errlen, rc, "%s", e.message);
            else if (!rc)
                r.orphans++;
            free(s.keys[i]);
        }
        free(s.keys);
    }
    if (res)
        *res = r;
    return rc;
}
