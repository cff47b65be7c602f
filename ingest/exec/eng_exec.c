/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_exec.c: runs a statement. Expands the FROM glob into files (local
 * folders walked, S3 listed through the context's callbacks), takes the schema
 * from the first file, binds the plan, then runs max_threads workers over
 * work units (one Parquet row group, or one text file) pulled from an atomic
 * counter. Each worker filters its blocks and either folds them into its own
 * aggregation table or appends projected rows to its own result table (cut to
 * the top N by a heap when ORDER BY has a LIMIT). At the end the tables are
 * merged, HAVING / ORDER BY / LIMIT applied, and the rows go to the sink (an
 * output format, eng_fmt.c).
 *
 * A file whose object is overwritten while the query reads it (-ESTALE from
 * the source) is re-planned once: opened again and read again whole, never
 * partly one version and partly the other: a text file by the worker that met
 * the change; a Parquet file by the worker that met it, when no rows of the
 * file had been used yet (else, and at a second change, the query fails with
 * an error naming the file).
 *
 * Downloads run ahead of the workers (eng_fetch.c): while a worker decodes
 * unit k, download threads (max_download_threads) fetch the byte ranges of
 * the next units in plan order (a Parquet file small enough is read whole in
 * one request; a text file whole), bounded by max_download_threads x
 * max_download_buffer_size bytes and as many units ahead as there are download
 * threads, charged to the query's memory. A worker uses those bytes when it
 * reaches the unit, or fetches the unit itself into its own buffer (charged
 * too) when no download has started it.
 */
#include "eng.h"
#include "eng_agg.h"
#include "eng_fetch.h"
#include "eng_plan.h"
#include "eng_text.h"
#include "eng_out.h"
#include "s3.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENG_BATCH_ROWS 65536
/* Rows of a decoded row group that go through the operators at a time: small
 * enough that every intermediate vector (predicate results, selection, group
 * ids) stays in the L2 cache between one operator and the next. */
#define ENG_SLICE_ROWS 16384

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- files ------------------------------------------------------------------ */

typedef struct efile {
    char *path;               /* local path or key */
    uint64_t size;
    pthread_mutex_t mu;
    rs_source *src;
    pq_file *pf;
    int gen;                  /* reopen count (0 or 1: a file is re-planned once) */
    bool consumed;            /* rows of it went into the workers' tables */
    rs_source *old_src[2];
    pq_file *old_pf[2];
    int *colmap;              /* scan slot -> file column */
    int rg_first;             /* Parquet: first unit of this file */
    int n_rg;                 /* Parquet: its units (row groups not pruned) */
} efile;

typedef struct equery {
    const eng_ctx *ctx;
    eng_mem mem;
    eng_settings set;
    int kind;                 /* 0 Parquet, TX_* */
    bool s3;
    char bucket[64];
    efile *files;
    int n_files;
    eng_schema schema;
    eng_plan plan;
    /* units */
    int n_units;
    int *unit_file;
    int *unit_rg;
    _Atomic int next_unit;
    _Atomic int units_done;
    _Atomic uint64_t rows_read, bytes_read, rgs_pruned, rgs_read;
    _Atomic int stop;
    _Atomic int64_t rows_emitted; /* LIMIT without ORDER BY: early stop */
    pthread_mutex_t err_mu;
    int rc;
    char err[ENG_MSG_MAX];
    double t0;
    ef *pf;                   /* downloads ahead of the workers (NULL: none) */
} equery;

static void q_fail(equery *q, int rc, const char *msg)
{
    pthread_mutex_lock(&q->err_mu);
    if (!q->rc) {
        q->rc = rc;
        snprintf(q->err, sizeof(q->err), "%s", msg);
    }
    pthread_mutex_unlock(&q->err_mu);
    atomic_store(&q->stop, 1);
    ef_stop(q->pf);
}

typedef struct flist {
    efile *f;
    int n, cap;
} flist;

static int flist_add(flist *l, const char *path, uint64_t size)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        efile *nf = realloc(l->f, sizeof(efile) * (size_t)cap);
        if (!nf)
            return -ENOMEM;
        l->f = nf;
        l->cap = cap;
    }
    efile *f = &l->f[l->n];
    memset(f, 0, sizeof(*f));
    if (!(f->path = strdup(path)))
        return -ENOMEM;
    f->size = size;
    l->n++;
    return 0;
}

static int walk(const char *dir, const s3_glob *g, int depth, flist *l)
{
    if (depth > 32)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char p[4096];
        int k = strcmp(dir, ".") == 0 && !s3_glob_prefix(g)[0]
                    ? snprintf(p, sizeof(p), "%s", de->d_name)
                    : snprintf(p, sizeof(p), "%s%s%s", dir,
                               dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name);
        if (k < 0 || (size_t)k >= sizeof(p))
            continue;
        struct stat st;
        if (stat(p, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            rc = walk(p, g, depth + 1, l);
            if (rc == -EACCES)
                rc = 0;
        } else if (S_ISREG(st.st_mode) && s3_glob_match(g, p)) {
            rc = flist_add(l, p, (uint64_t)st.st_size);
        }
    }
    closedir(d);
    return rc;
}

static int fcmp(const void *a, const void *b)
{
    return strcmp(((const efile *)a)->path, ((const efile *)b)->path);
}

static int list_local(const char *pattern, flist *l, char *err, size_t errlen)
{
    s3_glob *g;
    if (s3_glob_create(&g, pattern) < 0) {
        snprintf(err, errlen, "bad glob '%s' in file(): check braces and ranges ({a,b}, {1..9})",
                 pattern);
        return -EINVAL;
    }
    int rc = 0;
    if (!s3_glob_has_wildcards(g)) {
        struct stat st;
        if (stat(pattern, &st) < 0) {
            rc = -errno;
            snprintf(err, errlen, "cannot open %s: %s (check the path in file())", pattern,
                     strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = -EISDIR;
            snprintf(err, errlen, "%s is a folder: add a glob such as '%s/*.parquet'", pattern,
                     pattern);
        } else {
            rc = flist_add(l, pattern, (uint64_t)st.st_size);
        }
        s3_glob_destroy(&g);
        return rc;
    }
    /* walk from the folder of the literal prefix */
    const char *pre = s3_glob_prefix(g);
    char dir[4096];
    const char *slash = strrchr(pre, '/');
    if (slash)
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - pre == 0 ? 1 : slash - pre), pre);
    else
        snprintf(dir, sizeof(dir), ".");
    rc = walk(dir, g, 0, l);
    s3_glob_destroy(&g);
    if (rc < 0 && rc != -ENOENT) {
        snprintf(err, errlen, "cannot list %s for file('%s'): %s", dir, pattern, strerror(-rc));
        return rc;
    }
    if (l->n == 0) {
        snprintf(err, errlen, "no files match '%s' (check the path and the glob)", pattern);
        return -ENOENT;
    }
    return 0;
}

static int s3_key_cb(const char *key, uint64_t size, void *arg)
{
    return flist_add(arg, key, size);
}

/* ---- schema ------------------------------------------------------------------ */

static int open_source(equery *q, efile *f, rs_source **out, char *err, size_t errlen)
{
    if (q->s3)
        return q->ctx->open_s3(q->ctx->s3_impl, q->bucket, f->path, out, err, errlen);
    return rs_file_open(out, f->path, err, errlen);
}

static const char *fname(const equery *q, const efile *f, char *buf, size_t cap)
{
    if (q->s3)
        snprintf(buf, cap, "s3://%s/%s", q->bucket, f->path);
    else
        snprintf(buf, cap, "%s", f->path);
    return buf;
}

static int schema_from_parquet(const pq_file *pf, eng_schema *s)
{
    int n = pq_file_num_columns(pf);
    s->cols = calloc((size_t)n + 1, sizeof(eng_col));
    if (!s->cols)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        const pq_column_info *ci = pq_file_column(pf, i);
        s->cols[i].name = strdup(ci->name);
        if (!s->cols[i].name)
            return -ENOMEM;
        s->cols[i].cb = ci->type;
        s->cols[i].t = ex_type_of_column(&ci->type, ci->nullable);
        s->n = i + 1;
    }
    return 0;
}

/* Reads a whole (text) object, in parallel ranges when it is large, into a
 * malloc'ed buffer, or one of the prefetcher's when pool is not NULL (*cap
 * its size). */
static int read_all(equery *q, rs_source *src, ef *pool, uint8_t **out, uint64_t *cap,
                    size_t *len, char *err, size_t errlen)
{
    uint64_t size = rs_size(src);
    uint64_t bcap = size;
    uint8_t *buf = pool ? ef_buf_get(pool, size, &bcap) : malloc(size ? size : 1);
    if (!buf) {
        snprintf(err, errlen, "out of memory reading %s (%llu bytes)", rs_name(src),
                 (unsigned long long)size);
        return -ENOMEM;
    }
    uint64_t part = q->set.max_download_buffer_size;
    int rc;
    if (size > 2 * part && part > 0) {
        size_t n = (size_t)((size + part - 1) / part);
        rs_range *r = calloc(n, sizeof(*r));
        if (!r) {
            if (pool)
                ef_buf_put(pool, buf, bcap);
            else
                free(buf);
            return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
            r[i].offset = i * part;
            r[i].length = i + 1 == n ? size - i * part : part;
            r[i].buf = buf + i * part;
        }
        rc = rs_read_ranges(src, r, n, err, errlen);
        free(r);
    } else {
        rc = size ? rs_read(src, 0, buf, size, err, errlen) : 0;
    }
    if (rc < 0) {
        if (pool)
            ef_buf_put(pool, buf, bcap);
        else
            free(buf);
        return rc;
    }
    *out = buf;
    if (cap)
        *cap = bcap;
    *len = size;
    return 0;
}

/* Opens the object and reads it whole (raw, still compressed): *raw malloc'ed. */
static int fetch_text_raw(equery *q, efile *f, ef *pool, uint8_t **raw, uint64_t *cap,
                          size_t *len, char *err, size_t errlen)
{
    rs_source *src;
    int rc = open_source(q, f, &src, err, errlen);
    if (rc < 0)
        return rc;
    rc = read_all(q, src, pool, raw, cap, len, err, errlen);
    rs_destroy(&src);
    return rc;
}

/* The raw bytes of a text file, re-planned once: a read that finds the object
 * changed since its open (-ESTALE) opens it again and reads it all again, so
 * the text is one version, whole; a second change is an error naming the
 * file. tries is 2, or 1 when a read ahead already met a change. The raw
 * bytes are charged to the query while held (*charged). */
static int fetch_text_replan(equery *q, efile *f, int tries, uint8_t **raw, size_t *len,
                             int64_t *charged, char *err, size_t errlen)
{
    *charged = 0;
    int64_t want = (int64_t)f->size;
    if (!em_account(&q->mem, want)) {
        em_error(&q->mem, err, errlen);
        return -ENOMEM;
    }
    int rc = -ESTALE;
    for (int attempt = 0; attempt < tries && rc == -ESTALE; attempt++)
        rc = fetch_text_raw(q, f, NULL, raw, NULL, len, err, errlen);
    em_account(&q->mem, -want);
    if (rc == -ESTALE) {
        char nb[1200];
        snprintf(err, errlen,
                 "%.700s changed again while the query read it (it is being overwritten): rerun "
                 "the query when the writer is done",
                 fname(q, f, nb, sizeof(nb)));
        return rc;
    }
    if (rc < 0)
        return rc;
    if (!em_account(&q->mem, (int64_t)*len)) {
        free(*raw);
        *raw = NULL;
        em_error(&q->mem, err, errlen);
        return -ENOMEM;
    }
    *charged = (int64_t)*len;
    return 0;
}

static int load_text(equery *q, efile *f, uint8_t **text, size_t *len, char *err, size_t errlen)
{
    uint8_t *raw;
    size_t rawlen;
    int64_t charged;
    int rc = fetch_text_replan(q, f, 2, &raw, &rawlen, &charged, err, errlen);
    if (rc < 0)
        return rc;
    char nb[1200];
    rc = tx_decompress(fname(q, f, nb, sizeof(nb)), raw, rawlen, text, len, err, errlen);
    free(raw);
    em_account(&q->mem, -charged);
    return rc;
}

static int open_parquet(equery *q, efile *f, char *err, size_t errlen)
{
    int rc = open_source(q, f, &f->src, err, errlen);
    if (rc < 0)
        return rc;
    rc = pq_file_open(&f->pf, f->src, NULL, err, errlen);
    if (rc < 0)
        rs_destroy(&f->src);
    return rc;
}

/* Maps the plan's scan slots to this file's columns (by name). */
static int map_columns(equery *q, efile *f, char *err, size_t errlen)
{
    free(f->colmap);
    f->colmap = calloc((size_t)q->plan.n_need + 1, sizeof(int));
    if (!f->colmap)
        return -ENOMEM;
    for (int k = 0; k < q->plan.n_need; k++) {
        const eng_col *c = &q->schema.cols[q->plan.need[k]];
        int i = pq_file_find_column(f->pf, c->name);
        char nb[1200];
        if (i < 0) {
            snprintf(err, errlen,
                     "column '%s' is missing from %.600s (it is in the first file of the glob; every "
                     "file must have the columns the query reads)",
                     c->name, fname(q, f, nb, sizeof(nb)));
            return -EBADMSG;
        }
        const pq_column_info *ci = pq_file_column(f->pf, i);
        ex_type t = ex_type_of_column(&ci->type, ci->nullable);
        if (t.kind != c->t.kind || t.scale != c->t.scale) {
            char a[64], b[64];
            ex_type_name(&c->t, a, sizeof(a));
            ex_type_name(&t, b, sizeof(b));
            snprintf(err, errlen,
                     "column '%.100s' is %s in %.600s but %s in the first file of the glob: every file "
                     "must use one type per column",
                     c->name, b, fname(q, f, nb, sizeof(nb)), a);
            return -EBADMSG;
        }
        f->colmap[k] = i;
    }
    return 0;
}

/* ---- result tables ------------------------------------------------------------- */

typedef struct rtab {
    int nc;
    ex_vec *c;
    uint32_t n, cap;
} rtab;

static int rtab_init(eng_mem *m, rtab *t, const ex_type *types, int nc)
{
    memset(t, 0, sizeof(*t));
    t->c = calloc((size_t)nc + 1, sizeof(ex_vec));
    if (!t->c)
        return -ENOMEM;
    t->nc = nc;
    for (int k = 0; k < nc; k++) {
        ex_type ty = types[k];
        ty.nullable = true; /* always keep a null map; cheap and simple */
        if (ex_vec_alloc(m, &t->c[k], ty, 0) < 0)
            return -ENOMEM;
        t->c[k].t = types[k];
        if (t->c[k].t.kind == EX_NOTHING)
            t->c[k].t.nullable = true;
    }
    t->cap = 1;
    return 0;
}

static void rtab_free(eng_mem *m, rtab *t)
{
    for (int k = 0; k < t->nc; k++)
        ex_vec_clear(m, &t->c[k]);
    free(t->c);
    memset(t, 0, sizeof(*t));
}

static int rtab_reserve(eng_mem *m, rtab *t, uint32_t need)
{
    if (need <= t->cap)
        return 0;
    uint32_t cap = t->cap * 2;
    while (cap < need)
        cap *= 2;
    for (int k = 0; k < t->nc; k++) {
        ex_vec *v = &t->c[k];
        void *p;
        if (v->t.kind == EX_FLOAT) {
            if (!(p = em_realloc(m, v->d, (size_t)cap * 8)))
                return -ENOMEM;
            v->d = p;
        } else if (v->t.kind == EX_STRING) {
            if (!(p = em_realloc(m, v->off, ((size_t)cap + 1) * 4)))
                return -ENOMEM;
            v->off = p;
        } else if (v->t.kind != EX_NOTHING) {
            if (!(p = em_realloc(m, v->i, (size_t)cap * 8)))
                return -ENOMEM;
            v->i = p;
        }
        if (!(p = em_realloc(m, v->nulls, cap)))
            return -ENOMEM;
        v->nulls = p;
    }
    t->cap = cap;
    return 0;
}

/* Appends row r of v to column k (row t->n). */
static int rtab_put(eng_mem *m, rtab *t, int k, const ex_vec *v, uint32_t r)
{
    ex_vec *c = &t->c[k];
    uint32_t at = t->n;
    bool nul = ex_null(v, r);
    c->nulls[at] = nul;
    if (c->t.kind == EX_STRING) {
        uint32_t l = 0;
        const uint8_t *s = nul ? (const uint8_t *)"" : ex_str(v, r, &l);
        return ex_vec_str_put(m, c, at, s, l);
    }
    if (c->t.kind == EX_FLOAT)
        c->d[at] = nul ? 0 : ex_f(v, r);
    else if (c->t.kind != EX_NOTHING)
        c->i[at] = nul || v->t.kind == EX_NOTHING ? 0 : v->i[ex_row(v, r)];
    return 0;
}

static int rtab_append(eng_mem *m, rtab *t, const ex_vec *vals, uint32_t n)
{
    if (rtab_reserve(m, t, t->n + n) < 0)
        return -ENOMEM;
    for (uint32_t r = 0; r < n; r++) {
        for (int k = 0; k < t->nc; k++)
            if (rtab_put(m, t, k, &vals[k], r) < 0)
                return -ENOMEM;
        t->n++;
    }
    return 0;
}

/* Keeps only rows idx[0..n) in that order. */
static int rtab_take(eng_mem *m, rtab *t, const uint32_t *idx, uint32_t n)
{
    rtab nt;
    ex_type *ty = calloc((size_t)t->nc + 1, sizeof(ex_type));
    if (!ty)
        return -ENOMEM;
    for (int k = 0; k < t->nc; k++)
        ty[k] = t->c[k].t;
    int rc = rtab_init(m, &nt, ty, t->nc);
    free(ty);
    if (rc < 0 || rtab_reserve(m, &nt, n) < 0) {
        rtab_free(m, &nt);
        return -ENOMEM;
    }
    for (uint32_t r = 0; r < n; r++) {
        for (int k = 0; k < t->nc; k++)
            if (rtab_put(m, &nt, k, &t->c[k], idx[r]) < 0) {
                rtab_free(m, &nt);
                return -ENOMEM;
            }
        nt.n++;
    }
    rtab_free(m, t);
    *t = nt;
    return 0;
}

/* ---- ordering ------------------------------------------------------------------ */

typedef struct ord_ctx {
    const rtab *t;
    const eng_plan *p;
    int first_key;   /* column of the first order key in t */
} ord_ctx;

static int cmp_rows(const ord_ctx *o, uint32_t a, uint32_t b)
{
    for (int k = 0; k < o->p->n_order; k++) {
        const eng_order *ord = &o->p->order[k];
        const ex_vec *v = &o->t->c[o->first_key + k];
        /* rank: 0 value, 1 NaN, 2 NULL (NULLS LAST); NULLS FIRST puts them first */
        int ra = ex_null(v, a) ? 2 : (v->t.kind == EX_FLOAT && isnan(v->d[a])) ? 1 : 0;
        int rb = ex_null(v, b) ? 2 : (v->t.kind == EX_FLOAT && isnan(v->d[b])) ? 1 : 0;
        if (ra != rb) {
            int c = ra < rb ? -1 : 1;
            return ord->nulls_first ? -c : c;
        }
        if (ra)
            continue;
        int c = 0;
        switch (v->t.kind) {
        case EX_STRING: {
            uint32_t la, lb;
            const uint8_t *x = ex_str(v, a, &la), *y = ex_str(v, b, &lb);
            uint32_t mn = la < lb ? la : lb;
            c = mn ? memcmp(x, y, mn) : 0;
            if (!c)
                c = la < lb ? -1 : la > lb;
            c = c < 0 ? -1 : c > 0;
            break;
        }
        case EX_FLOAT: c = v->d[a] < v->d[b] ? -1 : v->d[a] > v->d[b]; break;
        case EX_UINT: c = (uint64_t)v->i[a] < (uint64_t)v->i[b] ? -1 : (uint64_t)v->i[a] > (uint64_t)v->i[b]; break;
        case EX_NOTHING: c = 0; break;
        default: c = v->i[a] < v->i[b] ? -1 : v->i[a] > v->i[b]; break;
        }
        if (c)
            return ord->desc ? -c : c;
    }
    return a < b ? -1 : a > b; /* stable */
}

static int qcmp(const void *x, const void *y, void *arg)
{
    return cmp_rows(arg, *(const uint32_t *)x, *(const uint32_t *)y);
}

/* The first k rows in order, by a max-heap of size k (then sorted). *out is
 * malloc'ed; returns the count. */
static int64_t top_n(const ord_ctx *o, uint32_t n, uint64_t k, uint32_t **out)
{
    if (k > n)
        k = n;
    uint32_t *h = malloc(sizeof(uint32_t) * (k ? k : 1));
    if (!h)
        return -ENOMEM;
    if (k == n) {
        for (uint32_t r = 0; r < n; r++)
            h[r] = r;
    } else {
        uint32_t hn = 0;
        for (uint32_t r = 0; r < n; r++) {
            if (hn < k) {
                /* sift up */
                uint32_t i = hn++;
                h[i] = r;
                while (i > 0) {
                    uint32_t pa = (i - 1) / 2;
                    if (cmp_rows(o, h[pa], h[i]) >= 0)
                        break;
                    uint32_t s = h[pa];
                    h[pa] = h[i];
                    h[i] = s;
                    i = pa;
                }
            } else if (k > 0 && cmp_rows(o, r, h[0]) < 0) {
                h[0] = r;
                uint32_t i = 0;
                for (;;) {
                    uint32_t l = 2 * i + 1, rr = l + 1, mx = i;
                    if (l < hn && cmp_rows(o, h[l], h[mx]) > 0)
                        mx = l;
                    if (rr < hn && cmp_rows(o, h[rr], h[mx]) > 0)
                        mx = rr;
                    if (mx == i)
                        break;
                    uint32_t s = h[mx];
                    h[mx] = h[i];
                    h[i] = s;
                    i = mx;
                }
            }
        }
    }
    qsort_r(h, k, sizeof(uint32_t), qcmp, (void *)o);
    *out = h;
    return (int64_t)k;
}

/* Orders t by the plan (if it has ORDER BY) and cuts it to [offset, offset +
 * limit) when cut is set; with keep_only_top, cuts to the first offset+limit
 * rows (a worker's partial top-N). */
static int order_and_cut(eng_mem *m, rtab *t, const eng_plan *p, int first_key, bool final)
{
    uint64_t want = p->has_limit ? (uint64_t)p->offset + (uint64_t)p->limit : UINT64_MAX;
    if (p->has_limit && (uint64_t)p->limit > UINT64_MAX - (uint64_t)p->offset)
        want = UINT64_MAX;
    uint32_t *idx = NULL;
    int64_t n;
    if (p->n_order) {
        ord_ctx o = {t, p, first_key};
        n = top_n(&o, t->n, want, &idx);
        if (n < 0)
            return -ENOMEM;
    } else {
        n = (int64_t)(want < t->n ? want : t->n);
        idx = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
        if (!idx)
            return -ENOMEM;
        for (int64_t r = 0; r < n; r++)
            idx[r] = (uint32_t)r;
    }
    uint32_t from = 0;
    if (final && p->offset > 0)
        from = (uint64_t)p->offset >= (uint64_t)n ? (uint32_t)n : (uint32_t)p->offset;
    int rc = 0;
    if (!(from == 0 && n == t->n && !p->n_order))
        rc = rtab_take(m, t, idx + from, (uint32_t)(n - from));
    free(idx);
    return rc;
}

/* ---- workers -------------------------------------------------------------------- */

typedef struct worker {
    equery *q;
    agg_tab *agg;
    rtab res;
    uint32_t *sel;
    uint32_t sel_cap;
    /* Parquet: the unit's bytes fetched ahead (or NULL), and the worker's own
     * buffer for units that were not, charged to the query while it lives */
    ef_blob *blob;
    rs_source *src;           /* the source of the pq_file being read */
    uint8_t *fbuf;
    size_t fcap;
    char err[ENG_MSG_MAX];
} worker;

static int n_res_cols(const eng_plan *p)
{
    return p->n_outs + p->n_order;
}

/* Filter + aggregate or project one block of scan vectors. */
static int process(worker *w, ex_vec *in, uint32_t n)
{
    equery *q = w->q;
    const eng_plan *p = &q->plan;
    ex_ectx ec = {&q->mem, w->err, sizeof(w->err)};
    const uint32_t *sel = NULL;
    uint32_t m = n;
    int rc;
    if (p->where) {
        ex_vec b;
        if ((rc = bx_eval(&ec, p->where, in, NULL, n, &b)) < 0)
            return rc;
        if (n > w->sel_cap) {
            free(w->sel);
            w->sel_cap = n;
            if (!(w->sel = malloc(sizeof(uint32_t) * n))) {
                ex_vec_clear(&q->mem, &b);
                return -ENOMEM;
            }
        }
        m = bx_select(&b, NULL, n, w->sel);
        ex_vec_clear(&q->mem, &b);
        sel = w->sel;
        if (m == n)
            sel = NULL;
    }
    if (m == 0)
        return 0;
    if (p->aggregate)
        return agg_tab_update(w->agg, &ec, in, sel, m);
    if (p->has_limit && !p->n_order &&
        atomic_load(&q->rows_emitted) >= p->offset + p->limit)
        return 0;
    int nc = n_res_cols(p);
    ex_vec *vals = calloc((size_t)nc + 1, sizeof(ex_vec));
    if (!vals)
        return -ENOMEM;
    rc = 0;
    int done = 0;
    for (; done < nc && rc == 0; done++) {
        const bx *e = done < p->n_outs ? p->outs[done].e : p->order[done - p->n_outs].e;
        rc = bx_eval(&ec, e, in, sel, m, &vals[done]);
        if (rc < 0)
            break;
    }
    if (rc == 0)
        rc = rtab_append(&q->mem, &w->res, vals, m);
    for (int k = 0; k < done; k++)
        ex_vec_clear(&q->mem, &vals[k]);
    free(vals);
    if (rc < 0)
        return rc;
    atomic_fetch_add(&q->rows_emitted, m);
    /* partial top-N: keep the table small */
    if (p->has_limit && p->n_order) {
        uint64_t want = (uint64_t)p->offset + (uint64_t)p->limit;
        if (want < (1u << 20) && w->res.n > 2 * want + 65536)
            rc = order_and_cut(&q->mem, &w->res, p, p->n_outs, false);
    }
    return rc;
}

static uint64_t vec_bytes(const cb_column *c)
{
    uint64_t b = 0;
    size_t wdt = cb_type_width(&c->info);
    if (wdt)
        b = (uint64_t)wdt * c->n;
    else if (c->dict)
        b = (uint64_t)c->n * 4 + c->dict->offsets[c->dict->n];
    else
        b = c->offsets[c->n] + (uint64_t)c->n * 4;
    return b;
}

/* pq_fetcher hook: the row group's bytes from the read ahead when it planned
 * the same ranges on the same pq_file, else from the source into the worker's
 * buffer (charged to the query). */
static int unit_fetch(void *arg, const pq_file *pf, int rg, rs_range *r, size_t n, char *err,
                      size_t errlen)
{
    (void)rg;
    worker *w = arg;
    equery *q = w->q;
    ef_blob *b = w->blob;
    if (b && b->rc == 0 && b->tag == pf) {
        bool ok = true;
        if (b->whole) {
            for (size_t i = 0; i < n && ok; i++)
                ok = r[i].offset <= b->bytes && r[i].length <= b->bytes - r[i].offset;
            for (size_t i = 0; i < n && ok; i++)
                r[i].buf = b->buf + r[i].offset;
        } else {
            ok = b->n == n;
            for (size_t i = 0; i < n && ok; i++)
                ok = b->ranges[i].offset == r[i].offset && b->ranges[i].length == r[i].length;
            for (size_t i = 0; i < n && ok; i++)
                r[i].buf = b->ranges[i].buf;
        }
        if (ok)
            return 0;
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += r[i].length;
    if (total > w->fcap) {
        if (total > SIZE_MAX / 2 || !em_account(&q->mem, (int64_t)(total - w->fcap))) {
            em_error(&q->mem, err, errlen);
            return -ENOMEM;
        }
        free(w->fbuf);
        w->fbuf = malloc((size_t)total);
        if (!w->fbuf) {
            em_account(&q->mem, -(int64_t)total);
            w->fcap = 0;
            snprintf(err, errlen, "%s: out of memory for %llu bytes of row group %d",
                     pq_file_name(pf), (unsigned long long)total, rg);
            return -ENOMEM;
        }
        w->fcap = (size_t)total;
    }
    total = 0;
    for (size_t i = 0; i < n; i++) {
        r[i].buf = w->fbuf + total;
        total += r[i].length;
    }
    return rs_read_ranges(w->src, r, n, err, errlen);
}

/* Reads row groups [rg_begin, rg_end) (both 0: all) of pf, version gen of f,
 * and runs the operators on them. A batch is used only while f is still at
 * gen, and using it marks f consumed, both under f->mu: so a re-plan (which
 * needs f not consumed) and the rows of the old version never both happen.
 * A batch of an older gen is dropped (whoever re-planned reads the new version
 * whole). *got counts the row groups used. */
static int read_rgs(worker *w, efile *f, pq_file *pf, int gen, int *colmap, int rg_begin,
                    int rg_end, int *got)
{
    equery *q = w->q;
    pq_pred preds[64];
    size_t np = 0;
    for (int i = 0; i < q->plan.n_prune && np < 64; i++) {
        int fc = pq_file_find_column(pf, q->schema.cols[q->plan.prune[i].col].name);
        if (fc < 0)
            continue;
        preds[np++] = (pq_pred){.column = fc, .op = q->plan.prune[i].op,
                                .value = q->plan.prune[i].v};
    }
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.columns = colmap;
    o.n_columns = (size_t)q->plan.n_need;
    o.preds = preds;
    o.n_preds = np;
    o.rg_begin = rg_begin;
    o.rg_end = rg_end;
    pq_fetcher hook = {unit_fetch, w};
    o.fetcher = &hook;
    pq_reader *rd;
    int rc = pq_reader_create(&rd, pf, &o, w->err, sizeof(w->err));
    if (rc < 0)
        return rc;
    cb_batch *bt = NULL;
    while (rc >= 0 && !atomic_load(&q->stop) && (rc = pq_reader_next(rd, &bt)) == 1) {
        ef_release(q->pf, &w->blob); /* decoded: the compressed bytes are done with */
        pthread_mutex_lock(&f->mu);
        bool current = f->gen == gen;
        if (current)
            f->consumed = true;
        pthread_mutex_unlock(&f->mu);
        if (!current) {
            cb_batch_destroy(&bt);
            break; /* re-planned meanwhile: the new version is read whole elsewhere */
        }
        (*got)++;
        uint64_t bytes = 0;
        for (uint32_t k = 0; k < bt->n_cols; k++)
            bytes += vec_bytes(bt->cols[k]);
        if (!em_account(&q->mem, (int64_t)bytes)) {
            cb_batch_destroy(&bt);
            em_error(&q->mem, w->err, sizeof(w->err));
            rc = -ENOMEM;
            break;
        }
        atomic_fetch_add(&q->rows_read, bt->n_rows);
        atomic_fetch_add(&q->bytes_read, bytes);
        ex_vec *in = calloc((size_t)bt->n_cols + 1, sizeof(ex_vec));
        rc = in ? 0 : -ENOMEM;
        for (uint32_t k = 0; k < bt->n_cols && rc == 0; k++)
            rc = ex_vec_from_column(&q->mem, bt->cols[k], &in[k]);
        /* process in slices so selection vectors stay small */
        for (uint32_t off = 0; rc == 0 && off < bt->n_rows; off += ENG_SLICE_ROWS) {
            uint32_t cnt = bt->n_rows - off < ENG_SLICE_ROWS ? bt->n_rows - off
                                                             : ENG_SLICE_ROWS;
            if (off == 0 && cnt == bt->n_rows) {
                rc = process(w, in, cnt);
                break;
            }
            ex_vec *sl = calloc((size_t)bt->n_cols + 1, sizeof(ex_vec));
            if (!sl) {
                rc = -ENOMEM;
                break;
            }
            for (uint32_t k = 0; k < bt->n_cols; k++) {
                ex_vec *s = &sl[k], *x = &in[k];
                *s = *x;
                s->own = 0;
                s->n = cnt;
                if (x->i) s->i = x->i + off;
                if (x->d) s->d = x->d + off;
                if (x->off) s->off = x->off + off;
                if (x->idx) s->idx = x->idx + off;
                if (x->nulls) s->nulls = x->nulls + off;
            }
            rc = process(w, sl, cnt);
            free(sl);
        }
        if (in)
            for (uint32_t k = 0; k < bt->n_cols; k++)
                ex_vec_clear(&q->mem, &in[k]);
        free(in);
        cb_batch_destroy(&bt);
        em_account(&q->mem, -(int64_t)bytes);
    }
    if (rc < 0 && !w->err[0])
        snprintf(w->err, sizeof(w->err), "%s", pq_reader_error(rd));
    pq_reader_destroy(&rd);
    ef_release(q->pf, &w->blob);
    return rc < 0 ? rc : 0;
}

/* One row group of f. A read that finds the object changed (-ESTALE) re-plans
 * the file once: when no rows of it have been used yet, it is opened again
 * and this worker reads the new version whole (every other unit of the file
 * then has nothing to do); when some have, mixing versions is the only way
 * on, so the query fails naming the file, as it does when the new version
 * changes too. */
static int run_parquet_rg(worker *w, int u)
{
    equery *q = w->q;
    efile *f = &q->files[q->unit_file[u]];
    int rg = q->unit_rg[u];
    char nb[1200];
    pthread_mutex_lock(&f->mu);
    pq_file *pf = f->pf;
    int gen = f->gen;
    int *colmap = f->colmap;
    w->src = f->src;
    pthread_mutex_unlock(&f->mu);
    if (gen > 0)
        return 0; /* re-planned: the new version is read whole by whoever did it */
    int got = 0;
    int rc = read_rgs(w, f, pf, gen, colmap, rg, rg + 1, &got);
    if (rc != -ESTALE) {
        if (rc == 0)
            atomic_fetch_add(got ? &q->rgs_read : &q->rgs_pruned, 1);
        return rc;
    }
    ef_release(q->pf, &w->blob);
    pthread_mutex_lock(&f->mu);
    if (f->gen != gen) {
        pthread_mutex_unlock(&f->mu);
        w->err[0] = 0;
        return 0; /* someone else re-planned it */
    }
    if (f->consumed) {
        pthread_mutex_unlock(&f->mu);
        snprintf(w->err, sizeof(w->err),
                 "%.700s changed while the query read it (rows of the version it had begun with "
                 "are already counted): rerun the query when the writer is done",
                 fname(q, f, nb, sizeof(nb)));
        return -ESTALE;
    }
    f->old_src[0] = f->src;
    f->old_pf[0] = f->pf;
    f->src = NULL;
    f->pf = NULL;
    w->err[0] = 0;
    int orc = open_parquet(q, f, w->err, sizeof(w->err));
    if (orc == 0)
        orc = map_columns(q, f, w->err, sizeof(w->err));
    f->gen++;
    pf = f->pf;
    gen = f->gen;
    colmap = f->colmap;
    w->src = f->src;
    pthread_mutex_unlock(&f->mu);
    if (orc < 0) {
        if (orc == -ESTALE)
            goto again;
        return orc;
    }
    got = 0;
    rc = read_rgs(w, f, pf, gen, colmap, 0, 0, &got);
    if (rc == 0) {
        atomic_fetch_add(&q->rgs_read, (uint64_t)got);
        return 0;
    }
    if (rc != -ESTALE)
        return rc;
again:
    snprintf(w->err, sizeof(w->err),
             "%.700s changed again while the query read it (it is being overwritten): rerun "
             "the query when the writer is done",
             fname(q, f, nb, sizeof(nb)));
    return -ESTALE;
}

static int run_parquet_unit(worker *w, int u)
{
    ef_take(w->q->pf, u, &w->blob);
    int rc = run_parquet_rg(w, u);
    ef_release(w->q->pf, &w->blob);
    return rc;
}

static int text_batch(ex_vec *cols, int ncols, uint32_t nrows, void *arg)
{
    worker *w = arg;
    equery *q = w->q;
    uint64_t bytes = 0;
    for (int k = 0; k < ncols; k++)
        bytes += cols[k].t.kind == EX_STRING ? cols[k].off[nrows] + 4ull * nrows : 8ull * nrows;
    atomic_fetch_add(&q->rows_read, nrows);
    atomic_fetch_add(&q->bytes_read, bytes);
    int rc = process(w, cols, nrows);
    for (int k = 0; k < ncols; k++)
        ex_vec_clear(&q->mem, &cols[k]);
    if (atomic_load(&q->stop))
        return -ECANCELED;
    return rc;
}

static int run_text_unit(worker *w, int u)
{
    equery *q = w->q;
    efile *f = &q->files[q->unit_file[u]];
    ef_blob *b = NULL;
    uint8_t *raw = NULL;
    size_t rawlen = 0;
    int64_t charged = 0;
    int rc;
    char nb[1200];
    ef_take(q->pf, u, &b);
    if (b && b->rc == 0) {
        raw = b->buf; /* read ahead, whole; charged by the prefetcher */
        rawlen = (size_t)b->bytes;
    } else {
        /* not read ahead, or the read ahead failed: again here (once more
         * only when it found the object changed) */
        int tries = b && b->rc == -ESTALE ? 1 : 2;
        ef_release(q->pf, &b);
        rc = fetch_text_replan(q, f, tries, &raw, &rawlen, &charged, w->err, sizeof(w->err));
        if (rc < 0)
            return rc;
    }
    uint8_t *text;
    size_t len;
    rc = tx_decompress(fname(q, f, nb, sizeof(nb)), raw, rawlen, &text, &len, w->err,
                       sizeof(w->err));
    if (b)
        ef_release(q->pf, &b);
    else
        free(raw);
    em_account(&q->mem, -charged);
    if (rc < 0)
        return rc;
    if (!em_account(&q->mem, (int64_t)len)) {
        free(text);
        em_error(&q->mem, w->err, sizeof(w->err));
        return -ENOMEM;
    }
    rc = tx_parse(&q->mem, (tx_format)q->kind, fname(q, f, nb, sizeof(nb)), (const char *)text,
                  len, &q->schema, q->plan.need, q->plan.n_need,
                  ENG_BATCH_ROWS, text_batch, w, w->err, sizeof(w->err));
    em_account(&q->mem, -(int64_t)len);
    free(text);
    atomic_fetch_add(&q->rgs_read, 1);
    if (rc == -ECANCELED && atomic_load(&q->stop))
        return 0;
    return rc;
}

/* ---- reading ahead (eng_fetch.c's ops) ---------------------------------------------- */

static uint64_t pf_budget(const equery *q)
{
    uint64_t t = (uint64_t)q->set.max_download_threads, b = q->set.max_download_buffer_size;
    return b && t > UINT64_MAX / b ? UINT64_MAX : t * b;
}

/* A Parquet file is read whole, in one request, when it is this small. */
static bool pf_small(const equery *q, uint64_t size)
{
    uint64_t b = q->set.max_download_buffer_size;
    return size <= (b > UINT64_MAX / 2 ? UINT64_MAX : 2 * b) && size <= pf_budget(q);
}

static int64_t pf_size(void *arg, int u, bool allow_span, int *span)
{
    equery *q = arg;
    efile *f = &q->files[q->unit_file[u]];
    *span = 1;
    if (q->kind != 0)
        return f->size <= pf_budget(q) ? (int64_t)f->size : -1;
    pthread_mutex_lock(&f->mu);
    pq_file *pf = f->pf;
    int *colmap = f->colmap;
    uint64_t fsize = f->src ? rs_size(f->src) : 0;
    int gen = f->gen;
    pthread_mutex_unlock(&f->mu);
    if (gen > 0 || !pf)
        return -1; /* re-planned: its units have nothing left to read */
    if (allow_span && u == f->rg_first && f->n_rg > 1 && pf_small(q, fsize)) {
        *span = f->n_rg;
        return (int64_t)fsize;
    }
    rs_range *r;
    size_t n;
    uint64_t total;
    if (pq_row_group_ranges(pf, q->unit_rg[u], colmap, (size_t)q->plan.n_need, 0, 0, &r, &n,
                            &total, NULL, 0) < 0)
        return -1;
    free(r);
    return total <= pf_budget(q) ? (int64_t)total : -1;
}

static void pf_fetch(void *arg, ef *p, int u, int span, ef_blob *b)
{
    equery *q = arg;
    efile *f = &q->files[q->unit_file[u]];
    char err[ENG_MSG_MAX];
    if (q->kind != 0) {
        size_t len = 0;
        b->rc = fetch_text_raw(q, f, p, &b->buf, &b->cap, &len, err, sizeof(err));
        b->bytes = b->rc == 0 ? len : 0;
        b->whole = true;
        return;
    }
    pthread_mutex_lock(&f->mu);
    pq_file *pf = f->pf;
    int *colmap = f->colmap;
    rs_source *src = f->src;
    pthread_mutex_unlock(&f->mu);
    b->tag = pf;
    if (span > 1) {
        uint64_t size = rs_size(src);
        b->whole = true;
        b->buf = ef_buf_get(p, size, &b->cap);
        if (!b->buf) {
            b->rc = -ENOMEM;
            return;
        }
        b->bytes = size;
        b->rc = rs_read(src, 0, b->buf, size, err, sizeof(err));
    } else {
        uint64_t total;
        b->rc = pq_row_group_ranges(pf, q->unit_rg[u], colmap, (size_t)q->plan.n_need, 0, 0,
                                    &b->ranges, &b->n, &total, err, sizeof(err));
        if (b->rc < 0)
            return;
        b->buf = ef_buf_get(p, total, &b->cap);
        if (!b->buf) {
            b->rc = -ENOMEM;
            return;
        }
        b->bytes = total;
        total = 0;
        for (size_t i = 0; i < b->n; i++) {
            b->ranges[i].buf = b->buf + total;
            total += b->ranges[i].length;
        }
        b->rc = rs_read_ranges(src, b->ranges, b->n, err, sizeof(err));
    }
    if (b->rc < 0) { /* the worker reads it again and reports what it meets */
        ef_buf_put(p, b->buf, b->cap);
        b->buf = NULL;
        b->bytes = 0;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    equery *q = w->q;
    for (;;) {
        if (atomic_load(&q->stop))
            break;
        if (q->plan.has_limit && !q->plan.n_order && !q->plan.aggregate &&
            atomic_load(&q->rows_emitted) >= q->plan.offset + q->plan.limit) {
            ef_stop(q->pf); /* enough rows: nothing more to fetch */
            break;
        }
        int u = atomic_fetch_add(&q->next_unit, 1);
        if (u >= q->n_units)
            break;
        w->err[0] = 0;
        int rc = q->kind == 0 ? run_parquet_unit(w, u) : run_text_unit(w, u);
        atomic_fetch_add(&q->units_done, 1);
        if (rc < 0) {
            if (rc == -ENOMEM && atomic_load(&q->mem.failed_at))
                em_error(&q->mem, w->err, sizeof(w->err));
            else if (!w->err[0])
                snprintf(w->err, sizeof(w->err), "query failed: %s", strerror(-rc));
            q_fail(q, rc, w->err);
            break;
        }
    }
    return NULL;
}

/* ---- progress --------------------------------------------------------------------- */

static void human_count(double v, char *buf, size_t cap)
{
    if (v >= 1e12)
        snprintf(buf, cap, "%.2f trillion", v / 1e12);
    else if (v >= 1e9)
        snprintf(buf, cap, "%.2f billion", v / 1e9);
    else if (v >= 1e6)
        snprintf(buf, cap, "%.2f million", v / 1e6);
    else if (v >= 1e3)
        snprintf(buf, cap, "%.2f thousand", v / 1e3);
    else
        snprintf(buf, cap, "%.0f", v);
}

static void human_bytes10(double v, char *buf, size_t cap)
{
    static const char *u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
    int k = 0;
    while (v >= 1000 && k < 5) {
        v /= 1000;
        k++;
    }
    if (k == 0)
        snprintf(buf, cap, "%.0f %s", v, u[k]);
    else
        snprintf(buf, cap, "%.2f %s", v, u[k]);
}

static void human_bytes2(double v, char *buf, size_t cap)
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (v >= 1024 && k < 4) {
        v /= 1024;
        k++;
    }
    snprintf(buf, cap, "%.2f %s", v, u[k]);
}

void eng_print_summary(FILE *f, const eng_result *r)
{
    char rows[64], bytes[64], rr[64], br[64], mem[64];
    double el = r->elapsed_s > 0 ? r->elapsed_s : 1e-9;
    human_count((double)r->rows_read, rows, sizeof(rows));
    human_bytes10((double)r->bytes_read, bytes, sizeof(bytes));
    human_count((double)r->rows_read / el, rr, sizeof(rr));
    human_bytes10((double)r->bytes_read / el, br, sizeof(br));
    human_bytes2((double)r->peak_memory, mem, sizeof(mem));
    fprintf(f, "%llu row%s in set. Elapsed: %.3f sec. Processed %s rows, %s (%s rows/s., %s/s.)\n"
               "Peak memory usage: %s.\n",
            (unsigned long long)r->rows_out, r->rows_out == 1 ? "" : "s", r->elapsed_s, rows,
            bytes, rr, br, mem);
}

static void progress_line(equery *q, bool clear)
{
    FILE *f = q->ctx->progress;
    if (!f)
        return;
    if (clear) {
        fputs("\r\033[K", f);
        fflush(f);
        return;
    }
    double el = now_s() - q->t0;
    char rows[64], bytes[64], rr[64], br[64];
    uint64_t r = atomic_load(&q->rows_read), b = atomic_load(&q->bytes_read);
    human_count((double)r, rows, sizeof(rows));
    human_bytes10((double)b, bytes, sizeof(bytes));
    human_count((double)r / (el > 0 ? el : 1), rr, sizeof(rr));
    human_bytes10((double)b / (el > 0 ? el : 1), br, sizeof(br));
    int pct = q->n_units ? (int)(100.0 * atomic_load(&q->units_done) / q->n_units) : 0;
    fprintf(f, "\r\033[K↓ Progress: %s rows, %s (%s rows/s., %s/s.) %3d%%", rows, bytes, rr, br,
            pct);
    fflush(f);
}

typedef struct run_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int live;
} run_state;

typedef struct wrap_arg {
    worker *w;
    run_state *rs;
} wrap_arg;

static void *wrap_main(void *arg)
{
    wrap_arg *a = arg;
    worker_main(a->w);
    pthread_mutex_lock(&a->rs->mu);
    a->rs->live--;
    pthread_cond_signal(&a->rs->cv);
    pthread_mutex_unlock(&a->rs->mu);
    return NULL;
}

/* Runs nthreads workers; the calling thread draws the progress line. */
static int run_workers(equery *q, worker *ws, int nthreads)
{
    pthread_t *th = calloc((size_t)nthreads, sizeof(pthread_t));
    wrap_arg *wa = calloc((size_t)nthreads, sizeof(wrap_arg));
    run_state rs = {.live = 0};
    pthread_mutex_init(&rs.mu, NULL);
    pthread_cond_init(&rs.cv, NULL);
    int started = 0;
    if (th && wa) {
        for (int i = 0; i < nthreads; i++) {
            wa[i] = (wrap_arg){&ws[i], &rs};
            pthread_mutex_lock(&rs.mu);
            rs.live++;
            pthread_mutex_unlock(&rs.mu);
            if (pthread_create(&th[i], NULL, wrap_main, &wa[i]) != 0) {
                pthread_mutex_lock(&rs.mu);
                rs.live--;
                pthread_mutex_unlock(&rs.mu);
                break;
            }
            started++;
        }
    }
    if (started == 0) {
        /* no thread: do the work here */
        if (nthreads > 0)
            worker_main(&ws[0]);
    } else {
        bool drew = false;
        double t_first = now_s() + 0.5;
        pthread_mutex_lock(&rs.mu);
        while (rs.live > 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100 * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&rs.cv, &rs.mu, &ts);
            if (rs.live > 0 && q->ctx->progress && now_s() > t_first) {
                pthread_mutex_unlock(&rs.mu);
                progress_line(q, false);
                drew = true;
                pthread_mutex_lock(&rs.mu);
            }
        }
        pthread_mutex_unlock(&rs.mu);
        if (drew)
            progress_line(q, true);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
    }
    pthread_mutex_destroy(&rs.mu);
    pthread_cond_destroy(&rs.cv);
    free(th);
    free(wa);
    return 0;
}

/* ---- statement ------------------------------------------------------------------- */

static int literal_str(const sql_node *n, const char **out)
{
    if (n->kind != SQL_STRING)
        return -EINVAL;
    *out = n->s;
    return 0;
}

static void query_free(equery *q)
{
    for (int i = 0; i < q->n_files; i++) {
        efile *f = &q->files[i];
        pq_file_destroy(&f->pf);
        rs_destroy(&f->src);
        for (int k = 0; k < 2; k++) {
            pq_file_destroy(&f->old_pf[k]);
            rs_destroy(&f->old_src[k]);
        }
        free(f->colmap);
        free(f->path);
        pthread_mutex_destroy(&f->mu);
    }
    free(q->files);
    eng_plan_free(&q->mem, &q->plan);
    eng_schema_free(&q->schema);
    free(q->unit_file);
    free(q->unit_rg);
    pthread_mutex_destroy(&q->err_mu);
}

static int open_footers(equery *q, int nthreads, char *err, size_t errlen);

static int run_stmt(const eng_ctx *ctx, const sql_stmt *st, FILE *summary, eng_result *res,
                    char *err, size_t errlen)
{
    equery *q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&q->err_mu, NULL);
    q->ctx = ctx;
    q->t0 = now_s();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    q->set.max_threads = ctx->max_threads > 0 ? ctx->max_threads : (int)(cores > 0 ? cores : 1);
    q->set.max_download_threads = 4;
    q->set.max_download_buffer_size = 10ull << 20;
    int rc = eng_settings_apply(st, &q->set, err, errlen);
    if (rc < 0)
        goto out;
    if (q->set.max_threads <= 0)
        q->set.max_threads = (int)(cores > 0 ? cores : 1);
    q->mem.limit = q->set.max_memory_usage;
    eng_format ofmt = ctx->format ? ctx->format : ENG_FMT_TSV;
    if (st->format) {
        int f = eng_format_parse(st->format);
        if (f < 0) {
            snprintf(err, errlen, "unknown output format '%s' (use PrettyCompact, TSV, "
                                  "TSVWithNames, CSV, CSVWithNames, JSONEachRow or Null)",
                     st->format);
            rc = -EINVAL;
            goto out;
        }
        ofmt = (eng_format)f;
    }
    /* FROM */
    const char *path = NULL, *fmtarg = NULL;
    bool is_s3 = strcasecmp(st->from_fn, "s3") == 0, is_file = strcasecmp(st->from_fn, "file") == 0;
    if (!is_s3 && !is_file) {
        snprintf(err, errlen, "line %d, column %d: unknown table function '%s': use s3() or file()",
                 st->from_line, st->from_col, st->from_fn);
        rc = -EINVAL;
        goto out;
    }
    if (st->n_from_args < 1 || literal_str(st->from_args[0], &path) < 0 ||
        (st->n_from_args >= 2 && literal_str(st->from_args[st->n_from_args - 1], &fmtarg) < 0) ||
        st->n_from_args > (is_s3 ? 4 : 3)) {
        snprintf(err, errlen,
                 "line %d, column %d: %s() takes a path as a string and an optional format, like "
                 "%s('%s', 'Parquet')",
                 st->from_line, st->from_col, st->from_fn, st->from_fn,
                 is_s3 ? "s3://bucket/data/*.parquet" : "data/*.parquet");
        rc = -EINVAL;
        goto out;
    }
    if (is_s3 && st->n_from_args == 3) {
        snprintf(err, errlen, "line %d, column %d: credentials in s3() are not supported: set "
                              "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY instead",
                 st->from_line, st->from_col);
        rc = -EINVAL;
        goto out;
    }
    if (st->n_from_args == 4)
        fmtarg = st->from_args[3]->kind == SQL_STRING ? st->from_args[3]->s : NULL;
    flist fl = {0};
    char glob[2048];
    if (is_s3) {
        if (!ctx->list_s3 || !ctx->open_s3) {
            snprintf(err, errlen, "s3() is not available here (no S3 client configured)");
            rc = -ENOTSUP;
            goto out;
        }
        if (s3_url_parse(path, q->bucket, sizeof(q->bucket), glob, sizeof(glob)) < 0) {
            snprintf(err, errlen, "bad S3 URL '%s': write s3://bucket/path/glob", path);
            rc = -EINVAL;
            goto out;
        }
        q->s3 = true;
        rc = ctx->list_s3(ctx->s3_impl, q->bucket, glob, s3_key_cb, &fl, err, errlen);
        if (rc == 0 && fl.n == 0) {
            snprintf(err, errlen, "no objects match '%s' (check the bucket, the prefix and the "
                                  "glob)",
                     path);
            rc = -ENOENT;
        }
    } else {
        rc = list_local(path, &fl, err, errlen);
    }
    q->files = fl.f;
    q->n_files = fl.n;
    for (int i = 0; i < q->n_files; i++)
        pthread_mutex_init(&q->files[i].mu, NULL);
    if (rc < 0)
        goto out;
    qsort(q->files, (size_t)q->n_files, sizeof(efile), fcmp);
    /* format */
    int kind;
    if (fmtarg) {
        kind = tx_format_of_arg(fmtarg);
        if (kind < 0) {
            snprintf(err, errlen, "unknown input format '%s' (use Parquet, CSV, CSVWithNames, "
                                  "TSV, TSVWithNames or JSONEachRow)",
                     fmtarg);
            rc = -EINVAL;
            goto out;
        }
    } else {
        kind = tx_format_of_name(q->files[0].path);
        if (kind < 0) {
            snprintf(err, errlen, "cannot tell the format of %s from its name: pass it, as in "
                                  "%s('%s', 'Parquet')",
                     q->files[0].path, st->from_fn, path);
            rc = -EINVAL;
            goto out;
        }
    }
    q->kind = kind;
    /* schema from the first file */
    if (kind == 0) {
        rc = open_parquet(q, &q->files[0], err, errlen);
        if (rc == -ESTALE) /* changed between HEAD and footer: open it again, once */
            rc = open_parquet(q, &q->files[0], err, errlen);
        if (rc == 0 && schema_from_parquet(q->files[0].pf, &q->schema) < 0)
            rc = -ENOMEM;
    } else {
        uint8_t *text;
        size_t len;
        rc = load_text(q, &q->files[0], &text, &len, err, errlen);
        if (rc == 0) {
            char nb[1200];
            rc = tx_infer((tx_format)kind, fname(q, &q->files[0], nb, sizeof(nb)),
                          (const char *)text, len, &q->schema, err, errlen);
            free(text);
        }
    }
    if (rc < 0)
        goto out;
    eng_result r = {0};
    r.files = (uint64_t)q->n_files;
    rc = 0;
    eng_out_table ot = {0};
    ex_vec *post = NULL;
    int n_post = 0;
    rtab final = {0};
    worker *ws = NULL;
    int nthreads = 0;
    if (st->kind == SQL_DESCRIBE) {
        /* name, type, default_type, default_expression, comment, codec_expression, ttl_expression */
        static const char *dn[] = {"name", "type", "default_type", "default_expression",
                                   "comment", "codec_expression", "ttl_expression"};
        ex_type ts[7];
        for (int k = 0; k < 7; k++)
            ts[k] = (ex_type){.kind = EX_STRING};
        if (rtab_init(&q->mem, &final, ts, 7) < 0 || rtab_reserve(&q->mem, &final, (uint32_t)q->schema.n) < 0) {
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        for (int i = 0; i < q->schema.n; i++) {
            char tn[96];
            ex_type_name(&q->schema.cols[i].t, tn, sizeof(tn));
            const char *vals[7] = {q->schema.cols[i].name, tn, "", "", "", "", ""};
            for (int k = 0; k < 7; k++) {
                final.c[k].nulls[final.n] = 0;
                if (ex_vec_str_put(&q->mem, &final.c[k], final.n, vals[k], strlen(vals[k])) < 0)
                    rc = -ENOMEM;
            }
            final.n++;
        }
        ot = (eng_out_table){.cols = final.c, .n_cols = 7, .n_rows = final.n, .names = dn};
        goto emit;
    }
    rc = eng_bind(&q->mem, st, &q->schema, &q->plan, err, errlen);
    if (rc < 0)
        goto done;
    nthreads = q->set.max_threads;
    /* units */
    if (kind == 0) {
        rc = open_footers(q, nthreads > q->set.max_download_threads ? nthreads
                                                                     : q->set.max_download_threads,
                          err, errlen);
        if (rc < 0)
            goto done;
    } else {
        q->n_units = q->n_files;
        q->unit_file = calloc((size_t)q->n_units + 1, sizeof(int));
        q->unit_rg = calloc((size_t)q->n_units + 1, sizeof(int));
        if (!q->unit_file || !q->unit_rg) {
            rc = -ENOMEM;
            goto done;
        }
        for (int i = 0; i < q->n_units; i++)
            q->unit_file[i] = i;
    }
    if (nthreads > q->n_units)
        nthreads = q->n_units > 0 ? q->n_units : 1;
    ws = calloc((size_t)nthreads, sizeof(worker));
    if (!ws) {
        rc = -ENOMEM;
        goto done;
    }
    int nrc = n_res_cols(&q->plan);
    ex_type *rtypes = calloc((size_t)nrc + 1, sizeof(ex_type));
    if (!rtypes) {
        rc = -ENOMEM;
        goto done;
    }
    for (int k = 0; k < nrc; k++)
        rtypes[k] = k < q->plan.n_outs ? q->plan.outs[k].e->t : q->plan.order[k - q->plan.n_outs].e->t;
    for (int i = 0; i < nthreads && rc == 0; i++) {
        ws[i].q = q;
        if (q->plan.aggregate)
            rc = agg_tab_create(&ws[i].agg, &q->mem, &q->plan);
        else
            rc = rtab_init(&q->mem, &ws[i].res, rtypes, nrc);
    }
    if (rc < 0) {
        free(rtypes);
        if (atomic_load(&q->mem.failed_at))
            em_error(&q->mem, err, errlen);
        else
            snprintf(err, errlen, "out of memory starting the workers");
        goto done;
    }
    {
        static const ef_ops ops = {pf_size, pf_fetch};
        /* as many units ahead as there are download threads: each worker
         * finds the next unit fetched while the downloads stay a step ahead;
         * a small file read whole counts as one */
        /* S3 only: a local file is read from the OS's page cache at memory
         * speed, where a download thread adds a copy and a hand-off (ClickHouse
         * too reads ahead for remote files only, local_filesystem_read_prefetch
         * is off by default) */
        if (!q->s3 ||
            ef_create(&q->pf, &ops, q, q->n_units, q->set.max_download_threads,
                      q->set.max_download_threads, pf_budget(q), &q->mem) < 0)
            q->pf = NULL; /* no reading ahead: the workers fetch everything */
    }
    run_workers(q, ws, nthreads);
    ef_destroy(&q->pf);
    if (q->rc) {
        rc = q->rc;
        snprintf(err, errlen, "%s", q->err);
        free(rtypes);
        goto done;
    }
    ex_ectx ec = {&q->mem, err, errlen};
    if (q->plan.aggregate) {
        for (int i = 1; i < nthreads && rc == 0; i++) {
            rc = agg_tab_merge(ws[0].agg, ws[i].agg, err, errlen);
            agg_tab_destroy(&ws[i].agg);
        }
        if (rc < 0) {
            free(rtypes);
            goto done;
        }
        n_post = q->plan.n_keys + q->plan.n_aggs;
        post = calloc((size_t)n_post + 1, sizeof(ex_vec));
        if (!post) {
            rc = -ENOMEM;
            free(rtypes);
            goto done;
        }
        int ng = agg_tab_finish(ws[0].agg, post, err, errlen);
        agg_tab_destroy(&ws[0].agg);
        if (ng < 0) {
            rc = ng;
            free(rtypes);
            goto done;
        }
        for (int k = 0; k < n_post; k++)
            post[k].n = (uint32_t)ng;
        uint32_t *sel = NULL, m = (uint32_t)ng;
        if (q->plan.having) {
            ex_vec hb;
            rc = bx_eval(&ec, q->plan.having, post, NULL, (uint32_t)ng, &hb);
            if (rc == 0) {
                sel = malloc(sizeof(uint32_t) * ((size_t)ng + 1));
                if (!sel)
                    rc = -ENOMEM;
                else
                    m = bx_select(&hb, NULL, (uint32_t)ng, sel);
                ex_vec_clear(&q->mem, &hb);
            }
        }
        if (rc == 0)
            rc = rtab_init(&q->mem, &final, rtypes, nrc);
        ex_vec *vals = calloc((size_t)nrc + 1, sizeof(ex_vec));
        int done = 0;
        if (!vals)
            rc = -ENOMEM;
        for (; rc == 0 && done < nrc; done++) {
            const bx *e = done < q->plan.n_outs ? q->plan.outs[done].e
                                                : q->plan.order[done - q->plan.n_outs].e;
            rc = bx_eval(&ec, e, post, sel, m, &vals[done]);
            if (rc < 0)
                break;
        }
        if (rc == 0)
            rc = rtab_append(&q->mem, &final, vals, m);
        for (int k = 0; k < done; k++)
            ex_vec_clear(&q->mem, &vals[k]);
        free(vals);
        free(sel);
    } else {
        final = ws[0].res;
        memset(&ws[0].res, 0, sizeof(ws[0].res));
        for (int i = 1; i < nthreads && rc == 0; i++) {
            rtab *t = &ws[i].res;
            if (rtab_reserve(&q->mem, &final, final.n + t->n) < 0) {
                rc = -ENOMEM;
                break;
            }
            for (uint32_t row = 0; row < t->n && rc == 0; row++) {
                for (int k = 0; k < final.nc && rc == 0; k++)
                    rc = rtab_put(&q->mem, &final, k, &t->c[k], row);
                final.n++;
            }
            rtab_free(&q->mem, t);
        }
    }
    free(rtypes);
    if (rc == 0)
        rc = order_and_cut(&q->mem, &final, &q->plan, q->plan.n_outs, true);
    if (rc < 0) {
        if (rc == -ENOMEM && atomic_load(&q->mem.failed_at))
            em_error(&q->mem, err, errlen);
        else if (rc == -ENOMEM)
            snprintf(err, errlen, "out of memory");
        goto done;
    }
    {
        const char **names = calloc((size_t)q->plan.n_outs + 1, sizeof(char *));
        if (!names) {
            rc = -ENOMEM;
            goto done;
        }
        for (int k = 0; k < q->plan.n_outs; k++)
            names[k] = q->plan.outs[k].name;
        ot = (eng_out_table){.cols = final.c, .n_cols = q->plan.n_outs, .n_rows = final.n,
                             .names = names};
    }
emit:
    if (rc == 0) {
        rc = eng_out_write(ctx->out, ofmt, &ot, err, errlen);
        r.rows_out = ot.n_rows;
    }
    if (st->kind != SQL_DESCRIBE)
        free((void *)ot.names);
done:
    if (ws) {
        for (int i = 0; i < nthreads; i++) {
            agg_tab_destroy(&ws[i].agg);
            rtab_free(&q->mem, &ws[i].res);
            free(ws[i].sel);
            free(ws[i].fbuf);
            em_account(&q->mem, -(int64_t)ws[i].fcap);
        }
        free(ws);
    }
    if (post) {
        for (int k = 0; k < n_post; k++)
            ex_vec_clear(&q->mem, &post[k]);
        free(post);
    }
    rtab_free(&q->mem, &final);
    r.rows_read = atomic_load(&q->rows_read);
    r.bytes_read = atomic_load(&q->bytes_read);
    r.row_groups = atomic_load(&q->rgs_read);
    r.row_groups_pruned = atomic_load(&q->rgs_pruned);
    r.peak_memory = atomic_load(&q->mem.peak);
    r.elapsed_s = now_s() - q->t0;
    if (rc == 0 && summary)
        eng_print_summary(summary, &r);
    if (res)
        *res = r;
out:
    query_free(q);
    free(q);
    return rc;
}

/* Opens every file's footer (in parallel), checks columns, lists the row
 * groups that survive pruning as units. */
typedef struct footer_arg {
    equery *q;
    _Atomic int next;
} footer_arg;

static void *footer_main(void *arg)
{
    footer_arg *a = arg;
    equery *q = a->q;
    char err[ENG_MSG_MAX];
    for (;;) {
        int i = atomic_fetch_add(&a->next, 1);
        if (i >= q->n_files || atomic_load(&q->stop))
            break;
        efile *f = &q->files[i];
        int rc = 0;
        err[0] = 0;
        if (!f->pf) {
            rc = open_parquet(q, f, err, sizeof(err));
            if (rc == -ESTALE) /* changed between HEAD and footer: open it again, once */
                rc = open_parquet(q, f, err, sizeof(err));
        }
        if (rc == 0)
            rc = map_columns(q, f, err, sizeof(err));
        if (rc < 0) {
            if (!err[0])
                snprintf(err, sizeof(err), "cannot open %s: %s", f->path, strerror(-rc));
            q_fail(q, rc, err);
            break;
        }
    }
    return NULL;
}

static int open_footers(equery *q, int nthreads, char *err, size_t errlen)
{
    footer_arg fa = {.q = q};
    if (nthreads > q->n_files)
        nthreads = q->n_files;
    if (nthreads > 64)
        nthreads = 64;
    pthread_t th[64];
    int started = 0;
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&th[started], NULL, footer_main, &fa) == 0)
            started++;
    if (!started)
        footer_main(&fa);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (q->rc) {
        snprintf(err, errlen, "%s", q->err);
        return q->rc;
    }
    int total = 0;
    for (int i = 0; i < q->n_files; i++)
        total += pq_file_num_row_groups(q->files[i].pf);
    q->unit_file = calloc((size_t)total + 1, sizeof(int));
    q->unit_rg = calloc((size_t)total + 1, sizeof(int));
    if (!q->unit_file || !q->unit_rg)
        return -ENOMEM;
    /* prune with statistics before any data is read */
    for (int i = 0; i < q->n_files; i++) {
        efile *f = &q->files[i];
        pq_pred preds[64];
        size_t np = 0;
        for (int k = 0; k < q->plan.n_prune && np < 64; k++) {
            int fc = pq_file_find_column(f->pf, q->schema.cols[q->plan.prune[k].col].name);
            if (fc >= 0)
                preds[np++] = (pq_pred){.column = fc, .op = q->plan.prune[k].op,
                                        .value = q->plan.prune[k].v};
        }
        int nrg = pq_file_num_row_groups(f->pf);
        f->rg_first = q->n_units;
        for (int rg = 0; rg < nrg; rg++) {
            if (np && pq_file_row_group_may_match(f->pf, rg, preds, np) == 0) {
                atomic_fetch_add(&q->rgs_pruned, 1);
                continue;
            }
            if (pq_file_row_group_rows(f->pf, rg) == 0)
                continue;
            q->unit_file[q->n_units] = i;
            q->unit_rg[q->n_units] = rg;
            q->n_units++;
        }
        f->n_rg = q->n_units - f->rg_first;
    }
    return 0;
}

int eng_run(const eng_ctx *ctx, const char *sql, size_t len, FILE *summary, eng_result *res,
            char *err, size_t errlen)
{
    sql_stmt **st;
    int n = sql_parse_script(sql, len, &st, err, errlen);
    if (n < 0)
        return n;
    if (n == 0) {
        snprintf(err, errlen, "the query is empty: write a SELECT or DESCRIBE statement");
        return -EINVAL;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = run_stmt(ctx, st[i], summary, res, err, errlen);
    sql_script_free(&st, n);
    return rc;
}
