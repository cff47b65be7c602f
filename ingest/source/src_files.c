/* SPDX-License-Identifier: Apache-2.0
 *
 * src_files.c: the scan of a list of files, behind s3() and file(). The
 * files come sorted by name; the schema is the first file's (Parquet: its
 * footer; text: inferred from its first rows). After binding, every Parquet
 * footer is opened (in parallel) and checked against the first file's
 * columns, and the row groups that survive pruning by statistics are the work
 * units; a text file is one unit, read whole. Each unit hands its blocks to
 * the executor's callback: a Parquet row group as one block, text in blocks
 * of ENG_BATCH_ROWS rows.
 *
 * A file whose object is overwritten while the query reads it (-ESTALE from
 * the source) is re-planned once: opened again and read again whole, never
 * partly one version and partly the other: a text file by the worker that met
 * the change; a Parquet file by the worker that met it, when no rows of the
 * file had been used yet (else, and at a second change, the query fails with
 * an error naming the file).
 *
 * Downloads run ahead of the workers (io/eng_fetch.h), for s3() only: while a
 * worker decodes unit k, download threads (max_download_threads) fetch the
 * byte ranges of the next units in plan order (a Parquet file small enough is
 * read whole in one request; a text file whole), bounded by
 * max_download_threads x max_download_buffer_size bytes and as many units
 * ahead as there are download threads, charged to the query's memory. A
 * worker uses those bytes when it reaches the unit, or fetches the unit
 * itself into its reader's buffer (charged too) when no download has started
 * it. A local file is read from the OS's page cache at memory speed, where a
 * download thread adds a copy and a hand-off (ClickHouse too reads ahead for
 * remote files only, local_filesystem_read_prefetch is off by default).
 */
#include "src_int.h"

#include "eng_fetch.h"
#include "eng_text.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENG_BATCH_ROWS 65536

typedef struct src_files {
    eng_source base;
    eng_scan_env env;
    int kind; /* 0 Parquet, TX_* */
    bool s3;
    char bucket[64];
    efile *files;
    int n_files;
    const eng_plan *plan; /* after plan() */
    /* units */
    int n_units;
    int *unit_file;
    int *unit_rg;
    ef *pf;        /* downloads ahead of the workers (NULL: none) */
    eng_fail fail; /* the first error of the footer threads */
    /* the plan's scan slots: those read from the files (n_phys, their schema
     * columns in phys_need) and, per slot, the virtual column it is or -1 */
    int n_phys;
    int *phys_need;
    int *vslot;
    tx_codec codec;    /* text: the compression argument (AUTO: by name) */
    eng_s3_access own; /* an S3 access of the source's own (s3() with
                                 credentials), freed with it; env uses it */
} src_files;

/* A worker's state: the unit's bytes fetched ahead (or NULL), and its own
 * buffer for units that were not, charged to the query while it lives; the
 * callback and error buffer of the read in progress. */
struct eng_reader {
    src_files *s;
    ef_blob *blob;
    rs_source *src; /* the source of the pq_file being read */
    uint8_t *fbuf;
    size_t fcap;
    eng_scan_fn fn;
    void *arg;
    char *err;
    size_t errlen;
    /* with virtual columns: the caller's callback, the file of the unit and
     * its virtual values (constant vectors), and the slots handed on */
    eng_scan_fn ufn;
    void *uarg;
    ex_vec vval[SRC_N_VIRT];
    ex_vec *slots;
};

/* ---- file lists ------------------------------------------------------------------ */

int src__flist_add(flist *l, const char *path, uint64_t size)
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
    f->mtime = -1;
    l->n++;
    return 0;
}

/* ---- virtual columns --------------------------------------------------------------- */

/* ClickHouse's virtual columns of file() and s3(): the object's path (for s3(),
 * bucket/key), its name, size and modification time (NULL when the listing
 * does not tell). A column of the files with the same name hides one. */
static const struct {
    const char *name;
    ex_type t;
} virt_cols[SRC_N_VIRT] = {
    {"_path", {.kind = EX_STRING}},
    {"_file", {.kind = EX_STRING}},
    {"_size", {.kind = EX_UINT, .bits = 64, .nullable = true}},
    {"_time", {.kind = EX_DATETIME, .nullable = true}},
};

static int add_virtual_columns(eng_schema *sc)
{
    eng_col *c = realloc(sc->cols, sizeof(eng_col) * (size_t)(sc->n + SRC_N_VIRT + 1));
    if (!c)
        return -ENOMEM;
    sc->cols = c;
    for (int v = 0; v < SRC_N_VIRT; v++) {
        bool hidden = false;
        for (int i = 0; i < sc->n && !hidden; i++)
            hidden = !sc->cols[i].virt && strcmp(sc->cols[i].name, virt_cols[v].name) == 0;
        if (hidden)
            continue;
        eng_col *n = &sc->cols[sc->n];
        memset(n, 0, sizeof(*n));
        if (!(n->name = strdup(virt_cols[v].name)))
            return -ENOMEM;
        n->t = virt_cols[v].t;
        n->virt = true;
        sc->n++;
    }
    return 0;
}

/* The virtual values of file f for a reader (constant vectors). */
static int virt_values(src_files *s, eng_reader *rd, const efile *f)
{
    for (int v = 0; v < SRC_N_VIRT; v++)
        ex_vec_clear(s->env.mem, &rd->vval[v]);
    char path[4200];
    if (s->s3)
        snprintf(path, sizeof(path), "%s/%s", s->bucket, f->path);
    else
        snprintf(path, sizeof(path), "%s", f->path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int rc = 0;
    for (int v = 0; v < SRC_N_VIRT && rc == 0; v++) {
        ex_vec *x = &rd->vval[v];
        if ((rc = ex_vec_alloc(s->env.mem, x, virt_cols[v].t, 1)) < 0)
            break;
        x->is_const = true;
        switch (v) {
        case 0: rc = ex_vec_str_put(s->env.mem, x, 0, path, strlen(path)); break;
        case 1: rc = ex_vec_str_put(s->env.mem, x, 0, base, strlen(base)); break;
        case 2: x->i[0] = (int64_t)f->size; break;
        default:
            x->i[0] = f->mtime < 0 ? 0 : f->mtime;
            x->nulls[0] = f->mtime < 0;
            break;
        }
    }
    return rc;
}

/* The scan callback when the plan reads virtual columns: the file's columns
 * (n_phys of them, in slot order) with the virtual ones put in their slots. */
static int virt_fn(void *arg, ex_vec *cols, uint32_t n)
{
    eng_reader *rd = arg;
    src_files *s = rd->s;
    for (int k = 0, j = 0; k < s->plan->n_need; k++) {
        if (s->vslot[k] < 0) {
            rd->slots[k] = cols[j++];
            rd->slots[k].own = 0; /* cols' owner frees them */
        } else {
            ex_vec_view(&rd->vval[s->vslot[k]], 0, 1, &rd->slots[k]);
        }
    }
    return rd->ufn(rd->uarg, rd->slots, n);
}

/* Splits the plan's slots into the files' columns and the virtual ones. */
static int plan_slots(src_files *s, const eng_plan *p)
{
    s->phys_need = calloc((size_t)p->n_need + 1, sizeof(int));
    s->vslot = calloc((size_t)p->n_need + 1, sizeof(int));
    if (!s->phys_need || !s->vslot)
        return -ENOMEM;
    s->n_phys = 0;
    for (int k = 0; k < p->n_need; k++) {
        const eng_col *c = &s->base.schema.cols[p->need[k]];
        s->vslot[k] = -1;
        if (!c->virt) {
            s->phys_need[s->n_phys++] = p->need[k];
            continue;
        }
        for (int v = 0; v < SRC_N_VIRT; v++)
            if (strcmp(c->name, virt_cols[v].name) == 0)
                s->vslot[k] = v;
    }
    return 0;
}

void src__flist_free(flist *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->f[i].path);
    free(l->f);
    memset(l, 0, sizeof(*l));
}

static int literal_str(const sql_node *n, const char **out)
{
    if (n->kind != SQL_STRING)
        return -EINVAL;
    *out = n->s;
    return 0;
}

int src__path_args(const eng_tf_call *c, int max_args, const char *example, const char **path,
                   const char **fmtarg, char *err, size_t errlen)
{
    *path = NULL;
    *fmtarg = NULL;
    if (c->n_args < 1 || literal_str(c->args[0], path) < 0 ||
        (c->n_args >= 2 && literal_str(c->args[c->n_args - 1], fmtarg) < 0) ||
        c->n_args > max_args) {
        snprintf(err, errlen,
                 "line %d, column %d: %s() takes a path as a string and an optional format, like "
                 "%s('%s', 'Parquet')",
                 c->line, c->col, c->name, c->name, example);
        return -EINVAL;
    }
    return 0;
}

static int fcmp(const void *a, const void *b)
{
    return strcmp(((const efile *)a)->path, ((const efile *)b)->path);
}

/* ---- schema ------------------------------------------------------------------ */

static int open_source(src_files *s, efile *f, rs_source **out, char *err, size_t errlen)
{
    if (s->s3)
        return s->env.open_s3(s->env.s3_impl, s->bucket, f->path, out, err, errlen);
    return rs_file_open(out, f->path, err, errlen);
}

static const char *fname(const src_files *s, const efile *f, char *buf, size_t cap)
{
    if (s->s3)
        snprintf(buf, cap, "s3://%s/%s", s->bucket, f->path);
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
        s->cols[i].nested = ci->nested;
        if (!ci->nested)
            s->cols[i].t = ex_type_of_column(&ci->type, ci->nullable);
        s->n = i + 1;
    }
    return 0;
}

/* Reads a whole (text) object, in parallel ranges when it is large, into a
 * malloc'ed buffer, or one of the prefetcher's when pool is not NULL (*cap
 * its size). */
static int read_all(src_files *s, rs_source *src, ef *pool, uint8_t **out, uint64_t *cap,
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
    uint64_t part = s->env.set->max_download_buffer_size;
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
static int fetch_text_raw(src_files *s, efile *f, ef *pool, uint8_t **raw, uint64_t *cap,
                          size_t *len, char *err, size_t errlen)
{
    rs_source *src;
    int rc = open_source(s, f, &src, err, errlen);
    if (rc < 0)
        return rc;
    rc = read_all(s, src, pool, raw, cap, len, err, errlen);
    rs_destroy(&src);
    return rc;
}

/* The raw bytes of a text file, re-planned once: a read that finds the object
 * changed since its open (-ESTALE) opens it again and reads it all again, so
 * the text is one version, whole; a second change is an error naming the
 * file. tries is 2, or 1 when a read ahead already met a change. The raw
 * bytes are charged to the query while held (*charged). */
static int fetch_text_replan(src_files *s, efile *f, int tries, uint8_t **raw, size_t *len,
                             int64_t *charged, char *err, size_t errlen)
{
    *charged = 0;
    int64_t want = (int64_t)f->size;
    if (!em_account(s->env.mem, want)) {
        em_error(s->env.mem, err, errlen);
        return -ENOMEM;
    }
    int rc = -ESTALE;
    for (int attempt = 0; attempt < tries && rc == -ESTALE; attempt++)
        rc = fetch_text_raw(s, f, NULL, raw, NULL, len, err, errlen);
    em_account(s->env.mem, -want);
    if (rc == -ESTALE) {
        char nb[1200];
        snprintf(err, errlen,
                 "%.700s changed again while the query read it (it is being overwritten): rerun "
                 "the query when the writer is done",
                 fname(s, f, nb, sizeof(nb)));
        return rc;
    }
    if (rc < 0)
        return rc;
    if (!em_account(s->env.mem, (int64_t)*len)) {
        free(*raw);
        *raw = NULL;
        em_error(s->env.mem, err, errlen);
        return -ENOMEM;
    }
    *charged = (int64_t)*len;
    return 0;
}

static int load_text(src_files *s, efile *f, uint8_t **text, size_t *len, char *err, size_t errlen)
{
    uint8_t *raw;
    size_t rawlen;
    int64_t charged;
    int rc = fetch_text_replan(s, f, 2, &raw, &rawlen, &charged, err, errlen);
    if (rc < 0)
        return rc;
    char nb[1200];
    rc = tx_decompress_as(s->codec, fname(s, f, nb, sizeof(nb)), raw, rawlen, text, len, err,
                          errlen);
    free(raw);
    em_account(s->env.mem, -charged);
    return rc;
}

static int open_parquet(src_files *s, efile *f, char *err, size_t errlen)
{
    int rc = open_source(s, f, &f->src, err, errlen);
    if (rc < 0)
        return rc;
    rc = pq_file_open(&f->pf, f->src, NULL, err, errlen);
    if (rc < 0)
        rs_destroy(&f->src);
    return rc;
}

/* Maps the plan's scan slots to this file's columns (by name). */
static int map_columns(src_files *s, efile *f, char *err, size_t errlen)
{
    free(f->colmap);
    f->colmap = calloc((size_t)s->n_phys + 1, sizeof(int));
    if (!f->colmap)
        return -ENOMEM;
    for (int k = 0; k < s->n_phys; k++) {
        const eng_col *c = &s->base.schema.cols[s->phys_need[k]];
        int i = pq_file_find_column(f->pf, c->name);
        char nb[1200];
        if (i < 0) {
            snprintf(
                err, errlen,
                "column '%s' is missing from %.600s (it is in the first file of the glob; every "
                "file must have the columns the query reads)",
                c->name, fname(s, f, nb, sizeof(nb)));
            return -EBADMSG;
        }
        const pq_column_info *ci = pq_file_column(f->pf, i);
        ex_type t = ex_type_of_column(&ci->type, ci->nullable);
        if (t.kind != c->t.kind || t.scale != c->t.scale ||
            (t.kind == EX_ARRAY && (t.elem != c->t.elem || t.enull != c->t.enull))) {
            char a[64], b[64];
            ex_type_name(&c->t, a, sizeof(a));
            ex_type_name(&t, b, sizeof(b));
            snprintf(
                err, errlen,
                "column '%.100s' is %s in %.600s but %s in the first file of the glob: every file "
                "must use one type per column",
                c->name, b, fname(s, f, nb, sizeof(nb)), a);
            return -EBADMSG;
        }
        f->colmap[k] = i;
    }
    return 0;
}

/* ---- reading units ------------------------------------------------------------- */

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

int src__scan_batch(const eng_scan_env *env, const cb_batch *bt, eng_scan_fn fn, void *arg,
                    char *err, size_t errlen)
{
    uint64_t bytes = 0;
    for (uint32_t k = 0; k < bt->n_cols; k++)
        bytes += vec_bytes(bt->cols[k]);
    /* charged: what the batch's buffers take (heap chunks), not its values'
       width, which a dictionary or a half-filled string buffer makes differ */
    int64_t mem = (int64_t)cb_batch_mem(bt);
    if (!em_account(env->mem, mem)) {
        em_error(env->mem, err, errlen);
        return -ENOMEM;
    }
    atomic_fetch_add(&env->stats->rows_read, bt->n_rows);
    atomic_fetch_add(&env->stats->bytes_read, bytes);
    ex_vec *in = calloc((size_t)bt->n_cols + 1, sizeof(ex_vec));
    int rc = in ? 0 : -ENOMEM;
    for (uint32_t k = 0; k < bt->n_cols && rc == 0; k++)
        if ((rc = ex_vec_from_column(env->mem, bt->cols[k], &in[k])) == -ERANGE)
            snprintf(err, errlen,
                     "column '%.100s' is Decimal(%d, %d) and holds a value of more than 18 digits: "
                     "decimals wider than 18 digits are read only while their values fit 18 "
                     "digits; write the column with a precision of at most 18, or as a DOUBLE",
                     bt->cols[k]->name ? bt->cols[k]->name : "?", bt->cols[k]->info.precision,
                     bt->cols[k]->info.scale);
    if (rc == 0 && bt->n_rows)
        rc = fn(arg, in, bt->n_rows);
    if (in)
        for (uint32_t k = 0; k < bt->n_cols; k++)
            ex_vec_clear(env->mem, &in[k]);
    free(in);
    em_account(env->mem, -mem);
    return rc;
}

/* pq_fetcher hook: the row group's bytes from the read ahead when it planned
 * the same ranges on the same pq_file, else from the source into the reader's
 * buffer (charged to the query). */
static int unit_fetch(void *arg, const pq_file *pf, int rg, rs_range *r, size_t n, char *err,
                      size_t errlen)
{
    (void)rg;
    eng_reader *rd = arg;
    src_files *s = rd->s;
    ef_blob *b = rd->blob;
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
    if (total > rd->fcap) {
        if (total > SIZE_MAX / 2 || !em_account(s->env.mem, (int64_t)(total - rd->fcap))) {
            em_error(s->env.mem, err, errlen);
            return -ENOMEM;
        }
        free(rd->fbuf);
        rd->fbuf = malloc((size_t)total);
        if (!rd->fbuf) {
            em_account(s->env.mem, -(int64_t)total);
            rd->fcap = 0;
            snprintf(err, errlen, "%s: out of memory for %llu bytes of row group %d",
                     pq_file_name(pf), (unsigned long long)total, rg);
            return -ENOMEM;
        }
        rd->fcap = (size_t)total;
    }
    total = 0;
    for (size_t i = 0; i < n; i++) {
        r[i].buf = rd->fbuf + total;
        total += r[i].length;
    }
    return rs_read_ranges(rd->src, r, n, err, errlen);
}

/* Reads row groups [rg_begin, rg_end) (both 0: all) of pf, version gen of f,
 * and hands each to the callback. A batch is used only while f is still at
 * gen, and using it marks f consumed, both under f->mu: so a re-plan (which
 * needs f not consumed) and the rows of the old version never both happen.
 * A batch of an older gen is dropped (whoever re-planned reads the new version
 * whole). *got counts the row groups used. */
static int read_rgs(eng_reader *rd, efile *f, pq_file *pf, int gen, int *colmap, int rg_begin,
                    int rg_end, int *got)
{
    src_files *s = rd->s;
    const eng_plan *p = s->plan;
    pq_pred preds[64];
    size_t np = 0;
    for (int i = 0; i < p->n_prune && np < 64; i++) {
        int fc = pq_file_find_column(pf, s->base.schema.cols[p->prune[i].col].name);
        if (fc < 0)
            continue;
        preds[np++] = (pq_pred){.column = fc, .op = p->prune[i].op, .value = p->prune[i].v};
    }
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.columns = colmap;
    o.n_columns = (size_t)s->n_phys;
    o.preds = preds;
    o.n_preds = np;
    o.rg_begin = rg_begin;
    o.rg_end = rg_end;
    pq_fetcher hook = {unit_fetch, rd};
    o.fetcher = &hook;
    pq_reader *prd;
    int rc = pq_reader_create(&prd, pf, &o, rd->err, rd->errlen);
    if (rc < 0)
        return rc;
    cb_batch *bt = NULL;
    int64_t kept = 0; /* the reader's own buffers, charged while it lives */
    while (rc >= 0 && !atomic_load(s->env.stop) && (rc = pq_reader_next(prd, &bt)) == 1) {
        ef_release(s->pf, &rd->blob); /* decoded: the compressed bytes are done with */
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
        /* the reader's own buffers (decoding scratch, fetched ranges), charged
           while it lives; the batch's, while the callback runs */
        int64_t now = (int64_t)pq_reader_mem(prd);
        if (!em_account(s->env.mem, now - kept)) {
            cb_batch_destroy(&bt);
            em_error(s->env.mem, rd->err, rd->errlen);
            rc = -ENOMEM;
            break;
        }
        kept = now;
        rc = src__scan_batch(&s->env, bt, rd->fn, rd->arg, rd->err, rd->errlen);
        cb_batch_destroy(&bt);
        if (rc < 0)
            break;
    }
    if (rc < 0 && !rd->err[0])
        snprintf(rd->err, rd->errlen, "%s", pq_reader_error(prd));
    pq_reader_destroy(&prd);
    em_account(s->env.mem, -kept);
    ef_release(s->pf, &rd->blob);
    return rc < 0 ? rc : 0;
}

/* One row group of f. A read that finds the object changed (-ESTALE) re-plans
 * the file once: when no rows of it have been used yet, it is opened again
 * and this worker reads the new version whole (every other unit of the file
 * then has nothing to do); when some have, mixing versions is the only way
 * on, so the query fails naming the file, as it does when the new version
 * changes too. */
static int run_parquet_rg(eng_reader *rd, int u)
{
    src_files *s = rd->s;
    efile *f = &s->files[s->unit_file[u]];
    int rg = s->unit_rg[u];
    char nb[1200];
    pthread_mutex_lock(&f->mu);
    pq_file *pf = f->pf;
    int gen = f->gen;
    int *colmap = f->colmap;
    rd->src = f->src;
    pthread_mutex_unlock(&f->mu);
    if (gen > 0)
        return 0; /* re-planned: the new version is read whole by whoever did it */
    int got = 0;
    int rc = read_rgs(rd, f, pf, gen, colmap, rg, rg + 1, &got);
    if (rc != -ESTALE) {
        if (rc == 0)
            atomic_fetch_add(got ? &s->env.stats->units_read : &s->env.stats->units_pruned, 1);
        return rc;
    }
    ef_release(s->pf, &rd->blob);
    pthread_mutex_lock(&f->mu);
    if (f->gen != gen) {
        pthread_mutex_unlock(&f->mu);
        rd->err[0] = 0;
        return 0; /* someone else re-planned it */
    }
    if (f->consumed) {
        pthread_mutex_unlock(&f->mu);
        snprintf(rd->err, rd->errlen,
                 "%.700s changed while the query read it (rows of the version it had begun with "
                 "are already counted): rerun the query when the writer is done",
                 fname(s, f, nb, sizeof(nb)));
        return -ESTALE;
    }
    f->old_src[0] = f->src;
    f->old_pf[0] = f->pf;
    f->src = NULL;
    f->pf = NULL;
    rd->err[0] = 0;
    int orc = open_parquet(s, f, rd->err, rd->errlen);
    if (orc == 0)
        orc = map_columns(s, f, rd->err, rd->errlen);
    f->gen++;
    pf = f->pf;
    gen = f->gen;
    colmap = f->colmap;
    rd->src = f->src;
    pthread_mutex_unlock(&f->mu);
    if (orc < 0) {
        if (orc == -ESTALE)
            goto again;
        return orc;
    }
    got = 0;
    rc = read_rgs(rd, f, pf, gen, colmap, 0, 0, &got);
    if (rc == 0) {
        atomic_fetch_add(&s->env.stats->units_read, (uint64_t)got);
        return 0;
    }
    if (rc != -ESTALE)
        return rc;
again:
    snprintf(rd->err, rd->errlen,
             "%.700s changed again while the query read it (it is being overwritten): rerun "
             "the query when the writer is done",
             fname(s, f, nb, sizeof(nb)));
    return -ESTALE;
}

static int run_parquet_unit(eng_reader *rd, int u)
{
    ef_take(rd->s->pf, u, &rd->blob);
    int rc = run_parquet_rg(rd, u);
    ef_release(rd->s->pf, &rd->blob);
    return rc;
}

static int text_batch(ex_vec *cols, int ncols, uint32_t nrows, void *arg)
{
    eng_reader *rd = arg;
    src_files *s = rd->s;
    uint64_t bytes = 0;
    for (int k = 0; k < ncols; k++)
        bytes += cols[k].t.kind == EX_STRING ? cols[k].off[nrows] + 4ull * nrows : 8ull * nrows;
    atomic_fetch_add(&s->env.stats->rows_read, nrows);
    atomic_fetch_add(&s->env.stats->bytes_read, bytes);
    int rc = rd->fn(rd->arg, cols, nrows);
    for (int k = 0; k < ncols; k++)
        ex_vec_clear(s->env.mem, &cols[k]);
    if (atomic_load(s->env.stop))
        return -ECANCELED;
    return rc;
}

static int run_text_unit(eng_reader *rd, int u)
{
    src_files *s = rd->s;
    efile *f = &s->files[s->unit_file[u]];
    ef_blob *b = NULL;
    uint8_t *raw = NULL;
    size_t rawlen = 0;
    int64_t charged = 0;
    int rc;
    char nb[1200];
    ef_take(s->pf, u, &b);
    if (b && b->rc == 0) {
        raw = b->buf; /* read ahead, whole; charged by the prefetcher */
        rawlen = (size_t)b->bytes;
    } else {
        /* not read ahead, or the read ahead failed: again here (once more
         * only when it found the object changed) */
        int tries = b && b->rc == -ESTALE ? 1 : 2;
        ef_release(s->pf, &b);
        rc = fetch_text_replan(s, f, tries, &raw, &rawlen, &charged, rd->err, rd->errlen);
        if (rc < 0)
            return rc;
    }
    uint8_t *text;
    size_t len;
    rc = tx_decompress_as(s->codec, fname(s, f, nb, sizeof(nb)), raw, rawlen, &text, &len, rd->err,
                          rd->errlen);
    if (b)
        ef_release(s->pf, &b);
    else
        free(raw);
    em_account(s->env.mem, -charged);
    if (rc < 0)
        return rc;
    if (!em_account(s->env.mem, (int64_t)len)) {
        free(text);
        em_error(s->env.mem, rd->err, rd->errlen);
        return -ENOMEM;
    }
    rc = tx_parse(s->env.mem, (tx_format)s->kind, fname(s, f, nb, sizeof(nb)), (const char *)text,
                  len, &s->base.schema, s->phys_need, s->n_phys, ENG_BATCH_ROWS, text_batch, rd,
                  rd->err, rd->errlen);
    em_account(s->env.mem, -(int64_t)len);
    free(text);
    atomic_fetch_add(&s->env.stats->units_read, 1);
    if (rc == -ECANCELED && atomic_load(s->env.stop))
        return 0;
    return rc;
}

/* ---- reading ahead (io/eng_fetch.h's ops) ---------------------------------------------- */

static uint64_t pf_budget(const src_files *s)
{
    uint64_t t = (uint64_t)s->env.set->max_download_threads,
             b = s->env.set->max_download_buffer_size;
    return b && t > UINT64_MAX / b ? UINT64_MAX : t * b;
}

/* A Parquet file is read whole, in one request, when it is this small. */
/* Whether a distributed query's units read row group rg of file path. */
static bool unit_has_rg(const eng_scan_env *env, const char *path, int rg)
{
    for (int k = 0; k < eng_scan_units(env); k++) {
        const eng_unit *un = &env->unit[k];
        if (strcmp(un->path, path) != 0)
            continue;
        if ((un->rg_begin <= 0 || rg >= un->rg_begin) && (un->rg_end <= 0 || rg < un->rg_end))
            return true;
    }
    return false;
}

static bool pf_small(const src_files *s, uint64_t size)
{
    uint64_t b = s->env.set->max_download_buffer_size;
    return size <= (b > UINT64_MAX / 2 ? UINT64_MAX : 2 * b) && size <= pf_budget(s);
}

static int64_t pf_size(void *arg, int u, bool allow_span, int *span)
{
    src_files *s = arg;
    efile *f = &s->files[s->unit_file[u]];
    *span = 1;
    if (s->kind != 0)
        return f->size <= pf_budget(s) ? (int64_t)f->size : -1;
    pthread_mutex_lock(&f->mu);
    pq_file *pf = f->pf;
    int *colmap = f->colmap;
    uint64_t fsize = f->src ? rs_size(f->src) : 0;
    int gen = f->gen;
    pthread_mutex_unlock(&f->mu);
    if (gen > 0 || !pf)
        return -1; /* re-planned: its units have nothing left to read */
    /* a small file read whole in one request, unless the query reads only some
     * of its row groups (a distributed query's unit): then only their chunks */
    if (allow_span && !s->env.unit && u == f->rg_first && f->n_rg > 1 && pf_small(s, fsize)) {
        *span = f->n_rg;
        return (int64_t)fsize;
    }
    rs_range *r;
    size_t n;
    uint64_t total;
    if (pq_row_group_ranges(pf, s->unit_rg[u], colmap, (size_t)s->n_phys, 0, 0, &r, &n, &total,
                            NULL, 0) < 0)
        return -1;
    free(r);
    return total <= pf_budget(s) ? (int64_t)total : -1;
}

static void pf_fetch(void *arg, ef *p, int u, int span, ef_blob *b)
{
    src_files *s = arg;
    efile *f = &s->files[s->unit_file[u]];
    char err[ENG_MSG_MAX];
    if (s->kind != 0) {
        size_t len = 0;
        b->rc = fetch_text_raw(s, f, p, &b->buf, &b->cap, &len, err, sizeof(err));
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
        b->rc = pq_row_group_ranges(pf, s->unit_rg[u], colmap, (size_t)s->n_phys, 0, 0, &b->ranges,
                                    &b->n, &total, err, sizeof(err));
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

/* ---- footers and units ------------------------------------------------------------ */

/* Opens every file's footer (in parallel), checks columns, lists the row
 * groups that survive pruning as units. */
typedef struct footer_arg {
    src_files *s;
    _Atomic int next;
} footer_arg;

static void *footer_main(void *arg)
{
    footer_arg *a = arg;
    src_files *s = a->s;
    char err[ENG_MSG_MAX];
    for (;;) {
        int i = atomic_fetch_add(&a->next, 1);
        if (i >= s->n_files || atomic_load(&s->fail.rc) || atomic_load(s->env.stop))
            break;
        efile *f = &s->files[i];
        int rc = 0;
        err[0] = 0;
        if (!f->pf) {
            rc = open_parquet(s, f, err, sizeof(err));
            if (rc == -ESTALE) /* changed between HEAD and footer: open it again, once */
                rc = open_parquet(s, f, err, sizeof(err));
        }
        if (rc == 0)
            rc = map_columns(s, f, err, sizeof(err));
        if (rc < 0) {
            if (!err[0])
                snprintf(err, sizeof(err), "cannot open %s: %s", f->path, strerror(-rc));
            eng_fail_set(&s->fail, rc, err);
            break;
        }
    }
    return NULL;
}

static int open_footers(src_files *s, int nthreads, char *err, size_t errlen)
{
    footer_arg fa = {.s = s};
    if (nthreads > s->n_files)
        nthreads = s->n_files;
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
    int frc = atomic_load(&s->fail.rc);
    if (frc) {
        snprintf(err, errlen, "%s", s->fail.msg);
        return frc;
    }
    int total = 0;
    for (int i = 0; i < s->n_files; i++)
        total += pq_file_num_row_groups(s->files[i].pf);
    s->unit_file = calloc((size_t)total + 1, sizeof(int));
    s->unit_rg = calloc((size_t)total + 1, sizeof(int));
    if (!s->unit_file || !s->unit_rg) {
        snprintf(err, errlen, "out of memory listing the row groups");
        return -ENOMEM;
    }
    /* prune with statistics before any data is read */
    const eng_plan *p = s->plan;
    for (int i = 0; i < s->n_files; i++) {
        efile *f = &s->files[i];
        pq_pred preds[64];
        size_t np = 0;
        for (int k = 0; k < p->n_prune && np < 64; k++) {
            int fc = pq_file_find_column(f->pf, s->base.schema.cols[p->prune[k].col].name);
            if (fc >= 0)
                preds[np++] = (pq_pred){.column = fc, .op = p->prune[k].op, .value = p->prune[k].v};
        }
        int nrg = pq_file_num_row_groups(f->pf), rg0 = 0;
        int nun = eng_scan_units(&s->env);
        f->rg_first = s->n_units;
        for (int rg = rg0; rg < nrg; rg++) {
            if (nun && !unit_has_rg(&s->env, f->path, rg))
                continue; /* a distributed query's units: their row groups only */
            if (np && pq_file_row_group_may_match(f->pf, rg, preds, np) == 0) {
                atomic_fetch_add(&s->env.stats->units_pruned, 1);
                continue;
            }
            if (pq_file_row_group_rows(f->pf, rg) == 0)
                continue;
            s->unit_file[s->n_units] = i;
            s->unit_rg[s->n_units] = rg;
            s->n_units++;
        }
        f->n_rg = s->n_units - f->rg_first;
    }
    return 0;
}

/* ---- the source's ops ------------------------------------------------------------- */

static int files_plan(eng_source *b, const eng_plan *p, char *err, size_t errlen)
{
    src_files *s = (src_files *)b;
    s->plan = p;
    if (plan_slots(s, p) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (s->kind == 0) {
        int t = s->env.set->max_threads;
        if (t < s->env.set->max_download_threads)
            t = s->env.set->max_download_threads;
        int rc = open_footers(s, t, err, errlen);
        if (rc < 0)
            return rc;
        return s->n_units;
    }
    s->n_units = s->n_files;
    s->unit_file = calloc((size_t)s->n_units + 1, sizeof(int));
    s->unit_rg = calloc((size_t)s->n_units + 1, sizeof(int));
    if (!s->unit_file || !s->unit_rg) {
        snprintf(err, errlen, "out of memory listing the files");
        return -ENOMEM;
    }
    for (int i = 0; i < s->n_units; i++)
        s->unit_file[i] = i;
    return s->n_units;
}

static int files_reader_create(eng_source *b, eng_reader **out)
{
    eng_reader *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return -ENOMEM;
    rd->s = (src_files *)b;
    *out = rd;
    return 0;
}

static void files_reader_destroy(eng_source *b, eng_reader *rd)
{
    src_files *s = (src_files *)b;
    if (!rd)
        return;
    ef_release(s->pf, &rd->blob);
    free(rd->fbuf);
    em_account(s->env.mem, -(int64_t)rd->fcap);
    for (int v = 0; v < SRC_N_VIRT; v++)
        ex_vec_clear(s->env.mem, &rd->vval[v]);
    free(rd->slots);
    free(rd);
}

static void files_start(eng_source *b)
{
    src_files *s = (src_files *)b;
    static const ef_ops ops = {pf_size, pf_fetch};
    /* as many units ahead as there are download threads: each worker
     * finds the next unit fetched while the downloads stay a step ahead;
     * a small file read whole counts as one; S3 only (see the top) */
    if (!s->s3 || ef_create_shelved(&s->pf, &ops, s, s->n_units, s->env.set->max_download_threads,
                                    s->env.set->max_download_threads, pf_budget(s), s->env.mem,
                                    s->env.shelf) < 0)
        s->pf = NULL; /* no reading ahead: the workers fetch everything */
}

static int files_read(eng_source *b, eng_reader *rd, int u, eng_scan_fn fn, void *arg, char *err,
                      size_t errlen)
{
    src_files *s = (src_files *)b;
    rd->fn = fn;
    rd->arg = arg;
    rd->err = err;
    rd->errlen = errlen;
    if (s->n_phys < s->plan->n_need) {
        if (!rd->slots && !(rd->slots = calloc((size_t)s->plan->n_need, sizeof(ex_vec)))) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        if (virt_values(s, rd, &s->files[s->unit_file[u]]) < 0) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        rd->ufn = fn;
        rd->uarg = arg;
        rd->fn = virt_fn;
        rd->arg = rd;
    }
    return s->kind == 0 ? run_parquet_unit(rd, u) : run_text_unit(rd, u);
}

static void files_stop(eng_source *b)
{
    ef_stop(((src_files *)b)->pf);
}

static void files_finish(eng_source *b)
{
    ef_destroy(&((src_files *)b)->pf);
}

static void files_destroy(eng_source *b)
{
    src_files *s = (src_files *)b;
    ef_destroy(&s->pf);
    for (int i = 0; i < s->n_files; i++) {
        efile *f = &s->files[i];
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
    free(s->files);
    eng_schema_free(&s->base.schema);
    free(s->unit_file);
    free(s->unit_rg);
    free(s->phys_need);
    free(s->vslot);
    eng_fail_deinit(&s->fail);
    if (s->own.destroy)
        s->own.destroy(s->own.impl);
    free(s);
}

static int files_unit_info(const eng_source *b, int u, eng_unit_info *out)
{
    const src_files *s = (const src_files *)b;
    if (u < 0 || u >= s->n_units)
        return -EINVAL;
    const efile *f = &s->files[s->unit_file[u]];
    out->path = f->path;
    out->rg = -1;
    out->bytes = f->size;
    if (s->kind == 0) {
        out->rg = s->unit_rg[u];
        int64_t all = pq_file_num_rows(f->pf), rows = pq_file_row_group_rows(f->pf, out->rg);
        if (all > 0 && rows >= 0)
            out->bytes = (uint64_t)((double)f->size * (double)rows / (double)all);
    }
    return 0;
}

void src__files_adopt(eng_source *b, const eng_s3_access *a)
{
    ((src_files *)b)->own = *a;
}

static const eng_source_ops files_ops = {
    .plan = files_plan,
    .reader_create = files_reader_create,
    .reader_destroy = files_reader_destroy,
    .start = files_start,
    .read = files_read,
    .stop = files_stop,
    .finish = files_finish,
    .destroy = files_destroy,
    .unit_info = files_unit_info,
};

/* The structure argument over a Parquet schema: its columns, in its order,
 * each in the files with the type it names (a different one is refused: the
 * query can CAST); Nullable or not may differ, the files' own is kept (their
 * NULLs stay NULLs). */
static int parquet_structure(eng_schema *sc, const eng_schema *want, const char *fname, char *err,
                             size_t errlen)
{
    eng_col *cols = calloc((size_t)want->n + 1, sizeof(eng_col));
    if (!cols) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    for (int k = 0; k < want->n && rc == 0; k++) {
        const eng_col *w = &want->cols[k];
        int i = 0;
        while (i < sc->n && strcmp(sc->cols[i].name, w->name) != 0)
            i++;
        if (i == sc->n) {
            snprintf(err, errlen, "column '%.100s' of the structure argument is not in %.600s",
                     w->name, fname);
            rc = -EINVAL;
            break;
        }
        ex_type ft = sc->cols[i].t, wt = w->t;
        if (ft.kind != wt.kind || ft.scale != wt.scale ||
            (ft.kind == EX_DECIMAL && ft.prec != wt.prec)) {
            char a[64], b[64];
            ex_type_name(&ft, a, sizeof(a));
            ex_type_name(&wt, b, sizeof(b));
            snprintf(err, errlen,
                     "column '%.100s' is %s in %.600s, not %s as the structure "
                     "argument says: give %s, or CAST it in the query",
                     w->name, a, fname, b, a);
            rc = -EINVAL;
            break;
        }
        cols[k] = sc->cols[i];
        sc->cols[i].name = NULL; /* moved */
    }
    if (rc < 0) {
        for (int k = 0; k < want->n; k++)
            free(cols[k].name);
        free(cols);
        return rc;
    }
    eng_schema_free(sc);
    sc->cols = cols;
    sc->n = want->n;
    return 0;
}

int src__files_open(eng_source **out, const eng_scan_env *env, const eng_tf_call *c,
                    const char *path, flist *l, bool s3, const char *bucket, const char *fmtarg,
                    char *err, size_t errlen)
{
    src_fargs a = {.format = fmtarg};
    return src__files_open_args(out, env, c, path, l, s3, bucket, &a, err, errlen);
}

int src__files_open_args(eng_source **out, const eng_scan_env *env, const eng_tf_call *c,
                         const char *path, flist *l, bool s3, const char *bucket,
                         const src_fargs *a, char *err, size_t errlen)
{
    const char *fmtarg = a->format;
    eng_schema given = {0};
    *out = NULL;
    src_files *s = calloc(1, sizeof(*s));
    if (!s) {
        src__flist_free(l);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->base.ops = &files_ops;
    s->env = *env;
    s->s3 = s3;
    snprintf(s->bucket, sizeof(s->bucket), "%s", bucket);
    eng_fail_init(&s->fail);
    if (env->unit) {
        /* a distributed query's units: only their files of the glob, in the
         * units' order */
        int nun = eng_scan_units(env), kept = 0;
        for (int k = 0; k < nun; k++) {
            if (src__unit_seen(env, k))
                continue;
            int keep = -1;
            for (int i = kept; i < l->n; i++)
                if (strcmp(l->f[i].path, env->unit[k].path) == 0)
                    keep = i;
            if (keep < 0) {
                snprintf(err, errlen,
                         "the file %s of a distributed query's work unit is no longer "
                         "listed by '%s': it was deleted or renamed during the query; "
                         "run the query again",
                         env->unit[k].path, path);
                src__flist_free(l);
                free(s);
                return -ENOENT;
            }
            efile t = l->f[kept];
            l->f[kept++] = l->f[keep];
            l->f[keep] = t;
        }
        for (int i = kept; i < l->n; i++)
            free(l->f[i].path);
        l->n = kept;
    }
    s->files = l->f;
    s->n_files = l->n;
    memset(l, 0, sizeof(*l));
    for (int i = 0; i < s->n_files; i++)
        pthread_mutex_init(&s->files[i].mu, NULL);
    s->base.files = (uint64_t)s->n_files;
    qsort(s->files, (size_t)s->n_files, sizeof(efile), fcmp);
    /* format */
    int kind, rc = 0;
    if (fmtarg) {
        kind = tx_format_of_arg(fmtarg);
        if (kind < 0) {
            snprintf(err, errlen,
                     "unknown input format '%s' (use Parquet, CSV, CSVWithNames, "
                     "TSV, TSVWithNames or JSONEachRow)",
                     fmtarg);
            rc = -EINVAL;
            goto fail;
        }
    } else {
        kind = tx_format_of_name(s->files[0].path);
        if (kind < 0) {
            snprintf(err, errlen,
                     "cannot tell the format of %s from its name: pass it, as in "
                     "%s('%s', 'Parquet')",
                     s->files[0].path, c->name, path);
            rc = -EINVAL;
            goto fail;
        }
    }
    s->kind = kind;
    if (a->compression) {
        int cd = tx_codec_of_arg(a->compression);
        if (cd < 0 || (kind == 0 && cd != TX_CODEC_NONE)) {
            snprintf(err, errlen,
                     cd < 0 ? "unknown compression '%s' of %s() (use auto, none, "
                              "gzip or zstd)"
                            : "compression '%s' of %s() applies to text files: "
                              "Parquet compresses inside the file; drop it",
                     a->compression, c->name);
            rc = -EINVAL;
            goto fail;
        }
        s->codec = (tx_codec)cd;
    }
    if (a->structure && (rc = src__structure_parse(a->structure, &given, err, errlen)) < 0)
        goto fail;
    /* schema from the first file, or the structure argument's */
    if (kind != 0 && a->structure) {
        s->base.schema = given;
        memset(&given, 0, sizeof(given));
    } else if (kind == 0) {
        rc = open_parquet(s, &s->files[0], err, errlen);
        if (rc == -ESTALE) /* changed between HEAD and footer: open it again, once */
            rc = open_parquet(s, &s->files[0], err, errlen);
        if (rc == 0 && schema_from_parquet(s->files[0].pf, &s->base.schema) < 0)
            rc = -ENOMEM;
        char nb[1200];
        if (rc == 0 && a->structure)
            rc = parquet_structure(&s->base.schema, &given, fname(s, &s->files[0], nb, sizeof(nb)),
                                   err, errlen);
    } else {
        uint8_t *text;
        size_t len;
        rc = load_text(s, &s->files[0], &text, &len, err, errlen);
        if (rc == 0) {
            char nb[1200];
            rc = tx_infer((tx_format)kind, fname(s, &s->files[0], nb, sizeof(nb)),
                          (const char *)text, len, &s->base.schema, err, errlen);
            free(text);
        }
    }
    if (rc == 0 && add_virtual_columns(&s->base.schema) < 0) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    eng_schema_free(&given);
    if (rc < 0)
        goto fail;
    *out = &s->base;
    return 0;
fail:
    eng_schema_free(&given);
    files_destroy(&s->base);
    return rc;
}
