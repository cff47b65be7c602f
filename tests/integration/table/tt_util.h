/* SPDX-License-Identifier: Apache-2.0
 *
 * tt_util.h: helpers shared by the table integration tests: the test table's
 * schema (id uint64 ORDER BY, ver int64, s string), table options for a
 * harness S3 server, and writing a part of given ids to S3 through a
 * streaming upload. Single-threaded (one per process in the fork tests).
 */
#ifndef RINGCACHE_TESTS_TT_UTIL_H
#define RINGCACHE_TESTS_TT_UTIL_H

#include "harness.h"
#include "table.h"

#include <stdint.h>

/* The schema (static storage). replacing: ReplacingMergeTree(ver). */
tb_schema tt_schema(bool replacing);

/* Options for table `root` in the harness bucket at endpoint. */
void tt_opts(tb_table_opts *o, const char *endpoint, const char *root, bool writer);

/* Writes a part of rows with ids first, first + step, ... (n rows), ver =
 * ver_base + i, s = "row <id>", to S3 (multipart when large); fills the add
 * request (name/partition point into static-lifetime copies owned by the
 * caller's `names` buffer of TB_NAME_MAX). 0 or -errno (err says why). */
int tt_write_part(const tb_table *t, const char *partition, uint64_t first, uint64_t step,
                  uint32_t n, int64_t ver_base, char name[TB_NAME_MAX], tb_part_add *add, char *err,
                  size_t errlen);

/* Reads every active part of a snapshot: total rows, and the sum and xor of
 * the ids (to compare with what was inserted). 0 or -errno. */
int tt_read_all(const tb_table *t, const tb_snapshot *s, uint64_t *rows, uint64_t *id_sum,
                uint64_t *id_xor, char *err, size_t errlen);

#endif
