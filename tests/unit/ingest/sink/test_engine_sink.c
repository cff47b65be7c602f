/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_sink.c: the format sinks (eng_sink.h) on hand-built blocks:
 * each format's text for NULLs, escapes, quoting, 64-bit integers and
 * non-finite floats; a result cut into blocks writes the same bytes as in one
 * block; PrettyCompact measures its columns over every block, shows at most
 * 10000 rows and says so, and draws nothing for an empty result; a writer
 * that fails makes write / end fail with a sentence; format names.
 */
#include "eng_sink.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

typedef struct capture {
    char *p;
    size_t n, cap;
    int flushes;
    int fail; /* write fails with this (-errno) when set */
} capture;

static int cap_write(void *arg, const void *buf, size_t len)
{
    capture *c = arg;
    if (c->fail)
        return c->fail;
    if (c->n + len + 1 > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4096;
        while (cap < c->n + len + 1)
            cap *= 2;
        c->p = realloc(c->p, cap);
        assert_non_null(c->p);
        c->cap = cap;
    }
    memcpy(c->p + c->n, buf, len);
    c->n += len;
    c->p[c->n] = 0;
    return 0;
}

static int cap_flush(void *arg)
{
    ((capture *)arg)->flushes++;
    return 0;
}

/* Three columns, rows r of [0, n): i (Int64, NULL every third row), s (a
 * string with the characters formats escape), f (Float64: 0.5, inf, nan). */
static const char *const names[] = {"i", "s\tx", "f"};
static const ex_type types[] = {
    {.kind = EX_INT, .bits = 64, .nullable = true},
    {.kind = EX_STRING},
    {.kind = EX_FLOAT, .bits = 64},
};

static void make_cols(ex_vec *v, uint32_t n)
{
    static const char *const strs[] = {"a\tb\n\\c", "say \"hi\"", "\x01z"};
    for (int k = 0; k < 3; k++) {
        ex_type t = types[k];
        t.nullable = true;
        assert_int_equal(ex_vec_alloc(NULL, &v[k], t, n), 0);
        v[k].t = types[k];
    }
    for (uint32_t r = 0; r < n; r++) {
        v[0].i[r] = (int64_t)r * 1000000007;
        v[0].nulls[r] = r % 3 == 1;
        const char *s = strs[r % 3];
        v[1].nulls[r] = 0;
        assert_int_equal(ex_vec_str_put(NULL, &v[1], r, s, strlen(s)), 0);
        v[2].d[r] = r % 3 == 0 ? 0.5 : r % 3 == 1 ? 1.0 / 0.0 : 0.0 / 0.0;
        v[2].nulls[r] = 0;
    }
}

static void clear_cols(ex_vec *v)
{
    for (int k = 0; k < 3; k++)
        ex_vec_clear(NULL, &v[k]);
}

/* Writes rows [0, n) in blocks of `block` rows; returns the text (malloc'ed). */
static char *render(eng_format fmt, uint32_t n, uint32_t block)
{
    capture c = {0};
    eng_writer w = {cap_write, cap_flush, &c};
    eng_sink *s;
    char err[256];
    assert_int_equal(eng_sink_format_create(&s, fmt, &w), 0);
    assert_int_equal(s->ops->begin(s, names, types, 3, err, sizeof(err)), 0);
    ex_vec cols[3], part[3];
    make_cols(cols, n ? n : 1);
    for (uint32_t off = 0; off < n; off += block) {
        uint32_t cnt = n - off < block ? n - off : block;
        for (int k = 0; k < 3; k++)
            ex_vec_view(&cols[k], off, cnt, &part[k]);
        eng_block b = {part, 3, cnt};
        assert_int_equal(s->ops->write(s, &b, err, sizeof(err)), 0);
    }
    eng_sink_stats st = {0.5, 10, 80};
    if (s->stats)
        s->stats(s, &st);
    assert_int_equal(s->ops->end(s, err, sizeof(err)), 0);
    assert_int_equal(c.flushes, 1);
    eng_sink_destroy(&s);
    assert_null(s);
    clear_cols(cols);
    if (!c.p)
        c.p = calloc(1, 1);
    return c.p;
}

static void expect(eng_format fmt, uint32_t n, const char *want)
{
    char *got = render(fmt, n, 1000);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "format %d: got\n%s\nwant\n%s\n", fmt, got, want);
    assert_string_equal(got, want);
    free(got);
}

static void test_row_formats(void **state)
{
    (void)state;
    expect(ENG_FMT_TSV, 3,
           "0\ta\\tb\\n\\\\c\t0.5\n"
           "\\N\tsay \"hi\"\tinf\n"
           "2000000014\t\x01z\tnan\n");
    expect(ENG_FMT_TSV_WITH_NAMES, 1, "i\ts\\tx\tf\n0\ta\\tb\\n\\\\c\t0.5\n");
    expect(ENG_FMT_CSV, 3,
           "0,\"a\tb\n\\c\",0.5\n"
           "\\N,\"say \"\"hi\"\"\",inf\n"
           "2000000014,\"\x01z\",nan\n");
    expect(ENG_FMT_CSV_WITH_NAMES, 0, "\"i\",\"s\tx\",\"f\"\n");
    expect(ENG_FMT_JSON_EACH_ROW, 3,
           "{\"i\":\"0\",\"s\\tx\":\"a\\tb\\n\\\\c\",\"f\":0.5}\n"
           "{\"i\":null,\"s\\tx\":\"say \\\"hi\\\"\",\"f\":null}\n"
           "{\"i\":\"2000000014\",\"s\\tx\":\"\\u0001z\",\"f\":null}\n");
    expect(ENG_FMT_NULL, 3, "");
}

/* The JSON document: meta, data, rows, statistics, TAB-indented, as
 * ClickHouse writes it; the compact and the row variants. */
static void test_json_formats(void **state)
{
    (void)state;
    expect(
        ENG_FMT_JSON, 2,
        "{\n\t\"meta\":\n\t[\n"
        "\t\t{\n\t\t\t\"name\": \"i\",\n\t\t\t\"type\": \"Nullable(Int64)\"\n\t\t},\n"
        "\t\t{\n\t\t\t\"name\": \"s\\tx\",\n\t\t\t\"type\": \"String\"\n\t\t},\n"
        "\t\t{\n\t\t\t\"name\": \"f\",\n\t\t\t\"type\": \"Float64\"\n\t\t}\n"
        "\t],\n\n\t\"data\":\n\t[\n"
        "\t\t{\n\t\t\t\"i\": \"0\",\n\t\t\t\"s\\tx\": \"a\\tb\\n\\\\c\",\n\t\t\t\"f\": 0.5\n\t\t},\n"
        "\t\t{\n\t\t\t\"i\": null,\n\t\t\t\"s\\tx\": \"say \\\"hi\\\"\",\n\t\t\t\"f\": null\n\t\t}\n"
        "\t],\n\n\t\"rows\": 2,\n\n"
        "\t\"statistics\":\n\t{\n\t\t\"elapsed\": 0.5,\n\t\t\"rows_read\": 10,\n"
        "\t\t\"bytes_read\": 80\n\t}\n}\n");
    /* no rows: an empty data array, as ClickHouse leaves it */
    char *t = render(ENG_FMT_JSON, 0, 1);
    assert_non_null(strstr(t, "\t\"data\":\n\t[\n\n\t],\n\n\t\"rows\": 0,\n\n"));
    free(t);
    t = render(ENG_FMT_JSON_COMPACT, 2, 1);
    assert_non_null(strstr(t, "\t\"data\":\n\t[\n\t\t[\"0\", \"a\\tb\\n\\\\c\", 0.5],\n"
                              "\t\t[null, \"say \\\"hi\\\"\", null]\n\t],\n"));
    free(t);
    t = render(ENG_FMT_JSON_STRINGS, 1, 1);
    assert_non_null(strstr(t, "\t\t\t\"f\": \"0.5\"\n"));
    free(t);
    expect(ENG_FMT_JSON_COMPACT_EACH_ROW, 2,
           "[\"0\", \"a\\tb\\n\\\\c\", 0.5]\n[null, \"say \\\"hi\\\"\", null]\n");
    expect(ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES_AND_TYPES, 1,
           "[\"i\", \"s\\tx\", \"f\"]\n[\"Nullable(Int64)\", \"String\", \"Float64\"]\n"
           "[\"0\", \"a\\tb\\n\\\\c\", 0.5]\n");
    expect(ENG_FMT_JSON_STRINGS_EACH_ROW, 1,
           "{\"i\":\"0\",\"s\\tx\":\"a\\tb\\n\\\\c\",\"f\":\"0.5\"}\n");
    expect(ENG_FMT_JSON_COMPACT_STRINGS_EACH_ROW, 1, "[\"0\", \"a\\tb\\n\\\\c\", \"0.5\"]\n");
}

/* Headers with types; the formats for people and for SQL. */
static void test_other_formats(void **state)
{
    (void)state;
    expect(ENG_FMT_TSV_WITH_NAMES_AND_TYPES, 1,
           "i\ts\\tx\tf\nNullable(Int64)\tString\tFloat64\n0\ta\\tb\\n\\\\c\t0.5\n");
    expect(ENG_FMT_CSV_WITH_NAMES_AND_TYPES, 0,
           "\"i\",\"s\tx\",\"f\"\n\"Nullable(Int64)\",\"String\",\"Float64\"\n");
    expect(ENG_FMT_TSV_RAW, 1, "0\ta\tb\n\\c\t0.5\n");
    expect(ENG_FMT_VALUES, 3,
           "(0,'a\\tb\\n\\\\c',0.5),(NULL,'say \"hi\"',inf),"
           "(2000000014,'\x01z',nan)");
    expect(ENG_FMT_VERTICAL, 2,
           "Row 1:\n──────\ni:   0\ns\tx: a\tb\n\\c\nf:   0.5\n"
           "\nRow 2:\n──────\ni:   ᴺᵁᴸᴸ\ns\tx: say \"hi\"\nf:   inf\n");
    expect(ENG_FMT_MARKDOWN, 2,
           "| i | s\tx | f |\n|-:|:-|-:|\n| 0 | a\tb\n\\c | 0.5 |\n| ᴺᵁᴸᴸ | say \"hi\" | inf |\n");
    expect(ENG_FMT_PRETTY, 2,
           "┏━━━━━━┳━━━━━━━━━━┳━━━━━┓\n"
           "┃    i ┃ s\tx      ┃   f ┃\n"
           "┡━━━━━━╇━━━━━━━━━━╇━━━━━┩\n"
           "│    0 │ a\tb\n\\c   │ 0.5 │\n"
           "├──────┼──────────┼─────┤\n"
           "│ ᴺᵁᴸᴸ │ say \"hi\" │ inf │\n"
           "└──────┴──────────┴─────┘\n");
    expect(ENG_FMT_PRETTY_SPACE, 2,
           "    i   s\tx          f\n\n"
           "    0   a\tb\n\\c     0.5\n"
           " ᴺᵁᴸᴸ   say \"hi\"   inf\n");
}

static void test_blocks_write_what_one_block_writes(void **state)
{
    (void)state;
    static const eng_format f[] = {ENG_FMT_TSV_WITH_NAMES, ENG_FMT_CSV,    ENG_FMT_JSON_EACH_ROW,
                                   ENG_FMT_PRETTY_COMPACT, ENG_FMT_JSON,   ENG_FMT_JSON_COMPACT,
                                   ENG_FMT_VERTICAL,       ENG_FMT_VALUES, ENG_FMT_PRETTY};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        char *whole = render(f[i], 2500, 2500);
        char *cut = render(f[i], 2500, 7);
        assert_true(strlen(whole) > 2500);
        assert_string_equal(cut, whole);
        free(whole);
        free(cut);
    }
}

static void test_pretty_compact(void **state)
{
    (void)state;
    /* the widest value (row 2's i) decides the column's width, even though it
     * comes in a later block than the first rows */
    char *t = render(ENG_FMT_PRETTY_COMPACT, 3, 2);
    assert_string_equal(t, "┌──────────i─┬─s\tx──────┬───f─┐\n"
                           "│          0 │ a\tb\n\\c   │ 0.5 │\n"
                           "│       ᴺᵁᴸᴸ │ say \"hi\" │ inf │\n"
                           "│ 2000000014 │ \x01z       │ nan │\n"
                           "└────────────┴──────────┴─────┘\n");
    free(t);
    t = render(ENG_FMT_PRETTY_COMPACT, 0, 1);
    assert_string_equal(t, ""); /* an empty result draws nothing */
    free(t);
    t = render(ENG_FMT_PRETTY_COMPACT, 10003, 4096);
    size_t rows = 0; /* lines that start a row (some values hold a newline) */
    for (const char *p = strstr(t, "\n│"); p; p = strstr(p + 1, "\n│"))
        rows++;
    assert_int_equal(rows, 10000);
    assert_non_null(strstr(t, "  Showed first 10000.\n"));
    free(t);
}

static void test_a_failing_writer_is_an_error_sentence(void **state)
{
    (void)state;
    static const eng_format f[] = {ENG_FMT_TSV, ENG_FMT_PRETTY_COMPACT};
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        capture c = {.fail = -ENOSPC};
        eng_writer w = {cap_write, cap_flush, &c};
        eng_sink *s;
        char err[256] = "";
        assert_int_equal(eng_sink_format_create(&s, f[i], &w), 0);
        assert_int_equal(s->ops->begin(s, names, types, 3, err, sizeof(err)), 0);
        ex_vec cols[3];
        make_cols(cols, 3);
        eng_block b = {cols, 3, 3};
        int rc = s->ops->write(s, &b, err, sizeof(err));
        if (rc == 0) /* PrettyCompact writes at the end */
            rc = s->ops->end(s, err, sizeof(err));
        assert_int_equal(rc, -EIO);
        assert_non_null(strstr(err, "cannot write the result"));
        assert_non_null(strstr(err, strerror(ENOSPC)));
        assert_int_equal(c.flushes, 0);
        eng_sink_destroy(&s);
        clear_cols(cols);
    }
}

static void test_format_names(void **state)
{
    (void)state;
    assert_int_equal(eng_format_parse("tabseparated"), ENG_FMT_TSV);
    assert_int_equal(eng_format_parse("TSVWithNames"), ENG_FMT_TSV_WITH_NAMES);
    assert_int_equal(eng_format_parse("JSONLines"), ENG_FMT_JSON_EACH_ROW);
    assert_int_equal(eng_format_parse("Pretty"), ENG_FMT_PRETTY);
    assert_int_equal(eng_format_parse("PrettyCompactMonoBlock"), ENG_FMT_PRETTY_COMPACT);
    assert_int_equal(eng_format_parse("JSON"), ENG_FMT_JSON);
    assert_int_equal(eng_format_parse("json"), ENG_FMT_JSON);
    assert_int_equal(eng_format_parse("JSONCompactEachRowWithNamesAndTypes"),
                     ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES_AND_TYPES);
    assert_string_equal(eng_format_name(ENG_FMT_TSV), "TabSeparated");
    assert_string_equal(eng_format_name(ENG_FMT_JSON_COMPACT), "JSONCompact");
    assert_int_equal(eng_format_parse("Null"), ENG_FMT_NULL);
    assert_int_equal(eng_format_parse("Parquet"), ENG_FMT_PARQUET);
    assert_int_equal(eng_format_parse("Parquett"), -EINVAL);
    eng_sink *s = (eng_sink *)1;
    capture c = {0};
    eng_writer w = {cap_write, NULL, &c};
    assert_int_equal(eng_sink_format_create(&s, (eng_format)99, &w), -EINVAL);
    assert_null(s);
    eng_sink_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_formats),
        cmocka_unit_test(test_json_formats),
        cmocka_unit_test(test_other_formats),
        cmocka_unit_test(test_blocks_write_what_one_block_writes),
        cmocka_unit_test(test_pretty_compact),
        cmocka_unit_test(test_a_failing_writer_is_an_error_sentence),
        cmocka_unit_test(test_format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
