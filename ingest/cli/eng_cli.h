/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_cli.h: `ringcache query` (eng_cli.c), the engine's command of the
 * `ringcache` program. Single-threaded, as the CLI is: the engine starts its
 * own workers inside.
 */
#ifndef RINGCACHE_ENG_CLI_H
#define RINGCACHE_ENG_CLI_H

/* The `ringcache query` command (argv[0] is "query"): exit code 0, 1 or 2. */
int eng_cli_query(int argc, char **argv);

#endif /* RINGCACHE_ENG_CLI_H */
