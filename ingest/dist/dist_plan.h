/* SPDX-License-Identifier: Apache-2.0
 *
 * dist_plan.h: the work units of a distributed query and who runs them.
 *
 * Units (dist_units_plan): the initiator expands the glob once (its own
 * source's plan, pruning included); each file is a unit, and a large Parquet
 * file is cut into ranges of consecutive row groups of about split_bytes
 * each, so a few big files do not leave servers idle.
 *
 * Assignment (dist_sched): each unit is pre-assigned to the server with the
 * highest hash of (server, path) (of (server, path, first row group) for a
 * range after a file's first, so a big file's ranges spread) (rendezvous
 * hashing: the same server reads
 * the same files every time, so its page cache and the cache nodes' stay
 * warm, and a server that leaves moves only its own files). A server takes
 * its own queue first, in order; once it is empty and has stayed empty for
 * the grace period, it steals from the tail of the longest queue. A unit
 * handed out is in flight until its result comes back (counted once: the
 * first result of a unit wins, any later one is dropped) or its server is
 * lost (dies, or stalls past the deadline): its queued and in-flight units
 * then go to the other servers by the same hashing.
 *
 * Thread-safety: dist_units_plan is reentrant. A dist_sched is thread-safe
 * (a mutex): the initiator's connections to its workers call it at once.
 */
#ifndef RINGCACHE_DIST_PLAN_H
#define RINGCACHE_DIST_PLAN_H

#include "eng_partial.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct dist_unit {
    char *path;           /* as the glob lists it */
    int rg_begin, rg_end; /* Parquet row groups [begin, end); -1, -1: the whole file */
    uint64_t bytes;       /* about what it reads */
} dist_unit;

typedef struct dist_units {
    dist_unit *u;
    int n;
} dist_units;

/* The units of ps's planned source: its units grouped by file in plan
 * order, a file's row groups cut into ranges of about split_bytes (0: one
 * unit per file). 0, -ENOTSUP (a source that cannot be split: a table,
 * system.*) or -ENOMEM. */
int dist_units_plan(const eng_pstate *ps, uint64_t split_bytes, dist_units *out);
void dist_units_free(dist_units *us);
/* The eng_unit a worker's query reads for unit u (borrows us). */
void dist_unit_to_eng(const dist_unit *u, eng_unit *out);

/* The server rendezvous hashing gives a whole file's path among the live
 * ones of n (live NULL: all). */
int dist_rendezvous(const char *const *servers, const bool *live, int n, const char *path);

typedef struct dist_sched dist_sched;

/* What dist_sched_next answers besides a unit. */
#define DIST_SCHED_WAIT (-EAGAIN)    /* nothing now: ask again soon */
#define DIST_SCHED_DONE (-ENOENT)    /* every unit has its result */
#define DIST_SCHED_LOST (-ESHUTDOWN) /* this server was given up on */

/* n_units units of us (borrowed) over n servers (names borrowed: "host:port"),
 * stealing after grace_ms of an empty queue. 0 or -ENOMEM. */
int dist_sched_create(dist_sched **out, const dist_units *us, const char *const *servers, int n,
                      uint64_t grace_ms);
void dist_sched_destroy(dist_sched **s);
/* The next unit for server (>= 0, now in flight on it), or DIST_SCHED_WAIT,
 * DIST_SCHED_DONE or DIST_SCHED_LOST. now_ms: a monotonic clock. */
int dist_sched_next(dist_sched *s, int server, uint64_t now_ms);
/* The next unit of server's own queue (now in flight on it), else
 * DIST_SCHED_WAIT: never a stolen one (the rest of a batch). */
int dist_sched_next_own(dist_sched *s, int server, uint64_t now_ms);
/* A result for unit from server: true when it counts (the unit's first),
 * false when the unit already has one (drop it). */
bool dist_sched_complete(dist_sched *s, int unit, int server);
/* One result for the n units (a batch) from server, all or none: true when
 * every one is in flight on it and it is live (each then done), false when
 * any is not (the result is dropped whole). */
bool dist_sched_complete_n(dist_sched *s, const int *units, int n, int server);
/* Gives up on server (it died or was refused): its queued and in-flight
 * units go to the live servers; its later results are dropped. Returns the
 * number of units moved. */
int dist_sched_lose(dist_sched *s, int server);
/* Gives up on every server with a unit in flight since before
 * now_ms - deadline_ms (a stall). Returns how many were lost. */
int dist_sched_expire(dist_sched *s, uint64_t now_ms, uint64_t deadline_ms);
int dist_sched_live(const dist_sched *s);
/* Whether server is still given units. */
bool dist_sched_server_live(const dist_sched *s, int server);
bool dist_sched_done(const dist_sched *s);
/* Units run by server so far (its results that counted). */
int dist_sched_count(const dist_sched *s, int server);
/* The server unit was pre-assigned to (tests, query_log). */
int dist_sched_home(const dist_sched *s, int unit);

#endif /* RINGCACHE_DIST_PLAN_H */
