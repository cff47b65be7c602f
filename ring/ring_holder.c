/* SPDX-License-Identifier: Apache-2.0
 *
 * The ring holder: one atomic pointer to the current ring, swapped on a
 * membership change while readers keep looking up without a lock.
 *
 * The hazard is the window between a reader loading the pointer and taking its
 * reference: a writer must not drop the old ring's last reference inside it.
 * Readers announce themselves on one of two counters (chosen by the parity of
 * an epoch) around that window, like a tiny SRCU:
 *
 *   reader                         writer (under swap_lock)
 *   e = epoch & 1                  old = exchange(cur, next)
 *   active[e]++                    for 2 rounds: e = epoch++ & 1
 *   r = cur; ring_ref(r)                         wait until active[e] == 0
 *   active[e]--                    ring_unref(old)
 *
 * All operations are sequentially consistent. A reader that loaded `old` did
 * its increment before the exchange; the writer then waits on BOTH parities
 * after the exchange, so it waits on that reader's counter until the reader has
 * its reference. A writer never waits for readers that arrive after its flips
 * (they count on the other parity and can only see `next`), so readers cannot
 * starve it. Writers spin with sched_yield: the reader window is four
 * instructions.
 */
#include "ring.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

struct ring_holder {
    _Atomic(struct ring *) cur;
    atomic_uint epoch;
    atomic_uint active[2];
    pthread_mutex_t swap_lock;
};

int ring_holder_create(struct ring_holder **out, struct ring *initial)
{
    struct ring_holder *h = calloc(1, sizeof *h);
    if (h == NULL)
        return -ENOMEM;
    int rc = pthread_mutex_init(&h->swap_lock, NULL);
    if (rc != 0) {
        free(h);
        return -rc;
    }
    atomic_init(&h->cur, initial);
    atomic_init(&h->epoch, 0);
    atomic_init(&h->active[0], 0);
    atomic_init(&h->active[1], 0);
    *out = h;
    return 0;
}

void ring_holder_destroy(struct ring_holder **hp)
{
    if (hp == NULL || *hp == NULL)
        return;
    struct ring_holder *h = *hp;
    *hp = NULL;
    struct ring *r = atomic_exchange(&h->cur, NULL);
    ring_unref(&r);
    pthread_mutex_destroy(&h->swap_lock);
    free(h);
}

struct ring *ring_holder_acquire(struct ring_holder *h)
{
    unsigned e = atomic_load(&h->epoch) & 1u;
    atomic_fetch_add(&h->active[e], 1);
    struct ring *r = atomic_load(&h->cur);
    if (r != NULL)
        ring_ref(r);
    atomic_fetch_sub(&h->active[e], 1);
    return r;
}

void ring_holder_swap(struct ring_holder *h, struct ring *next)
{
    pthread_mutex_lock(&h->swap_lock);
    struct ring *old = atomic_exchange(&h->cur, next);
    for (int round = 0; round < 2; round++) {
        unsigned e = atomic_fetch_add(&h->epoch, 1) & 1u;
        while (atomic_load(&h->active[e]) != 0)
            sched_yield();
    }
    pthread_mutex_unlock(&h->swap_lock);
    ring_unref(&old);
}
