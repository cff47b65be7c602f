/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_thrift.c: the Thrift compact protocol, decoded by hand (spec: apache/thrift
 * doc/specs/thrift-compact-protocol.md), and the Parquet footer structures read
 * with it: FileMetaData, SchemaElement, LogicalType, RowGroup, ColumnChunk,
 * ColumnMetaData, Statistics, KeyValue (skipped), PageHeader and its variants.
 * Unknown fields are skipped, so newer writers' additions do not break us.
 *
 * Every length and count is checked against the bytes left before anything is
 * allocated: a list announces at most one element per remaining byte.
 *
 *   field header byte:  dddd tttt   d = id delta 1..15 (0: zigzag i16 id follows)
 *                                   t = compact type; 0 = STOP
 *   list header byte:   ssss tttt   s = size 0..14 (15: varint size follows)
 */
#include "parquet_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pq__tc_init(pq__tc *c, const uint8_t *p, size_t len)
{
    c->p = p;
    c->end = p + len;
    c->depth = 0;
    c->bad = false;
    c->why = NULL;
}

void pq__tc_fail(pq__tc *c, const char *why)
{
    if (!c->bad) {
        c->bad = true;
        c->why = why;
    }
    c->p = c->end;
}

uint64_t pq__tc_varint(pq__tc *c)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (c->p >= c->end) {
            pq__tc_fail(c, "it ends in the middle of a value");
            return 0;
        }
        uint8_t b = *c->p++;
        if (shift == 63 && (b & 0x7e)) {
            pq__tc_fail(c, "a varint is longer than 64 bits");
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    pq__tc_fail(c, "a varint is longer than 10 bytes");
    return 0;
}

static int64_t pq__zigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int32_t pq__tc_i32(pq__tc *c)
{
    int64_t v = pq__zigzag(pq__tc_varint(c));
    if (v < INT32_MIN || v > INT32_MAX) {
        pq__tc_fail(c, "an i32 is out of range");
        return 0;
    }
    return (int32_t)v;
}

int64_t pq__tc_i64(pq__tc *c)
{
    return pq__zigzag(pq__tc_varint(c));
}

bool pq__tc_field(pq__tc *c, int16_t *last_id, int16_t *id, uint8_t *type)
{
    if (c->p >= c->end) {
        pq__tc_fail(c, "a struct is not terminated");
        return false;
    }
    uint8_t b = *c->p++;
    if (b == 0)
        return false;
    *type = b & 0x0f;
    uint8_t delta = b >> 4;
    if (delta) {
        *id = (int16_t)(*last_id + delta);
    } else {
        int64_t v = pq__zigzag(pq__tc_varint(c));
        if (v < INT16_MIN || v > INT16_MAX) {
            pq__tc_fail(c, "a field id is out of range");
            return false;
        }
        *id = (int16_t)v;
    }
    *last_id = *id;
    return !c->bad;
}

const uint8_t *pq__tc_binary(pq__tc *c, uint32_t *len)
{
    uint64_t n = pq__tc_varint(c);
    if (c->bad || n > (uint64_t)(c->end - c->p)) {
        pq__tc_fail(c, "a string or binary runs past the end");
        *len = 0;
        return NULL;
    }
    const uint8_t *p = c->p;
    c->p += n;
    *len = (uint32_t)n;
    return p;
}

uint32_t pq__tc_list(pq__tc *c, uint8_t *elem_type)
{
    if (c->p >= c->end) {
        pq__tc_fail(c, "a list header is missing");
        *elem_type = 0;
        return 0;
    }
    uint8_t b = *c->p++;
    *elem_type = b & 0x0f;
    uint64_t n = b >> 4;
    if (n == 15)
        n = pq__tc_varint(c);
    /* Every element takes at least one byte. */
    if (c->bad || n > (uint64_t)(c->end - c->p)) {
        pq__tc_fail(c, "a list announces more elements than there are bytes");
        return 0;
    }
    return (uint32_t)n;
}

bool pq__tc_bool(pq__tc *c, uint8_t type)
{
    return type == PQ__T_TRUE;
}

static bool pq__tc_list_bool(pq__tc *c)
{
    if (c->p >= c->end) {
        pq__tc_fail(c, "a list ends early");
        return false;
    }
    /* Writers disagree: 1 = true (compact), 0/2 = false. */
    return *c->p++ == 1;
}

void pq__tc_skip(pq__tc *c, uint8_t type)
{
    if (c->bad)
        return;
    switch (type) {
    case PQ__T_TRUE:
    case PQ__T_FALSE: return; /* in a struct the value is the type; list elements use skip_elem */
    case PQ__T_I8:
        if (c->p >= c->end)
            pq__tc_fail(c, "it ends in the middle of a value");
        else
            c->p++;
        return;
    case PQ__T_I16:
    case PQ__T_I32:
    case PQ__T_I64: (void)pq__tc_varint(c); return;
    case PQ__T_DOUBLE:
        if (c->end - c->p < 8)
            pq__tc_fail(c, "it ends in the middle of a double");
        else
            c->p += 8;
        return;
    case PQ__T_BINARY: {
        uint32_t n;
        (void)pq__tc_binary(c, &n);
        return;
    }
    default: break;
    }
    if (++c->depth > PQ__THRIFT_MAX_DEPTH) {
        pq__tc_fail(c, "structures are nested too deeply");
        return;
    }
    switch (type) {
    case PQ__T_LIST:
    case PQ__T_SET: {
        uint8_t et;
        uint32_t n = pq__tc_list(c, &et);
        for (uint32_t i = 0; i < n && !c->bad; i++) {
            if (et == PQ__T_TRUE || et == PQ__T_FALSE)
                (void)pq__tc_list_bool(c);
            else
                pq__tc_skip(c, et);
        }
        break;
    }
    case PQ__T_MAP: {
        uint64_t n = pq__tc_varint(c);
        if (n == 0)
            break;
        if (c->bad || n > (uint64_t)(c->end - c->p)) {
            pq__tc_fail(c, "a map announces more entries than there are bytes");
            break;
        }
        if (c->p >= c->end) {
            pq__tc_fail(c, "a map header is cut short");
            break;
        }
        uint8_t kv = *c->p++;
        for (uint64_t i = 0; i < n && !c->bad; i++) {
            uint8_t kt = kv >> 4, vt = kv & 0x0f;
            if (kt == PQ__T_TRUE || kt == PQ__T_FALSE)
                (void)pq__tc_list_bool(c);
            else
                pq__tc_skip(c, kt);
            if (vt == PQ__T_TRUE || vt == PQ__T_FALSE)
                (void)pq__tc_list_bool(c);
            else
                pq__tc_skip(c, vt);
        }
        break;
    }
    case PQ__T_STRUCT: {
        int16_t last = 0, id;
        uint8_t ft;
        while (pq__tc_field(c, &last, &id, &ft))
            pq__tc_skip(c, ft);
        break;
    }
    default: pq__tc_fail(c, "a field has an unknown type"); break;
    }
    c->depth--;
}

/* ---- FileMetaData --------------------------------------------------------- */

/* An i32 field, checking the wire type (a writer bug must not be read as
 * something else). */
static int32_t pq__get_i32(pq__tc *c, uint8_t t)
{
    if (t == PQ__T_I32 || t == PQ__T_I16)
        return pq__tc_i32(c);
    if (t == PQ__T_I8) {
        if (c->p >= c->end) {
            pq__tc_fail(c, "it ends in the middle of a value");
            return 0;
        }
        return (int8_t)*c->p++;
    }
    pq__tc_fail(c, "a field has the wrong type");
    return 0;
}

static int64_t pq__get_i64(pq__tc *c, uint8_t t)
{
    if (t == PQ__T_I64 || t == PQ__T_I32 || t == PQ__T_I16)
        return pq__tc_i64(c);
    pq__tc_fail(c, "a field has the wrong type");
    return 0;
}

static void pq__enter(pq__tc *c, uint8_t t, uint8_t want)
{
    if (t != want)
        pq__tc_fail(c, "a field has the wrong type");
    else if (++c->depth > PQ__THRIFT_MAX_DEPTH)
        pq__tc_fail(c, "structures are nested too deeply");
}

/* An empty struct (the members of LogicalType, TimeUnit): skip its fields. */
static void pq__empty_struct(pq__tc *c)
{
    pq__tc_skip(c, PQ__T_STRUCT);
}

static int pq__time_unit(pq__tc *c)
{
    int unit = CB_UNIT_NONE;
    int16_t last = 0, id;
    uint8_t t;
    while (pq__tc_field(c, &last, &id, &t)) {
        if (t != PQ__T_STRUCT) {
            pq__tc_skip(c, t);
            continue;
        }
        if (id == 1)
            unit = CB_UNIT_MS;
        else if (id == 2)
            unit = CB_UNIT_US;
        else if (id == 3)
            unit = CB_UNIT_NS;
        pq__empty_struct(c);
    }
    return unit;
}

static void pq__logical_type(pq__tc *c, pq__schema_el *el)
{
    int16_t last = 0, id;
    uint8_t t;
    while (pq__tc_field(c, &last, &id, &t)) {
        if (t != PQ__T_STRUCT) {
            pq__tc_skip(c, t);
            continue;
        }
        int16_t l2 = 0, id2;
        uint8_t t2;
        switch (id) {
        case PQ__LT_DECIMAL:
            el->lt = id;
            while (pq__tc_field(c, &l2, &id2, &t2)) {
                if (id2 == 1)
                    el->lt_scale = pq__get_i32(c, t2);
                else if (id2 == 2)
                    el->lt_precision = pq__get_i32(c, t2);
                else
                    pq__tc_skip(c, t2);
            }
            break;
        case PQ__LT_TIME:
        case PQ__LT_TIMESTAMP:
            el->lt = id;
            while (pq__tc_field(c, &l2, &id2, &t2)) {
                if (id2 == 1 && (t2 == PQ__T_TRUE || t2 == PQ__T_FALSE))
                    el->lt_utc = pq__tc_bool(c, t2);
                else if (id2 == 2 && t2 == PQ__T_STRUCT)
                    el->lt_unit = pq__time_unit(c);
                else
                    pq__tc_skip(c, t2);
            }
            break;
        case PQ__LT_INTEGER:
            el->lt = id;
            while (pq__tc_field(c, &l2, &id2, &t2)) {
                if (id2 == 1)
                    el->lt_bits = pq__get_i32(c, t2);
                else if (id2 == 2 && (t2 == PQ__T_TRUE || t2 == PQ__T_FALSE))
                    el->lt_signed = pq__tc_bool(c, t2);
                else
                    pq__tc_skip(c, t2);
            }
            break;
        default:
            el->lt = id;
            pq__empty_struct(c);
            break;
        }
    }
}

static void pq__schema_element(pq__tc *c, pq__schema_el *el)
{
    el->type = -1;
    el->repetition = -1;
    el->converted_type = -1;
    int16_t last = 0, id;
    uint8_t t;
    while (pq__tc_field(c, &last, &id, &t)) {
        switch (id) {
        case 1: el->type = pq__get_i32(c, t); break;
        case 2: el->type_length = pq__get_i32(c, t); break;
        case 3: el->repetition = pq__get_i32(c, t); break;
        case 4: {
            if (t != PQ__T_BINARY) {
                pq__tc_fail(c, "a field has the wrong type");
                break;
            }
            uint32_t n;
            const uint8_t *s = pq__tc_binary(c, &n);
            if (c->bad)
                break;
            free(el->name);
            el->name = malloc((size_t)n + 1);
            if (!el->name) {
                pq__tc_fail(c, "out of memory");
                break;
            }
            memcpy(el->name, s, n);
            el->name[n] = '\0';
            break;
        }
        case 5: el->num_children = pq__get_i32(c, t); break;
        case 6: el->converted_type = pq__get_i32(c, t); break;
        case 7: el->scale = pq__get_i32(c, t); break;
        case 8: el->precision = pq__get_i32(c, t); break;
        case 10:
            pq__enter(c, t, PQ__T_STRUCT);
            if (!c->bad) {
                pq__logical_type(c, el);
                c->depth--;
            }
            break;
        default: pq__tc_skip(c, t); break;
        }
    }
}

static pq__bytes pq__get_bytes(pq__tc *c, uint8_t t)
{
    pq__bytes b = {0};
    if (t != PQ__T_BINARY) {
        pq__tc_fail(c, "a field has the wrong type");
        return b;
    }
    b.p = pq__tc_binary(c, &b.len);
    if (c->bad)
        b.p = NULL;
    return b;
}

static void pq__statistics(pq__tc *c, pq__stats_raw *s)
{
    int16_t last = 0, id;
    uint8_t t;
    while (pq__tc_field(c, &last, &id, &t)) {
        switch (id) {
        case 1: s->max = pq__get_bytes(c, t); break;
        case 2: s->min = pq__get_bytes(c, t); break;
        case 3:
            s->null_count = pq__get_i64(c, t);
            s->has_null_count = true;
            break;
        case 5: s->max_value = pq__get_bytes(c, t); break;
        case 6: s->min_value = pq__get_bytes(c, t); break;
        default: pq__tc_skip(c, t); break;
        }
    }
}

static void pq__column_meta(pq__tc *c, pq__chunk_meta *m)
{
    m->has_meta = true;
    int16_t last = 0, id;
    uint8_t t;
    while (pq__tc_field(c, &last, &id, &t)) {
        switch (id) {
        case 1: m->type = pq__get_i32(c, t); break;
        case 3: {
            if (t != PQ__T_LIST) {
                pq__tc_fail(c, "a field has the wrong type");
                break;
            }
            uint8_t et;
            uint32_t n = pq__tc_list(c, &et);
            m->path_len = n;
            for (uint32_t i = 0; i < n && !c->bad; i++) {
                pq__bytes b = pq__get_bytes(c, et);
                if (i == 0)
                    m->path0 = b;
            }
            break;
        }
        case 4: m->codec = pq__get_i32(c, t); break;
        case 5: m->num_values = pq__get_i64(c, t); break;
        case 6: m->total_uncompressed_size = pq__get_i64(c, t); break;
        case 7: m->total_compressed_size = pq__get_i64(c, t); break;
        case 9: m->data_page_offset = pq__get_i64(c, t); break;
        case 11: m->dictionary_page_offset = pq__get_i64(c, t); break;
        case 12:
            pq__enter(c, t, PQ__T_STRUCT);
            if (!c->bad) {
                pq__statistics(c, &m->stats);
                c->depth--;
            }
            break;
        default: pq__tc_skip(c, t); break;
        }
    }
}

static void pq__column_chunk(pq__tc *c, pq__chunk_meta *m)
{
    m->dictionary_page_offset = -1;
    int16_t last = 0, id;
    uint8_t t;
    while (pq__tc_field(c, &last, &id, &t)) {
        switch (id) {
        case 1:
            m->external = true;
            pq__tc_skip(c, t);
            break;
        case 3:
            pq__enter(c, t, PQ__T_STRUCT);
            if (!c->bad) {
                pq__column_meta(c, m);
                c->depth--;
            }
            break;
        default: pq__tc_skip(c, t); break;
        }
    }
}

static void pq__parse_row_group(pq__tc *c, pq__row_group *rg)
{
    int16_t last = 0, id;
    uint8_t t;
    while (pq__tc_field(c, &last, &id, &t)) {
        switch (id) {
        case 1: {
            if (t != PQ__T_LIST || rg->cols) {
                pq__tc_fail(c, "a row group's column list is malformed");
                break;
            }
            uint8_t et;
            uint32_t n = pq__tc_list(c, &et);
            if (c->bad)
                break;
            if (n && et != PQ__T_STRUCT) {
                pq__tc_fail(c, "a row group's column list holds something other than structs");
                break;
            }
            rg->cols = calloc(n ? n : 1, sizeof(*rg->cols));
            if (!rg->cols) {
                pq__tc_fail(c, "out of memory");
                break;
            }
            rg->n_cols = n;
            c->depth++;
            for (uint32_t i = 0; i < n && !c->bad; i++)
                pq__column_chunk(c, &rg->cols[i]);
            c->depth--;
            break;
        }
        case 3: rg->num_rows = pq__get_i64(c, t); break;
        default: pq__tc_skip(c, t); break;
        }
    }
}

void pq__meta_free(pq__meta **mp)
{
    if (!mp || !*mp)
        return;
    pq__meta *m = *mp;
    for (uint32_t i = 0; i < m->n_schema; i++)
        free(m->schema[i].name);
    free(m->schema);
    for (uint32_t i = 0; i < m->n_rgs; i++)
        free(m->rgs[i].cols);
    free(m->rgs);
    free(m->created_by);
    free(m);
    *mp = NULL;
}

int pq__meta_parse(const uint8_t *buf, size_t len, pq__meta **out, char *err, size_t errlen)
{
    *out = NULL;
    pq__meta *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    pq__tc c;
    pq__tc_init(&c, buf, len);
    int16_t last = 0, id;
    uint8_t t;
    bool have_schema = false, have_rows = false;
    while (pq__tc_field(&c, &last, &id, &t)) {
        switch (id) {
        case 1: m->version = pq__get_i32(&c, t); break;
        case 2: {
            uint8_t et;
            if (t != PQ__T_LIST || m->schema) {
                pq__tc_fail(&c, "the schema is not a list");
                break;
            }
            uint32_t n = pq__tc_list(&c, &et);
            if (c.bad)
                break;
            if (n && et != PQ__T_STRUCT) {
                pq__tc_fail(&c, "the schema list holds something other than structs");
                break;
            }
            m->schema = calloc(n ? n : 1, sizeof(*m->schema));
            if (!m->schema) {
                pq__tc_fail(&c, "out of memory");
                break;
            }
            m->n_schema = n;
            c.depth++;
            for (uint32_t i = 0; i < n && !c.bad; i++)
                pq__schema_element(&c, &m->schema[i]);
            c.depth--;
            have_schema = true;
            break;
        }
        case 3:
            m->num_rows = pq__get_i64(&c, t);
            have_rows = true;
            break;
        case 4: {
            uint8_t et;
            if (t != PQ__T_LIST || m->rgs) {
                pq__tc_fail(&c, "the row groups are not a list");
                break;
            }
            uint32_t n = pq__tc_list(&c, &et);
            if (c.bad)
                break;
            if (n && et != PQ__T_STRUCT) {
                pq__tc_fail(&c, "the row group list holds something other than structs");
                break;
            }
            m->rgs = calloc(n ? n : 1, sizeof(*m->rgs));
            if (!m->rgs) {
                pq__tc_fail(&c, "out of memory");
                break;
            }
            m->n_rgs = n;
            c.depth++;
            for (uint32_t i = 0; i < n && !c.bad; i++)
                pq__parse_row_group(&c, &m->rgs[i]);
            c.depth--;
            break;
        }
        case 6: {
            pq__bytes b = pq__get_bytes(&c, t);
            if (c.bad)
                break;
            free(m->created_by);
            m->created_by = malloc((size_t)b.len + 1);
            if (!m->created_by) {
                pq__tc_fail(&c, "out of memory");
                break;
            }
            memcpy(m->created_by, b.p, b.len);
            m->created_by[b.len] = '\0';
            break;
        }
        default: pq__tc_skip(&c, t); break;
        }
    }
    if (!c.bad && (!have_schema || !have_rows))
        pq__tc_fail(&c, have_schema ? "num_rows is missing" : "the schema is missing");
    if (c.bad) {
        int rc = (c.why && strcmp(c.why, "out of memory") == 0) ? -ENOMEM : -EBADMSG;
        if (err && errlen)
            snprintf(err, errlen, "the footer (FileMetaData) is malformed: %s", c.why);
        pq__meta_free(&m);
        return rc;
    }
    *out = m;
    return 0;
}

/* ---- PageHeader ----------------------------------------------------------- */

int pq__page_header_parse(const uint8_t *buf, size_t len, pq__page_header *h, const char **why)
{
    memset(h, 0, sizeof(*h));
    h->type = -1;
    h->is_compressed = true;
    h->encoding = -1;
    h->def_encoding = PQ__ENC_RLE;
    pq__tc c;
    pq__tc_init(&c, buf, len);
    int16_t last = 0, id;
    uint8_t t;
    bool have_type = false, have_u = false, have_c = false;
    while (pq__tc_field(&c, &last, &id, &t)) {
        int16_t l2 = 0, id2;
        uint8_t t2;
        switch (id) {
        case 1:
            h->type = pq__get_i32(&c, t);
            have_type = true;
            break;
        case 2:
            h->uncompressed_size = pq__get_i32(&c, t);
            have_u = true;
            break;
        case 3:
            h->compressed_size = pq__get_i32(&c, t);
            have_c = true;
            break;
        case 5:
            pq__enter(&c, t, PQ__T_STRUCT);
            if (c.bad)
                break;
            h->has_data = true;
            while (pq__tc_field(&c, &l2, &id2, &t2)) {
                switch (id2) {
                case 1: h->num_values = pq__get_i32(&c, t2); break;
                case 2: h->encoding = pq__get_i32(&c, t2); break;
                case 3: h->def_encoding = pq__get_i32(&c, t2); break;
                default: pq__tc_skip(&c, t2); break;
                }
            }
            c.depth--;
            break;
        case 7:
            pq__enter(&c, t, PQ__T_STRUCT);
            if (c.bad)
                break;
            h->has_dict = true;
            while (pq__tc_field(&c, &l2, &id2, &t2)) {
                switch (id2) {
                case 1: h->num_values = pq__get_i32(&c, t2); break;
                case 2: h->encoding = pq__get_i32(&c, t2); break;
                default: pq__tc_skip(&c, t2); break;
                }
            }
            c.depth--;
            break;
        case 8:
            pq__enter(&c, t, PQ__T_STRUCT);
            if (c.bad)
                break;
            h->has_v2 = true;
            while (pq__tc_field(&c, &l2, &id2, &t2)) {
                switch (id2) {
                case 1: h->num_values = pq__get_i32(&c, t2); break;
                case 2: h->num_nulls = pq__get_i32(&c, t2); break;
                case 3: h->num_rows = pq__get_i32(&c, t2); break;
                case 4: h->encoding = pq__get_i32(&c, t2); break;
                case 5: h->def_len = pq__get_i32(&c, t2); break;
                case 6: h->rep_len = pq__get_i32(&c, t2); break;
                case 7:
                    if (t2 == PQ__T_TRUE || t2 == PQ__T_FALSE)
                        h->is_compressed = pq__tc_bool(&c, t2);
                    else
                        pq__tc_fail(&c, "a field has the wrong type");
                    break;
                default: pq__tc_skip(&c, t2); break;
                }
            }
            c.depth--;
            break;
        default: pq__tc_skip(&c, t); break;
        }
    }
    if (!c.bad && !(have_type && have_u && have_c))
        pq__tc_fail(&c, "a required field (type or sizes) is missing");
    if (!c.bad && (h->uncompressed_size < 0 || h->compressed_size < 0))
        pq__tc_fail(&c, "a page size is negative");
    if (c.bad) {
        *why = c.why;
        return -EBADMSG;
    }
    return (int)(c.p - buf);
}
