/* SPDX-License-Identifier: Apache-2.0
 *
 * node_s3api.h: what the files of the node's S3 API front end share. The
 * front end is an HTTP server (client/http/httpd.h) on every worker loop
 * beside the protocol's listener, composed of the S3 API's pure pieces
 * (cached/s3api/: routing, signatures, aws-chunked, XML) and the request
 * lifecycle (node_req.h), as node_conn.c is for the protocol:
 *
 *   node_s3api.c        the listeners, one request's head: route, verify,
 *                       tenant, dispatch; errors as S3's XML; the body reader
 *                       (aws-chunked, SHA-256, Content-MD5, x-amz-checksum-*);
 *                       the metrics
 *   node_s3api_get.c    GetObject / HeadObject: the object's version (a HEAD,
 *                       kept for --s3-api-meta-ttl), conditionals and Range,
 *                       then its blocks in order, from this node's store or
 *                       fills, from their owners over the protocol, or S3
 *   node_s3api_write.c  PutObject through the lifecycle's write-through;
 *                       multipart uploads (parts staged here, blocks placed
 *                       after Complete); DeleteObject(s), CopyObject
 *   node_s3api_pass.c   what S3 answers as it is: the listings, ListBuckets,
 *                       HeadBucket, ListParts, ListMultipartUploads
 *   node_s3api_meta.c   the version cache and the table of staged uploads,
 *                       shared by the workers
 *
 * Threads: a request belongs to the worker whose loop accepted its
 * connection; everything here runs on that thread, except the version cache
 * and the staging table (one mutex each) that every worker shares.
 */
#ifndef RINGCACHE_NODE_S3API_H
#define RINGCACHE_NODE_S3API_H

#include "httpd.h"
#include "node_int.h"
#include "s3a_auth.h"
#include "s3a_checksum.h"
#include "s3a_chunked.h"
#include "s3a_route.h"
#include "s3a_xml.h"

#define NS3_MAX_HEADERS  128
#define NS3_MAX_XML_BODY (4u << 20)   /* Complete and Delete bodies, as S3 */
#define NS3_MAX_OBJECT   (5ull << 30) /* one PutObject or UploadPart, as S3 */

typedef struct ns3_req ns3_req;
typedef struct ns3_get ns3_get;

/* What one request's body is decoded and checked with (node_s3api.c). */
typedef void (*ns3_data_fn)(ns3_req *r, const void *data, size_t len);
/* The body has ended: ok, or not with r->err set (a digest, the framing). */
typedef void (*ns3_end_fn)(ns3_req *r, bool ok);

/* One S3 API request. Referenced by the HTTP request (until its done
 * callback) and by each asynchronous call made for it; freed with the last. */
struct ns3_req {
    node_worker *w;
    httpd_req *h; /* NULL once the HTTP request is over */
    int refs;
    char id[17]; /* x-amz-request-id */
    uint64_t t0_us;
    s3a_route route;
    bool routed;
    s3a_header hdr[NS3_MAX_HEADERS];
    size_t nh;
    s3a_auth auth;
    node_caller who; /* the tenant (NULL without tenants) */
    s3_client *s3;   /* the tenant's S3 credentials, or the node's */
    int status;      /* of the answer sent */
    bool answered;
    s3a_error err;

    /* the body */
    ns3_data_fn on_data;
    ns3_end_fn on_end;
    s3a_chunked *dec;
    void *sha; /* EVP_MD_CTX of a signed payload's SHA-256 */
    s3a_checksum md5, ck;
    s3a_ck_alg ck_alg;
    const char *ck_value;
    uint64_t body_bytes, body_max;
    bool body_failed, body_over;

    /* the operation's own state: one of these */
    ns3_get *get;
    struct ns3_write *wr;
    struct ns3_pass *pass;
    void (*op_done)(ns3_req *r); /* the HTTP request is over: cancel what runs */
    void (*op_free)(ns3_req *r); /* the last reference went */
};

/* ---- node_s3api.c ---- */
void ns3_ref(ns3_req *r);
void ns3_unref(ns3_req *r);
const char *ns3_header(const ns3_req *r, const char *name);
/* Answers the error as S3 does (XML with the request id; status and the
 * x-amz-error-code header only for a HEAD). Nothing when already answered or
 * the client is gone. */
void ns3_send_error(ns3_req *r, const s3a_error *e);
__attribute__((format(printf, 4, 5))) void ns3_fail(ns3_req *r, int status, const char *code,
                                                    const char *fmt, ...);
/* The lifecycle's error (RCP_E_*, its sentence) as S3's. */
void ns3_fail_rcp(ns3_req *r, int rcp_code, const char *sentence);
/* An S3 client's failure: S3's own status and code when it answered, else
 * 503 / 500 naming this node. */
void ns3_fail_s3(ns3_req *r, const s3_error *e);
/* Sets the common headers (request id, ...) on the answer about to start. */
void ns3_common_headers(ns3_req *r);
/* A whole XML answer (b freed). */
void ns3_send_xml(ns3_req *r, int status, s3a_buf *b);
void ns3_send_empty(ns3_req *r, int status);
/* May the caller reach bucket/key (key a listing's prefix when prefix)? false
 * after answering AccessDenied. */
bool ns3_allowed(ns3_req *r, const char *bucket, const char *key, bool prefix);
/* The same without an answer (one key of DeleteObjects). */
bool ns3_may(ns3_req *r, const char *bucket, const char *key);
/* The text of the first <tag>...</tag> in [p, end) of an S3-written
 * document (no attributes, no nesting of the same tag), or NULL. */
const char *ns3_xml_element(const char *p, const char *end, const char *tag, size_t *len);
/* Reads the request's body through the decoders and checks; on_data gets the
 * decoded bytes, on_end the verdict. max: the most decoded bytes taken. */
void ns3_read_body(ns3_req *r, uint64_t max, ns3_data_fn on_data, ns3_end_fn on_end);
void ns3_pause_body(ns3_req *r, bool pause);
/* The decoded body's length when the client said it (Content-Length, or
 * x-amz-decoded-content-length for aws-chunked); -1 when it did not. */
int64_t ns3_body_length(const ns3_req *r);
/* Whether the body is aws-chunked. */
bool ns3_body_chunked(const ns3_req *r);
/* The checksum to echo after a good body (header name, base64), or false. */
bool ns3_body_checksum(const ns3_req *r, const char **header, char b64[S3A_CK_B64_MAX]);
/* Counts what was served to a GET, by where it came from. */
enum { NS3_SRC_RAM, NS3_SRC_SSD, NS3_SRC_PEER, NS3_SRC_S3, NS3_SRC__COUNT };
void ns3_count_bytes(node_worker *w, int source, uint64_t bytes);
/* Counts bytes a GET asked for ahead of what it sends. */
void ns3_count_readahead(node_worker *w, uint64_t bytes);
int64_t ns3_now_ms(void);

/* ---- node_s3api_get.c ---- */
void ns3_get_object(ns3_req *r, bool head);

/* ---- node_s3api_write.c ---- */
void ns3_put_object(ns3_req *r);
void ns3_upload_part(ns3_req *r);
void ns3_create_upload(ns3_req *r);
void ns3_complete_upload(ns3_req *r);
void ns3_abort_upload(ns3_req *r);
void ns3_delete_object(ns3_req *r);
void ns3_delete_objects(ns3_req *r);
void ns3_copy_object(ns3_req *r);

/* ---- node_s3api_pass.c ---- */
void ns3_list(ns3_req *r); /* ListObjects(V2), ListMultipartUploads, ListParts */
void ns3_list_buckets(ns3_req *r);
void ns3_head_bucket(ns3_req *r);
/* Sends a request to S3 with the caller's credentials, done with S3's answer
 * (the request holds a reference meanwhile; done is not called when the client
 * has gone). */
typedef void (*ns3_s3_fn)(ns3_req *r, const s3_error *err, const s3_response *resp);
int ns3_s3_request(ns3_req *r, const s3_request_args *a, ns3_s3_fn done);
/* S3's answer relayed: its body for a 2xx, its error as ours otherwise. */
void ns3_relay(ns3_req *r, const s3_error *err, const s3_response *resp);

/* ---- node_s3api_meta.c: the version cache ---- */
typedef struct ns3_meta {
    uint64_t size;
    char etag[S3_ETAG_MAX];
    int64_t last_modified;
} ns3_meta;
int ns3_meta_setup(node *n);
void ns3_meta_teardown(node *n);
/* true with *m when the cache has tenant/bucket/key, younger than the TTL. */
bool ns3_meta_get(node *n, const char *tenant, const char *bucket, const char *key, ns3_meta *m);
void ns3_meta_put(node *n, const char *tenant, const char *bucket, const char *key,
                  const ns3_meta *m);
void ns3_meta_forget(node *n, const char *tenant, const char *bucket, const char *key);

/* ---- node_s3api_meta.c: sequential reads and the read-ahead budget ---- */
/* Whether a GET of blocks [first, last] of obj (its version set) goes on from
 * where an earlier GET of the same version ended (a client reading it range
 * after range); remembers where the next one would start. */
bool ns3_seq_note(node *n, const bkey_object *obj, uint64_t first, uint64_t last);
/* Takes bytes of --s3-api-readahead-max: false (nothing taken) past it. */
bool ns3_ra_reserve(node *n, uint64_t bytes);
void ns3_ra_release(node *n, uint64_t bytes);
/* The bytes taken now, and the most ever taken at once. */
int64_t ns3_ra_inflight(const node *n);
int64_t ns3_ra_peak(const node *n);

/* ---- node_s3api_meta.c: the staged parts of multipart uploads ---- */
typedef struct ns3_part {
    int number;
    uint64_t size;
    char etag[S3_ETAG_MAX];
    int fd; /* an unlinked file in the data folder */
} ns3_part;
typedef struct ns3_upload {
    char id[1024];
    char tenant[BKEY_TENANT_MAX + 1], bucket[BKEY_BUCKET_MAX + 1], key[BKEY_KEY_MAX + 1];
    int64_t last_ms;
    ns3_part *parts; /* by number, ascending */
    size_t n_parts, cap_parts;
    uint64_t bytes;
} ns3_upload;
/* Remembers an upload S3 created (its parts may then be kept here). */
void ns3_stage_begin(node *n, const char *id, const char *tenant, const char *bucket,
                     const char *key);
/* Keeps part p (its fd taken: closed here when it is not kept, or replaced)
 * when the upload is known here and --s3-api-staging-max has room. */
void ns3_stage_part(node *n, const char *id, const ns3_part *p);
/* Takes the upload out of the table (NULL: unknown here); free it with
 * ns3_upload_free. */
ns3_upload *ns3_stage_take(node *n, const char *id);
void ns3_upload_free(node *n, ns3_upload *u);
/* Forgets an upload (aborted). */
void ns3_stage_drop(node *n, const char *id);

/* ---- node.c's module ---- */
int node_s3api_setup(node *n, char *err, size_t errlen);
void node_s3api_teardown(node *n);
/* node_worker.c: the drain, and the end on the worker's own thread. */
void node__s3api_stop(node_worker *w);
bool node__s3api_busy(node_worker *w);
void node__s3api_exit(node_worker *w);

#endif /* RINGCACHE_NODE_S3API_H */
