/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_curl.h: the timed 64 KiB ranged GET the benches measure latency with
 * (libcurl, one kept-alive connection). For benches that link libcurl; no
 * state.
 */
#ifndef RINGCACHE_BENCH_CURL_H
#define RINGCACHE_BENCH_CURL_H

#include <curl/curl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"

/* A libcurl write callback that only counts: arg is a size_t. */
static inline size_t bench_curl_count(char *d, size_t s, size_t n, void *arg)
{
    (void)d;
    *(size_t *)arg += s * n;
    return s * n;
}

/* GET bytes [off, off + 64 KiB) of e's URL (e: kept alive across calls, its
 * URL set): the milliseconds it took, or -1 (what it answered on stderr,
 * naming bench) unless it answered 206 with 65536 bytes. */
static inline double bench_curl_range64k(CURL *e, uint64_t off, const char *bench)
{
    char r[64];
    snprintf(r, sizeof(r), "%" PRIu64 "-%" PRIu64, off, off + 65535);
    size_t got = 0;
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, bench_curl_count);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &got);
    curl_easy_setopt(e, CURLOPT_RANGE, r);
    long code = 0;
    double t0 = bench_now_s();
    if (curl_easy_perform(e) != CURLE_OK ||
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK || code != 206 ||
        got != 65536) {
        fprintf(stderr, "%s: GET range %s answered %ld with %zu bytes\n", bench, r, code, got);
        return -1;
    }
    return (bench_now_s() - t0) * 1000;
}

#endif /* RINGCACHE_BENCH_CURL_H */
