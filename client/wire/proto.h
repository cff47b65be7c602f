/* SPDX-License-Identifier: Apache-2.0
 *
 * proto.h: the ringcache wire protocol between clients and cache nodes (and
 * between cache nodes, for PUT_BLOCK). Binary, framed, versioned, pipelined:
 * every request carries an id, answers may come back in any order, and a large
 * answer goes out as several chunk frames of the same id, interleaved with other
 * answers, so a big block does not hold up small ones. PROTOCOL.md beside this
 * file is the prose version; this header is the normative one.
 *
 * Every frame starts with a fixed 16-byte header (little-endian):
 *
 *   0       2       3       4               6               8
 *   +-------+-------+-------+---------------+---------------+
 *   | magic | ver   | op    | flags         | reserved (0)  |
 *   | "RC"  | 1     | u8    | u16           | u16           |
 *   +-------+-------+-------+---------------+---------------+
 *   8                               12                      16
 *   +-------------------------------+-----------------------+
 *   | request id (u32)              | body length (u32)     |
 *   +-------------------------------+-----------------------+
 *   | body: body length bytes (<= the limit announced in HELLO)
 *
 * flags: RCP_F_RESPONSE on every frame a node sends in answer; RCP_F_MORE on
 * every chunk of an answer or of a PUT's data but the last. A request id is the
 * client's, unique among its outstanding requests on one connection; id 0 is the
 * connection itself (HELLO, and errors about the connection).
 *
 * Bodies are fixed-width little-endian integers and strings as u16 length +
 * bytes (no NUL). Every length is checked against what remains and against the
 * limits below before anything is allocated.
 *
 * A frame whose header is corrupt (magic, version, reserved bits, a body longer
 * than the limit) gets one ERROR frame (code RCP_E_PROTOCOL, id 0) and the
 * connection is closed: framing is lost. A well-framed request that is bad
 * (unknown opcode, a body that does not parse, a forbidden bucket) gets an ERROR
 * frame with its id and the connection stays open.
 *
 * Thread-safety: pure functions over caller buffers; any thread.
 */
#ifndef RINGCACHE_PROTO_H
#define RINGCACHE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blockkey.h"

#define RCP_MAGIC0      'R'
#define RCP_MAGIC1      'C'
#define RCP_VERSION     1
#define RCP_HEADER_SIZE 16

/* Hard limits, whatever a peer announces. */
#define RCP_MAX_FRAME_BODY (16u * 1024 * 1024)
#define RCP_MAX_STRING     4096u /* tokens and messages */
#define RCP_MAX_NAME       256u  /* node ids and client names */
/* An object's fields are bounded by its identity's limits (blockkey.h):
 * bucket BKEY_BUCKET_MAX, key BKEY_KEY_MAX, version BKEY_VERSION_MAX, tenant
 * BKEY_TENANT_MAX bytes. */
#define RCP_MAX_KEY         ((unsigned)BKEY_KEY_MAX)
#define RCP_MAX_WARM_BLOCKS 65536u
/* The largest bodies of the requests that name an object, for a sender's
 * buffer: an object (bucket, key, version as u16-prefixed strings, u64 size),
 * then each request's own fields. */
#define RCP_OBJECT_MAX  (2u + BKEY_BUCKET_MAX + 2u + BKEY_KEY_MAX + 2u + BKEY_VERSION_MAX + 8u)
#define RCP_GET_REQ_MAX (RCP_OBJECT_MAX + 8u + 4u + 4u + 4u)
/* a node's GET for a tenant (RCP_GET_TENANT): the tenant after the rest */
#define RCP_GET_TENANT_REQ_MAX (RCP_GET_REQ_MAX + 2u + BKEY_TENANT_MAX)
#define RCP_HEAD_REQ_MAX       (2u + BKEY_BUCKET_MAX + 2u + BKEY_KEY_MAX)
#define RCP_PUT_REQ_MAX        (RCP_HEAD_REQ_MAX + 8u)
#define RCP_PUT_BLOCK_REQ_MAX  (2u + BKEY_TENANT_MAX + RCP_OBJECT_MAX + 8u + 4u)
#define RCP_WARM_REQ_MAX(n)    (RCP_OBJECT_MAX + 4u + 8u * (size_t)(n))
/* The largest HELLO body (versions, token, block size, client name): before
 * HELLO a node takes no longer frame, so a connection that has not said who
 * it is cannot make it buffer more. */
#define RCP_MAX_HELLO_BODY (2u + 2u + 2u + RCP_MAX_STRING + 4u + 2u + 256u)

enum rcp_op {
    RCP_OP_HELLO = 1,     /* token, versions -> limits, block size, node id */
    RCP_OP_GET = 2,       /* a block, or a range inside it */
    RCP_OP_HEAD = 3,      /* size and version of an object (the node asks S3) */
    RCP_OP_PUT = 4,       /* write-through: the object's head; data follows */
    RCP_OP_PUT_DATA = 5,  /* a chunk of a PUT's data (RCP_F_MORE until the last) */
    RCP_OP_PUT_BLOCK = 6, /* node to node: one block to index under a version */
    RCP_OP_WARM = 7,      /* fetch blocks into the cache in the background */
    RCP_OP_STATS = 8,     /* the node's counters as text */
    RCP_OP_PING = 9,
    RCP_OP_CANCEL = 10, /* cancel request id (the cancelled one answers CANCELED) */
    RCP_OP_DROP = 11,   /* node to node: forget the blocks of one version of an object */
    RCP_OP_ERROR = 127, /* answer: code + message */
};

enum rcp_flags {
    RCP_F_RESPONSE = 1u << 0,
    RCP_F_MORE = 1u << 1,
};
#define RCP_F_KNOWN (RCP_F_RESPONSE | RCP_F_MORE)

/* Error codes carried by ERROR frames. */
enum rcp_err {
    RCP_E_BAD_REQUEST = 1, /* the body does not parse or a field is out of range */
    RCP_E_UNKNOWN_OP = 2,
    RCP_E_UNAUTHORIZED = 3,    /* no HELLO yet, or a wrong/missing token */
    RCP_E_FORBIDDEN = 4,       /* outside the tenant's buckets/prefixes */
    RCP_E_NOT_FOUND = 5,       /* no such key or bucket in S3 */
    RCP_E_VERSION_CHANGED = 6, /* the object is not the version asked for */
    RCP_E_S3 = 7,              /* S3 failed (message says how) */
    RCP_E_TOO_LARGE = 8,
    RCP_E_BUSY = 9, /* the node is draining or over a limit */
    RCP_E_CANCELED = 10,
    RCP_E_INTERNAL = 11,
    RCP_E_TIMEOUT = 12,    /* the fill missed its deadline */
    RCP_E_PROTOCOL = 13,   /* corrupt framing: the connection closes */
    RCP_E_NOT_CACHED = 14, /* RCP_GET_CACHE_ONLY and the block is not here */
    RCP_E_VERSION = 15,    /* no common protocol version */
    RCP_E_UPSTREAM = 16,   /* the node's own S3 access failed (its endpoint, its
                                  credentials, or S3 itself): the client may read S3 */
};

/* Name of an error code ("version_changed"), for logs and messages. */
const char *rcp_err_name(int code);
const char *rcp_op_name(int op);

typedef struct rcp_header {
    uint8_t op;
    uint16_t flags;
    uint32_t id;
    uint32_t len;
} rcp_header;

/* Encode a header into out[16]. */
void rcp_header_encode(const rcp_header *h, uint8_t out[RCP_HEADER_SIZE]);

/* Decode and validate a header: magic, version, reserved bits, flags, and
 * len <= max_body (itself capped at RCP_MAX_FRAME_BODY). Returns 0, or
 * -EPROTO (corrupt: close the connection) / -EMSGSIZE (too long: close too). */
int rcp_header_decode(const uint8_t in[RCP_HEADER_SIZE], uint32_t max_body, rcp_header *h);

/* ---- bodies ---------------------------------------------------------------- */

/* A borrowed string inside a frame body: not NUL-terminated. */
typedef struct rcp_str {
    const char *p;
    uint16_t len;
} rcp_str;

/* Which object a block request is about: pinned to a version and a size. */
typedef struct rcp_object {
    rcp_str bucket;
    rcp_str key;
    rcp_str version; /* normalised ETag */
    uint64_t size;
} rcp_object;

typedef struct rcp_hello_req {
    uint16_t min_version, max_version;
    rcp_str token;       /* tenant token; may be empty when the node has no tenants */
    uint32_t block_size; /* what the client assumes, 0: whatever the node has */
    rcp_str client;      /* a name for logs */
} rcp_hello_req;

typedef struct rcp_hello_resp {
    uint16_t version;
    uint32_t block_size;
    uint32_t max_outstanding; /* requests in flight per connection */
    uint32_t max_buffered;    /* bytes of answers the node buffers per connection */
    uint32_t max_body;        /* largest frame body the node accepts */
    uint32_t chunk_size;      /* answers are cut in chunks of at most this */
    rcp_str node_id;
    rcp_str tenant;
} rcp_hello_resp;

enum rcp_get_flags {
    RCP_GET_CACHE_ONLY = 1u << 0, /* a miss answers NOT_CACHED instead of filling */
    RCP_GET_ONE_SHOT = 1u << 1,   /* a scan: do not keep it in the RAM tier */
    RCP_GET_TENANT = 1u << 2,     /* node to node: the tenant whose block it is (its key
                                     space, its S3 credentials for a fill) follows the
                                     flags as a string; from a peer only */
};

typedef struct rcp_get_req {
    rcp_object obj;
    uint64_t block;  /* block index */
    uint32_t offset; /* inside the block */
    uint32_t length; /* 0: to the end of the block */
    uint32_t flags;
} rcp_get_req;

/* First bytes of the first chunk of a GET answer; data follows. */
enum rcp_source { RCP_SRC_RAM = 1, RCP_SRC_SSD = 2, RCP_SRC_S3 = 3, RCP_SRC_FILL_WAIT = 4 };
typedef struct rcp_get_resp_head {
    uint32_t length; /* data bytes in the whole answer */
    uint8_t source;  /* enum rcp_source */
} rcp_get_resp_head;
#define RCP_GET_RESP_HEAD_SIZE 8

typedef struct rcp_head_req {
    rcp_str bucket;
    rcp_str key;
} rcp_head_req;

typedef struct rcp_head_resp {
    uint64_t size;
    rcp_str version;
    int64_t last_modified;
} rcp_head_resp;

typedef struct rcp_put_req {
    rcp_str bucket;
    rcp_str key;
    uint64_t size; /* exactly this many bytes follow in PUT_DATA frames */
} rcp_put_req;

typedef struct rcp_put_resp {
    rcp_str version; /* the ETag S3 gave the new object */
    uint64_t size;
} rcp_put_resp;

typedef struct rcp_put_block_req {
    rcp_str tenant;
    rcp_object obj;
    uint64_t block;
    const uint8_t *data; /* the rest of the body */
    uint32_t data_len;
} rcp_put_block_req;

/* DROP (node to node, the peer token): the node removes every block of obj
 * (that version, that size) of tenant `tenant` it holds, after the object was
 * deleted. The answer is an empty DROP frame. */
typedef struct rcp_drop_req {
    rcp_str tenant;
    rcp_object obj;
} rcp_drop_req;

typedef struct rcp_warm_req {
    rcp_object obj;
    uint32_t n_blocks;
    const uint8_t *blocks; /* n_blocks little-endian u64s (read with rcp_warm_block) */
} rcp_warm_req;

typedef struct rcp_error {
    uint16_t code;
    rcp_str message;
} rcp_error;

/* Parsers: the result borrows from body. 0, or -EBADMSG when the body is short,
 * has trailing bytes, or a field is out of range (string too long, key over
 * 1024 bytes, block size not a power of two, ...). */
int rcp_parse_hello_req(const uint8_t *body, size_t len, rcp_hello_req *out);
int rcp_parse_hello_resp(const uint8_t *body, size_t len, rcp_hello_resp *out);
int rcp_parse_get_req(const uint8_t *body, size_t len, rcp_get_req *out);
/* The same for a node that serves peers: RCP_GET_TENANT is accepted and its
 * tenant returned in *tenant ("" without the flag). */
int rcp_parse_get_req_tenant(const uint8_t *body, size_t len, rcp_get_req *out, rcp_str *tenant);
int rcp_parse_drop_req(const uint8_t *body, size_t len, rcp_drop_req *out);
int rcp_parse_get_resp_head(const uint8_t *body, size_t len, rcp_get_resp_head *out);
int rcp_parse_head_req(const uint8_t *body, size_t len, rcp_head_req *out);
int rcp_parse_head_resp(const uint8_t *body, size_t len, rcp_head_resp *out);
int rcp_parse_put_req(const uint8_t *body, size_t len, rcp_put_req *out);
int rcp_parse_put_resp(const uint8_t *body, size_t len, rcp_put_resp *out);
int rcp_parse_put_block_req(const uint8_t *body, size_t len, rcp_put_block_req *out);
int rcp_parse_warm_req(const uint8_t *body, size_t len, rcp_warm_req *out);
int rcp_parse_cancel_req(const uint8_t *body, size_t len, uint32_t *id);
int rcp_parse_error(const uint8_t *body, size_t len, rcp_error *out);
uint64_t rcp_warm_block(const rcp_warm_req *w, uint32_t i);

/* Encoders write a body into out (cap bytes) and return its length, or -ENOSPC
 * when it does not fit, or -EINVAL when a field is over a limit. Strings are
 * given as rcp_str (use rcp_s("...") for C strings). */
static inline rcp_str rcp_s(const char *s);
int rcp_encode_hello_req(const rcp_hello_req *r, uint8_t *out, size_t cap);
int rcp_encode_hello_resp(const rcp_hello_resp *r, uint8_t *out, size_t cap);
int rcp_encode_get_req(const rcp_get_req *r, uint8_t *out, size_t cap);
/* A GET for tenant *tenant (RCP_GET_TENANT set; NULL: as rcp_encode_get_req). */
int rcp_encode_get_req_tenant(const rcp_get_req *r, const rcp_str *tenant, uint8_t *out,
                              size_t cap);
int rcp_encode_drop_req(const rcp_drop_req *r, uint8_t *out, size_t cap);
int rcp_encode_get_resp_head(const rcp_get_resp_head *r, uint8_t *out, size_t cap);
int rcp_encode_head_req(const rcp_head_req *r, uint8_t *out, size_t cap);
int rcp_encode_head_resp(const rcp_head_resp *r, uint8_t *out, size_t cap);
int rcp_encode_put_req(const rcp_put_req *r, uint8_t *out, size_t cap);
int rcp_encode_put_resp(const rcp_put_resp *r, uint8_t *out, size_t cap);
/* Without the data: the caller appends data_len bytes after the returned length. */
int rcp_encode_put_block_req(const rcp_put_block_req *r, uint8_t *out, size_t cap);
int rcp_encode_warm_req(const rcp_warm_req *r, const uint64_t *blocks, uint8_t *out, size_t cap);
int rcp_encode_cancel_req(uint32_t id, uint8_t *out, size_t cap);
int rcp_encode_error(const rcp_error *r, uint8_t *out, size_t cap);

#include <string.h>
static inline rcp_str rcp_s(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return (rcp_str){s ? s : "", (uint16_t)(n > 0xffff ? 0xffff : n)};
}

/* Copy a wire string into a NUL-terminated buffer; -ENAMETOOLONG if it does not
 * fit, -EINVAL if it holds a NUL byte (it would name something shorter). */
int rcp_str_copy(rcp_str s, char *out, size_t cap);

#endif /* RINGCACHE_PROTO_H */
