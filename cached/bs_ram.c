/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_ram.c: I/O buffers and the RAM tier. A bs_buf is what a read hands
 * back: either a pool buffer (aligned for O_DIRECT, block_size bytes) or a
 * pinned page of the RAM tier, which is pagecache/ (S3-FIFO) with page size =
 * block size and page buffers aligned for O_DIRECT, so a full-block read from
 * SSD lands straight in the page that the RAM tier keeps (no copy) and a RAM
 * hit is a reference to that page (no copy either). O_DIRECT bypasses the
 * kernel's page cache, so this tier is the only RAM copy of hot blocks.
 *
 * The page buffers are slots of one memfd, mapped shared, so a node can send
 * a RAM hit with sendfile() (bs_buf_file): the socket takes references to
 * the file's pages instead of a copy of the bytes. Those references outlive
 * the send call (until the peer, or on loopback the receiving process, has
 * taken the bytes), so a slot that was sent is never rewritten in place:
 * before its next fill, its range is punched out of the file (the old pages
 * stay with whoever still holds them; the fill faults in new ones):
 *
 *   memfd  [ slot 0 | slot 1 | slot 2 | ... ]   each block_size bytes
 *              ^ sent: lent[1] = 1 -> punched before slot 1 is filled again
 */
#include "blockstore_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define BS_POOL_KEEP 64u /* free buffers kept for reuse */

/* Spare slots beyond the tier's pages: the page cache's own tables may ask
 * for a block-sized allocation too. */
#define BS_RAM_SPARE 4u

static bool in_arena(const bs_store *s, const void *p, uint32_t *slot)
{
    const uint8_t *b = p;
    if (s->ram_fd < 0 || b < s->ram_base ||
        b >= s->ram_base + (size_t)s->ram_slots * s->block_size)
        return false;
    if (slot)
        *slot = (uint32_t)((size_t)(b - s->ram_base) / s->block_size);
    return true;
}

/* Gives slot's memory back to the system (and drops it from the file). */
static void punch(bs_store *s, uint32_t slot)
{
    off_t at = (off_t)slot * s->block_size;
    if (fallocate(s->ram_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at, s->block_size) < 0)
        abort(); /* a memfd supports it; rewriting a lent slot in place would corrupt sends */
}

static void *ram_alloc(void *ctx, size_t align, size_t size)
{
    bs_store *s = ctx;
    if (size == s->block_size && s->ram_fd >= 0) {
        pthread_mutex_lock(&s->ram_lock);
        uint32_t slot = s->ram_nfree ? s->ram_free[--s->ram_nfree] : UINT32_MAX;
        pthread_mutex_unlock(&s->ram_lock);
        if (slot != UINT32_MAX)
            return s->ram_base + (size_t)slot * s->block_size;
    }
    void *p = NULL;
    if (posix_memalign(&p, align > BS_ALIGN ? align : BS_ALIGN, size) != 0)
        return NULL;
    return p;
}

static void ram_free(void *ctx, void *ptr, size_t size)
{
    (void)size;
    bs_store *s = ctx;
    uint32_t slot;
    if (!in_arena(s, ptr, &slot)) {
        free(ptr);
        return;
    }
    punch(s, slot);
    atomic_store_explicit(&s->ram_lent[slot], 0, memory_order_relaxed);
    pthread_mutex_lock(&s->ram_lock);
    s->ram_free[s->ram_nfree++] = slot;
    pthread_mutex_unlock(&s->ram_lock);
}

/* The memfd and its mapping; without them (no memfd, no memory) the tier's
 * pages come from posix_memalign and hits are sent by copy. */
static void arena_init(bs_store *s)
{
    uint64_t pages = s->cfg.ram_bytes / s->block_size;
    if (pages + BS_RAM_SPARE > UINT32_MAX / 2)
        return;
    uint32_t n = (uint32_t)pages + BS_RAM_SPARE;
    size_t bytes = (size_t)n * s->block_size;
    int fd = memfd_create("ringcached-ram", MFD_CLOEXEC);
    if (fd < 0)
        return;
    void *base = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) == 0)
        base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    s->ram_free = base != MAP_FAILED ? malloc(sizeof(uint32_t) * n) : NULL;
    s->ram_lent = s->ram_free ? calloc(n, 1) : NULL;
    if (!s->ram_lent) {
        free(s->ram_free);
        s->ram_free = NULL;
        if (base != MAP_FAILED)
            munmap(base, bytes);
        close(fd);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        s->ram_free[i] = n - 1 - i; /* slot 0 first */
    s->ram_nfree = n;
    s->ram_slots = n;
    s->ram_base = base;
    s->ram_fd = fd;
}

static void arena_deinit(bs_store *s)
{
    if (s->ram_fd < 0)
        return;
    munmap(s->ram_base, (size_t)s->ram_slots * s->block_size);
    close(s->ram_fd);
    s->ram_fd = -1;
    free(s->ram_free);
    free((void *)s->ram_lent);
    s->ram_free = NULL;
    s->ram_lent = NULL;
}

void bs__ram_fresh(bs_store *s, pc_page *page)
{
    uint32_t slot;
    if (in_arena(s, pc_page_data(page), &slot) &&
        atomic_exchange_explicit(&s->ram_lent[slot], 0, memory_order_acq_rel))
        punch(s, slot);
}

int bs_buf_file(bs_buf *buf, const void *p, int *fd, uint64_t *off)
{
    uint32_t slot;
    if (!buf || !buf->page || !in_arena(buf->s, p, &slot))
        return -ENOENT;
    bs_store *s = buf->s;
    atomic_store_explicit(&s->ram_lent[slot], 1, memory_order_release);
    *fd = s->ram_fd;
    *off = (uint64_t)((const uint8_t *)p - s->ram_base);
    return 0;
}

int bs__bufs_init(bs_store *s)
{
    pthread_mutex_init(&s->buf_lock, NULL);
    pthread_mutex_init(&s->ram_lock, NULL);
    atomic_init(&s->bufs_out, 0);
    s->ram_fd = -1;
    s->bufs_ready = true;
    if (s->cfg.ram_bytes >= s->block_size) {
        arena_init(s);
        pc_config pc = {
            .capacity_bytes = (size_t)s->cfg.ram_bytes,
            .page_size = s->block_size,
            .policy = PC_POLICY_S3FIFO,
            .alloc_fn = ram_alloc,
            .free_fn = ram_free,
            .alloc_ctx = s,
        };
        int rc = pc_create(&s->ram, &pc);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void bs__bufs_deinit(bs_store *s)
{
    if (!s->bufs_ready)
        return;
    assert(atomic_load(&s->bufs_out) == 0 && "every bs_buf must be released before bs_close");
    bs_buf *b = s->buf_free;
    while (b) {
        bs_buf *n = b->next;
        free(b->mem);
        free(b);
        b = n;
    }
    s->buf_free = NULL;
    pc_destroy(&s->ram);
    arena_deinit(s);
    pthread_mutex_destroy(&s->ram_lock);
    pthread_mutex_destroy(&s->buf_lock);
}

static bs_buf *buf_get(bs_store *s, bool mem)
{
    pthread_mutex_lock(&s->buf_lock);
    bs_buf *b = s->buf_free;
    if (b) {
        s->buf_free = b->next;
        s->buf_nfree--;
    }
    pthread_mutex_unlock(&s->buf_lock);
    if (!b) {
        b = calloc(1, sizeof(*b));
        if (!b)
            return NULL;
    }
    /* A header that only wraps a page needs no memory of its own. */
    if (mem && !b->mem && posix_memalign((void **)&b->mem, BS_ALIGN, s->block_size) != 0) {
        b->mem = NULL;
        free(b);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->s = s;
    b->page = NULL;
    b->data = b->mem;
    b->len = 0;
    b->next = NULL;
    atomic_fetch_add(&s->bufs_out, 1);
    return b;
}

bs_buf *bs__buf_get(bs_store *s)
{
    return buf_get(s, true);
}

bs_buf *bs__buf_page(bs_store *s, pc_page *page)
{
    bs_buf *b = buf_get(s, false);
    if (!b)
        return NULL;
    b->page = page;
    b->data = pc_page_data(page);
    b->len = pc_page_len(page);
    return b;
}

const void *bs_buf_data(const bs_buf *buf)
{
    return buf->data;
}

size_t bs_buf_len(const bs_buf *buf)
{
    return buf->len;
}

void bs_buf_ref(bs_buf *buf)
{
    atomic_fetch_add_explicit(&buf->refs, 1, memory_order_relaxed);
}

void bs_buf_unref(bs_buf **pbuf)
{
    bs_buf *b = pbuf ? *pbuf : NULL;
    if (!b)
        return;
    *pbuf = NULL;
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
        return;
    bs_store *s = b->s;
    if (b->page)
        pc_release(s->ram, &b->page);
    pthread_mutex_lock(&s->buf_lock);
    if (s->buf_nfree < BS_POOL_KEEP) {
        b->next = s->buf_free;
        s->buf_free = b;
        s->buf_nfree++;
        b = NULL;
    }
    pthread_mutex_unlock(&s->buf_lock);
    if (b) {
        free(b->mem);
        free(b);
    }
    atomic_fetch_sub(&s->bufs_out, 1);
}
