/* SPDX-License-Identifier: Apache-2.0
 *
 * dist_state.h: the wire format of a distributed query's partial states,
 * what a worker sends back for each work unit it ran and the initiator
 * merges (exec/eng_partial.h runs and merges them). Versioned and bounded
 * like the cache protocol (client/PROTOCOL.md): a fixed header says what the
 * body is and how long; every count and length inside is checked against
 * the bytes left before anything is allocated; a state of another statement
 * (its fingerprint) or of another version is refused with a sentence.
 *
 * Envelope (little-endian):
 *
 *   0        4        6        8                16       20               28               36       40
 *   +--------+--------+--------+----------------+--------+----------------+----------------+--------+------
 *   | "RCPS" | ver 1  | flags 0| fingerprint u64| unit   | rows read u64  | bytes read u64 | body   | body
 *   |        | u16    | u16    | (the statement)| u32    | (the unit's)   |                | len u32| ...
 *   +--------+--------+--------+----------------+--------+----------------+----------------+--------+------
 *
 * Body: [u8 kind] then
 *
 *   kind 1, aggregate:  [u32 groups] per group:
 *                         [u32 key len][key bytes]        (eng_agg.c's key serialization)
 *                         per aggregate: [u8 seen] then
 *                           count      [u64 count]
 *                           sum        [f64 | i64]        (by the result type)
 *                           avg        [f64 float sum][i64 integer sum][u64 count]
 *                           uniq(Exact) [u8 has zero][u32 n][n x u64 value hashes]
 *                           min/max/any/anyLast, when seen: [u32 len][bytes] | [f64] | [i64]
 *                           quantile(Exact) [u32 n][n x u64 values (i64 or f64 bits)]
 *                           var/stddev [u64 count][f64 mean][f64 m2]
 *                           corr       [u64 count][f64 mean x][f64 m2 x][f64 mean y]
 *                                      [f64 m2 y][f64 co-moment]
 *                           argMin/argMax, when seen: [key: u32 len][bytes] | [u64]
 *                                      then the value as min/max's
 *                           -Distinct  (any aggregate) [u8 has zero][u32 n][n x u64 value bits]
 *                           -If        the aggregate's own state
 *   kind 2, rows:       [u32 columns] per column [6 bytes: its type]
 *                       [u32 rows] per column: [rows x u8 null] then per row
 *                         [u32 len][bytes] | [f64] | [i64]   (nothing for NULL-typed)
 *   kind 3, an INSERT's unit done (the worker inserted it into the table
 *                       itself; fingerprint DIST_STATE_INSERT_FINGERPRINT):
 *                       [u64 rows written][u64 bytes written]
 *
 * Partial aggregates are exact: sums and counts add, avg carries its sums
 * and count, uniq and uniqExact carry the set of value hashes (as the
 * threads of one server merge them), min/max/any their value, quantiles
 * every value, the moments Welford's (merged by Chan's formulas), argMin /
 * argMax their key and value, -Distinct the set of distinct values.
 *
 * Thread-safety: the functions are reentrant; a pstate belongs to the
 * calling thread.
 */
#ifndef RINGCACHE_DIST_STATE_H
#define RINGCACHE_DIST_STATE_H

#include "eng_partial.h"

#include <stddef.h>
#include <stdint.h>

#define DIST_STATE_MAGIC   0x53504352u /* "RCPS" */
#define DIST_STATE_VERSION 1
#define DIST_STATE_HEADER  40
/* The largest body a state may have (a worker's top N or its groups). */
#define DIST_STATE_MAX_BODY (1024u * 1024u * 1024u)

typedef struct dist_state_hdr {
    uint16_t version;
    uint64_t fingerprint;
    uint32_t unit;
    uint64_t rows_read, bytes_read;
    uint32_t body_len;
} dist_state_hdr;

/* Writes unit's state (ps after eng_pstate_run) to b, header and body;
 * b->max bounds it. 0, -ENOMEM or -E2BIG. */
int dist_state_encode(const eng_pstate *ps, uint32_t unit, ew_buf *b);
/* Reads and checks the header of n bytes at p: magic, version, flags, and a
 * body length that is exactly the rest. 0 or -EBADMSG with a sentence. */
int dist_state_header(const void *p, size_t n, dist_state_hdr *out, char *err, size_t errlen);
/* Checks the header against ps's statement and merges the body into ps,
 * counting the unit's rows and bytes. 0, -EBADMSG (another statement,
 * version, or malformed) or -ENOMEM, with a sentence in err; after an
 * error in the body ps may only be destroyed (eng_pstate_merge). */
int dist_state_merge(eng_pstate *ps, const void *p, size_t n, char *err, size_t errlen);

/* A distributed INSERT's unit, done by the worker that inserted it. */
#define DIST_STATE_KIND_INSERT        3
#define DIST_STATE_INSERT_FINGERPRINT 0x545245534e49ull /* "INSERT" */

typedef struct dist_insert_done {
    uint64_t rows_read, bytes_read;       /* what it read */
    uint64_t rows_written, bytes_written; /* what it inserted */
} dist_insert_done;

/* Writes the answer for an INSERT's unit to b. 0 or b->err. */
int dist_state_encode_insert(uint32_t unit, const dist_insert_done *d, ew_buf *b);
/* Reads one (header checked as dist_state_header). 0 or -EBADMSG with a
 * sentence. */
int dist_state_read_insert(const void *p, size_t n, dist_insert_done *out, char *err,
                           size_t errlen);

#endif /* RINGCACHE_DIST_STATE_H */
