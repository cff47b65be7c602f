/* SPDX-License-Identifier: Apache-2.0
 *
 * test_table_faults.c: tables on the harness S3 server under faults:
 *  - two processes (fork) insert into one table at once: every part lands
 *    exactly once, the versions each got are disjoint and together make the
 *    whole log, which replays without a fork;
 *  - a writer killed with SIGKILL at random moments, 20 times (6 under a
 *    sanitizer): the log stays readable and every part in it reads whole;
 *    re-running each killed insert with the same deduplication token leaves
 *    every source row exactly once;
 *  - a flipped byte in a part object on S3: reading fails with an error
 *    naming the part, the column and the block (a footer byte: the part).
 * Children leave with _exit() so the harness's exit handler (which stops the
 * servers) runs only in the test process.
 */
#include "tb_int.h"
#include "tt_util.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

static h_env *env;
static h_s3 *s3;

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_table_faults") < 0)
        return -1;
    h_s3_opts o = {0};
    int rc = h_s3_start(env, &s3, &o);
    if (rc == -ENOPKG)
        h_skip(h_last_error());
    return rc < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    int a = h_proc_stop(h_s3_proc(s3), 5000);
    h_env_destroy(&env);
    return a == 0 || a == 143 ? 0 : -1;
}

static void create(const char *root, tb_table_opts *o)
{
    tt_opts(o, h_s3_endpoint(s3), root, true);
    tb_schema sc = tt_schema(false);
    char err[512];
    if (tb_table_create(o, &sc, err, sizeof(err)) < 0)
        fail_msg("create: %s", err);
}

/* One insert of ids [first, first + n) with a dedup token; 0 or -errno. */
static int insert_once(tb_table *t, uint64_t first, uint32_t n, const char *token, uint64_t seq,
                       uint64_t *version, char *err, size_t errlen)
{
    char name[TB_NAME_MAX], block[TB_NAME_MAX];
    tb_part_add add;
    int rc = tt_write_part(t, "all", first, 1, n, 0, name, &add, err, errlen);
    if (rc < 0)
        return rc;
    uint8_t zero[16] = {0};
    if (token) {
        tb_block_id("all", zero, token, seq, block);
        add.block_id = block;
    }
    uint8_t dup = 0;
    tb_commit c = {.kind = TB_COMMIT_INSERT, .add = &add, .n_add = 1, .dup_out = &dup};
    tb_commit_result r;
    rc = tb_commit_run(t, &c, &r, err, errlen);
    if (rc == 0 && dup)
        tb_part_delete(t, name, err, errlen); /* a duplicate's object goes */
    if (version)
        *version = rc == 0 && !dup ? r.version : 0;
    return rc;
}

/* ---- two writers at once ------------------------------------------------------ */

static void test_two_processes_race(void **state)
{
    (void)state;
    tb_table_opts o;
    create("wh/default/race2", &o);
    const int per = 15;
    int fds[2][2];
    pid_t pid[2];
    for (int w = 0; w < 2; w++) {
        assert_int_equal(pipe(fds[w]), 0);
        pid[w] = fork();
        assert_true(pid[w] >= 0);
        if (pid[w] == 0) {
            close(fds[w][0]);
            tb_table *t;
            char err[512];
            tb_table_opts co = o;
            co.writer = false;
            if (tb_table_open(&t, &co, err, sizeof(err)) < 0) {
                fprintf(stderr, "writer %d: %s\n", w, err);
                _exit(2);
            }
            for (int i = 0; i < per; i++) {
                uint64_t v;
                uint64_t first = (uint64_t)(w * per + i) * 100;
                if (insert_once(t, first, 100, NULL, 0, &v, err, sizeof(err)) < 0) {
                    fprintf(stderr, "writer %d: %s\n", w, err);
                    _exit(3);
                }
                if (write(fds[w][1], &v, sizeof(v)) != sizeof(v))
                    _exit(4);
            }
            tb_table_destroy(&t);
            _exit(0);
        }
        close(fds[w][1]);
    }
    uint64_t got[2][64];
    int n[2] = {0, 0};
    for (int w = 0; w < 2; w++) {
        int st;
        assert_int_equal(waitpid(pid[w], &st, 0), pid[w]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        while (n[w] < 64 && read(fds[w][0], &got[w][n[w]], sizeof(uint64_t)) == sizeof(uint64_t))
            n[w]++;
        close(fds[w][0]);
        assert_int_equal(n[w], per);
    }
    /* the versions they got are disjoint and are exactly 1..2*per */
    char seen[64] = {0};
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < per; i++) {
            assert_true(got[w][i] >= 1 && got[w][i] <= (uint64_t)(2 * per));
            assert_false(seen[got[w][i]]);
            seen[got[w][i]] = 1;
            if (i)
                assert_true(got[w][i] > got[w][i - 1]);
        }
    tb_table *t;
    char err[512];
    assert_int_equal(tb_table_open(&t, &o, err, sizeof(err)), 0);
    assert_int_equal(tb_table_version(t), 2 * per);
    tb_snapshot *s;
    assert_int_equal(tb_table_snapshot(t, &s, err, sizeof(err)), 0);
    assert_int_equal(s->n_parts, 2 * per);
    uint64_t rows, sum, x;
    assert_int_equal(tt_read_all(t, s, &rows, &sum, &x, err, sizeof(err)), 0);
    assert_int_equal(rows, 2 * per * 100);
    assert_int_equal(sum, (uint64_t)(2 * per * 100) * (2 * per * 100 - 1) / 2);
    tb_snapshot_destroy(&s);
    tb_table_destroy(&t);
}

/* ---- kill -9 ------------------------------------------------------------------ */

#define KILLS            h_rounds(20, 6)
#define PARTS_PER_INSERT 4
#define ROWS             300

/* every 3rd insert streams one part big enough for a multipart upload */
static uint64_t rows_of(int k, int j)
{
    return (k % 3 == 0 && j == 1) ? 1000000 : ROWS;
}

static void insert_all(tb_table *t, int k, bool quiet_fail)
{
    char token[32], err[512];
    snprintf(token, sizeof(token), "kill-%d", k);
    for (int j = 0; j < PARTS_PER_INSERT; j++) {
        uint32_t n = (uint32_t)rows_of(k, j);
        uint64_t first = (uint64_t)k * 10000000 + (uint64_t)j * 1000000;
        if (insert_once(t, first, n, token, (uint64_t)j, NULL, err, sizeof(err)) < 0) {
            if (quiet_fail)
                _exit(3);
            fail_msg("insert %d/%d: %s", k, j, err);
        }
    }
}

static void test_kill9_writers(void **state)
{
    (void)state;
    tb_table_opts o;
    create("wh/default/kill", &o);
    uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
    printf("kill seed %llu\n", (unsigned long long)seed);
    int finished = 0;
    for (int k = 0; k < KILLS; k++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            tb_table *t;
            char err[512];
            tb_table_opts co = o;
            co.writer = false;
            if (tb_table_open(&t, &co, err, sizeof(err)) < 0)
                _exit(2);
            insert_all(t, k, true);
            _exit(0);
        }
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int delay_ms = (int)((seed >> 33) % 700);
        struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (WIFEXITED(st)) {
            assert_int_equal(WEXITSTATUS(st), 0);
            finished++;
        }
        /* whatever moment it died at: the log reads, every part in it reads whole */
        tb_table *t;
        char err[512];
        if (tb_table_open(&t, &o, err, sizeof(err)) < 0)
            fail_msg("after kill %d: %s", k, err);
        tb_snapshot *s;
        assert_int_equal(tb_table_snapshot(t, &s, err, sizeof(err)), 0);
        uint64_t rows, sum, x;
        if (tt_read_all(t, s, &rows, &sum, &x, err, sizeof(err)) < 0)
            fail_msg("after kill %d: %s", k, err);
        tb_snapshot_destroy(&s);
        /* the client retries the same insert with the same token */
        insert_all(t, k, false);
        tb_table_destroy(&t);
    }
    printf("%d of %d writers finished before their kill\n", finished, KILLS);
    tb_table *t;
    char err[512];
    assert_int_equal(tb_table_open(&t, &o, err, sizeof(err)), 0);
    tb_snapshot *s;
    assert_int_equal(tb_table_snapshot(t, &s, err, sizeof(err)), 0);
    uint64_t rows, sum, x, want_rows = 0, want_sum = 0, want_x = 0;
    for (int k = 0; k < KILLS; k++)
        for (int j = 0; j < PARTS_PER_INSERT; j++) {
            uint64_t first = (uint64_t)k * 10000000 + (uint64_t)j * 1000000;
            for (uint64_t i = 0; i < rows_of(k, j); i++) {
                want_sum += first + i;
                want_x ^= (first + i) * 0x9e3779b97f4a7c15ull;
            }
            want_rows += rows_of(k, j);
        }
    assert_int_equal(tt_read_all(t, s, &rows, &sum, &x, err, sizeof(err)), 0);
    assert_int_equal(rows, want_rows);
    assert_true(sum == want_sum);
    assert_true(x == want_x);
    assert_int_equal(s->n_parts, KILLS * PARTS_PER_INSERT);
    uint64_t largest = 0;
    for (size_t i = 0; i < s->n_parts; i++)
        if (s->parts[i].bytes > largest)
            largest = s->parts[i].bytes;
    printf("largest part %llu bytes\n", (unsigned long long)largest);
    assert_true(largest > 8u << 20); /* streamed as a multipart upload */
    tb_snapshot_destroy(&s);
    tb_table_destroy(&t);
}

/* ---- a flipped byte on S3 ------------------------------------------------------- */

static void test_flipped_byte_on_s3(void **state)
{
    (void)state;
    tb_table_opts o;
    create("wh/default/flip", &o);
    tb_table *t;
    char err[512];
    assert_int_equal(tb_table_open(&t, &o, err, sizeof(err)), 0);
    uint64_t v;
    assert_int_equal(insert_once(t, 0, 50000, NULL, 0, &v, err, sizeof(err)), 0);
    tb_snapshot *s;
    assert_int_equal(tb_table_snapshot(t, &s, err, sizeof(err)), 0);
    char name[TB_NAME_MAX], key[512];
    snprintf(name, sizeof(name), "%s", s->parts[0].name);
    tb_snapshot_destroy(&s);
    tb_part_key(t, name, key, sizeof(key));
    /* fetch the object, find block 3 of column s, flip a byte, put it back */
    s3_sync *ss;
    assert_int_equal(s3_sync_create(&ss, &o.s3), 0);
    s3_object_info info;
    s3_error e;
    assert_int_equal(s3_sync_head(ss, o.bucket, key, &info, &e), 0);
    uint8_t *buf = malloc(info.size);
    s3_sync_get_args g = {
        .bucket = o.bucket, .key = key, .fd = -1, .buf = buf, .cap = info.size, .parallel = 1};
    assert_int_equal(s3_sync_get(ss, &g, &e), (int64_t)info.size);
    uint32_t flen = tp__get32(buf + info.size - TP_TAIL_SIZE);
    tp__footer f;
    assert_int_equal(tp__footer_parse(buf + info.size - TP_TAIL_SIZE - flen, flen,
                                      info.size - TP_TAIL_SIZE - flen, &f, NULL, 0),
                     0);
    assert_true(f.cols[2].n_blocks >= 1);
    tp__block_ent blk = f.cols[2].blocks[f.cols[2].n_blocks - 1];
    uint32_t bad_block = f.cols[2].n_blocks - 1;
    tp__footer_free(&f);
    buf[blk.offset + blk.comp_len / 2] ^= 0x10;
    s3_sync_put_args p = {.bucket = o.bucket, .key = key, .fd = -1, .data = buf, .size = info.size};
    assert_int_equal(s3_sync_put(ss, &p, NULL, &e), 0);
    rs_source *src;
    tp_reader *r;
    assert_int_equal(tb_part_open(t, name, &src, &r, err, sizeof(err)), 0);
    uint32_t col = 2;
    cb_batch *b;
    assert_int_equal(
        tp_reader_read(r, &col, 1, 0, tp_reader_meta(r)->granules, &b, err, sizeof(err)), -EBADMSG);
    char want[64];
    snprintf(want, sizeof(want), "block %u", bad_block);
    assert_non_null(strstr(err, name));
    assert_non_null(strstr(err, "column s"));
    assert_non_null(strstr(err, want));
    /* the other columns still read */
    col = 0;
    assert_int_equal(
        tp_reader_read(r, &col, 1, 0, tp_reader_meta(r)->granules, &b, err, sizeof(err)), 0);
    cb_batch_destroy(&b);
    tp_reader_destroy(&r);
    rs_destroy(&src);
    /* a flipped footer byte: the part does not open */
    buf[blk.offset + blk.comp_len / 2] ^= 0x10;
    buf[info.size - TP_TAIL_SIZE - 3] ^= 0x01;
    assert_int_equal(s3_sync_put(ss, &p, NULL, &e), 0);
    assert_int_equal(tb_part_open(t, name, &src, &r, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, name));
    assert_non_null(strstr(err, "footer"));
    free(buf);
    s3_sync_destroy(&ss);
    tb_table_destroy(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_processes_race),
        cmocka_unit_test(test_kill9_writers),
        cmocka_unit_test(test_flipped_byte_on_s3),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
