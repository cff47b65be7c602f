/* SPDX-License-Identifier: Apache-2.0
 *
 * warehouse.h: where tables live. A warehouse is an S3 prefix
 * (s3://bucket/prefix/) holding one folder per database and one per table
 * inside it, <prefix>/<database>/<table>/, each a table of table.h (its
 * commit log and part objects). Nothing else records which tables exist: a
 * table exists when version 0 of its log does, so every process pointed at the
 * same warehouse sees the same tables, and creating one is the conditional
 * write of that version. `default` is the database when none is named.
 *
 * Thread-safety: a tb_wh is immutable after tb_wh_init; the functions make
 * their own S3 clients, so any number of threads may call them at once.
 */
#ifndef RINGCACHE_TABLE_WAREHOUSE_H
#define RINGCACHE_TABLE_WAREHOUSE_H

#include "table.h"

#include <stdbool.h>
#include <stddef.h>

#define TB_WH_DEFAULT_DB "default"
#define TB_WH_NAME_MAX   64 /* database and table names, NUL included */

/* What a long-lived process keeps of its tables between queries: each
 * table's log replayed to the newest version seen (with that version
 * object's ETag and when a List last showed it the newest), whether the
 * store's conditional writes were checked, and open parts (source, size,
 * parsed footer), up to max_parts unused ones, least recently used dropped
 * first. Log versions and parts are immutable, so nothing kept goes stale:
 * opening a table kept here costs one List of its log from the kept version
 * on (a version of another process is read, one GET each) -- none for a
 * reader within the warehouse's reuse_ms -- and a kept part costs nothing.
 * Thread-safe. */
typedef struct tb_cat tb_cat;
#define TB_CAT_DEFAULT_PARTS 4096
int tb_cat_create(tb_cat **out, size_t max_parts); /* 0: TB_CAT_DEFAULT_PARTS */
/* Every part must have been released. Accepts NULL; sets *c to NULL. */
void tb_cat_destroy(tb_cat **c);
/* Open parts kept (held or not). */
size_t tb_cat_parts(tb_cat *c);
/* Forgets when each kept state was last seen the newest, so that the next
 * open of every table lists its log: after commits this process caused but
 * did not make itself (the servers of a distributed INSERT). */
void tb_cat_expire(tb_cat *c);

/* Opens part name of t as tb_part_open_via(open, arg) does (open NULL:
 * tb_part_open), or shares the one kept: *src and *r are borrowed from *ref
 * until tb_part_release(ref). Thread-safe. */
typedef struct tb_part_ref tb_part_ref;
int tb_cat_part_open(tb_cat *c, const tb_table *t, const char *name, tb_source_open_fn open,
                     void *arg, tb_part_ref **ref, rs_source **src, tp_reader **r, char *err,
                     size_t errlen);
/* The same for a part of t's log: opened with its known size and version
 * when it can be (tb_part_known), with no request to the store. */
int tb_cat_part_open_known(tb_cat *c, const tb_table *t, const tb_part *p, tb_part_ref **ref,
                           rs_source **src, tp_reader **r, char *err, size_t errlen);
void tb_part_release(tb_part_ref **ref);

typedef struct tb_wh {
    s3_config s3; /* the log's and the listings' client */
    char bucket[64];
    char prefix[512]; /* without a trailing '/'; "" for the bucket's root */
    tb_io io;         /* part I/O every table opened here gets */
    tb_cat *cat;      /* borrowed, NULL: none (each open reads the log afresh) */
    /* with cat: a reader's open (writer false) takes a kept state that a List
     * showed to be the newest less than reuse_ms ago as it is, asking the
     * store nothing (what other processes committed since shows within
     * reuse_ms; this process's own commits at once). 0: every open lists. */
    int64_t reuse_ms;
} tb_wh;

/* Parses "s3://bucket/prefix/" (the trailing '/' optional) with the S3
 * settings to use. 0 or -EINVAL with a sentence in err. */
int tb_wh_init(tb_wh *w, const char *url, const s3_config *cfg, char *err, size_t errlen);

/* Database and table names: 1 to 63 of [A-Za-z0-9_], not starting with a
 * digit... as ClickHouse's unquoted identifiers (a dash or a dot would clash
 * with keys and partition ids). */
bool tb_wh_name_ok(const char *name);

/* The table's root key: "<prefix>/<db>/<table>". -EINVAL for a bad name
 * (err says which and why), -ENOSPC when cap is short. */
int tb_wh_root(const tb_wh *w, const char *db, const char *table, char *buf, size_t cap, char *err,
               size_t errlen);

/* Table options for that root (borrowed: root and w must outlive o's use). */
void tb_wh_opts(const tb_wh *w, const char *root, bool writer, tb_table_opts *o);

/* Opens [db.]table (db NULL: default): tb_table_open with the warehouse's part
 * I/O set; with a catalog (w->cat), from the state kept there (one List), and
 * the table's state goes back to it when it is destroyed (after commits).
 * -ENOENT with "table db.t does not exist" in err. */
int tb_wh_open(const tb_wh *w, const char *db, const char *table, bool writer, tb_table **out,
               char *err, size_t errlen);

/* Calls fn for every table of database db (NULL: of every database), sorted
 * by database then name. fn < 0 stops (and is returned). 0 or -errno. */
typedef int (*tb_wh_table_fn)(const char *db, const char *table, void *arg);
int tb_wh_list(const tb_wh *w, const char *db, tb_wh_table_fn fn, void *arg, char *err,
               size_t errlen);

/* Deletes a table: version 0 of its log first (so it stops existing at once
 * for every process), then every other object under its root. 0, -ENOENT
 * (no such table), or an S3 error. */
int tb_wh_drop(const tb_wh *w, const char *db, const char *table, char *err, size_t errlen);

#endif /* RINGCACHE_TABLE_WAREHOUSE_H */
