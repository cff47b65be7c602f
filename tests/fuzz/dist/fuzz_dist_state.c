/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_dist_state.c: arbitrary bytes as a worker's partial state. The first
 * byte picks one of a few statements over a small CSV file written at start
 * (every aggregate, keys of every kind, no GROUP BY, a top N, plain rows,
 * the states of quantiles, moments, argMin/argMax and the combinators);
 * the rest goes to dist_state_merge (envelope and body) and, past the
 * envelope's size, straight to eng_pstate_merge (the body alone, so the
 * fingerprint does not guard it), each merged twice (the second time into
 * the groups the first made); the bytes also go to
 * dist_state_read_insert (a distributed INSERT unit's answer). A merge that succeeds must finish and
 * encode again; one that fails must say why. Real checks, not assert().
 *
 * With RINGCACHE_DIST_FUZZ_SEEDS=DIR set, the first run writes every
 * statement's real state there (the seeds of tests/fuzz/corpus/dist_state).
 */
#include "dist_state.h"
#include "fuzz_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], csv[128];
static FILE *devnull;
static char sqls[6][1024];
#define N_SQL 6

static void cleanup(void)
{
    unlink(csv);
    rmdir(dir);
}

static void write_seeds(const char *to)
{
    for (int q = 0; q < N_SQL; q++) {
        eng_ctx ctx = {.format = ENG_FMT_TSV, .max_threads = 1, .out = devnull};
        eng_pstate *ps;
        char err[ENG_MSG_MAX];
        CHECK(eng_pstate_open(&ctx, sqls[q], strlen(sqls[q]), &ps, err, sizeof(err)) == 0);
        CHECK(eng_pstate_run(ps, err, sizeof(err)) == 0);
        ew_buf b;
        ew_init(&b, 0);
        ew_u8(&b, (uint8_t)q);
        CHECK(dist_state_encode(ps, 7, &b) == 0);
        char p[4200];
        snprintf(p, sizeof(p), "%s/state-%d", to, q);
        FILE *f = fopen(p, "wb");
        CHECK(f && fwrite(b.p, 1, b.n, f) == b.n);
        fclose(f);
        ew_free(&b);
        eng_pstate_destroy(&ps);
    }
}

static void init(void)
{
    snprintf(dir, sizeof(dir), "/tmp/dist_state_fuzz.XXXXXX");
    CHECK(mkdtemp(dir));
    snprintf(csv, sizeof(csv), "%s/t.csv", dir);
    FILE *f = fopen(csv, "w");
    CHECK(f);
    fputs("a,s,f,d,n\n"
          "1,alice,1.5,2024-01-02,10\n"
          "2,bob,-0.0,2024-02-03,\n"
          "3,alice,2.25,2024-03-04,30\n"
          "-4,,1e300,2023-12-31,\n"
          "5,carol,0.5,2024-01-02,50\n",
          f);
    fclose(f);
    atexit(cleanup);
    CHECK((devnull = fopen("/dev/null", "w")));
    snprintf(sqls[0], sizeof(sqls[0]),
             "SELECT s, count(), count(n), sum(a), sum(f), avg(f), avg(a), min(s), max(s), "
             "min(d), max(f), uniqExact(a), uniq(s), any(n) FROM file('%s') GROUP BY s "
             "HAVING count() > 0 ORDER BY s",
             csv);
    snprintf(sqls[1], sizeof(sqls[1]),
             "SELECT s, n, d, f, count() FROM file('%s') GROUP BY s, n, d, f ORDER BY 5 DESC", csv);
    snprintf(sqls[2], sizeof(sqls[2]),
             "SELECT count(), avg(n), sum(f), uniqExact(s), min(a) FROM file('%s')", csv);
    snprintf(sqls[3], sizeof(sqls[3]),
             "SELECT s, a, f, n FROM file('%s') ORDER BY a DESC, s LIMIT 3 OFFSET 1", csv);
    snprintf(sqls[4], sizeof(sqls[4]), "SELECT s, a + 1, d, n FROM file('%s') WHERE a > 1", csv);
    snprintf(sqls[5], sizeof(sqls[5]),
             "SELECT s, quantile(0.5)(f), quantileExact(0.9)(a), median(n), varPop(f), "
             "stddevSamp(a), corr(a, f), argMin(s, f), argMax(f, s), argMax(d, a), "
             "sumDistinct(a), avgDistinct(f), count(DISTINCT s), countIf(a > 1), "
             "sumIf(f, a > 1), anyLast(n) FROM file('%s') GROUP BY s ORDER BY s",
             csv);
    const char *seeds = getenv("RINGCACHE_DIST_FUZZ_SEEDS");
    if (seeds)
        write_seeds(seeds);
}

/* Merges n bytes at p into a fresh state of statement q (envelope: whole
 * or body only), then finishes or checks the sentence. */
static void one(int q, const uint8_t *p, size_t n, bool envelope)
{
    eng_ctx ctx = {.format = ENG_FMT_TSV, .max_threads = 1, .out = devnull};
    eng_pstate *ps;
    char err[ENG_MSG_MAX];
    CHECK(eng_pstate_open(&ctx, sqls[q], strlen(sqls[q]), &ps, err, sizeof(err)) == 0);
    err[0] = 0;
    int rc;
    if (envelope) {
        rc = dist_state_merge(ps, p, n, err, sizeof(err));
    } else {
        er_buf r;
        er_init(&r, p, n);
        rc = eng_pstate_merge(ps, &r, err, sizeof(err));
    }
    if (rc == 0) {
        /* the same bytes again: every group is there now, so each state
         * merges into one it has (as a second worker's does) */
        if (envelope) {
            rc = dist_state_merge(ps, p, n, err, sizeof(err));
        } else {
            er_buf r;
            er_init(&r, p, n);
            rc = eng_pstate_merge(ps, &r, err, sizeof(err));
        }
        CHECK(rc == 0 || rc == -ENOMEM);
    }
    if (rc < 0) {
        CHECK(rc == -EBADMSG || rc == -ENOMEM);
        CHECK(err[0] != 0);
    } else {
        ew_buf b;
        ew_init(&b, 0);
        CHECK(eng_pstate_encode(ps, &b) == 0);
        ew_free(&b);
        CHECK(eng_pstate_finish(ps, NULL, err, sizeof(err)) == 0);
    }
    eng_pstate_destroy(&ps);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!devnull)
        init();
    if (size < 1)
        return 0;
    int q = data[0] % N_SQL;
    one(q, data + 1, size - 1, true);
    /* the same bytes as an INSERT unit's answer: read, or refused with a
     * sentence; one read encodes back to the same bytes */
    dist_insert_done d;
    char ierr[256] = "";
    if (dist_state_read_insert(data + 1, size - 1, &d, ierr, sizeof(ierr)) == 0) {
        dist_state_hdr h;
        CHECK(dist_state_header(data + 1, size - 1, &h, ierr, sizeof(ierr)) == 0);
        ew_buf b;
        ew_init(&b, 4096);
        CHECK(dist_state_encode_insert(h.unit, &d, &b) == 0);
        CHECK(b.n == size - 1 && !memcmp(b.p, data + 1, b.n));
        ew_free(&b);
    } else {
        CHECK(ierr[0] != 0);
    }
    if (size - 1 > DIST_STATE_HEADER)
        one(q, data + 1 + DIST_STATE_HEADER, size - 1 - DIST_STATE_HEADER, false);
    return 0;
}
