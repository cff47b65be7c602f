/* SPDX-License-Identifier: Apache-2.0
 *
 * coldwarm_reader.c: one "compute node" of the cold-versus-warm benchmark: a
 * process that reads a dataset with N threads and reports what it took. The
 * same workloads run against every source, so set-ups compare like for like:
 *   --source cache   through cache nodes (libringcache: page cache, ring, nodes)
 *   --source s3      S3 directly (libringcache with no cache tier: ranged GETs)
 *   --source local   files on local disk (pread)
 *   --source http    an HTTP cache such as nginx's slice cache (Range GETs)
 * Workloads: `scan` reads every byte of every object (threads take objects in
 * turn, reads of --scan-read-mib (8) MiB from every source, each object
 * checked against its XXH64 from the list; through libringcache as
 * RC_READ_SCAN reads, as the engine reads a column chunk: the read's blocks
 * are fetched at once and land straight in the reader's buffer, one copy per
 * byte, nothing kept and no read-ahead; --plain-reads: plain rc_pread, through
 * the page cache with its read-ahead);
 * `scattered` makes --reads small reads at seeded random offsets, one at a
 * time, and reports p50/p99.
 *
 * The list file has one object per line: `key size xxh64-hex`. The last line
 * printed is `result bytes=B seconds=S cpu_s=C p50_ms=P p99_ms=Q errors=E`.
 */
#include "ringcache.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include "../bench.h"

typedef struct {
    char key[512];
    uint64_t size;
    uint64_t xxh;
} obj_t;

static obj_t *objs;
static size_t n_objs;
static const char *source, *bucket = "ringcache-bench", *dir, *url_base;
static rc_client *client;
static atomic_size_t next_obj;
static atomic_uint_fast64_t total_bytes, errors;
static unsigned scan_flags = RC_READ_SCAN; /* --plain-reads: 0 */
static size_t scan_read = 8u << 20;        /* --scan-read-mib */

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "coldwarm_reader: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

/* ---- one object, sequentially --------------------------------------------- */

typedef struct {
    CURL *curl;
    uint8_t *buf;
    size_t got, cap;
} http_t;

static size_t http_sink(char *d, size_t s, size_t n, void *arg)
{
    http_t *h = arg;
    size_t k = s * n;
    if (h->got + k > h->cap)
        return 0;
    memcpy(h->buf + h->got, d, k);
    h->got += k;
    return k;
}

/* Reads [off, off+len) of object o into buf; bytes or -1. */
static int64_t read_range(const obj_t *o, rc_handle *h, int fd, http_t *ht, uint8_t *buf,
                          size_t len, uint64_t off, unsigned rc_flags)
{
    if (!strcmp(source, "cache") || !strcmp(source, "s3"))
        return rc_pread_flags(h, buf, len, off, rc_flags);
    if (!strcmp(source, "local")) {
        size_t got = 0;
        while (got < len) {
            ssize_t k = pread(fd, buf + got, len - got, (off_t)(off + got));
            if (k <= 0)
                return k < 0 ? -1 : (int64_t)got;
            got += (size_t)k;
        }
        return (int64_t)got;
    }
    char url[1024], range[64];
    snprintf(url, sizeof(url), "%s/%s", url_base, o->key);
    snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, off, off + len - 1);
    ht->buf = buf;
    ht->got = 0;
    ht->cap = len;
    curl_easy_setopt(ht->curl, CURLOPT_URL, url);
    curl_easy_setopt(ht->curl, CURLOPT_RANGE, range);
    long code = 0;
    if (curl_easy_perform(ht->curl) != CURLE_OK ||
        curl_easy_getinfo(ht->curl, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK ||
        (code != 206 && code != 200))
        return -1;
    return (int64_t)ht->got;
}

typedef struct {
    rc_handle *h;
    int fd;
} opened;

static int open_obj(const obj_t *o, opened *op)
{
    op->h = NULL;
    op->fd = -1;
    if (!strcmp(source, "cache") || !strcmp(source, "s3")) {
        char err[RC_ERR_MAX];
        if (rc_open(client, bucket, o->key, &op->h, err, sizeof(err)) < 0) {
            fprintf(stderr, "coldwarm_reader: %s\n", err);
            return -1;
        }
    } else if (!strcmp(source, "local")) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, o->key);
        op->fd = open(path, O_RDONLY);
        if (op->fd < 0)
            return -1;
    }
    return 0;
}

static void close_obj(opened *op)
{
    rc_close(&op->h);
    if (op->fd >= 0)
        close(op->fd);
}

static void *scan_thread(void *arg)
{
    (void)arg;
    uint8_t *buf = malloc(scan_read);
    http_t ht = {0};
    if (!strcmp(source, "http")) {
        ht.curl = curl_easy_init();
        curl_easy_setopt(ht.curl, CURLOPT_WRITEFUNCTION, http_sink);
        curl_easy_setopt(ht.curl, CURLOPT_WRITEDATA, &ht);
    }
    for (;;) {
        size_t i = atomic_fetch_add(&next_obj, 1);
        if (i >= n_objs)
            break;
        const obj_t *o = &objs[i];
        opened op;
        if (open_obj(o, &op) < 0) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
        XXH64_state_t *st = XXH64_createState();
        XXH64_reset(st, 0);
        uint64_t off = 0;
        while (off < o->size) {
            size_t want = o->size - off < scan_read ? (size_t)(o->size - off) : scan_read;
            int64_t k = read_range(o, op.h, op.fd, &ht, buf, want, off, scan_flags);
            if (k <= 0) {
                atomic_fetch_add(&errors, 1);
                if (op.h) {
                    char e[RC_ERR_MAX];
                    rc_last_error(op.h, e, sizeof(e));
                    fprintf(stderr, "coldwarm_reader: %s: %s\n", o->key, e);
                }
                break;
            }
            XXH64_update(st, buf, (size_t)k);
            off += (uint64_t)k;
            atomic_fetch_add(&total_bytes, (uint64_t)k);
        }
        if (off == o->size && XXH64_digest(st) != o->xxh) {
            fprintf(stderr, "coldwarm_reader: %s read back different bytes\n", o->key);
            atomic_fetch_add(&errors, 1);
        }
        XXH64_freeState(st);
        close_obj(&op);
    }
    if (ht.curl)
        curl_easy_cleanup(ht.curl);
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *list = NULL, *workload = "scan", *members = NULL;
    int threads = 4, reads = 2000;
    size_t read_size = 65536, page_cache = 256u << 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--source") && v)
            source = v, i++;
        else if (!strcmp(a, "--list") && v)
            list = v, i++;
        else if (!strcmp(a, "--workload") && v)
            workload = v, i++;
        else if (!strcmp(a, "--cache") && v)
            members = v, i++;
        else if (!strcmp(a, "--bucket") && v)
            bucket = v, i++;
        else if (!strcmp(a, "--dir") && v)
            dir = v, i++;
        else if (!strcmp(a, "--url-base") && v)
            url_base = v, i++;
        else if (!strcmp(a, "--threads") && v)
            threads = atoi(v), i++;
        else if (!strcmp(a, "--reads") && v)
            reads = atoi(v), i++;
        else if (!strcmp(a, "--read-size") && v)
            read_size = (size_t)atol(v), i++;
        else if (!strcmp(a, "--plain-reads"))
            scan_flags = 0;
        else if (!strcmp(a, "--scan-read-mib") && v)
            scan_read = (size_t)atol(v) << 20, i++;
        else if (!strcmp(a, "--page-cache-mib") && v)
            page_cache = (size_t)atol(v) << 20, i++;
        else
            die("unknown or incomplete option (see the file's header)", a);
    }
    if (!source || !list || threads < 1 || reads < 1 || scan_read == 0)
        die("give --source, --list, and positive --threads/--reads/--scan-read-mib", NULL);
    FILE *f = fopen(list, "r");
    if (!f)
        die("cannot read the list", list);
    size_t cap = 64;
    objs = calloc(cap, sizeof(*objs));
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        if (n_objs == cap)
            objs = realloc(objs, (cap *= 2) * sizeof(*objs));
        obj_t *o = &objs[n_objs];
        if (sscanf(line, "%511s %" SCNu64 " %" SCNx64, o->key, &o->size, &o->xxh) == 3)
            n_objs++;
    }
    fclose(f);
    curl_global_init(CURL_GLOBAL_ALL);
    if (!strcmp(source, "cache") || !strcmp(source, "s3")) {
        rc_config cfg;
        rc_config_init(&cfg);
        char err[RC_ERR_MAX];
        if (rc_config_from_env(&cfg, err, sizeof(err)) < 0)
            die(err, NULL);
        cfg.members = !strcmp(source, "cache") ? members : NULL;
        cfg.page_cache_bytes = page_cache;
        cfg.max_threads = threads;
        if (rc_create(&client, &cfg, err, sizeof(err)) < 0)
            die(err, NULL);
    } else if (!strcmp(source, "local") && !dir) {
        die("--source local needs --dir", NULL);
    } else if (!strcmp(source, "http") && !url_base) {
        die("--source http needs --url-base", NULL);
    }

    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    double t0 = bench_now_s(), p50 = 0, p99 = 0;
    if (!strcmp(workload, "scan")) {
        pthread_t *th = calloc((size_t)threads, sizeof(*th));
        for (int i = 0; i < threads; i++)
            pthread_create(&th[i], NULL, scan_thread, NULL);
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        free(th);
    } else {
        /* scattered: one at a time, latency bound, seeded */
        uint64_t total = 0;
        for (size_t i = 0; i < n_objs; i++)
            total += objs[i].size;
        opened *ops = calloc(n_objs, sizeof(*ops));
        for (size_t i = 0; i < n_objs; i++)
            if (open_obj(&objs[i], &ops[i]) < 0)
                atomic_fetch_add(&errors, 1);
        http_t ht = {0};
        if (!strcmp(source, "http")) {
            ht.curl = curl_easy_init();
            curl_easy_setopt(ht.curl, CURLOPT_WRITEFUNCTION, http_sink);
            curl_easy_setopt(ht.curl, CURLOPT_WRITEDATA, &ht);
        }
        uint8_t *buf = malloc(read_size);
        double *lat = malloc(sizeof(double) * (size_t)reads);
        uint64_t x = 0x243F6A8885A308D3ull;
        t0 = bench_now_s();
        for (int r = 0; r < reads; r++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t at = x % total;
            size_t i = 0;
            while (at >= objs[i].size) {
                at -= objs[i].size;
                i++;
            }
            if (at + read_size > objs[i].size)
                at = objs[i].size > read_size ? objs[i].size - read_size : 0;
            double s = bench_now_s();
            int64_t k = read_range(&objs[i], ops[i].h, ops[i].fd, &ht, buf, read_size, at, 0);
            lat[r] = (bench_now_s() - s) * 1000;
            if (k <= 0)
                atomic_fetch_add(&errors, 1);
            else
                atomic_fetch_add(&total_bytes, (uint64_t)k);
        }
        qsort(lat, (size_t)reads, sizeof(double), bench_cmp_double);
        p50 = lat[(size_t)ceil(0.50 * reads) - 1];
        p99 = lat[(size_t)ceil(0.99 * reads) - 1];
        for (size_t i = 0; i < n_objs; i++)
            close_obj(&ops[i]);
        if (ht.curl)
            curl_easy_cleanup(ht.curl);
        free(ops);
        free(buf);
        free(lat);
    }
    double secs = bench_now_s() - t0;
    getrusage(RUSAGE_SELF, &ru1);
    double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                 (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                 (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                 (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    if (client) {
        rc_stats st;
        rc_stats_get(client, &st);
        fprintf(stderr,
                "hits=%" PRIu64 " misses=%" PRIu64 " node_blocks=%" PRIu64 " fallbacks=%" PRIu64
                " readahead=%" PRIu64 "\n",
                st.hits, st.misses, st.node_blocks, st.fallbacks, st.readahead_fetches);
        rc_destroy(&client);
    }
    printf("result bytes=%" PRIu64 " seconds=%.4f cpu_s=%.4f p50_ms=%.4f p99_ms=%.4f "
           "errors=%" PRIu64 "\n",
           (uint64_t)atomic_load(&total_bytes), secs, cpu, p50, p99,
           (uint64_t)atomic_load(&errors));
    free(objs);
    return atomic_load(&errors) ? 1 : 0;
}
