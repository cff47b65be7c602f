/* SPDX-License-Identifier: Apache-2.0
 *
 * rs_rc.h: a byte-range source (rangesrc.h) that reads through the compute-side
 * cache client (client/ringcache.h): an rc_handle pinned to the version and size
 * its open saw, so every range comes from that version, and a "stale" answer
 * (-ESTALE) passes through unchanged for the engine to re-plan.
 *
 * Thread-safety: as rangesrc.h: reads may come from several threads at once
 * (the engine's workers and its download threads reading ahead): rc_pread is
 * thread-safe and the source keeps no state of its own between calls; several
 * sources on one rc_client are fine too.
 */
#ifndef RINGCACHE_RS_RC_H
#define RINGCACHE_RS_RC_H

#include "rangesrc.h"

#include <stddef.h>
#include <stdint.h>

struct rc_client;

/* Opens bucket/key through c (borrowed; it must outlive the source). 0, or
 * -errno from rc_open (-ENOENT, -EACCES, -EHOSTDOWN, ...) with a sentence in
 * err. The source is named "s3://bucket/key". */
int rs_rc_open(rs_source **out, struct rc_client *c, const char *bucket, const char *key, char *err,
               size_t errlen);

/* The cache client as an object store (rangesrc.h's eng_list_fn and
 * eng_open_fn, impl an rc_client): listings from S3 (rc_list), objects
 * through the cache nodes (rs_rc_open). */
int rs_rc_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
               char *err, size_t errlen);
int rs_rc_open_key(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                   size_t errlen);
/* A whole object written through the cache nodes (rc_put, write-through):
 * a table's part upload (table.h's tb_put_fn, impl an rc_client). */
int rs_rc_put_key(void *impl, const char *bucket, const char *key, const void *data, size_t len,
                  char *err, size_t errlen);
/* The same, with the version (ETag) the object got into version
 * (RC_VERSION_MAX bytes): table.h's tb_put_v_fn. */
int rs_rc_put_key_v(void *impl, const char *bucket, const char *key, const void *data, size_t len,
                    char *version, char *err, size_t errlen);
/* rs_rc_open of an object whose size and version are known (rc_open_known:
 * no HEAD; an empty version: rs_rc_open): table.h's tb_source_open_known_fn. */
int rs_rc_open_known_key(void *impl, const char *bucket, const char *key, uint64_t size,
                         const char *version, rs_source **out, char *err, size_t errlen);

#endif /* RINGCACHE_RS_RC_H */
