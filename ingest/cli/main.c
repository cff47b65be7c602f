/* SPDX-License-Identifier: Apache-2.0
 *
 * main.c: the `ringcache` command-line tool. Only dispatch lives here: each
 * subcommand parses its own options (client/cli/cli_common.c has the shared
 * ones) and returns the process's exit code (0 ok, 1 failed, 2 bad command
 * line). It sits on the engine's side because it composes both: the S3 and
 * cache commands of client/cli and the engine's `query`.
 */
#include "cli.h"
#include "cli_cache.h"
#include "cli_ring.h"
#include "eng.h"
#include "eng_cli.h"
#include "srv.h"

#include <stdio.h>
#include <string.h>

typedef int (*cli_cmd_fn)(int argc, char **argv);

static const struct {
    const char *name;
    cli_cmd_fn fn;
    const char *summary;
} cli_cmds[] = {
    {"ls", cli_cmd_ls, "list objects: ringcache ls s3://bucket/glob"},
    {"head", cli_cmd_head, "size and version of an object: ringcache head s3://bucket/key"},
    {"get", cli_cmd_get, "download: ringcache get s3://bucket/key [-o FILE] [--range A-B]"},
    {"cat", cli_cmd_cat, "to standard output: ringcache cat s3://bucket/key [--range A-B]"},
    {"put", cli_cmd_put, "upload: ringcache put FILE s3://bucket/key"},
    {"rm", cli_cmd_rm, "delete: ringcache rm s3://bucket/key"},
    {"stats", cli_cmd_stats,
     "a table of every cache node: ringcache stats --cache MEMBERS [--raw]"},
    {"warm", cli_cmd_warm, "load into the cache tier: ringcache warm s3://bucket/glob --cache M"},
    {"query", eng_cli_query,
     "SQL over files: ringcache query \"SELECT ... FROM s3('s3://b/*.parquet')\""},
    {"server", srv_main, "ClickHouse's HTTP interface on :8123: ringcache server --cache MEMBERS"},
    {"ring", cli_ring_main, "owners of keys on a ring: ringcache ring --members LIST KEY..."},
};

static void cli_usage(FILE *f)
{
    fputs("usage: ringcache COMMAND [options] [args]\n\n"
          "ringcache is a distributed read-through cache for S3 objects. These commands\n"
          "talk to S3 directly, or through cache nodes (ringcached) with --cache.\n\n"
          "Commands:\n",
          f);
    for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
        fprintf(f, "  %-6s %s\n", cli_cmds[i].name, cli_cmds[i].summary);
    fputs("\n`ringcache COMMAND --help` describes each command and its options.\n", f);
}

int main(int argc, char **argv)
{
    eng_tune_malloc();
    if (argc < 2) {
        cli_usage(stderr);
        return CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        cli_usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ringcache 0.1.0\n");
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
        if (strcmp(argv[1], cli_cmds[i].name) == 0)
            return cli_cmds[i].fn(argc - 1, argv + 1);
    cli_error("unknown command '%s' (see ringcache --help)", argv[1]);
    return CLI_USAGE;
}
