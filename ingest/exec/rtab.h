/* SPDX-License-Identifier: Apache-2.0
 *
 * rtab.h: the result table (rtab.c): typed columns that grow by rows, the
 * form rows take between the workers and the sink (a worker's projected rows,
 * the merged result, a block for the output). Internal to the executor.
 *
 * Thread-safety: a table belongs to one thread at a time.
 */
#ifndef RINGCACHE_RTAB_H
#define RINGCACHE_RTAB_H

#include "eng_types.h"
#include "eng_wire.h"

#include <stdint.h>

typedef struct rtab {
    int nc;
    ex_vec *c;
    uint32_t n, cap;
} rtab;

/* nc columns of these types (each keeps a null map). 0 or -ENOMEM. */
int rtab_init(eng_mem *m, rtab *t, const ex_type *types, int nc);
void rtab_free(eng_mem *m, rtab *t);
/* Room for need rows. 0 or -ENOMEM. */
int rtab_reserve(eng_mem *m, rtab *t, uint32_t need);
/* Appends row r of v to column k (row t->n; the caller counts the row). */
int rtab_put(eng_mem *m, rtab *t, int k, const ex_vec *v, uint32_t r);
/* Appends n rows, one vector per column. 0 or -ENOMEM. */
int rtab_append(eng_mem *m, rtab *t, const ex_vec *vals, uint32_t n);
/* Orders rows a and b of v (a constant vector too), both neither NULL nor
 * NaN: -1, 0 or 1 (strings by bytes, then length). */
int rtab_cmp_values(const ex_vec *v, uint32_t a, uint32_t b);
/* Keeps only rows idx[0..n) in that order. 0 or -ENOMEM. */
int rtab_take(eng_mem *m, rtab *t, const uint32_t *idx, uint32_t n);

/* Appends t's columns' types and rows to b (the layout is drawn in
 * dist/dist_state.h): b->err. */
int rtab_encode(const rtab *t, ew_buf *b);
/* Appends rows rtab_encode wrote to t, whose columns must have the same
 * types; counts and lengths are checked against the bytes left before
 * anything is allocated. 0, -EBADMSG (r->err set) or -ENOMEM. */
int rtab_decode_append(eng_mem *m, rtab *t, er_buf *r);

#endif /* RINGCACHE_RTAB_H */
