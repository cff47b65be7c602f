/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_ref.h: helpers of the Parquet integration tests: run the generator
 * (gen.mjs: DuckDB and hyparquet-writer files plus DuckDB's reference dumps)
 * in a test's temp folder, format a value of an engine column in the
 * reference's canonical text, and compare every value of a file read through
 * parquet.h with the dump.
 *
 * Thread-safety: none needed; tests call these from their main thread.
 */
#ifndef RINGCACHE_TESTS_PQ_REF_H
#define RINGCACHE_TESTS_PQ_REF_H

#include "harness.h"
#include "parquet.h"

#include <stddef.h>

/* Runs `node gen.mjs <dir>` in env. 0; exits 77 (skip, printing why) when node
 * or the npm packages are missing; -1 when the generator fails. */
int pqt_generate(h_env *env, const char *dir);

/* The canonical text of row `row` of column c (see gen.mjs) into buf.
 * Returns the length or -ENOSPC. */
int pqt_format(const cb_column *c, uint32_t row, char *buf, size_t cap);

/* Reads every column of f through a reader with `opts` (NULL: defaults) and
 * compares each value with the reference file ref_path. Returns the number of
 * values compared (>= 0), or -1 after printing the first difference (file,
 * column, row, expected, got) or the reader's error to stderr. */
long pqt_compare(pq_file *f, const char *ref_path, const pq_read_opts *opts);

/* Names listed in <dir>/manifest.txt: *names is malloc'd (free each and it). */
int pqt_manifest(const char *dir, char ***names);

#endif /* RINGCACHE_TESTS_PQ_REF_H */
