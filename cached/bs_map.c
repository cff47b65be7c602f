/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_map.c: block entries (one per stored block: location, checksums,
 * identity), their encoding as RocksDB values, and the in-memory map that
 * answers every lookup without touching RocksDB. The map is 64 shards, each a
 * chained hash table under its own mutex: a hit takes one shard lock once.
 * Why shards and not one rwlock: an rwlock's reader count is one cache line
 * written by every hit on every core. (Not measured separately on this
 * 2-core VM; the threads test and the bench exercise this path.)
 */
#include "blockstore_int.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* ---- identity ------------------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int bs__id_encode(const bkey_id *id, uint8_t *out, size_t cap)
{
    const char *f[4] = {id->tenant, id->bucket, id->key, id->version};
    size_t l[4] = {id->tenant_len, id->bucket_len, id->key_len, id->version_len};
    size_t need = 16 + 16;
    for (int i = 0; i < 4; i++)
        need += l[i];
    if (need > cap || need > BS_MAX_IDENTITY)
        return -ENAMETOOLONG;
    uint8_t *p = out;
    for (int i = 0; i < 4; i++) {
        put_le32(p, (uint32_t)l[i]);
        p += 4;
        if (l[i])
            memcpy(p, f[i], l[i]);
        p += l[i];
    }
    put_le64(p, id->object_size);
    put_le64(p + 8, id->index);
    return (int)need;
}

int bs__id_decode(const uint8_t *buf, size_t len, bkey_id *id)
{
    const char *f[4];
    size_t l[4];
    size_t pos = 0;
    for (int i = 0; i < 4; i++) {
        if (len - pos < 4)
            return -EINVAL;
        l[i] = get_le32(buf + pos);
        pos += 4;
        if (len - pos < l[i])
            return -EINVAL;
        f[i] = (const char *)buf + pos;
        pos += l[i];
    }
    if (len - pos != 16)
        return -EINVAL;
    id->tenant = f[0], id->tenant_len = l[0];
    id->bucket = f[1], id->bucket_len = l[1];
    id->key = f[2], id->key_len = l[2];
    id->version = f[3], id->version_len = l[3];
    id->object_size = get_le64(buf + pos);
    id->index = get_le64(buf + pos + 8);
    return 0;
}

/* ---- entries -------------------------------------------------------------- */

uint16_t bs__nchunks(uint32_t len)
{
    return (uint16_t)((len + BS_CHUNK_SIZE - 1) / BS_CHUNK_SIZE);
}

/* The seed binds a chunk to its block and its place in it: bytes of another
 * block (a stale offset after a region was rewritten) or of another chunk
 * never verify. */
uint64_t bs__chunk_sum(bkey key, uint32_t i, const void *p, size_t len)
{
    uint64_t seed = bkey_seed(key) ^ ((uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull);
    return XXH3_64bits_withSeed(p, len, seed);
}

bs_entry *bs__entry_new(bkey key, const uint8_t *id, size_t idlen, uint32_t len)
{
    uint16_t ncs = bs__nchunks(len);
    bs_entry *e = malloc(sizeof(*e) + ncs * sizeof(uint64_t) + idlen);
    if (!e)
        return NULL;
    memset(e, 0, sizeof(*e));
    atomic_init(&e->refs, 1);
    atomic_init(&e->hits, 0);
    e->key = key;
    e->len = len;
    e->ncs = ncs;
    e->idlen = (uint16_t)idlen;
    e->id = (uint8_t *)&e->cs[ncs];
    memcpy(e->id, id, idlen);
    return e;
}

void bs__entry_ref(bs_entry *e)
{
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
}

void bs__entry_unref(bs_entry *e)
{
    if (e && atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
        free(e);
}

size_t bs__entry_encode_len(const bs_entry *e)
{
    return BS_IXHDR + (size_t)e->ncs * 8 + e->idlen;
}

void bs__entry_encode(const bs_entry *e, uint8_t *out)
{
    memset(out, 0, BS_IXHDR);
    out[0] = BS_FORMAT_VERSION;
    out[2] = (uint8_t)e->ncs;
    out[3] = (uint8_t)(e->ncs >> 8);
    put_le32(out + 4, e->region);
    put_le64(out + 8, e->seq);
    put_le32(out + 16, e->off);
    put_le32(out + 20, e->len);
    put_le32(out + 24, e->idlen);
    uint8_t *p = out + BS_IXHDR;
    for (unsigned i = 0; i < e->ncs; i++, p += 8)
        put_le64(p, e->cs[i]);
    memcpy(p, e->id, e->idlen);
}

bs_entry *bs__entry_decode(bkey key, const uint8_t *val, size_t len)
{
    if (len < BS_IXHDR || val[0] != BS_FORMAT_VERSION)
        return NULL;
    uint16_t ncs = (uint16_t)(val[2] | (val[3] << 8));
    uint32_t blen = get_le32(val + 20);
    uint32_t idlen = get_le32(val + 24);
    if (ncs != bs__nchunks(blen) || blen == 0 || idlen > BS_MAX_IDENTITY ||
        len != BS_IXHDR + (size_t)ncs * 8 + idlen)
        return NULL;
    bkey_id id;
    if (bs__id_decode(val + BS_IXHDR + ncs * 8, idlen, &id) < 0)
        return NULL;
    bs_entry *e = bs__entry_new(key, val + BS_IXHDR + ncs * 8, idlen, blen);
    if (!e)
        return NULL;
    e->region = get_le32(val + 4);
    e->seq = get_le64(val + 8);
    e->off = get_le32(val + 16);
    for (unsigned i = 0; i < ncs; i++)
        e->cs[i] = get_le64(val + BS_IXHDR + 8 * i);
    return e;
}

void bs__key_encode(bkey k, uint8_t out[16])
{
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(k.hi >> (56 - 8 * i));
        out[8 + i] = (uint8_t)(k.lo >> (56 - 8 * i));
    }
}

bkey bs__key_decode(const uint8_t in[16])
{
    bkey k = {0, 0};
    for (int i = 0; i < 8; i++) {
        k.hi = (k.hi << 8) | in[i];
        k.lo = (k.lo << 8) | in[8 + i];
    }
    return k;
}

/* ---- the map -------------------------------------------------------------- */

int bs__map_init(bs_store *s)
{
    for (unsigned i = 0; i < BS_MAP_SHARDS; i++) {
        bs_shard *sh = &s->shards[i];
        pthread_mutex_init(&sh->lock, NULL);
        sh->nbuckets = 256;
        sh->buckets = calloc(sh->nbuckets, sizeof(*sh->buckets));
        if (!sh->buckets)
            return -ENOMEM;
    }
    return 0;
}

void bs__map_deinit(bs_store *s)
{
    for (unsigned i = 0; i < BS_MAP_SHARDS; i++) {
        bs_shard *sh = &s->shards[i];
        if (sh->buckets) {
            for (size_t b = 0; b < sh->nbuckets; b++) {
                bs_entry *e = sh->buckets[b];
                while (e) {
                    bs_entry *n = e->hnext;
                    e->in_map = false;
                    bs__entry_unref(e);
                    e = n;
                }
            }
        }
        free(sh->buckets);
        sh->buckets = NULL;
        pthread_mutex_destroy(&sh->lock);
    }
}

/* The shard comes from the high half, the bucket from the low half: the key
 * is a hash already. */
bs_shard *bs__shard_of(bs_store *s, bkey k)
{
    return &s->shards[(k.hi >> 58) % BS_MAP_SHARDS];
}

static size_t bucket_of(const bs_shard *sh, bkey k)
{
    return (size_t)(k.lo & (sh->nbuckets - 1));
}

bs_entry *bs__map_find_locked(bs_shard *sh, bkey k)
{
    for (bs_entry *e = sh->buckets[bucket_of(sh, k)]; e; e = e->hnext)
        if (bkey_equal(e->key, k))
            return e;
    return NULL;
}

static void grow_locked(bs_shard *sh)
{
    size_t nb = sh->nbuckets * 2;
    bs_entry **nbk = calloc(nb, sizeof(*nbk));
    if (!nbk)
        return; /* longer chains, still correct */
    for (size_t b = 0; b < sh->nbuckets; b++) {
        bs_entry *e = sh->buckets[b];
        while (e) {
            bs_entry *n = e->hnext;
            size_t i = (size_t)(e->key.lo & (nb - 1));
            e->hnext = nbk[i];
            nbk[i] = e;
            e = n;
        }
    }
    free(sh->buckets);
    sh->buckets = nbk;
    sh->nbuckets = nb;
}

bs_entry *bs__map_put_locked(bs_shard *sh, bs_entry *e)
{
    size_t b = bucket_of(sh, e->key);
    bs_entry **pp = &sh->buckets[b];
    bs_entry *old = NULL;
    for (; *pp; pp = &(*pp)->hnext) {
        if (bkey_equal((*pp)->key, e->key)) {
            old = *pp;
            *pp = old->hnext;
            old->in_map = false;
            sh->count--;
            sh->bytes -= old->len;
            break;
        }
    }
    e->in_map = true;
    e->hnext = sh->buckets[b];
    sh->buckets[b] = e;
    sh->count++;
    sh->bytes += e->len;
    if (sh->count > sh->nbuckets)
        grow_locked(sh);
    return old;
}

bool bs__map_del_locked(bs_shard *sh, bs_entry *e)
{
    if (!e->in_map)
        return false;
    for (bs_entry **pp = &sh->buckets[bucket_of(sh, e->key)]; *pp; pp = &(*pp)->hnext) {
        if (*pp == e) {
            *pp = e->hnext;
            e->in_map = false;
            sh->count--;
            sh->bytes -= e->len;
            return true;
        }
    }
    assert(!"entry marked in_map but not in its chain");
    return false;
}

bs_entry *bs__map_get(bs_store *s, bkey k, const uint8_t *id, size_t idlen, bool reader)
{
    bs_shard *sh = bs__shard_of(s, k);
    pthread_mutex_lock(&sh->lock);
    bs_entry *e = bs__map_find_locked(sh, k);
    if (e && (e->idlen != idlen || memcmp(e->id, id, idlen) != 0))
        e = NULL; /* same 128-bit key, other identity: never serve it */
    if (e) {
        bs__entry_ref(e);
        /* Counted under the shard lock: the evictor removes the entry from
         * the map under this lock before it waits for readers to drain, so
         * it cannot miss this reader. */
        if (reader)
            atomic_fetch_add_explicit(&s->regions[e->region].readers, 1, memory_order_acq_rel);
    }
    pthread_mutex_unlock(&sh->lock);
    return e;
}

void bs__map_foreach(bs_store *s, void (*fn)(void *ctx, const bs_entry *e), void *ctx)
{
    for (unsigned i = 0; i < BS_MAP_SHARDS; i++) {
        bs_shard *sh = &s->shards[i];
        pthread_mutex_lock(&sh->lock);
        for (size_t b = 0; b < sh->nbuckets; b++)
            for (bs_entry *e = sh->buckets[b]; e; e = e->hnext)
                fn(ctx, e);
        pthread_mutex_unlock(&sh->lock);
    }
}
