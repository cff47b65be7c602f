/* SPDX-License-Identifier: Apache-2.0
 *
 * rangesrc.h: the byte-range source, the one way the readers of ingest/ get
 * bytes of a file: a named object of known size and version, read by ranges,
 * many at once. Implementations: a local file (pread), S3 through the S3
 * client (s3.h), and any other provider through rs_source_create() (the
 * compute-side cache client plugs in there: a handle pinned to one version).
 *
 * Thread-safety: rs_read_ranges() may be called from several threads at once
 * on the same source. The file source is lock-free (pread); the S3 source
 * gives concurrent callers a loop and client each (up to 8, made on first
 * need; past that they wait for one), and each call keeps all its ranges in
 * flight at once. rs_name/rs_size/rs_version are immutable after open.
 * Custom implementations must make their read_ranges callback thread-safe.
 *
 * Versions: a source is pinned to the version (ETag) it saw at open; a read
 * that meets another version fails with -ESTALE and that code passes through
 * every layer above unchanged (the engine re-plans the file).
 *
 * S3 source, how ranges are fetched: a call takes one of the source's lanes
 * (a private libevent loop and an async s3_client on it); rs_read_ranges()
 * submits every range as its own ranged GET (If-Match the pinned ETag, and the
 * answer's ETag is checked by the client), then runs the loop until all
 * complete. Each lane's connection limit (s3_config.max_connections) bounds
 * how many of its requests are on the wire at once.
 * Sizes come from HEAD at open, so no suffix range is ever sent.
 */
#ifndef RINGCACHE_RANGESRC_H
#define RINGCACHE_RANGESRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct s3_config;

#define RS_MSG_MAX 512

typedef struct rs_source rs_source;

/* One range to read: `length` bytes at `offset` into `buf` (caller-owned,
 * at least `length` bytes). A range must lie inside the object. */
typedef struct rs_range {
    uint64_t offset;
    uint64_t length;
    void *buf;
} rs_range;

/* What an implementation provides. read_ranges reads every range fully (a
 * short object is an error), in any order, and returns 0 or -errno with a
 * sentence in err (err is never NULL, errlen >= 1). -ESTALE means the object
 * is no longer the version the source was opened on. destroy frees impl. */
typedef int (*rs_read_ranges_fn)(void *impl, const rs_range *ranges, size_t n, char *err,
                                 size_t errlen);
typedef void (*rs_destroy_fn)(void *impl);

typedef struct rs_ops {
    rs_read_ranges_fn read_ranges;
    rs_destroy_fn destroy;
} rs_ops;

/* Wraps an implementation. name (shown in every error, e.g. "s3://b/k" or a
 * path) and version (may be NULL) are copied; ops is copied; impl is retained
 * and freed by ops->destroy when the source is destroyed (also on failure
 * here). Returns 0, -EINVAL or -ENOMEM. */
int rs_source_create(rs_source **out, const rs_ops *ops, void *impl, const char *name,
                     uint64_t size, const char *version);

/* A local file, opened read-only; its version is "mtime_ns-size". Returns 0 or
 * -errno of open/fstat (-EISDIR for a folder) with a sentence in err (may be
 * NULL). */
int rs_file_open(rs_source **out, const char *path, char *err, size_t errlen);

/* An S3 object: HEAD now for size and ETag, then ranged GETs pinned to it.
 * cfg is copied. Returns 0 or the S3 error (-ENOENT, -EACCES, ...) with the
 * client's sentence in err (may be NULL). */
int rs_s3_open(rs_source **out, const struct s3_config *cfg, const char *bucket, const char *key,
               char *err, size_t errlen);

/* Frees the source (and its implementation). Accepts NULL; sets *s to NULL. */
void rs_destroy(rs_source **s);

const char *rs_name(const rs_source *s);
uint64_t rs_size(const rs_source *s);
const char *rs_version(const rs_source *s); /* "" when unknown */

/* Reads n ranges (see rs_range); checks each lies inside [0, size) first
 * (-ERANGE otherwise). Returns 0 or -errno with a sentence naming the source in
 * err (may be NULL). */
int rs_read_ranges(rs_source *s, const rs_range *ranges, size_t n, char *err, size_t errlen);

/* One range. Same results as rs_read_ranges. */
int rs_read(rs_source *s, uint64_t offset, void *buf, uint64_t length, char *err, size_t errlen);

/* Counters since open (relaxed atomics: a snapshot). */
typedef struct rs_stats {
    uint64_t calls;  /* rs_read_ranges calls */
    uint64_t ranges; /* ranges read */
    uint64_t bytes;  /* bytes read */
} rs_stats;
void rs_stats_get(const rs_source *s, rs_stats *out);

/* ---- object stores --------------------------------------------------------- */

/* How S3 objects are listed and opened (the CLI plugs S3 directly or the
 * cache client in). list calls fn for every key of bucket matching the glob
 * (s3_glob_create's grammar) with its size, returns 0 or -errno with a
 * sentence in err. open fills *out with a source pinned to one version. */
typedef int (*eng_key_fn)(const char *key, uint64_t size, void *arg);
typedef int (*eng_list_fn)(void *impl, const char *bucket, const char *glob, eng_key_fn fn,
                           void *arg, char *err, size_t errlen);
typedef int (*eng_open_fn)(void *impl, const char *bucket, const char *key, rs_source **out,
                           char *err, size_t errlen);

/* The credentials a query names for one source, as ClickHouse's s3() takes
 * them: s3(url, 'KEY', 'SECRET' [, 'SESSION_TOKEN']) or s3(url, NOSIGN).
 * Borrowed for the call they are passed to. */
typedef struct eng_s3_creds {
    int nosign;             /* unsigned (anonymous) requests */
    const char *access_key; /* NULL with nosign */
    const char *secret_key;
    const char *session_token; /* NULL: none */
} eng_s3_creds;

/* An S3 access of its own for such a source: list and open as above over
 * impl, which destroy frees (destroy may be NULL). */
typedef struct eng_s3_access {
    eng_list_fn list;
    eng_open_fn open;
    void *impl;
    void (*destroy)(void *impl);
} eng_s3_access;

/* Makes the access for creds from the configured one (impl: the s3_impl it
 * comes with): the same endpoint and settings, those credentials. 0, or
 * -errno with a sentence in err (e.g. when this process may not call S3
 * itself). Called from the thread running the statement. */
typedef int (*eng_s3_as_fn)(void *impl, const eng_s3_creds *creds, eng_s3_access *out, char *err,
                            size_t errlen);
/* An S3 listing's callback (s3_object_fn) that hands each key and size to an
 * eng_key_fn: arg is an rs_key_ctx {fn, arg, 0}; a negative answer of fn
 * stops the listing and stays in rc. */
struct s3_object_info;
typedef struct rs_key_ctx {
    eng_key_fn fn;
    void *arg;
    int rc;
} rs_key_ctx;
int rs_key_cb(const struct s3_object_info *info, void *arg);

/* S3 directly: the list and open above with impl an s3_config (borrowed;
 * rs_s3.c). Anonymous requests when it has no credentials. */
int rs_s3_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
               char *err, size_t errlen);
int rs_s3_open_key(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                   size_t errlen);

/* An error of a source read with its own credentials (an eng_s3_access made
 * by an eng_s3_as_fn) says whose they are: the S3 sentence's advice names the
 * environment's variables, which that source does not use, so it names what
 * was given to s3() instead, else appends " (whose)". Returns rc. */
int rs_s3_own_error(const char *whose, int rc, char *err, size_t errlen);

/* The S3 config of a source given its own credentials in s3(): base (the
 * endpoint, region, retries) with base's own keys wiped and replaced by key,
 * secret and token (token may be NULL), or unsigned when nosign; *whose gets
 * the words rs_s3_own_error adds. 0, or -EINVAL with a sentence when one of
 * them is longer than an S3 config holds. */
struct s3_config;
int rs_s3_own_config(struct s3_config *out, const struct s3_config *base, bool nosign,
                     const char *key, const char *secret, const char *token, const char **whose,
                     char *err, size_t errlen);

#endif /* RINGCACHE_RANGESRC_H */
