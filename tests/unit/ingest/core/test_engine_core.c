/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_core.c: the value layer (eng_types.h): doubles formatted as
 * ClickHouse prints them; the memory limit's error gives the total the query
 * would have reached; the tracker charges what blocks really take (growable
 * arrays what is in use) and balances to zero; an Array's text or another
 * Array converts to an Array(T) (ex_arr_convert), integers wrapped as
 * ClickHouse's CAST does, and what does not convert says why.
 */
#include "eng_types.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static void test_double_format(void **state)
{
    (void)state;
    char b[64];
    static const struct {
        double d;
        const char *s;
    } t[] = {
        {0.1, "0.1"},
        {1.0 / 3, "0.3333333333333333"},
        {100, "100"},
        {1e21, "1e+21"},
        {1e-8, "1e-8"},
        {-2.5e-7, "-0.00000025"},
        {123456789012345680.0, "123456789012345680"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        ex_fmt_double(t[i].d, b, sizeof(b));
        assert_string_equal(b, t[i].s);
    }
}

/* The query held 30 MB, then asked for 40 MB more under a 50 MB limit: the
 * error says 70 MB (with the tracker's headers), also after it let go of the
 * 30 MB, as a query does before the error is worded. */
static void test_memory_error_gives_the_attempted_total(void **state)
{
    (void)state;
    eng_mem m = {.limit = 50000000};
    void *a = em_alloc(&m, 30000000);
    assert_non_null(a);
    assert_null(em_alloc(&m, 40000000));
    em_free(&m, a);
    assert_int_equal(atomic_load(&m.cur), 0);
    char err[512];
    em_error(&m, err, sizeof(err));
    /* 30000016 + 40000016 bytes = 66.76 MiB; the limit is 47.68 MiB */
    if (!strstr(err, "would use 66.76 MiB"))
        fprintf(stderr, "%s\n", err);
    assert_non_null(strstr(err, "would use 66.76 MiB (attempt to allocate a chunk of 38.15 MiB)"));
    assert_non_null(strstr(err, "maximum: 47.68 MiB"));
}

/* Just over the limit, both figures round to the same MiB: the error gives
 * the bytes, so that it never reads "would use 1.91 MiB, maximum: 1.91 MiB". */
static void test_memory_error_just_over_the_limit(void **state)
{
    (void)state;
    eng_mem m = {.limit = 2000000};
    assert_true(em_account(&m, 1990000));
    assert_false(em_account(&m, 15000));
    char err[512];
    em_error(&m, err, sizeof(err));
    if (!strstr(err, "would use 2005000 bytes"))
        fprintf(stderr, "%s\n", err);
    assert_non_null(strstr(err, "would use 2005000 bytes (attempt to allocate a chunk of "
                                "14.65 KiB), maximum: 2000000 bytes;"));
    em_account(&m, -1990000);
}

/* A growable array of 1 MiB and more is charged for what em_use says is in
 * use, not its size; heap blocks for their chunks; and whatever the sequence
 * of calls, freeing everything gives every byte back. */
static void test_memory_charges_what_is_used(void **state)
{
    (void)state;
    eng_mem m = {0};
    /* a doubled 8 MiB array with 3 MiB written is charged 3 MiB (and its header) */
    uint8_t *a = em_grow(&m, NULL, 4u << 20);
    assert_non_null(a);
    assert_true(atomic_load(&m.cur) < 64);
    assert_true(em_use(&m, a, 3u << 20));
    memset(a, 1, 3u << 20);
    int64_t c3 = atomic_load(&m.cur);
    assert_true(c3 >= (3 << 20) && c3 < (3 << 20) + 64);
    a = em_grow(&m, a, 8u << 20);
    assert_non_null(a);
    assert_int_equal(atomic_load(&m.cur), c3); /* the new tail is not charged */
    assert_int_equal(em_size(a), 8u << 20);
    assert_true(em_use(&m, a, 2u << 20)); /* never lowers */
    assert_int_equal(atomic_load(&m.cur), c3);
    assert_true(em_use(&m, a, 100u << 20)); /* capped at the size */
    assert_true(atomic_load(&m.cur) < (8 << 20) + 64);
    em_free(&m, a);
    assert_int_equal(atomic_load(&m.cur), 0);
    /* a heap block is charged its chunk: at least what was asked, and 8-byte
       requests cost more than 8 bytes each */
    void *small = em_alloc(&m, 8);
    assert_true(atomic_load(&m.cur) >= 8 + 16);
    em_free(&m, small);
    assert_int_equal(atomic_load(&m.cur), 0);
    /* em_use over the limit fails and changes nothing */
    eng_mem lim = {.limit = 2 << 20};
    uint8_t *b = em_grow(&lim, NULL, 8u << 20);
    assert_non_null(b);
    assert_true(em_use(&lim, b, 1u << 20));
    int64_t before = atomic_load(&lim.cur);
    assert_false(em_use(&lim, b, 4u << 20));
    assert_int_equal(atomic_load(&lim.cur), before);
    assert_true(atomic_load(&lim.failed_at) > 0);
    em_free(&lim, b);
    assert_int_equal(atomic_load(&lim.cur), 0);
    /* a random sequence across the heap/mapping boundary balances to zero */
    void *blk[16] = {0};
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 4000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int k = (int)(x % 16), op = (int)((x >> 8) % 5);
        size_t n = (size_t)((x >> 16) % 4 == 0 ? (x >> 20) % (3u << 20) : (x >> 20) % 5000);
        void *p = NULL;
        switch (op) {
        case 0:
            em_free(&m, blk[k]);
            blk[k] = em_alloc(&m, n + 1);
            break;
        case 1:
            p = em_realloc(&m, blk[k], n + 1);
            if (p)
                blk[k] = p;
            break;
        case 2:
            p = em_grow(&m, blk[k], n + 1);
            if (p)
                blk[k] = p;
            break;
        case 3: assert_true(em_use(&m, blk[k], n)); break;
        default:
            em_free(&m, blk[k]);
            blk[k] = em_calloc(&m, n + 1);
            break;
        }
        if (blk[k] && em_size(blk[k]) >= 1)
            ((uint8_t *)blk[k])[0] = 1;
    }
    for (int k = 0; k < 16; k++)
        em_free(&m, blk[k]);
    assert_int_equal(atomic_load(&m.cur), 0);
    assert_true(atomic_load(&m.peak) > 0);
}

/* One string row, its text converted to `to`; the result printed as
 * ClickHouse does (or the error's sentence) into got. */
static int convert_text(const char *text, ex_type to, char *got, size_t cap)
{
    uint32_t off[2] = {0, (uint32_t)strlen(text)};
    ex_vec v = {.t = {.kind = EX_STRING}, .n = 1, .off = off, .data = (uint8_t *)text};
    ex_bytes out = {0}, tx = {0};
    char tmp[128], why[256] = "";
    int rc = ex_arr_convert(&v, 0, &to, &out, tmp, sizeof(tmp), why, sizeof(why));
    if (rc == 0 && (rc = ex_arr_text(&to, out.p, (uint32_t)out.n, false, &tx)) == 0)
        snprintf(got, cap, "%.*s", (int)tx.n, (const char *)tx.p);
    else
        snprintf(got, cap, "%s", why);
    ex_bytes_free(&out);
    ex_bytes_free(&tx);
    return rc;
}

static void test_array_convert(void **state)
{
    (void)state;
    char got[512];
    ex_type u8 = {.kind = EX_UINT, .bits = 8}, i64 = {.kind = EX_INT, .bits = 64};
    ex_type ni32 = {.kind = EX_INT, .bits = 32, .nullable = true}, str = {.kind = EX_STRING};
    ex_type dec = ex_decimal_type(9, 2, false);
    assert_int_equal(convert_text(" [ 300, -1 ,5 ] ", ex_arr_of(u8), got, sizeof(got)), 0);
    assert_string_equal(got, "[44,255,5]");
    assert_int_equal(convert_text("[1, NULL, 3]", ex_arr_of(ni32), got, sizeof(got)), 0);
    assert_string_equal(got, "[1,NULL,3]");
    assert_int_equal(convert_text("['it\\'s', \"b\\u00e9\"]", ex_arr_of(str), got, sizeof(got)), 0);
    assert_string_equal(got, "['it\\'s','b\xc3\xa9']");
    assert_int_equal(convert_text("['1.25', -3]", ex_arr_of(dec), got, sizeof(got)), 0);
    assert_string_equal(got, "[1.25,-3]");
    assert_int_equal(convert_text("[]", ex_arr_of(i64), got, sizeof(got)), 0);
    assert_string_equal(got, "[]");
    /* what does not convert says why */
    assert_int_equal(convert_text("[1,x]", ex_arr_of(i64), got, sizeof(got)), -EINVAL);
    assert_non_null(strstr(got, "cannot parse the array element 'x' as Int64 (CANNOT_PARSE_TEXT)"));
    assert_int_equal(convert_text("[1, NULL]", ex_arr_of(i64), got, sizeof(got)), -EINVAL);
    assert_non_null(strstr(got, "the elements are not Nullable"));
    assert_int_equal(convert_text("[1, 2", ex_arr_of(i64), got, sizeof(got)), -EINVAL);
    assert_non_null(strstr(got, "cannot parse '[1, 2' as Array(Int64)"));
    assert_int_equal(convert_text("1, 2", ex_arr_of(i64), got, sizeof(got)), -EINVAL);
    assert_int_equal(convert_text("[1] x", ex_arr_of(i64), got, sizeof(got)), -EINVAL);
    assert_int_equal(convert_text("['a]", ex_arr_of(str), got, sizeof(got)), -EINVAL);
    /* from an Array: its elements converted, integers wrapped */
    ex_bytes a = {0};
    size_t at;
    ex_type src = ex_arr_of(i64);
    ex_type se = ex_arr_elem(&src);
    assert_int_equal(ex_arr_begin(&a, &at), 0);
    int64_t xs[3] = {300, -129, 7};
    for (int k = 0; k < 3; k++)
        assert_int_equal(ex_arr_put(&a, &se, &(ex_arr_val){.i = xs[k]}), 0);
    ex_arr_end(&a, at, 3);
    uint32_t off[2] = {0, (uint32_t)a.n};
    ex_vec v = {.t = src, .n = 1, .off = off, .data = a.p};
    ex_type i8 = {.kind = EX_INT, .bits = 8};
    ex_type to = ex_arr_of(i8), tos = ex_arr_of(str);
    ex_bytes out = {0}, tx = {0};
    char tmp[128], why[256] = "";
    assert_int_equal(ex_arr_convert(&v, 0, &to, &out, tmp, sizeof(tmp), why, sizeof(why)), 0);
    assert_int_equal(ex_arr_text(&to, out.p, (uint32_t)out.n, false, &tx), 0);
    assert_int_equal(tx.n, strlen("[44,127,7]"));
    assert_memory_equal(tx.p, "[44,127,7]", tx.n);
    tx.n = 0;
    assert_int_equal(ex_arr_convert(&v, 0, &tos, &out, tmp, sizeof(tmp), why, sizeof(why)), 0);
    assert_int_equal(ex_arr_text(&tos, out.p, (uint32_t)out.n, false, &tx), 0);
    assert_memory_equal(tx.p, "['300','-129','7']", tx.n);
    /* a number is not an array; nested arrays do not convert */
    ex_vec num = {.t = i64, .n = 1, .i = xs};
    assert_int_equal(ex_arr_convert(&num, 0, &to, &out, tmp, sizeof(tmp), why, sizeof(why)),
                     -EINVAL);
    assert_non_null(strstr(why, "is not an array"));
    ex_type nested = ex_arr_of(to);
    assert_int_equal(ex_arr_convert(&v, 0, &nested, &out, tmp, sizeof(tmp), why, sizeof(why)),
                     -EINVAL);
    assert_non_null(strstr(why, "nested arrays"));
    ex_bytes_free(&a);
    ex_bytes_free(&out);
    ex_bytes_free(&tx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_double_format),
        cmocka_unit_test(test_memory_error_gives_the_attempted_total),
        cmocka_unit_test(test_memory_error_just_over_the_limit),
        cmocka_unit_test(test_memory_charges_what_is_used),
        cmocka_unit_test(test_array_convert),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
