/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_proto.c: feeds arbitrary bytes to the wire protocol's parsers the way a
 * node reads them off a socket: a header, then (when it validates) the body, to
 * the parser of its opcode; also every body parser directly. A parse that
 * succeeds is re-encoded and must parse again to the same fields.
 */
#include "proto.h"

#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* CHECK() vanishes under NDEBUG; a fuzz check must not */
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

static void body_parsers(const uint8_t *b, size_t n)
{
    rcp_hello_req hq;
    rcp_hello_resp hr;
    rcp_get_req g;
    rcp_get_resp_head gh;
    rcp_head_req h;
    rcp_head_resp hs;
    rcp_put_req p;
    rcp_put_resp ps;
    rcp_put_block_req pb;
    rcp_warm_req w;
    rcp_error e;
    uint32_t id;
    uint8_t out[8192];
    if (rcp_parse_hello_req(b, n, &hq) == 0) {
        int k = rcp_encode_hello_req(&hq, out, sizeof(out));
        CHECK(k > 0);
        rcp_hello_req again;
        CHECK(rcp_parse_hello_req(out, (size_t)k, &again) == 0);
        CHECK(again.token.len == hq.token.len && again.block_size == hq.block_size);
    }
    rcp_parse_hello_resp(b, n, &hr);
    if (rcp_parse_get_req(b, n, &g) == 0) {
        int k = rcp_encode_get_req(&g, out, sizeof(out));
        CHECK(k == (int)n);
        CHECK(memcmp(out, b, n) == 0);
    }
    rcp_str tenant;
    if (rcp_parse_get_req_tenant(b, n, &g, &tenant) == 0 && (g.flags & RCP_GET_TENANT)) {
        g.flags &= ~(uint32_t)RCP_GET_TENANT;
        int k = rcp_encode_get_req_tenant(&g, &tenant, out, sizeof(out));
        CHECK(k == (int)n);
        CHECK(memcmp(out, b, n) == 0);
    }
    rcp_drop_req dr;
    if (rcp_parse_drop_req(b, n, &dr) == 0) {
        int k = rcp_encode_drop_req(&dr, out, sizeof(out));
        CHECK(k == (int)n && memcmp(out, b, n) == 0);
    }
    rcp_parse_get_resp_head(b, n, &gh);
    rcp_parse_head_req(b, n, &h);
    rcp_parse_head_resp(b, n, &hs);
    rcp_parse_put_req(b, n, &p);
    rcp_parse_put_resp(b, n, &ps);
    if (rcp_parse_put_block_req(b, n, &pb) == 0)
        CHECK(pb.data + pb.data_len == b + n);
    if (rcp_parse_warm_req(b, n, &w) == 0)
        for (uint32_t i = 0; i < w.n_blocks; i++)
            (void)rcp_warm_block(&w, i);
    rcp_parse_error(b, n, &e);
    rcp_parse_cancel_req(b, n, &id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    body_parsers(data, size);
    if (size >= RCP_HEADER_SIZE) {
        rcp_header h;
        if (rcp_header_decode(data, 1u << 20, &h) == 0) {
            CHECK(h.len <= (1u << 20));
            size_t n = size - RCP_HEADER_SIZE < h.len ? size - RCP_HEADER_SIZE : h.len;
            body_parsers(data + RCP_HEADER_SIZE, n);
            uint8_t re[RCP_HEADER_SIZE];
            rcp_header_encode(&h, re);
            CHECK(memcmp(re, data, RCP_HEADER_SIZE) == 0);
        }
    }
    return 0;
}
