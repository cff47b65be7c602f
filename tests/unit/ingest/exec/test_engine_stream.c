/* SPDX-License-Identifier: Apache-2.0
 *
 * test_engine_stream.c: results stream to the sink. Over 24 CSV files of
 * about 1 MiB each (files of a temp folder, read by file()), SELECT * without
 * GROUP BY or ORDER BY finishes under a max_memory_usage of a third of the
 * result's size, its output whole and in order at one thread; the same with
 * ORDER BY and no LIMIT still holds every row and meets the limit (it says
 * so); blocks reach a sink of the caller's (eng_ctx.open_sink) one at a time,
 * begun once and ended once; OFFSET and LIMIT cut across blocks and files;
 * two workers share the sink, every row once (label `threads`: TSan in CI); a
 * writer that fails makes the query fail with a sentence saying so; a CSV
 * row of the wrong width fails every query shape with one sentence.
 */
#include "eng.h"
#include "harness.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define N_FILES       24
#define ROWS_PER_FILE 20000

static h_env *env;

/* Row i of the data: "i,<name of i>"; the name is about 48 bytes. */
static int name_of(int i, char *buf, size_t cap)
{
    return snprintf(buf, cap, "user-%08d-abcdefghijklmnopqrstuvwxyz-%06d", i, i % 7919);
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(h_env_create(&env, "engine_stream"), 0);
    for (int f = 0; f < N_FILES; f++) {
        char path[4096], name[64];
        snprintf(name, sizeof(name), "part-%02d.csv", f);
        assert_int_equal(h_env_path(env, path, sizeof(path), name), 0);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs("id,name\n", fp);
        for (int r = 0; r < ROWS_PER_FILE; r++) {
            int i = f * ROWS_PER_FILE + r;
            char nm[64];
            name_of(i, nm, sizeof(nm));
            fprintf(fp, "%d,%s\n", i, nm);
        }
        assert_int_equal(fclose(fp), 0);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

/* The bytes of the result, kept. */
typedef struct capture {
    char *p;
    size_t n, cap;
    size_t fail_after; /* > 0: a write past this many bytes fails with EPIPE */
} capture;

static int cap_write(void *arg, const void *buf, size_t len)
{
    capture *c = arg;
    if (c->fail_after && c->n + len > c->fail_after)
        return -EPIPE;
    if (c->n + len > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1 << 16;
        while (cap < c->n + len)
            cap *= 2;
        char *p = realloc(c->p, cap);
        assert_non_null(p);
        c->p = p;
        c->cap = cap;
    }
    memcpy(c->p + c->n, buf, len);
    c->n += len;
    return 0;
}

/* What a query did: its bytes, counters, error. */
typedef struct outcome {
    capture c;
    eng_result res;
    char err[ENG_MSG_MAX];
    int rc;
} outcome;

/* Runs sql ({D} is the data folder) in TSV, its bytes into o->c; base: other
 * fields of the context (NULL: none; max_threads 0: one thread). */
static void run(const char *sql, const eng_ctx *base, outcome *o)
{
    eng_writer w = {cap_write, NULL, &o->c};
    eng_ctx ctx = base ? *base : (eng_ctx){0};
    ctx.writer = &w;
    ctx.format = ENG_FMT_TSV;
    if (ctx.max_threads == 0)
        ctx.max_threads = 1;
    char q[8192];
    const char *at = strstr(sql, "{D}");
    assert_non_null(at);
    snprintf(q, sizeof(q), "%.*s%s%s", (int)(at - sql), sql, h_env_dir(env), at + 3);
    o->rc = eng_run(&ctx, q, strlen(q), NULL, &o->res, o->err, sizeof(o->err));
    if (o->rc < 0)
        fprintf(stderr, "%s: %s\n", q, o->err);
}

/* The TSV of rows [from, to). */
static char *expected(int from, int to, size_t *len)
{
    size_t cap = (size_t)(to - from) * 80 + 1, n = 0;
    char *e = malloc(cap);
    assert_non_null(e);
    for (int i = from; i < to; i++) {
        char nm[64];
        name_of(i, nm, sizeof(nm));
        n += (size_t)snprintf(e + n, cap - n, "%d\t%s\n", i, nm);
    }
    *len = n;
    return e;
}

static void test_select_star_streams_under_the_limit(void **state)
{
    (void)state;
    size_t len;
    char *want = expected(0, N_FILES * ROWS_PER_FILE, &len);
    assert_true(len > 15u << 20); /* the result is about 16 MiB ... */
    /* ... and the query may hold a third of it */
    outcome o = {0};
    run("SELECT * FROM file('{D}/*.csv', 'CSVWithNames') SETTINGS max_memory_usage = 5000000", NULL,
        &o);
    assert_int_equal(o.rc, 0);
    assert_int_equal(o.res.rows_out, N_FILES * ROWS_PER_FILE);
    assert_true(o.res.peak_memory < 5000000);
    assert_int_equal(o.c.n, len);
    assert_memory_equal(o.c.p, want, len);
    free(o.c.p);
    free(want);
}

static void test_order_by_without_limit_holds_every_row(void **state)
{
    (void)state;
    outcome o = {0};
    run("SELECT * FROM file('{D}/*.csv', 'CSVWithNames') ORDER BY id "
        "SETTINGS max_memory_usage = 5000000",
        NULL, &o);
    assert_int_equal(o.rc, -ENOMEM);
    assert_non_null(strstr(o.err, "max_memory_usage"));
    assert_int_equal(o.c.n, 0); /* nothing was written */
    free(o.c.p);
}

/* A sink of the caller's: counts what it is told. */
typedef struct counting_sink {
    eng_sink base;
    int begins, ends, blocks, n_cols;
    uint64_t rows;
    uint32_t max_block;
    char first_name[32];
} counting_sink;

static int cs_begin(eng_sink *s, const char *const *names, const ex_type *types, int n_cols,
                    char *err, size_t errlen)
{
    (void)types, (void)err, (void)errlen;
    counting_sink *c = (counting_sink *)s;
    c->begins++;
    c->n_cols = n_cols;
    snprintf(c->first_name, sizeof(c->first_name), "%s", names[0]);
    return 0;
}

static int cs_write(eng_sink *s, const eng_block *b, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    counting_sink *c = (counting_sink *)s;
    assert_int_equal(c->begins, 1);
    assert_int_equal(c->ends, 0);
    assert_int_equal(b->n_cols, c->n_cols);
    c->blocks++;
    c->rows += b->n_rows;
    if (b->n_rows > c->max_block)
        c->max_block = b->n_rows;
    return 0;
}

static int cs_end(eng_sink *s, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ((counting_sink *)s)->ends++;
    return 0;
}

static void cs_destroy(eng_sink *s)
{
    (void)s; /* the test's own */
}

static const eng_sink_ops cs_ops = {cs_begin, cs_write, cs_end, cs_destroy};

static int cs_open(void *arg, eng_format fmt, eng_sink **out, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    assert_int_equal(fmt, ENG_FMT_JSON_EACH_ROW);
    *out = arg;
    return 0;
}

static void test_blocks_reach_the_callers_sink_one_at_a_time(void **state)
{
    (void)state;
    counting_sink cs = {.base.ops = &cs_ops};
    eng_ctx ctx = {.open_sink = cs_open, .sink_arg = &cs};
    outcome o = {0};
    run("SELECT id AS k, name FROM file('{D}/*.csv', 'CSVWithNames') FORMAT JSONEachRow", &ctx, &o);
    assert_int_equal(o.rc, 0);
    assert_int_equal(cs.begins, 1);
    assert_int_equal(cs.ends, 1);
    assert_int_equal(cs.n_cols, 2);
    assert_string_equal(cs.first_name, "k");
    assert_int_equal(cs.rows, N_FILES * ROWS_PER_FILE);
    assert_true(cs.blocks >= N_FILES); /* at least a block per file, none the whole */
    assert_true(cs.max_block <= ROWS_PER_FILE);
    assert_int_equal(o.res.rows_out, cs.rows);
    assert_int_equal(o.c.n, 0); /* the caller's sink took the rows, not the writer */
}

static void test_offset_and_limit_cut_across_blocks(void **state)
{
    (void)state;
    static const struct {
        int offset, limit;
    } t[] = {
        {0, 5},
        {3, 7},
        {19998, 5},
        {70000, 45000},
        {N_FILES * ROWS_PER_FILE - 2, 10},
        {N_FILES * ROWS_PER_FILE + 5, 10},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "SELECT * FROM file('{D}/*.csv', 'CSVWithNames') LIMIT %d OFFSET %d", t[i].limit,
                 t[i].offset);
        outcome o = {0};
        run(sql, NULL, &o);
        assert_int_equal(o.rc, 0);
        int total = N_FILES * ROWS_PER_FILE;
        int from = t[i].offset < total ? t[i].offset : total;
        int to = from + t[i].limit < total ? from + t[i].limit : total;
        size_t len;
        char *want = expected(from, to, &len);
        assert_int_equal(o.res.rows_out, (uint64_t)(to - from));
        assert_int_equal(o.c.n, len);
        if (len)
            assert_memory_equal(o.c.p, want, len);
        free(want);
        free(o.c.p);
    }
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of text (modified in place), sorted. */
static char **sorted_lines(char *text, size_t len, size_t *n)
{
    size_t cap = 1024;
    char **l = malloc(cap * sizeof(char *));
    assert_non_null(l);
    *n = 0;
    for (size_t i = 0, start = 0; i < len; i++) {
        if (text[i] != '\n')
            continue;
        text[i] = 0;
        if (*n == cap) {
            cap *= 2;
            l = realloc(l, cap * sizeof(char *));
            assert_non_null(l);
        }
        l[(*n)++] = text + start;
        start = i + 1;
    }
    qsort(l, *n, sizeof(char *), line_cmp);
    return l;
}

static void test_two_workers_share_the_sink(void **state)
{
    (void)state;
    eng_ctx ctx = {.max_threads = 2};
    outcome o = {0};
    run("SELECT * FROM file('{D}/*.csv', 'CSVWithNames') SETTINGS max_memory_usage = 16000000",
        &ctx, &o);
    assert_int_equal(o.rc, 0);
    size_t len;
    char *want = expected(0, N_FILES * ROWS_PER_FILE, &len);
    assert_int_equal(o.c.n, len);
    size_t ng, nw;
    char **got = sorted_lines(o.c.p, o.c.n, &ng), **exp = sorted_lines(want, len, &nw);
    assert_int_equal(ng, N_FILES * ROWS_PER_FILE);
    assert_int_equal(ng, nw);
    for (size_t i = 0; i < ng; i++)
        assert_string_equal(got[i], exp[i]);
    free(got);
    free(exp);
    free(want);
    free(o.c.p);
}

static void test_a_failing_writer_fails_the_query(void **state)
{
    (void)state;
    outcome o = {.c.fail_after = 100000};
    run("SELECT * FROM file('{D}/*.csv', 'CSVWithNames')", NULL, &o);
    assert_int_equal(o.rc, -EIO);
    assert_non_null(strstr(o.err, "cannot write the result"));
    assert_non_null(strstr(o.err, strerror(EPIPE)));
    free(o.c.p);
}

/* A CSV row with an extra field (and one with a field too few): DESCRIBE,
 * SELECT *, SELECT of one column before it and count() all fail with the
 * sentence naming the file, the row's line and both widths; none invents a
 * column or blames the header. */
static void test_a_row_of_the_wrong_width(void **state)
{
    (void)state;
    static const char *const files[] = {"wide.csv", "a,b,c\n1,x,2\n3,z,4,5\n", "narrow.csv",
                                        "a,b,c\n1,x,2\n3,z\n"};
    static const char *const queries[] = {"DESCRIBE", "SELECT * FROM", "SELECT a FROM",
                                          "SELECT count() FROM", "SELECT b, a FROM"};
    for (int f = 0; f < 2; f++) {
        char path[4096];
        assert_int_equal(h_env_path(env, path, sizeof(path), files[2 * f]), 0);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(files[2 * f + 1], fp);
        assert_int_equal(fclose(fp), 0);
        char expect[200];
        snprintf(expect, sizeof(expect), "%s, line 3: the row has %d fields, the header 3",
                 files[2 * f], f == 0 ? 4 : 2);
        for (size_t q = 0; q < sizeof(queries) / sizeof(queries[0]); q++) {
            char sql[256];
            snprintf(sql, sizeof(sql), "%s file('{D}/%s')", queries[q], files[2 * f]);
            outcome *o = calloc(1, sizeof(*o));
            assert_non_null(o);
            run(sql, NULL, o);
            assert_int_equal(o->rc, -EBADMSG);
            if (!strstr(o->err, expect))
                fprintf(stderr, "%s: '%s' lacks '%s'\n", sql, o->err, expect);
            assert_non_null(strstr(o->err, expect));
            assert_null(strstr(o->err, "c4"));
            assert_null(strstr(o->err, "glob"));
            free(o->c.p);
            free(o);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_star_streams_under_the_limit),
        cmocka_unit_test(test_order_by_without_limit_holds_every_row),
        cmocka_unit_test(test_blocks_reach_the_callers_sink_one_at_a_time),
        cmocka_unit_test(test_offset_and_limit_cut_across_blocks),
        cmocka_unit_test(test_two_workers_share_the_sink),
        cmocka_unit_test(test_a_failing_writer_fails_the_query),
        cmocka_unit_test(test_a_row_of_the_wrong_width),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
