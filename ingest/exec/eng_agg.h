/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_agg.h: the hash-aggregation table of one worker (eng_agg.c), internal
 * to the engine. Thread-safety: an agg_tab belongs to one thread; merging
 * reads the source table and writes the destination, both owned by the
 * caller at that time.
 */
#ifndef RINGCACHE_ENG_AGG_H
#define RINGCACHE_ENG_AGG_H

#include "eng_plan.h"
#include "eng_wire.h"

typedef struct agg_tab agg_tab;

/* 0 or -ENOMEM. The table borrows the plan. */
int agg_tab_create(agg_tab **out, eng_mem *m, const eng_plan *p);
void agg_tab_destroy(agg_tab **t);
uint32_t agg_tab_groups(const agg_tab *t);
/* Sizes t's slots for `groups` groups, and its per-group arrays' first
 * growth (a merge that knows how many are coming, or a query whose last run
 * said how many, grows them once instead of doubling its way there; the
 * arrays are charged as groups come). 0 or -ENOMEM. */
int agg_tab_reserve(agg_tab *t, uint32_t groups);
/* Folds n rows (selected by sel) of the scan vectors into the table.
 * 0 or -errno (ec->err filled). */
int agg_tab_update(agg_tab *t, ex_ectx *ec, const ex_vec *in, const uint32_t *sel, uint32_t n);
/* Adds src's groups into dst (src's string states move). 0 or -ENOMEM. */
int agg_tab_merge(agg_tab *dst, agg_tab *src, char *err, size_t errlen);
/* The groups of src whose key falls in partition `part` of nparts (by the
 * top bits of its hash), added into dst as agg_tab_merge does. Threads may merge
 * different partitions of the same sources at once, each into its own dst:
 * a source group belongs to one partition, and only its states are moved. */
int agg_tab_merge_part(agg_tab *dst, agg_tab *src, uint32_t part, uint32_t nparts, char *err,
                       size_t errlen);
/* The value sets (uniq, count(DISTINCT), -Distinct) of the one group of
 * tables without GROUP BY, merged by threads. agg_sets_begin looks at
 * tabs[0..n) and, where an aggregate's sets are large enough to be worth
 * it, makes an empty merged set sized for their sum; *out is NULL when
 * there is nothing to do (agg_tab_merge alone merges them). Then
 * agg_sets_part for each part in 0..nparts: threads may run different parts
 * at once (each writes its own ranges of the merged sets and only reads the
 * tables). Then agg_sets_end, on one thread after every part: the merged
 * sets go to tabs[0] and the other tables' sets are freed (agg_tab_merge
 * merges everything else afterwards as before). agg_sets_free gives up
 * without changing the tables. 0 or -ENOMEM with err filled. */
typedef struct agg_sets agg_sets;
int agg_sets_begin(agg_sets **out, agg_tab **tabs, int n, uint32_t nparts, char *err,
                   size_t errlen);
void agg_sets_part(agg_sets *sm, uint32_t part);
int agg_sets_end(agg_sets **sm, char *err, size_t errlen);
void agg_sets_free(agg_sets **sm);
/* Writes the result block: n_keys + n_aggs vectors of one row per group
 * (caller clears them). Returns the number of groups or -ENOMEM. */
int agg_tab_finish(agg_tab *t, ex_vec *out, char *err, size_t errlen);

/* Appends every group's key and states to b (the layout is drawn in
 * dist/dist_state.h): b->err (0, -ENOMEM or -E2BIG). */
int agg_tab_encode(const agg_tab *t, ew_buf *b);
/* Merges groups agg_tab_encode wrote for the same plan into t as it reads
 * them, as agg_tab_merge would merge the table that wrote them (no table in
 * between): every length and count is checked against the bytes left and
 * every key against the plan's key types before anything is allocated, and
 * a group sent twice is refused. 0, -EBADMSG or -ENOMEM with a sentence in
 * err; after an error t holds part of the state, and the caller gives the
 * query up (t may only be destroyed). */
int agg_tab_decode_merge(agg_tab *t, er_buf *r, char *err, size_t errlen);

#endif /* RINGCACHE_ENG_AGG_H */
