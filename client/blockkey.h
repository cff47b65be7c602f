/* SPDX-License-Identifier: Apache-2.0
 *
 * blockkey.h: the identity of a block and its 128-bit key, shared by every
 * client and every cache node (DESIGN.md, "Blocks and identity"). An object is
 * (tenant, bucket, key, version, size); its bytes are cut into blocks of one
 * size per cluster; block i covers [i*B, min((i+1)*B, size)). The block key is
 * XXH3-128 over the length-prefixed fields, so bucket "a" + key "b/c" and
 * bucket "a/b" + key "c" never collide by construction.
 *
 * Pure functions, no state: thread-safe.
 */
#ifndef RINGCACHE_BLOCKKEY_H
#define RINGCACHE_BLOCKKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bkey {
    uint64_t hi, lo;
} bkey;

/* The identity of one block. Strings are borrowed, not NUL-terminated
 * necessarily: each has its length. version is the normalised ETag. */
typedef struct bkey_id {
    const char *tenant;
    size_t tenant_len;
    const char *bucket;
    size_t bucket_len;
    const char *key;
    size_t key_len;
    const char *version;
    size_t version_len;
    uint64_t object_size;
    uint64_t index;         /* block number */
} bkey_id;

/* Fill id from NUL-terminated strings. */
void bkey_id_init(bkey_id *id, const char *tenant, const char *bucket, const char *key,
                  const char *version, uint64_t object_size, uint64_t index);

/* The block's key: XXH3-128 over
 *   u32 len | tenant | u32 len | bucket | u32 len | key | u32 len | version |
 *   u64 object_size | u64 index
 * (little-endian lengths and integers). */
bkey bkey_of(const bkey_id *id);

/* A 64-bit seed derived from the key, for checksums bound to the identity. */
static inline uint64_t bkey_seed(bkey k) { return k.hi ^ (k.lo * 0x9e3779b97f4a7c15ull); }

static inline bool bkey_equal(bkey a, bkey b) { return a.hi == b.hi && a.lo == b.lo; }

/* Number of blocks of an object, and the length of block i: 0 for a block
 * past the object's end, whatever i is (no i * block_size that could wrap:
 * block 2^44 of 1 MiB blocks is not block 0). block_size 0: no blocks. */
static inline uint64_t bkey_block_count(uint64_t object_size, uint64_t block_size)
{
    if (block_size == 0)
        return 0;
    return object_size / block_size + (object_size % block_size != 0);
}
static inline uint64_t bkey_block_len(uint64_t object_size, uint64_t block_size, uint64_t i)
{
    if (i >= bkey_block_count(object_size, block_size))
        return 0;
    uint64_t start = i * block_size; /* < object_size: cannot wrap */
    return object_size - start < block_size ? object_size - start : block_size;
}

/* The bytes the ring places a block by (ring_lookup's key): the block key as
 * 16 little-endian bytes, hi then lo. Every client and node must use this. */
static inline void bkey_ring_key(bkey k, uint8_t out[16])
{
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(k.hi >> (8 * i));
        out[8 + i] = (uint8_t)(k.lo >> (8 * i));
    }
}

/* "0123456789abcdef0123456789abcdef" (32 hex digits + NUL). */
void bkey_hex(bkey k, char out[33]);

#endif /* RINGCACHE_BLOCKKEY_H */
