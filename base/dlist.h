/* SPDX-License-Identifier: Apache-2.0
 *
 * dlist.h: one intrusive doubly-linked list for every module. A struct that
 * is kept in lists embeds a dlist_node per list and is found back from it
 * with DLIST_ENTRY (as the Linux kernel's list.h does): insert and remove in
 * O(1), no allocation, and removal needs only the node. The list is circular
 * around its head, so no operation has a special case for the ends.
 *
 * Pure, header-only, no state: a list is its owner's, to use from one thread
 * or under the owner's lock.
 */
#ifndef RINGCACHE_DLIST_H
#define RINGCACHE_DLIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct dlist_node {
    struct dlist_node *prev, *next; /* NULL while the node is in no list */
} dlist_node;

typedef struct dlist {
    dlist_node head; /* head.next is the first node, head.prev the last */
    size_t count;
} dlist;

/* The struct of type `type` whose member `member` is the node at ptr. */
#define DLIST_ENTRY(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void dlist_init(dlist *l)
{
    l->head.prev = l->head.next = &l->head;
    l->count = 0;
}

static inline bool dlist_empty(const dlist *l)
{
    return l->head.next == &l->head;
}

/* n goes between prev and next (neighbours in l). */
static inline void dlist__insert(dlist *l, dlist_node *prev, dlist_node *next, dlist_node *n)
{
    n->prev = prev;
    n->next = next;
    prev->next = n;
    next->prev = n;
    l->count++;
}

static inline void dlist_push_front(dlist *l, dlist_node *n)
{
    dlist__insert(l, &l->head, l->head.next, n);
}

static inline void dlist_push_back(dlist *l, dlist_node *n)
{
    dlist__insert(l, l->head.prev, &l->head, n);
}

/* n must be in l. */
static inline void dlist_remove(dlist *l, dlist_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = NULL;
    l->count--;
}

/* The first node, or NULL; the node after n, or NULL at the end. */
static inline dlist_node *dlist_first(const dlist *l)
{
    return dlist_empty(l) ? NULL : l->head.next;
}
static inline dlist_node *dlist_next(const dlist *l, const dlist_node *n)
{
    return n->next == &l->head ? NULL : n->next;
}

#endif /* RINGCACHE_DLIST_H */
