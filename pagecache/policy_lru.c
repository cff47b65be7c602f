/* SPDX-License-Identifier: Apache-2.0
 *
 * LRU eviction, the baseline policy: one list per shard, a demand hit moves
 * the page to the head, eviction takes the unpinned page nearest the tail.
 *
 * Hints, in the classic use-once style: a page filled by a one-shot read goes
 * in at the tail and a one-shot hit does not move it, so a marked scan costs
 * the hot set nothing; a read-ahead page goes in at the head (it must live
 * until its reader comes) and, once read one-shot, drops to the tail. An
 * unmarked scan of more than the capacity flushes the whole list: that is
 * LRU's weakness, and why it is not the default.
 */
#include "pagecache_int.h"

#include <assert.h>

static void lru_insert(struct pc_shard *s, struct pc_page *p, unsigned flags)
{
    /* A read-ahead page counts as one-shot until a normal read uses it. */
    p->flags = (uint8_t)(((flags & (PC_FETCH_ONCE | PC_FETCH_READAHEAD)) ? PC__F_ONCE : 0) |
                         ((flags & PC_FETCH_READAHEAD) ? PC__F_RA : 0));
    p->freq = 0;
    p->queue = PC__Q_SMALL;
    if ((flags & PC_FETCH_ONCE) && !(flags & PC_FETCH_READAHEAD))
        pc__q_push_tail(&s->small, p);
    else
        pc__q_push_head(&s->small, p);
}

static void lru_hit(struct pc_shard *s, struct pc_page *p, unsigned flags)
{
    if (p->flags & PC__F_RA) {
        p->flags &= (uint8_t)~PC__F_RA;
        if (!(flags & PC_FETCH_ONCE))
            p->flags &= (uint8_t)~PC__F_ONCE;
    }
    if (flags & PC_FETCH_ONCE) {
        if (p->flags & PC__F_ONCE) {
            pc__q_remove(&s->small, p);
            pc__q_push_tail(&s->small, p);
        }
        return;
    }
    p->flags &= (uint8_t)~PC__F_ONCE;
    if (s->small.head != p) {
        pc__q_remove(&s->small, p);
        pc__q_push_head(&s->small, p);
    }
}

static struct pc_page *lru_evict(struct pc_shard *s)
{
    struct pc_page *p = s->small.tail;
    while (p && p->pins > 0)
        p = p->prev;
    if (!p)
        return NULL;
    pc__q_remove(&s->small, p);
    p->queue = PC__Q_NONE;
    return p;
}

static void lru_remove(struct pc_shard *s, struct pc_page *p)
{
    assert(p->queue == PC__Q_SMALL);
    pc__q_remove(&s->small, p);
    p->queue = PC__Q_NONE;
}

const struct pc_policy_ops pc__lru_ops = {
    .insert = lru_insert,
    .hit = lru_hit,
    .evict = lru_evict,
    .remove = lru_remove,
};
