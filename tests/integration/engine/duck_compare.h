/* SPDX-License-Identifier: Apache-2.0
 *
 * duck_compare.h: what the engine's DuckDB-oracle tests share: running a
 * generator script that writes their data with DuckDB, reading a file whole,
 * and comparing a TSV result with DuckDB's (exactly for text,
 * within 1e-9 relative for numbers that differ in their last printed digits,
 * or every field exactly;
 * as multisets when the query has no ORDER BY). Single-threaded; asserts
 * (cmocka) on I/O failures.
 */
#ifndef RINGCACHE_TESTS_DUCK_COMPARE_H
#define RINGCACHE_TESTS_DUCK_COMPARE_H

#include "harness.h"

#include <stdbool.h>
#include <stddef.h>

/* Runs `node SCRIPT ARGS...` (SCRIPT relative to the source folder, e.g.
 * "tests/integration/engine/gen.mjs") as a process of env named `name`, and
 * waits up to timeout_ms. 0 when it exits 0; skips the test (h_skip, exit 77)
 * when node or @duckdb/node-api is missing; -1 otherwise, after printing the
 * end of its log. args end with NULL (at most 8). */
int dc_generate(h_env *env, const char *name, const char *script, const char *const *args,
                int timeout_ms);

/* Runs gen.mjs (the dataset of the DuckDB comparisons) into env's folder
 * "data", its path in dir: dc_generate's answers. */
int dc_gen_data(h_env *env, char *dir, size_t cap);

/* The file's bytes, NUL-terminated (malloc'ed), or NULL when it cannot be read. */
char *dc_slurp(const char *path);
/* Whether the TSV texts got and want hold the same rows (both are cut up in
 * place); prints the first difference, naming the query `name`. */
bool dc_same_result(const char *name, char *got, char *want, bool sorted);
/* The same, every field byte for byte (exact types: integers, Decimal). */
bool dc_same_text(const char *name, char *got, char *want, bool sorted);

#endif
