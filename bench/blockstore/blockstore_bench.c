/* SPDX-License-Identifier: Apache-2.0
 *
 * blockstore_bench: the figures of the block store, each measured against its
 * raw baseline in the same run, interleaved round by round (the disk here is
 * noisy), medians reported:
 *   read    1 MiB blocks from SSD with a cold RAM tier (store reopened each
 *           round) vs raw O_DIRECT io_uring reads of a file of the same size,
 *           same queue depth;
 *   write   1 MiB blocks into a full store (every region written evicts one;
 *           durable: fdatasync before each index batch) vs raw O_DIRECT
 *           sequential io_uring writes, same depth;
 *   ram     RAM-tier hits, copied out to a caller buffer, vs memcpy;
 *   restart open time of a store whose index holds 1M synthetic entries of
 *           the 1 MiB-block shape (16 checksums), and index bytes per entry;
 *   trace   hit ratio on a Zipf trace with reinsertion off and on, FIFO and
 *           LRU over regions.
 * Temp files go under $RINGCACHE_BENCH_TMP (default /tmp, which must allow
 * O_DIRECT) and are removed at the end; peak disk use is about 2 GiB
 * (write figure: a 1 GiB store and a 1 GiB raw file).
 * Options: --rounds N (5), --quick (smaller sizes, for a smoke run).
 */
#include "blockstore.h"
#include "blockstore_int.h"
#include "bs_support.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <liburing.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../bench.h"

#define MIB (1024ull * 1024ull)
enum { QD = 16 };

static unsigned rounds = 5;
static bool quick;
static char root[512];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof(*v), cmpd);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "blockstore_bench: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
    exit(1);
}

static void quiet(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level <= BS_LOG_WARN)
        fprintf(stderr, "bs: %s\n", msg);
}

/* ---- raw O_DIRECT io_uring baseline ---------------------------------------- */

/* Reads or writes nblocks 1 MiB blocks of path at QD, block i at offset
 * (order[i] % file_blocks) MiB. Returns MiB/s. */
static double raw_io(const char *path, bool write, const uint32_t *order, unsigned nblocks,
                     unsigned file_blocks)
{
    int fd = open(path, (write ? O_WRONLY : O_RDONLY) | O_DIRECT);
    if (fd < 0)
        die(path, errno);
    struct io_uring ring;
    int rc = io_uring_queue_init(QD * 2, &ring, 0);
    if (rc < 0)
        die("io_uring_queue_init", rc);
    uint8_t *bufs;
    if (posix_memalign((void **)&bufs, 4096, QD * MIB))
        die("memory", ENOMEM);
    memset(bufs, 0x5a, QD * MIB);
    unsigned next = 0, done = 0, inflight = 0;
    int slots[QD];
    for (int i = 0; i < QD; i++)
        slots[i] = i;
    int nfree = QD;
    double t0 = now();
    while (done < nblocks) {
        while (next < nblocks && nfree > 0) {
            int sl = slots[--nfree];
            struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
            uint64_t off = (uint64_t)(order[next] % file_blocks) * MIB;
            if (write)
                io_uring_prep_write(sqe, fd, bufs + (size_t)sl * MIB, MIB, off);
            else
                io_uring_prep_read(sqe, fd, bufs + (size_t)sl * MIB, MIB, off);
            io_uring_sqe_set_data64(sqe, (uint64_t)sl);
            next++;
            inflight++;
        }
        io_uring_submit(&ring);
        struct io_uring_cqe *cqe;
        rc = io_uring_wait_cqe(&ring, &cqe);
        if (rc < 0)
            die("wait_cqe", rc);
        do {
            if (cqe->res != (int)MIB)
                die("raw I/O", cqe->res < 0 ? cqe->res : -EIO);
            slots[nfree++] = (int)io_uring_cqe_get_data64(cqe);
            io_uring_cqe_seen(&ring, cqe);
            done++;
            inflight--;
        } while (io_uring_peek_cqe(&ring, &cqe) == 0);
    }
    double t = now() - t0;
    io_uring_queue_exit(&ring);
    free(bufs);
    close(fd);
    return (double)nblocks / t;
}

static void make_raw_file(const char *path, unsigned blocks)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0 || fallocate(fd, 0, 0, (off_t)(blocks * MIB)) != 0)
        die(path, errno);
    close(fd);
    uint32_t *order = malloc(blocks * sizeof(*order));
    for (unsigned i = 0; i < blocks; i++)
        order[i] = i;
    raw_io(path, true, order, blocks, blocks); /* written once, like the store */
    free(order);
}

/* ---- store drivers --------------------------------------------------------- */

struct drv {
    unsigned outstanding, errors, hits;
    uint8_t *copy_to; /* RAM bench: copy each hit out */
};

static void drv_read(void *arg, int rc, bs_buf *buf)
{
    struct drv *d = arg;
    d->outstanding--;
    if (rc < 0) {
        d->errors++;
        return;
    }
    d->hits++;
    if (d->copy_to)
        memcpy(d->copy_to, bs_buf_data(buf), bs_buf_len(buf));
    bs_buf_unref(&buf);
}

static void drv_write(void *arg, int rc)
{
    struct drv *d = arg;
    d->outstanding--;
    if (rc < 0)
        d->errors++;
}

static void big_id(bst_id *id, unsigned obj)
{
    bst_id_init(id, "bench", obj, "v1", MIB, 0);
}

/* Writes blocks [first, first+n) at QD; MiB/s. */
static double store_write(bs_worker *w, struct event_base *base, unsigned first, unsigned n,
                          const uint8_t *data)
{
    struct drv d = {0};
    double t0 = now();
    for (unsigned i = 0; i < n; i++) {
        bst_id id;
        big_id(&id, first + i);
        int rc = bs_write(w, &id.id, data, MIB, drv_write, &d);
        if (rc < 0)
            die("bs_write", rc);
        d.outstanding++;
        while (d.outstanding >= QD)
            event_base_loop(base, EVLOOP_ONCE);
    }
    while (d.outstanding)
        event_base_loop(base, EVLOOP_ONCE);
    if (d.errors)
        die("store write errors", EIO);
    return (double)n / (now() - t0);
}

/* Reads the blocks in order at QD; MiB/s. */
static double store_read(bs_worker *w, struct event_base *base, const uint32_t *order, unsigned n,
                         uint8_t *copy_to)
{
    struct drv d = {.copy_to = copy_to};
    double t0 = now();
    for (unsigned i = 0; i < n; i++) {
        bst_id id;
        big_id(&id, order[i]);
        int rc = bs_read(w, &id.id, 0, 0, drv_read, &d);
        if (rc < 0)
            die("bs_read", rc);
        d.outstanding++;
        while (d.outstanding >= QD)
            event_base_loop(base, EVLOOP_ONCE);
    }
    while (d.outstanding)
        event_base_loop(base, EVLOOP_ONCE);
    if (d.errors)
        die("store read misses", EIO);
    return (double)n / (now() - t0);
}

static bs_config big_config(const char *dir, uint64_t ssd, uint32_t region, uint64_t ram)
{
    bs_config c;
    memset(&c, 0, sizeof(c));
    c.dir = dir;
    c.ssd_bytes = ssd;
    c.block_size = (uint32_t)MIB;
    c.region_size = region;
    c.ram_bytes = ram;
    c.log = quiet;
    return c;
}

static bs_store *open_or_die(const bs_config *c)
{
    bs_store *s = NULL;
    char err[512];
    int rc = bs_open(&s, c, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "blockstore_bench: %s\n", err);
        exit(1);
    }
    return s;
}

static void shuffle(uint32_t *v, unsigned n, uint64_t seed)
{
    for (unsigned i = 0; i < n; i++)
        v[i] = i;
    for (unsigned i = n - 1; i > 0; i--) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        unsigned j = (unsigned)(seed % (i + 1));
        uint32_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* ---- figures --------------------------------------------------------------- */

struct fig {
    double store, raw, ratio; /* medians; ratio = median of per-round ratios */
};

static struct fig read_figure(struct event_base *base, bs_io_mode mode, double *thr_ratio)
{
    const unsigned n = quick ? 128 : 512;
    char dir[600], raw[600];
    snprintf(dir, sizeof(dir), "%s/read", root);
    snprintf(raw, sizeof(raw), "%s/raw-read", root);
    mkdir(dir, 0755);
    make_raw_file(raw, n);
    bs_config c = big_config(dir, 2 * n * MIB, 64 * MIB, 64 * MIB);
    c.io_mode = mode;
    uint8_t *data = malloc(MIB);
    memset(data, 0x33, MIB);
    {
        bs_store *s = open_or_die(&c);
        bs_worker *w;
        if (bs_worker_attach(s, base, &w))
            die("attach", EIO);
        store_write(w, base, 0, n, data);
        bs_worker_detach(&w);
        bs_close(&s);
    }
    uint32_t *order = malloc(n * sizeof(*order));
    double st[32], rw[32], rt[32], th[32];
    for (unsigned r = 0; r < rounds; r++) {
        shuffle(order, n, 0x9e3779b9u + r);
        rw[r] = raw_io(raw, false, order, n, n);
        bs_store *s = open_or_die(&c); /* cold RAM tier */
        bs_worker *w;
        if (bs_worker_attach(s, base, &w))
            die("attach", EIO);
        st[r] = store_read(w, base, order, n, NULL);
        bs_worker_detach(&w);
        bs_close(&s);
        bs_config ct = c;
        ct.io_mode = BS_IO_THREADS;
        s = open_or_die(&ct);
        if (bs_worker_attach(s, base, &w))
            die("attach", EIO);
        th[r] = store_read(w, base, order, n, NULL);
        bs_worker_detach(&w);
        bs_close(&s);
        rt[r] = st[r] / rw[r];
        th[r] /= rw[r];
        printf("  read round %u: raw %.0f MiB/s, store %.0f MiB/s (%.2fx), thread pool %.2fx\n", r,
               rw[r], st[r], rt[r], th[r]);
    }
    struct fig f = {median(st, rounds), median(rw, rounds), median(rt, rounds)};
    *thr_ratio = median(th, rounds);
    free(order);
    free(data);
    unlink(raw);
    bst_rmdir(dir);
    return f;
}

static struct fig write_figure(struct event_base *base, double *waits_per_block)
{
    /* The default region size (64 MiB), 16 regions. */
    const unsigned cap = quick ? 256 : 1024, n = quick ? 384 : 768;
    char dir[600], raw[600];
    snprintf(dir, sizeof(dir), "%s/write", root);
    snprintf(raw, sizeof(raw), "%s/raw-write", root);
    mkdir(dir, 0755);
    make_raw_file(raw, cap);
    bs_config c = big_config(dir, cap * MIB, (uint32_t)(cap * MIB / 16), 0);
    bs_store *s = open_or_die(&c);
    bs_worker *w;
    if (bs_worker_attach(s, base, &w))
        die("attach", EIO);
    uint8_t *data = malloc(MIB);
    memset(data, 0x44, MIB);
    store_write(w, base, 0, cap, data); /* full: from now on every region evicts */
    uint32_t *order = malloc(n * sizeof(*order));
    double st[32], rw[32], rt[32];
    unsigned next = cap;
    bs_stats before;
    bs_stats_get(s, &before);
    for (unsigned r = 0; r < rounds; r++) {
        for (unsigned i = 0; i < n; i++)
            order[i] = (r * n + i) % cap; /* sequential, wrapping */
        rw[r] = raw_io(raw, true, order, n, cap);
        st[r] = store_write(w, base, next, n, data);
        next += n;
        rt[r] = st[r] / rw[r];
        printf("  write round %u: raw %.0f MiB/s, store %.0f MiB/s (%.2fx)\n", r, rw[r], st[r],
               rt[r]);
    }
    bs_stats after;
    bs_stats_get(s, &after);
    if (after.evictions == before.evictions)
        die("write bench did not evict", EINVAL);
    *waits_per_block = (double)(after.write_waits - before.write_waits) / (rounds * n);
    bs_worker_detach(&w);
    bs_close(&s);
    free(order);
    free(data);
    unlink(raw);
    bst_rmdir(dir);
    return (struct fig){median(st, rounds), median(rw, rounds), median(rt, rounds)};
}

static struct fig ram_figure(struct event_base *base)
{
    const unsigned n = 64, passes = quick ? 8 : 32;
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/ram", root);
    mkdir(dir, 0755);
    bs_config c = big_config(dir, 256 * MIB, 16 * MIB, 256 * MIB);
    bs_store *s = open_or_die(&c);
    bs_worker *w;
    if (bs_worker_attach(s, base, &w))
        die("attach", EIO);
    uint8_t *data = malloc(MIB), *dst;
    uint8_t **src = malloc(n * sizeof(*src));
    if (posix_memalign((void **)&dst, 4096, MIB))
        die("memory", ENOMEM);
    memset(data, 0x55, MIB);
    store_write(w, base, 0, n, data);
    for (unsigned i = 0; i < n; i++) {
        /* Page-aligned like the RAM tier's pages: the same memcpy either way. */
        if (posix_memalign((void **)&src[i], 4096, MIB))
            die("memory", ENOMEM);
        memset(src[i], (int)i, MIB);
    }
    uint32_t *order = malloc(n * passes * sizeof(*order));
    for (unsigned i = 0; i < n * passes; i++)
        order[i] = i % n;
    store_read(w, base, order, n, dst); /* warm: every block now a RAM hit */
    double st[32], mc[32], rt[32];
    for (unsigned r = 0; r < rounds; r++) {
        double t0 = now();
        for (unsigned i = 0; i < n * passes; i++)
            memcpy(dst, src[i % n], MIB);
        mc[r] = (double)(n * passes) / (now() - t0);
        st[r] = store_read(w, base, order, n * passes, dst);
        rt[r] = st[r] / mc[r];
        printf("  ram round %u: memcpy %.0f MiB/s, RAM-tier hit + copy-out %.0f MiB/s (%.2fx)\n", r,
               mc[r], st[r], rt[r]);
    }
    bs_stats stt;
    bs_stats_get(s, &stt);
    if (stt.ram_hits < (uint64_t)n * passes * rounds)
        die("RAM bench missed the RAM tier", EINVAL);
    bs_worker_detach(&w);
    bs_close(&s);
    for (unsigned i = 0; i < n; i++)
        free(src[i]);
    free(src);
    free(order);
    free(data);
    free(dst);
    bst_rmdir(dir);
    return (struct fig){median(st, rounds), median(mc, rounds), median(rt, rounds)};
}

static void restart_figure(double *open_s, double *bytes_per_entry, unsigned *entries)
{
    const unsigned n = quick ? 100000 : 1000000, per_region = 64, used_regions = 16;
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/restart", root);
    mkdir(dir, 0755);
    /* 32 regions, half of them named by the entries: opening evicts nothing. */
    bs_config c = big_config(dir, 2 * used_regions * 64 * MIB, 64 * MIB, 0);
    c.sparse = true;
    bs_store *s = open_or_die(&c);
    bs_close(&s);
    char ixp[700];
    snprintf(ixp, sizeof(ixp), "%s/index", dir);
    bs_index *ix = NULL;
    char err[512];
    if (bs__index_open(&ix, ixp, false, NULL, err, sizeof(err)) < 0)
        die(err, EIO);
    enum { BATCH = 10000 };
    bs_entry **batch = malloc(BATCH * sizeof(*batch));
    uint8_t idb[BS_MAX_IDENTITY];
    for (unsigned i = 0; i < n; i += BATCH) {
        unsigned m = n - i < BATCH ? n - i : BATCH;
        for (unsigned j = 0; j < m; j++) {
            unsigned k = i + j;
            char key[64];
            snprintf(key, sizeof(key), "warehouse/part-%07u.parquet", k / 8);
            bkey_id id;
            bkey_id_init(&id, "tenant", "bench-bucket", key, "0123456789abcdef0123456789abcdef",
                         8 * MIB, k % 8);
            int len = bs__id_encode(&id, idb, sizeof(idb));
            bs_entry *e = bs__entry_new(bkey_of(&id), idb, (size_t)len, (uint32_t)MIB);
            e->region = k % used_regions;
            e->seq = 1 + e->region;
            e->off = (uint32_t)(((k / used_regions) % per_region) * MIB);
            for (unsigned q = 0; q < e->ncs; q++)
                e->cs[q] = ((uint64_t)k << 20) ^ (q * 0x9e3779b97f4a7c15ull);
            batch[j] = e;
        }
        if (bs__index_put_direct(ix, batch, m) < 0)
            die("index bulk write", EIO);
        for (unsigned j = 0; j < m; j++)
            free(batch[j]);
    }
    free(batch);
    int64_t bytes = bs__index_compact_size(ix);
    bs__index_close(&ix);
    *bytes_per_entry = (double)bytes / n;
    *entries = n;
    double t[32];
    unsigned r3 = rounds < 3 ? rounds : 3;
    for (unsigned r = 0; r < r3; r++) {
        double t0 = now();
        s = open_or_die(&c);
        t[r] = now() - t0;
        bs_stats st;
        bs_stats_get(s, &st);
        if (st.blocks_stored != n)
            die("restart loaded the wrong number of entries", EINVAL);
        bs_close(&s);
        printf("  restart round %u: open with %u entries %.2f s\n", r, n, t[r]);
    }
    *open_s = median(t, r3);
    bst_rmdir(dir);
}

/* Zipf(0.9) over nkeys 64 KiB blocks into a store of 1/8 of them; a miss
 * writes the block (a fill). Hit ratio. */
static double trace_figure(struct event_base *base, bs_evict_policy pol, bool reinsert,
                           uint64_t *reins)
{
    const unsigned nkeys = 4096, nreq = quick ? 8000 : 30000;
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/trace", root);
    mkdir(dir, 0755);
    bs_config c;
    memset(&c, 0, sizeof(c));
    c.dir = dir;
    c.block_size = 64 * 1024;
    c.region_size = 1024 * 1024;
    c.ssd_bytes = (uint64_t)nkeys / 8 * c.block_size;
    c.no_sync = true;
    c.evict = pol;
    c.reinsert = reinsert;
    c.log = quiet;
    bs_store *s = open_or_die(&c);
    bs_worker *w;
    if (bs_worker_attach(s, base, &w))
        die("attach", EIO);
    static double cdf[4096];
    double sum = 0;
    for (unsigned i = 0; i < nkeys; i++)
        sum += 1.0 / pow(i + 1, 0.9);
    double acc = 0;
    for (unsigned i = 0; i < nkeys; i++) {
        acc += 1.0 / pow(i + 1, 0.9) / sum;
        cdf[i] = acc;
    }
    uint64_t seed = 0x2545f4914f6cdd1dull;
    unsigned hits = 0;
    for (unsigned q = 0; q < nreq; q++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        double u = (double)(seed >> 11) / 9007199254740992.0;
        unsigned lo = 0, hi = nkeys - 1;
        while (lo < hi) {
            unsigned mid = (lo + hi) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* Scatter ranks over objects so hot keys do not share a region. */
        unsigned key = (lo * 2654435761u) % nkeys;
        bst_id id;
        bst_id_init(&id, "trace", key, "v", 64 * 1024, 0);
        int rc = bst_read(w, base, &id.id, 0, 0, NULL);
        if (rc >= 0)
            hits++;
        else if (bst_write_block(w, base, &id.id, 64 * 1024) < 0)
            die("trace write", EIO);
    }
    bs_stats st;
    bs_stats_get(s, &st);
    *reins = st.reinsertions;
    bs_worker_detach(&w);
    bs_close(&s);
    bst_rmdir(dir);
    return (double)hits / nreq;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else {
            fprintf(stderr, "usage: blockstore_bench [--rounds N] [--quick]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 32)
        rounds = 5;
    bst_mkdir(root, sizeof(root), "blockstore_bench");
    if (getenv("RINGCACHE_BENCH_TMP")) {
        bst_rmdir(root);
        snprintf(root, sizeof(root), "%s/blockstore_bench.XXXXXX", getenv("RINGCACHE_BENCH_TMP"));
        if (!mkdtemp(root))
            die(root, errno);
    }
    struct event_base *base = event_base_new();
    printf("blockstore_bench: %u rounds, QD %d, temp %s\n", rounds, QD, root);

    double thr;
    struct fig rd = read_figure(base, BS_IO_AUTO, &thr);
    double waits;
    struct fig wr = write_figure(base, &waits);
    struct fig ram = ram_figure(base);
    double open_s, bpe;
    unsigned entries;
    restart_figure(&open_s, &bpe, &entries);
    uint64_t r1, r2, r3, r4;
    double h_ff = trace_figure(base, BS_EVICT_FIFO, false, &r1);
    double h_fr = trace_figure(base, BS_EVICT_FIFO, true, &r2);
    double h_lf = trace_figure(base, BS_EVICT_LRU, false, &r3);
    double h_lr = trace_figure(base, BS_EVICT_LRU, true, &r4);

    printf("\n| figure | store | baseline | ratio (median of rounds) | goal |\n");
    printf("|---|---|---|---|---|\n");
    printf(
        "| read 1 MiB, cold RAM tier, io_uring QD%d | %.0f MiB/s | raw O_DIRECT io_uring %.0f MiB/s | %.2f | >= 0.8 |\n",
        QD, rd.store, rd.raw, rd.ratio);
    printf("| read 1 MiB, thread-pool mode | | raw O_DIRECT io_uring | %.2f | - |\n", thr);
    printf(
        "| write 1 MiB while evicting (durable) | %.0f MiB/s | raw O_DIRECT sequential %.0f MiB/s | %.2f | >= 0.7 |\n",
        wr.store, wr.raw, wr.ratio);
    printf("| RAM-tier hit + copy-out | %.0f MiB/s | memcpy %.0f MiB/s | %.2f | >= 0.5 |\n",
           ram.store, ram.raw, ram.ratio);
    printf("| restart, %u index entries | %.2f s | | | |\n", entries, open_s);
    printf("| index bytes per entry (1 MiB block: 16 checksums + identity) | %.0f | | | |\n", bpe);
    printf("| writes that waited for eviction | %.3f per block | | | |\n", waits);
    printf("\nZipf(0.9) trace, 4096 blocks, store = 1/8 of them, a miss fills:\n");
    printf("| policy | reinsertion off | reinsertion on (copies) |\n|---|---|---|\n");
    printf("| FIFO | %.3f | %.3f (%llu) |\n", h_ff, h_fr, (unsigned long long)r2);
    printf("| LRU  | %.3f | %.3f (%llu) |\n", h_lf, h_lr, (unsigned long long)r4);
    (void)r1, (void)r3;
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf(
        "\nblockstore: read_vs_raw=%.2f write_vs_raw=%.2f ram_vs_memcpy=%.2f restart_1m_entries_s=%.2f index_bytes_per_entry=%.0f\n",
        rd.ratio, wr.ratio, ram.ratio, open_s, bpe);
    event_base_free(base);
    bst_rmdir(root);
    return 0;
}
