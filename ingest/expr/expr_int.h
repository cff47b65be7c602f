/* SPDX-License-Identifier: Apache-2.0
 *
 * expr_int.h: what eng_eval.c shares with the functions of eng_eval_fn.c,
 * internal to ingest/expr/. Reentrant, as bx_eval is.
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

/* SipHash-2-4 of m with the key (k0, k1); sipHash64 uses the key 0. */
uint64_t bx_siphash24(uint64_t k0, uint64_t k1, const uint8_t *m, size_t len);

#endif /* RINGCACHE_EXPR_INT_H */
