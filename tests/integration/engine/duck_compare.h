/* SPDX-License-Identifier: Apache-2.0
 *
 * duck_compare.h: what the engine's DuckDB-oracle tests share: reading a
 * file whole, and comparing a TSV result with DuckDB's (exactly for text,
 * within 1e-9 relative for numbers that differ in their last printed digits,
 * or every field exactly;
 * as multisets when the query has no ORDER BY). Single-threaded; asserts
 * (cmocka) on I/O failures.
 */
#ifndef RINGCACHE_TESTS_DUCK_COMPARE_H
#define RINGCACHE_TESTS_DUCK_COMPARE_H

#include <stdbool.h>

/* The file's bytes, NUL-terminated (malloc'ed), or NULL when it cannot be read. */
char *dc_slurp(const char *path);
/* Whether the TSV texts got and want hold the same rows (both are cut up in
 * place); prints the first difference, naming the query `name`. */
bool dc_same_result(const char *name, char *got, char *want, bool sorted);
/* The same, every field byte for byte (exact types: integers, Decimal). */
bool dc_same_text(const char *name, char *got, char *want, bool sorted);

#endif
