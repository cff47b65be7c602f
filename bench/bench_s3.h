/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_s3.h: the S3 client config a bench points at the harness S3 server or
 * the S3 model in front of it (S3RVER's credentials, path-style). For benches
 * that link the S3 client; no state.
 */
#ifndef RINGCACHE_BENCH_S3_H
#define RINGCACHE_BENCH_S3_H

#include "harness.h"
#include "s3.h"

#include <stdio.h>

/* c for endpoint ("http://127.0.0.1:PORT"), defaults otherwise. */
static inline void bench_s3_config(s3_config *c, const char *endpoint)
{
    s3_config_init(c);
    snprintf(c->endpoint, sizeof(c->endpoint), "%s", endpoint);
    snprintf(c->access_key, sizeof(c->access_key), "%s", H_S3_DEFAULT_KEY);
    snprintf(c->secret_key, sizeof(c->secret_key), "%s", H_S3_DEFAULT_KEY);
    c->path_style = true;
}

#endif /* RINGCACHE_BENCH_S3_H */
