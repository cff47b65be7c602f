/* SPDX-License-Identifier: Apache-2.0
 *
 * test_client_versions.c: a handle never mixes versions. An object stamped
 * with (version number, offset) in every 16 bytes is overwritten in S3 six
 * times while 8 threads read random ranges of it through handles of one
 * client. Every buffer a read returns holds one version only, the same for
 * every read of one handle; a changed object shows as -ESTALE (the thread
 * re-opens). After the last overwrite and the metadata TTL, a new handle is
 * pinned to the last version and reads only its bytes.
 * The harness's S3 server swaps an overwritten object atomically, as S3 does
 * (tests/harness/s3server.js), so no read or open may fail: any error other
 * than -ESTALE fails the test.
 */
#include "client_test_util.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#define N_THREADS  8
#define N_VERSIONS 6
#define OBJ_KEY    "versions/stamped.bin"

static t_cluster tc;
static size_t obj_size;
static rc_client *client;
static atomic_bool writer_done;
static atomic_int mixed, bad, stale_seen, reads_done;
static atomic_uint_fast64_t bytes_read;

static void stamp(unsigned char *buf, size_t size, uint64_t version)
{
    for (size_t o = 0; o + 16 <= size; o += 16) {
        uint64_t unit = o & ~(uint64_t)4095;
        memcpy(buf + o, &version, 8);
        memcpy(buf + o + 8, &unit, 8);
    }
}

/* The version every record of buf (read at off, 16-aligned) holds, or -1 if
 * it holds two, -2 if an offset is wrong. */
static int64_t check(const unsigned char *buf, size_t len, uint64_t off)
{
    int64_t v = -3;
    for (size_t o = 0; o + 16 <= len; o += 16) {
        uint64_t ver, unit;
        memcpy(&ver, buf + o, 8);
        memcpy(&unit, buf + o + 8, 8);
        if (unit != ((off + o) & ~(uint64_t)4095))
            return -2;
        if (v == -3)
            v = (int64_t)ver;
        else if ((uint64_t)v != ver)
            return -1;
    }
    return v;
}

static void *reader(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    unsigned char *buf = malloc(512u << 10);
    char err[RC_ERR_MAX];
    while (!atomic_load(&writer_done)) {
        rc_handle *h;
        int rc = rc_open(client, H_S3_DEFAULT_BUCKET, OBJ_KEY, &h, err, sizeof(err));
        if (rc < 0) {
            fprintf(stderr, "open: %s\n", err);
            atomic_fetch_add(&bad, 1);
            break;
        }
        if (rc_size(h) != obj_size) {
            fprintf(stderr, "open: size %llu, not %zu\n", (unsigned long long)rc_size(h), obj_size);
            atomic_fetch_add(&bad, 1);
            rc_close(&h);
            break;
        }
        int64_t handle_version = -3;
        for (int i = 0; i < 40 && !atomic_load(&writer_done); i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t off = ((x >> 13) % obj_size) & ~(uint64_t)15;
            size_t len = ((size_t)((x >> 41) % (512u << 10)) + 16) & ~(size_t)15;
            int64_t n = rc_pread(h, buf, len, off);
            if (n == -ESTALE) {
                atomic_fetch_add(&stale_seen, 1);
                break; /* re-open */
            }
            if (n <= 0) {
                rc_last_error(h, err, sizeof(err));
                fprintf(stderr, "pread: %s\n", err);
                atomic_fetch_add(&bad, 1);
                break;
            }
            int64_t v = check(buf, (size_t)n, off);
            if (v == -1 || (handle_version >= 0 && v >= 0 && v != handle_version))
                atomic_fetch_add(&mixed, 1);
            else if (v == -2)
                atomic_fetch_add(&bad, 1);
            if (v >= 0)
                handle_version = v;
            atomic_fetch_add(&reads_done, 1);
            atomic_fetch_add(&bytes_read, (uint64_t)n);
        }
        rc_close(&h);
    }
    free(buf);
    return NULL;
}

static void test_no_mixed_versions(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_versions", NULL);
    obj_size = t_size_mib(32, 16);
    unsigned char *data = malloc(obj_size);
    stamp(data, obj_size, 1);
    t_put_direct(&tc, OBJ_KEY, data, obj_size, NULL);

    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.max_threads = N_THREADS;
    cfg.page_cache_bytes = 64u << 20;
    cfg.metadata_ttl_ms = 300;
    char err[RC_ERR_MAX];
    assert_int_equal(rc_create(&client, &cfg, err, sizeof(err)), 0);
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reader, (void *)(uintptr_t)(i + 1)), 0);
    char etag[S3_ETAG_MAX];
    for (uint64_t v = 2; v <= N_VERSIONS; v++) {
        /* let the readers read this version a while, then overwrite it */
        int before = atomic_load(&reads_done);
        while (atomic_load(&reads_done) < before + 100 && atomic_load(&bad) == 0)
            nanosleep(&(struct timespec){0, 5000000}, NULL);
        stamp(data, obj_size, v);
        t_put_direct(&tc, OBJ_KEY, data, obj_size, etag);
    }
    int before = atomic_load(&reads_done);
    while (atomic_load(&reads_done) < before + 100 && atomic_load(&bad) == 0)
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    atomic_store(&writer_done, true);
    for (int i = 0; i < N_THREADS; i++)
        pthread_join(th[i], NULL);
    fprintf(stderr, "reads %d (%llu MiB), stale %d\n", atomic_load(&reads_done),
            (unsigned long long)(atomic_load(&bytes_read) >> 20), atomic_load(&stale_seen));
    assert_int_equal(atomic_load(&bad), 0);
    assert_int_equal(atomic_load(&mixed), 0);
    assert_true(atomic_load(&reads_done) >= 100 * N_VERSIONS);

    /* past the TTL, a new handle is pinned to the last version */
    nanosleep(&(struct timespec){0, 400 * 1000000L}, NULL);
    rc_handle *h;
    assert_int_equal(rc_open(client, H_S3_DEFAULT_BUCKET, OBJ_KEY, &h, err, sizeof(err)), 0);
    assert_string_equal(rc_version(h), etag);
    unsigned char *buf = malloc(obj_size);
    assert_int_equal(rc_pread(h, buf, obj_size, 0), obj_size);
    assert_int_equal(check(buf, obj_size, 0), N_VERSIONS);
    rc_close(&h);
    rc_destroy(&client);
    free(buf);
    free(data);
    t_cluster_stop(&tc);
}

/* One thread, no race: a handle pinned to v1 reading a block nobody filled
 * after the overwrite gets -ESTALE, stays dead, and a re-open (even within
 * the TTL: the stale answer drops the metadata entry) is pinned to v2; a
 * shorter version than the pinned one is -ESTALE too, from a node's fill or
 * the client's own S3 GET. */
static void test_stale_then_reopen(void **state)
{
    (void)state;
    t_cluster_start(&tc, "test_client_stale", NULL);
    size_t size = 4u << 20;
    unsigned char *data = malloc(size);
    stamp(data, size, 1);
    t_put_direct(&tc, "versions/s.bin", data, size, NULL);
    rc_config cfg;
    t_rc_config(&tc, &cfg);
    cfg.metadata_ttl_ms = 60000;
    cfg.readahead_blocks = 0;
    char err[RC_ERR_MAX], e2[S3_ETAG_MAX];
    assert_int_equal(rc_create(&client, &cfg, err, sizeof(err)), 0);
    rc_handle *h;
    assert_int_equal(rc_open(client, H_S3_DEFAULT_BUCKET, "versions/s.bin", &h, err, sizeof(err)),
                     0);
    unsigned char *buf = malloc(size);
    assert_int_equal(rc_pread(h, buf, 1u << 20, 0), 1u << 20);
    assert_int_equal(check(buf, 1u << 20, 0), 1);
    stamp(data, size, 2);
    t_put_direct(&tc, "versions/s.bin", data, size, e2);
    assert_int_equal(rc_pread(h, buf, 1u << 20, 3u << 20), -ESTALE);
    rc_last_error(h, err, sizeof(err));
    assert_non_null(strstr(err, "versions/s.bin"));
    assert_int_equal(rc_pread(h, buf, 1u << 20, 0), -ESTALE); /* dead, even where cached */
    rc_close(&h);
    assert_int_equal(rc_open(client, H_S3_DEFAULT_BUCKET, "versions/s.bin", &h, err, sizeof(err)),
                     0);
    assert_string_equal(rc_version(h), e2);
    assert_int_equal(rc_pread(h, buf, size, 0), size);
    assert_int_equal(check(buf, size, 0), 2);
    rc_stats st;
    rc_stats_get(client, &st);
    assert_int_equal(st.stale, 1);

    rc_close(&h);
    rc_destroy(&client);

    /* v3, then a shorter v4 before anything of v3 is read: a range inside
     * v3's size is outside the object now (the S3 server ignores If-Match and
     * answers 416), which is "changed" too, through a node's fill and through
     * the client's own GET (no_fill: the node fills nothing) */
    stamp(data, size, 3);
    t_put_direct(&tc, "versions/s.bin", data, size, NULL);
    rc_client *direct;
    assert_int_equal(rc_create(&client, &cfg, err, sizeof(err)), 0);
    cfg.no_fill = true;
    assert_int_equal(rc_create(&direct, &cfg, err, sizeof(err)), 0);
    rc_handle *hd;
    assert_int_equal(rc_open(client, H_S3_DEFAULT_BUCKET, "versions/s.bin", &h, err, sizeof(err)),
                     0);
    assert_int_equal(rc_open(direct, H_S3_DEFAULT_BUCKET, "versions/s.bin", &hd, err, sizeof(err)),
                     0);
    assert_int_equal(rc_size(h), size);
    assert_int_equal(rc_size(hd), size);
    stamp(data, 1u << 20, 4);
    t_put_direct(&tc, "versions/s.bin", data, 1u << 20, NULL);
    assert_int_equal(rc_pread(h, buf, 1u << 20, 3u << 20), -ESTALE);
    rc_last_error(h, err, sizeof(err));
    fprintf(stderr, "through the node: %s\n", err);
    assert_non_null(strstr(err, "versions/s.bin"));
    assert_int_equal(rc_pread(hd, buf, 1000, (2u << 20) + 5), -ESTALE);
    rc_last_error(hd, err, sizeof(err));
    fprintf(stderr, "the client's own GET: %s\n", err);
    assert_non_null(strstr(err, "changed"));
    rc_close(&hd);
    rc_close(&h);
    rc_destroy(&direct);
    rc_destroy(&client);
    free(buf);
    free(data);
    t_cluster_stop(&tc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_then_reopen),
        cmocka_unit_test(test_no_mixed_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
