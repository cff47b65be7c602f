/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_xml.h: the XML documents of the S3 API: the answers it writes (errors,
 * ListObjectsV2 and ListObjects, ListBuckets, GetBucketLocation, multipart
 * Initiate / Complete / ListParts, DeleteObjects, CopyObject and
 * UploadPartCopy results) and the two request bodies it reads
 * (CompleteMultipartUpload, Delete).
 *
 * Writers append a whole document, with its XML declaration, to an s3a_buf
 * (Content-Type application/xml). Text is escaped (& < > " '); a byte XML 1.0
 * cannot carry (control characters but TAB, LF, CR) is written as a character
 * reference, which strict XML 1.0 parsers refuse: keys that hold them list
 * well only with encoding-type=url (awscli always asks for it). Timestamps are ISO 8601 with
 * milliseconds; ETags are written quoted. Result roots carry S3's namespace,
 * <Error> does not. A writer returns 0 or -ENOMEM (the buffer's oom).
 *
 * The request bodies are read with expat as they stream in (an upload's
 * Complete may list 10,000 parts): the client's response-side XML driver
 * (client/s3/s3_xml.c) reads a whole answer against its own element table, and
 * these are different documents read in pieces, so they have their own small
 * driver. A DOCTYPE is refused (no entities), nesting is capped, each text
 * is capped, the whole body is capped; anything else is 400 MalformedXML,
 * and the rules S3 checks on the contents (part order, counts) have S3's
 * codes.
 *
 * Thread-safety: writers are pure; a body parser belongs to its caller.
 * Fuzzed (tests/fuzz/s3api/fuzz_s3a_xmlbody.c).
 */
#ifndef RINGCACHE_S3A_XML_H
#define RINGCACHE_S3A_XML_H

#include "s3a.h"

#ifdef __cplusplus
extern "C" {
#endif

#define S3A_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

/* ---- answers ------------------------------------------------------------------ */

/* <Error><Code/><Message/>[extras]<Key/>?<BucketName/>?<Resource/>?<RequestId/>
 * <HostId/></Error>. key, bucket, resource may be NULL (omitted). */
int s3a_xml_error(s3a_buf *b, const s3a_error *err, const char *bucket, const char *key,
                  const char *resource, const char *request_id, const char *host_id);

typedef struct s3a_xml_owner {
    const char *id;
    const char *name;
} s3a_xml_owner;

typedef struct s3a_xml_bucket {
    const char *name;
    int64_t created_ms;
} s3a_xml_bucket;

int s3a_xml_list_buckets(s3a_buf *b, const s3a_xml_owner *owner, const s3a_xml_bucket *buckets,
                         size_t n);

/* <LocationConstraint>: empty for us-east-1, as S3 answers. */
int s3a_xml_location(s3a_buf *b, const char *region);

typedef struct s3a_xml_object {
    const char *key;
    int64_t size;
    int64_t mtime_ms;
    const char *etag;          /* bare or quoted */
    const char *storage_class; /* NULL: STANDARD */
} s3a_xml_object;

/* One page of a listing, V1 or V2. Strings may be NULL (element omitted,
 * except where S3 always writes one: Prefix, Marker for V1). */
typedef struct s3a_xml_list {
    bool v2;
    const char *bucket;
    const char *prefix;
    const char *delimiter;
    int max_keys;
    bool truncated;
    bool url_encode; /* encoding-type=url: keys, prefixes,
                                          delimiter, markers, start-after */
    /* V2 */
    const char *start_after;
    const char *continuation_token;
    const char *next_continuation_token;
    bool fetch_owner;
    /* V1 */
    const char *marker;
    const char *next_marker;
    const s3a_xml_owner *owner; /* V1 always, V2 with fetch_owner */
    const s3a_xml_object *objects;
    size_t n_objects;
    const char *const *prefixes; /* CommonPrefixes */
    size_t n_prefixes;
} s3a_xml_list;

int s3a_xml_list_objects(s3a_buf *b, const s3a_xml_list *l);

int s3a_xml_initiate_mpu(s3a_buf *b, const char *bucket, const char *key, const char *upload_id);
/* checksum / checksum_type (e.g. "abc=-3", "COMPOSITE") may be NULL. */
int s3a_xml_complete_mpu(s3a_buf *b, const char *location, const char *bucket, const char *key,
                         const char *etag, const char *checksum_label, const char *checksum,
                         const char *checksum_type);

typedef struct s3a_xml_part {
    int number;
    int64_t mtime_ms;
    const char *etag;
    int64_t size;
} s3a_xml_part;

typedef struct s3a_xml_parts {
    const char *bucket, *key, *upload_id;
    const s3a_xml_owner *owner;
    int part_number_marker, next_part_number_marker, max_parts;
    bool truncated;
    const s3a_xml_part *parts;
    size_t n_parts;
} s3a_xml_parts;

int s3a_xml_list_parts(s3a_buf *b, const s3a_xml_parts *p);

typedef struct s3a_xml_deleted {
    const char *key;
    const char *code; /* NULL: deleted; else the error's code */
    const char *message;
} s3a_xml_deleted;

/* quiet: only the errors, as S3 does for <Quiet>true</Quiet>. */
int s3a_xml_delete_result(s3a_buf *b, const s3a_xml_deleted *items, size_t n, bool quiet);

/* <CopyObjectResult> (part false) or <CopyPartResult> (UploadPartCopy). */
int s3a_xml_copy_result(s3a_buf *b, bool part, const char *etag, int64_t mtime_ms);

/* ---- request bodies --------------------------------------------------------------- */

typedef enum s3a_xmlbody_kind {
    S3A_BODY_COMPLETE_MPU, /* <CompleteMultipartUpload> */
    S3A_BODY_DELETE,       /* <Delete> */
} s3a_xmlbody_kind;

#define S3A_MPU_MAX_PARTS   10000
#define S3A_DELETE_MAX_KEYS 1000

typedef struct s3a_body_part {
    int number;
    char *etag;        /* bare: quotes and &quot; taken off */
    char *checksum[6]; /* by s3a_ck_alg (crc32 .. sha256), NULL if absent */
} s3a_body_part;

typedef struct s3a_body_object {
    char *key;
    char *version_id; /* NULL if absent */
} s3a_body_object;

typedef struct s3a_xmlbody s3a_xmlbody;

/* max_bytes: the most body accepted (0: 4 MiB; S3's own limit for these). */
int s3a_xmlbody_create(s3a_xmlbody **out, s3a_xmlbody_kind kind, size_t max_bytes);
void s3a_xmlbody_destroy(s3a_xmlbody **p);
/* 0, or < 0 with err (400 MalformedXML naming what and where). */
int s3a_xmlbody_feed(s3a_xmlbody *p, const void *data, size_t len, s3a_error *err);
/* The end of the body. 0, or < 0 with err: 400 MalformedXML (incomplete,
 * wrong root, a part without a number or ETag, no objects or more than
 * 1000), InvalidRequest ("You must specify at least one part"),
 * InvalidPartOrder (part numbers not ascending), InvalidArgument (a part
 * number outside 1..10000). */
int s3a_xmlbody_finish(s3a_xmlbody *p, s3a_error *err);
/* After a successful finish; borrowed from p. */
const s3a_body_part *s3a_xmlbody_parts(const s3a_xmlbody *p, size_t *n);
const s3a_body_object *s3a_xmlbody_objects(const s3a_xmlbody *p, size_t *n, bool *quiet);

#ifdef __cplusplus
}
#endif
#endif /* RINGCACHE_S3A_XML_H */
