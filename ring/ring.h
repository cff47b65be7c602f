/* SPDX-License-Identifier: Apache-2.0
 *
 * ring: the consistent-hash ring that places blocks on cache nodes. A pure
 * function from (member list, key) to an ordered list of distinct owners: the
 * first owner fills and serves the block, the next ones are where a client goes
 * when the first is down. No I/O, no logging, no globals.
 *
 * Thread-safety: a `struct ring` is immutable after ring_create(); any number
 * of threads may call ring_lookup*() and the ring_member*() / ring_share()
 * accessors on it at once. ring_ref() / ring_unref() are atomic and may be
 * called from any thread. A `struct ring_holder` is the one mutable piece: any
 * number of threads may call ring_holder_acquire() while another calls
 * ring_holder_swap(); readers never lock (they touch two atomic counters and the
 * ring's reference count), writers serialise among themselves on a mutex and
 * wait, without sleeping on a lock, for readers already inside acquire.
 *
 * ALGORITHM: a rendezvous (highest-random-weight) table.
 *
 *   key --XXH3-64--> h --top `table_bits` bits--> slot --table[slot]--> owner 0
 *
 *   table[s] = the member m with the highest score(m, s), where
 *     score(m, s) = XXH3-64(s as 8 little-endian bytes, seed = XXH3-64(m.id))
 *   when all weights are equal (integer comparison, exact on every platform), or
 *     score(m, s) = ln(u) / m.weight,  u = ((XXH3 >> 11) + 0.5) / 2^53  in (0,1)
 *   when weights differ (weighted rendezvous: P(m wins) = w_m / sum w).
 *   Ties go to the member whose id sorts first. Owners 1..n-1 of a key are the
 *   next members in the same per-slot score order, computed on demand (O(N)).
 *
 * Why this and not the alternatives (bench/ring/ring_bench measures each
 * point; its figures are in bench/README.md):
 *
 *   - Movement is minimal by construction: rendezvous ranks each slot
 *     independently, so a join moves exactly the slots the new member wins and a
 *     leave moves exactly the leaver's slots, each to the next member of that
 *     slot's order (the leaver's keys go to their former second owner). Ideal is
 *     the joiner's or leaver's fair share: 1/(N+1) on a join, 1/N on a leave.
 *   - Balance is binomial in the table size and computed exactly: a member's
 *     share is slots_owned / 2^table_bits. The relative spread of a share is
 *     about sqrt(N / 2^table_bits): for N = 1000 raise table_bits to 23 to stay
 *     under 1.05 (build cost and memory grow with 2^table_bits).
 *   - Lookup is one XXH3-64 of the key plus one load from the slot table: one
 *     byte per slot up to 256 members (1 MiB at the default; 2 bytes per slot
 *     above). Each further owner costs one hash per member.
 *   - Virtual nodes need thousands of points per member for 1.05 at N=100 and
 *     pay a cache-missing binary search per lookup. Plain rendezvous without
 *     a table hashes once per member per lookup (100 hashes at N=100). Not measured here: Maglev fills a table with near-perfect
 *     balance but is not minimal-disruption (a join also reshuffles slots
 *     between members that stay), and Jump hash cannot remove an arbitrary
 *     member.
 *   Cost: building evaluates N * 2^table_bits scores (a fraction of a second
 *   at N=100, several times that if weights differ); rings are built only on
 *   a membership change, off the lookup path, never while a reader waits (see
 *   ring_holder).
 *
 * Determinism: members are sorted by id inside the ring, so any input order
 * gives the same ring. Placement depends on member ids, weights and table_bits
 * only, never on addresses (a pod that restarts with a new IP keeps its blocks)
 * and never on load. Every process that must agree on placement must use the
 * same table_bits. Equal-weight rings compare integers and are bit-exact
 * everywhere; weighted rings use libm's log(), correctly rounded in practice,
 * so two libms could disagree only when two scores fall within one ulp
 * (probability about 2^-50 per slot).
 *
 * The key is hashed with XXH3-64 (seed 0) over exactly the bytes given; a
 * caller that already holds a 64-bit XXH3 of its key calls ring_lookup_hash().
 */
#ifndef RINGCACHE_RING_H
#define RINGCACHE_RING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RING_TABLE_BITS_DEFAULT 20u
#define RING_TABLE_BITS_MIN     8u
#define RING_TABLE_BITS_MAX     24u
/* Members per ring: table entries are uint16_t member indices. */
#define RING_MEMBERS_MAX 65535u
/* Weights are 1..RING_WEIGHT_MAX; 0 in the input means the default, 1. */
#define RING_WEIGHT_MAX 1000000u
/* ring_lookup() returns at most this many owners per call. */
#define RING_OWNERS_MAX 16u

/* One member as given to ring_create() and as returned by lookups. `id` is the
 * stable identity that placement hashes (e.g. a StatefulSet pod name); `addr`
 * is where to reach it (e.g. "10.0.0.1:7070") and does not affect placement.
 * `host` (may be NULL) is the DNS name `addr` was resolved from, e.g. the SRV
 * target "ringcache-0.ringcache-headless.ns.svc.cluster.local": the name a TLS
 * client verifies when it dials `addr`. It does not affect placement either;
 * NULL or "" in the input reads back as NULL. */
struct ring_member {
    const char *id;
    const char *addr;
    uint32_t weight;
    const char *host;
};

struct ring_options {
    /* log2 of the slot table size, RING_TABLE_BITS_MIN..MAX; 0 = default. */
    unsigned table_bits;
};

struct ring;

/* Builds a ring from `n` members (any order) and returns it in *out with one
 * reference. Copies ids, addresses and host names; the caller keeps ownership
 * of `members`.
 * `opts` may be NULL (defaults). On failure returns -EINVAL (empty list, empty
 * or duplicate id, missing address, weight over RING_WEIGHT_MAX, bad
 * table_bits), -E2BIG (more than RING_MEMBERS_MAX members) or -ENOMEM, and, if
 * `why` is not NULL, writes a sentence naming the bad member and the fix into
 * why[0..why_len). Runs synchronously; the cost is N * 2^table_bits hashes. */
int ring_create(struct ring **out, const struct ring_member *members, size_t n,
                const struct ring_options *opts, char *why, size_t why_len);

/* Drops the creator's reference; same as ring_unref(). Accepts NULL and *r ==
 * NULL; sets *r to NULL. */
void ring_destroy(struct ring **r);

/* Takes one more reference; returns `r`. */
struct ring *ring_ref(struct ring *r);

/* Drops one reference and frees the ring with the last one. Accepts NULL and
 * *r == NULL; sets *r to NULL. */
void ring_unref(struct ring **r);

/* Writes up to `n` distinct owners of the key, in preference order, into
 * owners[0..]; returns how many (min(n, members, RING_OWNERS_MAX)), or -EINVAL
 * if `n` is 0. The pointers stay valid while the caller holds a reference to
 * the ring. n == 1 is one hash and one table load; each further owner costs
 * one hash per member. */
int ring_lookup(const struct ring *r, const void *key, size_t key_len,
                const struct ring_member **owners, size_t n);

/* As ring_lookup(), for a key already hashed with XXH3-64 (seed 0). */
int ring_lookup_hash(const struct ring *r, uint64_t hash, const struct ring_member **owners,
                     size_t n);

/* The XXH3-64 (seed 0) that ring_lookup() computes for a key. */
uint64_t ring_hash_key(const void *key, size_t key_len);

/* Number of members. */
size_t ring_member_count(const struct ring *r);

/* Member `i` (0 <= i < ring_member_count()), in id order; NULL if out of range. */
const struct ring_member *ring_member_at(const struct ring *r, size_t i);

/* Index of member `m` (a pointer from this ring) in id order. */
size_t ring_member_index(const struct ring *r, const struct ring_member *m);

/* Index of the member with id `id`, or -ENOENT. */
int ring_find(const struct ring *r, const char *id);

/* Exact share of the hash space that member `i` owns as first owner:
 * slots_owned(i) / ring_slots(r). Returns slots owned, or 0 if out of range. */
uint32_t ring_member_slots(const struct ring *r, size_t i);

/* Size of the slot table (2^table_bits). */
uint32_t ring_slots(const struct ring *r);

/* Bytes this ring holds in memory (table, members, strings). */
size_t ring_memory(const struct ring *r);

/* A holder of the current ring: membership changes swap a new ring in,
 * readers take a counted reference without locking. */
struct ring_holder;

/* Creates a holder. `initial` may be NULL (no ring yet); if not NULL the holder
 * takes over the caller's reference (it "retains" it). Returns 0 or -ENOMEM
 * (then `initial`'s reference is still the caller's). */
int ring_holder_create(struct ring_holder **out, struct ring *initial);

/* Drops the holder's reference to its ring and frees the holder. No thread may
 * be inside ring_holder_acquire/swap. Accepts NULL; sets *h to NULL. */
void ring_holder_destroy(struct ring_holder **h);

/* Returns a new reference to the current ring (release it with ring_unref()),
 * or NULL if the holder has none. Lock-free; never blocks; any thread. */
struct ring *ring_holder_acquire(struct ring_holder *h);

/* Installs `next` (taking over the caller's reference; may be NULL) and drops
 * the holder's reference to the previous ring once every reader that might have
 * read the old pointer has taken its own reference. Readers that already hold
 * the old ring keep using it until they unref it. Any thread; concurrent swaps
 * are serialised. */
void ring_holder_swap(struct ring_holder *h, struct ring *next);

#ifdef __cplusplus
}
#endif

#endif /* RINGCACHE_RING_H */
