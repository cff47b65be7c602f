/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_arena.c: the page cache's buffers (rc_int.h, rc_arena). One anonymous
 * mapping of the page cache's capacity, aligned to 2 MiB, cut into page-size
 * slots handed out in order and, once freed, from a free list already
 * faulted in. With huge pages the mapping is advised for them (one fault per
 * 2 MiB instead of one per 4 KiB where the kernel allows); without, the
 * kernel backs it 4 KiB at a time (which costs less CPU per byte on VMs that
 * back their memory lazily: see bench/README.md). With prefault the whole mapping is
 * backed at create (MADV_POPULATE_WRITE, or a write per 4 KiB), as a
 * long-lived compute node wants. Anything that is not a page (the page
 * cache's metadata) comes from posix_memalign.
 */
#include "rc_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RC_HUGE (2u << 20)

void rc__arena_init(rc_arena *a, size_t capacity, size_t slot, bool prefault, bool huge)
{
    memset(a, 0, sizeof(*a));
    size_t nslots = capacity / slot;
    if (nslots == 0 || slot % 4096 != 0)
        return;
    size_t len = nslots * slot + RC_HUGE;
    void *m =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return; /* posix_memalign serves every buffer */
    uintptr_t start = ((uintptr_t)m + RC_HUGE - 1) & ~(uintptr_t)(RC_HUGE - 1);
    (void)madvise((void *)start, nslots * slot, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    if (prefault) {
#ifdef MADV_POPULATE_WRITE
        if (madvise((void *)start, nslots * slot, MADV_POPULATE_WRITE) != 0)
#endif
            for (size_t off = 0; off < nslots * slot; off += 4096)
                ((volatile uint8_t *)start)[off] = 0;
    }
    pthread_mutex_init(&a->lock, NULL);
    a->map = m;
    a->map_len = len;
    a->start = (uint8_t *)start;
    a->slot = slot;
    a->nslots = nslots;
}

void rc__arena_deinit(rc_arena *a)
{
    if (!a->map)
        return;
    munmap(a->map, a->map_len);
    pthread_mutex_destroy(&a->lock);
    memset(a, 0, sizeof(*a));
}

static bool rc_arena_owns(const rc_arena *a, const void *p)
{
    const uint8_t *b = p;
    return a->map && b >= a->start && b < a->start + a->nslots * a->slot;
}

void *rc__arena_alloc(void *ctx, size_t align, size_t size)
{
    rc_arena *a = ctx;
    if (a->map && size == a->slot && align <= 4096) {
        void *p = NULL;
        pthread_mutex_lock(&a->lock);
        if (a->free_head) {
            p = a->free_head;
            a->free_head = *(void **)p;
        } else if (a->carved < a->nslots) {
            p = a->start + a->carved++ * a->slot;
        }
        pthread_mutex_unlock(&a->lock);
        if (p)
            return p;
    }
    void *p = NULL;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}

void rc__arena_free(void *ctx, void *ptr, size_t size)
{
    rc_arena *a = ctx;
    (void)size;
    if (!ptr)
        return;
    if (!rc_arena_owns(a, ptr)) {
        free(ptr);
        return;
    }
    pthread_mutex_lock(&a->lock);
    *(void **)ptr = a->free_head;
    a->free_head = ptr;
    pthread_mutex_unlock(&a->lock);
}
