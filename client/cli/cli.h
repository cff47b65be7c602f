/* SPDX-License-Identifier: Apache-2.0
 *
 * cli.h: pieces shared by the `ringcache` subcommands: option parsing in the
 * config file's grammar (`--name value` or `--name=value`), sizes with units,
 * the S3 options (cli_cache.h has every connection option, S3's and the cache
 * tier's, in one place), error printing, and the progress bar.
 * Single-threaded: the CLI runs one command per process.
 */
#ifndef RINGCACHE_CLI_H
#define RINGCACHE_CLI_H

#include "s3.h"

#include <stdbool.h>
#include <stdint.h>

/* Exit codes: 0 ok, 1 the operation failed, 2 the command line is wrong. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Prints "ringcache: <message>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A size option --name (bytesize_parse: digits and an optional unit, every
 * unit a power of 1024; "1x", "1.5M", "-1" refused): 0, or -1 after printing
 * why. */
int cli_size_opt(const char *name, const char *v, uint64_t *out);

/* An option of argv[*i]: if argv[*i] is `--name` or `--name=value`, sets *value
 * (from the same word or the next one, advancing *i) and returns 1; returns 0 when
 * it is another word, -1 (after printing why) when the value is missing. */
int cli_opt(int argc, char **argv, int *i, const char *name, const char **value);

/* The S3 options of every S3 subcommand, on top of the AWS environment. */
typedef struct cli_s3_opts {
    s3_config cfg;
    const char *profile;
} cli_s3_opts;

/* Loads the AWS environment into o (after --profile if given). Returns 0 or
 * CLI_USAGE after printing why. */
int cli_s3_env(cli_s3_opts *o, const char *profile);

/* If argv[*i] is one of the S3 options, applies it and returns 1; 0 if not;
 * -1 on a bad value (printed). */
int cli_s3_opt(cli_s3_opts *o, int argc, char **argv, int *i);

/* A progress bar on stderr, drawn only when stderr is a terminal and the
 * transfer is larger than a few MiB. */
typedef struct cli_progress {
    bool on;
    const char *label;
    int64_t start_ms;
    int64_t last_ms;
} cli_progress;
void cli_progress_init(cli_progress *p, const char *label, uint64_t total);
void cli_progress_update(uint64_t done, uint64_t total, void *arg); /* s3_progress_fn */
void cli_progress_end(cli_progress *p);

/* Subcommands: argv[0] is the subcommand's name. */
int cli_cmd_ls(int argc, char **argv);
int cli_cmd_head(int argc, char **argv);
int cli_cmd_get(int argc, char **argv);
int cli_cmd_put(int argc, char **argv);
int cli_cmd_rm(int argc, char **argv);
int cli_cmd_stats(int argc, char **argv);

#endif /* RINGCACHE_CLI_H */
