/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_ram.c: I/O buffers and the RAM tier. A bs_buf is what a read hands
 * back: either a pool buffer (aligned for O_DIRECT, block_size bytes) or a
 * pinned page of the RAM tier, which is pagecache/ (S3-FIFO) with page size =
 * block size and page buffers aligned for O_DIRECT, so a full-block read from
 * SSD lands straight in the page that the RAM tier keeps (no copy) and a RAM
 * hit is a reference to that page (no copy either). O_DIRECT bypasses the
 * kernel's page cache, so this tier is the only RAM copy of hot blocks.
 */
#include "blockstore_int.h"

#include <assert.h>
#include <stdlib.h>

#define BS_POOL_KEEP 64u /* free buffers kept for reuse */

static void *ram_alloc(void *ctx, size_t align, size_t size)
{
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, align > BS_ALIGN ? align : BS_ALIGN, size) != 0)
        return NULL;
    return p;
}

static void ram_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    free(ptr);
}

int bs__bufs_init(bs_store *s)
{
    pthread_mutex_init(&s->buf_lock, NULL);
    atomic_init(&s->bufs_out, 0);
    s->bufs_ready = true;
    if (s->cfg.ram_bytes >= s->block_size) {
        pc_config pc = {
            .capacity_bytes = (size_t)s->cfg.ram_bytes,
            .page_size = s->block_size,
            .policy = PC_POLICY_S3FIFO,
            .alloc_fn = ram_alloc,
            .free_fn = ram_free,
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
