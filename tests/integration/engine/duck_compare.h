/* SPDX-License-Identifier: Apache-2.0
 *
 * duck_compare.h: what the engine's DuckDB-oracle tests share: reading a
 * file whole, and comparing a TSV result with DuckDB's (exactly for text,
 * within 1e-9 relative for numbers that differ in their last printed digits;
 * as multisets when the query has no ORDER BY). Single-threaded; asserts
 * (cmocka) on I/O failures.
 */
#ifndef RINGCACHE_TESTS_DUCK_COMPARE_H
#define RINGCACHE_TESTS_DUCK_COMPARE_H

#include "harness.h"

#include <stdbool.h>
#include <stddef.h>

/* Runs gen.mjs into env's folder "data" (its path in dir): 0, -1 on a
 * failure (its log's tail printed), or skips the test (77) without node or
 * @duckdb/node-api. */
int dc_gen_data(h_env *env, char *dir, size_t cap);
/* The file's bytes, NUL-terminated (malloc'ed), or NULL when it cannot be read. */
char *dc_slurp(const char *path);
/* Whether the TSV texts got and want hold the same rows (both are cut up in
 * place); prints the first difference, naming the query `name`. */
bool dc_same_result(const char *name, char *got, char *want, bool sorted);

#endif
