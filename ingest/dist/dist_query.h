/* SPDX-License-Identifier: Apache-2.0
 *
 * dist_query.h: the initiator of a distributed query. dist_query_run opens
 * a SELECT over s3Cluster(...) (its cluster one of eng_ctx.clusters),
 * expands the glob once into units (dist_plan.h), and runs a few feeder
 * threads per server of the cluster (dist_opts.lanes, 2 by default): each
 * asks the scheduler for that server's next unit (with more of the
 * server's own queue for a SELECT: a batch of up to dist_opts.batch units
 * in one request and one state, counted all or none), hands it to the server
 * through the transport (blocking; so that many units are in flight per
 * server, and a server never waits idle for the round trip of its next
 * unit), and merges the state that comes back (the first result of a unit
 * only). The calling thread watches the deadline: a server
 * with a unit in flight past it is given up on (a stall), as is one whose
 * transport fails (it died, refused, answered garbage): its units go to the
 * others. The query fails only when no server remains, with a sentence
 * naming each and why. Servers that are down at the start (the transport's
 * ping) fail the query, or are left out under skip_unavailable_shards = 1.
 * At the end the merged state is finished (HAVING, ORDER BY, LIMIT) into the
 * statement's sink, its counters the sum of the servers'.
 *
 * An INSERT ... SELECT over s3Cluster with parallel_distributed_insert_select
 * 1 or 2 runs the same way, but each server runs the INSERT over its unit
 * into the shared table itself (its deduplication token is the unit's, so a
 * unit redone elsewhere after its server was lost commits once) and answers
 * what it read and wrote; the result is their sum. With 0 it is not
 * distributed (-ENOTSUP: the caller inserts).
 *
 * The transport is the caller's: the compute server's sends a unit over
 * HTTP to the member with the cluster secret and reads the state back; the
 * tests' runs it in-process.
 *
 * Thread-safety: dist_query_run may run in several threads at once; it
 * calls the transport from its feeder threads concurrently (up to
 * dist_opts.lanes calls per server at once).
 */
#ifndef RINGCACHE_DIST_QUERY_H
#define RINGCACHE_DIST_QUERY_H

#include "dist_plan.h"
#include "dist_state.h"

#include <stdatomic.h>

typedef struct dist_transport {
    /* Runs the n units unit_ids[0..n) (u[0..n)) of the statement sql on
     * server (member: its "host:port") as one query, and appends the one
     * state it answers (dist_state.h bytes, its unit unit_ids[0]) to out.
     * n is 1 for an INSERT. Blocking; returns early with -ECANCELED once
     * *stop is set. 0, or -errno with a sentence in err: the server is then
     * given up on. */
    int (*run_unit)(void *arg, int server, const char *member, const char *sql, size_t len,
                    const eng_unit *u, const uint32_t *unit_ids, int n, const _Atomic int *stop,
                    ew_buf *out, char *err, size_t errlen);
    /* Whether server answers at the start: 0 or -errno with a sentence; NULL:
     * every server is taken as up. */
    int (*ping)(void *arg, int server, const char *member, char *err, size_t errlen);
    void *arg;
} dist_transport;

typedef struct dist_opts {
    uint64_t split_bytes; /* Parquet row-group ranges of about this; 0: 8 MiB */
    uint64_t grace_ms;    /* an idle server steals after this; 0: 100 ms */
    uint64_t deadline_ms; /* a unit in flight longer loses its server; 0: 120 s */
    int lanes;            /* units in flight per server, 1 to DIST_MAX_LANES; 0: 2 */
    int batch;            /* a SELECT's units per request at most, 1 to DIST_MAX_BATCH;
                             0: units / (servers * lanes), rounded up */
} dist_opts;

#define DIST_MAX_SERVERS 256
#define DIST_MAX_LANES   8
#define DIST_MAX_BATCH   8

/* What each server did (for query_log, progress): indexed like the
 * cluster's members. */
typedef struct dist_report {
    int n_servers;
    int units;                       /* units of the query */
    int units_run[DIST_MAX_SERVERS]; /* results that counted */
    uint64_t rows_read[DIST_MAX_SERVERS], bytes_read[DIST_MAX_SERVERS];
    /* an INSERT's: what each server inserted */
    uint64_t rows_written[DIST_MAX_SERVERS], bytes_written[DIST_MAX_SERVERS];
    bool lost[DIST_MAX_SERVERS];    /* given up on during the query */
    bool skipped[DIST_MAX_SERVERS]; /* down at the start, left out */
    int dropped;                    /* late results of units done elsewhere */
} dist_report;

/* Runs sql (one SELECT over s3Cluster) across its cluster. -ENOTSUP (with a
 * sentence in err) when the statement is not that: the caller runs
 * it with eng_run. Else 0 or -errno with a sentence in err; res and rep (may
 * be NULL) get the counters. */
int dist_query_run(const eng_ctx *ctx, const char *sql, size_t len, const dist_transport *tr,
                   const dist_opts *o, eng_result *res, dist_report *rep, char *err, size_t errlen);

#endif /* RINGCACHE_DIST_QUERY_H */
