/* SPDX-License-Identifier: Apache-2.0
 *
 * blockkey.h: the identity of a block and its 128-bit key, shared by every
 * client and every cache node (ARCHITECTURE.md, "Identity, versions"). An object is
 * (tenant, bucket, key, version, size); its bytes are cut into blocks of one
 * size per cluster; block i covers [i*B, min((i+1)*B, size)). The block key is
 * XXH3-128 over the length-prefixed fields, so bucket "a" + key "b/c" and
 * bucket "a/b" + key "c" never collide by construction.
 *
 * Pure functions, no state: thread-safe.
 */
#ifndef RINGCACHE_BLOCKKEY_H
#define RINGCACHE_BLOCKKEY_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
    uint64_t index; /* block number */
} bkey_id;

/* Fill id from NUL-terminated strings. */
void bkey_id_init(bkey_id *id, const char *tenant, const char *bucket, const char *key,
                  const char *version, uint64_t object_size, uint64_t index);

/* The limits of an object's identity, in bytes without the NUL: an S3 bucket
 * name is 3 to 63 characters, a key at most 1024 bytes; a tenant name and a
 * version (the normalised ETag) are bounded by what the node keeps. The wire
 * (proto.h) and every front end refuse longer fields with these limits. */
#define BKEY_TENANT_MAX  256
#define BKEY_BUCKET_MAX  63
#define BKEY_KEY_MAX     1024
#define BKEY_VERSION_MAX 128

/* One object's identity with its own storage (NUL-terminated copies within
 * the limits above): what a request names and what a fill or a write-through
 * keeps while it runs. version "" is "any version" where a request allows it.
 * Its blocks' identities are bkey_object_block() views of it. */
typedef struct bkey_object {
    char tenant[BKEY_TENANT_MAX + 1];
    char bucket[BKEY_BUCKET_MAX + 1];
    char key[BKEY_KEY_MAX + 1];
    char version[BKEY_VERSION_MAX + 1];
    uint64_t size;
} bkey_object;

/* Copies src[0..len) into a field of cap bytes (sizeof the field): 0,
 * -ENAMETOOLONG when it does not fit with its NUL, -EINVAL for a NUL byte
 * inside (a name that C strings would cut short). */
static inline int bkey_field_set(char *field, size_t cap, const char *src, size_t len)
{
    if (len >= cap)
        return -ENAMETOOLONG;
    if (len && memchr(src, '\0', len))
        return -EINVAL;
    if (len)
        memcpy(field, src, len);
    field[len] = '\0';
    return 0;
}

/* Sets every field of o from NUL-terminated strings (NULL: ""). Returns 0,
 * or -ENAMETOOLONG when a field is over its limit (o is then partly set). */
static inline int bkey_object_init(bkey_object *o, const char *tenant, const char *bucket,
                                   const char *key, const char *version, uint64_t size)
{
    const char *f[4] = {tenant ? tenant : "", bucket ? bucket : "", key ? key : "",
                        version ? version : ""};
    char *d[4] = {o->tenant, o->bucket, o->key, o->version};
    size_t cap[4] = {sizeof o->tenant, sizeof o->bucket, sizeof o->key, sizeof o->version};
    o->size = size;
    for (int i = 0; i < 4; i++) {
        int rc = bkey_field_set(d[i], cap[i], f[i], strlen(f[i]));
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The identity of block `index` of o: a view borrowing o's strings (valid
 * while o is). */
static inline void bkey_object_block(const bkey_object *o, uint64_t index, bkey_id *id)
{
    id->tenant = o->tenant;
    id->tenant_len = strlen(o->tenant);
    id->bucket = o->bucket;
    id->bucket_len = strlen(o->bucket);
    id->key = o->key;
    id->key_len = strlen(o->key);
    id->version = o->version;
    id->version_len = strlen(o->version);
    id->object_size = o->size;
    id->index = index;
}

/* The block's key: XXH3-128 over
 *   u32 len | tenant | u32 len | bucket | u32 len | key | u32 len | version |
 *   u64 object_size | u64 index
 * (little-endian lengths and integers). */
bkey bkey_of(const bkey_id *id);

/* A 64-bit seed derived from the key, for checksums bound to the identity. */
static inline uint64_t bkey_seed(bkey k)
{
    return k.hi ^ (k.lo * 0x9e3779b97f4a7c15ull);
}

static inline bool bkey_equal(bkey a, bkey b)
{
    return a.hi == b.hi && a.lo == b.lo;
}

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
