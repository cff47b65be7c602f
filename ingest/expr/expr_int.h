/* SPDX-License-Identifier: Apache-2.0
 *
 * expr_int.h: what the files of expr/ share: the Decimal kernels
 * (eng_decimal.c) the evaluator (eng_eval.c) calls. Reentrant.
 */
#ifndef RINGCACHE_EXPR_INT_H
#define RINGCACHE_EXPR_INT_H

#include "eng_expr.h"

/* out is allocated (n rows, nulls merged); e->t is EX_DECIMAL. Fills the
 * values of F_ADD .. F_MOD, F_NEG, F_ABS, F_ROUND. 0 or -errno (err filled). */
int bx__dec_arith(ex_ectx *c, const bx *e, const ex_vec *a, uint32_t n, ex_vec *out);
/* Three-way comparison of row r of x and y, one of them a Decimal, the other
 * a Decimal, an integer or a Bool (exact, at the larger scale). */
int bx__dec_cmp(const ex_vec *x, const ex_vec *y, uint32_t r);
/* Row r of x (not NULL, not a String) as a value of the Decimal type t into
 * *out. 0, or -ERANGE / -EDOM with err filled. */
int bx__dec_from(ex_ectx *c, ex_type t, const ex_vec *x, uint32_t r, int64_t *out);

#endif
