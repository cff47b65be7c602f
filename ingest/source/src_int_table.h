/* SPDX-License-Identifier: Apache-2.0
 *
 * src_int_table.h: the registry's entries for tables (eng_source.c):
 * MergeTree tables of the warehouse (src_table.c) and the system tables
 * (src_system.c).
 *
 * Each open fills *out with a source the caller owns (eng_source_destroy
 * frees it; the table reference and the scan environment are borrowed for the
 * call); on failure it returns -errno, *out is NULL and err holds the
 * sentence. The sources follow eng_source.h's thread rules; the opens keep no
 * globals and run on the thread that runs the statement.
 */
#ifndef RINGCACHE_SRC_INT_TABLE_H
#define RINGCACHE_SRC_INT_TABLE_H

#include "eng_source.h"
#include "warehouse.h"

/* The warehouse a table's reader opens it with: env's, except that
 * select_sequential_consistency = 1 has the log listed (no reuse). */
static inline void src__wh_read(const eng_scan_env *env, tb_wh *w)
{
    *w = *env->wh;
    if (env->set && env->set->select_sequential_consistency)
        w->reuse_ms = 0;
}

int src__table_open(const eng_table_ref *t, const eng_scan_env *env, eng_source **out, char *err,
                    size_t errlen);
int src__system_open(const eng_table_ref *t, const eng_scan_env *env, eng_source **out, char *err,
                     size_t errlen);

#endif
