/* SPDX-License-Identifier: Apache-2.0
 *
 * node_s3api_write.c: the S3 API's writes (node_s3api.h).
 *
 * PutObject is the lifecycle's write-through (node_req_put_cond): the body,
 * decoded and checked as it streams, goes to S3 (one PUT, or a multipart
 * upload past --part-size) and to a staging file; its last byte is handed
 * over only once every digest the client sent has matched, so a body that
 * fails its check is never completed at S3. After S3's answer each block is
 * placed on its ring owner under S3's ETag. If-None-Match: * and If-Match
 * ride on S3's PUT (or Complete) and S3's 412 is the answer.
 *
 * Multipart uploads the client drives are S3's own: Create, UploadPart,
 * Complete, Abort and ListParts go to S3 as they are. Each part this node
 * receives is written to an unlinked file of the data folder, sent to S3 from
 * there (mapped, not copied into memory) and kept (--s3-api-staging-max)
 * until the upload is completed; Complete then places the object's blocks
 * from the parts it kept, as a PUT does, when this node received every part
 * the Complete names. Why from the bytes seen rather than re-read from S3: a
 * 100 MiB upload would cost S3 a second 100 MiB of GETs for bytes that went
 * through this node a moment before. When the parts went to several nodes
 * (a client behind a Service spreads them), the blocks are filled on first
 * read instead.
 *
 * DeleteObject and DeleteObjects ask S3 for each object's version first,
 * then delete it at S3 and drop the blocks of that version on every node.
 * CopyObject is S3's, with both keys checked against the tenant.
 */
#include "node_s3api.h"

#include "ring.h"
#include "s3_sigv4.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define DELETE_PARALLEL 8

typedef struct del_item {
    struct ns3_write *wr;
    const char *key;            /* borrowed from the XML body */
    const char *code, *message; /* NULL: deleted */
    char etag[S3_ETAG_MAX];
    uint64_t size;
} del_item;

struct ns3_write {
    ns3_req *r;
    node_req lr; /* PutObject, Complete's placement */
    bool lr_active;
    char etag[S3_ETAG_MAX];
    /* UploadPart */
    int fd;
    uint64_t written;
    void *map;
    size_t map_len;
    bool part_sent;
    /* XML bodies */
    s3a_xmlbody *xml;
    char *complete; /* the Complete sent to S3 (borrowed by it until done) */
    /* DeleteObjects */
    del_item *items;
    size_t n_items, next_item, items_done;
    bool quiet;
};

static void write_op_done(ns3_req *r)
{
    struct ns3_write *wr = r->wr;
    if (wr->lr_active)
        node_req_cancel(&wr->lr); /* a PUT not acknowledged by S3 is aborted there */
}

static void write_op_free(ns3_req *r)
{
    struct ns3_write *wr = r->wr;
    if (wr->map && wr->map_len)
        munmap(wr->map, wr->map_len);
    if (wr->fd >= 0)
        close(wr->fd);
    s3a_xmlbody_destroy(&wr->xml);
    free(wr->complete);
    free(wr->items);
    free(wr);
    r->wr = NULL;
}

static struct ns3_write *write_new(ns3_req *r)
{
    struct ns3_write *wr = calloc(1, sizeof(*wr));
    if (!wr) {
        ns3_fail(r, 503, "SlowDown", "Please reduce your request rate. (out of memory)");
        return NULL;
    }
    wr->r = r;
    wr->fd = -1;
    r->wr = wr;
    r->op_done = write_op_done;
    r->op_free = write_op_free;
    return wr;
}

/* 200 with the ETag (and the checksum the client sent, verified). */
static void answer_etag(ns3_req *r, const char *etag)
{
    if (!r->h || r->answered)
        return;
    char q[S3_ETAG_MAX + 2];
    snprintf(q, sizeof(q), "\"%s\"", etag);
    httpd_resp_add_header(r->h, "ETag", q);
    const char *ck_header;
    char b64[S3A_CK_B64_MAX];
    if (ns3_body_checksum(r, &ck_header, b64))
        httpd_resp_add_header(r->h, ck_header, b64);
    ns3_send_empty(r, 200);
}

/* The body's size for a write: false after answering 411 / EntityTooLarge. */
static bool write_size(ns3_req *r, uint64_t *size)
{
    int64_t len = ns3_body_length(r);
    if (len < 0) {
        ns3_fail(r, 411, "MissingContentLength",
                 "You must provide the Content-Length HTTP "
                 "header (or x-amz-decoded-content-length for "
                 "an aws-chunked body).");
        return false;
    }
    if ((uint64_t)len > NS3_MAX_OBJECT) {
        ns3_fail(r, 400, "EntityTooLarge",
                 "Your proposed upload exceeds the maximum allowed object size.");
        return false;
    }
    *size = (uint64_t)len;
    return true;
}

/* The write's condition from If-None-Match / If-Match: false after
 * answering (If-None-Match other than "*", as S3). */
static bool write_cond(ns3_req *r, s3_write_cond *cond)
{
    memset(cond, 0, sizeof(*cond));
    const char *inm = ns3_header(r, "if-none-match");
    if (inm) {
        if (strcmp(inm, "*") != 0) {
            ns3_fail(r, 501, "NotImplemented",
                     "A header you provided implies functionality that is not implemented "
                     "(If-None-Match on a write takes only *)");
            return false;
        }
        cond->if_none_match = true;
    }
    cond->if_match = ns3_header(r, "if-match");
    return true;
}

/* Drops the blocks of a deleted version: here, and on every other member. */
static void drop_done(const cc_result *res, void *arg)
{
    (void)arg;
    if (res->code)
        node_log(NODE_LOG_WARN,
                 "msg=\"blocks of a deleted object not dropped on a peer\" "
                 "err=\"%s\"",
                 res->message);
}

static void drop_everywhere(node_worker *w, const bkey_object *obj)
{
    node *n = w->n;
    node__drop_object(w, obj);
    struct ring *ring = n->members ? membership_ring(n->members) : NULL;
    for (size_t i = 0; ring && i < ring_member_count(ring); i++) {
        const struct ring_member *m = ring_member_at(ring, i);
        if (!m || strcmp(m->id, n->conf.node_id) == 0)
            continue;
        cc_conn *cc = node__peer_conn(w, ring, m);
        rcp_drop_req d = {rcp_s(obj->tenant),
                          {rcp_s(obj->bucket), rcp_s(obj->key), rcp_s(obj->version), obj->size}};
        if (!cc || cc_drop(cc, &d, drop_done, NULL) < 0)
            node_log(NODE_LOG_WARN,
                     "msg=\"blocks of a deleted object not dropped on a peer\" "
                     "peer=%s bucket=%s key=\"%s\"",
                     m->id, obj->bucket, obj->key);
    }
    if (ring)
        ring_unref(&ring);
}

static const char *tenant_of(const ns3_req *r)
{
    return r->who.tenant ? ten_name(r->who.tenant) : "";
}

/* ---- PutObject --------------------------------------------------------------------------- */

static void put_answer(void *arg, const node_answer *a)
{
    struct ns3_write *wr = arg;
    ns3_req *r = wr->r;
    ns3_meta_forget(r->w->n, tenant_of(r), r->route.bucket, r->route.key);
    answer_etag(r, a->etag ? a->etag : "");
}

static void put_error(void *arg, int code, const char *sentence)
{
    struct ns3_write *wr = arg;
    ns3_fail_rcp(wr->r, code, sentence);
}

static void put_pause(void *arg, bool pause)
{
    struct ns3_write *wr = arg;
    ns3_pause_body(wr->r, pause);
}

static void lr_done(void *arg)
{
    struct ns3_write *wr = arg;
    ns3_req *r = wr->r;
    wr->lr_active = false;
    if (!r->answered && r->h)
        ns3_fail(r, 500, "InternalError", "We encountered an internal error. Please try again.");
    ns3_unref(r);
}

static const node_sink_ops put_ops = {NULL, NULL, put_answer, put_error, put_pause, lr_done};

static void put_data(ns3_req *r, const void *data, size_t len)
{
    struct ns3_write *wr = r->wr;
    if (wr->lr_active)
        node_req_put_data(&wr->lr, data, len, false);
}

static void put_end(ns3_req *r, bool ok)
{
    struct ns3_write *wr = r->wr;
    if (!ok) {
        if (r->h)
            ns3_send_error(r, &r->err); /* before the cancel's done() could answer */
        if (wr->lr_active)
            node_req_cancel(&wr->lr); /* nothing of it is completed at S3 */
        return;
    }
    if (wr->lr_active)
        node_req_put_data(&wr->lr, (const uint8_t *)"", 0, true);
}

void ns3_put_object(ns3_req *r)
{
    uint64_t size;
    s3_write_cond cond;
    if (!ns3_allowed(r, r->route.bucket, r->route.key, false) || !write_size(r, &size) ||
        !write_cond(r, &cond))
        return;
    struct ns3_write *wr = write_new(r);
    if (!wr)
        return;
    bkey_object obj;
    if (bkey_object_init(&obj, "", r->route.bucket, r->route.key, "", size) < 0) {
        ns3_fail(r, 400, "KeyTooLongError", "Your key is too long");
        return;
    }
    wr->lr_active = true;
    ns3_ref(r);
    node_req_put_cond(&wr->lr, r->w, &r->who, &obj,
                      cond.if_none_match || cond.if_match ? &cond : NULL,
                      &(node_sink){&put_ops, wr});
    if (wr->lr_active && !r->answered)
        ns3_read_body(r, size, put_data, put_end);
}

/* ---- UploadPart ------------------------------------------------------------------------ */

static void part_data(ns3_req *r, const void *data, size_t len)
{
    struct ns3_write *wr = r->wr;
    if (r->body_failed)
        return;
    if (pwrite(wr->fd, data, len, (off_t)wr->written) != (ssize_t)len) {
        r->body_failed = true;
        s3a_error_set(&r->err, 503, "SlowDown",
                      "Please reduce your request rate. (cache node %s cannot stage the part "
                      "in %s: the disk may be full)",
                      r->w->n->conf.node_id, r->w->n->conf.data_dir);
        return;
    }
    wr->written += len;
}

static void part_sent(const s3_error *err, const char *etag, void *arg)
{
    ns3_req *r = arg;
    struct ns3_write *wr = r->wr;
    if (wr->map && wr->map_len)
        munmap(wr->map, wr->map_len);
    wr->map = NULL;
    if (!err->code) {
        snprintf(wr->etag, sizeof(wr->etag), "%s", etag ? etag : "");
        ns3_part p = {r->route.part_number, wr->written, "", wr->fd};
        snprintf(p.etag, sizeof(p.etag), "%s", wr->etag);
        wr->fd = -1; /* the table's, or closed there */
        ns3_stage_part(r->w->n, r->route.upload_id, &p);
        answer_etag(r, wr->etag);
    } else if (r->h) {
        ns3_fail_s3(r, err);
    }
    ns3_unref(r);
}

static void part_end(ns3_req *r, bool ok)
{
    struct ns3_write *wr = r->wr;
    if (!ok) {
        ns3_send_error(r, &r->err);
        return;
    }
    const void *data = "";
    if (wr->written) {
        wr->map = mmap(NULL, wr->written, PROT_READ, MAP_SHARED, wr->fd, 0);
        if (wr->map == MAP_FAILED) {
            wr->map = NULL;
            ns3_fail(r, 503, "SlowDown",
                     "Please reduce your request rate. (cannot map the "
                     "staged part: %s)",
                     strerror(errno));
            return;
        }
        wr->map_len = wr->written;
        data = wr->map;
    }
    ns3_ref(r);
    int rc = s3_mpu_upload_part(r->s3, r->route.bucket, r->route.key, r->route.upload_id,
                                r->route.part_number, data, wr->written, part_sent, r);
    if (rc < 0) {
        s3_error e = {0};
        e.code = rc;
        snprintf(e.message, sizeof(e.message), "UploadPart: cannot ask S3: %s", strerror(-rc));
        part_sent(&e, NULL, r);
    }
}

void ns3_upload_part(ns3_req *r)
{
    uint64_t size;
    if (!ns3_allowed(r, r->route.bucket, r->route.key, false) || !write_size(r, &size))
        return;
    struct ns3_write *wr = write_new(r);
    if (!wr)
        return;
    char path[600];
    snprintf(path, sizeof(path), "%s/s3part-XXXXXX", r->w->n->conf.data_dir);
    wr->fd = mkstemp(path);
    if (wr->fd < 0) {
        ns3_fail(r, 503, "SlowDown",
                 "Please reduce your request rate. (cannot stage the part "
                 "in %s: %s)",
                 r->w->n->conf.data_dir, strerror(errno));
        return;
    }
    unlink(path); /* nothing is left behind by a crash */
    ns3_read_body(r, size, part_data, part_end);
}

/* ---- CreateMultipartUpload, AbortMultipartUpload ---------------------------------------------- */

static void created(const s3_error *err, const char *upload_id, void *arg)
{
    ns3_req *r = arg;
    if (r->h) {
        if (err->code) {
            ns3_fail_s3(r, err);
        } else {
            ns3_stage_begin(r->w->n, upload_id, tenant_of(r), r->route.bucket, r->route.key);
            const char *alg = ns3_header(r, "x-amz-checksum-algorithm");
            if (alg)
                httpd_resp_add_header(r->h, "x-amz-checksum-algorithm", alg);
            s3a_buf b = {0};
            s3a_xml_initiate_mpu(&b, r->route.bucket, r->route.key, upload_id);
            ns3_send_xml(r, 200, &b);
        }
    }
    ns3_unref(r);
}

void ns3_create_upload(ns3_req *r)
{
    if (!ns3_allowed(r, r->route.bucket, r->route.key, false))
        return;
    ns3_ref(r);
    int rc = s3_mpu_create(r->s3, r->route.bucket, r->route.key, created, r);
    if (rc < 0) {
        ns3_unref(r);
        ns3_fail(r, 500, "InternalError", "cannot ask S3: %s", strerror(-rc));
    }
}

static void aborted(const s3_error *err, void *arg)
{
    ns3_req *r = arg;
    if (r->h) {
        if (err->code)
            ns3_fail_s3(r, err);
        else
            ns3_send_empty(r, 204);
    }
    ns3_unref(r);
}

void ns3_abort_upload(ns3_req *r)
{
    if (!ns3_allowed(r, r->route.bucket, r->route.key, false))
        return;
    ns3_stage_drop(r->w->n, r->route.upload_id);
    ns3_ref(r);
    int rc = s3_mpu_abort(r->s3, r->route.bucket, r->route.key, r->route.upload_id, aborted, r);
    if (rc < 0) {
        ns3_unref(r);
        ns3_fail(r, 500, "InternalError", "cannot ask S3: %s", strerror(-rc));
    }
}

/* ---- XML bodies ---------------------------------------------------------------------------- */

static void xml_data(ns3_req *r, const void *data, size_t len)
{
    struct ns3_write *wr = r->wr;
    if (!r->body_failed && s3a_xmlbody_feed(wr->xml, data, len, &r->err) < 0)
        r->body_failed = true;
}

/* Reads the body as an XML document of kind into wr->xml, then end(r). */
static void read_xml(ns3_req *r, struct ns3_write *wr, s3a_xmlbody_kind kind, ns3_end_fn end)
{
    if (s3a_xmlbody_create(&wr->xml, kind, NS3_MAX_XML_BODY) < 0) {
        ns3_fail(r, 503, "SlowDown", "Please reduce your request rate. (out of memory)");
        return;
    }
    ns3_read_body(r, NS3_MAX_XML_BODY, xml_data, end);
}

/* ---- CompleteMultipartUpload --------------------------------------------------------------- */

/* The object's blocks from the parts kept here, in the order the Complete
 * names them. */
typedef struct place_src {
    node *n;
    ns3_upload *up;
    const ns3_part **order;
    uint64_t *offsets; /* of each part in the object; [n] = the size */
    size_t n_parts;
    uint64_t block_size;
} place_src;

static int place_read(void *arg, uint64_t index, uint8_t *buf, size_t len)
{
    place_src *ps = arg;
    uint64_t pos = index * ps->block_size, end = pos + len;
    size_t k = 0;
    while (k + 1 < ps->n_parts && ps->offsets[k + 1] <= pos)
        k++;
    while (pos < end && k < ps->n_parts) {
        const ns3_part *p = ps->order[k];
        uint64_t in = pos - ps->offsets[k];
        size_t take = (size_t)(p->size - in < end - pos ? p->size - in : end - pos);
        if (pread(p->fd, buf, take, (off_t)in) != (ssize_t)take)
            return -EIO;
        buf += take;
        pos += take;
        k++;
    }
    return pos == end ? 0 : -ENOENT;
}

static void place_release(void *arg)
{
    place_src *ps = arg;
    ns3_upload_free(ps->n, ps->up);
    free(ps->order);
    free(ps->offsets);
    free(ps);
}

/* The source of the blocks when every part the Complete names was kept here
 * with the ETag it names; NULL otherwise (the upload is freed then). */
static place_src *place_source(node *n, ns3_upload *up, const s3a_body_part *parts, size_t np)
{
    place_src *ps = up ? calloc(1, sizeof(*ps)) : NULL;
    if (ps) {
        ps->order = calloc(np ? np : 1, sizeof(*ps->order));
        ps->offsets = calloc(np + 1, sizeof(*ps->offsets));
    }
    if (!ps || !ps->order || !ps->offsets) {
        if (ps) {
            free(ps->order);
            free(ps->offsets);
            free(ps);
        }
        ns3_upload_free(n, up);
        return NULL;
    }
    ps->n = n;
    ps->up = up;
    ps->n_parts = np;
    ps->block_size = (uint64_t)n->conf.block_size;
    for (size_t i = 0; i < np; i++) {
        const ns3_part *found = NULL;
        char want[S3_ETAG_MAX];
        if (s3_etag_normalize(parts[i].etag, want, sizeof(want)) < 0)
            want[0] = '\0';
        for (size_t k = 0; k < up->n_parts && !found; k++)
            if (up->parts[k].number == parts[i].number && strcmp(up->parts[k].etag, want) == 0)
                found = &up->parts[k];
        if (!found) {
            place_release(ps);
            return NULL;
        }
        ps->order[i] = found;
        ps->offsets[i + 1] = ps->offsets[i] + found->size;
    }
    return ps;
}

static void placed_answer(void *arg, const node_answer *a)
{
    (void)a;
    struct ns3_write *wr = arg;
    ns3_req *r = wr->r;
    char loc[2048];
    const char *host = ns3_header(r, "host");
    snprintf(loc, sizeof(loc), "%s://%s/%s/%s", httpd_req_is_tls(r->h) ? "https" : "http",
             host ? host : "localhost", r->route.bucket, r->route.key);
    s3a_buf b = {0};
    s3a_xml_complete_mpu(&b, loc, r->route.bucket, r->route.key, wr->etag, NULL, NULL, NULL);
    ns3_send_xml(r, 200, &b);
}

static void placed_error(void *arg, int code, const char *sentence)
{
    struct ns3_write *wr = arg;
    ns3_fail_rcp(wr->r, code, sentence);
}

static const node_sink_ops place_ops = {NULL, NULL, placed_answer, placed_error, NULL, lr_done};

static void completed(ns3_req *r, const s3_error *err, const s3_response *resp)
{
    struct ns3_write *wr = r->wr;
    size_t len = 0;
    const char *etag = resp->status == 200 && !resp->s3_code[0]
                           ? ns3_xml_element(resp->body, resp->body + resp->body_len, "ETag", &len)
                           : NULL;
    if (!etag) {
        ns3_relay(r, err, resp);
        return;
    }
    char raw[S3_ETAG_MAX * 2];
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < sizeof(raw); i++) { /* &quot; as written by S3 */
        if (strncmp(etag + i, "&quot;", 6) == 0 && i + 6 <= len) {
            raw[k++] = '"';
            i += 5;
        } else {
            raw[k++] = etag[i];
        }
    }
    raw[k] = '\0';
    if (s3_etag_normalize(raw, wr->etag, sizeof(wr->etag)) < 0)
        wr->etag[0] = '\0';
    node *n = r->w->n;
    ns3_meta_forget(n, tenant_of(r), r->route.bucket, r->route.key);
    size_t np;
    const s3a_body_part *parts = s3a_xmlbody_parts(wr->xml, &np);
    place_src *ps = place_source(n, ns3_stage_take(n, r->route.upload_id), parts, np);
    bkey_object obj;
    if (!ps || !wr->etag[0] ||
        bkey_object_init(&obj, "", r->route.bucket, r->route.key, wr->etag,
                         ps->offsets[ps->n_parts]) < 0) {
        if (ps)
            place_release(ps);
        placed_answer(wr, NULL); /* the blocks are filled on first read */
        return;
    }
    wr->lr_active = true;
    ns3_ref(r);
    node_req_place(&wr->lr, r->w, &r->who, &obj, place_read, place_release, ps,
                   &(node_sink){&place_ops, wr});
}

/* The Complete sent to S3: the parts and their ETags, as S3 wants them. */
static char *complete_body(const s3a_body_part *parts, size_t n)
{
    s3a_buf b = {0};
    s3a_buf_adds(&b, "<CompleteMultipartUpload xmlns=\"" S3A_XMLNS "\">");
    for (size_t i = 0; i < n; i++) {
        char e[S3_ETAG_MAX];
        if (s3_etag_normalize(parts[i].etag, e, sizeof(e)) < 0 || strpbrk(e, "<>&\"")) {
            s3a_buf_free(&b);
            return NULL;
        }
        s3a_buf_printf(&b, "<Part><PartNumber>%d</PartNumber><ETag>\"%s\"</ETag></Part>",
                       parts[i].number, e);
    }
    s3a_buf_adds(&b, "</CompleteMultipartUpload>");
    if (b.oom) {
        s3a_buf_free(&b);
        return NULL;
    }
    return b.p;
}

static void complete_end(ns3_req *r, bool ok)
{
    struct ns3_write *wr = r->wr;
    if (!ok || s3a_xmlbody_finish(wr->xml, &r->err) < 0) {
        ns3_send_error(r, &r->err);
        return;
    }
    size_t np;
    const s3a_body_part *parts = s3a_xmlbody_parts(wr->xml, &np);
    char *body = wr->complete = complete_body(parts, np);
    if (!body) {
        ns3_fail(r, 400, "InvalidPart",
                 "One or more of the specified parts could not be found. "
                 "The part may not have been uploaded, or the specified "
                 "entity tag may not match the part's entity tag.");
        return;
    }
    s3_kv q[1] = {{"uploadId", r->route.upload_id}};
    s3_kv h[3];
    size_t nh = 0;
    h[nh++] = (s3_kv){"Content-Type", "application/xml"};
    const char *inm = ns3_header(r, "if-none-match"), *im = ns3_header(r, "if-match");
    if (inm)
        h[nh++] = (s3_kv){"If-None-Match", inm};
    if (im)
        h[nh++] = (s3_kv){"If-Match", im};
    s3_request_args a = {.method = "POST",
                         .bucket = r->route.bucket,
                         .key = r->route.key,
                         .query = q,
                         .n_query = 1,
                         .headers = h,
                         .n_headers = nh,
                         .body = body,
                         .body_len = strlen(body)};
    int rc = ns3_s3_request(r, &a, completed);
    if (rc < 0)
        ns3_fail(r, 500, "InternalError", "cannot ask S3: %s", strerror(-rc));
}

void ns3_complete_upload(ns3_req *r)
{
    s3_write_cond cond;
    if (!ns3_allowed(r, r->route.bucket, r->route.key, false) || !write_cond(r, &cond))
        return;
    struct ns3_write *wr = write_new(r);
    if (wr)
        read_xml(r, wr, S3A_BODY_COMPLETE_MPU, complete_end);
}

/* ---- DeleteObject(s) -------------------------------------------------------------------------- */

static void delete_next(struct ns3_write *wr);

static void item_deleted(const s3_error *err, void *arg)
{
    del_item *it = arg;
    struct ns3_write *wr = it->wr;
    ns3_req *r = wr->r;
    if (err->code) {
        it->code = err->code == -EACCES ? "AccessDenied" : "InternalError";
        it->message = err->code == -EACCES ? "Access Denied"
                                           : "We encountered an internal error. "
                                             "Please try again.";
    } else if (it->etag[0]) {
        bkey_object obj;
        if (bkey_object_init(&obj, tenant_of(r), r->route.bucket, it->key, it->etag, it->size) == 0)
            drop_everywhere(r->w, &obj);
    }
    ns3_meta_forget(r->w->n, tenant_of(r), r->route.bucket, it->key);
    wr->items_done++;
    delete_next(wr);
    ns3_unref(r);
}

static void item_headed(const s3_error *err, const s3_object_info *info, void *arg)
{
    del_item *it = arg;
    ns3_req *r = it->wr->r;
    if (!err->code && info) {
        snprintf(it->etag, sizeof(it->etag), "%s", info->etag);
        it->size = info->size;
    }
    if (s3_delete(r->s3, r->route.bucket, it->key, item_deleted, it) < 0) {
        s3_error e = {0};
        e.code = -EIO;
        item_deleted(&e, it); /* takes this call's reference */
        return;
    }
}

/* Starts the next deletes (DELETE_PARALLEL at once); answers when all are done. */
static void delete_next(struct ns3_write *wr)
{
    ns3_req *r = wr->r;
    while (wr->next_item < wr->n_items && wr->next_item - wr->items_done < DELETE_PARALLEL) {
        del_item *it = &wr->items[wr->next_item++];
        it->wr = wr;
        if (!ns3_may(r, r->route.bucket, it->key)) {
            it->code = "AccessDenied";
            it->message = "Access Denied";
            wr->items_done++;
            continue;
        }
        ns3_ref(r);
        if (s3_head(r->s3, r->route.bucket, it->key, item_headed, it) < 0) {
            s3_error e = {0};
            e.code = -EIO;
            item_headed(&e, NULL, it);
        }
    }
    if (wr->items_done < wr->n_items || wr->next_item < wr->n_items)
        return;
    if (r->route.op == S3A_OP_DELETE_OBJECT) {
        if (wr->items[0].code && strcmp(wr->items[0].code, "AccessDenied") == 0)
            ns3_fail(r, 403, "AccessDenied", "Access Denied");
        else if (wr->items[0].code)
            ns3_fail(r, 500, "InternalError", "%s", wr->items[0].message);
        else
            ns3_send_empty(r, 204);
        return;
    }
    s3a_xml_deleted *d = calloc(wr->n_items ? wr->n_items : 1, sizeof(*d));
    if (!d) {
        ns3_fail(r, 503, "SlowDown", "Please reduce your request rate. (out of memory)");
        return;
    }
    for (size_t i = 0; i < wr->n_items; i++)
        d[i] = (s3a_xml_deleted){wr->items[i].key, wr->items[i].code, wr->items[i].message};
    s3a_buf b = {0};
    s3a_xml_delete_result(&b, d, wr->n_items, wr->quiet);
    free(d);
    ns3_send_xml(r, 200, &b);
}

void ns3_delete_object(ns3_req *r)
{
    if (!ns3_allowed(r, r->route.bucket, r->route.key, false))
        return;
    struct ns3_write *wr = write_new(r);
    if (!wr)
        return;
    wr->items = calloc(1, sizeof(*wr->items));
    if (!wr->items) {
        ns3_fail(r, 503, "SlowDown", "Please reduce your request rate. (out of memory)");
        return;
    }
    wr->items[0].key = r->route.key;
    wr->n_items = 1;
    delete_next(wr);
}

static void delete_end(ns3_req *r, bool ok)
{
    struct ns3_write *wr = r->wr;
    if (!ok || s3a_xmlbody_finish(wr->xml, &r->err) < 0) {
        ns3_send_error(r, &r->err);
        return;
    }
    size_t n;
    const s3a_body_object *objs = s3a_xmlbody_objects(wr->xml, &n, &wr->quiet);
    wr->items = calloc(n ? n : 1, sizeof(*wr->items));
    if (!wr->items) {
        ns3_fail(r, 503, "SlowDown", "Please reduce your request rate. (out of memory)");
        return;
    }
    for (size_t i = 0; i < n; i++)
        wr->items[i].key = objs[i].key;
    wr->n_items = n;
    delete_next(wr);
}

void ns3_delete_objects(ns3_req *r)
{
    bool summed = ns3_header(r, "content-md5") != NULL;
    for (size_t i = 0; i < r->nh && !summed; i++)
        summed = s3a_checksum_by_header(r->hdr[i].name) != S3A_CK_NONE;
    if (!summed) {
        ns3_fail(r, 400, "InvalidRequest", "Missing required header for this request: Content-MD5");
        return;
    }
    struct ns3_write *wr = write_new(r);
    if (wr)
        read_xml(r, wr, S3A_BODY_DELETE, delete_end);
}

/* ---- CopyObject ------------------------------------------------------------------------------ */

static void copied(ns3_req *r, const s3_error *err, const s3_response *resp)
{
    if (resp->status == 200 && !resp->s3_code[0])
        ns3_meta_forget(r->w->n, tenant_of(r), r->route.bucket, r->route.key);
    ns3_relay(r, err, resp);
}

void ns3_copy_object(ns3_req *r)
{
    char sb[S3A_BUCKET_MAX + 1];
    char *sk = NULL, *vid = NULL;
    if (s3a_copy_source_parse(ns3_header(r, "x-amz-copy-source"), sb, &sk, &vid, &r->err) < 0) {
        ns3_send_error(r, &r->err);
        return;
    }
    if (vid) {
        ns3_fail(r, 501, "NotImplemented",
                 "Copying a given versionId is not served through the "
                 "cache: copy the current version");
    } else if (ns3_allowed(r, sb, sk, false) &&
               ns3_allowed(r, r->route.bucket, r->route.key, false)) {
        char src[S3A_BUCKET_MAX + BKEY_KEY_MAX + 4];
        snprintf(src, sizeof(src), "%s/%s", sb, sk);
        char *enc = s3__uri_encode(src, strlen(src), true);
        static const char *const pass[] = {"x-amz-metadata-directive",
                                           "content-type",
                                           "x-amz-copy-source-if-match",
                                           "x-amz-copy-source-if-none-match",
                                           "x-amz-copy-source-if-modified-since",
                                           "x-amz-copy-source-if-unmodified-since"};
        s3_kv h[8];
        size_t nh = 0;
        h[nh++] = (s3_kv){"x-amz-copy-source", enc ? enc : ""};
        for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++) {
            const char *v = ns3_header(r, pass[i]);
            if (v)
                h[nh++] = (s3_kv){pass[i], v};
        }
        s3_request_args a = {.method = "PUT",
                             .bucket = r->route.bucket,
                             .key = r->route.key,
                             .headers = h,
                             .n_headers = nh};
        int rc = enc ? ns3_s3_request(r, &a, copied) : -ENOMEM;
        if (rc < 0)
            ns3_fail(r, 500, "InternalError", "cannot ask S3: %s", strerror(-rc));
        free(enc);
    }
    free(sk);
    free(vid);
}
