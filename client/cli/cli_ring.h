/* SPDX-License-Identifier: Apache-2.0
 *
 * `ringcache ring`: prints which cache nodes own given keys, for operators.
 * Single-threaded: the CLI runs one command per process.
 */
#ifndef RINGCACHE_CLI_RING_H
#define RINGCACHE_CLI_RING_H

/* argv[0] is "ring". Returns the exit code: 0 ok, 1 the members could not be
 * resolved or read, 2 the command line is wrong. Writes results to stdout and
 * errors to stderr. */
int cli_ring_main(int argc, char **argv);

#endif /* RINGCACHE_CLI_RING_H */
