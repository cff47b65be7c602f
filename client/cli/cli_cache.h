/* SPDX-License-Identifier: Apache-2.0
 *
 * cli_cache.h: the CLI commands that go through the cache tier (--cache), on
 * libringcache (ringcache.h): get, cat, head, ls, put, stats and warm.
 * Single-threaded, one command per process.
 */
#ifndef RINGCACHE_CLI_CACHE_H
#define RINGCACHE_CLI_CACHE_H

#include "cli.h"

#include <stdio.h>

typedef struct cli_cache_opts {
    const char *members; /* --cache or RINGCACHE_CACHE */
    const char *token;   /* --token or RINGCACHE_TOKEN */
    int parallel;
    const s3_config *s3;    /* for reads and writes when every node is down, and ls */
    bool cache_only;        /* --cache-only: this process never calls S3 itself */
    bool no_fill;           /* --no-fill: the nodes do not fill from S3 */
    int hedge_ms;           /* --hedge-ms or RINGCACHE_HEDGE_MS; < 0: the default */
    bool tls;               /* --cache-tls or RINGCACHE_CACHE_TLS */
    const char *tls_ca;     /* --cache-tls-ca or RINGCACHE_CACHE_TLS_CA */
    const char *dns_server; /* --dns-server or RINGCACHE_DNS_SERVER */
} cli_cache_opts;

int cli_cache_head(const cli_cache_opts *o, const char *bucket, const char *key);
int cli_cache_get(const cli_cache_opts *o, const char *bucket, const char *key, uint64_t off,
                  uint64_t len, int fd, cli_progress *p);
int cli_cache_put(const cli_cache_opts *o, const char *bucket, const char *key, int fd,
                  uint64_t size, cli_progress *p);
/* Every node's counters, in member order: a table (hit ratio, bytes used /
 * capacity, blocks, fills and S3 GETs, errors, and a total), or with raw
 * the Prometheus text of each. */
int cli_cache_stats(const cli_cache_opts *o, bool raw);
/* Lists a prefix or glob (from S3: the cache tier has no listing); fn per object. */
int cli_cache_ls(const cli_cache_opts *o, const char *bucket, const char *pattern, s3_object_fn fn,
                 void *arg);
/* Loads every object the glob matches into the cache tier; progress on stderr. */
int cli_cache_warm(const cli_cache_opts *o, const char *bucket, const char *pattern, bool wait);

/* Subcommands added with the library (argv[0] is the subcommand's name). */
int cli_cmd_cat(int argc, char **argv);
int cli_cmd_warm(int argc, char **argv);

/* ---- the connection options of every command (cli_conn.c) ------------------ */

/* S3's options and the cache tier's, as every command (query included)
 * takes them, from one table: the environment first (AWS_* and the AWS files
 * through the S3 client's chain, after --profile; RINGCACHE_*), the command
 * line on top. c->cache.s3 points at c->s3.cfg. */
typedef struct cli_conn {
    cli_s3_opts s3;
    cli_cache_opts cache;
} cli_conn;

/* Loads the environment (and --profile, wherever it is in argv). 0, or
 * CLI_USAGE after printing why. */
int cli_conn_init(cli_conn *c, int argc, char **argv);
/* If argv[*i] is a connection option, applies it (taking its value) and
 * returns 1; 0 if not; -1 on a bad value (printed). */
int cli_conn_opt(cli_conn *c, int argc, char **argv, int *i);
/* Every connection option with its variable, for --help. */
void cli_conn_help(FILE *f);

/* The client configuration the cache options make (members, token, TLS,
 * hedging, --cache-only, --no-fill, S3 for fallbacks, node warnings on
 * stderr); the caller sets the sizes. Strings are borrowed from o. */
struct rc_config;
void cli_cache_config(const cli_cache_opts *o, struct rc_config *cfg);
/* rc_config.node_warn for a command line: one "ringcache: warning:" line. */
void cli_node_warn(const char *sentence, void *arg);

/* Whether requests can be sent: credentials were found, or unsigned requests
 * were asked for; else cli_no_credentials says what to do. */
bool cli_s3_signable(const s3_config *cfg);
extern const char cli_no_credentials[];

#endif
