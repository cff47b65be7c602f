/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_reader.c: a tiny compute-node process for test_client_multiproc: reads
 * one object whole through libringcache, configured from the environment only
 * (RINGCACHE_CACHE, AWS_*), and checks the XXH3-64 of what it read.
 *
 *   rc_reader BUCKET KEY HASH_HEX   exit 0: equal, 1: a failure (printed)
 */
#include "ringcache.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: rc_reader BUCKET KEY HASH_HEX\n");
        return 2;
    }
    rc_config cfg;
    rc_config_init(&cfg);
    char err[RC_ERR_MAX];
    if (rc_config_from_env(&cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "rc_reader: %s\n", err);
        return 1;
    }
    cfg.page_cache_bytes = 128u << 20;
    cfg.max_threads = 1;
    rc_client *c;
    rc_handle *h;
    if (rc_create(&c, &cfg, err, sizeof(err)) < 0 ||
        rc_open(c, argv[1], argv[2], &h, err, sizeof(err)) < 0) {
        fprintf(stderr, "rc_reader: %s\n", err);
        return 1;
    }
    const size_t step = 4u << 20;
    unsigned char *buf = malloc(step);
    XXH3_state_t *st = XXH3_createState();
    XXH3_64bits_reset(st);
    int rc = 0;
    for (uint64_t off = 0; off < rc_size(h);) {
        int64_t n = rc_pread(h, buf, step, off);
        if (n <= 0) {
            rc_last_error(h, err, sizeof(err));
            fprintf(stderr, "rc_reader: pread at %" PRIu64 ": %s\n", off, err);
            rc = 1;
            break;
        }
        XXH3_64bits_update(st, buf, (size_t)n);
        off += (uint64_t)n;
    }
    uint64_t got = XXH3_64bits_digest(st);
    uint64_t want = strtoull(argv[3], NULL, 16);
    if (!rc && got != want) {
        fprintf(stderr, "rc_reader: hash %016" PRIx64 ", want %016" PRIx64 "\n", got, want);
        rc = 1;
    }
    rc_stats s;
    rc_stats_get(c, &s);
    printf("blocks=%" PRIu64 " readahead=%" PRIu64 " fallbacks=%" PRIu64 " failovers=%" PRIu64 "\n",
           s.node_blocks, s.readahead_fetches, s.fallbacks, s.failovers);
    XXH3_freeState(st);
    free(buf);
    rc_close(&h);
    rc_destroy(&c);
    return rc;
}
