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
    F_ADD = 1,
    F_SUB,
    F_MUL,
    F_DIV,
    F_MOD,
    F_NEG,
    F_EQ,
    F_NE,
    F_LT,
    F_LE,
    F_GT,
    F_GE,
    F_AND,
    F_OR,
    F_NOT,
    F_IN,
    F_LIKE,
    F_ILIKE,
    F_ISNULL,
    F_ISNOTNULL,
    F_IF,
    F_MULTIIF,
    F_COALESCE,
    F_CAST,
    F_LENGTH,
    F_LOWER,
    F_UPPER,
    F_SUBSTRING,
    F_CONCAT,
    F_STARTSWITH,
    F_ENDSWITH,
    F_POSITION,
    F_TOYEAR,
    F_TOMONTH,
    F_TODATE,
    F_TOSTARTOFMONTH,
    F_TOSTARTOFDAY,
    F_DATEDIFF,
    F_ROUND,
    F_ABS,
    /* eng_eval_fn.c */
    F_INTDIV,
    F_POW,
    F_LOG,
    F_LOG2,
    F_LOG10,
    F_EXP,
    F_SQRT,
    F_FLOOR,
    F_CEIL,
    F_TRUNC,
    F_REPLACEALL,
    F_REPLACEONE,
    F_REPLACEREGEXPALL,
    F_REPLACEREGEXPONE,
    F_MATCH,
    F_EXTRACT,
    F_TRIMBOTH,
    F_TRIMLEFT,
    F_TRIMRIGHT,
    F_REVERSE,
    F_EMPTY,
    F_NOTEMPTY,
    F_FMT_SIZE,
    F_FMT_QUANTITY,
    F_FMT_TIMEDELTA,
    F_XXHASH64,
    F_SIPHASH64,
    F_CITYHASH64,
    F_TOSTARTOF,      /* unit: BX_U_* */
    F_DATEPART,       /* unit: BX_P_* */
    F_DATEADD,        /* a[0] amount, a[1] date; unit BX_U_*; negated: subtract */
    F_FORMATDATETIME, /* a[0] date, a[1] the format (a constant) */
    F_PARSEDATETIME,  /* parseDateTimeBestEffort; unit: 0 error, 1 OrNull, 2 OrZero */
    F_ASSUMENOTNULL,
    /* eng_eval_array.c */
    F_ARRAY,         /* [a, b, ...]: an Array of the arguments (cast to the element type) */
    F_HAS,           /* has(arr, x) */
    F_ELEMENT,       /* arr[i]: 1-based, negative from the end, else the default */
    F_ARR_LENGTH,    /* length(arr) */
    F_ARR_EMPTY,     /* empty(arr) */
    F_ARR_NOTEMPTY,  /* notEmpty(arr) */
    F_SPLITBYCHAR,   /* splitByChar(sep, s): sep one byte (a constant) */
    F_SPLITBYSTRING, /* splitByString(sep, s): sep a constant; '' splits into bytes */
    F_ARR_EQ,        /* arr = arr, arr != arr (negated): equal elements */
    F_ARR_CAST,      /* an Array re-encoded as another Array type (Nullable, wider) */
} bx_fn;

/* Units of F_TOSTARTOF and F_DATEADD (the first eight are dateDiff's). */
enum {
    BX_U_SECOND = 0,
    BX_U_MINUTE,
    BX_U_HOUR,
    BX_U_DAY,
    BX_U_WEEK,
    BX_U_MONTH,
    BX_U_QUARTER,
    BX_U_YEAR,
    BX_U_MONDAY,
    BX_U_MIN5,
    BX_U_MIN10,
    BX_U_MIN15,
};
/* Parts of F_DATEPART. */
enum {
    BX_P_YYYYMM = 0,
    BX_P_YYYYMMDD,
    BX_P_YYYYMMDDHHMMSS,
    BX_P_DAYOFWEEK,
    BX_P_DAYOFMONTH,
    BX_P_DAYOFYEAR,
    BX_P_HOUR,
    BX_P_MINUTE,
    BX_P_SECOND,
    BX_P_QUARTER,
};

typedef enum bx_op { BX_COL = 1, BX_CONST, BX_FUNC } bx_op;

typedef struct bx bx;
struct bx {
    bx_op op;
    ex_type t;
    bx_fn fn;
    int col;      /* BX_COL: index into the input vectors */
    ex_vec cval;  /* BX_CONST: a constant vector (n 1) */
    bool negated; /* F_IN, F_LIKE, F_DATEADD (subtract) */
    int unit;     /* F_DATEDIFF: 0 s,1 min,2 h,3 day,4 week,5 month,6 quarter,7 year;
                           F_CAST: 1 toTOrZero (0 when unparsable), 2 toTOrNull (NULL) */
    bx **a;
    int na;
    /* F_IN: the list, converted to the operand's type */
    int64_t *in_i;
    double *in_d;
    char **in_s;
    uint32_t *in_len;
    int n_in;
    bool in_has_null;
    bool in_sorted;  /* bx_in_index sorted the lists: looked up by bisection */
    int64_t *in_set; /* and in_i as a hash set (0 marks an empty slot; in_set_zero
                           says whether 0 is in the list), in_set_mask + 1 slots */
    uint32_t in_set_mask;
    bool in_set_zero;
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
/* Sorts a long F_IN list (in_i, in_d, and in_s with in_len, each on its own)
 * so that rows find their value by bisection; short lists stay as they are. */
void bx_in_index(bx *e);

/* The type ClickHouse gives fn (F_ADD .. F_MOD, F_NEG, F_ABS, F_ROUND) over
 * x and y when one of them is a Decimal: false with why filled when there is
 * none (a String, a scale above 18). */
bool bx_dec_result_type(bx_fn fn, ex_type x, ex_type y, ex_type *out, char *why, size_t wlen);
/* Whether a regular expression is small enough to compile: at most
 * BX_REGEX_MAX_BYTES bytes, each bounded repetition ({m,n}) at most 1000, and
 * at most BX_REGEX_MAX_ATOMS atoms once its repetitions are expanded (glibc's
 * regcomp copies the repeated atom or group out, so nested repetitions
 * multiply: about 100 bytes of compiled pattern per atom). */
#define BX_REGEX_MAX_BYTES 1024
#define BX_REGEX_MAX_ATOMS 20000
#define BX_REGEX_LIMITS                                                                            \
    "at most 1024 bytes, repetition counts of at most 1000, and at most 20000 characters "         \
    "once its repetitions are expanded"
bool bx_regex_bounded(const char *re);
/* Fills sel with the rows where the boolean vector is true (not NULL, != 0);
 * returns their count. */
uint32_t bx_select(const ex_vec *b, const uint32_t *insel, uint32_t n, uint32_t *sel);

#endif /* RINGCACHE_ENG_EXPR_H */
