/* SPDX-License-Identifier: Apache-2.0
 *
 * proto.c: encoding and parsing of the ringcache wire protocol (proto.h). Bytes
 * come from the network, so every read goes through a bounded cursor that fails
 * instead of reading past the end, every string is checked against its limit,
 * and a body with bytes left over after its last field is rejected. This file
 * is fuzzed (tests/fuzz/proto).
 */
#include "proto.h"

#include <errno.h>
#include <string.h>

/* ---- little-endian cursors ------------------------------------------------ */

typedef struct rd {
    const uint8_t *p;
    size_t left;
    bool bad;
} rd;

static uint64_t rd_uint(rd *r, int n)
{
    if (r->bad || r->left < (size_t)n) {
        r->bad = true;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    r->left -= (size_t)n;
    return v;
}

static rcp_str rd_str(rd *r, uint16_t max)
{
    rcp_str s = {"", 0};
    uint16_t n = (uint16_t)rd_uint(r, 2);
    if (r->bad || n > max || r->left < n) {
        r->bad = true;
        return s;
    }
    s.p = (const char *)r->p;
    s.len = n;
    r->p += n;
    r->left -= n;
    return s;
}

static int rd_end(const rd *r)
{
    return r->bad || r->left ? -EBADMSG : 0;
}

typedef struct wr {
    uint8_t *p;
    size_t left;
    size_t n;
    bool full;
} wr;

static void wr_uint(wr *w, uint64_t v, int n)
{
    if (w->full || w->left < (size_t)n) {
        w->full = true;
        return;
    }
    for (int i = 0; i < n; i++)
        w->p[i] = (uint8_t)(v >> (8 * i));
    w->p += n;
    w->left -= (size_t)n;
    w->n += (size_t)n;
}

static void wr_bytes(wr *w, const void *b, size_t n)
{
    if (w->full || w->left < n) {
        w->full = true;
        return;
    }
    if (n)
        memcpy(w->p, b, n);
    w->p += n;
    w->left -= n;
    w->n += n;
}

static void wr_str(wr *w, rcp_str s)
{
    wr_uint(w, s.len, 2);
    wr_bytes(w, s.p, s.len);
}

static int wr_end(const wr *w)
{
    return w->full ? -ENOSPC : (int)w->n;
}

/* ---- names ---------------------------------------------------------------- */

const char *rcp_err_name(int code)
{
    switch (code) {
    case RCP_E_BAD_REQUEST: return "bad_request";
    case RCP_E_UNKNOWN_OP: return "unknown_op";
    case RCP_E_UNAUTHORIZED: return "unauthorized";
    case RCP_E_FORBIDDEN: return "forbidden";
    case RCP_E_NOT_FOUND: return "not_found";
    case RCP_E_VERSION_CHANGED: return "version_changed";
    case RCP_E_S3: return "s3_error";
    case RCP_E_TOO_LARGE: return "too_large";
    case RCP_E_BUSY: return "busy";
    case RCP_E_CANCELED: return "canceled";
    case RCP_E_INTERNAL: return "internal";
    case RCP_E_TIMEOUT: return "timeout";
    case RCP_E_PROTOCOL: return "protocol";
    case RCP_E_NOT_CACHED: return "not_cached";
    case RCP_E_VERSION: return "no_common_version";
    case RCP_E_UPSTREAM: return "upstream_failed";
    default: return "unknown_error";
    }
}

const char *rcp_op_name(int op)
{
    switch (op) {
    case RCP_OP_HELLO: return "HELLO";
    case RCP_OP_GET: return "GET";
    case RCP_OP_DROP: return "DROP";
    case RCP_OP_HEAD: return "HEAD";
    case RCP_OP_PUT: return "PUT";
    case RCP_OP_PUT_DATA: return "PUT_DATA";
    case RCP_OP_PUT_BLOCK: return "PUT_BLOCK";
    case RCP_OP_WARM: return "WARM";
    case RCP_OP_STATS: return "STATS";
    case RCP_OP_PING: return "PING";
    case RCP_OP_CANCEL: return "CANCEL";
    case RCP_OP_ERROR: return "ERROR";
    default: return "UNKNOWN";
    }
}

/* ---- header --------------------------------------------------------------- */

void rcp_header_encode(const rcp_header *h, uint8_t out[RCP_HEADER_SIZE])
{
    wr w = {out, RCP_HEADER_SIZE, 0, false};
    wr_uint(&w, RCP_MAGIC0, 1);
    wr_uint(&w, RCP_MAGIC1, 1);
    wr_uint(&w, RCP_VERSION, 1);
    wr_uint(&w, h->op, 1);
    wr_uint(&w, h->flags, 2);
    wr_uint(&w, 0, 2);
    wr_uint(&w, h->id, 4);
    wr_uint(&w, h->len, 4);
}

int rcp_header_decode(const uint8_t in[RCP_HEADER_SIZE], uint32_t max_body, rcp_header *h)
{
    rd r = {in, RCP_HEADER_SIZE, false};
    uint8_t m0 = (uint8_t)rd_uint(&r, 1), m1 = (uint8_t)rd_uint(&r, 1);
    uint8_t ver = (uint8_t)rd_uint(&r, 1);
    h->op = (uint8_t)rd_uint(&r, 1);
    h->flags = (uint16_t)rd_uint(&r, 2);
    uint16_t reserved = (uint16_t)rd_uint(&r, 2);
    h->id = (uint32_t)rd_uint(&r, 4);
    h->len = (uint32_t)rd_uint(&r, 4);
    if (m0 != RCP_MAGIC0 || m1 != RCP_MAGIC1 || ver != RCP_VERSION || reserved != 0 ||
        (h->flags & ~RCP_F_KNOWN) || h->op == 0)
        return -EPROTO;
    if (max_body > RCP_MAX_FRAME_BODY)
        max_body = RCP_MAX_FRAME_BODY;
    if (h->len > max_body)
        return -EMSGSIZE;
    return 0;
}

/* ---- bodies --------------------------------------------------------------- */

static bool pow2(uint32_t v)
{
    return v && !(v & (v - 1));
}

/* A bucket and key, as every request that names an object starts: read
 * (bad when either is out of its bounds), written, checked before writing. */
static void rd_name(rd *r, rcp_str *bucket, rcp_str *key)
{
    *bucket = rd_str(r, BKEY_BUCKET_MAX);
    *key = rd_str(r, BKEY_KEY_MAX);
    if (!r->bad && (bucket->len < 3 || key->len == 0))
        r->bad = true;
}

static void wr_name(wr *w, rcp_str bucket, rcp_str key)
{
    wr_str(w, bucket);
    wr_str(w, key);
}

static bool name_ok(rcp_str bucket, rcp_str key)
{
    return bucket.len >= 3 && bucket.len <= BKEY_BUCKET_MAX && key.len >= 1 &&
           key.len <= BKEY_KEY_MAX;
}

static void rd_object(rd *r, rcp_object *o)
{
    rd_name(r, &o->bucket, &o->key);
    o->version = rd_str(r, BKEY_VERSION_MAX);
    o->size = rd_uint(r, 8);
}

static void wr_object(wr *w, const rcp_object *o)
{
    wr_name(w, o->bucket, o->key);
    wr_str(w, o->version);
    wr_uint(w, o->size, 8);
}

static bool object_ok(const rcp_object *o)
{
    return name_ok(o->bucket, o->key) && o->version.len <= BKEY_VERSION_MAX;
}

int rcp_parse_hello_req(const uint8_t *body, size_t len, rcp_hello_req *out)
{
    rd r = {body, len, false};
    out->min_version = (uint16_t)rd_uint(&r, 2);
    out->max_version = (uint16_t)rd_uint(&r, 2);
    out->token = rd_str(&r, RCP_MAX_STRING);
    out->block_size = (uint32_t)rd_uint(&r, 4);
    out->client = rd_str(&r, RCP_MAX_NAME);
    if (!r.bad &&
        (out->min_version > out->max_version || (out->block_size && !pow2(out->block_size))))
        return -EBADMSG;
    return rd_end(&r);
}

int rcp_encode_hello_req(const rcp_hello_req *q, uint8_t *out, size_t cap)
{
    if (q->token.len > RCP_MAX_STRING || q->client.len > RCP_MAX_NAME)
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_uint(&w, q->min_version, 2);
    wr_uint(&w, q->max_version, 2);
    wr_str(&w, q->token);
    wr_uint(&w, q->block_size, 4);
    wr_str(&w, q->client);
    return wr_end(&w);
}

int rcp_parse_hello_resp(const uint8_t *body, size_t len, rcp_hello_resp *out)
{
    rd r = {body, len, false};
    out->version = (uint16_t)rd_uint(&r, 2);
    out->block_size = (uint32_t)rd_uint(&r, 4);
    out->max_outstanding = (uint32_t)rd_uint(&r, 4);
    out->max_buffered = (uint32_t)rd_uint(&r, 4);
    out->max_body = (uint32_t)rd_uint(&r, 4);
    out->chunk_size = (uint32_t)rd_uint(&r, 4);
    out->node_id = rd_str(&r, RCP_MAX_NAME);
    out->tenant = rd_str(&r, BKEY_TENANT_MAX);
    if (!r.bad && (!pow2(out->block_size) || !out->max_outstanding || !out->chunk_size ||
                   out->max_body > RCP_MAX_FRAME_BODY))
        return -EBADMSG;
    return rd_end(&r);
}

int rcp_encode_hello_resp(const rcp_hello_resp *q, uint8_t *out, size_t cap)
{
    if (q->node_id.len > RCP_MAX_NAME || q->tenant.len > BKEY_TENANT_MAX)
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_uint(&w, q->version, 2);
    wr_uint(&w, q->block_size, 4);
    wr_uint(&w, q->max_outstanding, 4);
    wr_uint(&w, q->max_buffered, 4);
    wr_uint(&w, q->max_body, 4);
    wr_uint(&w, q->chunk_size, 4);
    wr_str(&w, q->node_id);
    wr_str(&w, q->tenant);
    return wr_end(&w);
}

int rcp_parse_get_req_tenant(const uint8_t *body, size_t len, rcp_get_req *out, rcp_str *tenant)
{
    rd r = {body, len, false};
    rd_object(&r, &out->obj);
    out->block = rd_uint(&r, 8);
    out->offset = (uint32_t)rd_uint(&r, 4);
    out->length = (uint32_t)rd_uint(&r, 4);
    out->flags = (uint32_t)rd_uint(&r, 4);
    uint32_t known = RCP_GET_CACHE_ONLY | RCP_GET_ONE_SHOT | (tenant ? RCP_GET_TENANT : 0);
    if (!r.bad && (out->flags & ~known))
        return -EBADMSG;
    if (tenant) {
        *tenant = (rcp_str){"", 0};
        if (out->flags & RCP_GET_TENANT)
            *tenant = rd_str(&r, 256);
    }
    return rd_end(&r);
}

int rcp_parse_get_req(const uint8_t *body, size_t len, rcp_get_req *out)
{
    return rcp_parse_get_req_tenant(body, len, out, NULL);
}

int rcp_encode_get_req_tenant(const rcp_get_req *q, const rcp_str *tenant, uint8_t *out, size_t cap)
{
    if (!object_ok(&q->obj) || (q->flags & RCP_GET_TENANT) || (tenant && tenant->len > 256))
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_object(&w, &q->obj);
    wr_uint(&w, q->block, 8);
    wr_uint(&w, q->offset, 4);
    wr_uint(&w, q->length, 4);
    wr_uint(&w, q->flags | (tenant ? RCP_GET_TENANT : 0), 4);
    if (tenant)
        wr_str(&w, *tenant);
    return wr_end(&w);
}

int rcp_encode_get_req(const rcp_get_req *q, uint8_t *out, size_t cap)
{
    return rcp_encode_get_req_tenant(q, NULL, out, cap);
}

int rcp_parse_get_resp_head(const uint8_t *body, size_t len, rcp_get_resp_head *out)
{
    if (len < RCP_GET_RESP_HEAD_SIZE)
        return -EBADMSG;
    rd r = {body, RCP_GET_RESP_HEAD_SIZE, false};
    out->length = (uint32_t)rd_uint(&r, 4);
    out->source = (uint8_t)rd_uint(&r, 1);
    rd_uint(&r, 3); /* padding */
    if (out->source < RCP_SRC_RAM || out->source > RCP_SRC_FILL_WAIT)
        return -EBADMSG;
    return 0;
}

int rcp_encode_get_resp_head(const rcp_get_resp_head *q, uint8_t *out, size_t cap)
{
    wr w = {out, cap, 0, false};
    wr_uint(&w, q->length, 4);
    wr_uint(&w, q->source, 1);
    wr_uint(&w, 0, 3);
    return wr_end(&w);
}

int rcp_parse_head_req(const uint8_t *body, size_t len, rcp_head_req *out)
{
    rd r = {body, len, false};
    rd_name(&r, &out->bucket, &out->key);
    return rd_end(&r);
}

int rcp_encode_head_req(const rcp_head_req *q, uint8_t *out, size_t cap)
{
    if (!name_ok(q->bucket, q->key))
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_name(&w, q->bucket, q->key);
    return wr_end(&w);
}

int rcp_parse_head_resp(const uint8_t *body, size_t len, rcp_head_resp *out)
{
    rd r = {body, len, false};
    out->size = rd_uint(&r, 8);
    out->version = rd_str(&r, BKEY_VERSION_MAX);
    out->last_modified = (int64_t)rd_uint(&r, 8);
    return rd_end(&r);
}

int rcp_encode_head_resp(const rcp_head_resp *q, uint8_t *out, size_t cap)
{
    if (q->version.len > BKEY_VERSION_MAX)
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_uint(&w, q->size, 8);
    wr_str(&w, q->version);
    wr_uint(&w, (uint64_t)q->last_modified, 8);
    return wr_end(&w);
}

int rcp_parse_put_req(const uint8_t *body, size_t len, rcp_put_req *out)
{
    rd r = {body, len, false};
    rd_name(&r, &out->bucket, &out->key);
    out->size = rd_uint(&r, 8);
    return rd_end(&r);
}

int rcp_encode_put_req(const rcp_put_req *q, uint8_t *out, size_t cap)
{
    if (!name_ok(q->bucket, q->key))
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_name(&w, q->bucket, q->key);
    wr_uint(&w, q->size, 8);
    return wr_end(&w);
}

int rcp_parse_put_resp(const uint8_t *body, size_t len, rcp_put_resp *out)
{
    rd r = {body, len, false};
    out->version = rd_str(&r, BKEY_VERSION_MAX);
    out->size = rd_uint(&r, 8);
    return rd_end(&r);
}

int rcp_encode_put_resp(const rcp_put_resp *q, uint8_t *out, size_t cap)
{
    if (q->version.len > BKEY_VERSION_MAX)
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_str(&w, q->version);
    wr_uint(&w, q->size, 8);
    return wr_end(&w);
}

int rcp_parse_put_block_req(const uint8_t *body, size_t len, rcp_put_block_req *out)
{
    rd r = {body, len, false};
    out->tenant = rd_str(&r, BKEY_TENANT_MAX);
    rd_object(&r, &out->obj);
    out->block = rd_uint(&r, 8);
    uint32_t n = (uint32_t)rd_uint(&r, 4);
    if (r.bad || n != r.left)
        return -EBADMSG;
    out->data = r.p;
    out->data_len = n;
    return 0;
}

int rcp_encode_put_block_req(const rcp_put_block_req *q, uint8_t *out, size_t cap)
{
    if (!object_ok(&q->obj) || q->tenant.len > BKEY_TENANT_MAX)
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_str(&w, q->tenant);
    wr_object(&w, &q->obj);
    wr_uint(&w, q->block, 8);
    wr_uint(&w, q->data_len, 4);
    return wr_end(&w);
}

int rcp_parse_drop_req(const uint8_t *body, size_t len, rcp_drop_req *out)
{
    rd r = {body, len, false};
    out->tenant = rd_str(&r, 256);
    rd_object(&r, &out->obj);
    return rd_end(&r);
}

int rcp_encode_drop_req(const rcp_drop_req *q, uint8_t *out, size_t cap)
{
    if (!object_ok(&q->obj) || q->tenant.len > 256)
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_str(&w, q->tenant);
    wr_object(&w, &q->obj);
    return wr_end(&w);
}

int rcp_parse_warm_req(const uint8_t *body, size_t len, rcp_warm_req *out)
{
    rd r = {body, len, false};
    rd_object(&r, &out->obj);
    out->n_blocks = (uint32_t)rd_uint(&r, 4);
    if (r.bad || out->n_blocks > RCP_MAX_WARM_BLOCKS || r.left != (size_t)out->n_blocks * 8)
        return -EBADMSG;
    out->blocks = r.p;
    return 0;
}

uint64_t rcp_warm_block(const rcp_warm_req *w, uint32_t i)
{
    rd r = {w->blocks + (size_t)i * 8, 8, false};
    return rd_uint(&r, 8);
}

int rcp_encode_warm_req(const rcp_warm_req *q, const uint64_t *blocks, uint8_t *out, size_t cap)
{
    if (!object_ok(&q->obj) || q->n_blocks > RCP_MAX_WARM_BLOCKS)
        return -EINVAL;
    wr w = {out, cap, 0, false};
    wr_object(&w, &q->obj);
    wr_uint(&w, q->n_blocks, 4);
    for (uint32_t i = 0; i < q->n_blocks; i++)
        wr_uint(&w, blocks[i], 8);
    return wr_end(&w);
}

int rcp_parse_cancel_req(const uint8_t *body, size_t len, uint32_t *id)
{
    rd r = {body, len, false};
    *id = (uint32_t)rd_uint(&r, 4);
    return rd_end(&r);
}

int rcp_encode_cancel_req(uint32_t id, uint8_t *out, size_t cap)
{
    wr w = {out, cap, 0, false};
    wr_uint(&w, id, 4);
    return wr_end(&w);
}

int rcp_parse_error(const uint8_t *body, size_t len, rcp_error *out)
{
    rd r = {body, len, false};
    out->code = (uint16_t)rd_uint(&r, 2);
    out->message = rd_str(&r, RCP_MAX_STRING);
    return rd_end(&r);
}

int rcp_encode_error(const rcp_error *q, uint8_t *out, size_t cap)
{
    rcp_str m = q->message;
    if (m.len > RCP_MAX_STRING)
        m.len = RCP_MAX_STRING;
    wr w = {out, cap, 0, false};
    wr_uint(&w, q->code, 2);
    wr_str(&w, m);
    return wr_end(&w);
}

int rcp_str_copy(rcp_str s, char *out, size_t cap)
{
    if ((size_t)s.len + 1 > cap)
        return -ENAMETOOLONG;
    if (s.len && memchr(s.p, '\0', s.len) != NULL)
        return -EINVAL; /* the C string would be a shorter name than the wire's */
    memcpy(out, s.p, s.len);
    out[s.len] = '\0';
    return s.len;
}
