/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_expr.h: bound expressions (bx, eng_eval.c): trees the binder builds over
 * a block's columns, evaluated a column at a time over vectors.
 *
 * Thread-safety: a bound tree is read-only while it is evaluated, so any
 * number of threads may evaluate one tree at once, each with its own inputs,
 * outputs and ex_ectx.
 */
#ifndef RINGCACHE_ENG_EXPR_H
#define RINGCACHE_ENG_EXPR_H

#include "eng_types.h"

/* ---- bound expressions ----------------------------------------------------- */

typedef enum bx_fn {
    F_ADD = 1, F_SUB, F_MUL, F_DIV, F_MOD, F_NEG,
    F_EQ, F_NE, F_LT, F_LE, F_GT, F_GE,
    F_AND, F_OR, F_NOT, F_IN, F_LIKE, F_ILIKE, F_ISNULL, F_ISNOTNULL,
    F_IF, F_MULTIIF, F_COALESCE, F_CAST,
    F_LENGTH, F_LOWER, F_UPPER, F_SUBSTRING, F_CONCAT, F_STARTSWITH, F_ENDSWITH, F_POSITION,
    F_TOYEAR, F_TOMONTH, F_TODATE, F_TOSTARTOFMONTH, F_TOSTARTOFDAY, F_DATEDIFF,
    F_ROUND, F_ABS,
} bx_fn;

typedef enum bx_op { BX_COL = 1, BX_CONST, BX_FUNC } bx_op;

typedef struct bx bx;
struct bx {
    bx_op op;
    ex_type t;
    bx_fn fn;
    int col;            /* BX_COL: index into the input vectors */
    ex_vec cval;        /* BX_CONST: a constant vector (n 1) */
    bool negated;       /* F_IN, F_LIKE */
    int unit;           /* F_DATEDIFF: 0 s,1 min,2 h,3 day,4 week,5 month,6 quarter,7 year */
    bx **a;
    int na;
    /* F_IN: the list, converted to the operand's type */
    int64_t *in_i;
    double *in_d;
    char **in_s;
    uint32_t *in_len;
    int n_in;
    bool in_has_null;
};

typedef struct ex_ectx {
    eng_mem *mem;
    char *err;
    size_t errlen;
} ex_ectx;

/* Evaluates e over n rows of the inputs (selected by sel when not NULL) into
 * out (a fresh vector of n rows, or a constant). 0 or -errno (err filled). */
int bx_eval(ex_ectx *c, const bx *e, const ex_vec *in, const uint32_t *sel, uint32_t n,
            ex_vec *out);
void bx_free(eng_mem *m, bx *e);
/* The type ClickHouse gives fn (F_ADD .. F_MOD, F_NEG, F_ABS, F_ROUND) over
 * x and y when one of them is a Decimal: false with why filled when there is
 * none (a String, a scale above 18). */
bool bx_dec_result_type(bx_fn fn, ex_type x, ex_type y, ex_type *out, char *why, size_t wlen);
/* Fills sel with the rows where the boolean vector is true (not NULL, != 0);
 * returns their count. */
uint32_t bx_select(const ex_vec *b, const uint32_t *insel, uint32_t n, uint32_t *sel);


#endif /* RINGCACHE_ENG_EXPR_H */
