/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_file.c: opening a Parquet file (parquet.h): one speculative read of the
 * tail, the magic and footer-length checks, the footer decoded (pq_thrift.c),
 * the schema's top-level fields mapped to engine types (nested ones marked), statistics decoded into engine
 * values, and row-group pruning against the caller's predicates.
 *
 *   file:  "PAR1" <column chunks ...> <FileMetaData (thrift)> <u32 LE length> "PAR1"
 *                                     '------ length bytes ------'
 */
#include "parquet_int.h"
#include "errf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pq_file {
    rs_source *src;
    uint8_t *footer; /* the FileMetaData bytes (stats point into them) */
    pq__meta *meta;
    int n_cols;   /* top-level fields */
    int n_leaves; /* column chunks per row group */
    pq_column_info *cols;
    int64_t num_rows;
};

int pq__map_type(const pq__schema_el *el, cb_typeinfo *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    int ct = el->converted_type, lt = el->lt;
    bool dec = lt == PQ__LT_DECIMAL || (lt == PQ__LT_NONE && ct == PQ__CT_DECIMAL);
    if (dec) {
        int32_t p = lt == PQ__LT_DECIMAL ? el->lt_precision : el->precision;
        int32_t s = lt == PQ__LT_DECIMAL ? el->lt_scale : el->scale;
        if (p < 1 || p > 38 || s < 0 || s > p) {
            *why = "its DECIMAL precision or scale is out of range (precision 1..38, scale "
                   "0..precision)";
            return -ENOTSUP;
        }
        if (el->type == PQ_FIXED_LEN_BYTE_ARRAY && (el->type_length < 1 || el->type_length > 16)) {
            *why = "its DECIMAL is stored in more than 16 bytes";
            return -ENOTSUP;
        }
        if (el->type == PQ_BOOLEAN || el->type == PQ_FLOAT || el->type == PQ_DOUBLE ||
            el->type == PQ_INT96) {
            *why = "it is a DECIMAL on a physical type that cannot hold one";
            return -ENOTSUP;
        }
        out->type = CB_DECIMAL;
        out->precision = (uint8_t)p;
        out->scale = (uint8_t)s;
        return 0;
    }
    switch (el->type) {
    case PQ_BOOLEAN: out->type = CB_BOOL; return 0;
    case PQ_INT32:
    case PQ_INT64: {
        bool i64 = el->type == PQ_INT64;
        if (lt == PQ__LT_INTEGER) {
            int b = el->lt_bits;
            if ((b != 8 && b != 16 && b != 32 && b != 64) || (b == 64) != i64) {
                *why = "its INTEGER bit width does not fit its physical type";
                return -ENOTSUP;
            }
            static const cb_type s[] = {CB_INT8, CB_INT16, CB_INT32, CB_INT64};
            static const cb_type u[] = {CB_UINT8, CB_UINT16, CB_UINT32, CB_UINT64};
            int k = b == 8 ? 0 : b == 16 ? 1 : b == 32 ? 2 : 3;
            out->type = el->lt_signed ? s[k] : u[k];
            return 0;
        }
        if (lt == PQ__LT_DATE || (lt == PQ__LT_NONE && ct == PQ__CT_DATE)) {
            if (i64) {
                *why = "it is a DATE stored as INT64";
                return -ENOTSUP;
            }
            out->type = CB_DATE;
            return 0;
        }
        if (lt == PQ__LT_TIMESTAMP || lt == PQ__LT_TIME) {
            if (el->lt_unit == CB_UNIT_NONE ||
                (!i64 && !(lt == PQ__LT_TIME && el->lt_unit == CB_UNIT_MS))) {
                *why = "its TIME or TIMESTAMP unit does not fit its physical type";
                return -ENOTSUP;
            }
            out->type = lt == PQ__LT_TIME ? CB_TIME : CB_TIMESTAMP;
            out->unit = (cb_unit)el->lt_unit;
            out->utc = el->lt_utc;
            return 0;
        }
        if (lt == PQ__LT_NONE) {
            switch (ct) {
            case PQ__CT_TIMESTAMP_MILLIS:
            case PQ__CT_TIMESTAMP_MICROS:
                if (!i64)
                    break;
                out->type = CB_TIMESTAMP;
                out->unit = ct == PQ__CT_TIMESTAMP_MILLIS ? CB_UNIT_MS : CB_UNIT_US;
                out->utc = true;
                return 0;
            case PQ__CT_TIME_MILLIS:
                if (i64)
                    break;
                out->type = CB_TIME;
                out->unit = CB_UNIT_MS;
                out->utc = true;
                return 0;
            case PQ__CT_TIME_MICROS:
                if (!i64)
                    break;
                out->type = CB_TIME;
                out->unit = CB_UNIT_US;
                out->utc = true;
                return 0;
            case PQ__CT_INT_8:
                if (i64)
                    break;
                out->type = CB_INT8;
                return 0;
            case PQ__CT_INT_16:
                if (i64)
                    break;
                out->type = CB_INT16;
                return 0;
            case PQ__CT_INT_32:
                if (i64)
                    break;
                out->type = CB_INT32;
                return 0;
            case PQ__CT_UINT_8:
                if (i64)
                    break;
                out->type = CB_UINT8;
                return 0;
            case PQ__CT_UINT_16:
                if (i64)
                    break;
                out->type = CB_UINT16;
                return 0;
            case PQ__CT_UINT_32:
                if (i64)
                    break;
                out->type = CB_UINT32;
                return 0;
            case PQ__CT_INT_64:
                if (!i64)
                    break;
                out->type = CB_INT64;
                return 0;
            case PQ__CT_UINT_64:
                if (!i64)
                    break;
                out->type = CB_UINT64;
                return 0;
            case -1: out->type = i64 ? CB_INT64 : CB_INT32; return 0;
            default: out->type = i64 ? CB_INT64 : CB_INT32; return 0;
            }
            *why = "its converted type does not fit its physical type";
            return -ENOTSUP;
        }
        out->type = i64 ? CB_INT64 : CB_INT32;
        return 0;
    }
    case PQ_INT96:
        out->type = CB_TIMESTAMP;
        out->unit = CB_UNIT_NS;
        return 0;
    case PQ_FLOAT: out->type = CB_FLOAT; return 0;
    case PQ_DOUBLE: out->type = CB_DOUBLE; return 0;
    case PQ_BYTE_ARRAY:
        if (lt == PQ__LT_STRING || lt == PQ__LT_ENUM || lt == PQ__LT_JSON ||
            (lt == PQ__LT_NONE && (ct == PQ__CT_UTF8 || ct == PQ__CT_ENUM || ct == PQ__CT_JSON)))
            out->type = CB_STRING;
        else
            out->type = CB_BINARY;
        return 0;
    case PQ_FIXED_LEN_BYTE_ARRAY:
        if (el->type_length < 0 || el->type_length > (1 << 24)) {
            *why = "its FIXED_LEN_BYTE_ARRAY length is out of range";
            return -ENOTSUP;
        }
        if (lt == PQ__LT_FLOAT16) {
            if (el->type_length != 2) {
                *why = "its FLOAT16 is not 2 bytes wide";
                return -ENOTSUP;
            }
            out->type = CB_FLOAT;
            return 0;
        }
        out->type = CB_BINARY;
        return 0;
    }
    *why = "its physical type is unknown";
    return -ENOTSUP;
}

/* The subtree of schema element *i (depth-first order): moves *i past it and
 * counts its leaves. -EBADMSG when the counts run past the schema. */
static int pq__subtree(const pq__meta *m, uint32_t *i, int *leaves, int depth)
{
    if (*i >= m->n_schema || depth > 64)
        return -EBADMSG;
    const pq__schema_el *el = &m->schema[(*i)++];
    if (el->num_children <= 0) {
        if (el->type < 0)
            return -EBADMSG; /* a group without children */
        (*leaves)++;
        return 0;
    }
    for (int32_t k = 0; k < el->num_children; k++) {
        int rc = pq__subtree(m, i, leaves, depth + 1);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* What a top-level field this reader cannot read is, as the sentence part
 * after "column 'x' is". */
static const char *pq__nested_kind(const pq__schema_el *el)
{
    if (el->lt == PQ__LT_LIST || el->converted_type == PQ__CT_LIST)
        return "a Parquet LIST (an Array)";
    if (el->lt == PQ__LT_MAP || el->converted_type == PQ__CT_MAP ||
        el->converted_type == PQ__CT_MAP_KEY_VALUE)
        return "a Parquet MAP (a Map)";
    if (el->num_children > 0 && el->repetition == PQ__REPEATED)
        return "a repeated group (an Array of Tuples)";
    if (el->num_children > 0)
        return "a group of fields (a Tuple)";
    return "a repeated field (an Array)";
}

/* Whether top-level field i is a LIST of a primitive (DuckDB's and pyarrow's
 * three levels, optional group (LIST) { repeated group list { [optional]
 * T element } }; the legacy two, { repeated T element }; or a bare repeated
 * primitive): its element's schema index and levels. A repeated group of
 * several fields, or the legacy one-field struct ("array", "x_tuple"), is an
 * Array of Tuples, not read. */
static bool pq__list_shape(const pq__meta *m, uint32_t i, uint32_t *elem, uint8_t *def_elem,
                           uint8_t *max_def, bool *enull)
{
    const pq__schema_el *el = &m->schema[i];
    *enull = false;
    if (el->num_children <= 0) {
        if (el->repetition != PQ__REPEATED || el->type < 0)
            return false;
        *elem = i;
        *def_elem = *max_def = 1;
        return true;
    }
    bool list = el->lt == PQ__LT_LIST || el->converted_type == PQ__CT_LIST;
    if (!list || el->num_children != 1 || el->repetition == PQ__REPEATED || i + 1 >= m->n_schema)
        return false;
    uint8_t d = el->repetition == PQ__OPTIONAL ? 1 : 0;
    const pq__schema_el *r = &m->schema[i + 1];
    if (r->repetition != PQ__REPEATED)
        return false;
    d++;
    *def_elem = d;
    if (r->num_children <= 0) { /* two levels: repeated T element */
        if (r->type < 0)
            return false;
        *elem = i + 1;
        *max_def = d;
        return true;
    }
    if (r->num_children != 1 || i + 2 >= m->n_schema || !r->name || strcmp(r->name, "array") == 0 ||
        (el->name && strlen(r->name) == strlen(el->name) + 6 &&
         strncmp(r->name, el->name, strlen(el->name)) == 0 &&
         strcmp(r->name + strlen(el->name), "_tuple") == 0))
        return false;
    const pq__schema_el *e = &m->schema[i + 2];
    if (e->num_children > 0 || e->type < 0 || e->repetition == PQ__REPEATED)
        return false;
    if (e->repetition == PQ__OPTIONAL)
        d++;
    *elem = i + 2;
    *max_def = d;
    *enull = e->repetition == PQ__OPTIONAL;
    return true;
}

/* The top-level fields become the columns. A flat field is one leaf column
 * chunk; a nested one (LIST, MAP, group, repeated) spans the chunks of its
 * leaves and is kept, marked with what it is, so that the other columns of
 * the file stay readable. */
static int pq__schema(pq_file *f, char *err, size_t errlen)
{
    const char *name = rs_name(f->src);
    const pq__meta *m = f->meta;
    if (m->n_schema < 1)
        return errf_fail(err, errlen, -EBADMSG, "%s: the schema is empty (no root element)", name);
    int top = m->schema[0].num_children;
    if (top < 0 || (uint32_t)top > m->n_schema - 1)
        return errf_fail(err, errlen, -EBADMSG,
                         "%s: the schema's root says %d columns but %u elements follow", name, top,
                         m->n_schema - 1);
    f->n_cols = top;
    f->cols = calloc(f->n_cols ? (size_t)f->n_cols : 1, sizeof(*f->cols));
    if (!f->cols)
        return -ENOMEM;
    uint32_t at = 1;
    int leaves = 0;
    for (int i = 0; i < f->n_cols; i++) {
        if (at >= m->n_schema)
            return errf_fail(err, errlen, -EBADMSG,
                             "%s: the schema's root says %d columns but its elements end after %d",
                             name, top, i);
        const pq__schema_el *el = &m->schema[at];
        const char *cn = el->name ? el->name : "";
        if (!el->name)
            return errf_fail(err, errlen, -EBADMSG, "%s: schema element %u has no name", name, at);
        int first = leaves;
        uint32_t start = at;
        if (pq__subtree(m, &at, &leaves, 0) < 0)
            return errf_fail(err, errlen, -EBADMSG,
                             "%s: the schema's element counts of column '%s' run past its end",
                             name, cn);
        f->cols[i].name = el->name;
        f->cols[i].leaf = first;
        f->cols[i].n_leaves = leaves - first;
        f->cols[i].nullable = el->repetition != PQ__REQUIRED;
        if (el->num_children > 0 || el->repetition == PQ__REPEATED) {
            uint32_t ei;
            uint8_t de, md;
            bool enull;
            const char *why = "unsupported";
            cb_typeinfo et;
            if (leaves - first == 1 && pq__list_shape(m, start, &ei, &de, &md, &enull) &&
                m->schema[ei].type <= PQ_FIXED_LEN_BYTE_ARRAY &&
                pq__map_type(&m->schema[ei], &et, &why) == 0) {
                /* Array(T): the element's physical type, a CB_LIST of its engine type */
                f->cols[i].type = et;
                f->cols[i].type.type = CB_LIST;
                f->cols[i].type.elem = et.type;
                f->cols[i].type.elem_null = enull;
                f->cols[i].physical = (pq_physical)m->schema[ei].type;
                f->cols[i].type_length = m->schema[ei].type_length;
                f->cols[i].def_elem = de;
                f->cols[i].max_def = md;
                continue;
            }
            f->cols[i].nested = pq__nested_kind(el);
            continue;
        }
        if (el->type > PQ_FIXED_LEN_BYTE_ARRAY)
            return errf_fail(err, errlen, -ENOTSUP,
                             "%s: column '%s' has an unknown physical "
                             "type %d",
                             name, cn, el->type);
        const char *why = "unsupported";
        if (pq__map_type(el, &f->cols[i].type, &why) < 0)
            return errf_fail(err, errlen, -ENOTSUP, "%s: column '%s' cannot be read: %s", name, cn,
                             why);
        f->cols[i].physical = (pq_physical)el->type;
        f->cols[i].type_length = el->type_length;
    }
    if (at != m->n_schema)
        return errf_fail(err, errlen, -EBADMSG,
                         "%s: the schema's root says %d columns but %u elements follow", name, top,
                         m->n_schema - 1);
    f->n_leaves = leaves;
    int64_t total = 0;
    for (uint32_t r = 0; r < m->n_rgs; r++) {
        const pq__row_group *rg = &m->rgs[r];
        if (rg->n_cols != (uint32_t)f->n_leaves)
            return errf_fail(err, errlen, -EBADMSG,
                             "%s: row group %u has %u column chunks, the "
                             "schema has %d leaf columns",
                             name, r, rg->n_cols, f->n_leaves);
        if (rg->num_rows < 0 || rg->num_rows > UINT32_MAX)
            return errf_fail(err, errlen, -EBADMSG, "%s: row group %u says it has %" PRId64 " rows",
                             name, r, rg->num_rows);
        total += rg->num_rows;
        for (int c = 0; c < f->n_cols; c++) {
            if (f->cols[c].nested)
                continue; /* its chunks are checked when it can be read */
            const pq__chunk_meta *cm = &rg->cols[f->cols[c].leaf];
            const char *cn = f->cols[c].name;
            if (cm->external)
                return errf_fail(err, errlen, -ENOTSUP,
                                 "%s: column '%s' of row group %u lives in "
                                 "another file (file_path is set); not supported",
                                 name, cn, r);
            if (!cm->has_meta)
                return errf_fail(err, errlen, -EBADMSG,
                                 "%s: column '%s' of row group %u has no "
                                 "metadata",
                                 name, cn, r);
            if (cm->type != (int32_t)f->cols[c].physical)
                return errf_fail(err, errlen, -EBADMSG,
                                 "%s: column '%s' of row group %u has "
                                 "physical type %d, the schema says %d",
                                 name, cn, r, cm->type, (int)f->cols[c].physical);
            if (cm->path_len > 1 && f->cols[c].type.type != CB_LIST)
                return errf_fail(err, errlen, -ENOTSUP,
                                 "%s: column '%s' is nested (its path has "
                                 "%u parts)",
                                 name, cn, cm->path_len);
            if (cm->total_compressed_size < 0 || cm->data_page_offset < 0 ||
                (uint64_t)cm->data_page_offset > rs_size(f->src) ||
                (uint64_t)cm->total_compressed_size > rs_size(f->src))
                return errf_fail(err, errlen, -EBADMSG,
                                 "%s: column '%s' of row group %u has "
                                 "offsets or sizes outside the file",
                                 name, cn, r);
        }
    }
    if (total != m->num_rows)
        return errf_fail(err, errlen, -EBADMSG,
                         "%s: the footer says %" PRId64 " rows but its row "
                         "groups hold %" PRId64,
                         name, m->num_rows, total);
    f->num_rows = total;
    return 0;
}

int pq_file_open(pq_file **out, rs_source *src, const pq_open_opts *opts, char *err, size_t errlen)
{
    *out = NULL;
    const char *name = rs_name(src);
    uint64_t size = rs_size(src);
    uint64_t want = opts && opts->footer_read ? opts->footer_read : 512 * 1024;
    uint64_t max_footer = opts && opts->max_footer ? opts->max_footer : 256u << 20;
    if (size < 12)
        return errf_fail(err, errlen, -EBADMSG,
                         "%s is not a Parquet file: it is %" PRIu64
                         " bytes long (a Parquet file has at least 12)",
                         name, size);
    if (want < 8)
        want = 8;
    uint64_t tail = size < want ? size : want;
    uint8_t *buf = malloc((size_t)tail);
    if (!buf)
        return -ENOMEM;
    int rc = rs_read(src, size - tail, buf, tail, err, errlen);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    const uint8_t *end = buf + tail;
    if (memcmp(end - 4, "PARE", 4) == 0) {
        free(buf);
        return errf_fail(err, errlen, -ENOTSUP,
                         "%s: the footer is encrypted (magic PARE); "
                         "encrypted Parquet is not supported",
                         name);
    }
    if (memcmp(end - 4, "PAR1", 4) != 0) {
        free(buf);
        return errf_fail(err, errlen, -EBADMSG,
                         "%s is not a Parquet file: it does not end with "
                         "the magic PAR1",
                         name);
    }
    if (tail == size && memcmp(buf, "PAR1", 4) != 0) {
        free(buf);
        return errf_fail(err, errlen, -EBADMSG,
                         "%s is not a Parquet file: it does not start "
                         "with the magic PAR1",
                         name);
    }
    uint32_t flen = (uint32_t)end[-8] | (uint32_t)end[-7] << 8 | (uint32_t)end[-6] << 16 |
                    (uint32_t)end[-5] << 24;
    if ((uint64_t)flen > size - 12) {
        free(buf);
        return errf_fail(err, errlen, -EBADMSG,
                         "%s: the footer length (%" PRIu32 " bytes) is "
                         "larger than the file allows (%" PRIu64 " bytes); the file is truncated "
                         "or not Parquet",
                         name, flen, size - 12);
    }
    if (flen > max_footer) {
        free(buf);
        return errf_fail(err, errlen, -EBADMSG,
                         "%s: the footer is %" PRIu32 " bytes, over the "
                         "limit of %" PRIu64,
                         name, flen, max_footer);
    }
    if (flen == 0) {
        free(buf);
        return errf_fail(err, errlen, -EBADMSG, "%s: the footer length is 0", name);
    }
    uint8_t *footer = malloc(flen);
    if (!footer) {
        free(buf);
        return -ENOMEM;
    }
    if ((uint64_t)flen + 8 <= tail) {
        memcpy(footer, end - 8 - flen, flen);
    } else {
        rc = rs_read(src, size - 8 - flen, footer, flen, err, errlen);
        if (rc < 0) {
            free(buf);
            free(footer);
            return rc;
        }
    }
    free(buf);
    pq_file *f = calloc(1, sizeof(*f));
    if (!f) {
        free(footer);
        return -ENOMEM;
    }
    f->src = src;
    f->footer = footer;
    char why[PQ_MSG_MAX];
    rc = pq__meta_parse(footer, flen, &f->meta, why, sizeof(why));
    if (rc < 0) {
        errf_fail(err, errlen, rc, "%s: %s", name, rc == -ENOMEM ? "out of memory" : why);
        pq_file_destroy(&f);
        return rc;
    }
    rc = pq__schema(f, err, errlen);
    if (rc < 0) {
        if (rc == -ENOMEM)
            errf_fail(err, errlen, rc, "%s: out of memory reading the schema", name);
        pq_file_destroy(&f);
        return rc;
    }
    *out = f;
    return 0;
}

void pq_file_destroy(pq_file **f)
{
    if (!f || !*f)
        return;
    pq__meta_free(&(*f)->meta);
    free((*f)->footer);
    free((*f)->cols);
    free(*f);
    *f = NULL;
}

const char *pq_file_name(const pq_file *f)
{
    return rs_name(f->src);
}
int64_t pq_file_num_rows(const pq_file *f)
{
    return f->num_rows;
}
int pq_file_num_row_groups(const pq_file *f)
{
    return (int)f->meta->n_rgs;
}
int pq_file_num_columns(const pq_file *f)
{
    return f->n_cols;
}
const char *pq_file_created_by(const pq_file *f)
{
    return f->meta->created_by ? f->meta->created_by : "";
}

int64_t pq_file_row_group_rows(const pq_file *f, int rg)
{
    if (rg < 0 || (uint32_t)rg >= f->meta->n_rgs)
        return -ERANGE;
    return f->meta->rgs[rg].num_rows;
}

const pq_column_info *pq_file_column(const pq_file *f, int col)
{
    if (col < 0 || col >= f->n_cols)
        return NULL;
    return &f->cols[col];
}

int pq_file_find_column(const pq_file *f, const char *name)
{
    for (int i = 0; i < f->n_cols; i++)
        if (strcmp(f->cols[i].name, name) == 0)
            return i;
    return -ENOENT;
}

rs_source *pq__file_source(const pq_file *f)
{
    return f->src;
}
const pq__chunk_meta *pq__file_chunk(const pq_file *f, int rg, int col)
{
    return &f->meta->rgs[rg].cols[f->cols[col].leaf];
}

/* ---- statistics ------------------------------------------------------------ */

/* Decodes one bound; false when it cannot be used. */
static bool pq__stat_value(const pq_column_info *ci, pq__bytes b, pq_value *v)
{
    memset(v, 0, sizeof(*v));
    if (!b.p)
        return false;
    cb_type t = ci->type.type;
    switch (ci->physical) {
    case PQ_BOOLEAN:
        if (b.len != 1)
            return false;
        v->i = b.p[0] & 1;
        return true;
    case PQ_INT32: {
        if (b.len != 4)
            return false;
        int32_t x;
        memcpy(&x, b.p, 4);
        if (t == CB_UINT8 || t == CB_UINT16 || t == CB_UINT32)
            v->u = (uint32_t)x;
        else if (t == CB_DECIMAL && ci->type.precision > 18)
            v->i128 = (cb_i128){.lo = (uint64_t)(int64_t)x, .hi = x < 0 ? -1 : 0};
        else
            v->i = x;
        return true;
    }
    case PQ_INT64: {
        if (b.len != 8)
            return false;
        int64_t x;
        memcpy(&x, b.p, 8);
        if (t == CB_UINT64)
            v->u = (uint64_t)x;
        else if (t == CB_DECIMAL && ci->type.precision > 18)
            v->i128 = (cb_i128){.lo = (uint64_t)x, .hi = x < 0 ? -1 : 0};
        else
            v->i = x;
        return true;
    }
    case PQ_FLOAT: {
        if (b.len != 4)
            return false;
        float x;
        memcpy(&x, b.p, 4);
        if (isnan(x))
            return false;
        v->d = x;
        return true;
    }
    case PQ_DOUBLE: {
        if (b.len != 8)
            return false;
        memcpy(&v->d, b.p, 8);
        return !isnan(v->d);
    }
    case PQ_BYTE_ARRAY:
    case PQ_FIXED_LEN_BYTE_ARRAY:
        if (t == CB_DECIMAL) {
            if (b.len == 0 || b.len > 16)
                return false;
            uint64_t lo = (b.p[0] & 0x80) ? ~0ull : 0, hi = lo;
            for (uint32_t i = 0; i < b.len; i++) {
                hi = (hi << 8) | (lo >> 56);
                lo = (lo << 8) | b.p[i];
            }
            if (ci->type.precision > 18)
                v->i128 = (cb_i128){.lo = lo, .hi = (int64_t)hi};
            else
                v->i = (int64_t)lo;
            return true;
        }
        if (t == CB_FLOAT) {
            if (b.len != 2)
                return false;
            v->d = pq__half_to_float((uint16_t)(b.p[0] | b.p[1] << 8));
            return !isnan(v->d);
        }
        v->bytes = b.p;
        v->len = b.len;
        return true;
    case PQ_INT96: return false;
    }
    return false;
}

/* Legacy min/max are in signed order: usable only where that is the order. */
static bool pq__legacy_ok(const pq_column_info *ci)
{
    switch (ci->physical) {
    case PQ_BOOLEAN:
    case PQ_FLOAT:
    case PQ_DOUBLE: return true;
    case PQ_INT32:
    case PQ_INT64: {
        cb_type t = ci->type.type;
        return t != CB_UINT8 && t != CB_UINT16 && t != CB_UINT32 && t != CB_UINT64;
    }
    default: return false;
    }
}

int pq_file_stats(const pq_file *f, int rg, int col, pq_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (rg < 0 || (uint32_t)rg >= f->meta->n_rgs || col < 0 || col >= f->n_cols)
        return -ERANGE;
    const pq_column_info *ci = &f->cols[col];
    if (ci->nested || ci->type.type == CB_LIST)
        return 0; /* no bounds (a LIST's are its elements'): nothing is pruned on it */
    const pq__chunk_meta *cm = &f->meta->rgs[rg].cols[ci->leaf];
    const pq__stats_raw *s = &cm->stats;
    out->num_values = cm->num_values;
    out->has_null_count = s->has_null_count;
    out->null_count = s->null_count;
    bool legacy = pq__legacy_ok(ci);
    pq__bytes mn = s->min_value.p ? s->min_value : (legacy ? s->min : (pq__bytes){0});
    pq__bytes mx = s->max_value.p ? s->max_value : (legacy ? s->max : (pq__bytes){0});
    out->has_min = pq__stat_value(ci, mn, &out->min);
    out->has_max = pq__stat_value(ci, mx, &out->max);
    return 0;
}

/* Three-way compare of two values of the column's type. */
static int pq__cmp(const pq_column_info *ci, const pq_value *a, const pq_value *b)
{
    switch (ci->type.type) {
    case CB_UINT8:
    case CB_UINT16:
    case CB_UINT32:
    case CB_UINT64: return a->u < b->u ? -1 : a->u > b->u;
    case CB_FLOAT:
    case CB_DOUBLE: return a->d < b->d ? -1 : a->d > b->d;
    case CB_STRING:
    case CB_BINARY: {
        size_t n = a->len < b->len ? a->len : b->len;
        int c = n ? memcmp(a->bytes, b->bytes, n) : 0;
        if (c)
            return c < 0 ? -1 : 1;
        return a->len < b->len ? -1 : a->len > b->len;
    }
    case CB_DECIMAL:
        if (ci->type.precision > 18) {
            if (a->i128.hi != b->i128.hi)
                return a->i128.hi < b->i128.hi ? -1 : 1;
            return a->i128.lo < b->i128.lo ? -1 : a->i128.lo > b->i128.lo;
        }
        return a->i < b->i ? -1 : a->i > b->i;
    default: return a->i < b->i ? -1 : a->i > b->i;
    }
}

int pq_file_row_group_may_match(const pq_file *f, int rg, const pq_pred *preds, size_t n)
{
    if (rg < 0 || (uint32_t)rg >= f->meta->n_rgs)
        return -ERANGE;
    for (size_t i = 0; i < n; i++) {
        const pq_pred *p = &preds[i];
        if (p->column < 0 || p->column >= f->n_cols)
            return -ERANGE;
        const pq_column_info *ci = &f->cols[p->column];
        pq_stats s;
        pq_file_stats(f, rg, p->column, &s);
        bool all_null = s.has_null_count && s.null_count >= s.num_values && s.num_values > 0;
        if (p->op == PQ_IS_NULL) {
            if (s.has_null_count && s.null_count == 0)
                return 0;
            continue;
        }
        if (p->op == PQ_NOT_NULL) {
            if (all_null)
                return 0;
            continue;
        }
        if (all_null)
            return 0; /* a comparison with NULL is never true */
        if ((ci->type.type == CB_FLOAT || ci->type.type == CB_DOUBLE) && isnan(p->value.d))
            continue;
        int cmin = s.has_min ? pq__cmp(ci, &p->value, &s.min) : 0;
        int cmax = s.has_max ? pq__cmp(ci, &p->value, &s.max) : 0;
        switch (p->op) {
        case PQ_EQ:
            if ((s.has_min && cmin < 0) || (s.has_max && cmax > 0))
                return 0;
            break;
        case PQ_LT: /* some row < v needs min < v */
            if (s.has_min && cmin <= 0)
                return 0;
            break;
        case PQ_LE:
            if (s.has_min && cmin < 0)
                return 0;
            break;
        case PQ_GT:
            if (s.has_max && cmax >= 0)
                return 0;
            break;
        case PQ_GE:
            if (s.has_max && cmax > 0)
                return 0;
            break;
        default: break;
        }
    }
    return 1;
}
