/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_meta.c: libringcache's metadata cache: what a HEAD said of an object
 * (its size and version), trusted for metadata_ttl_ms, so that opening the
 * same object again costs no round trip; a write-through PUT replaces the
 * entry at once (read-your-writes) and a read that finds the object changed
 * drops it. A chained hash table under one mutex, cleared whole when it
 * reaches RC_META_MAX entries (an open is rare next to reads: one lock per
 * open is no cost).
 */
#include "rc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rc_meta {
    struct rc_meta *next;
    char *bucket, *key;
    uint64_t size;
    char version[RC_VERSION_CAP];
    int64_t expires_ms;
};

void rc__meta_init(rc_meta_cache *m, int ttl_ms)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
    m->ttl_ms = ttl_ms;
}

static size_t rc_meta_slot(const char *bucket, const char *key)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = bucket; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    h = (h ^ '/') * 1099511628211ull;
    for (const char *p = key; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return (size_t)(h % RC_META_BUCKETS);
}

static rc_meta **rc_meta_find_locked(rc_meta_cache *m, const char *bucket, const char *key)
{
    rc_meta **pp = &m->slots[rc_meta_slot(bucket, key)];
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->bucket, bucket) == 0 && strcmp((*pp)->key, key) == 0)
            return pp;
    return pp;
}

static void rc_meta_free(rc_meta *e)
{
    free(e->bucket);
    free(e->key);
    free(e);
}

/* Unlinks and frees the entry *pp. */
static void rc_meta_remove_locked(rc_meta_cache *m, rc_meta **pp)
{
    rc_meta *e = *pp;
    *pp = e->next;
    rc_meta_free(e);
    m->n--;
}

static void rc_meta_clear_locked(rc_meta_cache *m)
{
    for (size_t i = 0; i < RC_META_BUCKETS; i++)
        while (m->slots[i])
            rc_meta_remove_locked(m, &m->slots[i]);
}

void rc__meta_deinit(rc_meta_cache *m)
{
    pthread_mutex_lock(&m->lock);
    rc_meta_clear_locked(m);
    pthread_mutex_unlock(&m->lock);
    pthread_mutex_destroy(&m->lock);
}

bool rc__meta_get(rc_meta_cache *m, const char *bucket, const char *key, uint64_t *size,
                  char *version)
{
    bool hit = false;
    pthread_mutex_lock(&m->lock);
    rc_meta **pp = rc_meta_find_locked(m, bucket, key);
    if (*pp) {
        if ((*pp)->expires_ms > rc__now_ms()) {
            *size = (*pp)->size;
            memcpy(version, (*pp)->version, RC_VERSION_CAP);
            hit = true;
        } else {
            rc_meta_remove_locked(m, pp);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return hit;
}

void rc__meta_put(rc_meta_cache *m, const char *bucket, const char *key, uint64_t size,
                  const char *version)
{
    if (m->ttl_ms <= 0 || strlen(version) > BKEY_VERSION_MAX)
        return;
    pthread_mutex_lock(&m->lock);
    rc_meta **pp = rc_meta_find_locked(m, bucket, key);
    rc_meta *e = *pp;
    if (!e) {
        if (m->n >= RC_META_MAX) {
            rc_meta_clear_locked(m);
            pp = rc_meta_find_locked(m, bucket, key);
        }
        e = calloc(1, sizeof(*e));
        if (e) {
            e->bucket = strdup(bucket);
            e->key = strdup(key);
        }
        if (!e || !e->bucket || !e->key) {
            if (e)
                rc_meta_free(e);
            pthread_mutex_unlock(&m->lock);
            return; /* only a cache: a failed insert costs a HEAD later */
        }
        *pp = e;
        m->n++;
    }
    e->size = size;
    memcpy(e->version, version, strlen(version) + 1); /* fits: checked above */
    e->expires_ms = rc__now_ms() + m->ttl_ms;
    pthread_mutex_unlock(&m->lock);
}

void rc__meta_drop(rc_meta_cache *m, const char *bucket, const char *key, const char *version)
{
    pthread_mutex_lock(&m->lock);
    rc_meta **pp = rc_meta_find_locked(m, bucket, key);
    if (*pp && strcmp((*pp)->version, version) == 0)
        rc_meta_remove_locked(m, pp);
    pthread_mutex_unlock(&m->lock);
}
