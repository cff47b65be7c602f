/* SPDX-License-Identifier: Apache-2.0
 *
 * s3.h: the S3 client, the one way every part of ringcache talks to S3 (or any
 * S3-compatible store). Requests are signed with Signature V4 (written here, not
 * libcurl's), sent through libcurl's multi interface driven from the caller's
 * libevent loop, and retried with exponential backoff and full jitter on 5xx,
 * 503 SlowDown, resets and timeouts (never on other 4xx). Errors come back as an
 * s3_error whose message is a sentence naming the object, the cause and a fix.
 * Credentials never appear in logs, errors or process titles.
 *
 * Thread-safety:
 *  - s3_config_*, s3_etag_normalize, s3_url_parse and the s3_glob_* functions are
 *    pure and reentrant: any thread, no shared state.
 *  - An s3_client belongs to the event loop it was created on: call it only from
 *    the thread that runs that loop. Use one client per loop (per worker thread).
 *  - An s3_sync (the blocking wrapper) owns a private loop; one thread at a time
 *    may use a given s3_sync. Separate s3_sync objects are independent.
 *  - Completion callbacks of the async API always run from the event loop, never
 *    from inside the call that submitted the request.
 */
#ifndef RINGCACHE_S3_H
#define RINGCACHE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event_base;

#define S3_ETAG_MAX 130  /* normalised ETag, NUL included */
#define S3_MSG_MAX  512  /* an error sentence, NUL included */
#define S3_KEY_MAX  1024 /* S3's limit on a key, in bytes, NUL not included */

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

typedef struct s3_config {
    char endpoint[512]; /* "http://127.0.0.1:9000"; empty: AWS for `region` */
    char region[64];    /* signing region; default "us-east-1" */
    char access_key[128];
    char secret_key[128];
    char session_token[4096]; /* sent as x-amz-security-token when set */
    char ca_bundle[512];      /* PEM file of CAs for https; empty: system default */
    bool anonymous;           /* send unsigned requests (public buckets) */
    bool path_style;          /* http://host/bucket/key instead of bucket.host */
    bool verify_tls;          /* default true; false only for tests */
    int connect_timeout_ms;   /* per attempt; default 3000 */
    int request_timeout_ms;   /* per attempt, whole transfer stalls; default 30000 */
    int max_attempts;         /* first try included; default 5 */
    int retry_base_ms;        /* backoff base; default 100 */
    int retry_cap_ms;         /* one backoff sleep at most; default 5000 */
    int retry_budget_ms;      /* all attempts of one request; default 60000 */
    int max_connections;      /* per client (per event loop); default 64 */
} s3_config;

/* Fill `cfg` with defaults and nothing else (no environment). */
void s3_config_init(s3_config *cfg);

/* Apply the AWS tools' environment on top of `cfg`, in their order of precedence:
 * AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN (the two keys
 * together or not at all), else the shared credentials file
 * (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials) section AWS_PROFILE
 * (default "default"), else that profile's keys in the config file;
 * AWS_REGION, else AWS_DEFAULT_REGION, else the config file (AWS_CONFIG_FILE or
 * ~/.aws/config, section "profile NAME" or "default"); AWS_ENDPOINT_URL_S3,
 * else AWS_ENDPOINT_URL, else the profile's endpoint_url (http:// or https://;
 * a custom endpoint turns path_style on; trailing '/' dropped); AWS_CA_BUNDLE,
 * else the profile's ca_bundle. Fields with nothing to apply keep their value;
 * when no credentials are found access_key stays as it was (empty after
 * s3_config_init) and `anonymous` is NOT set: the caller decides. Missing files
 * are not errors; a profile named by AWS_PROFILE that is in neither file is.
 * Returns 0, or -EINVAL with a sentence in err (err may be NULL) naming the
 * variable, file or profile and the fix, never a secret value. */
int s3_config_from_env(s3_config *cfg, char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* Objects, errors, small pure helpers                                       */
/* ------------------------------------------------------------------------ */

typedef struct s3_object_info {
    char *key; /* owned by whatever returned the info */
    uint64_t size;
    char etag[S3_ETAG_MAX]; /* normalised (see s3_etag_normalize) */
    int64_t last_modified;  /* unix seconds, 0 if unknown */
} s3_object_info;

/* Result of a failed (or successful: code 0) request. */
typedef struct s3_error {
    int code;         /* 0, or -errno: -ENOENT (404), -EACCES (403),
                               -ESTALE (412 or an ETag that differs from the
                               version asked for), -ETIMEDOUT, -ECONNREFUSED,
                               -ECONNRESET, -EPROTO (malformed answer),
                               -ECANCELED, -EIO (other) */
    int http_status;  /* 0 when no response came */
    int attempts;     /* how many were made */
    char s3_code[64]; /* S3's <Code>, e.g. "SignatureDoesNotMatch" */
    char message[S3_MSG_MAX];
} s3_error;

/* Normalise an ETag as S3's HEAD, GET and List spell it (quoted, &quot;-escaped
 * already decoded by the XML parser, W/ prefix) into the bare value: white
 * space, a "W/" prefix and surrounding quotes (or literal &quot;) are peeled
 * until none is left, so normalising twice changes nothing. Writes at most cap bytes with the NUL (in and out may be the
 * same buffer); returns its length, -ENOSPC, or -EINVAL for NULL / cap 0. */
int s3_etag_normalize(const char *in, char *out, size_t cap);

/* Split "s3://bucket/key" into its parts (key may be empty, is not decoded).
 * Returns 0 or -EINVAL (not "s3://", a bucket name against S3's rules: 3-63 of
 * a-z 0-9 . -, letter or digit at both ends, no "..", not an IPv4 address, no
 * reserved prefix/suffix; a key over 1024 bytes) / -ENOSPC (a buffer). */
int s3_url_parse(const char *url, char *bucket, size_t bucket_cap, char *key, size_t key_cap);

/* Why s3_url_parse refuses url, as a sentence for a person: not "s3://", the
 * bucket name and the rule it breaks (upper case, length, a character, ...)
 * with S3's rules, or a key too long. Always NUL-terminates when cap > 0;
 * for a URL that parses it says so. Pure; any thread. */
void s3_url_explain(const char *url, char *why, size_t cap);

/* The one rule for keys that name another key once a server or proxy
 * normalises them: a key is refused when, after percent-decoding as often as
 * it decodes (%2e, %252E, ...), one of its segments between '/' or '\\' is
 * "." or ".." (also spelled with the full-width or one-dot-leader dot), or it
 * holds a NUL byte, or it is over 1024 bytes. S3 itself takes such keys
 * literally, but a tenant allowed "src/" must not read "src/../x" behind a
 * server that resolves it. Returns 0, or -EINVAL with one sentence in why
 * (may be NULL) naming the segment. Pure; any thread. Used by the cache node
 * (every request of a tenant), the CLI (always) and any front end. */
int s3_key_check(const char *key, size_t len, char *why, size_t cap);

/* Globs with the meanings ClickHouse's s3() gives them: `*` any run of
 * characters but '/', `**` any run including '/', `?` one character (one UTF-8
 * sequence) but '/', `{a,b,c}` alternatives (each may hold * ** ?, may be
 * empty; no nested braces; "{}" is an error), `{N..M}` integers: zero-padded to
 * max(len N, len M) digits when N or M is written with a leading zero
 * ("{001..010}"), else without leading zeros; N > M is the same set as M..N.
 * A lone '}' is a literal; there is no escape character. Matching costs
 * O(pattern tokens x key length) whatever the pattern (no backtracking).
 * s3_glob_create: 0, -EINVAL (unclosed or nested brace, empty braces, bad range,
 * pattern over 4096 bytes or 4096 alternatives) or -ENOMEM; *out is NULL on
 * error. s3_glob_prefix never returns NULL: every key a glob matches starts
 * with it. */
typedef struct s3_glob s3_glob;
int s3_glob_create(s3_glob **out, const char *pattern); /* -EINVAL on a bad one */
void s3_glob_destroy(s3_glob **g);
bool s3_glob_match(const s3_glob *g, const char *key);
const char *s3_glob_prefix(const s3_glob *g); /* literal part before the first wildcard */
bool s3_glob_has_wildcards(const s3_glob *g);

/* ------------------------------------------------------------------------ */
/* The asynchronous client                                                   */
/* ------------------------------------------------------------------------ */

typedef struct s3_client s3_client;

/* Create a client on `base` (borrowed; it must outlive the client). The config
 * is copied. Returns 0 or -errno (-EINVAL with a bad endpoint). */
int s3_client_create(s3_client **out, const s3_config *cfg, struct event_base *base);

/* Cancel every request in flight (each callback fires with -ECANCELED before
 * this returns) and free the client. Accepts NULL; sets *c to NULL. */
void s3_client_destroy(s3_client **c);

/* Requests in flight on this client (for draining and tests). */
size_t s3_client_inflight(const s3_client *c);

/* Counters since creation. */
typedef struct s3_client_stats {
    uint64_t requests; /* attempts sent */
    uint64_t retries;
    uint64_t failures; /* requests that ended with an error */
    uint64_t bytes_in;
    uint64_t bytes_out;
} s3_client_stats;
void s3_client_stats_get(const s3_client *c, s3_client_stats *out);

/* HEAD: size and version (ETag) of an object. info->key is NULL. */
typedef void (*s3_head_fn)(const s3_error *err, const s3_object_info *info, void *arg);
int s3_head(s3_client *c, const char *bucket, const char *key, s3_head_fn done, void *arg);

/* GET of a byte range. The body goes to `buf` (cap bytes; more is an error) or,
 * when on_data is set, to on_data as it arrives (return < 0 from it to abort
 * with that code). A retried GET resumes after the bytes already delivered,
 * pinned to the ETag of the first answer, so a caller never sees two versions. */
typedef int (*s3_data_fn)(const void *data, size_t len, void *arg);
typedef struct s3_get_args {
    const char *bucket;
    const char *key;
    uint64_t offset;
    uint64_t length;      /* 0: to the end of the object */
    const char *if_match; /* version the answer must have, or NULL */
    void *buf;
    size_t cap;
    s3_data_fn on_data;
    void *data_arg;
} s3_get_args;
typedef struct s3_get_result {
    uint64_t bytes;       /* delivered */
    uint64_t object_size; /* from Content-Range / Content-Length */
    char etag[S3_ETAG_MAX];
} s3_get_result;
typedef void (*s3_get_fn)(const s3_error *err, const s3_get_result *res, void *arg);
int s3_get(s3_client *c, const s3_get_args *a, s3_get_fn done, void *arg);

/* One page of ListObjectsV2. Everything in the page is owned by the page and
 * freed when the callback returns (copy what you keep). */
typedef struct s3_list_page {
    s3_object_info *objects;
    size_t n_objects;
    char **prefixes; /* CommonPrefixes, with a delimiter */
    size_t n_prefixes;
    bool truncated;
    char *next_token; /* NextContinuationToken, or NULL */
} s3_list_page;
typedef void (*s3_list_fn)(const s3_error *err, const s3_list_page *page, void *arg);
int s3_list(s3_client *c, const char *bucket, const char *prefix, const char *delimiter,
            const char *continuation_token, int max_keys, s3_list_fn done, void *arg);

/* ListObjectsV2 of keys after `start_after` (S3's start-after: keys sorting
 * strictly after it; NULL or "" lists from the start), one page of up to
 * max_keys, no delimiter. Same callback and ownership as s3_list. */
int s3_list_from(s3_client *c, const char *bucket, const char *prefix, const char *start_after,
                 int max_keys, s3_list_fn done, void *arg);

/* PUT of a buffer (borrowed until done fires). *etag in the callback. */
typedef void (*s3_put_fn)(const s3_error *err, const char *etag, void *arg);
int s3_put(s3_client *c, const char *bucket, const char *key, const void *data, size_t len,
           s3_put_fn done, void *arg);

/* Conditions on a write (PutObject, CompleteMultipartUpload), as AWS S3 has
 * them. Zero-initialised: no condition.
 *  - if_none_match: send `If-None-Match: *`; the write lands only if no object
 *    has the key. When one does, the request fails with code -EEXIST,
 *    http_status 412 and s3_code "PreconditionFailed" (never retried: a retry
 *    of a write that landed but whose answer was lost also gets -EEXIST, so a
 *    caller that must tell "mine" from "someone else's" tags its objects).
 *  - if_match: send `If-Match: "etag"`; the write lands only if the current
 *    object has that ETag: -ESTALE (412) when it differs, -ENOENT (404) when
 *    there is no object.
 * A 409 ConditionalRequestConflict (a concurrent conditional write to the
 * key) is retried like a 503. A store that ignores the headers writes
 * anyway: callers that rely on them probe the store first. */
typedef struct s3_write_cond {
    bool if_none_match;
    const char *if_match; /* ETag (quoted or not), or NULL */
} s3_write_cond;

/* s3_put with conditions (cond may be NULL: none; copied). */
int s3_put_cond(s3_client *c, const char *bucket, const char *key, const void *data, size_t len,
                const s3_write_cond *cond, s3_put_fn done, void *arg);

/* DELETE (a missing key is success, as in S3). */
typedef void (*s3_done_fn)(const s3_error *err, void *arg);
int s3_delete(s3_client *c, const char *bucket, const char *key, s3_done_fn done, void *arg);

/* Multipart upload primitives. upload_id is a NUL-terminated string. */
typedef void (*s3_mpu_create_fn)(const s3_error *err, const char *upload_id, void *arg);
int s3_mpu_create(s3_client *c, const char *bucket, const char *key, s3_mpu_create_fn done,
                  void *arg);
int s3_mpu_upload_part(s3_client *c, const char *bucket, const char *key, const char *upload_id,
                       int part_number, const void *data, size_t len, s3_put_fn done, void *arg);
int s3_mpu_complete(s3_client *c, const char *bucket, const char *key, const char *upload_id,
                    const char *const *part_etags, int n_parts, s3_put_fn done, void *arg);
/* s3_mpu_complete with conditions (cond may be NULL; copied). */
int s3_mpu_complete_cond(s3_client *c, const char *bucket, const char *key, const char *upload_id,
                         const char *const *part_etags, int n_parts, const s3_write_cond *cond,
                         s3_put_fn done, void *arg);
int s3_mpu_abort(s3_client *c, const char *bucket, const char *key, const char *upload_id,
                 s3_done_fn done, void *arg);

/* Any other request, for a server that relays S3 (the cache node's S3 API):
 * method GET, HEAD, PUT, POST or DELETE on bucket/key (key NULL: the bucket
 * itself; bucket "": the service, e.g. ListBuckets), with query parameters
 * (raw names and values, at most 16) and headers (at most 8, e.g.
 * x-amz-copy-source, Content-Type) that are sent and signed, and a body
 * (borrowed until done; PUT and POST without one send an empty body).
 * Retried as the other calls are. done gets the error as the other calls do
 * (code 0 for a 2xx) and, always, the response: S3's final status (0 when
 * none came), its body (NUL-terminated; a 2xx body up to 32 MiB, an error
 * document up to 64 KiB), the <Code> and <Message> of an <Error> document
 * (also one in a 200, as CompleteMultipartUpload and CopyObject may send),
 * "" otherwise, and the normalised ETag header ("" without one); all valid
 * during the call. -EINVAL for an unknown method or too many parameters. */
typedef struct s3_kv {
    const char *name;
    const char *value;
} s3_kv;
typedef struct s3_request_args {
    const char *method;
    const char *bucket;
    const char *key;
    const s3_kv *query;
    size_t n_query;
    const s3_kv *headers;
    size_t n_headers;
    const void *body;
    size_t body_len;
} s3_request_args;
typedef struct s3_response {
    int status;
    const char *body;
    size_t body_len;
    const char *s3_code;
    const char *s3_message;
    const char *etag;
} s3_response;
typedef void (*s3_request_fn)(const s3_error *err, const s3_response *resp, void *arg);
int s3_request(s3_client *c, const s3_request_args *a, s3_request_fn done, void *arg);

/* ------------------------------------------------------------------------ */
/* The blocking wrapper, for tools and tests                                 */
/* ------------------------------------------------------------------------ */

typedef struct s3_sync s3_sync;
int s3_sync_create(s3_sync **out, const s3_config *cfg);
void s3_sync_destroy(s3_sync **s);
s3_client *s3_sync_client(s3_sync *s);

/* Progress of a long transfer: bytes done of total (0 if unknown). */
typedef void (*s3_progress_fn)(uint64_t done, uint64_t total, void *arg);

int s3_sync_head(s3_sync *s, const char *bucket, const char *key, s3_object_info *info,
                 s3_error *err);
/* Range GET into fd at its current position (fd >= 0) or into buf. `parallel`
 * > 1 splits the range into parts of part_size fetched concurrently. Returns
 * bytes written or -errno (err filled). */
typedef struct s3_sync_get_args {
    const char *bucket;
    const char *key;
    uint64_t offset;
    uint64_t length; /* 0: to the end */
    const char *if_match;
    int fd; /* -1: use buf */
    void *buf;
    size_t cap;
    int parallel;       /* concurrent ranged requests; 1: one stream */
    uint64_t part_size; /* default 8 MiB */
    s3_progress_fn progress;
    void *progress_arg;
} s3_sync_get_args;
int64_t s3_sync_get(s3_sync *s, const s3_sync_get_args *a, s3_error *err);

/* Every object under `prefix` (all pages); fn returns < 0 to stop. */
typedef int (*s3_object_fn)(const s3_object_info *info, void *arg);
int s3_sync_list(s3_sync *s, const char *bucket, const char *prefix, s3_object_fn fn, void *arg,
                 s3_error *err);

/* Expand a glob over keys (see s3_glob_create): lists only the prefix before the
 * first wildcard, calls fn for each matching key. */
int s3_sync_glob(s3_sync *s, const char *bucket, const char *pattern, s3_object_fn fn, void *arg,
                 s3_error *err);

/* Upload `size` bytes of fd from offset 0: one PUT when small, else multipart
 * with part_size parts, `parallel` in flight, aborted on failure so no parts
 * are left behind. etag_out (S3_ETAG_MAX) may be NULL. */
typedef struct s3_sync_put_args {
    const char *bucket;
    const char *key;
    int fd; /* read with pread; -1: use data */
    const void *data;
    uint64_t size;
    uint64_t part_size; /* default 8 MiB; multipart when size > part_size */
    int parallel;       /* default 4 */
    s3_progress_fn progress;
    void *progress_arg;
    s3_write_cond cond; /* on the PUT, or on CompleteMultipartUpload */
} s3_sync_put_args;
int s3_sync_put(s3_sync *s, const s3_sync_put_args *a, char *etag_out, s3_error *err);

int s3_sync_delete(s3_sync *s, const char *bucket, const char *key, s3_error *err);

#endif /* RINGCACHE_S3_H */
