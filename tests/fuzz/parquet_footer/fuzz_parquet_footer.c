/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_parquet_footer.c: libFuzzer target for opening a Parquet file (the tail
 * read, magic and footer-length checks, the Thrift footer, the schema mapping,
 * statistics and pruning) and, when the file is small enough to be read in a
 * fuzzer's memory budget, reading every row group. The input is the whole
 * file, served by an in-memory byte-range source.
 * Seeds: tests/fuzz/corpus/parquet_footer (small DuckDB and hyparquet files).
 * Run: ./parquet_footer -max_total_time=30 CORPUS_COPY
 */
#include "parquet.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct mem_src {
    const uint8_t *data;
} mem_src;

static int mem_read(void *impl, const rs_range *r, size_t n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const mem_src *m = impl;
    for (size_t i = 0; i < n; i++)
        memcpy(r[i].buf, m->data + r[i].offset, (size_t)r[i].length);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const rs_ops ops = {.read_ranges = mem_read};
    mem_src m = {data};
    rs_source *src;
    if (rs_source_create(&src, &ops, &m, "fuzz.parquet", size, NULL) < 0)
        return 0;
    char err[PQ_MSG_MAX];
    /* A small tail read so both footer paths (one read, two reads) run. */
    pq_open_opts oo = {.footer_read = size > 64 && (data[0] & 1) ? 64 : 0, .max_footer = 1 << 20};
    pq_file *f;
    if (pq_file_open(&f, src, &oo, err, sizeof(err)) == 0) {
        int64_t rows = 0;
        for (int g = 0; g < pq_file_num_row_groups(f); g++)
            rows += pq_file_row_group_rows(f, g);
        pq_stats st;
        for (int g = 0; g < pq_file_num_row_groups(f); g++)
            for (int c = 0; c < pq_file_num_columns(f); c++)
                pq_file_stats(f, g, c, &st);
        if (pq_file_num_columns(f) > 0) {
            pq_pred p = {.column = 0, .op = PQ_GE, .value = {.i = 3, .len = 0}};
            for (int g = 0; g < pq_file_num_row_groups(f); g++)
                (void)pq_file_row_group_may_match(f, g, &p, 1);
        }
        /* Row counts bound the columns allocated: read only small files. */
        if (rows * (pq_file_num_columns(f) + 1) <= (1 << 20)) {
            pq_read_opts o;
            pq_read_opts_init(&o);
            o.max_page_bytes = 4u << 20;
            o.keep_dictionary = size & 1;
            pq_reader *r;
            if (pq_reader_create(&r, f, &o, err, sizeof(err)) == 0) {
                cb_batch *b;
                while (pq_reader_next(r, &b) > 0) {
                    for (uint32_t c = 0; c < b->n_cols; c++)
                        (void)cb_column_materialize(b->cols[c]);
                    cb_batch_destroy(&b);
                }
                pq_reader_destroy(&r);
            }
        }
        pq_file_destroy(&f);
    }
    rs_destroy(&src);
    return 0;
}
