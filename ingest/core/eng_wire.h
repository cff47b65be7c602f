/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_wire.h: bounded byte buffers for the engine's wire formats (the
 * partial states of a distributed query, ingest/dist/dist_state.h). A
 * writer appends little-endian integers, doubles and length-prefixed bytes
 * to a growing buffer capped at a maximum size; a reader takes them back out
 * of bytes from the network, checking every length against the bytes left
 * before anything is allocated or copied. Both keep their first error
 * (sticky), so a codec reads or writes a whole structure and checks once.
 *
 * Thread-safety: a buffer belongs to one thread; the functions are reentrant.
 */
#ifndef RINGCACHE_ENG_WIRE_H
#define RINGCACHE_ENG_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ew_buf {
    uint8_t *p; /* malloc'ed; the caller frees it (ew_free) */
    size_t n, cap;
    size_t max; /* bytes the buffer may hold; 0: no cap */
    int err;    /* 0, -ENOMEM, or -E2BIG past max */
} ew_buf;

void ew_init(ew_buf *b, size_t max);
void ew_free(ew_buf *b);
void ew_u8(ew_buf *b, uint8_t v);
void ew_u32(ew_buf *b, uint32_t v);
void ew_u64(ew_buf *b, uint64_t v);
void ew_f64(ew_buf *b, double v);
void ew_raw(ew_buf *b, const void *p, size_t n);
/* [u32 length][bytes]; n above UINT32_MAX is -E2BIG. */
void ew_bytes(ew_buf *b, const void *p, size_t n);
/* Overwrites 4 bytes at off (a length written before its body). */
void ew_put_u32_at(ew_buf *b, size_t off, uint32_t v);

typedef struct er_buf {
    const uint8_t *p;
    size_t n, off;
    int err; /* 0 or -EBADMSG once a read ran past the end or a bound */
} er_buf;

void er_init(er_buf *r, const void *p, size_t n);
static inline size_t er_left(const er_buf *r)
{
    return r->err ? 0 : r->n - r->off;
}
uint8_t er_u8(er_buf *r);
uint32_t er_u32(er_buf *r);
uint64_t er_u64(er_buf *r);
double er_f64(er_buf *r);
/* n bytes in place (borrowed from the input), or NULL (error set). */
const uint8_t *er_raw(er_buf *r, size_t n);
/* [u32 length][bytes] in place, the length at most max: NULL (error set)
 * when longer or past the end. */
const uint8_t *er_bytes(er_buf *r, uint32_t max, uint32_t *len);
/* A u32 count of elements each taking at least min_size bytes on the wire:
 * a count the bytes left cannot hold, or above max, is an error (0), so a
 * decoder may allocate count elements without trusting the sender. */
uint32_t er_count(er_buf *r, size_t min_size, uint32_t max);
/* Marks the input bad (a value out of its range); returns -EBADMSG. */
int er_fail(er_buf *r);

#endif /* RINGCACHE_ENG_WIRE_H */
