/* SPDX-License-Identifier: Apache-2.0
 *
 * S3-FIFO eviction (Yang, Zhang, Qiu, Yue, Vinayak: "FIFO queues are all you
 * need for cache eviction", SOSP 2023), per shard, over pinned pages.
 *
 *   miss --ghost hit--------------------------------> main (head)
 *   miss --otherwise--> small (head) --tail, freq>=1--> main (head)
 *                                    --tail, freq==0--> out, key -> ghost
 *   main --tail, freq>0--> freq-1, back to main's head  (CLOCK)
 *   main --tail, freq==0--> out
 *   hit: freq = min(freq + 1, 3); nothing moves
 *
 * Why it resists scans: a page read once (a scan) leaves the small FIFO with
 * freq 0 and never reaches main, so main - where the hot set lives - only
 * shrinks when a re-used page needs room. Pinned pages are rotated back to
 * their queue's head and skipped. One-shot and unused read-ahead pages leave
 * no ghost, so a repeated scan is not mistaken for re-use.
 *
 * The ghost is a set-associative table of key fingerprints stamped with a
 * drop counter; an entry older than ghost_cap drops is dead. This bounds its
 * memory at create and makes a lookup 8 compares, at the price of rare false
 * answers (a 64-bit fingerprint collision, or a live entry overwritten when
 * its bucket is full), which only change where a page enters.
 */
#include "pagecache_int.h"

#include <assert.h>

enum { PC__FREQ_MAX = 3, PC__PROMOTE_FREQ = 1 };

uint32_t pc__s3fifo_ghost_buckets(uint32_t ghost_cap)
{
    /* Twice the live entries, so buckets rarely overflow. */
    uint64_t entries = 2ull * ghost_cap;
    uint64_t nb = (entries + PC__GHOST_WAYS - 1) / PC__GHOST_WAYS;
    return nb ? (uint32_t)nb : 1;
}

static struct pc_ghost_entry *ghost_bucket(struct pc_shard *s, uint64_t h)
{
    uint64_t i = (((h >> 16) & 0xffffffffu) * (uint64_t)s->ghost_nbuckets) >> 32;
    return &s->ghost[i * PC__GHOST_WAYS];
}

static inline bool ghost_live(const struct pc_shard *s, const struct pc_ghost_entry *e)
{
    return e->fp != 0 && s->ghost_clock - e->seq < s->ghost_cap;
}

static void ghost_add(struct pc_shard *s, uint64_t h)
{
    uint64_t fp = h | 1;
    struct pc_ghost_entry *b = ghost_bucket(s, h);
    struct pc_ghost_entry *slot = NULL;
    s->ghost_clock++;
    /* The same key again, else a dead entry, else the oldest live one. */
    for (unsigned i = 0; i < PC__GHOST_WAYS && !slot; i++)
        if (b[i].fp == fp)
            slot = &b[i];
    for (unsigned i = 0; i < PC__GHOST_WAYS && !slot; i++)
        if (!ghost_live(s, &b[i]))
            slot = &b[i];
    if (!slot) {
        slot = &b[0];
        for (unsigned i = 1; i < PC__GHOST_WAYS; i++)
            if (b[i].seq < slot->seq)
                slot = &b[i];
    }
    slot->fp = fp;
    slot->seq = s->ghost_clock;
}

static bool ghost_take(struct pc_shard *s, uint64_t h)
{
    uint64_t fp = h | 1;
    struct pc_ghost_entry *b = ghost_bucket(s, h);
    for (unsigned i = 0; i < PC__GHOST_WAYS; i++) {
        if (b[i].fp == fp && ghost_live(s, &b[i])) {
            b[i].fp = 0;
            return true;
        }
    }
    return false;
}

static void s3fifo_insert(struct pc_shard *s, struct pc_page *p, unsigned flags)
{
    /* A read-ahead page counts as one-shot until a normal read uses it. */
    p->flags = (uint8_t)(((flags & (PC_FETCH_ONCE | PC_FETCH_READAHEAD)) ? PC__F_ONCE : 0) |
                         ((flags & PC_FETCH_READAHEAD) ? PC__F_RA : 0));
    p->freq = 0;
    if (!(flags & (PC_FETCH_ONCE | PC_FETCH_READAHEAD)) && ghost_take(s, p->hash)) {
        p->queue = PC__Q_MAIN;
        pc__q_push_head(&s->main, p);
    } else {
        p->queue = PC__Q_SMALL;
        pc__q_push_head(&s->small, p);
    }
}

static void s3fifo_hit(struct pc_shard *s, struct pc_page *p, unsigned flags)
{
    (void)s;
    if (p->flags & PC__F_RA) {
        /* The first demand read of a read-ahead page is its first access,
         * not a re-use. */
        p->flags &= (uint8_t)~PC__F_RA;
        if (!(flags & PC_FETCH_ONCE))
            p->flags &= (uint8_t)~PC__F_ONCE;
        return;
    }
    if (flags & PC_FETCH_ONCE)
        return;
    p->flags &= (uint8_t)~PC__F_ONCE;
    if (p->freq < PC__FREQ_MAX)
        p->freq++;
}

static struct pc_page *evict_small(struct pc_shard *s)
{
    uint32_t rotated = 0; /* pinned pages seen since the last progress */
    while (s->small.len > 0 && rotated < s->small.len) {
        struct pc_page *p = s->small.tail;
        pc__q_remove(&s->small, p);
        if (p->freq >= PC__PROMOTE_FREQ) {
            p->queue = PC__Q_MAIN;
            pc__q_push_head(&s->main, p);
            continue;
        }
        if (p->pins > 0) {
            pc__q_push_head(&s->small, p);
            rotated++;
            continue;
        }
        if (!(p->flags & (PC__F_ONCE | PC__F_RA)))
            ghost_add(s, p->hash);
        p->queue = PC__Q_NONE;
        return p;
    }
    return NULL;
}

static struct pc_page *evict_main(struct pc_shard *s)
{
    uint32_t rotated = 0; /* pinned pages seen since the last progress */
    while (s->main.len > 0 && rotated < s->main.len) {
        struct pc_page *p = s->main.tail;
        pc__q_remove(&s->main, p);
        if (p->pins > 0) {
            pc__q_push_head(&s->main, p);
            rotated++;
            continue;
        }
        if (p->freq > 0) {
            p->freq--;
            pc__q_push_head(&s->main, p);
            rotated = 0;
            continue;
        }
        p->queue = PC__Q_NONE;
        return p;
    }
    return NULL;
}

static struct pc_page *s3fifo_evict(struct pc_shard *s)
{
    struct pc_page *v;
    if (s->small.len >= s->small_target || s->main.len == 0) {
        v = evict_small(s);
        if (!v)
            v = evict_main(s);
    } else {
        v = evict_main(s);
        if (!v)
            v = evict_small(s);
    }
    return v;
}

static void s3fifo_remove(struct pc_shard *s, struct pc_page *p)
{
    assert(p->queue == PC__Q_SMALL || p->queue == PC__Q_MAIN);
    pc__q_remove(p->queue == PC__Q_SMALL ? &s->small : &s->main, p);
    p->queue = PC__Q_NONE;
}

const struct pc_policy_ops pc__s3fifo_ops = {
    .insert = s3fifo_insert,
    .hit = s3fifo_hit,
    .evict = s3fifo_evict,
    .remove = s3fifo_remove,
};
