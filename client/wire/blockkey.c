/* SPDX-License-Identifier: Apache-2.0
 *
 * blockkey.c: block identity -> 128-bit key (see blockkey.h). The serialisation
 * below is part of the on-disk and on-wire contract: changing it changes every
 * key, so it is fixed and tested against known values.
 */
#include "blockkey.h"

#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

void bkey_id_init(bkey_id *id, const char *tenant, const char *bucket, const char *key,
                  const char *version, uint64_t object_size, uint64_t index)
{
    id->tenant = tenant ? tenant : "";
    id->tenant_len = strlen(id->tenant);
    id->bucket = bucket ? bucket : "";
    id->bucket_len = strlen(id->bucket);
    id->key = key ? key : "";
    id->key_len = strlen(id->key);
    id->version = version ? version : "";
    id->version_len = strlen(id->version);
    id->object_size = object_size;
    id->index = index;
}

static void put_u32(XXH3_state_t *st, size_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    XXH3_128bits_update(st, b, 4);
}

static void put_u64(XXH3_state_t *st, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    XXH3_128bits_update(st, b, 8);
}

bkey bkey_of(const bkey_id *id)
{
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    put_u32(&st, id->tenant_len);
    XXH3_128bits_update(&st, id->tenant, id->tenant_len);
    put_u32(&st, id->bucket_len);
    XXH3_128bits_update(&st, id->bucket, id->bucket_len);
    put_u32(&st, id->key_len);
    XXH3_128bits_update(&st, id->key, id->key_len);
    put_u32(&st, id->version_len);
    XXH3_128bits_update(&st, id->version, id->version_len);
    put_u64(&st, id->object_size);
    put_u64(&st, id->index);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (bkey){h.high64, h.low64};
}

void bkey_hex(bkey k, char out[33])
{
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)k.hi, (unsigned long long)k.lo);
}
