/* SPDX-License-Identifier: Apache-2.0
 *
 * colbatch.c: columns and batches (colbatch.h): allocation, reference counts,
 * string access through a dictionary, and materialising a dictionary-encoded
 * column into plain offsets + bytes.
 */
#include "colbatch.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

size_t cb_type_width(const cb_typeinfo *info)
{
    switch (info->type) {
    case CB_BOOL:
    case CB_INT8:
    case CB_UINT8: return 1;
    case CB_INT16:
    case CB_UINT16: return 2;
    case CB_INT32:
    case CB_UINT32:
    case CB_FLOAT:
    case CB_DATE: return 4;
    case CB_INT64:
    case CB_UINT64:
    case CB_DOUBLE:
    case CB_TIME:
    case CB_TIMESTAMP: return 8;
    case CB_DECIMAL: return info->precision <= 18 ? 8 : 16;
    case CB_STRING:
    case CB_BINARY:
    case CB_LIST: return 0;
    }
    return 0;
}

const char *cb_type_name(cb_type t)
{
    switch (t) {
    case CB_BOOL: return "bool";
    case CB_INT8: return "int8";
    case CB_INT16: return "int16";
    case CB_INT32: return "int32";
    case CB_INT64: return "int64";
    case CB_UINT8: return "uint8";
    case CB_UINT16: return "uint16";
    case CB_UINT32: return "uint32";
    case CB_UINT64: return "uint64";
    case CB_FLOAT: return "float";
    case CB_DOUBLE: return "double";
    case CB_DATE: return "date";
    case CB_TIME: return "time";
    case CB_TIMESTAMP: return "timestamp";
    case CB_DECIMAL: return "decimal";
    case CB_STRING: return "string";
    case CB_BINARY: return "binary";
    case CB_LIST: return "list";
    }
    return "unknown";
}

static bool cb__valid_info(const cb_typeinfo *info)
{
    if (info->type < CB_BOOL || info->type > CB_LIST)
        return false;
    if (info->type == CB_DECIMAL &&
        (info->precision < 1 || info->precision > 38 || info->scale > info->precision))
        return false;
    return true;
}

int cb_column_create(cb_column **out, const cb_typeinfo *info, const char *name, uint32_t n)
{
    *out = NULL;
    if (!cb__valid_info(info))
        return -EINVAL;
    cb_column *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->info = *info;
    c->n = n;
    atomic_init(&c->refs, 1);
    if (name && !(c->name = strdup(name)))
        goto oom;
    size_t w = cb_type_width(info);
    if (w) {
        /* calloc(0) may return NULL: always allocate at least one value. */
        c->values = calloc(n ? n : 1, w);
        if (!c->values)
            goto oom;
    } else {
        c->offsets = calloc((size_t)n + 1, sizeof(uint32_t));
        if (!c->offsets)
            goto oom;
    }
    *out = c;
    return 0;
oom:
    cb_column_unref(c);
    return -ENOMEM;
}

int cb_column_alloc_validity(cb_column *c)
{
    if (c->validity)
        return 0;
    size_t bytes = ((size_t)c->n + 7) / 8;
    c->validity = malloc(bytes ? bytes : 1);
    if (!c->validity)
        return -ENOMEM;
    memset(c->validity, 0xff, bytes ? bytes : 1);
    return 0;
}

int cb_column_reserve_data(cb_column *c, size_t need)
{
    if (need <= c->data_cap)
        return 0;
    if (need > UINT32_MAX)
        return -E2BIG;
    size_t cap = c->data_cap ? c->data_cap : 256;
    while (cap < need)
        cap *= 2;
    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    uint8_t *p = realloc(c->data, cap);
    if (!p)
        return -ENOMEM;
    c->data = p;
    c->data_cap = cap;
    return 0;
}

cb_column *cb_column_ref(cb_column *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void cb_column_unref(cb_column *c)
{
    if (!c)
        return;
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    cb_column_unref(c->dict);
    free(c->name);
    free(c->validity);
    free(c->values);
    free(c->offsets);
    free(c->data);
    free(c->indices);
    free(c);
}

void cb_column_destroy(cb_column **c)
{
    if (!c)
        return;
    cb_column_unref(*c);
    *c = NULL;
}

const uint8_t *cb_column_bytes(const cb_column *c, uint32_t row, size_t *len)
{
    if (cb_column_is_null(c, row)) {
        *len = 0;
        return NULL;
    }
    if (c->dict) {
        const cb_column *d = c->dict;
        uint32_t k = c->indices[row];
        *len = d->offsets[k + 1] - d->offsets[k];
        return d->data ? d->data + d->offsets[k] : (const uint8_t *)"";
    }
    *len = c->offsets[row + 1] - c->offsets[row];
    return c->data ? c->data + c->offsets[row] : (const uint8_t *)"";
}

int cb_column_materialize(cb_column *c)
{
    if (!c->dict)
        return 0;
    const cb_column *d = c->dict;
    size_t total = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        if (cb_column_is_null(c, i))
            continue;
        uint32_t k = c->indices[i];
        total += d->offsets[k + 1] - d->offsets[k];
    }
    if (total > UINT32_MAX)
        return -E2BIG;
    uint32_t *off = malloc(((size_t)c->n + 1) * sizeof(uint32_t));
    uint8_t *data = malloc(total ? total : 1);
    if (!off || !data) {
        free(off);
        free(data);
        return -ENOMEM;
    }
    uint32_t pos = 0;
    off[0] = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        if (!cb_column_is_null(c, i)) {
            uint32_t k = c->indices[i];
            uint32_t len = d->offsets[k + 1] - d->offsets[k];
            memcpy(data + pos, d->data + d->offsets[k], len);
            pos += len;
        }
        off[i + 1] = pos;
    }
    free(c->offsets);
    free(c->data);
    free(c->indices);
    c->indices = NULL;
    c->offsets = off;
    c->data = data;
    c->data_cap = total ? total : 1;
    cb_column_unref(c->dict);
    c->dict = NULL;
    return 0;
}

int cb_batch_create(cb_batch **out, uint32_t n_rows, uint32_t n_cols)
{
    *out = NULL;
    cb_batch *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->cols = calloc(n_cols ? n_cols : 1, sizeof(cb_column *));
    if (!b->cols) {
        free(b);
        return -ENOMEM;
    }
    b->n_rows = n_rows;
    b->n_cols = n_cols;
    *out = b;
    return 0;
}

void cb_batch_destroy(cb_batch **b)
{
    if (!b || !*b)
        return;
    for (uint32_t i = 0; i < (*b)->n_cols; i++)
        cb_column_unref((*b)->cols[i]);
    free((*b)->cols);
    free(*b);
    *b = NULL;
}

/* A heap block's chunk: its usable size and the allocator's size word. */
static size_t cb__chunk(const void *p)
{
    return p ? malloc_usable_size((void *)p) + sizeof(size_t) : 0;
}

static size_t cb__column_mem(const cb_column *c)
{
    size_t b = cb__chunk(c) + cb__chunk(c->values) + cb__chunk(c->validity) +
               cb__chunk(c->offsets) + cb__chunk(c->indices);
    /* the string bytes grow by doubling: the bytes written, not the tail
       never touched */
    if (c->data) {
        size_t used = c->offsets ? c->offsets[c->n] : 0, chunk = cb__chunk(c->data);
        b += used + sizeof(size_t) < chunk ? used + sizeof(size_t) : chunk;
    }
    if (c->dict)
        b += cb__column_mem(c->dict);
    return b;
}

size_t cb_batch_mem(const cb_batch *b)
{
    if (!b)
        return 0;
    size_t m = cb__chunk(b) + cb__chunk(b->cols);
    for (uint32_t k = 0; k < b->n_cols; k++)
        if (b->cols[k])
            m += cb__column_mem(b->cols[k]);
    return m;
}
