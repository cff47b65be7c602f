/* SPDX-License-Identifier: Apache-2.0
 *
 * test_dist_states.c: the partial states of distributed execution against
 * the single-server answer and DuckDB. Every query of gen.mjs's table is
 * planned on an "initiator" (ingest/dist/dist_plan.h: files, and row-group
 * ranges of the large Parquet file), its units handed out by the scheduler
 * to three simulated servers; each unit runs on its own to its mergeable
 * state (exec/eng_partial.h), goes through the wire format
 * (dist/dist_state.h) and is merged on the initiator, which finishes ORDER
 * BY / LIMIT / HAVING. The answer must equal the engine's single run
 * (exactly) and DuckDB's. A second pass loses a server after its first
 * unit, with that unit's result and an in-flight one arriving late: they
 * must be dropped (counted once) and the answer stays the same. Skips (77)
 * without node or @duckdb/node-api.
 */
#include "dist_plan.h"
#include "dist_state.h"
#include "duck_compare.h"
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

static h_env *env;
static char dir[4096];

static int setup(void **state)
{
    (void)state;
    return dc_setup(&env, "test_dist_states", dir, sizeof(dir));
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

/* The single run: eng_run's TSV. */
static int run_single(const char *sql, char **out, char *err, size_t errlen)
{
    return dc_run(NULL, sql, 2, out, NULL, err, errlen);
}

/* One unit run to its state, on the wire. */
static int run_unit(const char *sql, const dist_unit *u, int id, ew_buf *b, char *err,
                    size_t errlen)
{
    eng_unit eu;
    dist_unit_to_eng(u, &eu);
    eng_ctx ctx = {.format = ENG_FMT_TSV, .max_threads = 1, .unit = &eu};
    eng_pstate *ps;
    int rc = eng_pstate_open(&ctx, sql, strlen(sql), &ps, err, errlen);
    if (rc == 0)
        rc = eng_pstate_run(ps, err, errlen);
    ew_init(b, 0);
    if (rc == 0 && (rc = dist_state_encode(ps, (uint32_t)id, b)) < 0)
        snprintf(err, errlen, "encoding the state failed: %s", strerror(-rc));
    eng_pstate_destroy(&ps);
    return rc;
}

typedef struct dist_counts {
    int units, dropped, max_units;
    uint64_t rows_read;
} dist_counts;

/* The distributed run over three simulated servers; lose >= 0: that server
 * is lost after its first unit, whose result (and the one it had in flight)
 * arrive after it was given up on. */
static int run_dist(const char *sql, uint64_t split, int lose, char **out, dist_counts *dc,
                    char *err, size_t errlen)
{
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    eng_ctx ictx = {.out = f, .format = ENG_FMT_TSV, .max_threads = 2};
    eng_pstate *init;
    int rc = eng_pstate_open(&ictx, sql, strlen(sql), &init, err, errlen);
    dist_units us = {0};
    if (rc == 0 && (rc = dist_units_plan(init, split, &us)) < 0)
        snprintf(err, errlen, "planning the units failed: %s", strerror(-rc));
    static const char *const servers[] = {"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"};
    dist_sched *s = NULL;
    if (rc == 0)
        assert_int_equal(dist_sched_create(&s, &us, servers, 3, 0), 0);
    dc->units = us.n;
    uint64_t now = 1;
    int done_by_lost = 0;
    ew_buf late[2];
    int n_late = 0;
    while (rc == 0 && !dist_sched_done(s)) {
        bool any = false;
        for (int srv = 0; srv < 3 && rc == 0; srv++) {
            int u = dist_sched_next(s, srv, now);
            if (u < 0)
                continue;
            any = true;
            ew_buf b;
            if ((rc = run_unit(sql, &us.u[u], u, &b, err, errlen)) < 0) {
                ew_free(&b);
                break;
            }
            if (srv == lose && done_by_lost++ == 0) {
                /* its first result is late, and it takes one more unit before it dies */
                late[n_late++] = b;
                int u2 = dist_sched_next(s, srv, now);
                dist_sched_lose(s, srv);
                if (u2 >= 0 && run_unit(sql, &us.u[u2], u2, &late[n_late], err, errlen) == 0)
                    n_late++;
                continue;
            }
            if (dist_sched_complete(s, u, srv))
                rc = dist_state_merge(init, b.p, b.n, err, errlen);
            ew_free(&b);
        }
        now++;
        if (!any && !dist_sched_done(s) && rc == 0) {
            snprintf(err, errlen, "the scheduler handed out nothing with units left");
            rc = -EDEADLK;
        }
    }
    for (int i = 0; i < n_late; i++) {
        dist_state_hdr h;
        assert_int_equal(dist_state_header(late[i].p, late[i].n, &h, err, errlen), 0);
        if (!dist_sched_complete(s, (int)h.unit, lose))
            dc->dropped++;
        else if (rc == 0) /* as the initiator does with a result that counts */
            rc = dist_state_merge(init, late[i].p, late[i].n, err, errlen);
        ew_free(&late[i]);
    }
    for (int srv = 0; s && srv < 3; srv++)
        if (dist_sched_count(s, srv) > dc->max_units)
            dc->max_units = dist_sched_count(s, srv);
    eng_result res;
    if (rc == 0)
        rc = eng_pstate_finish(init, &res, err, errlen);
    if (rc == 0)
        dc->rows_read = res.rows_read;
    dist_sched_destroy(&s);
    dist_units_free(&us);
    eng_pstate_destroy(&init);
    fclose(f);
    return rc;
}

static void test_dist_states_match_single_run(void **state)
{
    (void)state;
    char path[4300];
    char *cases = dc_cases(dir);
    int n = 0, failed = 0, split_units = 0, dropped = 0, not_dist = 0;
    for (char *line = strtok(cases, "\n"); line; line = strtok(NULL, "\n")) {
        dc_case c;
        dc_case_parse(line, &c);
        const char *name = c.name, *sql = c.sql;
        bool sorted = strcmp(c.flags, "sorted") == 0;
        char *single = NULL, err[ENG_MSG_MAX];
        if (run_single(sql, &single, err, sizeof(err)) < 0) {
            fprintf(stderr, "%s: the single run failed: %s\n", name, err);
            failed++;
            free(single);
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s.expected", dir, name);
        char *want = dc_slurp(path);
        assert_non_null(want);
        /* by file; by row group; by row group with a server lost */
        static const struct {
            uint64_t split;
            int lose;
        } passes[] = {{0, -1}, {1, -1}, {1, 1}};
        bool local = false;
        for (size_t k = 0; k < sizeof(passes) / sizeof(passes[0]) && !local; k++) {
            char *got = NULL;
            dist_counts dc = {0};
            int rc = run_dist(sql, passes[k].split, passes[k].lose, &got, &dc, err, sizeof(err));
            if (rc == -ENOTSUP) {
                /* the files are read below its top (a subquery in FROM): not
                 * distributed, the initiator runs it alone */
                fprintf(stderr, "%s: not distributed (%s)\n", name, err);
                not_dist++;
                local = true;
                free(got);
                continue;
            }
            if (rc < 0) {
                fprintf(stderr, "%s: the distributed run failed: %s\n  %s\n", name, err, sql);
                failed++;
                free(got);
                continue;
            }
            if (passes[k].split && dc.units > 1)
                split_units++;
            dropped += dc.dropped;
            char *a = strdup(single), *b = strdup(got), *w = strdup(want);
            assert_non_null(a);
            assert_non_null(b);
            assert_non_null(w);
            bool ok = dc_same_result(name, b, a, sorted);
            if (ok) {
                char *b2 = strdup(got);
                ok = dc_same_result(name, b2, w, sorted);
                free(b2);
            }
            if (!ok) {
                fprintf(stderr, "  distributed (split %llu, lost %d, %d units): %s\n",
                        (unsigned long long)passes[k].split, passes[k].lose, dc.units, sql);
                failed++;
            }
            free(a);
            free(b);
            free(w);
            free(got);
        }
        free(want);
        free(single);
        n += !local;
    }
    free(cases);
    fprintf(stderr,
            "%d queries distributed over 3 simulated servers, %d mismatches, %d runs "
            "split by row group, %d late results dropped, %d not distributed\n",
            n, failed, split_units, dropped, not_dist);
    assert_true(not_dist <= 2); /* a subquery's files only */
    assert_true(n >= 35);
    assert_int_equal(failed, 0);
    assert_true(split_units >= n); /* the glob gives several units to every query */
    assert_true(dropped >= n);     /* every lost-server pass dropped its late results */
}

/* Every kind of aggregate through the wire, with keys of each type, against
 * a run that is not split, and a state of another statement refused. */
static void test_dist_states_refuse_another_statement(void **state)
{
    (void)state;
    char sql[8192], sql2[8192], err[ENG_MSG_MAX];
    snprintf(sql, sizeof(sql),
             "SELECT OwnerDisplayName, count() FROM file('%s/posts.parquet') "
             "GROUP BY OwnerDisplayName",
             dir);
    snprintf(sql2, sizeof(sql2),
             "SELECT OwnerDisplayName, sum(Score) FROM file('%s/posts.parquet') "
             "GROUP BY OwnerDisplayName",
             dir);
    eng_ctx ctx = {.format = ENG_FMT_TSV, .max_threads = 1};
    eng_pstate *a, *b;
    assert_int_equal(eng_pstate_open(&ctx, sql, strlen(sql), &a, err, sizeof(err)), 0);
    assert_int_equal(eng_pstate_open(&ctx, sql2, strlen(sql2), &b, err, sizeof(err)), 0);
    assert_int_equal(eng_pstate_run(b, err, sizeof(err)), 0);
    ew_buf w;
    ew_init(&w, 0);
    assert_int_equal(dist_state_encode(b, 0, &w), 0);
    assert_int_equal(dist_state_merge(a, w.p, w.n, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "another statement"));
    /* a version from elsewhere */
    w.p[4] = 9;
    assert_int_equal(dist_state_merge(b, w.p, w.n, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "version 9"));
    w.p[4] = DIST_STATE_VERSION;
    /* a truncated body */
    assert_int_equal(dist_state_merge(b, w.p, w.n - 1, err, sizeof(err)), -EBADMSG);
    ew_free(&w);
    eng_pstate_destroy(&a);
    eng_pstate_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_states_match_single_run),
        cmocka_unit_test(test_dist_states_refuse_another_statement),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
