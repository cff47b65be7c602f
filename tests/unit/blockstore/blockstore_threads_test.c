/* SPDX-License-Identifier: Apache-2.0
 *
 * Concurrency tests of the block store (ctest labels unit and threads, so CI
 * runs them under TSan), in both I/O modes: two worker threads, each with its
 * own event loop and worker, write new blocks into a store of eight small
 * regions (so the evictor frees a region every few writes) while keeping many
 * reads in flight of their own and the other thread's blocks. Reads racing the
 * eviction of their region must never return another block's bytes: every
 * hit is compared with the bytes its identity defines, and no read may fail
 * its checksum (that would mean a region was rewritten under a read).
 *
 * cmocka asserts only on the main thread: workers count what they saw.
 */
#include "blockstore.h"
#include "bs_support.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum { BSZ = 64 * 1024, NWRITES = 600, READS_PER_WRITE = 4, DEPTH = 12 };

struct side {
    pthread_t tid;
    bs_store *s;
    unsigned me;
    int attach_rc;
    unsigned outstanding;
    uint64_t hits, misses, wrong, bad_rc, writes_ok, writes_bad, seed;
    uint8_t *buf;
};

struct rd {
    struct side *sd;
    bst_id id;
    uint64_t off, len;
};

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void on_read(void *arg, int rc, bs_buf *buf)
{
    struct rd *r = arg;
    struct side *sd = r->sd;
    sd->outstanding--;
    if (rc >= 0) {
        sd->hits++;
        if ((uint64_t)rc != r->len || bs_buf_len(buf) != r->len ||
            !bst_check(&r->id.id, r->off, bs_buf_data(buf), r->len)) {
            if (getenv("BST_DEBUG"))
                fprintf(stderr, "wrong: rc=%d len=%llu buflen=%zu off=%llu\n", rc,
                        (unsigned long long)r->len, bs_buf_len(buf), (unsigned long long)r->off);
            sd->wrong++;
        }
    } else if (rc == -ENOENT) {
        sd->misses++;
    } else {
        if (getenv("BST_DEBUG"))
            fprintf(stderr, "bad rc %d\n", rc);
        sd->bad_rc++;
    }
    bs_buf_unref(&buf);
    free(r);
}

static void on_write(void *arg, int rc)
{
    struct side *sd = arg;
    sd->outstanding--;
    if (rc == 0)
        sd->writes_ok++;
    else {
        if (getenv("BST_DEBUG"))
            fprintf(stderr, "write rc %d\n", rc);
        sd->writes_bad++;
    }
}

static void *run(void *arg)
{
    struct side *sd = arg;
    struct event_base *base = event_base_new();
    bs_worker *w = NULL;
    sd->attach_rc = bs_worker_attach(sd->s, base, &w);
    if (sd->attach_rc < 0) {
        event_base_free(base);
        return NULL;
    }
    for (unsigned i = 0; i < NWRITES; i++) {
        bst_id id;
        /* Object sizes vary so short blocks and odd lengths race too. */
        uint64_t size = BSZ - (i % 5) * 3001;
        bst_id_init(&id, sd->me ? "right" : "left", i, "v", size, 0);
        bst_fill(&id.id, 0, sd->buf, size);
        if (bs_write(w, &id.id, sd->buf, size, on_write, sd) == 0)
            sd->outstanding++;
        for (unsigned k = 0; k < READS_PER_WRITE; k++) {
            struct rd *r = malloc(sizeof(*r));
            r->sd = sd;
            unsigned who = (unsigned)(rnd(&sd->seed) % 2);
            unsigned obj = i ? (unsigned)(rnd(&sd->seed) % (i + 1)) : 0;
            if (obj + 40 < i && rnd(&sd->seed) % 2)
                obj = i - (unsigned)(rnd(&sd->seed) % 40); /* mostly recent */
            uint64_t osize = BSZ - (obj % 5) * 3001;
            bst_id_init(&r->id, who ? "right" : "left", obj, "v", osize, 0);
            r->off = rnd(&sd->seed) % osize;
            r->len = 1 + rnd(&sd->seed) % (osize - r->off);
            if (bs_read(w, &r->id.id, r->off, r->len, on_read, r) == 0)
                sd->outstanding++;
            else
                free(r);
        }
        while (sd->outstanding > DEPTH)
            event_base_loop(base, EVLOOP_ONCE);
    }
    while (sd->outstanding > 0)
        event_base_loop(base, EVLOOP_ONCE);
    bs_worker_detach(&w);
    event_base_free(base);
    return NULL;
}

static void race(bs_evict_policy pol, bool reinsert, uint64_t ram)
{
    char dir[512];
    bst_mkdir(dir, sizeof(dir), "bs_threads");
    bs_config cfg = bst_config(dir, 8);
    cfg.evict = pol;
    cfg.reinsert = reinsert;
    cfg.ram_bytes = ram;
    bs_store *s = NULL;
    char err[512];
    assert_int_equal(bs_open(&s, &cfg, err, sizeof(err)), 0);
    struct side sd[2];
    memset(sd, 0, sizeof(sd));
    for (unsigned i = 0; i < 2; i++) {
        sd[i].s = s;
        sd[i].me = i;
        sd[i].seed = 0x1234567 + i * 77;
        sd[i].buf = malloc(BSZ);
        assert_int_equal(pthread_create(&sd[i].tid, NULL, run, &sd[i]), 0);
    }
    for (unsigned i = 0; i < 2; i++)
        pthread_join(sd[i].tid, NULL);
    bs_stats st;
    bs_stats_get(s, &st);
    for (unsigned i = 0; i < 2; i++) {
        if (sd[i].wrong || sd[i].bad_rc || sd[i].writes_bad)
            fprintf(stderr, "side %u: wrong %llu bad_rc %llu writes_bad %llu\n", i,
                    (unsigned long long)sd[i].wrong, (unsigned long long)sd[i].bad_rc,
                    (unsigned long long)sd[i].writes_bad);
        assert_int_equal(sd[i].attach_rc, 0);
        assert_int_equal(sd[i].wrong, 0);
        assert_int_equal(sd[i].bad_rc, 0);
        assert_int_equal(sd[i].writes_bad, 0);
        assert_int_equal(sd[i].writes_ok, NWRITES);
        assert_true(sd[i].hits > 0);
        free(sd[i].buf);
    }
    fprintf(
        stderr,
        "policy=%s reinsert=%d ram=%llu: hits %llu+%llu misses %llu+%llu evictions %llu reinsertions %llu ram_hits %llu\n",
        bs_evict_policy_name(pol), reinsert, (unsigned long long)ram,
        (unsigned long long)sd[0].hits, (unsigned long long)sd[1].hits,
        (unsigned long long)sd[0].misses, (unsigned long long)sd[1].misses,
        (unsigned long long)st.evictions, (unsigned long long)st.reinsertions,
        (unsigned long long)st.ram_hits);
    assert_true(st.evictions > 10);
    assert_int_equal(st.checksum_failures, 0);
    assert_int_equal(st.io_errors, 0);
    assert_int_equal(st.inflight, 0);
    assert_true(st.ssd_used <= st.ssd_capacity);
    bs_close(&s);
    bst_rmdir(dir);
}

static void test_race_fifo(void **state)
{
    (void)state;
    race(BS_EVICT_FIFO, false, 0);
}

static void test_race_lru_reinsert_ram(void **state)
{
    (void)state;
    race(BS_EVICT_LRU, true, 6 * BSZ);
}

int main(int argc, char **argv)
{
    bst_io_mode(&argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_race_fifo),
        cmocka_unit_test(test_race_lru_reinsert_ram),
    };
    return cmocka_run_group_tests_name(bst_mode == BS_IO_URING ? "blockstore_threads(io_uring)"
                                                               : "blockstore_threads(threads)",
                                       tests, NULL, NULL);
}
