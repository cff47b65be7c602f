/* SPDX-License-Identifier: Apache-2.0
 *
 * test_pq_chunk.c: the column chunk decoder (pq__decode_chunk) on hand-built
 * pages: PLAIN with and without nulls, v1 levels (RLE and the deprecated
 * BIT_PACKED), v2 pages with compressed values and uncompressed levels,
 * dictionaries kept as indices, a writer's fallback from dictionary to PLAIN
 * in the middle of a chunk, INT96, decimals in byte arrays, FLOAT16,
 * BYTE_STREAM_SPLIT; and the lies: an index out of the dictionary, a page
 * size past the chunk, too many values, a missing dictionary, a chunk that
 * ends early. Each error names the file and the column.
 */
#include "parquet_int.h"
#include "tw.h"

#include <errno.h>
#include <setjmp.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static pq__coldesc desc(pq_physical ph, cb_type t, bool nullable, uint32_t rows)
{
    pq__coldesc d = {
        .file = "unit.parquet",
        .name = "c",
        .physical = ph,
        .type = {.type = t},
        .nullable = nullable,
        .codec = PQ__CODEC_UNCOMPRESSED,
        .num_rows = rows,
        .keep_dictionary = true,
    };
    return d;
}

static int decode(const pq__coldesc *d, const tw *w, cb_column **out, char *err, size_t errlen)
{
    int rc = pq__decode_chunk(d, w->buf, w->len, out, err, errlen);
    if (rc < 0)
        fprintf(stderr, "decode: %s\n", err);
    return rc;
}

/* Page body builders. */
static size_t levels_rle(uint8_t *b, const uint8_t *lv, size_t n)
{
    /* One bit-packed run of ceil(n/8) groups, with the v1 4-byte prefix. */
    size_t groups = (n + 7) / 8;
    uint32_t len = (uint32_t)(1 + groups);
    memcpy(b, &len, 4);
    b[4] = (uint8_t)(groups << 1 | 1);
    memset(b + 5, 0, groups);
    for (size_t i = 0; i < n; i++)
        b[5 + i / 8] |= (uint8_t)(lv[i] << (i % 8));
    return 4 + len;
}

static void test_plain_required_int32(void **state)
{
    (void)state;
    int32_t v[4] = {1, -2, 300000, INT32_MIN};
    tw w = {0};
    tw_page_v1(&w, 16, 16, 4, PQ__ENC_PLAIN);
    tw_bytes(&w, v, 16);
    pq__coldesc d = desc(PQ_INT32, CB_INT32, false, 4);
    cb_column *c;
    char err[PQ_MSG_MAX];
    assert_int_equal(decode(&d, &w, &c, err, sizeof(err)), 0);
    assert_int_equal(c->n, 4);
    assert_null(c->validity);
    assert_memory_equal(c->values, v, 16);
    cb_column_destroy(&c);
    /* The same page narrowed to int8 (INT_8): wraps as the writer meant. */
    d.type.type = CB_INT8;
    assert_int_equal(decode(&d, &w, &c, err, sizeof(err)), 0);
    assert_int_equal(((int8_t *)c->values)[1], -2);
    cb_column_destroy(&c);
}

static void test_plain_optional_int64_with_nulls(void **state)
{
    (void)state;
    uint8_t lv[6] = {1, 0, 0, 1, 1, 0};
    int64_t v[3] = {10, -20, 30};
    uint8_t body[64];
    size_t n = levels_rle(body, lv, 6);
    memcpy(body + n, v, 24);
    n += 24;
    tw w = {0};
    tw_page_v1(&w, (int32_t)n, (int32_t)n, 6, PQ__ENC_PLAIN);
    tw_bytes(&w, body, n);
    pq__coldesc d = desc(PQ_INT64, CB_INT64, true, 6);
    cb_column *c;
    char err[PQ_MSG_MAX];
    assert_int_equal(decode(&d, &w, &c, err, sizeof(err)), 0);
    assert_int_equal(c->null_count, 3);
    const int64_t *x = c->values;
    assert_false(cb_column_is_null(c, 0));
    assert_true(cb_column_is_null(c, 1));
    assert_true(cb_column_is_null(c, 2));
    assert_true(cb_column_is_null(c, 5));
    assert_int_equal(x[0], 10);
    assert_int_equal(x[1], 0);
    assert_int_equal(x[3], -20);
    assert_int_equal(x[4], 30);
    cb_column_destroy(&c);
}

static void test_bit_packed_levels(void **state)
{
    (void)state;
    /* Deprecated BIT_PACKED levels: MSB first, no length prefix. */
    uint8_t body[16] = {0xa0}; /* 1 0 1 0 0 0 0 0 */
    int32_t v[2] = {5, 6};
    memcpy(body + 1, v, 8);
    tw w = {0};
    tw_i32(&w, 1, 0);
    tw_i32(&w, 2, 9);
    tw_i32(&w, 3, 9);
    tw_begin(&w, 5);
    tw_i32(&w, 1, 4);
    tw_i32(&w, 2, PQ__ENC_PLAIN);
    tw_i32(&w, 3, PQ__ENC_BIT_PACKED);
    tw_end(&w);
    tw_byte(&w, 0);
    tw_bytes(&w, body, 9);
    pq__coldesc d = desc(PQ_INT32, CB_INT32, true, 4);
    cb_column *c;
    char err[PQ_MSG_MAX];
    assert_int_equal(decode(&d, &w, &c, err, sizeof(err)), 0);
    assert_int_equal(c->null_count, 2);
    assert_int_equal(((int32_t *)c->values)[0], 5);
    assert_int_equal(((int32_t *)c->values)[2], 6);
    assert_true(cb_column_is_null(c, 3));
    cb_column_destroy(&c);
}

/* A dictionary page of `n` strings. */
static void dict_page(tw *w, const char *const *s, int n)
{
    uint8_t body[256];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        uint32_t l = (uint32_t)strlen(s[i]);
        memcpy(body + len, &l, 4);
        memcpy(body + len + 4, s[i], l);
        len += 4 + l;
    }
    tw_page_dict(w, (int32_t)len, (int32_t)len, n);
    tw_bytes(w, body, len);
}

static void test_dictionary_then_plain_fallback(void **state)
{
    (void)state;
    static const char *const dict[] = {"apple", "", "cherry"};
    tw w = {0};
    dict_page(&w, dict, 3);
    /* Page 1: RLE_DICTIONARY, rows: 2 null 0 1 */
    uint8_t lv[4] = {1, 0, 1, 1};
    uint8_t body[64];
    size_t n = levels_rle(body, lv, 4);
    body[n++] = 2;                            /* bit width */
    body[n++] = 0x03;                         /* one bit-packed group */
    body[n++] = 0x02 | 0x00 << 2 | 0x01 << 4; /* 2, 0, 1 */
    body[n++] = 0;
    tw_page_v1(&w, (int32_t)n, (int32_t)n, 4, PQ__ENC_RLE_DICTIONARY);
    tw_bytes(&w, body, n);
    pq__coldesc d = desc(PQ_BYTE_ARRAY, CB_STRING, true, 4);
    cb_column *c;
    char err[PQ_MSG_MAX];
    assert_int_equal(decode(&d, &w, &c, err, sizeof(err)), 0);
    assert_non_null(c->dict);
    assert_int_equal(c->dict->n, 3);
    assert_int_equal(c->indices[0], 2);
    assert_int_equal(c->indices[2], 0);
    assert_true(cb_column_is_null(c, 1));
    cb_column_destroy(&c);

    /* Page 2 falls back to PLAIN: the chunk becomes plain strings. */
    d.num_rows = 6;
    uint8_t lv2[2] = {1, 1};
    size_t m = levels_rle(body, lv2, 2);
    uint32_t l = 4;
    memcpy(body + m, &l, 4);
    memcpy(body + m + 4, "date", 4);
    l = 3;
    memcpy(body + m + 8, &l, 4);
    memcpy(body + m + 12, "egg", 3);
    m += 15;
    tw_page_v1(&w, (int32_t)m, (int32_t)m, 2, PQ__ENC_PLAIN);
    tw_bytes(&w, body, m);
    assert_int_equal(decode(&d, &w, &c, err, sizeof(err)), 0);
    assert_null(c->dict);
    static const char *const want[] = {"cherry", NULL, "apple", "", "date", "egg"};
    for (uint32_t i = 0; i < 6; i++) {
        size_t len;
        const uint8_t *p = cb_column_bytes(c, i, &len);
        if (!want[i]) {
            assert_true(cb_column_is_null(c, i));
            continue;
        }
        assert_int_equal(len, strlen(want[i]));
        assert_memory_equal(p, want[i], len);
    }
    cb_column_destroy(&c);

    /* Not keeping dictionaries: plain from the start, same strings. */
    d.num_rows = 4;
    d.keep_dictionary = false;
    tw w1 = {0};
    dict_page(&w1, dict, 3);
    tw_page_v1(&w1, (int32_t)n, (int32_t)n, 4, PQ__ENC_RLE_DICTIONARY);
    n = levels_rle(body, lv, 4);
    body[n++] = 2;
    body[n++] = 0x03;
    body[n++] = 0x12;
    body[n++] = 0;
    tw_bytes(&w1, body, n);
    assert_int_equal(decode(&d, &w1, &c, err, sizeof(err)), 0);
    assert_null(c->dict);
    size_t len;
    const uint8_t *p = cb_column_bytes(c, 0, &len);
    assert_int_equal(len, 6);
    assert_memory_equal(p, "cherry", 6);
    cb_column_destroy(&c);
}

static void test_dictionary_index_out_of_range(void **state)
{
    (void)state;
    static const char *const dict[] = {"a", "b"};
    tw w = {0};
    dict_page(&w, dict, 2);
    uint8_t body[] = {3, 0x03, 0x05, 0, 0}; /* width 3: values 5, 0, ... */
    tw_page_v1(&w, 5, 5, 2, PQ__ENC_PLAIN_DICTIONARY);
    tw_bytes(&w, body, 5);
    pq__coldesc d = desc(PQ_BYTE_ARRAY, CB_STRING, false, 2);
    cb_column *c;
    char err[PQ_MSG_MAX] = "";
    assert_int_equal(pq__decode_chunk(&d, w.buf, w.len, &c, err, sizeof(err)), -EBADMSG);
    assert_null(c);
    assert_non_null(strstr(err, "unit.parquet"));
    assert_non_null(strstr(err, "column 'c'"));
    assert_non_null(strstr(err, "dictionary index 5 is out of range"));
}

static void test_lies_are_errors(void **state)
{
    (void)state;
    pq__coldesc d = desc(PQ_INT32, CB_INT32, false, 4);
    cb_column *c;
    char err[PQ_MSG_MAX];
    int32_t v[4] = {1, 2, 3, 4};
    /* Compressed size past the chunk. */
    tw w = {0};
    tw_page_v1(&w, 16, 400, 4, PQ__ENC_PLAIN);
    tw_bytes(&w, v, 16);
    assert_int_equal(pq__decode_chunk(&d, w.buf, w.len, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "runs past the end of the column chunk"));
    /* More values than bytes. */
    tw w2 = {0};
    tw_page_v1(&w2, 8, 8, 4, PQ__ENC_PLAIN);
    tw_bytes(&w2, v, 8);
    assert_int_equal(pq__decode_chunk(&d, w2.buf, w2.len, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "shorter than the page header says"));
    /* More values than rows. */
    tw w3 = {0};
    tw_page_v1(&w3, 16, 16, 4, PQ__ENC_PLAIN);
    tw_bytes(&w3, v, 16);
    d.num_rows = 3;
    assert_int_equal(pq__decode_chunk(&d, w3.buf, w3.len, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "rows of the row group are left"));
    /* The chunk ends early. */
    d.num_rows = 8;
    assert_int_equal(pq__decode_chunk(&d, w3.buf, w3.len, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "ends after 4 of 8 rows"));
    /* A dictionary-encoded page without a dictionary. */
    d.num_rows = 2;
    tw w4 = {0};
    uint8_t body[] = {1, 0x03, 0x01};
    tw_page_v1(&w4, 3, 3, 2, PQ__ENC_RLE_DICTIONARY);
    tw_bytes(&w4, body, 3);
    assert_int_equal(pq__decode_chunk(&d, w4.buf, w4.len, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "without a dictionary page"));
    /* A page larger than allowed. */
    d.num_rows = 4;
    d.max_page_bytes = 8;
    assert_int_equal(pq__decode_chunk(&d, w3.buf, w3.len, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "over the limit"));
    /* A corrupt compressed page. */
    d.max_page_bytes = 0;
    d.codec = PQ__CODEC_SNAPPY;
    assert_int_equal(pq__decode_chunk(&d, w3.buf, w3.len, &c, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "SNAPPY"));
    /* Every truncation of a good chunk is an error. */
    d.codec = PQ__CODEC_UNCOMPRESSED;
    for (size_t cut = 0; cut < w3.len; cut++) {
        assert_true(pq__decode_chunk(&d, w3.buf, cut, &c, err, sizeof(err)) < 0);
        assert_null(c);
    }
}

static void test_v2_page_snappy_values(void **state)
{
    (void)state;
    /* 5 rows, rows 1 and 3 null; doubles; levels stay uncompressed. */
    double v[3] = {1.5, -2.25, 1e300};
    char comp[128];
    size_t cl = sizeof(comp);
    assert_int_equal(snappy_compress((const char *)v, 24, comp, &cl), SNAPPY_OK);
    uint8_t levels[2] = {0x03, 0x15}; /* bit-packed 1 0 1 0 1 */
    tw w = {0};
    tw_page_v2(&w, 2 + 24, (int32_t)(2 + cl), 5, 2, PQ__ENC_PLAIN, 2, 1);
    tw_bytes(&w, levels, 2);
    tw_bytes(&w, comp, cl);
    pq__coldesc d = desc(PQ_DOUBLE, CB_DOUBLE, true, 5);
    d.codec = PQ__CODEC_SNAPPY;
    cb_column *c;
    char err[PQ_MSG_MAX];
    assert_int_equal(decode(&d, &w, &c, err, sizeof(err)), 0);
    const double *x = c->values;
    assert_true(x[0] == 1.5 && x[2] == -2.25 && x[4] == 1e300);
    assert_true(cb_column_is_null(c, 1) && cb_column_is_null(c, 3));
    assert_int_equal(c->null_count, 2);
    cb_column_destroy(&c);
}

static void test_int96_decimals_float16_bss(void **state)
{
    (void)state;
    cb_column *c;
    char err[PQ_MSG_MAX];
    /* INT96: 1970-01-02 00:00:00.000000007 */
    uint8_t i96[12];
    uint64_t nanos = 7;
    uint32_t jd = 2440589;
    memcpy(i96, &nanos, 8);
    memcpy(i96 + 8, &jd, 4);
    tw w = {0};
    tw_page_v1(&w, 12, 12, 1, PQ__ENC_PLAIN);
    tw_bytes(&w, i96, 12);
    pq__coldesc d = desc(PQ_INT96, CB_TIMESTAMP, false, 1);
    d.type.unit = CB_UNIT_NS;
    assert_int_equal(decode(&d, &w, &c, err, sizeof(err)), 0);
    assert_true(((int64_t *)c->values)[0] == 86400000000007ll);
    cb_column_destroy(&c);

    /* Decimals in byte arrays (big-endian two's complement): -2, 256, and a
     * 16-byte one into a 128-bit value. */
    tw w2 = {0};
    uint8_t b[64];
    size_t n = 0;
    uint32_t l = 1;
    memcpy(b + n, &l, 4);
    b[n + 4] = 0xfe;
    n += 5;
    l = 2;
    memcpy(b + n, &l, 4);
    b[n + 4] = 0x01;
    b[n + 5] = 0x00;
    n += 6;
    tw_page_v1(&w2, (int32_t)n, (int32_t)n, 2, PQ__ENC_PLAIN);
    tw_bytes(&w2, b, n);
    d = desc(PQ_BYTE_ARRAY, CB_DECIMAL, false, 2);
    d.type.precision = 10;
    d.type.scale = 2;
    assert_int_equal(decode(&d, &w2, &c, err, sizeof(err)), 0);
    assert_int_equal(((int64_t *)c->values)[0], -2);
    assert_int_equal(((int64_t *)c->values)[1], 256);
    cb_column_destroy(&c);
    tw w3 = {0};
    uint8_t f16[16];
    memset(f16, 0xff, 16);
    f16[15] = 0xfe; /* -2 */
    tw_page_v1(&w3, 16, 16, 1, PQ__ENC_PLAIN);
    tw_bytes(&w3, f16, 16);
    d = desc(PQ_FIXED_LEN_BYTE_ARRAY, CB_DECIMAL, false, 1);
    d.type_length = 16;
    d.type.precision = 38;
    assert_int_equal(decode(&d, &w3, &c, err, sizeof(err)), 0);
    cb_i128 x = ((cb_i128 *)c->values)[0];
    assert_true(x.hi == -1 && x.lo == (uint64_t)-2);
    cb_column_destroy(&c);

    /* FLOAT16 */
    tw w4 = {0};
    uint16_t h[2] = {0x3c00, 0xc100};
    tw_page_v1(&w4, 4, 4, 2, PQ__ENC_PLAIN);
    tw_bytes(&w4, h, 4);
    d = desc(PQ_FIXED_LEN_BYTE_ARRAY, CB_FLOAT, false, 2);
    d.type_length = 2;
    assert_int_equal(decode(&d, &w4, &c, err, sizeof(err)), 0);
    assert_true(((float *)c->values)[0] == 1.0f && ((float *)c->values)[1] == -2.5f);
    cb_column_destroy(&c);

    /* BYTE_STREAM_SPLIT of two floats. */
    float fv[2] = {1.25f, -3.5f};
    uint8_t raw[8], split[8];
    memcpy(raw, fv, 8);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            split[k * 2 + i] = raw[i * 4 + k];
    tw w5 = {0};
    tw_page_v1(&w5, 8, 8, 2, PQ__ENC_BYTE_STREAM_SPLIT);
    tw_bytes(&w5, split, 8);
    d = desc(PQ_FLOAT, CB_FLOAT, false, 2);
    assert_int_equal(decode(&d, &w5, &c, err, sizeof(err)), 0);
    assert_memory_equal(c->values, fv, 8);
    cb_column_destroy(&c);
}

static void test_colbatch_basics(void **state)
{
    (void)state;
    cb_typeinfo t = {.type = CB_STRING};
    cb_column *c;
    assert_int_equal(cb_column_create(&c, &t, "s", 3), 0);
    assert_string_equal(c->name, "s");
    assert_int_equal(cb_column_reserve_data(c, 10), 0);
    memcpy(c->data, "abcdef", 6);
    c->offsets[1] = 2;
    c->offsets[2] = 2;
    c->offsets[3] = 6;
    assert_int_equal(cb_column_alloc_validity(c), 0);
    c->validity[0] &= (uint8_t)~2u;
    c->null_count = 1;
    size_t len;
    const uint8_t *p = cb_column_bytes(c, 2, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(p, "cdef", 4);
    assert_null(cb_column_bytes(c, 1, &len));
    cb_batch *b;
    assert_int_equal(cb_batch_create(&b, 3, 1), 0);
    b->cols[0] = cb_column_ref(c);
    cb_column_destroy(&c);
    assert_null(c);
    assert_int_equal(atomic_load(&b->cols[0]->refs), 1);
    cb_batch_destroy(&b);
    assert_null(b);
    cb_batch_destroy(&b); /* NULL is fine */
    cb_typeinfo bad = {.type = CB_DECIMAL, .precision = 40};
    assert_int_equal(cb_column_create(&c, &bad, NULL, 1), -EINVAL);
    assert_null(c);
    cb_typeinfo dec = {.type = CB_DECIMAL, .precision = 19};
    assert_int_equal(cb_type_width(&dec), 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_required_int32),
        cmocka_unit_test(test_plain_optional_int64_with_nulls),
        cmocka_unit_test(test_bit_packed_levels),
        cmocka_unit_test(test_dictionary_then_plain_fallback),
        cmocka_unit_test(test_dictionary_index_out_of_range),
        cmocka_unit_test(test_lies_are_errors),
        cmocka_unit_test(test_v2_page_snappy_values),
        cmocka_unit_test(test_int96_decimals_float16_bss),
        cmocka_unit_test(test_colbatch_basics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
