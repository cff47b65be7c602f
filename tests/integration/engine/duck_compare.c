/* SPDX-License-Identifier: Apache-2.0
 *
 * duck_compare.c: the comparison helpers of the DuckDB-oracle tests (see
 * duck_compare.h).
 */
#include "duck_compare.h"

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

char *dc_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    return b;
}

static int split(char *s, char sep, char **parts, int max)
{
    int n = 0;
    if (!*s)
        return 0;
    for (;;) {
        if (n == max)
            return -1;
        parts[n++] = s;
        char *e = strchr(s, sep);
        if (!e)
            return n;
        *e = 0;
        s = e + 1;
        if (sep == '\n' && !*s)
            return n;
    }
}

static bool same_field(const char *a, const char *b, bool exact)
{
    if (strcmp(a, b) == 0)
        return true;
    if (exact)
        return false;
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (*a && *b && !*ea && !*eb) {
        if (isnan(x) && isnan(y))
            return true;
        return fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y)) + 1e-12;
    }
    return false;
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Compares two TSV texts; prints the first difference. */
static bool same_result(const char *name, char *got, char *want, bool sorted, bool exact)
{
    static char *gl[200000], *wl[200000];
    int ng = split(got, '\n', gl, 200000), nw = split(want, '\n', wl, 200000);
    if (ng != nw) {
        fprintf(stderr, "%s: %d rows, DuckDB has %d\n", name, ng, nw);
        return false;
    }
    if (sorted) {
        qsort(gl, (size_t)ng, sizeof(char *), cmp_line);
        qsort(wl, (size_t)nw, sizeof(char *), cmp_line);
    }
    for (int i = 0; i < ng; i++) {
        char *gf[64], *wf[64];
        char gcopy[8192], wcopy[8192];
        snprintf(gcopy, sizeof(gcopy), "%s", gl[i]);
        snprintf(wcopy, sizeof(wcopy), "%s", wl[i]);
        int a = split(gcopy, '\t', gf, 64), b = split(wcopy, '\t', wf, 64);
        bool ok = a == b;
        for (int k = 0; ok && k < a; k++)
            ok = same_field(gf[k], wf[k], exact);
        if (!ok) {
            fprintf(stderr, "%s: row %d differs\n  engine: %s\n  duckdb: %s\n", name, i + 1, gl[i],
                    wl[i]);
            return false;
        }
    }
    return true;
}

bool dc_same_result(const char *name, char *got, char *want, bool sorted)
{
    return same_result(name, got, want, sorted, false);
}

bool dc_same_text(const char *name, char *got, char *want, bool sorted)
{
    return same_result(name, got, want, sorted, true);
}

int dc_generate(h_env *env, const char *name, const char *script, const char *const *args,
                int timeout_ms)
{
    char path[4096];
    if (h_source_path(path, sizeof(path), script) < 0)
        return -1;
    char *argv[11] = {"node", path};
    int n = 2;
    for (; args && args[n - 2] && n < 10; n++)
        argv[n] = (char *)args[n - 2];
    argv[n] = NULL;
    h_proc *p;
    int rc = h_proc_start(env, &p, name, argv, NULL, NULL, 0);
    if (rc == -ENOENT)
        h_skip("node is not installed (it runs DuckDB for the test's data)");
    if (rc < 0)
        return -1;
    int st = h_proc_wait(p, timeout_ms);
    if (st == 77) {
        h_proc_print_log_tail(p, 5);
        h_skip("the data generator needs @duckdb/node-api (see its log above)");
    }
    if (st == 127)
        h_skip("node is not installed (it runs DuckDB for the test's data)");
    if (st != 0) {
        h_proc_print_log_tail(p, 30);
        return -1;
    }
    return 0;
}

int dc_gen_data(h_env *env, char *dir, size_t cap)
{
    h_env_path(env, dir, cap, "data");
    return dc_generate(env, "gen", "tests/integration/engine/gen.mjs", (const char *[]){dir, NULL},
                       120000);
}

int dc_run(const eng_ctx *base, const char *sql, int threads, char **out, eng_result *res,
           char *err, size_t errlen)
{
    size_t len = 0;
    *out = NULL;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    eng_ctx ctx = base ? *base : (eng_ctx){.format = ENG_FMT_TSV};
    ctx.out = f;
    ctx.max_threads = threads;
    int rc = eng_run(&ctx, sql, strlen(sql), NULL, res, err, errlen);
    fclose(f);
    return rc;
}

void dc_expect_errorv(const eng_ctx *base, const char *sql, va_list needles)
{
    char *out = NULL, err[ENG_MSG_MAX] = "";
    int rc = dc_run(base, sql, 2, &out, NULL, err, sizeof(err));
    free(out);
    if (rc >= 0)
        fprintf(stderr, "expected an error from: %s\n", sql);
    assert_true(rc < 0);
    for (const char *n; (n = va_arg(needles, const char *));) {
        if (!strstr(err, n))
            fprintf(stderr, "error '%s' lacks '%s'\n", err, n);
        assert_non_null(strstr(err, n));
    }
}

void dc_expect_error(const eng_ctx *base, const char *sql, ...)
{
    va_list ap;
    va_start(ap, sql);
    dc_expect_errorv(base, sql, ap);
    va_end(ap);
}

char *dc_cases(const char *dir)
{
    char path[4300];
    snprintf(path, sizeof(path), "%s/cases.tsv", dir);
    char *cases = dc_slurp(path);
    assert_non_null(cases);
    return cases;
}

void dc_case_parse(char *line, dc_case *c)
{
    c->name = line;
    char *t1 = strchr(line, '\t');
    assert_non_null(t1);
    *t1 = 0;
    c->flags = t1 + 1;
    char *t2 = strchr(c->flags, '\t');
    assert_non_null(t2);
    *t2 = 0;
    c->sql = t2 + 1;
}

bool dc_run_matches(const eng_ctx *base, const char *dir, const char *name, const char *what,
                    const char *sql, int threads, bool sorted, bool exact)
{
    char *out = NULL, err[ENG_MSG_MAX];
    if (dc_run(base, sql, threads, &out, NULL, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s: the engine failed: %s\n  %s\n", name, err, sql);
        free(out);
        return false;
    }
    char path[4300];
    snprintf(path, sizeof(path), "%s/%s.expected", dir, name);
    char *want = dc_slurp(path);
    assert_non_null(want);
    bool same =
        exact ? dc_same_text(name, out, want, sorted) : dc_same_result(name, out, want, sorted);
    if (!same)
        fprintf(stderr, "  %s (%d threads): %s\n", what, threads, sql);
    free(want);
    free(out);
    return same;
}

int dc_setup(h_env **env, const char *test_name, char *dir, size_t cap)
{
    if (h_env_create(env, test_name) < 0)
        return -1;
    return dc_gen_data(*env, dir, cap);
}
