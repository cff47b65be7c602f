/* SPDX-License-Identifier: Apache-2.0
 *
 * Crash test of the block store. A child process (this binary, run with
 * --child) opens the store with the durable settings, writes blocks of
 * varying sizes (some identities again, so entries get replaced), reads back
 * recent ones, and is killed with SIGKILL at a random moment: opening,
 * writing, evicting, closing. After each kill the parent opens the same
 * folder and checks that index and data agree: every block the index names
 * reads back, verifies, and equals the bytes its identity defines (contents
 * are a function of the identity, so no record of the writes is needed), and
 * no read fails its checksum. Then the next child continues in the same
 * folder. --kills=N sets the number of rounds (50 in the normal suite, 500
 * under the `slow` label). The random delay is how long the child lives, not
 * a timed assertion.
 */
#include "blockstore.h"
#include "blockstore_int.h"
#include "bs_support.h"
#include "harness.h"

#include <errno.h>
#include <event2/event.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

enum { BSZ = 64 * 1024, NREGIONS = 12 };

static unsigned kills = 50;
static char self[4096];

static bs_config crash_config(const char *dir)
{
    bs_config c = bst_config(dir, NREGIONS);
    c.no_sync = false; /* the real thing: fdatasync before each index batch */
    c.reinsert = true;
    c.ram_bytes = 4 * BSZ;
    c.log = NULL;
    return c;
}

/* ---- the child ------------------------------------------------------------ */

struct child {
    bs_worker *w;
    unsigned outstanding;
    int bad;
};

struct crd {
    struct child *c;
    bst_id id;
};

static void child_read(void *arg, int rc, bs_buf *buf)
{
    struct crd *r = arg;
    r->c->outstanding--;
    if (rc >= 0 && !bst_check(&r->id.id, 0, bs_buf_data(buf), bs_buf_len(buf)))
        r->c->bad = 1;
    bs_buf_unref(&buf);
    free(r);
}

static void child_write(void *arg, int rc)
{
    struct child *c = arg;
    c->outstanding--;
    if (rc != 0)
        c->bad = 2;
}

static uint64_t obj_size(unsigned obj)
{
    return 3 * BSZ - (obj % 7) * 9001;
}

static int child_main(const char *dir, unsigned seed)
{
    bs_config cfg = crash_config(dir);
    bs_store *s = NULL;
    char err[512];
    if (bs_open(&s, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "child: %s\n", err);
        return 4;
    }
    struct event_base *base = event_base_new();
    struct child c = {0};
    if (bs_worker_attach(s, base, &c.w) < 0)
        return 5;
    uint8_t *buf = malloc(BSZ);
    uint64_t r = seed * 2654435761u + 1;
    /* Runs until killed; a bounded loop ends in a clean close. */
    for (unsigned i = 0; i < 100000 && !c.bad; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        unsigned obj = (unsigned)(r % 400);
        uint64_t size = obj_size(obj);
        bst_id id;
        bst_id_init(&id, "crash", obj, "v", size, (r >> 20) % 3);
        size_t len = bkey_block_len(size, BSZ, id.id.index);
        bst_fill(&id.id, 0, buf, len);
        if (bs_write(c.w, &id.id, buf, len, child_write, &c) == 0)
            c.outstanding++;
        struct crd *rd = malloc(sizeof(*rd));
        rd->c = &c;
        unsigned o2 = (unsigned)((r >> 8) % 400);
        bst_id_init(&rd->id, "crash", o2, "v", obj_size(o2), (r >> 30) % 3);
        if (bs_read(c.w, &rd->id.id, 0, 0, child_read, rd) == 0)
            c.outstanding++;
        else
            free(rd);
        while (c.outstanding > 8)
            event_base_loop(base, EVLOOP_ONCE);
    }
    while (c.outstanding)
        event_base_loop(base, EVLOOP_ONCE);
    bs_worker_detach(&c.w);
    bs_close(&s);
    event_base_free(base);
    free(buf);
    return c.bad ? 3 : 0;
}

/* ---- the parent ----------------------------------------------------------- */

struct ids {
    uint8_t (*raw)[BS_MAX_IDENTITY];
    uint16_t *len;
    size_t n, cap;
};

static void collect(void *ctx, const bs_entry *e)
{
    struct ids *ids = ctx;
    if (ids->n == ids->cap) {
        ids->cap = ids->cap ? ids->cap * 2 : 256;
        ids->raw = realloc(ids->raw, ids->cap * sizeof(*ids->raw));
        ids->len = realloc(ids->len, ids->cap * sizeof(*ids->len));
    }
    memcpy(ids->raw[ids->n], e->id, e->idlen);
    ids->len[ids->n] = e->idlen;
    ids->n++;
}

/* Opens the folder, checks every indexed block, closes. Returns how many. */
static size_t verify(const char *dir, struct event_base *base, uint8_t *buf)
{
    bs_config cfg = crash_config(dir);
    cfg.log = bst_log;
    bs_store *s = NULL;
    char err[512];
    int rc = bs_open(&s, &cfg, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "reopen after kill: %s\n", err);
    assert_int_equal(rc, 0);
    bs_worker *w = NULL;
    assert_int_equal(bs_worker_attach(s, base, &w), 0);
    struct ids ids = {0};
    bs__map_foreach(s, collect, &ids);
    bs_stats st;
    /* A store reopened full evicts a region at once (it keeps one free):
     * those blocks may miss, but no more than were evicted. */
    uint64_t gone = 0;
    for (size_t i = 0; i < ids.n; i++) {
        bkey_id id;
        assert_int_equal(bs__id_decode(ids.raw[i], ids.len[i], &id), 0);
        uint64_t len = bkey_block_len(id.object_size, BSZ, id.index);
        int got = bst_read(w, base, &id, 0, 0, buf);
        if (got == -ENOENT) {
            gone++;
            continue;
        }
        if (got != (int)len)
            fprintf(stderr, "indexed block %zu: read gave %d, want %llu\n", i, got,
                    (unsigned long long)len);
        assert_int_equal(got, (int)len);
        assert_true(bst_check(&id, 0, buf, len));
    }
    bs_stats_get(s, &st);
    assert_true(gone <= st.evicted_blocks);
    assert_int_equal(st.checksum_failures, 0);
    assert_int_equal(st.io_errors, 0);
    assert_true(st.ssd_used <= st.ssd_capacity);
    bs_worker_detach(&w);
    bs_close(&s);
    free(ids.raw);
    free(ids.len);
    return ids.n;
}

static void test_kill_and_restart(void **state)
{
    (void)state;
    h_env *env = NULL;
    assert_int_equal(h_env_create(&env, "bs_crash"), 0);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/store", h_env_dir(env));
    assert_int_equal(mkdir(dir, 0755), 0);
    struct event_base *base = event_base_new();
    uint8_t *buf = malloc(BSZ);
    uint64_t r = (uint64_t)time(NULL) | 1;
    fprintf(stderr, "crash test: seed %llu, %u kills\n", (unsigned long long)r, kills);
    size_t max_seen = 0, rounds_with_data = 0;
    for (unsigned k = 0; k < kills; k++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        char seed[32];
        snprintf(seed, sizeof(seed), "%u", (unsigned)(r & 0xffffff));
        char io[32];
        snprintf(io, sizeof(io), "--io=%s", bst_mode == BS_IO_URING ? "uring" : "threads");
        char *argv[] = {self, io, "--child", dir, seed, NULL};
        h_proc *p = NULL;
        assert_int_equal(h_proc_start(env, &p, "child", argv, NULL, NULL, 0), 0);
        /* 30..230 ms: through open (tens of ms) into writing and evicting. */
        usleep((useconds_t)(30000 + (r >> 24) % 200000));
        h_proc_kill(p, SIGKILL);
        int status = h_proc_wait(p, 10000);
        /* Killed (128 + 9), or finished its loop cleanly (0): any other
         * exit is a child that saw bad bytes or could not open. */
        if (status != 128 + SIGKILL && status != 0)
            h_proc_print_log_tail(p, 20);
        assert_true(status == 128 + SIGKILL || status == 0);
        size_t n = verify(dir, base, buf);
        if (n)
            rounds_with_data++;
        if (n > max_seen)
            max_seen = n;
    }
    fprintf(stderr, "crash test: %zu rounds found data, at most %zu blocks\n", rounds_with_data,
            max_seen);
    /* The test means something only if children got to write. */
    assert_true(rounds_with_data >= kills / 2);
    free(buf);
    event_base_free(base);
    h_env_destroy(&env);
}

int main(int argc, char **argv)
{
    bst_io_mode(&argc, argv);
    if (argc >= 4 && strcmp(argv[1], "--child") == 0)
        return child_main(argv[2], (unsigned)strtoul(argv[3], NULL, 10));
    int j = 1;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--kills=", 8) == 0)
            kills = (unsigned)strtoul(argv[i] + 8, NULL, 10);
        else
            argv[j++] = argv[i];
    }
    argc = j;
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        fprintf(stderr, "SKIP: cannot find this binary through /proc/self/exe\n");
        return 77;
    }
    self[n] = '\0';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_and_restart),
    };
    return cmocka_run_group_tests_name(bst_mode == BS_IO_URING ? "blockstore_crash(io_uring)"
                                                               : "blockstore_crash(threads)",
                                       tests, NULL, NULL);
}
