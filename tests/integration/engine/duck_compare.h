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

#include "eng.h"
#include "harness.h"

#include <stdarg.h>
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
/* The start of such a test's setup: *env for test_name, then dc_gen_data. */
int dc_setup(h_env **env, const char *test_name, char *dir, size_t cap);

/* The file's bytes, NUL-terminated (malloc'ed), or NULL when it cannot be read. */
char *dc_slurp(const char *path);
/* Whether the TSV texts got and want hold the same rows (both are cut up in
 * place); prints the first difference, naming the query `name`. */
bool dc_same_result(const char *name, char *got, char *want, bool sorted);
/* The same, every field byte for byte (exact types: integers, Decimal). */
bool dc_same_text(const char *name, char *got, char *want, bool sorted);

/* Runs sql through eng_run with base's sources, format and settings (NULL:
 * TSV and nothing else) at `threads`: its rc, the output in *out (malloc'ed,
 * the caller frees), the error in err; res may be NULL. */
int dc_run(const eng_ctx *base, const char *sql, int threads, char **out, eng_result *res,
           char *err, size_t errlen);

/* sql must fail (dc_run with base, 2 threads) with a message that holds every
 * needle of the NULL-terminated list; prints what it got otherwise. */
void dc_expect_error(const eng_ctx *base, const char *sql, ...);
void dc_expect_errorv(const eng_ctx *base, const char *sql, va_list needles);

/* dir's cases.tsv whole (malloc'ed; asserts it is there). */
char *dc_cases(const char *dir);

/* A line of a generator's cases.tsv, "name<TAB>flags<TAB>sql", cut in place
 * (asserts the two tabs). */
typedef struct dc_case {
    char *name, *flags, *sql;
} dc_case;
void dc_case_parse(char *line, dc_case *c);

/* Runs sql (dc_run with base at threads) and compares its rows with dir's
 * <name>.expected (dc_same_text when exact, else dc_same_result); on a
 * failure or a mismatch prints the error or the query with `what`
 * ("query", "EXPLAIN SYNTAX's text", ...). true when they match. */
bool dc_run_matches(const eng_ctx *base, const char *dir, const char *name, const char *what,
                    const char *sql, int threads, bool sorted, bool exact);

#endif
