/* SPDX-License-Identifier: Apache-2.0
 *
 * sink_part.c: INSERT's sink (eng_part_sink.h): convert, squash, hand blocks
 * to writer threads that split by partition, sort by ORDER BY and write one
 * part per piece.
 */
#include "eng_part_sink.h"
#include "jsonu.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one column being squashed ------------------------------------------------ */

typedef struct colbuf {
    uint8_t *vals; /* fixed-width values */
    size_t vcap;   /* in bytes */
    uint32_t *off; /* strings: n + 1 offsets */
    size_t ocap;   /* in entries */
    uint8_t *data;
    size_t dlen, dcap;
    uint8_t *nulls; /* a byte per row, or NULL while none */
    size_t ncap;
    uint32_t n;
} colbuf;

typedef struct written {
    tb_part_add add;
    char name[TB_NAME_MAX];
    char partition[TB_NAME_MAX];
    char block_id[TB_NAME_MAX];
    char etag[S3_ETAG_MAX]; /* the object's version, when the put told it */
} written;

typedef struct job job;

typedef struct psink {
    eng_sink base;
    eng_part_sink_opts o;
    uint32_t n_cols;
    int n_in; /* input columns */
    ex_type *in_types;
    colbuf *cb;           /* the block being squashed */
    uint64_t rows, bytes; /* in it */
    int64_t charged;      /* its bytes, charged to the tracker */
    uint64_t rows_total;  /* rows taken (for the row numbers of errors) */
    uint64_t blocks;      /* blocks handed off */
    /* writer threads */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running;
    int uploading;
    job *jobs; /* every job started (joined at the end) */
    int rc;    /* the first failure */
    char msg[ENG_MSG_MAX];
    written *parts;
    size_t n_parts, cap_parts;
    tb_part_add *adds; /* eng_part_sink_parts' copy */
    ex_bytes arr;      /* scratch: one Array value converted */
    bool ended;
} psink;

struct job {
    psink *s;
    cb_batch *b;
    int64_t charged;
    uint64_t seq; /* the block's number, for dedup by token */
    pthread_t th;
    bool started;
    job *next;
};

static void set_fail(psink *s, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_fail(psink *s, int rc, const char *fmt, ...)
{
    pthread_mutex_lock(&s->mu);
    if (!s->rc) {
        s->rc = rc;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->msg, sizeof(s->msg), fmt, ap);
        va_end(ap);
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void mem_fail(psink *s)
{
    char m[ENG_MSG_MAX];
    em_error(s->o.mem, m, sizeof(m));
    set_fail(s, -ENOMEM, "%s (MEMORY_LIMIT_EXCEEDED); nothing of this INSERT was committed", m);
}

static bool charge(psink *s, int64_t n)
{
    if (em_account(s->o.mem, n))
        return true;
    mem_fail(s);
    return false;
}

static int grow(void **p, size_t *cap, size_t need, size_t unit)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *np = realloc(*p, c * unit);
    if (!np)
        return -ENOMEM;
    *p = np;
    *cap = c;
    return 0;
}

static void colbuf_free(colbuf *c)
{
    free(c->vals);
    free(c->off);
    free(c->data);
    free(c->nulls);
    memset(c, 0, sizeof(*c));
}

/* ---- conversions ------------------------------------------------------------------- */

static const int64_t p10[19] = {1,
                                10,
                                100,
                                1000,
                                10000,
                                100000,
                                1000000,
                                10000000,
                                100000000,
                                1000000000,
                                10000000000ll,
                                100000000000ll,
                                1000000000000ll,
                                10000000000000ll,
                                100000000000000ll,
                                1000000000000000ll,
                                10000000000000000ll,
                                100000000000000000ll,
                                1000000000000000000ll};

static int ts_scale(const cb_typeinfo *t)
{
    return t->unit == CB_UNIT_MS ? 3 : t->unit == CB_UNIT_US ? 6 : t->unit == CB_UNIT_NS ? 9 : 0;
}

typedef struct cv_target {
    const cb_typeinfo *t;
    bool nullable;
    uint32_t fixed;
    bool date16;
    const char *name, *type;
    ex_bytes *arr; /* scratch for an Array value */
} cv_target;

/* ---- Array columns ------------------------------------------------------------ */

/* Row r of v as an Array of the column's type, encoded into tg->arr
 * (ex_arr_convert). 0, or -EINVAL with why. */
static int conv_array(const cv_target *tg, const ex_vec *v, uint32_t r, char *tmp, size_t tcap,
                      char *why, size_t wlen)
{
    if (v->t.kind == EX_ARRAY && v->t.depth > 1) {
        snprintf(why, wlen, "nested arrays are not supported in tables");
        return -EINVAL;
    }
    ex_type at = ex_type_of_column(tg->t, false);
    return ex_arr_convert(v, r, &at, tg->arr, tmp, tcap, why, wlen);
}

/* Converts value r of v into *i / *d / the string (sp, len). 1: NULL (or
 * the default), 0: a value, -EINVAL: not convertible (why in `why`). */
static int conv_value(const cv_target *tg, const ex_vec *v, uint32_t r, int64_t *i, double *d,
                      const uint8_t **sp, size_t *len, char *tmp, size_t tcap, char *why,
                      size_t wlen)
{
    if (ex_null(v, r))
        return 1;
    const cb_typeinfo *t = tg->t;
    uint32_t rr = ex_row(v, r);
    uint8_t k = v->t.kind;
    uint32_t sl = 0;
    const uint8_t *s = k == EX_STRING ? ex_str(v, r, &sl) : NULL;
    switch (t->type) {
    case CB_LIST: {
        int rc = conv_array(tg, v, r, tmp, tcap, why, wlen);
        if (rc < 0)
            return rc;
        *sp = tg->arr->p;
        *len = tg->arr->n;
        return 0;
    }
    case CB_BOOL:
    case CB_INT8:
    case CB_INT16:
    case CB_INT32:
    case CB_INT64:
    case CB_UINT8:
    case CB_UINT16:
    case CB_UINT32:
    case CB_UINT64: {
        if (k == EX_FLOAT) {
            double x = v->d[rr];
            if (!isfinite(x) || x >= 18446744073709551616.0 || x <= -9223372036854775809.0) {
                snprintf(why, wlen, "the value %g does not fit", x);
                return -EINVAL;
            }
            *i = x < 0 ? (int64_t)x : (int64_t)(uint64_t)x;
        } else if (k == EX_STRING) {
            bool neg;
            if (t->type == CB_BOOL && (sl == 4 || sl == 5) &&
                (!strncmp((const char *)s, "true", sl) || !strncmp((const char *)s, "false", sl))) {
                *i = sl == 4;
            } else if (!ex_parse_int(s, sl, i, &neg)) {
                snprintf(why, wlen, "cannot parse '%.*s' as %s (CANNOT_PARSE_TEXT)",
                         (int)(sl > 60 ? 60 : sl), (const char *)s, tg->type);
                return -EINVAL;
            }
        } else if ((k == EX_DATETIME || k == EX_DECIMAL) && v->t.scale) {
            *i = v->i[rr] / p10[v->t.scale]; /* a Decimal's integer part, as CAST gives */
        } else {
            *i = v->i[rr];
        }
        if (t->type == CB_BOOL)
            *i = *i != 0;
        return 0;
    }
    case CB_FLOAT:
    case CB_DOUBLE:
        if (k == EX_STRING) {
            if (!ex_parse_float(s, sl, d)) {
                snprintf(why, wlen, "cannot parse '%.*s' as %s (CANNOT_PARSE_TEXT)",
                         (int)(sl > 60 ? 60 : sl), (const char *)s, tg->type);
                return -EINVAL;
            }
        } else {
            *d = ex_f(v, r);
        }
        return 0;
    case CB_DECIMAL: {
        int sc = t->scale;
        if (k == EX_STRING) {
            if (!ex_parse_decimal(s, sl, sc, i)) {
                snprintf(why, wlen, "cannot parse '%.*s' as %s (CANNOT_PARSE_TEXT)",
                         (int)(sl > 60 ? 60 : sl), (const char *)s, tg->type);
                return -EINVAL;
            }
        } else if (k == EX_FLOAT) {
            double x = v->d[rr] * (double)p10[sc];
            if (!isfinite(x) || fabs(x) >= 9.2e18) {
                snprintf(why, wlen, "the value %g does not fit %s (DECIMAL_OVERFLOW)", v->d[rr],
                         tg->type);
                return -EINVAL;
            }
            *i = llround(x);
        } else if (k == EX_DECIMAL) {
            if (!ex_decimal_rescale(v->i[rr], v->t.scale, sc, i)) {
                snprintf(why, wlen, "the value does not fit %s (DECIMAL_OVERFLOW)", tg->type);
                return -EINVAL;
            }
        } else {
            int64_t x = v->i[rr];
            if (x > INT64_MAX / p10[sc] || x < -(INT64_MAX / p10[sc])) {
                snprintf(why, wlen, "the value does not fit %s (DECIMAL_OVERFLOW)", tg->type);
                return -EINVAL;
            }
            *i = x * p10[sc];
        }
        int64_t lim = t->precision >= 18 ? INT64_MAX : p10[t->precision];
        if (*i >= lim || *i <= -lim) {
            snprintf(why, wlen, "the value does not fit %s (DECIMAL_OVERFLOW)", tg->type);
            return -EINVAL;
        }
        return 0;
    }
    case CB_DATE: {
        if (k == EX_STRING) {
            int64_t ts;
            int seen;
            if (ex_parse_date((const char *)s, sl, i)) {
            } else if (ex_parse_datetime((const char *)s, sl, 0, &ts, &seen)) {
                *i = ts >= 0 ? ts / 86400 : -((-ts + 86399) / 86400);
            } else {
                snprintf(why, wlen, "cannot parse '%.*s' as %s (CANNOT_PARSE_DATE)",
                         (int)(sl > 60 ? 60 : sl), (const char *)s, tg->type);
                return -EINVAL;
            }
        } else if (k == EX_DATETIME) {
            int64_t x = v->i[rr] / p10[v->t.scale];
            *i = x >= 0 ? x / 86400 : -((-x + 86399) / 86400);
        } else if (k == EX_FLOAT) {
            *i = (int64_t)v->d[rr];
        } else {
            *i = v->i[rr];
        }
        if (tg->date16 ? (*i < 0 || *i > 65535) : (*i < -25567 || *i > 120529)) {
            snprintf(why, wlen, "the date is outside the range of %s", tg->type);
            return -EINVAL;
        }
        return 0;
    }
    case CB_TIMESTAMP: {
        int sc = ts_scale(t);
        if (k == EX_STRING) {
            int seen;
            int64_t days;
            if (ex_parse_datetime((const char *)s, sl, sc, i, &seen)) {
            } else if (ex_parse_date((const char *)s, sl, &days)) {
                *i = days * 86400 * p10[sc];
            } else {
                bool neg;
                if (!ex_parse_int(s, sl, i, &neg)) {
                    snprintf(why, wlen, "cannot parse '%.*s' as %s (CANNOT_PARSE_DATETIME)",
                             (int)(sl > 60 ? 60 : sl), (const char *)s, tg->type);
                    return -EINVAL;
                }
                *i *= p10[sc];
            }
        } else if (k == EX_DATETIME) {
            int from = v->t.scale;
            *i = from <= sc ? v->i[rr] * p10[sc - from] : v->i[rr] / p10[from - sc];
        } else if (k == EX_DATE) {
            *i = v->i[rr] * 86400 * p10[sc];
        } else if (k == EX_FLOAT) {
            *i = (int64_t)(v->d[rr] * (double)p10[sc]);
        } else {
            *i = v->i[rr] * p10[sc];
        }
        return 0;
    }
    case CB_STRING:
    case CB_BINARY:
    default:
        if (k == EX_STRING) {
            *sp = s;
            *len = sl;
        } else {
            *len = ex_fmt_value(v, r, tmp, tcap, sp);
            if (!*sp)
                *sp = (const uint8_t *)tmp;
        }
        if (tg->fixed && *len > tg->fixed) {
            snprintf(why, wlen, "a string of %zu bytes is too long for %s (TOO_LARGE_STRING_SIZE)",
                     *len, tg->type);
            return -EINVAL;
        }
        return 0;
    }
}

/* The first NULL of a column: a null byte per row before it (not null). */
static int nulls_before(colbuf *c, uint32_t n0, uint32_t n)
{
    if (c->nulls)
        return 0;
    if (grow((void **)&c->nulls, &c->ncap, (size_t)n0 + n, 1) < 0)
        return -ENOMEM;
    memset(c->nulls, 0, (size_t)n0 + n);
    return 0;
}

/* Appends n rows of v (or defaults when v is NULL) to column c of the block. */
static int append(psink *s, uint32_t ci, const ex_vec *v, uint32_t n, uint64_t row0)
{
    const tp_column_def *def = &s->o.schema->cols[ci];
    colbuf *c = &s->cb[ci];
    cv_target tg = {&def->info,
                    def->nullable,
                    s->o.fixed ? s->o.fixed[ci] : 0,
                    s->o.date16 ? s->o.date16[ci] : false,
                    def->name,
                    s->o.types ? s->o.types[ci] : cb_type_name(def->info.type),
                    &s->arr};
    size_t w = cb_type_width(&def->info);
    bool str = w == 0;
    uint32_t n0 = c->n;
    size_t before = c->dlen;
    if (str) {
        if (grow((void **)&c->off, &c->ocap, (size_t)n0 + n + 1, sizeof(uint32_t)) < 0)
            return -ENOMEM;
        if (n0 == 0)
            c->off[0] = 0;
    } else if (grow((void **)&c->vals, &c->vcap, ((size_t)n0 + n) * w, 1) < 0) {
        return -ENOMEM;
    }
    char tmp[128], why[300];
    for (uint32_t r = 0; r < n; r++) {
        int64_t iv = 0;
        double dv = 0;
        const uint8_t *sp = NULL;
        size_t len = 0;
        int cr =
            v ? conv_value(&tg, v, r, &iv, &dv, &sp, &len, tmp, sizeof(tmp), why, sizeof(why)) : 1;
        if (cr < 0) {
            set_fail(s, -EINVAL,
                     "cannot insert row %llu into column %s (%s): %s; nothing of this INSERT "
                     "was committed",
                     (unsigned long long)(row0 + r + 1), def->name, tg.type, why);
            return -EINVAL;
        }
        bool isnull = cr == 1 && def->nullable;
        if (isnull && !c->nulls && nulls_before(c, n0, n) < 0)
            return -ENOMEM;
        if (c->nulls) {
            if (grow((void **)&c->nulls, &c->ncap, (size_t)n0 + n, 1) < 0)
                return -ENOMEM;
            c->nulls[n0 + r] = isnull;
        }
        if (cr == 1) {
            static const uint8_t empty_array[4]; /* a count of 0 */
            iv = 0;
            dv = 0;
            sp = def->info.type == CB_LIST ? empty_array : NULL;
            len = def->info.type == CB_LIST ? sizeof(empty_array) : 0;
        }
        if (str) {
            size_t L = tg.fixed ? tg.fixed : len;
            if (isnull)
                L = 0;
            if (c->dlen + L > UINT32_MAX) {
                set_fail(s, -E2BIG,
                         "column %s: an insert block holds more than 4 GiB of "
                         "strings: lower min_insert_block_size_bytes",
                         def->name);
                return -E2BIG;
            }
            if (grow((void **)&c->data, &c->dcap, c->dlen + L + 1, 1) < 0)
                return -ENOMEM;
            if (len && !isnull)
                memcpy(c->data + c->dlen, sp, len);
            if (L > len)
                memset(c->data + c->dlen + len, 0, L - len);
            c->dlen += L;
            c->off[n0 + r + 1] = (uint32_t)c->dlen;
        } else {
            uint8_t *p = c->vals + (size_t)(n0 + r) * w;
            switch (def->info.type) {
            case CB_BOOL:
            case CB_INT8:
            case CB_UINT8: *p = (uint8_t)iv; break;
            case CB_INT16:
            case CB_UINT16: {
                uint16_t x = (uint16_t)iv;
                memcpy(p, &x, 2);
                break;
            }
            case CB_INT32:
            case CB_UINT32:
            case CB_DATE: {
                uint32_t x = (uint32_t)iv;
                memcpy(p, &x, 4);
                break;
            }
            case CB_FLOAT: {
                float x = (float)dv;
                memcpy(p, &x, 4);
                break;
            }
            case CB_DOUBLE: memcpy(p, &dv, 8); break;
            default: memcpy(p, &iv, 8); break;
            }
        }
    }
    c->n = n0 + n;
    int64_t add = str ? (int64_t)(c->dlen - before) + 4ll * n : (int64_t)w * n;
    if (c->nulls)
        add += n;
    s->bytes += (uint64_t)add;
    if (!charge(s, add))
        return -ENOMEM;
    s->charged += add;
    return 0;
}

/* ---- sorting and writing a block ------------------------------------------------------ */

typedef struct sort_ctx {
    const cb_batch *b;
    const uint32_t *keys;
    uint32_t n_key;
} sort_ctx;

static int cmp_value(const cb_column *c, uint32_t a, uint32_t b)
{
    switch (c->info.type) {
#define CMPT(T)                                                                                    \
    {                                                                                              \
        T x = ((const T *)c->values)[a], y = ((const T *)c->values)[b];                            \
        return x < y ? -1 : x > y;                                                                 \
    }
    case CB_BOOL:
    case CB_UINT8: CMPT(uint8_t)
    case CB_INT8: CMPT(int8_t)
    case CB_INT16: CMPT(int16_t)
    case CB_UINT16: CMPT(uint16_t)
    case CB_INT32:
    case CB_DATE: CMPT(int32_t)
    case CB_UINT32: CMPT(uint32_t)
    case CB_UINT64: CMPT(uint64_t)
    case CB_FLOAT: CMPT(float)
    case CB_DOUBLE: CMPT(double)
    case CB_STRING:
    case CB_BINARY: {
        size_t la, lb;
        const uint8_t *x = cb_column_bytes(c, a, &la), *y = cb_column_bytes(c, b, &lb);
        int r = memcmp(x ? x : (const uint8_t *)"", y ? y : (const uint8_t *)"", la < lb ? la : lb);
        return r ? (r < 0 ? -1 : 1) : la < lb ? -1 : la > lb;
    }
    default: CMPT(int64_t)
#undef CMPT
    }
}

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
    const sort_ctx *sc = arg;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    for (uint32_t k = 0; k < sc->n_key; k++) {
        int r = cmp_value(sc->b->cols[sc->keys[k]], a, b);
        if (r)
            return r;
    }
    return a < b ? -1 : a > b; /* stable: insert order */
}

static bool same_key(const sort_ctx *sc, uint32_t a, uint32_t b)
{
    for (uint32_t k = 0; k < sc->n_key; k++)
        if (cmp_value(sc->b->cols[sc->keys[k]], a, b))
            return false;
    return true;
}

/* A column of rows idx[0..m) of c. */
static int gather(const cb_column *c, const uint32_t *idx, uint32_t m, cb_column **out)
{
    int rc = cb_column_create(out, &c->info, c->name, m);
    if (rc < 0)
        return rc;
    cb_column *o = *out;
    size_t w = cb_type_width(&c->info);
    if (w) {
        for (uint32_t i = 0; i < m; i++)
            memcpy((uint8_t *)o->values + (size_t)i * w,
                   (const uint8_t *)c->values + (size_t)idx[i] * w, w);
    } else {
        size_t total = 0;
        for (uint32_t i = 0; i < m; i++) {
            size_t l;
            cb_column_bytes(c, idx[i], &l);
            total += l;
        }
        if ((rc = cb_column_reserve_data(o, total ? total : 1)) < 0)
            return rc;
        size_t at = 0;
        for (uint32_t i = 0; i < m; i++) {
            size_t l;
            const uint8_t *p = cb_column_bytes(c, idx[i], &l);
            if (l)
                memcpy(o->data + at, p, l);
            at += l;
            o->offsets[i + 1] = (uint32_t)at;
        }
    }
    if (c->validity) {
        if ((rc = cb_column_alloc_validity(o)) < 0)
            return rc;
        for (uint32_t i = 0; i < m; i++)
            if (cb_column_is_null(c, idx[i])) {
                o->validity[i >> 3] &= (uint8_t) ~(1u << (i & 7));
                o->null_count++;
            }
    }
    return 0;
}

static int64_t batch_bytes(const cb_batch *b)
{
    int64_t n = 0;
    for (uint32_t k = 0; k < b->n_cols; k++) {
        const cb_column *c = b->cols[k];
        size_t w = cb_type_width(&c->info);
        n += w ? (int64_t)w * c->n : (int64_t)c->offsets[c->n] + 4ll * c->n;
        if (c->validity)
            n += c->n / 8 + 1;
    }
    return n;
}

/* Sorted rows are copied to the part's writer in runs of about this many
 * bytes, so that a block is held once (not beside a sorted copy of itself)
 * while its part is encoded. */
#define SORTED_RUN_BYTES (1u << 20)

/* Writes the rows idx[0..m) of b (one partition) as one part. When the
 * block's job is given (its last piece), the block is freed, and its charge
 * dropped, once the part is encoded: only the encoded part waits for its
 * upload. */
static int write_piece(psink *s, cb_batch *b, job *own, uint32_t *idx, uint32_t m,
                       const char *partition, uint64_t seq)
{
    const tb_schema *sc = s->o.schema;
    sort_ctx sx = {b, sc->key_cols, sc->n_key};
    if (sc->n_key)
        qsort_r(idx, m, sizeof(uint32_t), cmp_rows, &sx);
    if (s->o.replacing && sc->n_key) {
        /* of each run of equal keys keep one row: the greatest version, the
         * last inserted among equals */
        uint32_t o = 0;
        const cb_column *ver = sc->version_col >= 0 ? b->cols[sc->version_col] : NULL;
        for (uint32_t i = 0; i < m;) {
            uint32_t j = i + 1, best = i;
            while (j < m && same_key(&sx, idx[i], idx[j])) {
                if (!ver || cmp_value(ver, idx[j], idx[best]) >= 0)
                    best = j;
                j++;
            }
            idx[o++] = idx[best];
            i = j;
        }
        m = o;
    }
    int64_t bb = batch_bytes(b);
    uint64_t step = bb > (int64_t)SORTED_RUN_BYTES
                        ? (uint64_t)b->n_rows * SORTED_RUN_BYTES / (uint64_t)bb
                        : (uint64_t)m;
    if (step < 1024)
        step = 1024;
    int rc = 0;
    tb_upload *u = NULL;
    tp_writer *w = NULL;
    char err[ENG_MSG_MAX];
    err[0] = 0;
    if (rc == 0)
        rc = tb_upload_create(&u, s->o.table, partition, 0, err, sizeof(err));
    if (rc == 0) {
        tp_writer_opts wo = {.part_name = tb_upload_name(u),
                             .cols = sc->cols,
                             .n_cols = sc->n_cols,
                             .key_cols = sc->key_cols,
                             .n_key = sc->n_key,
                             .minmax_cols = s->o.minmax_cols,
                             .n_minmax = s->o.n_minmax,
                             .index_granularity = sc->index_granularity,
                             .input_sorted = true,
                             .write = tb_upload_write,
                             .write_arg = u};
        rc = tp_writer_create(&w, &wo, err, sizeof(err));
    }
    int64_t wm = 0; /* the writer's memory, charged */
    for (uint32_t r = 0; rc == 0 && (r < m || r == 0); r += (uint32_t)step) {
        uint32_t c = (uint64_t)(m - r) < step ? m - r : (uint32_t)step;
        cb_batch *out = NULL;
        rc = cb_batch_create(&out, c, b->n_cols);
        for (uint32_t k = 0; rc == 0 && k < b->n_cols; k++)
            rc = gather(b->cols[k], idx + r, c, &out->cols[k]);
        int64_t gb = rc == 0 ? batch_bytes(out) : 0;
        if (rc == 0 && !charge(s, gb))
            rc = -ENOMEM, gb = 0;
        if (rc == 0)
            rc = tp_writer_add(w, out, err, sizeof(err));
        cb_batch_destroy(&out);
        em_account(s->o.mem, -gb);
        int64_t now = rc == 0 ? (int64_t)tp_writer_memory(w) : wm;
        if (now != wm && !charge(s, now - wm))
            rc = -ENOMEM;
        else
            wm = now;
        if (m == 0)
            break;
    }
    if (own) {
        for (uint32_t k = 0; k < b->n_cols; k++)
            cb_column_destroy(&b->cols[k]);
        em_account(s->o.mem, -own->charged);
        own->charged = 0;
    }
    tp_part_info info;
    /* parts uploading at once */
    pthread_mutex_lock(&s->mu);
    uint64_t maxu = s->o.max_uploads ? s->o.max_uploads : (uint64_t)s->o.threads;
    while (rc == 0 && (uint64_t)s->uploading >= maxu && !s->rc)
        pthread_cond_wait(&s->cv, &s->mu);
    s->uploading++;
    pthread_mutex_unlock(&s->mu);
    if (rc == 0 && (rc = tp_writer_finish(w, &info, NULL, NULL, err, sizeof(err))) < 0 &&
        tb_upload_error(u)[0])
        snprintf(err, sizeof(err), "%s", tb_upload_error(u));
    tp_writer_destroy(&w);
    em_account(s->o.mem, -wm);
    uint64_t size = 0;
    if (rc == 0)
        rc = tb_upload_finish(u, &size, err, sizeof(err));
    pthread_mutex_lock(&s->mu);
    s->uploading--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0) {
        tb_upload_destroy(&u);
        if (rc == -ENOMEM && !err[0])
            return rc; /* the tracker's sentence is set */
        set_fail(s, rc, "%s", err[0] ? err : strerror(-rc));
        return rc;
    }
    pthread_mutex_lock(&s->mu);
    if (s->n_parts == s->cap_parts) {
        size_t cap = s->cap_parts ? s->cap_parts * 2 : 16;
        written *p = realloc(s->parts, cap * sizeof(written));
        if (!p) {
            pthread_mutex_unlock(&s->mu);
            tb_upload_destroy(&u);
            set_fail(s, -ENOMEM, "out of memory");
            return -ENOMEM;
        }
        s->parts = p;
        s->cap_parts = cap;
    }
    written *wr = &s->parts[s->n_parts++];
    memset(wr, 0, sizeof(*wr));
    snprintf(wr->name, sizeof(wr->name), "%s", tb_upload_name(u));
    snprintf(wr->partition, sizeof(wr->partition), "%s", partition);
    snprintf(wr->etag, sizeof(wr->etag), "%s", tb_upload_etag(u));
    if (s->o.dedup)
        tb_block_id(partition, info.data_hash, s->o.token && s->o.token[0] ? s->o.token : NULL, seq,
                    wr->block_id);
    wr->add.rows = info.rows;
    wr->add.bytes = size;
    wr->add.granules = info.granules;
    wr->add.compressed_bytes = info.compressed_bytes;
    wr->add.uncompressed_bytes = info.uncompressed_bytes;
    wr->add.level = 0;
    /* for ordering by block: seq */
    wr->add.min_block = seq;
    pthread_mutex_unlock(&s->mu);
    tb_upload_destroy(&u);
    return 0;
}

static int write_block(psink *s, job *jb)
{
    cb_batch *b = jb->b;
    uint64_t seq = jb->seq;
    uint32_t n = b->n_rows;
    uint32_t *idx = malloc(((size_t)n + 1) * sizeof(uint32_t));
    if (!idx) {
        set_fail(s, -ENOMEM, "out of memory sorting an insert block");
        return -ENOMEM;
    }
    int rc = 0;
    if (!s->o.partition) {
        for (uint32_t i = 0; i < n; i++)
            idx[i] = i;
        rc = write_piece(s, b, jb, idx, n, "all", seq << 16);
        free(idx);
        return rc;
    }
    uint32_t *rp = malloc(((size_t)n + 1) * sizeof(uint32_t));
    char **ids = NULL;
    uint32_t n_ids = 0;
    char err[ENG_MSG_MAX];
    err[0] = 0;
    rc = rp ? s->o.partition(s->o.partition_arg, b, rp, &ids, &n_ids, err, sizeof(err)) : -ENOMEM;
    if (rc < 0) {
        set_fail(s, rc, "%s", err[0] ? err : "out of memory computing the partitions");
    } else if (n_ids > 65536) {
        set_fail(s, -EINVAL,
                 "an insert block spans %u partitions, more than the 65536 allowed "
                 "(max_partitions_per_insert_block): choose a coarser PARTITION BY",
                 n_ids);
        rc = -EINVAL;
    }
    /* pieces in the order of their ids, for a deterministic sequence */
    uint32_t *order = rc == 0 ? malloc(((size_t)n_ids + 1) * sizeof(uint32_t)) : NULL;
    if (rc == 0 && !order)
        rc = -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < n_ids; i++)
        order[i] = i;
    for (uint32_t i = 1; rc == 0 && i < n_ids; i++)
        for (uint32_t j = i; j > 0 && strcmp(ids[order[j - 1]], ids[order[j]]) > 0; j--) {
            uint32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (uint32_t q = 0; rc == 0 && q < n_ids; q++) {
        uint32_t p = order[q], m = 0;
        for (uint32_t i = 0; i < n; i++)
            if (rp[i] == p)
                idx[m++] = i;
        if (m)
            rc = write_piece(s, b, q + 1 == n_ids ? jb : NULL, idx, m, ids[p], (seq << 16) | q);
    }
    for (uint32_t i = 0; i < n_ids; i++)
        free(ids[i]);
    free(ids);
    free(order);
    free(rp);
    free(idx);
    return rc;
}

static void *job_main(void *arg)
{
    job *j = arg;
    psink *s = j->s;
    write_block(s, j);
    cb_batch_destroy(&j->b);
    em_account(s->o.mem, -j->charged);
    pthread_mutex_lock(&s->mu);
    s->running--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The squashed rows as a batch (the buffers move into it). */
static int take_block(psink *s, cb_batch **out)
{
    uint32_t n = (uint32_t)s->rows;
    int rc = cb_batch_create(out, n, s->n_cols);
    for (uint32_t k = 0; rc == 0 && k < s->n_cols; k++) {
        const tp_column_def *d = &s->o.schema->cols[k];
        colbuf *c = &s->cb[k];
        cb_column *col;
        if ((rc = cb_column_create(&col, &d->info, d->name, 0)) < 0)
            break;
        col->n = n;
        if (cb_type_width(&d->info)) {
            free(col->values);
            col->values = c->vals;
            c->vals = NULL;
            c->vcap = 0;
            if (!col->values && !(col->values = calloc(1, 8)))
                rc = -ENOMEM;
        } else {
            free(col->offsets);
            col->offsets = c->off;
            col->data = c->data;
            col->data_cap = c->dcap;
            c->off = NULL;
            c->data = NULL;
            c->ocap = c->dcap = c->dlen = 0;
            if (!col->offsets && !(col->offsets = calloc(1, sizeof(uint32_t))))
                rc = -ENOMEM;
        }
        if (rc == 0 && c->nulls) {
            bool any = false;
            for (uint32_t r = 0; r < n && !any; r++)
                any = c->nulls[r];
            if (any && (rc = cb_column_alloc_validity(col)) == 0)
                for (uint32_t r = 0; r < n; r++)
                    if (c->nulls[r]) {
                        col->validity[r >> 3] &= (uint8_t) ~(1u << (r & 7));
                        col->null_count++;
                    }
        }
        free(c->nulls);
        c->nulls = NULL;
        c->ncap = 0;
        c->n = 0;
        (*out)->cols[k] = col;
    }
    if (rc < 0)
        cb_batch_destroy(out);
    return rc;
}

/* Hands the squashed block to a writer thread (waiting for a free one). */
static int flush_block(psink *s)
{
    if (s->rows == 0)
        return 0;
    pthread_mutex_lock(&s->mu);
    while (s->running >= s->o.threads && !s->rc)
        pthread_cond_wait(&s->cv, &s->mu);
    int frc = s->rc;
    pthread_mutex_unlock(&s->mu);
    if (frc)
        return frc;
    job *j = calloc(1, sizeof(*j));
    if (!j || take_block(s, &j->b) < 0) {
        free(j);
        set_fail(s, -ENOMEM, "out of memory handing over an insert block");
        return -ENOMEM;
    }
    j->s = s;
    j->charged = s->charged;
    j->seq = s->blocks++;
    s->charged = 0;
    s->rows = s->bytes = 0;
    pthread_mutex_lock(&s->mu);
    s->running++;
    j->next = s->jobs;
    s->jobs = j;
    if (pthread_create(&j->th, NULL, job_main, j) == 0) {
        j->started = true;
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    pthread_mutex_unlock(&s->mu);
    job_main(j); /* no thread: write it here */
    return s->rc;
}

static void join_all(psink *s)
{
    for (job *j = s->jobs; j; j = j->next)
        if (j->started) {
            pthread_join(j->th, NULL);
            j->started = false;
        }
}

/* ---- the sink's ops ------------------------------------------------------------------------ */

static int ps_begin(eng_sink *b, const char *const *names, const ex_type *types, int n_cols,
                    char *err, size_t errlen)
{
    (void)names;
    psink *s = (psink *)b;
    s->n_in = n_cols;
    s->in_types = calloc((size_t)n_cols + 1, sizeof(ex_type));
    if (!s->in_types) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    memcpy(s->in_types, types, sizeof(ex_type) * (size_t)n_cols);
    if (s->o.n_in && n_cols != s->o.n_in) {
        snprintf(err, errlen,
                 "INSERT INTO %s%s%s takes %d columns but its data has %d "
                 "(NUMBER_OF_COLUMNS_DOESNT_MATCH): list the columns, as in INSERT "
                 "INTO %s (a, b) SELECT ...",
                 s->o.db_name ? s->o.db_name : "", s->o.db_name ? "." : "",
                 s->o.table_name ? s->o.table_name : "the table", s->o.n_in, n_cols,
                 s->o.table_name ? s->o.table_name : "t");
        return -EINVAL;
    }
    for (uint32_t k = 0; k < s->n_cols; k++)
        if (s->o.col_of[k] >= n_cols) {
            snprintf(err, errlen,
                     "the INSERT has %d columns of data but column %s takes the "
                     "%d-th",
                     n_cols, s->o.schema->cols[k].name, s->o.col_of[k] + 1);
            return -EINVAL;
        }
    return 0;
}

static int fail_out(psink *s, int rc, char *err, size_t errlen)
{
    pthread_mutex_lock(&s->mu);
    if (s->rc)
        rc = s->rc;
    snprintf(err, errlen, "%s", s->msg[0] ? s->msg : strerror(-rc));
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int ps_write(eng_sink *b, const eng_block *blk, char *err, size_t errlen)
{
    psink *s = (psink *)b;
    if (s->rc)
        return fail_out(s, s->rc, err, errlen);
    uint32_t n = blk->n_rows;
    for (uint32_t off = 0; off < n;) {
        uint32_t m = n - off;
        if (s->o.min_rows && s->rows + m > s->o.min_rows)
            m = (uint32_t)(s->o.min_rows - s->rows);
        if (m > (1u << 24))
            m = 1u << 24;
        for (uint32_t k = 0; k < s->n_cols; k++) {
            int ci = s->o.col_of[k];
            ex_vec view, *v = NULL;
            if (ci >= 0) {
                ex_vec_view(&blk->cols[ci], off, m, &view);
                v = &view;
                if (s->o.schema->cols[k].nullable && !s->cb[k].nulls) {
                    bool any = false;
                    for (uint32_t r = 0; r < m && !any; r++)
                        any = ex_null(v, r);
                    if (any && nulls_before(&s->cb[k], s->cb[k].n, m) < 0)
                        return fail_out(s, -ENOMEM, err, errlen);
                }
            } else if (s->o.schema->cols[k].nullable &&
                       nulls_before(&s->cb[k], s->cb[k].n, m) < 0) {
                return fail_out(s, -ENOMEM, err, errlen);
            }
            int rc = append(s, k, v, m, s->rows_total);
            if (rc < 0) {
                if (rc == -ENOMEM && !s->rc)
                    set_fail(s, rc, "out of memory squashing an insert block");
                return fail_out(s, rc, err, errlen);
            }
        }
        s->rows += m;
        s->rows_total += m;
        off += m;
        bool full = (s->o.min_rows && s->rows >= s->o.min_rows) ||
                    (s->o.min_bytes && s->bytes >= s->o.min_bytes) ||
                    (!s->o.min_rows && !s->o.min_bytes) || s->rows >= (1u << 30);
        if (full && flush_block(s) < 0)
            return fail_out(s, s->rc ? s->rc : -EIO, err, errlen);
    }
    return 0;
}

static int ps_end(eng_sink *b, char *err, size_t errlen)
{
    psink *s = (psink *)b;
    int rc = s->rc ? s->rc : flush_block(s);
    join_all(s);
    if (rc < 0 || s->rc)
        return fail_out(s, rc ? rc : s->rc, err, errlen);
    /* block order: the writer threads finish in any order */
    for (size_t i = 1; i < s->n_parts; i++)
        for (size_t j = i; j > 0 && s->parts[j - 1].add.min_block > s->parts[j].add.min_block;
             j--) {
            written t = s->parts[j];
            s->parts[j] = s->parts[j - 1];
            s->parts[j - 1] = t;
        }
    s->adds = calloc(s->n_parts + 1, sizeof(tb_part_add));
    if (!s->adds) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < s->n_parts; i++) {
        written *w = &s->parts[i];
        s->adds[i] = w->add;
        s->adds[i].min_block = s->adds[i].max_block = 0;
        s->adds[i].name = w->name;
        s->adds[i].partition = w->partition;
        s->adds[i].block_id = w->block_id[0] ? w->block_id : NULL;
        s->adds[i].etag = w->etag[0] ? w->etag : NULL;
    }
    s->ended = true;
    return 0;
}

static void ps_destroy(eng_sink *b)
{
    psink *s = (psink *)b;
    join_all(s);
    ex_bytes_free(&s->arr);
    for (job *j = s->jobs; j;) {
        job *nx = j->next;
        cb_batch_destroy(&j->b);
        free(j);
        j = nx;
    }
    for (uint32_t k = 0; k < s->n_cols; k++)
        colbuf_free(&s->cb[k]);
    em_account(s->o.mem, -s->charged);
    free(s->cb);
    free(s->in_types);
    free(s->parts);
    free(s->adds);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

static const eng_sink_ops part_ops = {ps_begin, ps_write, ps_end, ps_destroy};

int eng_part_sink_create(eng_sink **out, const eng_part_sink_opts *o, char *err, size_t errlen)
{
    *out = NULL;
    psink *s = calloc(1, sizeof(*s));
    if (!s || !(s->cb = calloc(o->schema->n_cols + 1, sizeof(colbuf)))) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->base.ops = &part_ops;
    s->o = *o;
    if (s->o.threads < 1)
        s->o.threads = 1;
    s->n_cols = o->schema->n_cols;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    *out = &s->base;
    return 0;
}

void eng_part_sink_parts(eng_sink *b, const tb_part_add **adds, size_t *n)
{
    psink *s = (psink *)b;
    *adds = s->ended ? s->adds : NULL;
    *n = s->ended ? s->n_parts : 0;
}

uint64_t eng_part_sink_rows(const eng_sink *b)
{
    return ((const psink *)b)->rows_total;
}

void eng_part_sink_discard(eng_sink *b, tb_table *t, const uint8_t *flags)
{
    psink *s = (psink *)b;
    join_all(s);
    for (size_t i = 0; i < s->n_parts; i++) {
        if (flags && !flags[i])
            continue;
        char e[256];
        tb_part_delete(t, s->parts[i].name, e, sizeof(e));
    }
}
