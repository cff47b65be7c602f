/* SPDX-License-Identifier: Apache-2.0
 *
 * client_test_util.h: the set-up every libringcache integration test shares:
 * a real s3rver behind the S3 model (which counts every S3 request), three
 * real ringcached nodes started with node_util, objects put straight into S3
 * (not counted: they bypass the model), and an rc_client pointed at the
 * nodes. Sizes shrink in sanitizer builds (RC_TEST_SANITIZED) or when
 * RINGCACHE_CLIENT_TEST_MIB caps them. Single-threaded set-up; the tests may
 * start reader threads of their own.
 */
#ifndef RINGCACHE_CLIENT_TEST_UTIL_H
#define RINGCACHE_CLIENT_TEST_UTIL_H

#include "node_util.h"
#include "ringcache.h"
#include "s3_test_util.h"

#include <stddef.h>
#include <stdint.h>

#define T_NODES 3

typedef struct t_cluster {
    h_env *env;
    h_s3 *s3;
    h_s3model *model;
    s3_config direct;    /* straight to s3rver, not counted */
    s3_config via_model; /* through the model, counted */
    t_node nodes[T_NODES];
    char members[512]; /* "n0=127.0.0.1:P,..." */
} t_cluster;

/* Starts S3, the model and three nodes (extra flags for each node, may be
 * NULL). Exits the test (77) when a tool is missing. */
void t_cluster_start(t_cluster *tc, const char *name, const char *const *node_extra);
/* SIGTERMs every node still running and asserts each exits 0; then frees. */
void t_cluster_stop(t_cluster *tc);

/* Publishes the nodes in dns as a headless Service svc does: per node an SRV
 * record of svc with target "n<i>.<svc>" and the node's port, and an A record
 * 127.0.0.1 for that target. Asserts. */
void t_cluster_publish(t_cluster *tc, h_dns *dns, const char *svc);

/* n reads of 64 KiB at seeded random offsets of h (an object of size bytes
 * whose content is data), each asserted whole and equal to data. */
void t_scattered_reads(rc_handle *h, const unsigned char *data, size_t size, int n, uint64_t seed);

/* Runs the ringcache CLI at cli with args (NULL-terminated, without the
 * program) against tc's S3 model with the S3RVER credentials and neither
 * AWS_PROFILE nor RINGCACHE_CACHE; env_extra adds "NAME=VALUE" entries
 * (NULL-terminated, may be NULL). The CLI's stderr is printed when it fails. */
void t_run_cli(t_cluster *tc, h_run_result *r, const char *cli, const char *const *env_extra,
               const char *const *args);
/* The same in env against the S3 at endpoint (a test with a set-up of its own). */
void t_run_cli_at(h_env *env, const char *endpoint, h_run_result *r, const char *cli,
                  const char *const *env_extra, const char *const *args);

/* The file at path holds exactly the len bytes at data (asserts). */
void t_file_equals(const char *path, const void *data, size_t len);

/* A size in bytes: `release_mib` MiB, or less in sanitizer builds
 * (`sanitized_mib`) or under RINGCACHE_CLIENT_TEST_MIB. */
size_t t_size_mib(size_t release_mib, size_t sanitized_mib);

/* Puts data straight into S3; etag (S3_ETAG_MAX) may be NULL. Asserts. */
void t_put_direct(t_cluster *tc, const char *key, const void *data, size_t len, char *etag);

/* An rc_config for the cluster: members, S3 through the model, the sizes. */
void t_rc_config(t_cluster *tc, rc_config *cfg);

/* S3 GETs the model has seen for bucket/key since the last reset. */
int64_t t_s3_gets(t_cluster *tc, const char *key);

#endif
