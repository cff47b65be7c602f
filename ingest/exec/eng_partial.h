/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_partial.h: a SELECT run up to its mergeable state, for distributed
 * execution (ingest/dist/). A worker opens the statement with the work unit
 * it was given (eng_ctx.unit), runs it and encodes the state: the merged
 * partial aggregates of its threads (every aggregate, exactly as the threads
 * of one server merge them), or its filtered rows cut to the first
 * OFFSET + LIMIT in ORDER BY (its top N), or all its filtered rows. The
 * initiator opens the same statement without running it, merges the states
 * that come back and finishes it: HAVING, ORDER BY, LIMIT / OFFSET, the
 * statement's sink.
 *
 *   worker:    eng_pstate_open(ctx + unit) -> eng_pstate_run -> eng_pstate_encode
 *   initiator: eng_pstate_open(ctx) -> eng_pstate_merge ... -> eng_pstate_finish
 *
 * The body's layout is drawn in dist/dist_state.h, which wraps it in a
 * versioned envelope.
 *
 * Thread-safety: a pstate belongs to one thread at a time; eng_pstate_run
 * starts the statement's max_threads workers and joins them before it
 * returns. Several pstates may live at once (eng_run keeps no globals).
 */
#ifndef RINGCACHE_ENG_PARTIAL_H
#define RINGCACHE_ENG_PARTIAL_H

#include "eng.h"
#include "eng_wire.h"

#include <stdint.h>

typedef struct eng_pstate eng_pstate;

/* Parses sql (one SELECT, or one INSERT ... SELECT: then only its SELECT's
 * source is planned, for the units of a distributed INSERT whose servers
 * each run the INSERT over their units), applies its SETTINGS, opens its FROM (through
 * ctx, over ctx->unit when set), binds it and plans the source's units.
 * ctx is borrowed for the pstate's life. 0 or -errno with a sentence in err
 * (-ENOTSUP for statements that are not one SELECT over a source). */
int eng_pstate_open(const eng_ctx *ctx, const char *sql, size_t len, eng_pstate **out, char *err,
                    size_t errlen);
void eng_pstate_destroy(eng_pstate **ps);
/* A hash of the result's shape (keys, aggregates and their types, result
 * columns): a state of another statement or version is refused by it. */
uint64_t eng_pstate_fingerprint(const eng_pstate *ps);
/* The source's units after planning, and where each comes from (-ENOTSUP:
 * a source that cannot be split by file, as tables and system.*). */
int eng_pstate_units(const eng_pstate *ps);
int eng_pstate_unit_info(const eng_pstate *ps, int u, eng_unit_info *out);
/* The cluster of its s3Cluster FROM (NULL: not an s3Cluster query), and its
 * settings (SETTINGS over the defaults). Borrowed from the pstate. */
const eng_cluster *eng_pstate_cluster(const eng_pstate *ps);
const eng_settings *eng_pstate_settings(const eng_pstate *ps);
/* Whether the statement is an INSERT ... SELECT (not run nor finished here). */
bool eng_pstate_is_insert(const eng_pstate *ps);
/* Runs the statement over its units into the state. 0 or -errno (err). */
int eng_pstate_run(eng_pstate *ps, char *err, size_t errlen);
/* The rows and bytes the readers produced (the summary's "processed"). */
void eng_pstate_stats(const eng_pstate *ps, uint64_t *rows, uint64_t *bytes);
/* Appends the state's body to b: b->err (0, -ENOMEM, -E2BIG). */
int eng_pstate_encode(const eng_pstate *ps, ew_buf *b);
/* Merges a body eng_pstate_encode wrote (for the same statement) into ps,
 * aggregates straight into its table as they are read; every length is
 * checked before anything is allocated. 0, -EBADMSG or -ENOMEM with a
 * sentence in err; after an error ps holds part of the body and may only
 * be destroyed (the query is given up). */
int eng_pstate_merge(eng_pstate *ps, er_buf *r, char *err, size_t errlen);
/* Finishes the statement over the merged state: HAVING, ORDER BY,
 * LIMIT / OFFSET, then its sink (ctx's, as eng_run's). res (may be NULL)
 * gets rows_out and the counters added with eng_pstate_add_stats. */
int eng_pstate_finish(eng_pstate *ps, eng_result *res, char *err, size_t errlen);
/* Counts rows and bytes other servers read into the finished statement's. */
void eng_pstate_add_stats(eng_pstate *ps, uint64_t rows, uint64_t bytes);

#endif /* RINGCACHE_ENG_PARTIAL_H */
