/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_tdef.c: table definitions (eng_tdef.h): declared types to storage
 * types, CREATE TABLE checked and turned into a tb_schema with its
 * normalised statement, that statement read back, and INSERT settings.
 */
#include "eng_tdef.h"
#include "errf.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "Name(inner)" -> inner, when t is that. */
static bool unwrap(const char *t, const char *name, char *inner, size_t cap)
{
    size_t n = strlen(name), l = strlen(t);
    if (l < n + 2 || strncasecmp(t, name, n) != 0 || t[n] != '(' || t[l - 1] != ')')
        return false;
    size_t k = l - n - 2;
    if (k >= cap)
        return false;
    memcpy(inner, t + n + 1, k);
    inner[k] = 0;
    return true;
}

int eng_decl_type(const char *type, cb_typeinfo *info, bool *nullable, uint32_t *fixed,
                  bool *date16, char *err, size_t errlen)
{
    char t[256], in[256];
    memset(info, 0, sizeof(*info));
    *nullable = false;
    *fixed = 0;
    *date16 = false;
    if (strlen(type) >= sizeof(t))
        return errf_fail(err, errlen, -EINVAL, "type %.60s... is too long", type);
    snprintf(t, sizeof(t), "%s", type);
    if (unwrap(t, "Array", in, sizeof(in))) {
        cb_typeinfo ei;
        bool enull, edate16;
        uint32_t efixed;
        int rc = eng_decl_type(in, &ei, &enull, &efixed, &edate16, err, errlen);
        if (rc < 0)
            return rc;
        if (ei.type == CB_LIST)
            return errf_fail(err, errlen, -EINVAL,
                             "type %s is not supported in tables: nested arrays are not (use "
                             "Array(T) of a scalar T)",
                             type);
        if (efixed)
            return errf_fail(err, errlen, -EINVAL,
                             "type %s is not supported in tables: use Array(String) for arrays of "
                             "strings",
                             type);
        *info = ei;
        info->type = CB_LIST;
        info->elem = ei.type;
        info->elem_null = enull;
        return 0;
    }
    for (int depth = 0; depth < 3; depth++) {
        if (unwrap(t, "LowCardinality", in, sizeof(in)) ||
            (!*nullable && unwrap(t, "Nullable", in, sizeof(in)) && (*nullable = true))) {
            memmove(t, in, strlen(in) + 1);
            if (unwrap(t, "Array", in, sizeof(in)))
                return errf_fail(err, errlen, -EINVAL,
                                 "type %s is not supported: an Array cannot be inside Nullable or "
                                 "LowCardinality (write Array(Nullable(T)))",
                                 type);
            continue;
        }
        break;
    }
    static const struct {
        const char *n;
        cb_type ty;
    } tab[] = {
        {"Int8", CB_INT8},          {"Int16", CB_INT16},   {"Int32", CB_INT32},
        {"Int64", CB_INT64},        {"UInt8", CB_UINT8},   {"UInt16", CB_UINT16},
        {"UInt32", CB_UINT32},      {"UInt64", CB_UINT64}, {"Float32", CB_FLOAT},
        {"Float64", CB_DOUBLE},     {"Bool", CB_BOOL},     {"Boolean", CB_BOOL},
        {"String", CB_STRING},      {"Date", CB_DATE},     {"Date32", CB_DATE},
        {"DateTime", CB_TIMESTAMP},
    };
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        if (strcmp(t, tab[i].n) == 0) {
            info->type = tab[i].ty;
            *date16 = strcmp(t, "Date") == 0;
            return 0;
        }
    }
    unsigned a, b;
    char tz[64];
    int e = -1, L = (int)strlen(t);
#define WHOLE(n, ...) (e = -1, sscanf(t, __VA_ARGS__, &e) == (n) && e == L)
    if (WHOLE(1, "FixedString(%u)%n", &a)) {
        if (a < 1 || a > 65535)
            return errf_fail(err, errlen, -EINVAL, "FixedString(N) needs N of 1 to 65535, not %u",
                             a);
        info->type = CB_STRING;
        *fixed = a;
        return 0;
    }
    if (WHOLE(1, "DateTime('%63[^']')%n", tz)) {
        info->type = CB_TIMESTAMP;
        return 0;
    }
    if (WHOLE(1, "DateTime64(%u)%n", &a) || WHOLE(2, "DateTime64(%u, '%63[^']')%n", &a, tz)) {
        if (a != 0 && a != 3 && a != 6 && a != 9)
            return errf_fail(err, errlen, -EINVAL,
                             "DateTime64(%u) is not supported: use a precision of 0, 3, 6 or 9", a);
        info->type = CB_TIMESTAMP;
        info->unit = a == 3 ? CB_UNIT_MS : a == 6 ? CB_UNIT_US : a == 9 ? CB_UNIT_NS : CB_UNIT_NONE;
        info->utc = true;
        return 0;
    }
    bool dec = false;
    if (WHOLE(2, "Decimal(%u, %u)%n", &a, &b)) {
        dec = true;
    } else if (WHOLE(1, "Decimal(%u)%n", &a)) {
        b = 0;
        dec = true;
    } else if (WHOLE(1, "Decimal32(%u)%n", &b)) {
        a = 9;
        dec = true;
    } else if (WHOLE(1, "Decimal64(%u)%n", &b)) {
        a = 18;
        dec = true;
    }
#undef WHOLE
    if (dec) {
        if (a < 1 || a > 18 || b > a)
            return errf_fail(err, errlen, -EINVAL,
                             "%s is not supported: use Decimal(P, S) with P of 1 to 18 and S <= P",
                             t);
        info->type = CB_DECIMAL;
        info->precision = (uint8_t)a;
        info->scale = (uint8_t)b;
        return 0;
    }
    return errf_fail(
        err, errlen, -EINVAL,
        "type %s is not supported in tables: use (U)Int8..64, Float32/64, Bool, String, "
        "FixedString(N), Date, Date32, DateTime, DateTime64(p), Decimal(P, S), "
        "Nullable(T), LowCardinality(String) or Array(T)",
        t);
}

static int parse_codec(const char *c, tp_codec *codec, int *level, char *err, size_t errlen)
{
    *level = 0;
    int lv, e = -1;
    if (!c || strcasecmp(c, "LZ4") == 0 || strcasecmp(c, "Default") == 0) {
        *codec = TP_CODEC_LZ4;
        return 0;
    }
    if (strcasecmp(c, "NONE") == 0) {
        *codec = TP_CODEC_NONE;
        return 0;
    }
    if (strcasecmp(c, "ZSTD") == 0) {
        *codec = TP_CODEC_ZSTD;
        *level = 1;
        return 0;
    }
    if (sscanf(c, "ZSTD(%d)%n", &lv, &e) == 1 && e == (int)strlen(c)) {
        if (lv < 1 || lv > 22)
            return errf_fail(err, errlen, -EINVAL, "CODEC(ZSTD(%d)) needs a level of 1 to 22", lv);
        *codec = TP_CODEC_ZSTD;
        *level = lv;
        return 0;
    }
    return errf_fail(err, errlen, -EINVAL,
                     "CODEC(%s) is not supported: use LZ4, ZSTD, ZSTD(level) or NONE", c);
}

/* ---- table settings --------------------------------------------------------------- */

static void tset_defaults(eng_table_settings *s)
{
    s->index_granularity = TP_DEFAULT_GRANULARITY;
    s->parts_to_delay_insert = 1000;
    s->parts_to_throw_insert = 3000;
    s->max_delay_to_insert = 1;
    s->old_parts_lifetime = TB_DEFAULT_OLD_PARTS_LIFETIME;
    s->max_parts_to_merge_at_once = 100;
    s->max_bytes_to_merge_at_max_space_in_pool = 150ull << 30;
    s->replicated_deduplication_window = TB_DEFAULT_DEDUP_WINDOW;
    s->replicated_deduplication_window_seconds = TB_DEFAULT_DEDUP_WINDOW_SECONDS;
}

static const char *const tset_names[] = {"index_granularity",
                                         "parts_to_delay_insert",
                                         "parts_to_throw_insert",
                                         "max_delay_to_insert",
                                         "old_parts_lifetime",
                                         "max_parts_to_merge_at_once",
                                         "max_bytes_to_merge_at_max_space_in_pool",
                                         "replicated_deduplication_window",
                                         "replicated_deduplication_window_seconds"};
#define N_TSET ((int)(sizeof(tset_names) / sizeof(tset_names[0])))

static uint64_t *tset_field(eng_table_settings *s, int k, uint32_t **u32)
{
    *u32 = NULL;
    switch (k) {
    case 0: *u32 = &s->index_granularity; return NULL;
    case 1: return &s->parts_to_delay_insert;
    case 2: return &s->parts_to_throw_insert;
    case 3: return &s->max_delay_to_insert;
    case 4: return &s->old_parts_lifetime;
    case 5: return &s->max_parts_to_merge_at_once;
    case 6: return &s->max_bytes_to_merge_at_max_space_in_pool;
    case 7: return &s->replicated_deduplication_window;
    default: return &s->replicated_deduplication_window_seconds;
    }
}

static bool setting_u64(const sql_node *v, uint64_t *u)
{
    if (v->kind == SQL_INT && !v->negated) {
        *u = v->u;
        return true;
    }
    if (v->kind == SQL_BOOL) {
        *u = (uint64_t)v->i;
        return true;
    }
    if (v->kind == SQL_STRING && v->s[0] >= '0' && v->s[0] <= '9') {
        char *end;
        *u = strtoull(v->s, &end, 10);
        return *end == 0;
    }
    return false;
}

static int tset_apply(const sql_setting *st, int n, eng_table_settings *s, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++) {
        int k = -1;
        for (int j = 0; j < N_TSET; j++)
            if (strcmp(st[i].name, tset_names[j]) == 0)
                k = j;
        if (k < 0) {
            const char *sg = eng_suggest(st[i].name, tset_names, N_TSET);
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: unknown table setting '%s'%s%s%s", st[i].line,
                             st[i].col, st[i].name, sg ? ", did you mean '" : "", sg ? sg : "",
                             sg ? "'?" : "");
        }
        uint64_t u;
        if (!setting_u64(st[i].value, &u))
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: table setting %s needs a "
                             "non-negative integer",
                             st[i].line, st[i].col, st[i].name);
        uint32_t *u32;
        uint64_t *f = tset_field(s, k, &u32);
        if (u32) {
            if (u < 1 || u > (1u << 24))
                return errf_fail(err, errlen, -EINVAL,
                                 "line %d, column %d: index_granularity needs 1 to %u", st[i].line,
                                 st[i].col, 1u << 24);
            *u32 = (uint32_t)u;
        } else {
            *f = u;
        }
    }
    return 0;
}

/* ---- CREATE TABLE ------------------------------------------------------------------ */

void eng_tdef_free(eng_tdef *d)
{
    for (uint32_t i = 0; d->types && i < d->schema.n_cols; i++)
        free(d->types[i]);
    for (uint32_t i = 0; d->codecs && i < d->schema.n_cols; i++)
        free(d->codecs[i]);
    for (uint32_t i = 0; d->defaults && i < d->schema.n_cols; i++)
        free(d->defaults[i]);
    free(d->types);
    free(d->codecs);
    free(d->defaults);
    free(d->fixed);
    free(d->date16);
    tb_schema_deinit(&d->schema);
    memset(d, 0, sizeof(*d));
}

static int col_index(const sql_table_def *c, const char *name)
{
    for (int i = 0; i < c->n_cols; i++)
        if (strcmp(c->cols[i].name, name) == 0)
            return i;
    return -1;
}

/* Appends to a growing string; false on -ENOMEM. */
typedef struct dstr {
    char *p;
    size_t len, cap;
    bool oom;
} dstr;

static void ds_put(dstr *d, const char *s)
{
    size_t n = strlen(s);
    if (d->oom)
        return;
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 256;
        while (cap < d->len + n + 1)
            cap *= 2;
        char *p = realloc(d->p, cap);
        if (!p) {
            d->oom = true;
            return;
        }
        d->p = p;
        d->cap = cap;
    }
    memcpy(d->p + d->len, s, n + 1);
    d->len += n;
}

static void ds_ident(dstr *d, const char *s)
{
    bool plain = s[0] && !(s[0] >= '0' && s[0] <= '9');
    for (const char *p = s; *p && plain; p++)
        plain = isalnum((unsigned char)*p) || *p == '_';
    if (plain) {
        ds_put(d, s);
        return;
    }
    ds_put(d, "`");
    for (const char *p = s; *p; p++) {
        char c[3] = {*p, 0, 0};
        if (*p == '`' || *p == '\\') {
            c[0] = '\\';
            c[1] = *p;
        }
        ds_put(d, c);
    }
    ds_put(d, "`");
}

static void ds_keys(dstr *d, const sql_table_def *c, const char *clause, char *const *k, int n)
{
    ds_put(d, clause);
    ds_put(d, n == 1 ? " " : " (");
    for (int i = 0; i < n; i++) {
        if (i)
            ds_put(d, ", ");
        if (col_index(c, k[i]) >= 0)
            ds_ident(d, k[i]);
        else
            ds_put(d, k[i]); /* an expression, as written */
    }
    ds_put(d, n == 1 ? "" : ")");
    if (n == 0)
        ds_put(d, "");
}

bool eng_tdef_hidden(const char *name)
{
    return strncmp(name, ENG_KEY_COLUMN, strlen(ENG_KEY_COLUMN)) == 0;
}

/* A sorting key expression (ORDER BY toDate(d)): its value is kept as a
 * stored column of the table (ENG_KEY_COLUMN<k>, filled by its DEFAULT at
 * every INSERT, never shown by SELECT * or DESCRIBE), so that sorting, the
 * sparse index and merges work on it as on any key column. The index of that
 * column, or -EINVAL / -ENOMEM. */
static int key_column(const sql_table_def *c, eng_tdef *out, const char *expr, char *err,
                      size_t errlen)
{
    tb_schema *s = &out->schema;
    for (uint32_t i = (uint32_t)c->n_cols; i < s->n_cols; i++)
        if (out->defaults[i] && strcmp(out->defaults[i], expr) == 0)
            return (int)i; /* ORDER BY and PRIMARY KEY name it both */
    eng_schema sc = {.cols = calloc(s->n_cols + 1, sizeof(eng_col))};
    if (!sc.cols)
        return -ENOMEM;
    int rc = 0;
    for (uint32_t i = 0; i < s->n_cols && rc == 0; i++) {
        sc.cols[i].name = strdup(s->cols[i].name);
        sc.cols[i].t = ex_type_of_column(&s->cols[i].info, s->cols[i].nullable);
        if (out->date16[i])
            sc.cols[i].t.bits = 16;
        sc.cols[i].cb = s->cols[i].info;
        sc.n = (int)i + 1;
        if (!sc.cols[i].name)
            rc = -ENOMEM;
    }
    size_t len = strlen(expr) + 32;
    char *sql = rc == 0 ? malloc(len) : NULL;
    char msg[512] = "";
    sql_stmt *st = NULL;
    eng_mem mem = {0};
    eng_plan plan;
    bool bound = false;
    ex_type t = {0};
    if (rc == 0 && !sql)
        rc = -ENOMEM;
    if (rc == 0) {
        snprintf(sql, len, "SELECT (%s) FROM t", expr);
        rc = sql_parse(sql, strlen(sql), &st, msg, sizeof(msg));
    }
    if (rc == 0 && st->n_items != 1)
        rc = -EINVAL, snprintf(msg, sizeof(msg), "it is not one expression");
    if (rc == 0 && (rc = eng_bind(&mem, st, &sc, &plan, msg, sizeof(msg))) == 0)
        bound = true;
    if (rc == 0 && plan.aggregate)
        rc = -EINVAL, snprintf(msg, sizeof(msg), "it has an aggregate function");
    if (rc == 0 && plan.n_need == 0)
        rc = -EINVAL, snprintf(msg, sizeof(msg), "it reads no column (a constant sorts nothing)");
    if (rc == 0)
        t = plan.outs[0].e->t;
    if (bound)
        eng_plan_free(&mem, &plan);
    sql_stmt_destroy(&st);
    free(sql);
    eng_schema_free(&sc);
    if (rc == -ENOMEM)
        return rc;
    char tn[96] = "";
    ex_type_name(&t, tn, sizeof(tn));
    uint32_t i = s->n_cols;
    tp_column_def *d = &s->cols[i];
    if (rc == 0 && t.nullable)
        rc = -EINVAL, snprintf(msg, sizeof(msg), "its type %s is Nullable: keys cannot be", tn);
    if (rc == 0 && eng_decl_type(tn, &d->info, &d->nullable, &out->fixed[i], &out->date16[i], msg,
                                 sizeof(msg)) < 0)
        rc = -EINVAL;
    if (rc < 0)
        return errf_fail(err, errlen, -EINVAL,
                         "line %d, column %d: the sorting key expression %s cannot be used: %s",
                         c->engine_line, c->engine_col, expr, msg);
    char name[64];
    snprintf(name, sizeof(name), "%s%u", ENG_KEY_COLUMN, i - (uint32_t)c->n_cols + 1);
    d->codec = TP_CODEC_LZ4;
    if (!(d->name = strdup(name)) || !(out->types[i] = strdup(tn)) ||
        !(out->defaults[i] = strdup(expr)))
        return -ENOMEM;
    s->n_cols = i + 1;
    return (int)i;
}

static int tdef_create(const sql_stmt *st, const char *db, eng_tdef *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->schema.version_col = -1;
    tset_defaults(&out->set);
    const sql_table_def *c = st->create;
    if (!c || c->n_cols == 0)
        return errf_fail(err, errlen, -EINVAL,
                         "line %d, column %d: CREATE TABLE %s needs its columns, as in "
                         "CREATE TABLE %s (id UInt64, name String) ENGINE = MergeTree "
                         "ORDER BY id",
                         st->line, st->col, st->table, st->table);
    if (strcmp(c->engine, "MergeTree") != 0 && strcmp(c->engine, "ReplacingMergeTree") != 0)
        return errf_fail(err, errlen, -EINVAL,
                         "line %d, column %d: engine %s is not supported: use MergeTree "
                         "or ReplacingMergeTree([version column])",
                         c->engine_line, c->engine_col, c->engine);
    if (c->engine_arg && strcmp(c->engine, "MergeTree") == 0)
        return errf_fail(err, errlen, -EINVAL, "line %d, column %d: MergeTree takes no arguments",
                         c->engine_line, c->engine_col);
    if (!c->has_order_by && !c->has_primary_key)
        return errf_fail(err, errlen, -EINVAL,
                         "line %d, column %d: a MergeTree table needs ORDER BY (or "
                         "PRIMARY KEY): write ORDER BY (columns), or ORDER BY tuple() "
                         "for none",
                         c->engine_line, c->engine_col);
    int rc = tset_apply(c->settings, c->n_settings, &out->set, err, errlen);
    if (rc < 0)
        return rc;
    tb_schema *s = &out->schema;
    uint32_t n = (uint32_t)c->n_cols;
    /* room for a stored column per key expression after the declared ones */
    size_t nall = (size_t)n + (size_t)c->n_order_by + (size_t)c->n_primary_key + 1;
    s->cols = calloc(nall, sizeof(tp_column_def));
    out->types = calloc(nall, sizeof(char *));
    out->codecs = calloc(nall, sizeof(char *));
    out->defaults = calloc(nall, sizeof(char *));
    out->fixed = calloc(nall, sizeof(uint32_t));
    out->date16 = calloc(nall, sizeof(bool));
    s->engine = strdup(c->engine);
    if (!s->cols || !out->types || !out->codecs || !out->defaults || !out->fixed || !out->date16 ||
        !s->engine)
        goto oom;
    s->n_cols = n; /* every entry starts empty: eng_tdef_free frees what is set */
    for (uint32_t i = 0; i < n; i++) {
        const sql_column_def *cd = &c->cols[i];
        tp_column_def *d = &s->cols[i];
        if (col_index(c, cd->name) != (int)i)
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: column %s is declared twice", cd->line, cd->col,
                             cd->name);
        if (eng_tdef_hidden(cd->name))
            return errf_fail(
                err, errlen, -EINVAL,
                "line %d, column %d: column names starting with %s are kept for sorting "
                "key expressions: rename column %s",
                cd->line, cd->col, ENG_KEY_COLUMN, cd->name);
        char msg[400];
        if (eng_decl_type(cd->type, &d->info, &d->nullable, &out->fixed[i], &out->date16[i], msg,
                          sizeof(msg)) < 0 ||
            parse_codec(cd->codec, &d->codec, &d->level, msg, sizeof(msg)) < 0)
            return errf_fail(err, errlen, -EINVAL, "line %d, column %d: column %s: %s", cd->line,
                             cd->col, cd->name, msg);
        if (!(d->name = strdup(cd->name)) || !(out->types[i] = strdup(cd->type)) ||
            (cd->codec && !(out->codecs[i] = strdup(cd->codec))) ||
            (cd->default_text && !(out->defaults[i] = strdup(cd->default_text))))
            goto oom;
    }
    char *const *keys = c->has_order_by ? c->order_by : c->primary_key;
    int nk = c->has_order_by ? c->n_order_by : c->n_primary_key;
    s->key_cols = calloc((size_t)nk + 1, sizeof(uint32_t));
    if (!s->key_cols)
        goto oom;
    for (int k = 0; k < nk; k++) {
        int i = col_index(c, keys[k]);
        bool name =
            strspn(keys[k], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
            strlen(keys[k]);
        if (i < 0 && name)
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: ORDER BY names column %s, which the "
                             "table does not have",
                             c->engine_line, c->engine_col, keys[k]);
        if (i < 0 && (i = key_column(c, out, keys[k], err, errlen)) < 0)
            return i == -ENOMEM ? (eng_tdef_free(out), snprintf(err, errlen, "out of memory"), i)
                                : i;
        if (s->cols[i].info.type == CB_LIST)
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: the sorting key has Array column %s: arrays "
                             "cannot be in the sorting key",
                             c->engine_line, c->engine_col, keys[k]);
        if (s->cols[i].nullable)
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: the sorting key has Nullable column "
                             "%s: keys cannot be Nullable (declare it %s without "
                             "Nullable)",
                             c->engine_line, c->engine_col, keys[k], keys[k]);
        for (int j = 0; j < k; j++)
            if (s->key_cols[j] == (uint32_t)i)
                return errf_fail(err, errlen, -EINVAL,
                                 "line %d, column %d: ORDER BY names %s twice", c->engine_line,
                                 c->engine_col, keys[k]);
        s->key_cols[k] = (uint32_t)i;
    }
    s->n_key = (uint32_t)nk;
    out->n_primary = (uint32_t)nk;
    if (c->has_order_by && c->has_primary_key) {
        bool prefix = c->n_primary_key <= c->n_order_by; /* names or expressions' texts */
        for (int k = 0; prefix && k < c->n_primary_key; k++)
            prefix = strcmp(c->primary_key[k], c->order_by[k]) == 0;
        if (!prefix)
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: PRIMARY KEY must be a prefix of ORDER "
                             "BY",
                             c->engine_line, c->engine_col);
        out->n_primary = (uint32_t)c->n_primary_key;
    }
    if (c->engine_arg) {
        int i = col_index(c, c->engine_arg);
        if (i < 0)
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: ReplacingMergeTree(%s) names a column "
                             "the table does not have",
                             c->engine_line, c->engine_col, c->engine_arg);
        cb_type t = s->cols[i].info.type;
        if (s->cols[i].nullable || t == CB_STRING || t == CB_BINARY || t == CB_FLOAT ||
            t == CB_DOUBLE || t == CB_DECIMAL || t == CB_BOOL || t == CB_LIST)
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: the version column %s of "
                             "ReplacingMergeTree must be an unsigned or signed integer, "
                             "Date or DateTime (not Nullable)",
                             c->engine_line, c->engine_col, c->engine_arg);
        s->version_col = i;
    }
    if (c->partition_text && !(s->partition_by = strdup(c->partition_text)))
        goto oom;
    s->index_granularity = out->set.index_granularity;
    s->schema_version = 1;
    /* the normalised statement */
    dstr d = {0};
    ds_put(&d, "CREATE TABLE ");
    ds_ident(&d, db);
    ds_put(&d, ".");
    ds_ident(&d, st->table);
    ds_put(&d, " (");
    for (uint32_t i = 0; i < n; i++) {
        ds_put(&d, i ? ", " : "");
        ds_ident(&d, s->cols[i].name);
        ds_put(&d, " ");
        ds_put(&d, out->types[i]);
        if (out->defaults[i]) {
            ds_put(&d, " DEFAULT ");
            ds_put(&d, out->defaults[i]);
        }
        if (out->codecs[i]) {
            ds_put(&d, " CODEC(");
            ds_put(&d, out->codecs[i]);
            ds_put(&d, ")");
        }
    }
    ds_put(&d, ") ENGINE = ");
    ds_put(&d, c->engine);
    if (c->engine_arg) {
        ds_put(&d, "(");
        ds_ident(&d, c->engine_arg);
        ds_put(&d, ")");
    }
    if (c->partition_text) {
        ds_put(&d, " PARTITION BY ");
        ds_put(&d, c->partition_text);
    }
    if (c->has_primary_key)
        ds_keys(&d, c, " PRIMARY KEY", c->primary_key, c->n_primary_key);
    if (nk == 0)
        ds_put(&d, " ORDER BY tuple()");
    else
        ds_keys(&d, c, " ORDER BY", keys, nk);
    for (int i = 0; i < N_TSET; i++) {
        uint32_t *u32;
        uint64_t *f = tset_field(&out->set, i, &u32);
        eng_table_settings def;
        tset_defaults(&def);
        uint32_t *du32;
        uint64_t *df = tset_field(&def, i, &du32);
        char num[32];
        if (u32 && i == 0) {
            snprintf(num, sizeof(num), "%u", *u32);
        } else if (f && *f != *df) {
            snprintf(num, sizeof(num), "%llu", (unsigned long long)*f);
        } else {
            continue;
        }
        ds_put(&d, d.p && strstr(d.p, " SETTINGS ") ? ", " : " SETTINGS ");
        ds_put(&d, tset_names[i]);
        ds_put(&d, " = ");
        ds_put(&d, num);
    }
    if (d.oom) {
        free(d.p);
        goto oom;
    }
    s->ddl = d.p;
    return 0;
oom:
    eng_tdef_free(out);
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

int eng_tdef_from_create(const sql_stmt *st, const char *db, eng_tdef *out, char *err,
                         size_t errlen)
{
    int rc = tdef_create(st, db, out, err, errlen);
    if (rc < 0 && rc != -ENOMEM)
        eng_tdef_free(out); /* -ENOMEM freed it already */
    return rc;
}

int eng_tdef_from_schema(const tb_schema *s, eng_tdef *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char msg[512];
    if (s->ddl) {
        sql_stmt *st;
        int rc = sql_parse(s->ddl, strlen(s->ddl), &st, msg, sizeof(msg));
        if (rc == 0 && st->kind != SQL_CREATE_TABLE)
            rc = -EINVAL;
        if (rc == 0) {
            rc = eng_tdef_from_create(st, st->table_db ? st->table_db : "default", out, msg,
                                      sizeof(msg));
        }
        sql_stmt_destroy(&st);
        if (rc < 0) {
            snprintf(err, errlen, "the table's definition in its log does not read back: %s", msg);
            return -EBADMSG;
        }
        /* the log's schema is the storage's truth; the statement gave the rest */
        tb_schema_deinit(&out->schema);
        if (tb_schema_copy(&out->schema, s) < 0) {
            eng_tdef_free(out);
            return -ENOMEM;
        }
        return 0;
    }
    tset_defaults(&out->set);
    uint32_t n = s->n_cols;
    out->types = calloc(n + 1, sizeof(char *));
    out->codecs = calloc(n + 1, sizeof(char *));
    out->defaults = calloc(n + 1, sizeof(char *));
    out->fixed = calloc(n + 1, sizeof(uint32_t));
    out->date16 = calloc(n + 1, sizeof(bool));
    if (!out->types || !out->codecs || !out->defaults || !out->fixed || !out->date16 ||
        tb_schema_copy(&out->schema, s) < 0) {
        eng_tdef_free(out);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        ex_type t = ex_type_of_column(&s->cols[i].info, s->cols[i].nullable);
        char tn[96];
        ex_type_name(&t, tn, sizeof(tn));
        if (!(out->types[i] = strdup(tn))) {
            eng_tdef_free(out);
            return -ENOMEM;
        }
    }
    out->n_primary = s->n_key;
    out->set.index_granularity = s->index_granularity;
    return 0;
}

/* ---- INSERT settings ------------------------------------------------------------------- */

static const char *const iset_names[] = {"max_insert_threads",
                                         "min_insert_block_size_rows",
                                         "min_insert_block_size_bytes",
                                         "insert_deduplicate",
                                         "insert_deduplication_token",
                                         "optimize_on_insert",
                                         "max_insert_delayed_streams_for_parallel_write",
                                         "parts_to_delay_insert",
                                         "parts_to_throw_insert",
                                         "max_delay_to_insert"};
#define N_ISET ((int)(sizeof(iset_names) / sizeof(iset_names[0])))

bool eng_insert_setting_known(const char *name)
{
    for (int i = 0; i < N_ISET; i++)
        if (strcmp(name, iset_names[i]) == 0)
            return true;
    return false;
}

int eng_insert_settings_apply(const sql_stmt *st, const eng_table_settings *ts,
                              eng_insert_settings *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->max_insert_threads = 1;
    o->min_insert_block_size_rows = 1048449;
    o->min_insert_block_size_bytes = 268435456;
    o->insert_deduplicate = true;
    o->optimize_on_insert = true;
    o->parts_to_delay_insert = ts ? ts->parts_to_delay_insert : 1000;
    o->parts_to_throw_insert = ts ? ts->parts_to_throw_insert : 3000;
    o->max_delay_to_insert = ts ? ts->max_delay_to_insert : 1;
    for (int i = 0; st && i < st->n_settings; i++) {
        const sql_setting *x = &st->settings[i];
        int k = -1;
        for (int j = 0; j < N_ISET; j++)
            if (strcmp(x->name, iset_names[j]) == 0)
                k = j;
        if (k < 0)
            continue; /* a query setting (eng_settings_apply checks those) */
        if (k == 4) {
            if (x->value->kind != SQL_STRING ||
                x->value->slen >= sizeof(o->insert_deduplication_token))
                return errf_fail(err, errlen, -EINVAL,
                                 "line %d, column %d: insert_deduplication_token needs a "
                                 "string of up to %zu bytes",
                                 x->line, x->col, sizeof(o->insert_deduplication_token) - 1);
            memcpy(o->insert_deduplication_token, x->value->s, x->value->slen + 1);
            continue;
        }
        uint64_t u;
        if (!setting_u64(x->value, &u))
            return errf_fail(err, errlen, -EINVAL,
                             "line %d, column %d: setting %s needs a non-negative integer", x->line,
                             x->col, x->name);
        switch (k) {
        case 0: o->max_insert_threads = u > 256 ? 256 : u == 0 ? 1 : (int)u; break;
        case 1: o->min_insert_block_size_rows = u; break;
        case 2: o->min_insert_block_size_bytes = u; break;
        case 3: o->insert_deduplicate = u != 0; break;
        case 5: o->optimize_on_insert = u != 0; break;
        case 6: o->max_insert_delayed_streams_for_parallel_write = u; break;
        case 7: o->parts_to_delay_insert = u; break;
        case 8: o->parts_to_throw_insert = u; break;
        default: o->max_delay_to_insert = u; break;
        }
    }
    return 0;
}
