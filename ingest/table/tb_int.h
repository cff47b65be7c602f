/* SPDX-License-Identifier: Apache-2.0
 *
 * tb_int.h: internals of the table's commit log (tb_*.c): a small JSON DOM
 * (parser fuzzed: tests/fuzz/table_log), the log objects' decoder and
 * encoder, the state they fold into, and a blocking S3 helper over the async
 * client on a private event loop. Everything but tb__s3_* is pure.
 */
#ifndef RINGCACHE_TABLE_TB_INT_H
#define RINGCACHE_TABLE_TB_INT_H

#include "table.h"
#include "tp_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- JSON ------------------------------------------------------------------- */

typedef enum { TJ_NULL, TJ_BOOL, TJ_INT, TJ_NUM, TJ_STR, TJ_ARR, TJ_OBJ } tj_kind;

typedef struct tj_val tj_val;
struct tj_val {
    tj_kind kind;
    bool b;
    int64_t i; /* TJ_INT: an integer that fits int64 */
    char *s;   /* TJ_STR: NUL-terminated, len bytes (may hold NUL) */
    size_t len;
    tj_val *items; /* TJ_ARR / TJ_OBJ: n values */
    char **keys;   /* TJ_OBJ: n keys */
    size_t n;
};

#define TJ_MAX_DEPTH 64
#define TJ_MAX_INPUT (64u << 20)

/* Parses one JSON value (RFC 8259; white space around it, nothing else after).
 * Numbers with a fraction or exponent, or past int64, are TJ_NUM (no value
 * kept: the log has only integers). Strings are decoded (\uXXXX with
 * surrogate pairs to UTF-8). Depth at most 64, input at most 64 MiB.
 * 0, -EBADMSG with a sentence naming the offset, or -ENOMEM. */
int tj_parse(const char *buf, size_t len, tj_val *out, char *err, size_t errlen);
void tj_free(tj_val *v);
/* Member `key` of an object, or NULL. */
const tj_val *tj_get(const tj_val *obj, const char *key);

/* JSON output into a tp__bytes. */
int tj_put_str(tp__bytes *b, const char *s);
int tj_put_raw(tp__bytes *b, const char *s);
int tj_put_i64(tp__bytes *b, int64_t v);

/* ---- log objects ------------------------------------------------------------ */

/* One version as written. */
typedef struct tb__version {
    uint64_t version;
    char writer[33]; /* 32 hex */
    int64_t time_ms;
    int kind; /* tb_commit_kind, 0 for CREATE */
    uint64_t schema_version;
    bool has_schema;
    tb_schema schema;
    tb_part *add;
    size_t n_add;
    char **remove;
    size_t n_remove;
    char **purge;
    size_t n_purge;
    tb_dedup_id *dedup;
    size_t n_dedup;
} tb__version;

void tb__version_free(tb__version *v);
/* Decodes a version object: every field checked (names and partitions of the
 * allowed characters and length, counts, rows); -EBADMSG with a sentence. */
int tb__version_parse(const char *buf, size_t len, tb__version *v, char *err, size_t errlen);
int tb__version_write(const tb__version *v, tp__bytes *out);

/* Decodes a checkpoint into a snapshot (version, time, schema, parts,
 * removed, dedup); -EBADMSG. */
int tb__checkpoint_parse(const char *buf, size_t len, tb_snapshot *s, char *err, size_t errlen);
int tb__checkpoint_write(const tb_snapshot *s, tp__bytes *out);

/* Applies version v to state s (which must be at v->version - 1): schema,
 * removals (each must be active), additions, purges, dedup ids, then trims the
 * dedup window (count, and age against v's time). -EBADMSG when v does not
 * follow s. */
int tb__apply(tb_snapshot *s, const tb__version *v, uint32_t window, uint32_t window_s, char *err,
              size_t errlen);

int tb__snapshot_copy(tb_snapshot *dst, const tb_snapshot *src);
void tb__snapshot_deinit(tb_snapshot *s);
int tb__part_copy(tb_part *dst, const tb_part *src);
void tb__part_deinit(tb_part *p);

/* Partition ids and part names: [A-Za-z0-9_-], 1..TB_NAME_MAX-1 bytes. */
bool tb__name_ok(const char *s);

/* Schema <-> JSON. */
int tb__schema_write(const tb_schema *s, tp__bytes *out);
int tb__schema_parse(const tj_val *v, tb_schema *s, char *err, size_t errlen);

/* ---- blocking S3 on a private loop ------------------------------------------ */

typedef struct tb__s3 tb__s3;
int tb__s3_create(tb__s3 **out, const s3_config *cfg, const char *bucket);
void tb__s3_destroy(tb__s3 **s);
int tb__s3_put(tb__s3 *s, const char *key, const void *data, size_t len, const s3_write_cond *cond,
               s3_error *err);
/* Whole object into *buf (malloc'd, NUL-terminated), at most max bytes. */
int tb__s3_get(tb__s3 *s, const char *key, char **buf, size_t *len, size_t max, s3_error *err);
/* n whole objects at once (one round trip, not n): bufs[i] and lens[i] as
 * tb__s3_get's. On failure every buffer is freed, *err and *failed (the
 * index of the key) say which one failed and why. */
int tb__s3_get_many(tb__s3 *s, const char *const *keys, size_t n, char **bufs, size_t *lens,
                    size_t max, s3_error *err, size_t *failed);
/* Every key under prefix after start_after (pages by start-after); fn < 0 stops. */
typedef int (*tb__list_fn)(const s3_object_info *o, void *arg);
int tb__s3_list(tb__s3 *s, const char *prefix, const char *start_after, tb__list_fn fn, void *arg,
                s3_error *err);
int tb__s3_delete(tb__s3 *s, const char *key, s3_error *err);
int tb__s3_mpu_create(tb__s3 *s, const char *key, char **upload_id, s3_error *err);
int tb__s3_mpu_part(tb__s3 *s, const char *key, const char *upload_id, int number, const void *data,
                    size_t len, char etag[S3_ETAG_MAX], s3_error *err);
int tb__s3_mpu_complete(tb__s3 *s, const char *key, const char *upload_id, const char *const *etags,
                        int n, const s3_write_cond *cond, s3_error *err);
int tb__s3_mpu_abort(tb__s3 *s, const char *key, const char *upload_id, s3_error *err);

/* Fault injection for tests, at the log's edge: after each PUT of a log
 * version, fn sees the real result and returns the one the commit acts on
 * (say -ETIMEDOUT for a write that landed but whose answer was lost). */
typedef int (*tb__put_hook_fn)(void *arg, const char *key, int rc);
void tb__table_set_put_hook(tb_table *t, tb__put_hook_fn fn, void *arg);

/* ---- the catalog of a long-lived process (warehouse.h, tb_cat.c) ----------- */

typedef struct tb_cat tb_cat;
/* A copy of the state kept for bucket/root (*out: destroy it), its version
 * object's ETag ("" if unknown) and when a List last showed it the newest
 * (tb__mono_ms(); 0: unknown). 0, -ENOENT, -ENOMEM. */
int tb__cat_get(tb_cat *c, const char *bucket, const char *root, tb_snapshot **out,
                char etag[S3_ETAG_MAX], int64_t *listed_ms);
/* Keeps a copy of s when it is newer than the kept state (or force: the log
 * was read from scratch, e.g. the table was made again); for the same
 * version, keeps the later listed_ms. */
void tb__cat_publish(tb_cat *c, const char *bucket, const char *root, const tb_snapshot *s,
                     const char *etag, int64_t listed_ms, bool force);
void tb__cat_forget(tb_cat *c, const char *bucket, const char *root);
bool tb__cat_probed(tb_cat *c);
void tb__cat_set_probed(tb_cat *c);

/* tb_table_open from a state known (NULL: none) at some version, with that
 * version object's ETag: one List of the log from it (catch_up), or, with
 * reuse, none (the state is taken as it is, listed_ms its age); probe_first
 * probes the store's conditional writes first; the table publishes its
 * state to cat (may be NULL) now and when destroyed. */
int tb__table_open_known(tb_table **out, const tb_table_opts *o, const tb_snapshot *known,
                         const char *etag, int64_t listed_ms, bool reuse, bool probe_first,
                         tb_cat *cat, char *err, size_t errlen);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t tb__mono_ms(void);

/* The table's part I/O (tb_table_set_io; open NULL: its own S3 client). */
const tb_io *tb__table_io(const tb_table *t);

/* 16 random bytes as 32 lower-case hex digits (getrandom). */
void tb__random_hex(char out[33]);

#endif /* RINGCACHE_TABLE_TB_INT_H */
