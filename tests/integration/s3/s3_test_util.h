/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_test_util.h: helpers shared by the S3 client's integration tests: a client
 * config pointing at a harness server, deterministic test data, and a bulk PUT
 * that keeps many requests in flight on the async client.
 * Single-threaded, like the tests.
 */
#ifndef RINGCACHE_S3_TEST_UTIL_H
#define RINGCACHE_S3_TEST_UTIL_H

#include "harness.h"
#include "s3.h"

#include <stddef.h>
#include <stdint.h>

/* A config for endpoint with the given credentials (NULL: S3RVER), short backoff
 * so retries are quick, path-style. */
void t_s3_config(s3_config *cfg, const char *endpoint, const char *access, const char *secret);

/* len bytes of a deterministic pseudo-random stream seeded by seed. */
void t_fill(void *buf, size_t len, uint64_t seed);
void *t_alloc_data(size_t len, uint64_t seed);

/* PUT n objects "<prefix><i>" (i formatted with %05d) of size `size` each, with
 * up to `inflight` requests at once on one async client. 0 or -errno. */
int t_put_many(const s3_config *cfg, const char *bucket, const char *prefix, int n, size_t size,
               int inflight);

/* PUT one object of len bytes with a blocking client for cfg (one request
 * below 64 MiB, multipart above); etag (S3_ETAG_MAX, may be NULL) gets its ETag.
 * 0, or -errno with S3's message printed to stderr. */
int t_put_object(const s3_config *cfg, const char *bucket, const char *key, const void *data,
                 size_t len, char *etag);
/* The same with `parallel` parts in flight. */
int t_put_object_parallel(const s3_config *cfg, const char *bucket, const char *key,
                          const void *data, size_t len, int parallel, char *etag);

/* Starts s3rver (version 3 or 5) in env, or skips the test when it is not
 * installed. */
h_s3 *t_start_s3(h_env *env, int version);

/* The start of an S3 test's setup: *env for test_name, s3rver `version` in it
 * (skipping the test when it is not installed) in *s3, and cfg for that
 * server (t_s3_config with S3RVER). 0, or -1 when env cannot be made. */
int t_s3_setup(h_env **env, h_s3 **s3, s3_config *cfg, const char *test_name, int version);

/* Its end: stops s3 (SIGTERM ending it counts as clean), then destroys *env.
 * 0, or -1 when the server did not exit cleanly. */
int t_s3_teardown(h_env **env, h_s3 *s3);

#endif
