/* SPDX-License-Identifier: Apache-2.0
 *
 * cli_cache.h: the CLI commands that go through the cache tier (--cache).
 * Single-threaded, one command per process.
 */
#ifndef RINGCACHE_CLI_CACHE_H
#define RINGCACHE_CLI_CACHE_H

#include "cli.h"

typedef struct cli_cache_opts {
    const char *members;   /* --cache or RINGCACHE_CACHE */
    const char *token;     /* --token or RINGCACHE_TOKEN */
    int parallel;
} cli_cache_opts;

int cli_cache_head(const cli_cache_opts *o, const char *bucket, const char *key);
int cli_cache_get(const cli_cache_opts *o, const char *bucket, const char *key, uint64_t off,
                  uint64_t len, int fd, cli_progress *p);
int cli_cache_put(const cli_cache_opts *o, const char *bucket, const char *key, int fd,
                  uint64_t size, cli_progress *p);
int cli_cache_stats(const cli_cache_opts *o);

#endif
