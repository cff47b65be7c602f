/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_chaos.c: three real ringcached nodes, a real S3 behind the S3
 * model, reader threads and write-through writer threads on libringcache,
 * while the main thread kills a node with SIGKILL (and restarts it on the
 * same data folder and port) or stops it with SIGSTOP (and resumes it) at
 * random, one node at a time, for --seconds (default 100).
 *
 * Every object version is self-describing: each block starts with a header
 * (magic, object, version seed, block index, object size) and the rest is a
 * stream derived from the seed and the block index, so a reader checks every
 * byte it reads against what that version must hold, and that every block
 * read through one handle is of the one version the handle is pinned to.
 * Writers overwrite the objects with new versions through the nodes. The only
 * reader error allowed is "the object changed" (-ESTALE: re-open); writers
 * must never fail (a dead node's PUT goes to S3 directly). Loops are bounded
 * in time and count; the harness removes everything whatever happens, and a
 * reader stuck past the deadline fails the test.
 *
 *   test_client_chaos [--seconds N]   RINGCACHE_CHAOS_SEED=S to replay a run
 */
#include "client_test_util.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#define N_OBJECTS 6
#define N_READERS 3
#define N_WRITERS 2
#define BLOCK     (1u << 20)
#define MAGIC     0x52434843u /* "CHCR" */
#define HDR       24

static t_cluster tc;
static int g_seconds = 100;
static uint64_t g_seed;
static rc_client *g_readers, *g_writers;
static atomic_bool g_stop;
static atomic_uint g_next_seed;

static struct {
    atomic_ulong reads, bytes_checked, stale, versions_written;
    atomic_ulong errors;
} g_st;
static pthread_mutex_t g_err_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_first_error[RC_ERR_MAX + 256];

static void fail_once(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_once(const char *fmt, ...)
{
    atomic_fetch_add(&g_st.errors, 1);
    pthread_mutex_lock(&g_err_lock);
    if (!g_first_error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_first_error, sizeof(g_first_error), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&g_err_lock);
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void key_of(int obj, char *out, size_t cap)
{
    snprintf(out, cap, "chaos/obj-%d.bin", obj);
}

/* The size of version `seed` of an object: 1 to 5 blocks and a bit. */
static uint64_t size_of(uint32_t seed)
{
    return (uint64_t)(1 + seed % 4) * BLOCK + (seed * 7919u) % BLOCK + 1;
}

/* Block b of version seed of object obj, as it must read (len bytes). */
static void make_block(int obj, uint32_t seed, uint64_t size, uint64_t b, uint8_t *out, size_t len)
{
    t_fill(out, len, ((uint64_t)seed << 20) ^ (b * 0x100000001b3ull) ^ (uint64_t)obj);
    if (len >= HDR) {
        uint32_t h[4] = {MAGIC, (uint32_t)obj, seed, (uint32_t)b};
        memcpy(out, h, sizeof(h));
        memcpy(out + 16, &size, 8);
    }
}

/* ---- writers --------------------------------------------------------------- */

static void *writer_main(void *arg)
{
    uint64_t x = g_seed ^ (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull;
    uint8_t *buf = malloc(6 * BLOCK);
    for (int n = 0; n < 100000 && !atomic_load(&g_stop); n++) {
        int obj = (int)(rnd(&x) % N_OBJECTS);
        uint32_t seed = atomic_fetch_add(&g_next_seed, 1);
        uint64_t size = size_of(seed);
        for (uint64_t b = 0; b * BLOCK < size; b++) {
            size_t len = size - b * BLOCK < BLOCK ? (size_t)(size - b * BLOCK) : BLOCK;
            make_block(obj, seed, size, b, buf + b * BLOCK, len);
        }
        char key[64], err[RC_ERR_MAX];
        key_of(obj, key, sizeof(key));
        int rc =
            rc_put(g_writers, H_S3_DEFAULT_BUCKET, key, buf, (size_t)size, NULL, err, sizeof(err));
        if (rc < 0)
            fail_once("writer: put %s: %d %s", key, rc, err);
        else
            atomic_fetch_add(&g_st.versions_written, 1);
        struct timespec ts = {0, (long)(50 + rnd(&x) % 300) * 1000000L};
        nanosleep(&ts, NULL);
    }
    free(buf);
    return NULL;
}

/* ---- readers --------------------------------------------------------------- */

typedef struct {
    uint8_t *buf, *want;
    uint64_t x;
} reader;

/* Checks len bytes at off of block b read through h, against the version
 * whose header was read through the same handle (*seed, 0: not yet). */
static bool check_range(rc_handle *h, int obj, uint64_t b, uint64_t off, size_t len,
                        const uint8_t *got, uint32_t *seed, uint8_t *want)
{
    uint64_t size = rc_size(h);
    if (*seed == 0) {
        uint8_t hd[HDR];
        int64_t n = rc_pread(h, hd, HDR, 0);
        if (n == -ESTALE)
            return false;
        uint32_t w[4];
        memcpy(w, hd, sizeof(w));
        if (n != HDR || w[0] != MAGIC || w[1] != (uint32_t)obj) {
            fail_once("reader: object %d: block 0's header is not this object's (%lld)", obj,
                      (long long)n);
            return false;
        }
        *seed = w[2];
        if (size_of(*seed) != size) {
            fail_once("reader: object %d version %u is %llu bytes, the handle says %llu", obj,
                      *seed, (unsigned long long)size_of(*seed), (unsigned long long)size);
            return false;
        }
    }
    uint64_t blen = size - b * BLOCK < BLOCK ? size - b * BLOCK : BLOCK;
    make_block(obj, *seed, size, b, want, (size_t)blen);
    if (memcmp(got, want + (off - b * BLOCK), len) != 0) {
        fail_once("reader: object %d version %u block %llu: wrong bytes at %llu (+%zu)", obj, *seed,
                  (unsigned long long)b, (unsigned long long)off, len);
        return false;
    }
    atomic_fetch_add(&g_st.bytes_checked, len);
    return true;
}

/* One pass over an object: sequential in 1 MiB reads, or scattered ranges. */
static void read_once(reader *r, int obj)
{
    char key[64], err[RC_ERR_MAX];
    key_of(obj, key, sizeof(key));
    rc_handle *h;
    int rc = rc_open(g_readers, H_S3_DEFAULT_BUCKET, key, &h, err, sizeof(err));
    if (rc < 0) {
        fail_once("reader: open %s: %d %s", key, rc, err);
        return;
    }
    uint64_t size = rc_size(h);
    uint32_t seed = 0;
    bool scattered = rnd(&r->x) % 2;
    int steps = scattered ? 8 : (int)((size + BLOCK - 1) / BLOCK);
    for (int i = 0; i < steps && !atomic_load(&g_stop); i++) {
        uint64_t off, len;
        if (scattered) {
            len = 1 + rnd(&r->x) % (64u << 10);
            off = rnd(&r->x) % size;
            if (off + len > size)
                len = size - off;
            uint64_t end_block = (off + len - 1) / BLOCK;
            if (end_block != off / BLOCK)
                len = (off / BLOCK + 1) * BLOCK - off; /* within one block */
        } else {
            off = (uint64_t)i * BLOCK;
            len = size - off < BLOCK ? size - off : BLOCK;
        }
        int64_t n = rc_pread(h, r->buf, (size_t)len, off);
        atomic_fetch_add(&g_st.reads, 1);
        if (n == -ESTALE) {
            atomic_fetch_add(&g_st.stale, 1);
            break; /* the object changed: re-open next time */
        }
        if (n != (int64_t)len) {
            rc_last_error(h, err, sizeof(err));
            fail_once("reader: %s [%llu, +%llu): %lld %s", key, (unsigned long long)off,
                      (unsigned long long)len, (long long)n, err);
            break;
        }
        if (!check_range(h, obj, off / BLOCK, off, (size_t)len, r->buf, &seed, r->want))
            break;
    }
    rc_close(&h);
}

static void *reader_main(void *arg)
{
    reader r = {malloc(BLOCK), malloc(BLOCK), g_seed ^ (uint64_t)(uintptr_t)arg << 32};
    for (int n = 0; n < 1000000 && !atomic_load(&g_stop); n++)
        read_once(&r, (int)(rnd(&r.x) % N_OBJECTS));
    free(r.buf);
    free(r.want);
    return NULL;
}

/* ---- the chaos ------------------------------------------------------------- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts node i again on its data folder and port (the port may take a
 * moment to be free again). */
static void restart_node(int i)
{
    char nm[16], port[16];
    snprintf(nm, sizeof(nm), "n%d", i);
    snprintf(port, sizeof(port), "%d", tc.nodes[i].port);
    const char *extra[] = {"--port", port, "--members", tc.members, "--ssd-capacity", "3GiB", NULL};
    for (int attempt = 0;; attempt++) {
        int rc = t_node_try_start(tc.env, &tc.nodes[i], nm, h_s3model_endpoint(tc.model), extra);
        if (rc == 0)
            return;
        if (attempt == 10) {
            fprintf(stderr, "cannot restart %s: %s\n", nm, h_last_error());
            fail();
        }
        sleep_ms(300);
    }
}

static void test_chaos(void **state)
{
    (void)state;
    /* first versions of every object, straight to S3 */
    uint8_t *buf = malloc(6 * BLOCK);
    for (int obj = 0; obj < N_OBJECTS; obj++) {
        uint32_t seed = atomic_fetch_add(&g_next_seed, 1);
        uint64_t size = size_of(seed);
        for (uint64_t b = 0; b * BLOCK < size; b++) {
            size_t len = size - b * BLOCK < BLOCK ? (size_t)(size - b * BLOCK) : BLOCK;
            make_block(obj, seed, size, b, buf + b * BLOCK, len);
        }
        char key[64];
        key_of(obj, key, sizeof(key));
        t_put_direct(&tc, key, buf, (size_t)size, NULL);
    }
    free(buf);

    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.max_threads = N_READERS;
    cfg.metadata_ttl_ms = 300; /* readers see new versions soon */
    cfg.timeout_ms = 10000;
    cfg.down_ms = 1000;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&g_readers, &cfg, err, sizeof(err)), 0);
    cfg.max_threads = N_WRITERS;
    assert_int_equal(rc_create(&g_writers, &cfg, err, sizeof(err)), 0);

    pthread_t rt[N_READERS], wt[N_WRITERS];
    for (int i = 0; i < N_READERS; i++)
        assert_int_equal(pthread_create(&rt[i], NULL, reader_main, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < N_WRITERS; i++)
        assert_int_equal(pthread_create(&wt[i], NULL, writer_main, (void *)(uintptr_t)(i + 11)), 0);

    uint64_t x = g_seed | 1;
    int kills = 0, stops = 0;
    /* at least three events, however slow a node is to restart here (a
     * sanitizer build): up to three times the time asked for */
    int64_t t0 = h_now_ms(), end = t0 + (int64_t)g_seconds * 1000;
    int64_t hard_end = t0 + 3 * (int64_t)g_seconds * 1000;
    for (int n = 0; n < 10000 && (h_now_ms() < end || kills + stops < 3) && h_now_ms() < hard_end &&
                    !atomic_load(&g_st.errors);
         n++) {
        sleep_ms(300 + (int)(rnd(&x) % 1200));
        int i = (int)(rnd(&x) % T_NODES);
        if (rnd(&x) % 2) {
            assert_int_equal(h_proc_kill(tc.nodes[i].proc, SIGKILL), 0);
            assert_int_equal(h_proc_wait(tc.nodes[i].proc, 10000), 128 + SIGKILL);
            tc.nodes[i].proc = NULL;
            sleep_ms(200 + (int)(rnd(&x) % 800));
            restart_node(i);
            kills++;
        } else {
            assert_int_equal(h_proc_kill(tc.nodes[i].proc, SIGSTOP), 0);
            sleep_ms(500 + (int)(rnd(&x) % 2000));
            assert_int_equal(h_proc_kill(tc.nodes[i].proc, SIGCONT), 0);
            stops++;
        }
    }
    atomic_store(&g_stop, true);
    /* every thread ends within the client's timeout after the stop */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 60;
    for (int i = 0; i < N_READERS; i++)
        assert_int_equal(pthread_timedjoin_np(rt[i], NULL, &dl), 0);
    for (int i = 0; i < N_WRITERS; i++)
        assert_int_equal(pthread_timedjoin_np(wt[i], NULL, &dl), 0);
    rc_stats st;
    rc_stats_get(g_readers, &st);
    rc_destroy(&g_readers);
    rc_destroy(&g_writers);

    fprintf(stderr,
            "chaos: seed %llu, %d s: %d kills, %d stops; %lu reads, %lu MiB checked, %lu "
            "stale, %lu versions written; readers' hedges %llu, failovers %llu, S3 "
            "fallbacks %llu\n",
            (unsigned long long)g_seed, g_seconds, kills, stops, atomic_load(&g_st.reads),
            atomic_load(&g_st.bytes_checked) >> 20, atomic_load(&g_st.stale),
            atomic_load(&g_st.versions_written), (unsigned long long)st.hedges,
            (unsigned long long)st.failovers, (unsigned long long)st.fallbacks);
    if (g_first_error[0])
        fprintf(stderr, "first error: %s\n", g_first_error);
    assert_int_equal(atomic_load(&g_st.errors), 0);
    assert_true(kills + stops >= 3);
    assert_true(atomic_load(&g_st.reads) >= 50);
    assert_true(atomic_load(&g_st.bytes_checked) > 0);
    assert_true(atomic_load(&g_st.versions_written) >= 5);
}

static int setup(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_chaos", NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < T_NODES; i++)
        if (tc.nodes[i].proc)
            h_proc_kill(tc.nodes[i].proc, SIGCONT); /* a failed run may leave one stopped */
    t_cluster_stop(&tc);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            g_seconds = atoi(argv[++i]);
    if (g_seconds < 1)
        g_seconds = 1;
    const char *s = getenv("RINGCACHE_CHAOS_SEED");
    g_seed = s && s[0] ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    if (!g_seed)
        g_seed = 1;
    atomic_init(&g_next_seed, 1000);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chaos),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
