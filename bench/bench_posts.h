/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_posts.h: the Stack-Overflow-shaped posts dataset the benches share:
 * bench/engine/bench_gen.mjs writes it (four Parquet files, two snappy and two
 * zstd) into DIR/data/posts_{0..3}.parquet, and bench_upload_posts puts those
 * files into an S3 bucket. For benches only (they link the harness and the S3
 * client); single-threaded.
 */
#ifndef RINGCACHE_BENCH_POSTS_H
#define RINGCACHE_BENCH_POSTS_H

#include "harness.h"
#include "s3.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define BENCH_POSTS_FILES 4

/* Writes `rows` rows into dir/data/ with node and @duckdb/node-api: 0, 77 when
 * node or the npm package is missing (its reason on stderr), -1 on a failure. */
static inline int bench_gen_posts(h_env *env, const char *dir, long long rows)
{
    char gen[4096], rs[32];
    if (h_source_path(gen, sizeof(gen), "bench/engine/bench_gen.mjs") < 0) {
        fprintf(stderr, "cannot find bench/engine/bench_gen.mjs (set RINGCACHE_SOURCE_DIR)\n");
        return -1;
    }
    snprintf(rs, sizeof(rs), "%lld", rows);
    const char *a[] = {"/usr/bin/env", "node", gen, dir, rs, "0", NULL};
    h_run_result *r = calloc(1, sizeof(*r));
    int rc = -1;
    if (r && h_run(env, r, a, NULL) == 0) {
        rc = r->status == 0 ? 0 : r->status == 77 ? 77 : -1;
        if (rc != 0)
            fprintf(stderr, "bench_gen.mjs: %s", r->err);
    }
    free(r);
    return rc;
}

/* Puts dir/data/posts_{0..3}.parquet into bucket as prefix + posts_N.parquet
 * (4 parts in flight each): 0, or -1 with the reason on stderr. */
static inline int bench_upload_posts(const s3_config *cfg, const char *dir, const char *bucket,
                                     const char *prefix)
{
    s3_sync *sy;
    if (s3_sync_create(&sy, cfg) < 0) {
        fprintf(stderr, "cannot create an S3 client\n");
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < BENCH_POSTS_FILES && rc == 0; i++) {
        char path[4300], key[512];
        snprintf(path, sizeof(path), "%s/data/posts_%d.parquet", dir, i);
        snprintf(key, sizeof(key), "%sposts_%d.parquet", prefix, i);
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
            fprintf(stderr, "cannot open %s for the upload\n", path);
            rc = -1;
        } else {
            s3_sync_put_args pa = {.bucket = bucket,
                                   .key = key,
                                   .fd = fd,
                                   .size = (uint64_t)st.st_size,
                                   .parallel = 4};
            s3_error e = {0};
            if (s3_sync_put(sy, &pa, NULL, &e) < 0) {
                fprintf(stderr, "the upload of %s failed: %s\n", path, e.message);
                rc = -1;
            }
        }
        if (fd >= 0)
            close(fd);
    }
    s3_sync_destroy(&sy);
    return rc;
}

#endif /* RINGCACHE_BENCH_POSTS_H */
