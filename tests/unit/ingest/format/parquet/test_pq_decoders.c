/* SPDX-License-Identifier: Apache-2.0
 *
 * test_pq_decoders.c: the pure decoders of the Parquet reader, on hand-built
 * bytes: the Thrift compact protocol (short and long field headers, unknown
 * fields of every type skipped, lists bounded by the bytes left, depth limit,
 * truncation), page headers, a minimal footer, the RLE / bit-packed hybrid,
 * DELTA_BINARY_PACKED (the examples of Encodings.md), INT96 and FLOAT16, and
 * every codec round-tripped through its library, corrupt input refused.
 */
#include "parquet_int.h"
#include "tw.h"

#include <errno.h>
#include <lz4.h>
#include <math.h>
#include <setjmp.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <cmocka.h>

static void test_thrift_varints_and_fields(void **state)
{
    (void)state;
    tw w = {0};
    tw_i32(&w, 1, -5);
    tw_i64(&w, 2, INT64_MIN);
    tw_i32(&w, 40, 123456); /* long form: delta > 15 */
    tw_i32(&w, 3, 7);       /* long form: going backwards */
    tw_byte(&w, 0);
    pq__tc c;
    pq__tc_init(&c, w.buf, w.len);
    int16_t last = 0, id;
    uint8_t t;
    assert_true(pq__tc_field(&c, &last, &id, &t));
    assert_int_equal(id, 1);
    assert_int_equal(pq__tc_i32(&c), -5);
    assert_true(pq__tc_field(&c, &last, &id, &t));
    assert_int_equal(id, 2);
    assert_true(pq__tc_i64(&c) == INT64_MIN);
    assert_true(pq__tc_field(&c, &last, &id, &t));
    assert_int_equal(id, 40);
    assert_int_equal(pq__tc_i32(&c), 123456);
    assert_true(pq__tc_field(&c, &last, &id, &t));
    assert_int_equal(id, 3);
    assert_int_equal(pq__tc_i32(&c), 7);
    assert_false(pq__tc_field(&c, &last, &id, &t));
    assert_false(c.bad);
    assert_ptr_equal(c.p, c.end);
}

static void test_thrift_skip_every_type(void **state)
{
    (void)state;
    /* A struct full of fields of every type, then one we read. */
    tw w = {0};
    tw_begin_elem(&w);
    tw_bool(&w, 1, 1);
    tw_field(&w, 2, 3);
    tw_byte(&w, 0x7f); /* i8 */
    tw_field(&w, 3, 4);
    tw_varint(&w, tw_zz(-300)); /* i16 */
    tw_field(&w, 4, 7);
    tw_bytes(&w, "\0\0\0\0\0\0\xf0\x3f", 8); /* double */
    tw_bin(&w, 5, "hello", 5);
    tw_list(&w, 6, 1, 3);
    tw_byte(&w, 1);
    tw_byte(&w, 2);
    tw_byte(&w, 1);        /* bools */
    tw_list(&w, 7, 12, 2); /* structs */
    tw_begin_elem(&w);
    tw_i32(&w, 1, 1);
    tw_end(&w);
    tw_begin_elem(&w);
    tw_bin(&w, 9, "x", 1);
    tw_end(&w);
    tw_field(&w, 8, 11);
    tw_varint(&w, 2);
    tw_byte(&w, 0x85); /* map<binary,i32> */
    tw_varint(&w, 1);
    tw_byte(&w, 'a');
    tw_varint(&w, 2);
    tw_varint(&w, 1);
    tw_byte(&w, 'b');
    tw_varint(&w, 4);
    tw_field(&w, 9, 11);
    tw_byte(&w, 0);         /* empty map */
    tw_list(&w, 10, 5, 20); /* long list header */
    for (int i = 0; i < 20; i++)
        tw_varint(&w, tw_zz(i));
    tw_begin(&w, 11);
    tw_begin(&w, 1);
    tw_end(&w);
    tw_end(&w); /* nested structs */
    tw_end(&w);
    tw_i32(&w, 12, 99);
    tw_byte(&w, 0);
    pq__tc c;
    pq__tc_init(&c, w.buf, w.len);
    pq__tc_skip(&c, PQ__T_STRUCT);
    assert_false(c.bad);
    int16_t last = 0, id;
    uint8_t t;
    assert_true(pq__tc_field(&c, &last, &id, &t));
    assert_int_equal(id, 12);
    assert_int_equal(pq__tc_i32(&c), 99);
    assert_false(pq__tc_field(&c, &last, &id, &t));
    assert_false(c.bad);
}

static void test_thrift_refuses_lies(void **state)
{
    (void)state;
    /* A list announcing a million elements in 3 bytes. */
    uint8_t big[] = {0xf5, 0xc0, 0x84, 0x3d};
    pq__tc c;
    pq__tc_init(&c, big, sizeof(big));
    uint8_t et;
    assert_int_equal(pq__tc_list(&c, &et), 0);
    assert_true(c.bad);
    /* A string longer than the buffer. */
    uint8_t s[] = {0x20, 'a', 'b'};
    pq__tc_init(&c, s, sizeof(s));
    uint32_t n;
    assert_null(pq__tc_binary(&c, &n));
    assert_true(c.bad);
    /* Nesting deeper than the limit. */
    uint8_t deep[200];
    for (size_t i = 0; i < sizeof(deep); i++)
        deep[i] = 0x1c; /* field 1, struct */
    pq__tc_init(&c, deep, sizeof(deep));
    pq__tc_skip(&c, PQ__T_STRUCT);
    assert_true(c.bad);
    assert_non_null(strstr(c.why, "nested"));
    /* An unterminated varint. */
    uint8_t v[] = {0x80, 0x80};
    pq__tc_init(&c, v, sizeof(v));
    (void)pq__tc_varint(&c);
    assert_true(c.bad);
    /* A varint of 11 bytes. */
    uint8_t v11[11];
    memset(v11, 0xff, sizeof(v11));
    pq__tc_init(&c, v11, sizeof(v11));
    (void)pq__tc_varint(&c);
    assert_true(c.bad);
}

static void test_page_header(void **state)
{
    (void)state;
    tw w = {0};
    tw_page_v2(&w, 100, 60, 10, 3, 8, 4, 1);
    pq__page_header h;
    const char *why;
    int n = pq__page_header_parse(w.buf, w.len, &h, &why);
    assert_int_equal(n, (int)w.len);
    assert_int_equal(h.type, PQ__PAGE_DATA_V2);
    assert_int_equal(h.uncompressed_size, 100);
    assert_int_equal(h.compressed_size, 60);
    assert_int_equal(h.num_values, 10);
    assert_int_equal(h.num_nulls, 3);
    assert_int_equal(h.encoding, 8);
    assert_int_equal(h.def_len, 4);
    assert_true(h.is_compressed);
    assert_true(h.has_v2);
    /* Cut anywhere: an error, never a read past the end. */
    for (size_t cut = 0; cut < w.len; cut++)
        assert_int_equal(pq__page_header_parse(w.buf, cut, &h, &why), -EBADMSG);
    /* Negative sizes. */
    tw w2 = {0};
    tw_page_v1(&w2, -1, 5, 1, 0);
    assert_int_equal(pq__page_header_parse(w2.buf, w2.len, &h, &why), -EBADMSG);
}

static void build_footer(tw *w, int nested)
{
    tw_i32(w, 1, 2);
    tw_list(w, 2, 12, 3);
    tw_begin_elem(w);
    tw_bin(w, 4, "schema", 6);
    tw_i32(w, 5, 2);
    tw_end(w);
    tw_begin_elem(w);
    tw_i32(w, 1, 2);
    tw_i32(w, 3, 1);
    tw_bin(w, 4, "a", 1);
    tw_end(w);
    tw_begin_elem(w);
    tw_i32(w, 1, 6);
    tw_i32(w, 3, nested ? 2 : 0);
    tw_bin(w, 4, "s", 1);
    tw_i32(w, 6, 0);
    tw_begin(w, 10);
    tw_begin(w, 1);
    tw_end(w);
    tw_end(w); /* LogicalType STRING */
    tw_end(w);
    tw_i64(w, 3, 7);
    tw_list(w, 4, 12, 1);
    tw_begin_elem(w);
    tw_list(w, 1, 12, 2);
    for (int c = 0; c < 2; c++) {
        tw_begin_elem(w);
        tw_i64(w, 2, 4);
        tw_begin(w, 3);
        tw_i32(w, 1, c ? 6 : 2);
        tw_list(w, 2, 5, 1);
        tw_varint(w, 0);
        tw_list(w, 3, 8, 1);
        tw_varint(w, 1);
        tw_byte(w, c ? 's' : 'a');
        tw_i32(w, 4, 1);
        tw_i64(w, 5, 7);
        tw_i64(w, 6, 50);
        tw_i64(w, 7, 40);
        tw_i64(w, 9, 4 + 40 * c);
        tw_begin(w, 12);
        tw_bin(w, 5, c ? "zz" : "\x09\0\0\0\0\0\0\0", c ? 2 : 8);
        tw_bin(w, 6, c ? "aa" : "\xfd\xff\xff\xff\xff\xff\xff\xff", c ? 2 : 8);
        tw_i64(w, 3, 1);
        tw_end(w);
        tw_end(w);
        tw_end(w);
    }
    tw_i64(w, 3, 7);
    tw_end(w);
    tw_bin(w, 6, "unit test", 9);
    tw_byte(w, 0);
}

static void test_footer_parse(void **state)
{
    (void)state;
    tw w = {0};
    build_footer(&w, 0);
    pq__meta *m;
    char err[256];
    assert_int_equal(pq__meta_parse(w.buf, w.len, &m, err, sizeof(err)), 0);
    assert_int_equal(m->n_schema, 3);
    assert_string_equal(m->schema[1].name, "a");
    assert_int_equal(m->schema[2].lt, PQ__LT_STRING);
    assert_int_equal(m->num_rows, 7);
    assert_int_equal(m->n_rgs, 1);
    assert_int_equal(m->rgs[0].n_cols, 2);
    assert_int_equal(m->rgs[0].cols[1].data_page_offset, 44);
    assert_int_equal(m->rgs[0].cols[1].codec, 1);
    assert_int_equal(m->rgs[0].cols[0].stats.min_value.len, 8);
    assert_string_equal(m->created_by, "unit test");
    cb_typeinfo ti;
    const char *why;
    assert_int_equal(pq__map_type(&m->schema[2], &ti, &why), 0);
    assert_int_equal(ti.type, CB_STRING);
    pq__meta_free(&m);
    assert_null(m);
    /* Every truncation is an error with a reason, never a crash. */
    for (size_t cut = 0; cut < w.len; cut++) {
        err[0] = '\0';
        assert_int_equal(pq__meta_parse(w.buf, cut, &m, err, sizeof(err)), -EBADMSG);
        assert_non_null(strstr(err, "malformed"));
        assert_null(m);
    }
}

static void test_map_types(void **state)
{
    (void)state;
    pq__schema_el el = {.type = PQ_INT32, .converted_type = PQ__CT_UINT_16};
    cb_typeinfo t;
    const char *why;
    assert_int_equal(pq__map_type(&el, &t, &why), 0);
    assert_int_equal(t.type, CB_UINT16);
    el = (pq__schema_el){.type = PQ_INT64,
                         .converted_type = -1,
                         .lt = PQ__LT_TIMESTAMP,
                         .lt_unit = CB_UNIT_NS,
                         .lt_utc = true};
    assert_int_equal(pq__map_type(&el, &t, &why), 0);
    assert_int_equal(t.type, CB_TIMESTAMP);
    assert_int_equal(t.unit, CB_UNIT_NS);
    assert_true(t.utc);
    el = (pq__schema_el){.type = PQ_FIXED_LEN_BYTE_ARRAY,
                         .type_length = 16,
                         .converted_type = 5,
                         .precision = 38,
                         .scale = 10};
    assert_int_equal(pq__map_type(&el, &t, &why), 0);
    assert_int_equal(t.type, CB_DECIMAL);
    assert_int_equal(cb_type_width(&t), 16);
    el.precision = 39;
    assert_int_equal(pq__map_type(&el, &t, &why), -ENOTSUP);
    el = (pq__schema_el){
        .type = PQ_INT32, .converted_type = -1, .lt = PQ__LT_INTEGER, .lt_bits = 64};
    assert_int_equal(pq__map_type(&el, &t, &why), -ENOTSUP);
    el = (pq__schema_el){.type = PQ_INT96, .converted_type = -1};
    assert_int_equal(pq__map_type(&el, &t, &why), 0);
    assert_int_equal(t.unit, CB_UNIT_NS);
}

static void test_rle_hybrid(void **state)
{
    (void)state;
    /* RLE run of 5 x 3 (width 2), bit-packed 8 values 0..7 (width 3). */
    uint8_t rle[] = {0x0a, 0x03};
    uint32_t out[16];
    assert_int_equal(pq__rle_decode(rle, sizeof(rle), 2, out, 5), 2);
    for (int i = 0; i < 5; i++)
        assert_int_equal(out[i], 3);
    /* 0..7 at 3 bits, LSB first: 0b10001000, 0b11000110, 0b11111010 */
    uint8_t bp[] = {0x03, 0x88, 0xc6, 0xfa};
    assert_int_equal(pq__rle_decode(bp, sizeof(bp), 3, out, 8), 4);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(out[i], i);
    /* Fewer values wanted than the run holds: fine. */
    assert_true(pq__rle_decode(bp, sizeof(bp), 3, out, 5) > 0);
    /* Truncated bit-packed run, missing RLE value, bad width. */
    assert_int_equal(pq__rle_decode(bp, 2, 3, out, 8), -EBADMSG);
    assert_int_equal(pq__rle_decode(rle, 1, 2, out, 5), -EBADMSG);
    assert_int_equal(pq__rle_decode(rle, sizeof(rle), 33, out, 5), -EBADMSG);
    /* Runs that end before n values. */
    assert_int_equal(pq__rle_decode(rle, sizeof(rle), 2, out, 6), -EBADMSG);
    /* Width 0: values are zero and take no bytes. */
    uint8_t z[] = {0x10};
    assert_int_equal(pq__rle_decode(z, sizeof(z), 0, out, 8), 1);
    assert_int_equal(out[7], 0);
    /* Levels (bytes). */
    uint8_t lv[16];
    uint8_t lvb[] = {0x03, 0xa5};
    assert_int_equal(pq__rle_decode8(lvb, sizeof(lvb), 1, lv, 8), 2);
    static const uint8_t want[] = {1, 0, 1, 0, 0, 1, 0, 1};
    assert_memory_equal(lv, want, 8);
    /* 32-bit values. */
    uint8_t w32[] = {0x00 | (1 << 1), 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(pq__rle_decode(w32, sizeof(w32), 32, out, 1), 5);
    assert_int_equal(out[0], 0xffffffffu);
}

/* Definition levels that say "no NULL" are known without decoding them. */
static void test_rle_all_ones(void **state)
{
    (void)state;
    uint8_t one[] = {0x10, 0x01};               /* 8 x 1 */
    uint8_t big[] = {0x80, 0x89, 0x7a, 0x01};   /* 1000000 x 1 (uleb 2000000) */
    uint8_t two[] = {0x06, 0x01, 0x0a, 0x01};   /* 3 x 1, then 5 x 1 */
    uint8_t zero[] = {0x10, 0x00};              /* 8 x 0 */
    uint8_t mixed[] = {0x06, 0x01, 0x0a, 0x00}; /* 3 x 1, then 5 x 0 */
    uint8_t packed[] = {0x03, 0xff};            /* 8 bit-packed 1s */
    uint8_t empty_run[] = {0x00, 0x01, 0x10, 0x01};
    assert_true(pq__rle_all_ones(one, sizeof(one), 8));
    assert_true(pq__rle_all_ones(one, sizeof(one), 5));  /* fewer wanted than the run holds */
    assert_false(pq__rle_all_ones(one, sizeof(one), 9)); /* the runs end first */
    assert_true(pq__rle_all_ones(big, sizeof(big), 1000000));
    assert_false(pq__rle_all_ones(big, sizeof(big), 1000001));
    assert_true(pq__rle_all_ones(two, sizeof(two), 8));
    assert_false(pq__rle_all_ones(zero, sizeof(zero), 8));
    assert_true(pq__rle_all_ones(mixed, sizeof(mixed), 3));
    assert_false(pq__rle_all_ones(mixed, sizeof(mixed), 4));
    assert_false(pq__rle_all_ones(packed, sizeof(packed), 8)); /* decoded by the caller */
    assert_false(pq__rle_all_ones(one, 1, 8));                 /* the value byte missing */
    assert_false(pq__rle_all_ones(empty_run, sizeof(empty_run), 8));
    assert_false(pq__rle_all_ones(NULL, 0, 1));
}

static void test_delta_binary_packed(void **state)
{
    (void)state;
    int64_t out[16];
    size_t n;
    /* Encodings.md example 1: 1 2 3 4 5 */
    uint8_t e1[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
    assert_int_equal(pq__delta_decode(e1, sizeof(e1), out, 16, &n), (int64_t)sizeof(e1));
    assert_int_equal(n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(out[i], i + 1);
    /* Example 2: 7 5 3 1 2 3 4 5 (min delta -2, width 2). */
    uint8_t e2[] = {0x80, 0x01, 0x04, 0x08, 0x0e, 0x03, 0x02, 0x00, 0x00,
                    0x00, 0xc0, 0xff, 0,    0,    0,    0,    0,    0};
    assert_int_equal(pq__delta_decode(e2, sizeof(e2), out, 16, &n), (int64_t)sizeof(e2));
    assert_int_equal(n, 8);
    static const int64_t want[] = {7, 5, 3, 1, 2, 3, 4, 5};
    assert_memory_equal(out, want, sizeof(want));
    /* Truncations, a count over the cap, a bad block size, a bad width. */
    for (size_t cut = 0; cut < 12; cut++)
        assert_int_equal(pq__delta_decode(e2, cut, out, 16, &n), -EBADMSG);
    assert_int_equal(pq__delta_decode(e2, sizeof(e2), out, 4, &n), -EBADMSG);
    uint8_t bad[] = {0x81, 0x01, 0x04, 0x05, 0x02};
    assert_int_equal(pq__delta_decode(bad, sizeof(bad), out, 16, &n), -EBADMSG);
    uint8_t wide[sizeof(e2)];
    memcpy(wide, e2, sizeof(e2));
    wide[6] = 65;
    assert_int_equal(pq__delta_decode(wide, sizeof(wide), out, 16, &n), -EBADMSG);
    /* Extremes wrap (a delta of 2^64 - 1). */
    uint8_t ext[] = {0x80, 0x01, 0x04, 0x02, 0xfe, 0xff, 0xff,
                     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* INT64_MAX */
                     0x01,                                     /* min delta -1 */
                     0x00, 0x00, 0x00, 0x00};
    assert_true(pq__delta_decode(ext, sizeof(ext), out, 16, &n) > 0);
    assert_int_equal(n, 2);
    assert_true(out[0] == INT64_MAX);
    assert_true(out[1] == INT64_MAX - 1);
}

static void test_int96_and_half(void **state)
{
    (void)state;
    uint8_t b[12];
    uint64_t nanos = 3600ull * 1000000000ull + 5;
    uint32_t jd = 2440589; /* 1970-01-02 */
    memcpy(b, &nanos, 8);
    memcpy(b + 8, &jd, 4);
    assert_true(pq__int96_to_ns(b) == 86400000000000ll + 3600000000000ll + 5);
    assert_true(pq__half_to_float(0x3c00) == 1.0f);
    assert_true(pq__half_to_float(0xc100) == -2.5f);
    assert_true(pq__half_to_float(0x7bff) == 65504.0f);
    assert_true(pq__half_to_float(0x0001) == ldexpf(1.0f, -24));
    assert_true(isinf(pq__half_to_float(0x7c00)));
    assert_true(isnan(pq__half_to_float(0x7e00)));
    assert_true(signbit(pq__half_to_float(0x8000)));
}

static void test_codecs_round_trip(void **state)
{
    (void)state;
    size_t n = 100000;
    uint8_t *src = malloc(n), *out = malloc(n), *comp = malloc(2 * n + 1024);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)((i * 7) % 251 ^ (i >> 9));
    const char *why;
    /* snappy */
    size_t cl = 2 * n + 1024;
    assert_int_equal(snappy_compress((const char *)src, n, (char *)comp, &cl), SNAPPY_OK);
    assert_int_equal(pq__decompress(PQ__CODEC_SNAPPY, comp, cl, out, n, &why), 0);
    assert_memory_equal(src, out, n);
    assert_int_equal(pq__decompress(PQ__CODEC_SNAPPY, comp, cl, out, n - 1, &why), -EBADMSG);
    assert_int_equal(pq__decompress(PQ__CODEC_SNAPPY, comp, cl / 2, out, n, &why), -EBADMSG);
    /* zstd */
    cl = ZSTD_compress(comp, 2 * n + 1024, src, n, 3);
    assert_false(ZSTD_isError(cl));
    assert_int_equal(pq__decompress(PQ__CODEC_ZSTD, comp, cl, out, n, &why), 0);
    assert_memory_equal(src, out, n);
    assert_int_equal(pq__decompress(PQ__CODEC_ZSTD, comp, cl, out, n - 1, &why), -EBADMSG);
    assert_int_equal(pq__decompress(PQ__CODEC_ZSTD, comp, cl, out, n / 2, &why), -EBADMSG);
    assert_int_equal(pq__decompress(PQ__CODEC_ZSTD, comp, cl - 5, out, n, &why), -EBADMSG);
    /* lz4 raw, and hadoop-framed lz4 */
    int l4 = LZ4_compress_default((const char *)src, (char *)comp + 8, (int)n, (int)(2 * n));
    assert_true(l4 > 0);
    assert_int_equal(pq__decompress(PQ__CODEC_LZ4_RAW, comp + 8, (size_t)l4, out, n, &why), 0);
    assert_memory_equal(src, out, n);
    assert_int_equal(pq__decompress(PQ__CODEC_LZ4_RAW, comp + 8, (size_t)l4, out, n + 1, &why),
                     -EBADMSG);
    uint32_t be_u = __builtin_bswap32((uint32_t)n), be_c = __builtin_bswap32((uint32_t)l4);
    memcpy(comp, &be_u, 4);
    memcpy(comp + 4, &be_c, 4);
    memset(out, 0, n);
    assert_int_equal(pq__decompress(PQ__CODEC_LZ4, comp, (size_t)l4 + 8, out, n, &why), 0);
    assert_memory_equal(src, out, n);
    /* gzip with two members */
    size_t half = n / 2, total = 0;
    for (int m = 0; m < 2; m++) {
        z_stream z = {0};
        assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
        z.next_in = src + m * half;
        z.avail_in = (uInt)(m ? n - half : half);
        z.next_out = comp + total;
        z.avail_out = (uInt)(2 * n + 1024 - total);
        assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
        total += z.total_out;
        deflateEnd(&z);
    }
    memset(out, 0, n);
    assert_int_equal(pq__decompress(PQ__CODEC_GZIP, comp, total, out, n, &why), 0);
    assert_memory_equal(src, out, n);
    assert_int_equal(pq__decompress(PQ__CODEC_GZIP, comp, total, out, n - 10, &why), -EBADMSG);
    assert_int_equal(pq__decompress(PQ__CODEC_GZIP, comp, total - 20, out, n, &why), -EBADMSG);
    comp[total / 4] ^= 0xff;
    int rc = pq__decompress(PQ__CODEC_GZIP, comp, total, out, n, &why);
    assert_int_equal(rc, -EBADMSG);
    /* uncompressed, unsupported */
    assert_int_equal(pq__decompress(PQ__CODEC_UNCOMPRESSED, src, n, out, n, &why), 0);
    assert_int_equal(pq__decompress(PQ__CODEC_UNCOMPRESSED, src, n, out, n - 1, &why), -EBADMSG);
    assert_int_equal(pq__decompress(PQ__CODEC_LZO, src, n, out, n, &why), -ENOTSUP);
    assert_int_equal(pq__decompress(PQ__CODEC_BROTLI, src, n, out, n, &why), -ENOTSUP);
    assert_int_equal(pq__decompress(99, src, n, out, n, &why), -ENOTSUP);
    free(src);
    free(out);
    free(comp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thrift_varints_and_fields),
        cmocka_unit_test(test_thrift_skip_every_type),
        cmocka_unit_test(test_thrift_refuses_lies),
        cmocka_unit_test(test_page_header),
        cmocka_unit_test(test_footer_parse),
        cmocka_unit_test(test_map_types),
        cmocka_unit_test(test_rle_hybrid),
        cmocka_unit_test(test_rle_all_ones),
        cmocka_unit_test(test_delta_binary_packed),
        cmocka_unit_test(test_int96_and_half),
        cmocka_unit_test(test_codecs_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
