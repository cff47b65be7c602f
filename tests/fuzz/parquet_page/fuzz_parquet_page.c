/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_parquet_page.c: libFuzzer target for the column chunk decoder (page
 * headers, codecs, levels, every encoding, dictionaries). The first 8 bytes
 * of the input describe the column, the rest is the chunk:
 *
 *   [0] physical type % 8     [1] logical kind % 9 (see kinds[])
 *   [2] bit 0: OPTIONAL, bit 1: keep dictionaries
 *   [3] codec % 8             [4..5] rows (LE, at most 65535)
 *   [6] FIXED_LEN_BYTE_ARRAY width % 20   [7] unused
 *
 * Seeds: tests/fuzz/corpus/parquet_page (chunks cut out of generated files).
 * Run: ./parquet_page -max_total_time=30 CORPUS_COPY
 */
#include "parquet_int.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    pq__schema_el el;
    memset(&el, 0, sizeof(el));
    el.type = data[0] % 8;
    el.converted_type = -1;
    el.type_length = data[6] % 20;
    switch (data[1] % 9) {
    case 1: el.converted_type = PQ__CT_UTF8; break;
    case 2:
        el.converted_type = PQ__CT_DECIMAL;
        el.precision = 18;
        el.scale = 2;
        break;
    case 3: el.converted_type = PQ__CT_DATE; break;
    case 4: el.converted_type = PQ__CT_TIMESTAMP_MILLIS; break;
    case 5: el.converted_type = data[0] & 8 ? PQ__CT_UINT_8 : PQ__CT_UINT_64; break;
    case 6: el.lt = PQ__LT_FLOAT16; break;
    case 7:
        el.converted_type = PQ__CT_DECIMAL;
        el.precision = 38;
        el.scale = 4;
        break;
    case 8: el.converted_type = PQ__CT_INT_16; break;
    default: break;
    }
    cb_typeinfo t;
    const char *why;
    if (pq__map_type(&el, &t, &why) < 0)
        return 0;
    pq__coldesc d = {
        .file = "fuzz.parquet",
        .name = "c",
        .physical = (pq_physical)el.type,
        .type_length = el.type_length,
        .type = t,
        .nullable = data[2] & 1,
        .codec = data[3] % 8,
        .num_rows = (uint32_t)(data[4] | data[5] << 8),
        .keep_dictionary = (data[2] & 2) != 0,
        .max_page_bytes = 1u << 20,
    };
    cb_column *c = NULL;
    char err[PQ_MSG_MAX];
    if (pq__decode_chunk(&d, data + 8, size - 8, &c, err, sizeof(err)) == 0) {
        /* Touch every value so bad offsets or indices show under ASan. */
        size_t sum = 0;
        for (uint32_t i = 0; i < c->n; i++) {
            if (t.type == CB_STRING || t.type == CB_BINARY) {
                size_t len;
                const uint8_t *p = cb_column_bytes(c, i, &len);
                if (len)
                    sum += p[len - 1];
            }
        }
        (void)sum;
        cb_column_destroy(&c);
    }
    return 0;
}
