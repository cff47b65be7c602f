/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_reader.c: reading row groups of an open Parquet file (parquet.h). For
 * each row group that survives pruning, the byte ranges of the requested
 * column chunks are computed, sorted and coalesced (a gap up to coalesce_gap
 * is read rather than paying another request; a merged range never grows past
 * coalesce_max), all fetched in one rs_read_ranges() call (so the source keeps
 * them in flight at once), then each chunk is decoded into a column.
 *
 *   chunks:   [a....]   [b..]            [c......]
 *   gap <= 1 MiB: ---------- one range ----------   (when c is within the gap)
 *
 * A chunk spans from its dictionary page (when there is one) or its first data
 * page, for total_compressed_size bytes.
 */
#include "parquet_int.h"

#include "eng_types.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pq_reader {
    pq_file *f;
    int *cols;
    size_t n_cols;
    int *rgs; /* row groups to read, after pruning */
    int n_rgs;
    int next;
    int cur;
    uint64_t gap, max;
    bool keep_dict;
    uint64_t max_page;
    pq_fetcher fetcher;  /* zero: read from the source */
    pq__scratch scratch; /* decoder buffers, kept across row groups */
    uint8_t *fetch;      /* fetched ranges, kept across row groups */
    size_t fetch_cap;
    pq_reader_stats stats;
    char err[PQ_MSG_MAX];
};

typedef struct pq__want {
    uint64_t off, len;
    size_t col; /* position in r->cols */
    int group;  /* merged range it belongs to */
} pq__want;

void pq_read_opts_init(pq_read_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->keep_dictionary = true;
}

static int pq__rerr(pq_reader *r, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int pq__rerr(pq_reader *r, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof(r->err), fmt, ap);
    va_end(ap);
    return rc;
}

int pq_reader_create(pq_reader **out, pq_file *f, const pq_read_opts *opts, char *err,
                     size_t errlen)
{
    *out = NULL;
    pq_read_opts def;
    if (!opts) {
        pq_read_opts_init(&def);
        opts = &def;
    }
    pq_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->f = f;
    r->cur = -1;
    r->gap = opts->coalesce_gap ? opts->coalesce_gap : (1u << 20);
    r->max = opts->coalesce_max ? opts->coalesce_max : (64u << 20);
    r->keep_dict = opts->keep_dictionary;
    r->max_page = opts->max_page_bytes;
    if (opts->fetcher)
        r->fetcher = *opts->fetcher;
    int nc = pq_file_num_columns(f), nrg = pq_file_num_row_groups(f);
    r->n_cols = opts->columns ? opts->n_columns : (size_t)nc;
    r->cols = calloc(r->n_cols ? r->n_cols : 1, sizeof(int));
    r->rgs = calloc(nrg ? (size_t)nrg : 1, sizeof(int));
    if (!r->cols || !r->rgs) {
        pq_reader_destroy(&r);
        return -ENOMEM;
    }
    for (size_t i = 0; i < r->n_cols; i++) {
        int c = opts->columns ? opts->columns[i] : (int)i;
        if (c < 0 || c >= nc) {
            if (err && errlen)
                snprintf(err, errlen,
                         "%s: column index %d is out of range (the file has %d "
                         "columns)",
                         pq_file_name(f), c, nc);
            pq_reader_destroy(&r);
            return -ERANGE;
        }
        const pq_column_info *ci = pq_file_column(f, c);
        if (ci->nested) {
            if (err && errlen)
                snprintf(err, errlen,
                         "%s: column '%s' is %s, which this reader does not read yet (leave it "
                         "out of the query: the file's other columns can be read)",
                         pq_file_name(f), ci->name, ci->nested);
            pq_reader_destroy(&r);
            return -ENOTSUP;
        }
        r->cols[i] = c;
    }
    for (size_t i = 0; i < opts->n_preds; i++) {
        if (opts->preds[i].column < 0 || opts->preds[i].column >= nc) {
            if (err && errlen)
                snprintf(err, errlen,
                         "%s: a predicate names column index %d, out of range (the "
                         "file has %d columns)",
                         pq_file_name(f), opts->preds[i].column, nc);
            pq_reader_destroy(&r);
            return -ERANGE;
        }
    }
    int begin = opts->rg_begin, end = opts->rg_end;
    if (begin == 0 && end == 0)
        end = nrg;
    if (begin < 0)
        begin = 0;
    if (end > nrg)
        end = nrg;
    for (int g = begin; g < end; g++) {
        int ok = opts->n_preds ? pq_file_row_group_may_match(f, g, opts->preds, opts->n_preds) : 1;
        if (ok > 0)
            r->rgs[r->n_rgs++] = g;
        else
            r->stats.row_groups_pruned++;
    }
    *out = r;
    return 0;
}

void pq_reader_destroy(pq_reader **r)
{
    if (!r || !*r)
        return;
    free((*r)->cols);
    free((*r)->rgs);
    free((*r)->fetch);
    pq__scratch_deinit(&(*r)->scratch);
    free(*r);
    *r = NULL;
}

int pq_reader_row_group(const pq_reader *r)
{
    return r->cur;
}
const char *pq_reader_error(const pq_reader *r)
{
    return r->err;
}
void pq_reader_stats_get(const pq_reader *r, pq_reader_stats *out)
{
    *out = r->stats;
}

static bool pq__grow_fetch(pq_reader *r, size_t need)
{
    /* Not realloc: the old bytes are not needed, so do not copy them. */
    free(r->fetch);
    r->fetch = malloc(need ? need : 1);
    r->fetch_cap = r->fetch ? need : 0;
    return r->fetch != NULL;
}

static int pq__want_cmp(const void *a, const void *b)
{
    const pq__want *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Fills w[0..n) (each column's chunk and the merged range it lands in) and
 * ranges[0..*ng) (offsets and lengths, bufs untouched) for row group rg. */
static int pq__plan(const pq_file *f, int rg, const int *cols, size_t n, uint64_t gap, uint64_t max,
                    pq__want *w, rs_range *ranges, size_t *ng_out, char *err, size_t errlen)
{
    const char *name = pq_file_name(f);
    uint64_t fsize = rs_size(pq__file_source(f));
    for (size_t i = 0; i < n; i++) {
        const pq__chunk_meta *cm = pq__file_chunk(f, rg, cols[i]);
        int64_t start = cm->data_page_offset;
        if (cm->dictionary_page_offset > 0 && cm->dictionary_page_offset < start)
            start = cm->dictionary_page_offset;
        uint64_t len = (uint64_t)cm->total_compressed_size;
        if (start < 0 || (uint64_t)start > fsize || len > fsize - (uint64_t)start) {
            if (err && errlen)
                snprintf(err, errlen,
                         "%s: column '%s' of row group %d spans bytes %" PRId64 "..+%" PRIu64
                         ", outside the file (%" PRIu64 " bytes)",
                         name, pq_file_column(f, cols[i])->name, rg, start, len, fsize);
            return -EBADMSG;
        }
        w[i].off = (uint64_t)start;
        w[i].len = len;
        w[i].col = i;
    }
    /* Coalesce: sort by offset, merge while the gap and the size allow. */
    pq__want *sorted = malloc((n ? n : 1) * sizeof(*sorted));
    if (!sorted) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", name);
        return -ENOMEM;
    }
    memcpy(sorted, w, n * sizeof(*w));
    qsort(sorted, n, sizeof(*sorted), pq__want_cmp);
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        pq__want *x = &sorted[i];
        if (x->len == 0) {
            x->group = -1;
            w[x->col].group = -1;
            continue;
        }
        if (ng > 0) {
            rs_range *g = &ranges[ng - 1];
            uint64_t gend = g->offset + g->length, xend = x->off + x->len;
            uint64_t nend = xend > gend ? xend : gend;
            if (x->off <= gend + gap && nend - g->offset <= max) {
                g->length = nend - g->offset;
                w[x->col].group = (int)ng - 1;
                continue;
            }
        }
        ranges[ng].offset = x->off;
        ranges[ng].length = x->len;
        ranges[ng].buf = NULL;
        w[x->col].group = (int)ng;
        ng++;
    }
    free(sorted);
    *ng_out = ng;
    return 0;
}

int pq_row_group_ranges(const pq_file *f, int rg, const int *cols, size_t n_cols, uint64_t gap,
                        uint64_t max, rs_range **out, size_t *n, uint64_t *total, char *err,
                        size_t errlen)
{
    *out = NULL;
    *n = 0;
    *total = 0;
    int nc = pq_file_num_columns(f);
    if (rg < 0 || rg >= pq_file_num_row_groups(f))
        return -ERANGE;
    for (size_t i = 0; i < n_cols; i++)
        if (cols[i] < 0 || cols[i] >= nc)
            return -ERANGE;
    pq__want *w = calloc(n_cols ? n_cols : 1, sizeof(*w));
    rs_range *ranges = calloc(n_cols ? n_cols : 1, sizeof(*ranges));
    if (!w || !ranges) {
        free(w);
        free(ranges);
        return -ENOMEM;
    }
    size_t ng = 0;
    int rc = pq__plan(f, rg, cols, n_cols, gap ? gap : (1u << 20), max ? max : (64u << 20), w,
                      ranges, &ng, err, errlen);
    free(w);
    if (rc < 0) {
        free(ranges);
        return rc;
    }
    for (size_t g = 0; g < ng; g++)
        *total += ranges[g].length;
    *out = ranges;
    *n = ng;
    return 0;
}

/* A LIST column chunk: its leaf decoded as entries (with their levels),
 * then put together into one encoded Array per row (colbatch.h CB_LIST). A
 * NULL list reads as [] (an Array is never NULL, as in ClickHouse); a NULL
 * element is a NULL of Array(Nullable(T)). */
static int pq__read_list(pq_reader *r, const pq_column_info *ci, pq__coldesc *d,
                         const pq__chunk_meta *cm, const uint8_t *p, size_t len, uint32_t rows,
                         cb_column **out)
{
    *out = NULL;
    if (cm->num_values < 0 || cm->num_values > (int64_t)(UINT32_MAX / 2))
        return pq__rerr(r, -EBADMSG,
                        "%s: column '%s' of row group %d says it has %" PRId64 " values", d->file,
                        ci->name, d->rg, cm->num_values);
    cb_typeinfo et = ci->type;
    et.type = ci->type.elem;
    et.elem = 0;
    et.elem_null = false;
    d->type = et;
    d->nullable = false;
    d->max_rep = 1;
    d->max_def = ci->max_def;
    d->num_rows = (uint32_t)cm->num_values;
    d->keep_dictionary = false;
    cb_column *leaf = NULL;
    int rc = pq__decode_chunk_with(d, p, len, &r->scratch, &leaf, r->err, sizeof(r->err));
    if (rc < 0)
        return rc;
    ex_vec ev;
    if ((rc = ex_vec_from_column(NULL, leaf, &ev)) < 0) {
        cb_column_destroy(&leaf);
        return pq__rerr(r, rc == -ERANGE ? -ENOTSUP : rc, "%s: column '%s' of row group %d: %s",
                        d->file, ci->name, d->rg,
                        rc == -ERANGE ? "a Decimal element needs more than 18 digits"
                                      : "out of memory");
    }
    ex_type at = ex_type_of_column(&ci->type, false);
    ex_type xt = ex_arr_elem(&at);
    cb_column *c = NULL;
    if ((rc = cb_column_create(&c, &ci->type, ci->name, rows)) < 0)
        goto done;
    ex_bytes buf = {0};
    const uint8_t *reps = r->scratch.reps, *defs = r->scratch.defs;
    uint32_t n = leaf->n, row = 0, cnt = 0;
    size_t start = 0;
    for (uint32_t k = 0; k <= n && rc == 0; k++) {
        if (k == n || reps[k] == 0) {
            if (k > 0) { /* the row so far is done */
                if (row >= rows) {
                    rc = pq__rerr(r, -EBADMSG,
                                  "%s: column '%s' of row group %d holds more lists "
                                  "than the row group's %" PRIu32 " rows",
                                  d->file, ci->name, d->rg, rows);
                    break;
                }
                ex_arr_end(&buf, start, cnt);
                c->offsets[++row] = (uint32_t)buf.n;
            }
            if (k == n)
                break;
            cnt = 0;
            if ((rc = ex_arr_begin(&buf, &start)) < 0)
                break;
        } else if (k == 0) {
            rc = pq__rerr(r, -EBADMSG, "%s: column '%s' of row group %d starts inside a list",
                          d->file, ci->name, d->rg);
            break;
        }
        if (defs[k] < ci->def_elem)
            continue; /* an empty or NULL list */
        ex_arr_val v;
        ex_arr_val_of(&ev, k, &v);
        if ((rc = ex_arr_put(&buf, &xt, &v)) < 0)
            break;
        cnt++;
    }
    if (rc == 0 && row != rows)
        rc =
            pq__rerr(r, -EBADMSG,
                     "%s: column '%s' of row group %d holds %" PRIu32 " lists for %" PRIu32 " rows",
                     d->file, ci->name, d->rg, row, rows);
    if (rc == 0 && buf.n && (rc = cb_column_reserve_data(c, buf.n)) == 0)
        memcpy(c->data, buf.p, buf.n);
    ex_bytes_free(&buf);
done:
    if (rc == -ENOMEM || rc == -E2BIG)
        pq__rerr(r, rc, "%s: column '%s' of row group %d: %s", d->file, ci->name, d->rg,
                 rc == -E2BIG ? "its arrays take more than 4 GiB" : "out of memory");
    ex_vec_clear(NULL, &ev);
    cb_column_destroy(&leaf);
    if (rc < 0) {
        cb_column_destroy(&c);
        return rc;
    }
    *out = c;
    return 0;
}

int pq_reader_next(pq_reader *r, cb_batch **out)
{
    *out = NULL;
    if (r->next >= r->n_rgs)
        return 0;
    int rg = r->rgs[r->next++];
    r->cur = rg;
    pq_file *f = r->f;
    rs_source *src = pq__file_source(f);
    const char *name = pq_file_name(f);
    int64_t rows = pq_file_row_group_rows(f, rg);
    size_t n = r->n_cols;
    pq__want *w = calloc(n ? n : 1, sizeof(*w));
    rs_range *ranges = calloc(n ? n : 1, sizeof(*ranges));
    cb_batch *b = NULL;
    int rc = cb_batch_create(&b, (uint32_t)rows, (uint32_t)n);
    if (!w || !ranges || rc < 0) {
        rc = pq__rerr(r, -ENOMEM, "%s: out of memory reading row group %d", name, rg);
        goto out;
    }
    size_t ng = 0;
    rc = pq__plan(f, rg, r->cols, n, r->gap, r->max, w, ranges, &ng, r->err, sizeof(r->err));
    if (rc < 0)
        goto out;
    r->stats.ranges_requested += n;
    r->stats.ranges_fetched += ng;
    if (r->fetcher.fetch) {
        rc = r->fetcher.fetch(r->fetcher.arg, f, rg, ranges, ng, r->err, sizeof(r->err));
        if (rc < 0)
            goto out; /* the hook's code and sentence, unchanged (-ESTALE above all) */
        goto fetched;
    }
    /* One buffer for all ranges, reused by the next row group. */
    uint64_t total = 0;
    for (size_t g = 0; g < ng; g++)
        total += ranges[g].length;
    if (total > SIZE_MAX / 2 || (total > r->fetch_cap && !pq__grow_fetch(r, (size_t)total))) {
        rc = pq__rerr(r, -ENOMEM, "%s: out of memory for %" PRIu64 " bytes of row group %d", name,
                      total, rg);
        goto out;
    }
    total = 0;
    for (size_t g = 0; g < ng; g++) {
        ranges[g].buf = r->fetch + total;
        total += ranges[g].length;
    }
    rc = rs_read_ranges(src, ranges, ng, r->err, sizeof(r->err));
    if (rc < 0)
        goto out; /* the source's code and sentence, unchanged (-ESTALE above all) */
fetched:
    for (size_t g = 0; g < ng; g++)
        r->stats.bytes_fetched += ranges[g].length;
    for (size_t i = 0; i < n; i++) {
        const pq_column_info *ci = pq_file_column(f, r->cols[i]);
        const pq__chunk_meta *cm = pq__file_chunk(f, rg, r->cols[i]);
        pq__coldesc d = {
            .file = name,
            .name = ci->name,
            .rg = rg,
            .physical = ci->physical,
            .type_length = ci->type_length,
            .type = ci->type,
            .nullable = ci->nullable,
            .codec = cm->codec,
            .num_values = cm->num_values,
            .num_rows = (uint32_t)rows,
            .keep_dictionary = r->keep_dict,
            .max_page_bytes = r->max_page,
        };
        /* A hint for string buffers, trusted only within reason. */
        uint64_t hint = cm->total_uncompressed_size > 0 ? (uint64_t)cm->total_uncompressed_size : 0;
        if (hint > 64 * w[i].len || hint > (256u << 20))
            hint = 0;
        d.size_hint = (size_t)hint;
        const uint8_t *p = (const uint8_t *)"";
        size_t len = 0;
        if (w[i].group >= 0) {
            const rs_range *g = &ranges[w[i].group];
            p = (const uint8_t *)g->buf + (w[i].off - g->offset);
            len = (size_t)w[i].len;
        }
        if (ci->type.type == CB_LIST) {
            rc = pq__read_list(r, ci, &d, cm, p, len, (uint32_t)rows, &b->cols[i]);
            if (rc < 0)
                goto out;
            continue;
        }
        rc = pq__decode_chunk_with(&d, p, len, &r->scratch, &b->cols[i], r->err, sizeof(r->err));
        if (rc < 0)
            goto out;
    }
    r->stats.row_groups_read++;
    *out = b;
    b = NULL;
    rc = 1;
out:
    free(ranges);
    free(w);
    cb_batch_destroy(&b);
    return rc;
}

size_t pq_reader_mem(const pq_reader *r)
{
    const pq__scratch *s = &r->scratch;
    return s->page_cap + s->levels_cap + s->idx_cap + s->tmp_cap + s->cur_cap + r->fetch_cap;
}
