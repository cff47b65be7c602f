/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_table_footer.c: libFuzzer target for opening a part (the tail, the
 * footer checksum, the footer and directory parser) and reading every granule
 * of every column of it (checksums, codecs, block decoding, marks). The input
 * is the whole object, read through an in-memory range source. The footer
 * checksum would stop the fuzzer at the door, so when the input's first byte
 * is odd the target recomputes it after the fact (the parser then sees the
 * mutated footer).
 * Seeds: tests/fuzz/corpus/table_footer (small parts of every type).
 */
#include "tp_int.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 + TP_TAIL_SIZE)
        return 0;
    bool fix = data[0] & 1;
    data++;
    size--;
    uint8_t *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (fix) {
        uint64_t flen = tp__get32(buf + size - TP_TAIL_SIZE);
        if (flen <= size - TP_TAIL_SIZE)
            tp__put64(buf + size - TP_TAIL_SIZE + 8,
                      XXH3_64bits(buf + size - TP_TAIL_SIZE - flen, flen));
    }
    rs_source *src;
    if (tp_mem_source_create(&src, buf, size, "fuzz") < 0) {
        free(buf);
        return 0;
    }
    tp_reader *r;
    char err[512];
    if (tp_reader_open(&r, src, "fuzz", err, sizeof(err)) == 0) {
        const tp_part_meta *m = tp_reader_meta(r);
        uint32_t cols[TP_MAX_COLUMNS];
        uint32_t n = m->n_cols < 64 ? m->n_cols : 64;
        for (uint32_t i = 0; i < n; i++)
            cols[i] = i;
        cb_batch *b;
        if (m->granules && (uint64_t)m->rows * n < (1u << 22) &&
            tp_reader_read(r, cols, n, 0, m->granules, &b, err, sizeof(err)) == 0)
            cb_batch_destroy(&b);
        tp_granule_range *gr;
        size_t ng;
        if (tp_prune(r, NULL, &gr, &ng, err, sizeof(err)) == 0)
            free(gr);
        tp_reader_destroy(&r);
    }
    rs_destroy(&src);
    free(buf);
    return 0;
}
