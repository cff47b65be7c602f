/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_source.h: where a query's rows come from. A FROM clause names a table
 * function; the registry (eng_source.c) maps its name to an entry whose open
 * checks the arguments, finds the data (lists a glob, say) and learns its
 * schema. After binding, the executor asks the source for its work units and
 * runs them on its workers; reading a unit hands blocks of scan vectors to
 * the executor's callback, one at a time.
 *
 *   FROM s3('s3://b/x.parquet')  -> eng_table_fn "s3"   (src_s3.c)
 *   FROM s3Cluster('c', 's3://b/x.parquet') -> the same scan, marked with
 *        its cluster (src_s3cluster.c); ingest/dist/ hands its units out
 *   FROM file('data/x.csv')      -> eng_table_fn "file" (src_file.c)
 *        both: glob -> files -> units (Parquet row groups, text files),
 *        re-planned once when an object changes mid-query (src_files.c)
 *   FROM numbers(N), zeros(N)    -> made rows (src_numbers.c), as are
 *        system.one / numbers / zeros
 *   FROM system.query_log, ...   -> a server's rows in memory (src_rows.c)
 *
 *   FROM posts [FINAL]           -> src_table.c: a MergeTree table's parts,
 *        units of granules pruned by the partition key and the primary index
 *   FROM system.parts            -> src_system.c (also tables, columns)
 *
 * A new source is one file here and one entry in eng_source.c: numbers(),
 * s3Cluster's remote units (ingest/dist/). The executor knows only this
 * interface.
 *
 * Lifecycle, as the executor drives it (one statement):
 *
 *   eng_table_fn.open -> schema            (DESCRIBE stops here)
 *   ops->plan(bound plan)   -> number of units
 *   ops->reader_create      once per worker
 *   ops->start              reading ahead may begin
 *   ops->read(reader, u)    on the workers, each unit once; ops->stop any time
 *   ops->finish             the workers are done
 *   ops->reader_destroy, ops->destroy
 *
 * Thread-safety: read() runs on several workers at once, each with its own
 * reader; stop() may be called from any thread at any time after start
 * (also before it, and more than once); every other call comes from the
 * thread running the statement. A source keeps no globals: any number of
 * queries may run sources at once.
 */
#ifndef RINGCACHE_ENG_SOURCE_H
#define RINGCACHE_ENG_SOURCE_H

#include "eng_plan.h"
#include "rangesrc.h"
#include "warehouse.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Counters a source keeps for the query (progress, the summary): relaxed
 * atomics, read while the workers run. */
typedef struct eng_scan_stats {
    _Atomic uint64_t rows_read;    /* rows that came out of the readers */
    _Atomic uint64_t bytes_read;   /* their uncompressed bytes */
    _Atomic uint64_t units_read;   /* Parquet row groups / text files read */
    _Atomic uint64_t units_pruned; /* row groups skipped by their statistics */
} eng_scan_stats;

/* One work unit of a distributed query (ingest/dist/): a file as the FROM's
 * glob lists it (an S3 key or a local path) and, of a Parquet file, its row
 * groups [rg_begin, rg_end) (rg_end 0: to the last). A query given a unit
 * reads only that. */
typedef struct eng_unit {
    const char *path;
    int rg_begin, rg_end;
} eng_unit;

/* Where a source's unit u comes from (ops->unit_info): its file, its row
 * group (-1: the whole file, a text file) and about how many bytes it reads
 * from storage. The path is borrowed from the source. */
typedef struct eng_unit_info {
    const char *path;
    int rg;
    uint64_t bytes;
} eng_unit_info;

/* A cluster of compute servers, as a server is configured with it
 * (--cluster NAME=host:port,... or NAME=dns:SRV-NAME): s3Cluster's servers
 * and system.clusters' rows. Members are named by their HTTP address. */
typedef struct eng_cluster {
    const char *name;
    const char *const *members; /* "host:port" */
    int n_members;
    int local;              /* the member that is this server, or -1 */
    const char *dns;        /* the SRV name the members were resolved from, or NULL */
    const uint32_t *errors; /* per member: failures seen (may be NULL) */
} eng_cluster;

/* The cluster of that name (case-sensitive, as ClickHouse's), or NULL. */
const eng_cluster *eng_cluster_find(const eng_cluster *cs, int n, const char *name);

/* What the query lends its source (borrowed for the source's whole life). */
typedef struct eng_scan_env {
    eng_mem *mem;            /* the query's memory tracker */
    const eng_settings *set; /* max_threads, max_download_threads, ... */
    eng_list_fn list_s3;     /* how S3 objects are listed and opened; */
    eng_open_fn open_s3;     /*   NULL: none configured */
    void *s3_impl;
    eng_scan_stats *stats;
    _Atomic int *stop;           /* non-zero: the query is stopping (LIMIT, error) */
    eng_s3_as_fn s3_as;          /* S3 with a source's own credentials; NULL: none */
    const tb_wh *wh;             /* where tables live; NULL: no tables */
    const char *database;        /* the current database; NULL: default */
    const eng_unit *unit;        /* a distributed query's unit: read only it; NULL: all */
    const eng_cluster *clusters; /* the clusters this process knows (s3Cluster, */
    int n_clusters;              /*   system.clusters) */
    struct ef_shelf *shelf;      /* spare prefetch buffers kept between queries; NULL: none */
    int n_unit;                  /* units at unit (0 with a unit: 1) */
} eng_scan_env;

/* The units of a distributed query's source: env->unit[0..n), 0: all. */
static inline int eng_scan_units(const eng_scan_env *env)
{
    return !env->unit ? 0 : env->n_unit > 0 ? env->n_unit : 1;
}

/* A table function as written in FROM: name(args...) at line/col. */
typedef struct eng_tf_call {
    const char *name; /* as written ("S3" and "s3" both find s3) */
    sql_node *const *args;
    int n_args;
    int line, col;
} eng_tf_call;

/* Rows of one block: ncols vectors in the plan's scan order (plan->need),
 * n rows each, lent to the callback for the call. 0 or -errno (err filled by
 * the callback's owner). */
typedef int (*eng_scan_fn)(void *arg, ex_vec *cols, uint32_t n);

typedef struct eng_source eng_source;
typedef struct eng_reader eng_reader; /* one worker's state, the source's own */

typedef struct eng_source_ops {
    /* Lists the units the bound plan needs (pruning what it can before
     * reading data); returns their count or -errno with a sentence in err. */
    int (*plan)(eng_source *s, const eng_plan *p, char *err, size_t errlen);
    int (*reader_create)(eng_source *s, eng_reader **out);
    void (*reader_destroy)(eng_source *s, eng_reader *r);
    void (*start)(eng_source *s);
    /* Reads unit u, calling fn for each block; 0, fn's error, or -errno with
     * a sentence in err. A stopping query may end it early with 0. */
    int (*read)(eng_source *s, eng_reader *r, int u, eng_scan_fn fn, void *arg, char *err,
                size_t errlen);
    void (*stop)(eng_source *s);
    void (*finish)(eng_source *s);
    void (*destroy)(eng_source *s);
    /* After plan: where unit u comes from (0), for the planner of a
     * distributed query; NULL for sources that cannot be split by file. */
    int (*unit_info)(const eng_source *s, int u, eng_unit_info *out);
} eng_source_ops;

/* Every source starts with this (implementations embed it first). */
struct eng_source {
    const eng_source_ops *ops;
    eng_schema schema;          /* the columns a query may read */
    uint64_t files;             /* objects behind it (the summary's "files") */
    char **type_names;          /* tables: the columns' declared types (DESCRIBE), or NULL */
    char **default_exprs;       /* tables: per column its DEFAULT expression or NULL (DESCRIBE);
                                   the array itself may be NULL */
    const eng_cluster *cluster; /* s3Cluster: the servers its units may go to, else NULL */
};

/* Opens the source a call names. 0, or -errno with a sentence in err that
 * names the call's place ("line L, column C: ...") for bad arguments. */
typedef int (*eng_tf_open_fn)(const eng_tf_call *call, const eng_scan_env *env, eng_source **out,
                              char *err, size_t errlen);

typedef struct eng_table_fn {
    const char *name;
    eng_tf_open_fn open;
} eng_table_fn;

/* The table function of that name (case-insensitive), or NULL. */
const eng_table_fn *eng_table_fn_find(const char *name);
/* Opens call through the registry: an unknown name is -EINVAL with a
 * sentence listing the known ones. */
int eng_source_open(const eng_tf_call *call, const eng_scan_env *env, eng_source **out, char *err,
                    size_t errlen);
/* Opens a table named in FROM: [db.]name [FINAL] (db NULL: the current
 * database), a MergeTree table of the warehouse (src_table.c) or one of
 * system.parts, system.tables, system.columns, system.clusters (src_system.c). line/col place
 * the name in errors. */
typedef struct eng_table_ref {
    const char *db;
    const char *name;
    bool final;
    int line, col;
} eng_table_ref;
int eng_source_open_table(const eng_table_ref *t, const eng_scan_env *env, eng_source **out,
                          char *err, size_t errlen);

/* Opens a MergeTree table of the warehouse, also one in the system database
 * (a server's flushed system.query_log), which eng_source_open_table takes
 * for the engine's own system tables. As eng_source_open_table otherwise. */
int eng_source_open_wh_table(const eng_table_ref *t, const eng_scan_env *env, eng_source **out,
                             char *err, size_t errlen);

/* ops->destroy; accepts NULL and sets *s to NULL. */
void eng_source_destroy(eng_source **s);

/* The engine's own tables of the system database (src_numbers.c): "one" (the
 * row a SELECT without FROM reads), "numbers", "zeros" (endless). 0, -ENOENT
 * for another name (err untouched), -ENOMEM. */
int eng_system_table_open(const char *name, const eng_scan_env *env, eng_source **out, char *err,
                          size_t errlen);

/* A source over rows in memory (src_rows.c), for tables a server fills from
 * its state: schema (its names and cols are taken; *schema is emptied) and
 * schema->n vectors of n rows each, allocated without a tracker (NULL) and
 * taken with the array (freed with the source, also on failure). 0 or
 * -ENOMEM. */
int eng_source_rows_create(eng_source **out, const eng_scan_env *env, eng_schema *schema,
                           ex_vec *cols, uint32_t n, char *err, size_t errlen);

#endif /* RINGCACHE_ENG_SOURCE_H */
