/* SPDX-License-Identifier: Apache-2.0
 *
 * src_system.c: the system tables about the warehouse's tables, as sources:
 * system.tables (one row per table), system.columns (one per column) and
 * system.parts (one per part of a table's latest log version, the removed
 * ones not yet deleted too, with active = 0), with ClickHouse's column names;
 * and system.clusters (a row per member of each cluster the process knows).
 * Opening one lists the warehouse and reads each table's log; the rows are
 * made then and read as one unit.
 */
#include "src_int_table.h"

#include "eng_tdef.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { SYS_TABLES = 1, SYS_COLUMNS, SYS_PARTS, SYS_CLUSTERS } sys_kind;

typedef struct sys_col {
    const char *name;
    uint8_t kind; /* EX_STRING, EX_UINT, EX_INT, EX_DATETIME */
    uint8_t bits;
} sys_col;

static const sys_col tables_cols[] = {
    {"database", EX_STRING, 0},
    {"name", EX_STRING, 0},
    {"engine", EX_STRING, 0},
    {"is_temporary", EX_UINT, 8},
    {"metadata_modification_time", EX_DATETIME, 0},
    {"create_table_query", EX_STRING, 0},
    {"partition_key", EX_STRING, 0},
    {"sorting_key", EX_STRING, 0},
    {"primary_key", EX_STRING, 0},
    {"total_rows", EX_UINT, 64},
    {"total_bytes", EX_UINT, 64},
};
static const sys_col columns_cols[] = {
    {"database", EX_STRING, 0},
    {"table", EX_STRING, 0},
    {"name", EX_STRING, 0},
    {"type", EX_STRING, 0},
    {"position", EX_UINT, 64},
    {"default_kind", EX_STRING, 0},
    {"default_expression", EX_STRING, 0},
    {"comment", EX_STRING, 0},
    {"is_in_partition_key", EX_UINT, 8},
    {"is_in_sorting_key", EX_UINT, 8},
    {"is_in_primary_key", EX_UINT, 8},
    {"compression_codec", EX_STRING, 0},
};
static const sys_col parts_cols[] = {
    {"database", EX_STRING, 0},
    {"table", EX_STRING, 0},
    {"partition", EX_STRING, 0},
    {"partition_id", EX_STRING, 0},
    {"name", EX_STRING, 0},
    {"active", EX_UINT, 8},
    {"rows", EX_UINT, 64},
    {"marks", EX_UINT, 64},
    {"bytes_on_disk", EX_UINT, 64},
    {"data_compressed_bytes", EX_UINT, 64},
    {"data_uncompressed_bytes", EX_UINT, 64},
    {"level", EX_UINT, 32},
    {"min_block_number", EX_INT, 64},
    {"max_block_number", EX_INT, 64},
    {"modification_time", EX_DATETIME, 0},
};

/* One row per member of each cluster this process knows (eng_cluster):
 * each member is a shard of one replica, as s3Cluster uses them. */
static const sys_col clusters_cols[] = {
    {"cluster", EX_STRING, 0},          {"shard_num", EX_UINT, 32},
    {"shard_weight", EX_UINT, 32},      {"internal_replication", EX_UINT, 8},
    {"replica_num", EX_UINT, 32},       {"host_name", EX_STRING, 0},
    {"host_address", EX_STRING, 0},     {"port", EX_UINT, 16},
    {"is_local", EX_UINT, 8},           {"user", EX_STRING, 0},
    {"default_database", EX_STRING, 0}, {"errors_count", EX_UINT, 32},
    {"slowdowns_count", EX_UINT, 32},   {"estimated_recovery_time", EX_UINT, 32},
};

/* Rows being made: a column of strings or of integers each. */
typedef struct sys_rows {
    const sys_col *cols;
    int n_cols;
    char ***s;
    int64_t **i;
    uint32_t n, cap;
    int rc;
} sys_rows;

typedef struct src_sys {
    eng_source base;
    eng_scan_env env;
    sys_kind kind;
    sys_rows rows;
    const eng_plan *plan;
} src_sys;

static int rows_init(sys_rows *r, const sys_col *cols, int n)
{
    memset(r, 0, sizeof(*r));
    r->cols = cols;
    r->n_cols = n;
    r->s = calloc((size_t)n, sizeof(char **));
    r->i = calloc((size_t)n, sizeof(int64_t *));
    return r->s && r->i ? 0 : -ENOMEM;
}

static void rows_free(sys_rows *r)
{
    for (int k = 0; k < r->n_cols; k++) {
        if (r->s && r->s[k]) {
            for (uint32_t j = 0; j < r->n; j++)
                free(r->s[k][j]);
            free(r->s[k]);
        }
        if (r->i)
            free(r->i[k]);
    }
    free(r->s);
    free(r->i);
    memset(r, 0, sizeof(*r));
}

/* Starts a row (every cell "" / 0 until set). */
static bool row_new(sys_rows *r)
{
    if (r->rc)
        return false;
    if (r->n == r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 64;
        for (int k = 0; k < r->n_cols; k++) {
            if (r->cols[k].kind == EX_STRING) {
                char **p = realloc(r->s[k], cap * sizeof(char *));
                if (!p)
                    return !(r->rc = -ENOMEM);
                r->s[k] = p;
            } else {
                int64_t *p = realloc(r->i[k], cap * sizeof(int64_t));
                if (!p)
                    return !(r->rc = -ENOMEM);
                r->i[k] = p;
            }
        }
        r->cap = cap;
    }
    for (int k = 0; k < r->n_cols; k++) {
        if (r->cols[k].kind == EX_STRING)
            r->s[k][r->n] = NULL;
        else
            r->i[k][r->n] = 0;
    }
    r->n++;
    return true;
}

static void set_s(sys_rows *r, int k, const char *v)
{
    if (r->rc || !v)
        return;
    if (!(r->s[k][r->n - 1] = strdup(v)))
        r->rc = -ENOMEM;
}

static void set_i(sys_rows *r, int k, int64_t v)
{
    if (!r->rc)
        r->i[k][r->n - 1] = v;
}

/* ---- filling ------------------------------------------------------------------------- */

/* A key's columns, an expression's text for a key expression. */
static void key_text(const eng_tdef *d, uint32_t n, char *buf, size_t cap)
{
    const tb_schema *s = &d->schema;
    size_t o = 0;
    buf[0] = 0;
    for (uint32_t k = 0; k < n && o < cap; k++) {
        uint32_t i = s->key_cols[k];
        const char *t = eng_tdef_hidden(s->cols[i].name) && d->defaults && d->defaults[i]
                            ? d->defaults[i]
                            : s->cols[i].name;
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? ", " : "", t);
    }
}

/* Whether expression text names identifier nm as a whole word. */
static bool names_word(const char *text, const char *nm)
{
    size_t l = strlen(nm);
    for (const char *q = strstr(text, nm); q; q = strstr(q + 1, nm)) {
        char b = q > text ? q[-1] : ' ', a = q[l];
        if (!(b == '_' || (b >= '0' && b <= '9') || ((b | 32) >= 'a' && (b | 32) <= 'z')) &&
            !(a == '_' || (a >= '0' && a <= '9') || ((a | 32) >= 'a' && (a | 32) <= 'z')))
            return true;
    }
    return false;
}

typedef struct fill_arg {
    src_sys *s;
    char *err;
    size_t errlen;
} fill_arg;

static int fill_table(const char *db, const char *name, void *arg)
{
    fill_arg *fa = arg;
    src_sys *s = fa->s;
    sys_rows *r = &s->rows;
    tb_table *t;
    char msg[ENG_MSG_MAX];
    tb_wh rw;
    src__wh_read(&s->env, &rw);
    int rc = tb_wh_open(&rw, db, name, false, &t, msg, sizeof(msg));
    if (rc == -ENOENT)
        return 0; /* dropped meanwhile */
    if (rc < 0) {
        snprintf(fa->err, fa->errlen, "%s", msg);
        return rc;
    }
    tb_snapshot *snap;
    rc = tb_table_snapshot(t, &snap, msg, sizeof(msg));
    tb_table_destroy(&t);
    if (rc < 0) {
        snprintf(fa->err, fa->errlen, "%s", msg);
        return rc;
    }
    eng_tdef def;
    rc = eng_tdef_from_schema(&snap->schema, &def, msg, sizeof(msg));
    if (rc < 0) {
        tb_snapshot_destroy(&snap);
        snprintf(fa->err, fa->errlen, "table %s.%s: %s", db, name, msg);
        return rc;
    }
    const tb_schema *ts = &snap->schema;
    if (s->kind == SYS_TABLES) {
        char sk[1024], pk[1024];
        key_text(&def, ts->n_key, sk, sizeof(sk));
        key_text(&def, def.n_primary, pk, sizeof(pk));
        uint64_t rows = 0, bytes = 0;
        for (size_t i = 0; i < snap->n_parts; i++) {
            rows += snap->parts[i].rows;
            bytes += snap->parts[i].bytes;
        }
        if (row_new(r)) {
            set_s(r, 0, db);
            set_s(r, 1, name);
            set_s(r, 2, ts->engine);
            set_i(r, 4, snap->time_ms / 1000);
            set_s(r, 5, ts->ddl ? ts->ddl : "");
            set_s(r, 6, ts->partition_by ? ts->partition_by : "");
            set_s(r, 7, sk);
            set_s(r, 8, pk);
            set_i(r, 9, (int64_t)rows);
            set_i(r, 10, (int64_t)bytes);
        }
    } else if (s->kind == SYS_COLUMNS) {
        for (uint32_t i = 0; i < ts->n_cols; i++) {
            if (eng_tdef_hidden(ts->cols[i].name))
                continue; /* a key expression's value */
            if (!row_new(r))
                break;
            /* in a key: the key's column, or read by its expression
             * (ORDER BY toYear(d): d), as ClickHouse counts it */
            bool sorting = false, primary = false;
            for (uint32_t k = 0; k < ts->n_key; k++) {
                uint32_t kc = ts->key_cols[k];
                bool in = kc == i || (eng_tdef_hidden(ts->cols[kc].name) && def.defaults &&
                                      def.defaults[kc] &&
                                      names_word(def.defaults[kc], ts->cols[i].name));
                sorting |= in;
                primary |= in && k < def.n_primary;
            }
            bool part = ts->partition_by && names_word(ts->partition_by, ts->cols[i].name);
            char codec[300];
            snprintf(codec, sizeof(codec), "%s%s%s", def.codecs[i] ? "CODEC(" : "",
                     def.codecs[i] ? def.codecs[i] : "", def.codecs[i] ? ")" : "");
            set_s(r, 0, db);
            set_s(r, 1, name);
            set_s(r, 2, ts->cols[i].name);
            set_s(r, 3, def.types[i]);
            set_i(r, 4, (int64_t)i + 1);
            set_i(r, 8, part);
            set_i(r, 9, sorting);
            set_i(r, 10, primary);
            set_s(r, 11, codec);
            if (def.defaults && def.defaults[i]) {
                set_s(r, 5, "DEFAULT");
                set_s(r, 6, def.defaults[i]);
            }
        }
    } else {
        for (int pass = 0; pass < 2; pass++) {
            const tb_part *ps = pass ? snap->removed : snap->parts;
            size_t np = pass ? snap->n_removed : snap->n_parts;
            for (size_t i = 0; i < np && row_new(r); i++) {
                const tb_part *p = &ps[i];
                set_s(r, 0, db);
                set_s(r, 1, name);
                set_s(r, 2, strcmp(p->partition, "all") ? p->partition : "tuple()");
                set_s(r, 3, p->partition);
                set_s(r, 4, p->name);
                set_i(r, 5, !pass);
                set_i(r, 6, (int64_t)p->rows);
                uint64_t g = ts->index_granularity
                                 ? (p->rows + ts->index_granularity - 1) / ts->index_granularity
                                 : 0;
                set_i(r, 7, (int64_t)(p->granules ? p->granules : g));
                set_i(r, 8, (int64_t)p->bytes);
                set_i(r, 9, (int64_t)p->compressed_bytes);
                set_i(r, 10, (int64_t)p->uncompressed_bytes);
                set_i(r, 11, p->level);
                set_i(r, 12, (int64_t)p->min_block);
                set_i(r, 13, (int64_t)p->max_block);
                set_i(r, 14, (pass ? p->removed_ms : p->created_ms) / 1000);
            }
        }
    }
    eng_tdef_free(&def);
    tb_snapshot_destroy(&snap);
    if (r->rc) {
        snprintf(fa->err, fa->errlen, "out of memory");
        return r->rc;
    }
    return 0;
}

/* system.clusters: a member is "host:port" ("[v6]:port" too). */
static int fill_clusters(src_sys *s, char *err, size_t errlen)
{
    sys_rows *r = &s->rows;
    for (int c = 0; c < s->env.n_clusters; c++) {
        const eng_cluster *cl = &s->env.clusters[c];
        for (int m = 0; m < cl->n_members && row_new(r); m++) {
            const char *mb = cl->members[m], *colon = strrchr(mb, ':');
            char host[256];
            size_t hl = colon ? (size_t)(colon - mb) : strlen(mb);
            if (hl >= 2 && mb[0] == '[' && mb[hl - 1] == ']') {
                mb++;
                hl -= 2;
            }
            snprintf(host, sizeof(host), "%.*s", (int)(hl < sizeof(host) ? hl : sizeof(host) - 1),
                     mb);
            set_s(r, 0, cl->name);
            set_i(r, 1, m + 1);
            set_i(r, 2, 1);
            set_i(r, 3, 0);
            set_i(r, 4, 1);
            set_s(r, 5, host);
            set_s(r, 6, host);
            set_i(r, 7, colon ? strtol(colon + 1, NULL, 10) : 8123);
            set_i(r, 8, m == cl->local);
            set_s(r, 9, "default");
            set_s(r, 10, "");
            set_i(r, 11, cl->errors ? cl->errors[m] : 0);
        }
    }
    if (r->rc)
        snprintf(err, errlen, "out of memory");
    return r->rc;
}

/* ---- the source ------------------------------------------------------------------------ */

static int sys_plan(eng_source *b, const eng_plan *p, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    src_sys *s = (src_sys *)b;
    s->plan = p;
    return s->rows.n ? 1 : 0;
}

static int sys_reader_create(eng_source *b, eng_reader **out)
{
    (void)b;
    *out = NULL;
    return 0;
}

static void sys_reader_destroy(eng_source *b, eng_reader *r)
{
    (void)b;
    (void)r;
}

static void sys_nop(eng_source *b)
{
    (void)b;
}

/* The one unit: the plan's columns of every row. */
static int sys_read(eng_source *b, eng_reader *rd, int u, eng_scan_fn fn, void *arg, char *err,
                    size_t errlen)
{
    (void)rd;
    (void)u;
    src_sys *s = (src_sys *)b;
    const sys_rows *r = &s->rows;
    const eng_plan *p = s->plan;
    ex_vec *v = calloc((size_t)p->n_need + 1, sizeof(ex_vec));
    if (!v)
        return -ENOMEM;
    int rc = 0;
    for (int j = 0; j < p->n_need && rc == 0; j++) {
        int k = p->need[j];
        rc = ex_vec_alloc(s->env.mem, &v[j], s->base.schema.cols[k].t, r->n);
        for (uint32_t i = 0; i < r->n && rc == 0; i++) {
            if (r->cols[k].kind == EX_STRING) {
                const char *x = r->s[k][i] ? r->s[k][i] : "";
                rc = ex_vec_str_put(s->env.mem, &v[j], i, x, strlen(x));
            } else {
                v[j].i[i] = r->i[k][i];
            }
        }
    }
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    else
        rc = fn(arg, v, r->n);
    for (int j = 0; j < p->n_need; j++)
        ex_vec_clear(s->env.mem, &v[j]);
    free(v);
    if (rc == 0) {
        atomic_fetch_add(&s->env.stats->units_read, 1);
        atomic_fetch_add(&s->env.stats->rows_read, r->n);
    }
    return rc;
}

static void sys_destroy(eng_source *b)
{
    src_sys *s = (src_sys *)b;
    rows_free(&s->rows);
    eng_schema_free(&s->base.schema);
    free(s);
}

static const eng_source_ops sys_ops = {
    .plan = sys_plan,
    .reader_create = sys_reader_create,
    .reader_destroy = sys_reader_destroy,
    .start = sys_nop,
    .read = sys_read,
    .stop = sys_nop,
    .finish = sys_nop,
    .destroy = sys_destroy,
};

int src__system_open(const eng_table_ref *t, const eng_scan_env *env, eng_source **out, char *err,
                     size_t errlen)
{
    *out = NULL;
    sys_kind kind = !strcasecmp(t->name, "tables")     ? SYS_TABLES
                    : !strcasecmp(t->name, "columns")  ? SYS_COLUMNS
                    : !strcasecmp(t->name, "parts")    ? SYS_PARTS
                    : !strcasecmp(t->name, "clusters") ? SYS_CLUSTERS
                                                       : 0;
    if (!kind) {
        snprintf(err, errlen,
                 "line %d, column %d: table system.%s does not exist here "
                 "(UNKNOWN_TABLE): the system tables are system.tables, "
                 "system.columns, system.parts and system.clusters",
                 t->line, t->col, t->name);
        return -ENOENT;
    }
    if (!env->wh && kind != SYS_CLUSTERS) {
        snprintf(err, errlen,
                 "line %d, column %d: system.%s lists the warehouse's tables, and "
                 "none is configured: pass --warehouse s3://bucket/prefix/ (or "
                 "set RINGCACHE_WAREHOUSE)",
                 t->line, t->col, t->name);
        return -EINVAL;
    }
    src_sys *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->base.ops = &sys_ops;
    s->env = *env;
    s->kind = kind;
    const sys_col *cols = kind == SYS_TABLES     ? tables_cols
                          : kind == SYS_COLUMNS  ? columns_cols
                          : kind == SYS_CLUSTERS ? clusters_cols
                                                 : parts_cols;
    int n = kind == SYS_TABLES     ? (int)(sizeof(tables_cols) / sizeof(tables_cols[0]))
            : kind == SYS_COLUMNS  ? (int)(sizeof(columns_cols) / sizeof(columns_cols[0]))
            : kind == SYS_CLUSTERS ? (int)(sizeof(clusters_cols) / sizeof(clusters_cols[0]))
                                   : (int)(sizeof(parts_cols) / sizeof(parts_cols[0]));
    int rc = rows_init(&s->rows, cols, n);
    s->base.schema.cols = calloc((size_t)n + 1, sizeof(eng_col));
    if (rc < 0 || !s->base.schema.cols)
        rc = -ENOMEM;
    for (int k = 0; k < n && rc == 0; k++) {
        eng_col *c = &s->base.schema.cols[k];
        if (!(c->name = strdup(cols[k].name)))
            rc = -ENOMEM;
        c->t = (ex_type){.kind = cols[k].kind, .bits = cols[k].bits};
        s->base.schema.n = k + 1;
    }
    if (rc < 0) {
        snprintf(err, errlen, "out of memory");
    } else if (kind == SYS_CLUSTERS) {
        rc = fill_clusters(s, err, errlen);
    } else {
        fill_arg fa = {s, err, errlen};
        rc = tb_wh_list(env->wh, NULL, fill_table, &fa, err, errlen);
    }
    if (rc < 0) {
        sys_destroy(&s->base);
        return rc;
    }
    *out = &s->base;
    return 0;
}
