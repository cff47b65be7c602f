/* SPDX-License-Identifier: Apache-2.0
 *
 * tb_log.c: the commit log's objects (versions and checkpoints, JSON) and
 * the state they fold into. Decoding checks every field, since the bytes come
 * back from S3 (fuzzed: tests/fuzz/table_log); applying a version checks that
 * it follows the state (the next number, removals of active parts only), so a
 * log that does not add up is an error naming the version, never a silently
 * different table. Pure: no I/O.
 *
 * A version:
 *   {"format":1,"version":42,"writer":"<32 hex>","time_ms":1733000000000,
 *    "kind":"insert","schema_version":1,
 *    "add":[{"name":"2019_<32 hex>","partition":"2019","rows":8192,"bytes":123456,
 *            "min_block":42,"max_block":42,"level":0}],
 *    "remove":["..."],"purge":["..."],
 *    "dedup":[{"id":"2019_<32 hex>","time_ms":1733000000000}],
 *    "schema":{...}}                       (version 0 only)
 * A checkpoint: {"format":1,"version":40,"time_ms":..,"schema":{..},
 *    "parts":[part + "created_ms"],"removed":[part + "removed_ms"],"dedup":[..]}
 */
#include "errf.h"
#include "tb_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tb__name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return n > 0 && n < TB_NAME_MAX;
}

/* ---- schema ------------------------------------------------------------------ */

void tb_schema_deinit(tb_schema *s)
{
    for (uint32_t i = 0; s->cols && i < s->n_cols; i++)
        free((char *)s->cols[i].name);
    free(s->cols);
    free(s->key_cols);
    free(s->partition_by);
    free(s->engine);
    free(s->ddl);
    memset(s, 0, sizeof(*s));
    s->version_col = -1;
}

int tb_schema_copy(tb_schema *d, const tb_schema *s)
{
    memset(d, 0, sizeof(*d));
    *d = *s;
    d->cols = calloc(s->n_cols + 1, sizeof(tp_column_def));
    d->key_cols = calloc(s->n_key + 1, sizeof(uint32_t));
    d->partition_by = s->partition_by ? strdup(s->partition_by) : NULL;
    d->engine = strdup(s->engine ? s->engine : "MergeTree");
    d->ddl = s->ddl ? strdup(s->ddl) : NULL;
    bool ok = d->cols && d->key_cols && d->engine && (!s->partition_by || d->partition_by) &&
              (!s->ddl || d->ddl);
    for (uint32_t i = 0; ok && i < s->n_cols; i++) {
        d->cols[i] = s->cols[i];
        ok = (d->cols[i].name = strdup(s->cols[i].name)) != NULL;
    }
    if (ok && s->n_key)
        memcpy(d->key_cols, s->key_cols, s->n_key * sizeof(uint32_t));
    if (!ok) {
        d->n_cols = 0;
        for (uint32_t i = 0; d->cols && i < s->n_cols; i++)
            free((char *)d->cols[i].name);
        free(d->cols);
        d->cols = NULL;
        tb_schema_deinit(d);
        return -ENOMEM;
    }
    return 0;
}

static const char *codec_name(tp_codec c)
{
    return c == TP_CODEC_ZSTD ? "zstd" : c == TP_CODEC_NONE ? "none" : "lz4";
}

int tb__schema_write(const tb_schema *s, tp__bytes *o)
{
    int rc = tj_put_raw(o, "{\"schema_version\":");
    rc |= tj_put_i64(o, (int64_t)s->schema_version);
    rc |= tj_put_raw(o, ",\"engine\":");
    rc |= tj_put_str(o, s->engine ? s->engine : "MergeTree");
    rc |= tj_put_raw(o, ",\"version_column\":");
    rc |= s->version_col >= 0 ? tj_put_str(o, s->cols[s->version_col].name) : tj_put_raw(o, "null");
    rc |= tj_put_raw(o, ",\"partition_by\":");
    rc |= s->partition_by ? tj_put_str(o, s->partition_by) : tj_put_raw(o, "null");
    rc |= tj_put_raw(o, ",\"index_granularity\":");
    rc |= tj_put_i64(o, s->index_granularity);
    if (s->ddl) {
        rc |= tj_put_raw(o, ",\"ddl\":");
        rc |= tj_put_str(o, s->ddl);
    }
    rc |= tj_put_raw(o, ",\"order_by\":[");
    for (uint32_t k = 0; k < s->n_key; k++) {
        rc |= k ? tj_put_raw(o, ",") : 0;
        rc |= tj_put_str(o, s->cols[s->key_cols[k]].name);
    }
    rc |= tj_put_raw(o, "],\"columns\":[");
    for (uint32_t i = 0; i < s->n_cols; i++) {
        const tp_column_def *c = &s->cols[i];
        rc |= tj_put_raw(o, i ? ",{\"name\":" : "{\"name\":");
        rc |= tj_put_str(o, c->name);
        rc |= tj_put_raw(o, ",\"type\":");
        rc |= tj_put_str(o, cb_type_name(c->info.type));
        if (c->info.type == CB_LIST) {
            rc |= tj_put_raw(o, ",\"elem\":");
            rc |= tj_put_str(o, cb_type_name(c->info.elem));
            rc |= tj_put_raw(o, c->info.elem_null ? ",\"elem_null\":true" : ",\"elem_null\":false");
        }
        rc |= tj_put_raw(o, ",\"unit\":");
        rc |= tj_put_i64(o, c->info.unit);
        rc |= tj_put_raw(o, c->info.utc ? ",\"utc\":true" : ",\"utc\":false");
        rc |= tj_put_raw(o, ",\"precision\":");
        rc |= tj_put_i64(o, c->info.precision);
        rc |= tj_put_raw(o, ",\"scale\":");
        rc |= tj_put_i64(o, c->info.scale);
        rc |= tj_put_raw(o, c->nullable ? ",\"nullable\":true" : ",\"nullable\":false");
        rc |= tj_put_raw(o, ",\"codec\":");
        rc |= tj_put_str(o, codec_name(c->codec));
        rc |= tj_put_raw(o, ",\"level\":");
        rc |= tj_put_i64(o, c->level);
        rc |= tj_put_raw(o, "}");
    }
    rc |= tj_put_raw(o, "]}");
    return rc ? -ENOMEM : 0;
}

/* The storage type cb_type_name names, 0 for none. */
static cb_type type_named(const char *name)
{
    for (int t = CB_BOOL; t <= CB_LIST; t++)
        if (strcmp(cb_type_name((cb_type)t), name) == 0)
            return (cb_type)t;
    return 0;
}

#define BADJ(...)                                                                                  \
    do {                                                                                           \
        rc = errf_fail(err, errlen, -EBADMSG, __VA_ARGS__);                                        \
        goto fail;                                                                                 \
    } while (0)

static bool get_int(const tj_val *o, const char *k, int64_t lo, int64_t hi, int64_t *out)
{
    const tj_val *v = tj_get(o, k);
    if (!v || v->kind != TJ_INT || v->i < lo || v->i > hi)
        return false;
    *out = v->i;
    return true;
}

static const char *get_str(const tj_val *o, const char *k)
{
    const tj_val *v = tj_get(o, k);
    return v && v->kind == TJ_STR && strlen(v->s) == v->len ? v->s : NULL;
}

static int find_col(const tb_schema *s, const char *name)
{
    for (uint32_t i = 0; i < s->n_cols; i++)
        if (strcmp(s->cols[i].name, name) == 0)
            return (int)i;
    return -1;
}

int tb__schema_parse(const tj_val *v, tb_schema *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->version_col = -1;
    int rc = 0;
    int64_t x;
    if (!v || v->kind != TJ_OBJ)
        return errf_fail(err, errlen, -EBADMSG, "the schema is not an object");
    const tj_val *cols = tj_get(v, "columns"), *ob = tj_get(v, "order_by");
    if (!cols || cols->kind != TJ_ARR || !cols->n || cols->n > TP_MAX_COLUMNS)
        return errf_fail(err, errlen, -EBADMSG, "the schema has no column list");
    if (!ob || ob->kind != TJ_ARR || ob->n > cols->n)
        return errf_fail(err, errlen, -EBADMSG, "the schema has no ORDER BY list");
    s->cols = calloc(cols->n, sizeof(tp_column_def));
    s->key_cols = calloc(ob->n + 1, sizeof(uint32_t));
    const char *eng = get_str(v, "engine");
    s->engine = strdup(eng ? eng : "");
    if (!s->cols || !s->key_cols || !s->engine) {
        rc = -ENOMEM;
        goto fail;
    }
    if (!eng || (strcmp(eng, "MergeTree") && strcmp(eng, "ReplacingMergeTree")))
        BADJ("the schema's engine is not MergeTree or ReplacingMergeTree");
    if (!get_int(v, "schema_version", 1, INT64_MAX, &x))
        BADJ("the schema has no schema_version");
    s->schema_version = (uint64_t)x;
    if (!get_int(v, "index_granularity", 1, 1 << 24, &x))
        BADJ("the schema's index_granularity is missing or out of range");
    s->index_granularity = (uint32_t)x;
    const tj_val *ddl = tj_get(v, "ddl");
    if (ddl) {
        if (ddl->kind != TJ_STR || strlen(ddl->s) != ddl->len)
            BADJ("the schema's ddl is not a string");
        if (!(s->ddl = strdup(ddl->s))) {
            rc = -ENOMEM;
            goto fail;
        }
    }
    for (size_t i = 0; i < cols->n; i++) {
        const tj_val *c = &cols->items[i];
        const char *name = get_str(c, "name"), *type = get_str(c, "type"),
                   *codec = get_str(c, "codec");
        if (!name || !name[0] || strlen(name) > TP__MAX_NAME || !type)
            BADJ("column %zu of the schema has no name or type", i);
        tp_column_def *d = &s->cols[s->n_cols];
        d->name = strdup(name);
        if (!d->name) {
            rc = -ENOMEM;
            goto fail;
        }
        s->n_cols++;
        if (find_col(s, name) != (int)s->n_cols - 1)
            BADJ("the schema names column %s twice", name);
        d->info.type = type_named(type);
        if (d->info.type == CB_LIST) {
            const char *et = get_str(c, "elem");
            const tj_val *en = tj_get(c, "elem_null");
            if (!et || !en || en->kind != TJ_BOOL)
                BADJ("column %s of the schema is an Array without its element type", name);
            d->info.elem = type_named(et);
            d->info.elem_null = en->b;
        }
        int64_t unit = 0, prec = 0, scale = 0, level = 0;
        const tj_val *utc = tj_get(c, "utc"), *nul = tj_get(c, "nullable");
        if (!d->info.type || !get_int(c, "unit", 0, 3, &unit) ||
            !get_int(c, "precision", 0, 38, &prec) || !get_int(c, "scale", 0, 38, &scale) ||
            !get_int(c, "level", -7, 22, &level) || !utc || utc->kind != TJ_BOOL || !nul ||
            nul->kind != TJ_BOOL || !codec)
            BADJ("column %s of the schema has a bad type description", name);
        d->info.unit = (cb_unit)unit;
        d->info.precision = (uint8_t)prec;
        d->info.scale = (uint8_t)scale;
        d->info.utc = utc->b;
        d->nullable = nul->b;
        d->level = (int)level;
        if (!tp__type_valid(&d->info))
            BADJ("column %s of the schema has an invalid type", name);
        if (!strcmp(codec, "lz4"))
            d->codec = TP_CODEC_LZ4;
        else if (!strcmp(codec, "zstd"))
            d->codec = TP_CODEC_ZSTD;
        else if (!strcmp(codec, "none"))
            d->codec = TP_CODEC_NONE;
        else
            BADJ("column %s of the schema has an unknown codec", name);
    }
    for (size_t k = 0; k < ob->n; k++) {
        const tj_val *e = &ob->items[k];
        int ci = e->kind == TJ_STR ? find_col(s, e->s) : -1;
        if (ci < 0 || s->cols[ci].nullable)
            BADJ("ORDER BY entry %zu of the schema is not a non-Nullable column", k);
        s->key_cols[s->n_key++] = (uint32_t)ci;
    }
    const tj_val *vc = tj_get(v, "version_column"), *pb = tj_get(v, "partition_by");
    if (vc && vc->kind == TJ_STR) {
        if ((s->version_col = find_col(s, vc->s)) < 0)
            BADJ("the schema's version column is not a column");
    } else if (vc && vc->kind != TJ_NULL) {
        BADJ("the schema's version column is not a name");
    }
    if (pb && pb->kind == TJ_STR) {
        if (!(s->partition_by = strdup(pb->s))) {
            rc = -ENOMEM;
            goto fail;
        }
    } else if (pb && pb->kind != TJ_NULL) {
        BADJ("the schema's partition_by is not text");
    }
    return 0;
fail:
    tb_schema_deinit(s);
    return rc;
}

/* ---- parts, snapshots ------------------------------------------------------- */

void tb__part_deinit(tb_part *p)
{
    free(p->name);
    free(p->partition);
    free(p->etag);
    memset(p, 0, sizeof(*p));
}

int tb__part_copy(tb_part *d, const tb_part *s)
{
    *d = *s;
    d->name = strdup(s->name);
    d->partition = strdup(s->partition);
    d->etag = s->etag ? strdup(s->etag) : NULL;
    if (!d->name || !d->partition || (s->etag && !d->etag)) {
        tb__part_deinit(d);
        return -ENOMEM;
    }
    return 0;
}

void tb__snapshot_deinit(tb_snapshot *s)
{
    for (size_t i = 0; i < s->n_parts; i++)
        tb__part_deinit(&s->parts[i]);
    for (size_t i = 0; i < s->n_removed; i++)
        tb__part_deinit(&s->removed[i]);
    for (size_t i = 0; i < s->n_dedup; i++)
        free(s->dedup[i].id);
    free(s->parts);
    free(s->removed);
    free(s->dedup);
    tb_schema_deinit(&s->schema);
    memset(s, 0, sizeof(*s));
}

void tb_snapshot_destroy(tb_snapshot **sp)
{
    if (!sp || !*sp)
        return;
    tb__snapshot_deinit(*sp);
    free(*sp);
    *sp = NULL;
}

int tb__snapshot_copy(tb_snapshot *d, const tb_snapshot *s)
{
    memset(d, 0, sizeof(*d));
    d->version = s->version;
    d->time_ms = s->time_ms;
    int rc = tb_schema_copy(&d->schema, &s->schema);
    if (rc < 0)
        return rc;
    d->parts = calloc(s->n_parts + 1, sizeof(tb_part));
    d->removed = calloc(s->n_removed + 1, sizeof(tb_part));
    d->dedup = calloc(s->n_dedup + 1, sizeof(tb_dedup_id));
    if (!d->parts || !d->removed || !d->dedup)
        goto oom;
    for (size_t i = 0; i < s->n_parts; i++, d->n_parts++)
        if (tb__part_copy(&d->parts[i], &s->parts[i]) < 0)
            goto oom;
    for (size_t i = 0; i < s->n_removed; i++, d->n_removed++)
        if (tb__part_copy(&d->removed[i], &s->removed[i]) < 0)
            goto oom;
    for (size_t i = 0; i < s->n_dedup; i++, d->n_dedup++) {
        d->dedup[i].time_ms = s->dedup[i].time_ms;
        if (!(d->dedup[i].id = strdup(s->dedup[i].id)))
            goto oom;
    }
    return 0;
oom:
    tb__snapshot_deinit(d);
    return -ENOMEM;
}

const tb_part *tb_snapshot_part(const tb_snapshot *s, const char *name)
{
    for (size_t i = 0; i < s->n_parts; i++)
        if (strcmp(s->parts[i].name, name) == 0)
            return &s->parts[i];
    return NULL;
}

/* ---- versions ---------------------------------------------------------------- */

void tb__version_free(tb__version *v)
{
    for (size_t i = 0; i < v->n_add; i++)
        tb__part_deinit(&v->add[i]);
    free(v->add);
    for (size_t i = 0; i < v->n_remove; i++)
        free(v->remove[i]);
    free(v->remove);
    for (size_t i = 0; i < v->n_purge; i++)
        free(v->purge[i]);
    free(v->purge);
    for (size_t i = 0; i < v->n_dedup; i++)
        free(v->dedup[i].id);
    free(v->dedup);
    if (v->has_schema)
        tb_schema_deinit(&v->schema);
    memset(v, 0, sizeof(*v));
}

static const char *kind_name(int k)
{
    switch (k) {
    case TB_COMMIT_INSERT: return "insert";
    case TB_COMMIT_MERGE: return "merge";
    case TB_COMMIT_PURGE: return "purge";
    case TB_COMMIT_TRUNCATE: return "truncate";
    default: return "create";
    }
}

static int put_part(tp__bytes *o, const tb_part *p, bool created, bool removed)
{
    int rc = tj_put_raw(o, "{\"name\":");
    rc |= tj_put_str(o, p->name);
    rc |= tj_put_raw(o, ",\"partition\":");
    rc |= tj_put_str(o, p->partition);
    rc |= tj_put_raw(o, ",\"rows\":");
    rc |= tj_put_i64(o, (int64_t)p->rows);
    rc |= tj_put_raw(o, ",\"bytes\":");
    rc |= tj_put_i64(o, (int64_t)p->bytes);
    rc |= tj_put_raw(o, ",\"min_block\":");
    rc |= tj_put_i64(o, (int64_t)p->min_block);
    rc |= tj_put_raw(o, ",\"max_block\":");
    rc |= tj_put_i64(o, (int64_t)p->max_block);
    rc |= tj_put_raw(o, ",\"level\":");
    rc |= tj_put_i64(o, p->level);
    if (p->granules) {
        rc |= tj_put_raw(o, ",\"granules\":");
        rc |= tj_put_i64(o, p->granules);
        rc |= tj_put_raw(o, ",\"compressed\":");
        rc |= tj_put_i64(o, (int64_t)p->compressed_bytes);
        rc |= tj_put_raw(o, ",\"uncompressed\":");
        rc |= tj_put_i64(o, (int64_t)p->uncompressed_bytes);
    }
    if (p->etag && p->etag[0]) {
        rc |= tj_put_raw(o, ",\"etag\":");
        rc |= tj_put_str(o, p->etag);
    }
    if (created) {
        rc |= tj_put_raw(o, ",\"created_ms\":");
        rc |= tj_put_i64(o, p->created_ms);
    }
    if (removed) {
        rc |= tj_put_raw(o, ",\"removed_ms\":");
        rc |= tj_put_i64(o, p->removed_ms);
    }
    return rc | tj_put_raw(o, "}");
}

static int put_dedup(tp__bytes *o, const tb_dedup_id *d, size_t n)
{
    int rc = tj_put_raw(o, "[");
    for (size_t i = 0; i < n; i++) {
        rc |= tj_put_raw(o, i ? ",{\"id\":" : "{\"id\":");
        rc |= tj_put_str(o, d[i].id);
        rc |= tj_put_raw(o, ",\"time_ms\":");
        rc |= tj_put_i64(o, d[i].time_ms);
        rc |= tj_put_raw(o, "}");
    }
    return rc | tj_put_raw(o, "]");
}

static int put_names(tp__bytes *o, char *const *names, size_t n)
{
    int rc = tj_put_raw(o, "[");
    for (size_t i = 0; i < n; i++) {
        rc |= i ? tj_put_raw(o, ",") : 0;
        rc |= tj_put_str(o, names[i]);
    }
    return rc | tj_put_raw(o, "]");
}

int tb__version_write(const tb__version *v, tp__bytes *o)
{
    int rc = tj_put_raw(o, "{\"format\":1,\"version\":");
    rc |= tj_put_i64(o, (int64_t)v->version);
    rc |= tj_put_raw(o, ",\"writer\":");
    rc |= tj_put_str(o, v->writer);
    rc |= tj_put_raw(o, ",\"time_ms\":");
    rc |= tj_put_i64(o, v->time_ms);
    rc |= tj_put_raw(o, ",\"kind\":");
    rc |= tj_put_str(o, kind_name(v->kind));
    rc |= tj_put_raw(o, ",\"schema_version\":");
    rc |= tj_put_i64(o, (int64_t)v->schema_version);
    rc |= tj_put_raw(o, ",\"add\":[");
    for (size_t i = 0; i < v->n_add; i++) {
        rc |= i ? tj_put_raw(o, ",") : 0;
        rc |= put_part(o, &v->add[i], false, false);
    }
    rc |= tj_put_raw(o, "],\"remove\":");
    rc |= put_names(o, v->remove, v->n_remove);
    rc |= tj_put_raw(o, ",\"purge\":");
    rc |= put_names(o, v->purge, v->n_purge);
    rc |= tj_put_raw(o, ",\"dedup\":");
    rc |= put_dedup(o, v->dedup, v->n_dedup);
    if (v->has_schema) {
        rc |= tj_put_raw(o, ",\"schema\":");
        rc |= tb__schema_write(&v->schema, o);
    }
    rc |= tj_put_raw(o, "}\n");
    return rc ? -ENOMEM : 0;
}

static int parse_part(const tj_val *e, tb_part *p, bool created, bool removed, char *err,
                      size_t errlen)
{
    memset(p, 0, sizeof(*p));
    const char *name = get_str(e, "name"), *part = get_str(e, "partition");
    int64_t rows, bytes, mn, mx, lvl, c = 0, r = 0;
    if (!name || !tb__name_ok(name) || !part || !tb__name_ok(part))
        return errf_fail(err, errlen, -EBADMSG, "a part has no valid name or partition");
    if (!get_int(e, "rows", 1, INT64_MAX, &rows) || !get_int(e, "bytes", 1, INT64_MAX, &bytes) ||
        !get_int(e, "min_block", 0, INT64_MAX, &mn) ||
        !get_int(e, "max_block", mn, INT64_MAX, &mx) || !get_int(e, "level", 0, 1000, &lvl) ||
        (created && !get_int(e, "created_ms", 0, INT64_MAX, &c)) ||
        (removed && !get_int(e, "removed_ms", 0, INT64_MAX, &r)))
        return errf_fail(err, errlen, -EBADMSG, "part %s has a missing or bad field", name);
    p->name = strdup(name);
    p->partition = strdup(part);
    if (!p->name || !p->partition) {
        tb__part_deinit(p);
        return -ENOMEM;
    }
    p->rows = (uint64_t)rows;
    p->bytes = (uint64_t)bytes;
    p->min_block = (uint64_t)mn;
    p->max_block = (uint64_t)mx;
    p->level = (uint32_t)lvl;
    p->created_ms = c;
    p->removed_ms = r;
    /* optional: the object's version (its writer's put told it) */
    const char *etag = get_str(e, "etag");
    if (etag && etag[0] && strlen(etag) < S3_ETAG_MAX && !(p->etag = strdup(etag))) {
        tb__part_deinit(p);
        return -ENOMEM;
    }
    /* optional: what system.parts shows (absent in logs of older writers) */
    int64_t g, cb, ub;
    if (get_int(e, "granules", 1, UINT32_MAX, &g) && get_int(e, "compressed", 0, INT64_MAX, &cb) &&
        get_int(e, "uncompressed", 0, INT64_MAX, &ub)) {
        p->granules = (uint32_t)g;
        p->compressed_bytes = (uint64_t)cb;
        p->uncompressed_bytes = (uint64_t)ub;
    }
    return 0;
}

static int parse_parts(const tj_val *a, tb_part **out, size_t *n, bool created, bool removed,
                       char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!a || a->kind != TJ_ARR)
        return errf_fail(err, errlen, -EBADMSG, "a part list is missing");
    tb_part *p = calloc(a->n + 1, sizeof(tb_part));
    if (!p)
        return -ENOMEM;
    for (size_t i = 0; i < a->n; i++) {
        int rc = parse_part(&a->items[i], &p[i], created, removed, err, errlen);
        if (rc < 0) {
            for (size_t j = 0; j < i; j++)
                tb__part_deinit(&p[j]);
            free(p);
            return rc;
        }
    }
    *out = p;
    *n = a->n;
    return 0;
}

static int parse_names(const tj_val *a, char ***out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!a || a->kind != TJ_ARR)
        return errf_fail(err, errlen, -EBADMSG, "a list of part names is missing");
    char **s = calloc(a->n + 1, sizeof(char *));
    if (!s)
        return -ENOMEM;
    for (size_t i = 0; i < a->n; i++) {
        const tj_val *e = &a->items[i];
        if (e->kind != TJ_STR || strlen(e->s) != e->len || !tb__name_ok(e->s) ||
            !(s[i] = strdup(e->s))) {
            for (size_t j = 0; j < i; j++)
                free(s[j]);
            free(s);
            return e->kind == TJ_STR && tb__name_ok(e->s)
                       ? -ENOMEM
                       : errf_fail(err, errlen, -EBADMSG,
                                   "entry %zu of a part list is not a part name", i);
        }
    }
    *out = s;
    *n = a->n;
    return 0;
}

static int parse_dedup(const tj_val *a, tb_dedup_id **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!a || a->kind != TJ_ARR)
        return errf_fail(err, errlen, -EBADMSG, "the dedup list is missing");
    tb_dedup_id *d = calloc(a->n + 1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    for (size_t i = 0; i < a->n; i++) {
        const char *id = get_str(&a->items[i], "id");
        int64_t t;
        if (!id || !tb__name_ok(id) || !get_int(&a->items[i], "time_ms", 0, INT64_MAX, &t) ||
            !(d[i].id = strdup(id))) {
            for (size_t j = 0; j < i; j++)
                free(d[j].id);
            free(d);
            return errf_fail(err, errlen, -EBADMSG, "dedup entry %zu is damaged", i);
        }
        d[i].time_ms = t;
    }
    *out = d;
    *n = a->n;
    return 0;
}

int tb__version_parse(const char *buf, size_t len, tb__version *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    tj_val j;
    int rc = tj_parse(buf, len, &j, err, errlen);
    if (rc < 0)
        return rc;
    int64_t x;
    const char *w = get_str(&j, "writer"), *kind = get_str(&j, "kind");
    if (j.kind != TJ_OBJ || !get_int(&j, "format", 1, 1, &x))
        BADJ("not a log version of format 1");
    if (!get_int(&j, "version", 0, INT64_MAX, &x))
        BADJ("the version number is missing");
    v->version = (uint64_t)x;
    if (!w || strlen(w) != 32 || strspn(w, "0123456789abcdef") != 32)
        BADJ("the writer id is missing or not 32 hex digits");
    memcpy(v->writer, w, 33);
    if (!get_int(&j, "time_ms", 0, INT64_MAX, &v->time_ms))
        BADJ("the time is missing");
    if (!get_int(&j, "schema_version", 1, INT64_MAX, &x))
        BADJ("the schema version is missing");
    v->schema_version = (uint64_t)x;
    if (!kind)
        BADJ("the kind is missing");
    v->kind = !strcmp(kind, "insert")     ? TB_COMMIT_INSERT
              : !strcmp(kind, "merge")    ? TB_COMMIT_MERGE
              : !strcmp(kind, "purge")    ? TB_COMMIT_PURGE
              : !strcmp(kind, "truncate") ? TB_COMMIT_TRUNCATE
              : !strcmp(kind, "create")   ? 0
                                          : -1;
    if (v->kind < 0)
        BADJ("unknown kind %s", kind);
    if ((rc = parse_parts(tj_get(&j, "add"), &v->add, &v->n_add, false, false, err, errlen)) < 0 ||
        (rc = parse_names(tj_get(&j, "remove"), &v->remove, &v->n_remove, err, errlen)) < 0 ||
        (rc = parse_names(tj_get(&j, "purge"), &v->purge, &v->n_purge, err, errlen)) < 0 ||
        (rc = parse_dedup(tj_get(&j, "dedup"), &v->dedup, &v->n_dedup, err, errlen)) < 0)
        goto fail;
    const tj_val *sch = tj_get(&j, "schema");
    if (sch) {
        if ((rc = tb__schema_parse(sch, &v->schema, err, errlen)) < 0)
            goto fail;
        v->has_schema = true;
    }
    if ((v->version == 0) != v->has_schema || (v->version == 0) != (v->kind == 0))
        BADJ("only version 0 creates the table and carries the schema");
    tj_free(&j);
    return 0;
fail:
    tj_free(&j);
    tb__version_free(v);
    return rc;
}

/* ---- checkpoints ------------------------------------------------------------- */

int tb__checkpoint_write(const tb_snapshot *s, tp__bytes *o)
{
    int rc = tj_put_raw(o, "{\"format\":1,\"version\":");
    rc |= tj_put_i64(o, (int64_t)s->version);
    rc |= tj_put_raw(o, ",\"time_ms\":");
    rc |= tj_put_i64(o, s->time_ms);
    rc |= tj_put_raw(o, ",\"schema\":");
    rc |= tb__schema_write(&s->schema, o);
    rc |= tj_put_raw(o, ",\"parts\":[");
    for (size_t i = 0; i < s->n_parts; i++) {
        rc |= i ? tj_put_raw(o, ",") : 0;
        rc |= put_part(o, &s->parts[i], true, false);
    }
    rc |= tj_put_raw(o, "],\"removed\":[");
    for (size_t i = 0; i < s->n_removed; i++) {
        rc |= i ? tj_put_raw(o, ",") : 0;
        rc |= put_part(o, &s->removed[i], true, true);
    }
    rc |= tj_put_raw(o, "],\"dedup\":");
    rc |= put_dedup(o, s->dedup, s->n_dedup);
    rc |= tj_put_raw(o, "}\n");
    return rc ? -ENOMEM : 0;
}

int tb__checkpoint_parse(const char *buf, size_t len, tb_snapshot *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    tj_val j;
    int rc = tj_parse(buf, len, &j, err, errlen);
    if (rc < 0)
        return rc;
    int64_t x;
    if (j.kind != TJ_OBJ || !get_int(&j, "format", 1, 1, &x))
        BADJ("not a checkpoint of format 1");
    if (!get_int(&j, "version", 0, INT64_MAX, &x))
        BADJ("the checkpoint's version is missing");
    s->version = (uint64_t)x;
    if (!get_int(&j, "time_ms", 0, INT64_MAX, &s->time_ms))
        BADJ("the checkpoint's time is missing");
    if ((rc = tb__schema_parse(tj_get(&j, "schema"), &s->schema, err, errlen)) < 0 ||
        (rc = parse_parts(tj_get(&j, "parts"), &s->parts, &s->n_parts, true, false, err, errlen)) <
            0 ||
        (rc = parse_parts(tj_get(&j, "removed"), &s->removed, &s->n_removed, true, true, err,
                          errlen)) < 0 ||
        (rc = parse_dedup(tj_get(&j, "dedup"), &s->dedup, &s->n_dedup, err, errlen)) < 0)
        goto fail;
    for (size_t i = 0; i < s->n_parts; i++)
        for (size_t k = i + 1; k < s->n_parts; k++)
            if (!strcmp(s->parts[i].name, s->parts[k].name))
                BADJ("the checkpoint lists part %s twice", s->parts[i].name);
    tj_free(&j);
    return 0;
fail:
    tj_free(&j);
    tb__snapshot_deinit(s);
    return rc;
}

/* ---- applying a version ------------------------------------------------------ */

static int part_cmp(const void *a, const void *b)
{
    const tb_part *x = a, *y = b;
    int c = strcmp(x->partition, y->partition);
    if (c)
        return c;
    return x->min_block < y->min_block ? -1 : x->min_block > y->min_block;
}

int tb__apply(tb_snapshot *s, const tb__version *v, uint32_t window, uint32_t window_s, char *err,
              size_t errlen)
{
    if (v->version != s->version + 1 && !(v->version == 0 && s->version == 0 && !s->schema.cols))
        return errf_fail(err, errlen, -EBADMSG, "version %llu does not follow version %llu",
                         (unsigned long long)v->version, (unsigned long long)s->version);
    if (v->has_schema) {
        tb_schema_deinit(&s->schema);
        int rc = tb_schema_copy(&s->schema, &v->schema);
        if (rc < 0)
            return rc;
    } else if (!s->schema.cols) {
        return errf_fail(err, errlen, -EBADMSG, "version %llu comes before the table's creation",
                         (unsigned long long)v->version);
    }
    /* check first, then change: a failed apply leaves the state as it was */
    for (size_t i = 0; i < v->n_remove; i++)
        if (!tb_snapshot_part(s, v->remove[i]))
            return errf_fail(err, errlen, -EBADMSG,
                             "version %llu removes part %s, which is not active",
                             (unsigned long long)v->version, v->remove[i]);
    for (size_t i = 0; i < v->n_add; i++)
        if (tb_snapshot_part(s, v->add[i].name))
            return errf_fail(err, errlen, -EBADMSG, "version %llu adds part %s twice",
                             (unsigned long long)v->version, v->add[i].name);
    size_t nr = s->n_removed + v->n_remove, np = s->n_parts + v->n_add;
    tb_part *rem = realloc(s->removed, (nr + 1) * sizeof(tb_part));
    if (!rem)
        return -ENOMEM;
    s->removed = rem;
    tb_part *parts = realloc(s->parts, (np + 1) * sizeof(tb_part));
    if (!parts)
        return -ENOMEM;
    s->parts = parts;
    tb_dedup_id *dd = realloc(s->dedup, (s->n_dedup + v->n_dedup + 1) * sizeof(tb_dedup_id));
    if (!dd)
        return -ENOMEM;
    s->dedup = dd;
    for (size_t i = 0; i < v->n_remove; i++) {
        for (size_t k = 0; k < s->n_parts; k++) {
            if (strcmp(s->parts[k].name, v->remove[i]) == 0) {
                s->removed[s->n_removed] = s->parts[k];
                s->removed[s->n_removed].removed_ms = v->time_ms;
                s->n_removed++;
                memmove(&s->parts[k], &s->parts[k + 1], (s->n_parts - k - 1) * sizeof(tb_part));
                s->n_parts--;
                break;
            }
        }
    }
    for (size_t i = 0; i < v->n_add; i++) {
        tb_part *p = &s->parts[s->n_parts];
        if (tb__part_copy(p, &v->add[i]) < 0)
            return -ENOMEM;
        p->created_ms = v->time_ms;
        p->removed_ms = 0;
        s->n_parts++;
    }
    for (size_t i = 0; i < v->n_purge; i++) {
        for (size_t k = 0; k < s->n_removed; k++) {
            if (strcmp(s->removed[k].name, v->purge[i]) == 0) {
                tb__part_deinit(&s->removed[k]);
                memmove(&s->removed[k], &s->removed[k + 1],
                        (s->n_removed - k - 1) * sizeof(tb_part));
                s->n_removed--;
                break;
            }
        }
    }
    for (size_t i = 0; i < v->n_dedup; i++) {
        s->dedup[s->n_dedup].time_ms = v->dedup[i].time_ms;
        if (!(s->dedup[s->n_dedup].id = strdup(v->dedup[i].id)))
            return -ENOMEM;
        s->n_dedup++;
    }
    /* the window: the last `window` ids, none older than window_s */
    size_t drop = s->n_dedup > window ? s->n_dedup - window : 0;
    while (drop < s->n_dedup && s->dedup[drop].time_ms + (int64_t)window_s * 1000 < v->time_ms)
        drop++;
    for (size_t i = 0; i < drop; i++)
        free(s->dedup[i].id);
    memmove(s->dedup, s->dedup + drop, (s->n_dedup - drop) * sizeof(tb_dedup_id));
    s->n_dedup -= drop;
    qsort(s->parts, s->n_parts, sizeof(tb_part), part_cmp);
    s->version = v->version;
    s->time_ms = v->time_ms;
    return 0;
}
