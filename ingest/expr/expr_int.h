/* SPDX-License-Identifier: Apache-2.0
 *
 * expr_int.h: what the files of ingest/expr/ share, internal to it: what
 * eng_eval.c shares with the functions of eng_eval_fn.c, and the Decimal
 * kernels (eng_decimal.c) the evaluator calls. Reentrant, as bx_eval is.
 */
#ifndef RINGCACHE_EXPR_INT_H
#define RINGCACHE_EXPR_INT_H

#include "eng_expr.h"

/* A fresh result of type t, n rows, NULL where any of a[0..na) is. 0 or -ENOMEM. */
int bx_out_new(ex_ectx *c, ex_vec *out, ex_type t, uint32_t n, ex_vec *a, int na);
/* The out-of-memory sentence (the memory limit's when it was the limit). */
int bx_oom(ex_ectx *c);
/* The functions of eng_eval_fn.c over evaluated arguments a[0..na), n rows. */
int bx_eval_fn(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out);

/* The Array functions (eng_eval_array.c), F_ARRAY .. F_ARR_CAST. */
int bx__eval_array(ex_ectx *c, const bx *e, ex_vec *a, int na, uint32_t n, ex_vec *out);

/* SipHash-2-4 of m with the key (k0, k1); sipHash64 uses the key 0. */
uint64_t bx_siphash24(uint64_t k0, uint64_t k1, const uint8_t *m, size_t len);
/* CityHash64 of version 1.0.2, as ClickHouse's cityHash64 (eng_cityhash.c), and
 * the mix of two 64-bit values into one it uses (its Hash128to64). */
uint64_t bx_cityhash64(const uint8_t *s, size_t len);
uint64_t bx_city_hash128to64(uint64_t lo, uint64_t hi);

/* out is allocated (n rows, nulls merged); e->t is EX_DECIMAL. Fills the
 * values of F_ADD .. F_MOD, F_NEG, F_ABS, F_ROUND. 0 or -errno (err filled). */
int bx__dec_arith(ex_ectx *c, const bx *e, const ex_vec *a, uint32_t n, ex_vec *out);
/* Three-way comparison of row r of x and y, one of them a Decimal, the other
 * a Decimal, an integer or a Bool (exact, at the larger scale). */
int bx__dec_cmp(const ex_vec *x, const ex_vec *y, uint32_t r);
/* Row r of x (not NULL, not a String) as a value of the Decimal type t into
 * *out. 0, or -ERANGE / -EDOM with err filled. */
int bx__dec_from(ex_ectx *c, ex_type t, const ex_vec *x, uint32_t r, int64_t *out);

#endif /* RINGCACHE_EXPR_INT_H */
