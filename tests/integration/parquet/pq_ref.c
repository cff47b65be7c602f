/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_ref.c: the generator runner, the canonical value format and the value by
 * value comparison with DuckDB's dump (see pq_ref.h and gen.mjs).
 */
#include "pq_ref.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pqt_generate(h_env *env, const char *dir)
{
    char script[4096];
    if (h_source_path(script, sizeof(script), "tests/integration/parquet/gen.mjs") < 0) {
        fprintf(stderr,
                "cannot find tests/integration/parquet/gen.mjs (set RINGCACHE_SOURCE_DIR)\n");
        return -1;
    }
    char *argv[] = {"node", script, (char *)dir, NULL};
    h_proc *p;
    int rc = h_proc_start(env, &p, "gen", argv, NULL, NULL, 0);
    if (rc < 0) {
        if (rc == -ENOENT)
            h_skip("node is not installed (it runs the Parquet generator, gen.mjs)");
        fprintf(stderr, "cannot start node gen.mjs: %s\n", strerror(-rc));
        return -1;
    }
    int st = h_proc_wait(p, 120000);
    if (st == 77) {
        h_proc_print_log_tail(p, 5);
        h_skip("the Parquet generator needs npm packages that are missing (see its log above)");
    }
    if (st == 127)
        h_skip("node is not installed (it runs the Parquet generator, gen.mjs)");
    if (st != 0) {
        fprintf(stderr, "gen.mjs failed with status %d\n", st);
        h_proc_print_log_tail(p, 30);
        return -1;
    }
    return 0;
}

static int pqt_hex(const uint8_t *p, size_t n, char *buf, size_t cap)
{
    static const char digits[] = "0123456789ABCDEF";
    if (2 * n + 1 > cap)
        return -ENOSPC;
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = digits[p[i] >> 4];
        buf[2 * i + 1] = digits[p[i] & 15];
    }
    buf[2 * n] = '\0';
    return (int)(2 * n);
}

static int pqt_double(double d, char *buf, size_t cap)
{
    if (isnan(d))
        return snprintf(buf, cap, "nan");
    uint64_t bits;
    memcpy(&bits, &d, 8);
    return snprintf(buf, cap, "%016" PRIx64, bits);
}

static int pqt_decimal(const cb_column *c, uint32_t row, char *buf, size_t cap)
{
    unsigned __int128 mag;
    bool neg;
    if (c->info.precision <= 18) {
        int64_t v = ((const int64_t *)c->values)[row];
        neg = v < 0;
        mag = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    } else {
        cb_i128 v = ((const cb_i128 *)c->values)[row];
        __int128 x = (__int128)((unsigned __int128)(uint64_t)v.hi << 64 | v.lo);
        neg = x < 0;
        mag = neg ? (unsigned __int128)(-(x + 1)) + 1 : (unsigned __int128)x;
    }
    char digits[64];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(mag % 10));
        mag /= 10;
    } while (mag);
    int scale = c->info.scale;
    while (n <= scale)
        digits[n++] = '0';
    char out[80];
    int k = 0;
    if (neg)
        out[k++] = '-';
    for (int i = n - 1; i >= 0; i--) {
        out[k++] = digits[i];
        if (i == scale && scale > 0)
            out[k++] = '.';
    }
    out[k] = '\0';
    return snprintf(buf, cap, "%s", out);
}

int pqt_format(const cb_column *c, uint32_t row, char *buf, size_t cap)
{
    if (cb_column_is_null(c, row))
        return snprintf(buf, cap, "\\N");
    const void *v = c->values;
    static const int64_t ns_per[] = {1, 1000000, 1000, 1};
    switch (c->info.type) {
    case CB_BOOL: return snprintf(buf, cap, "%u", ((const uint8_t *)v)[row]);
    case CB_INT8: return snprintf(buf, cap, "%d", ((const int8_t *)v)[row]);
    case CB_INT16: return snprintf(buf, cap, "%d", ((const int16_t *)v)[row]);
    case CB_INT32: return snprintf(buf, cap, "%" PRId32, ((const int32_t *)v)[row]);
    case CB_INT64: return snprintf(buf, cap, "%" PRId64, ((const int64_t *)v)[row]);
    case CB_UINT8: return snprintf(buf, cap, "%u", ((const uint8_t *)v)[row]);
    case CB_UINT16: return snprintf(buf, cap, "%u", ((const uint16_t *)v)[row]);
    case CB_UINT32: return snprintf(buf, cap, "%" PRIu32, ((const uint32_t *)v)[row]);
    case CB_UINT64: return snprintf(buf, cap, "%" PRIu64, ((const uint64_t *)v)[row]);
    case CB_FLOAT: return pqt_double(((const float *)v)[row], buf, cap);
    case CB_DOUBLE: return pqt_double(((const double *)v)[row], buf, cap);
    case CB_DATE: return snprintf(buf, cap, "%" PRId32, ((const int32_t *)v)[row]);
    case CB_TIMESTAMP:
        return snprintf(buf, cap, "%" PRId64, ((const int64_t *)v)[row] * ns_per[c->info.unit]);
    case CB_TIME: {
        int64_t x = ((const int64_t *)v)[row];
        int64_t us = c->info.unit == CB_UNIT_MS   ? x * 1000
                     : c->info.unit == CB_UNIT_NS ? x / 1000
                                                  : x;
        return snprintf(buf, cap, "%" PRId64, us);
    }
    case CB_DECIMAL: return pqt_decimal(c, row, buf, cap);
    case CB_STRING:
    case CB_BINARY:
    case CB_LIST: { /* a LIST: its encoded elements (the manifests hold no lists) */
        size_t n;
        const uint8_t *p = cb_column_bytes(c, row, &n);
        return pqt_hex(p, n, buf, cap);
    }
    }
    return snprintf(buf, cap, "?");
}

static char *pqt_slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

typedef struct pqt_refcol {
    char *name;
    char **lines; /* rows entries, pointing into the buffer */
} pqt_refcol;

long pqt_compare(pq_file *f, const char *ref_path, const pq_read_opts *opts)
{
    size_t len;
    char *text = pqt_slurp(ref_path, &len);
    if (!text) {
        fprintf(stderr, "cannot read the reference %s\n", ref_path);
        return -1;
    }
    long rows = -1;
    int ncols = 0;
    pqt_refcol *cols = NULL;
    long rowi = 0;
    long result = -1;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (rows < 0) {
            rows = strtol(line + 5, NULL, 10);
            continue;
        }
        if (strncmp(line, "col ", 4) == 0 && (ncols == 0 || rowi == rows)) {
            pqt_refcol *nc = realloc(cols, (size_t)(ncols + 1) * sizeof(*cols));
            if (!nc)
                goto out;
            cols = nc;
            char *tab = strchr(line + 4, '\t');
            if (tab)
                *tab = '\0';
            cols[ncols].name = line + 4;
            cols[ncols].lines = calloc((size_t)rows + 1, sizeof(char *));
            ncols++;
            rowi = 0;
            continue;
        }
        if (ncols == 0 || rowi >= rows) {
            fprintf(stderr, "%s: malformed reference near '%.40s'\n", ref_path, line);
            goto out;
        }
        cols[ncols - 1].lines[rowi++] = line;
    }
    if (rows != pq_file_num_rows(f)) {
        fprintf(stderr, "%s: DuckDB reads %ld rows, we read %" PRId64 "\n", pq_file_name(f), rows,
                pq_file_num_rows(f));
        goto out;
    }
    if (!opts && ncols != pq_file_num_columns(f)) {
        fprintf(stderr, "%s: DuckDB reads %d columns, we read %d\n", pq_file_name(f), ncols,
                pq_file_num_columns(f));
        goto out;
    }
    /* First row of each row group. */
    int nrg = pq_file_num_row_groups(f);
    int64_t *first = calloc((size_t)nrg + 1, sizeof(int64_t));
    for (int g = 0; g < nrg; g++)
        first[g + 1] = first[g] + pq_file_row_group_rows(f, g);
    pq_reader *r;
    char err[PQ_MSG_MAX];
    if (pq_reader_create(&r, f, opts, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        free(first);
        goto out;
    }
    long compared = 0;
    cb_batch *b;
    int rc;
    char got[8192];
    while ((rc = pq_reader_next(r, &b)) > 0) {
        int g = pq_reader_row_group(r);
        for (uint32_t j = 0; j < b->n_cols; j++) {
            const cb_column *c = b->cols[j];
            const pqt_refcol *rc2 = NULL;
            for (int k = 0; k < ncols; k++)
                if (strcmp(cols[k].name, c->name) == 0)
                    rc2 = &cols[k];
            if (!rc2) {
                fprintf(stderr, "%s: column '%s' is not in DuckDB's dump\n", pq_file_name(f),
                        c->name);
                rc = -1;
                break;
            }
            if (c->n != b->n_rows) {
                fprintf(stderr, "%s: column '%s' has %u rows in a batch of %u\n", pq_file_name(f),
                        c->name, c->n, b->n_rows);
                rc = -1;
                break;
            }
            for (uint32_t i = 0; i < c->n; i++) {
                int64_t at = first[g] + i;
                pqt_format(c, i, got, sizeof(got));
                const char *want = rc2->lines[at];
                if (!want || strcmp(want, got) != 0) {
                    fprintf(stderr,
                            "%s: column '%s' (%s), row %" PRId64 " (row group %d): "
                            "DuckDB reads '%.200s', we read '%.200s'\n",
                            pq_file_name(f), c->name, cb_type_name(c->info.type), at, g,
                            want ? want : "(none)", got);
                    rc = -1;
                    break;
                }
                compared++;
            }
            if (rc < 0)
                break;
        }
        cb_batch_destroy(&b);
        if (rc < 0)
            break;
    }
    if (rc < 0 && pq_reader_error(r)[0])
        fprintf(stderr, "reader error: %s\n", pq_reader_error(r));
    pq_reader_destroy(&r);
    free(first);
    if (rc == 0)
        result = compared;
out:
    for (int k = 0; k < ncols; k++)
        free(cols[k].lines);
    free(cols);
    free(text);
    return result;
}

int pqt_manifest(const char *dir, char ***names)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/manifest.txt", dir);
    size_t len;
    char *text = pqt_slurp(path, &len);
    if (!text)
        return -ENOENT;
    int n = 0;
    char **out = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char **o = realloc(out, (size_t)(n + 1) * sizeof(char *));
        if (!o)
            break;
        out = o;
        out[n++] = strdup(line);
    }
    free(text);
    *names = out;
    return n;
}
