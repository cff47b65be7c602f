/* SPDX-License-Identifier: Apache-2.0
 *
 * tenants.h: who may read what. A tenants file maps a token (what a client
 * sends in HELLO) to a tenant: its name, the S3 buckets and key prefixes it may
 * read and write, and optionally the S3 credentials used for its fills.
 *
 *   # one section per tenant
 *   [tenant analytics]
 *   token = 9f2c1e...                       # at least 16 characters, unique
 *   allow = s3://bucket-a/prefix/ s3://bucket-b/   # space- or comma-separated;
 *   allow = s3://bucket-c                   # more allow lines add to the list
 *   aws_access_key_id = AKIA...             # optional, with the secret: this
 *   aws_secret_access_key = ...             # tenant's fills use these instead
 *   aws_session_token = ...                 # of the node's (optional)
 *   s3api_access_key_id = AKRC...           # optional: S3 API clients (awscli,
 *   s3api_secret_access_key = ...           # boto3, ...) signing with these are
 *                                           # this tenant
 *   public = false                          # true: anonymous S3 API reads
 *                                           # (GET, HEAD, listings) are served
 *                                           # as this tenant
 *
 * A tenant needs a token, S3 API keys, or public = true (a way in).
 * Grammar: the config file's (config.h, cfg_split_line): `key = value`, '#'
 * comments at the start of a line or after whitespace, values optionally in
 * double quotes (\" \\ \n \t \r escapes). Section names are
 * [A-Za-z0-9._-]{1,64}. "s3://bucket/" or "s3://bucket" is the whole bucket;
 * "s3://bucket/logs/" every key starting with "logs/" (a plain prefix, as S3
 * and IAM use them: "s3://b/logs" also matches "logs-old/x"). No wildcards.
 *
 * Secrets: tokens are kept only as SHA-256 digests and compared in constant
 * time; no message ever contains a token or an S3 secret (they name the
 * tenant and the line). Credentials are wiped when the set is destroyed.
 *
 * A ten_set owns its tenants, their digests, prefixes and credentials; a
 * ten_tenant pointer is valid as long as its set.
 *
 * Thread-safety: a ten_set is immutable after ten_load()/ten_parse(): any
 * number of threads may call ten_find(), ten_allows() and the accessors at
 * once. ten_destroy() only when no thread uses the set or its tenants.
 */
#ifndef RINGCACHE_TENANTS_H
#define RINGCACHE_TENANTS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ten_set ten_set;
typedef struct ten_tenant ten_tenant;

#define TEN_TOKEN_MIN 16
#define TEN_TOKEN_MAX 256
#define TEN_MAX_FILE  (4u << 20)

/* Reads and parses the tenants file at path. Returns 0, or a negative errno
 * with one sentence in err (may be NULL) naming path:line and the fix: -EINVAL
 * for a bad file (unknown key, key outside a section, missing token or allow,
 * token shorter than TEN_TOKEN_MIN, duplicate tenant name or token, a bad
 * allow entry, a secret without its access key...), -EFBIG over TEN_MAX_FILE,
 * the errno of opening or reading it, -ENOMEM. A file with no tenant is an
 * error (-EINVAL). */
int ten_load(ten_set **out, const char *path, char *err, size_t errlen);

/* The same from text in memory (len bytes; a NUL byte is an error); source
 * names it in messages ("tenants file /etc/ringcache/tenants"). For tests and
 * the fuzz target. */
int ten_parse(ten_set **out, const char *text, size_t len, const char *source, char *err,
              size_t errlen);

/* Frees the set, wiping tokens and credentials. Accepts NULL and *t == NULL;
 * sets *t to NULL. */
void ten_destroy(ten_set **t);

/* The tenant whose token is token[0..len), or NULL. Runs in time independent
 * of which tenant matches and of the token's bytes (one SHA-256 of the token,
 * then CRYPTO_memcmp against every tenant's digest). t may be NULL. */
const ten_tenant *ten_find(const ten_set *t, const char *token, size_t len);

/* true when token[0..len) equals want[0..wlen) (the peer token): compares
 * SHA-256 digests with CRYPTO_memcmp, so the time depends neither on where
 * the bytes differ nor on the lengths. An empty want matches nothing. */
bool ten_token_equal(const char *want, size_t wlen, const char *token, size_t len);

/* true when the address is on this host's loopback (127.0.0.0/8, ::1, or
 * ::ffff:127.x.y.z): whom an open node (no tenants, no --allow-anonymous)
 * serves. The text form takes an IP address as --listen spells it; anything
 * that does not parse is not loopback. */
struct sockaddr;
bool ten_addr_is_loopback(const struct sockaddr *sa);
bool ten_addr_text_is_loopback(const char *ip);

/* true if the tenant may access key[0..klen) of bucket[0..blen): an allow
 * entry names this bucket exactly and its prefix starts the key. NULL tenant:
 * false. */
bool ten_allows(const ten_tenant *t, const char *bucket, size_t blen, const char *key, size_t klen);

/* The tenant's name (the section's). */
const char *ten_name(const ten_tenant *t);

/* Credentials for this tenant's S3 fills; NULL when the tenant uses the node's
 * own (no aws_access_key_id in its section). The session token is NULL when
 * not given. The secret is non-NULL whenever the access key is. */
const char *ten_access_key(const ten_tenant *t);
const char *ten_secret_key(const ten_tenant *t);
const char *ten_session_token(const ten_tenant *t);

/* The S3 API's credentials. ten_find_s3api_key: the tenant whose
 * s3api_access_key_id is access_key (NULL: none; the ids are not secret).
 * ten_s3api_secret: its secret, NULL when the tenant has no S3 API keys; kept
 * in clear because a SigV4 signature is checked by computing it. */
const ten_tenant *ten_find_s3api_key(const ten_set *t, const char *access_key);
const char *ten_s3api_secret(const ten_tenant *t);
/* true for `public = true`: the S3 API serves anonymous reads as it. */
bool ten_public(const ten_tenant *t);
/* The tenant named name[0..len), or NULL (a peer names the tenant it reads
 * for). */
const ten_tenant *ten_find_name(const ten_set *t, const char *name, size_t len);
/* true when an allow entry names this bucket (with any prefix): the bucket's
 * own operations (HeadBucket, its place in ListBuckets). */
bool ten_allows_bucket(const ten_tenant *t, const char *bucket, size_t blen);
/* The allow entries' buckets, by index (a bucket listed with two prefixes
 * comes twice): ten_bucket_at NULL past ten_bucket_count. */
size_t ten_bucket_count(const ten_tenant *t);
const char *ten_bucket_at(const ten_tenant *t, size_t i);

/* Number of tenants, and the i-th in file order (i < ten_count; else NULL):
 * a stable index for per-tenant state such as an S3 client per worker. */
size_t ten_count(const ten_set *t);
const ten_tenant *ten_at(const ten_set *t, size_t i);

#endif /* RINGCACHE_TENANTS_H */
