/* SPDX-License-Identifier: Apache-2.0
 *
 * test_cacheconn.c: the pipelined connection (cacheconn.h) against a node
 * played by a thread on a loopback TCP socket, whose answers trickle in a few
 * KiB at a time, as over a capped link. The connection asks the socket to
 * wake it only once a chunk's body (and, when more of the answer follows, the
 * next header) has arrived (SO_RCVLOWAT): every GET must still complete with
 * its bytes, whether its answer is one chunk or several, and a last chunk must
 * not wait for a header that never comes (the request would time out).
 */
#include "cacheconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#define PIECE    4096 /* bytes the node writes at a time */
#define BODY_MAX (256u * 1024)

/* The node: HELLO, then `gets` GETs, each answered with `len` bytes in chunks
 * of at most `chunk`, written PIECE bytes at a time with a pause between. */
typedef struct {
    int lfd, gets;
    uint32_t len, chunk;
} trickle_node;

static void read_exact(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        assert_true(k > 0);
        p += k;
        n -= (size_t)k;
    }
}

static void write_slowly(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        size_t k = n < PIECE ? n : PIECE;
        assert_int_equal(write(fd, p, k), (ssize_t)k);
        p += k;
        n -= k;
        struct timespec ts = {0, 200000}; /* 0.2 ms: about 20 MiB/s */
        nanosleep(&ts, NULL);
    }
}

static uint8_t byte_at(int get, uint32_t i)
{
    return (uint8_t)(get * 31 + i * 7 + (i >> 11));
}

static uint32_t read_frame(int fd, uint8_t *body, size_t cap, rcp_header *h)
{
    uint8_t hb[RCP_HEADER_SIZE];
    read_exact(fd, hb, sizeof(hb));
    assert_int_equal(rcp_header_decode(hb, RCP_MAX_FRAME_BODY, h), 0);
    assert_true(h->len <= cap);
    read_exact(fd, body, h->len);
    return h->len;
}

static void *trickle_main(void *arg)
{
    trickle_node *n = arg;
    int fd = accept(n->lfd, NULL, NULL);
    assert_true(fd >= 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    uint8_t body[RCP_MAX_HELLO_BODY + RCP_GET_REQ_MAX];
    rcp_header h;
    read_frame(fd, body, sizeof(body), &h);
    assert_int_equal(h.op, RCP_OP_HELLO);
    uint8_t out[RCP_HEADER_SIZE + RCP_MAX_HELLO_BODY];
    rcp_hello_resp hr = {RCP_VERSION, 1u << 20, 64, 8u << 20, 1u << 20, n->chunk,
                         rcp_s("trickle"), rcp_s("")};
    int k = rcp_encode_hello_resp(&hr, out + RCP_HEADER_SIZE, sizeof(out) - RCP_HEADER_SIZE);
    assert_true(k > 0);
    rcp_header a = {RCP_OP_HELLO, RCP_F_RESPONSE, 0, (uint32_t)k};
    rcp_header_encode(&a, out);
    assert_int_equal(write(fd, out, RCP_HEADER_SIZE + (size_t)k),
                     (ssize_t)(RCP_HEADER_SIZE + (size_t)k));
    uint8_t *frame = malloc(RCP_HEADER_SIZE + RCP_GET_RESP_HEAD_SIZE + BODY_MAX);
    for (int g = 0; g < n->gets; g++) {
        read_frame(fd, body, sizeof(body), &h);
        assert_int_equal(h.op, RCP_OP_GET);
        for (uint32_t sent = 0; sent < n->len;) {
            uint32_t part = n->len - sent < n->chunk ? n->len - sent : n->chunk;
            uint32_t head = sent == 0 ? RCP_GET_RESP_HEAD_SIZE : 0;
            bool more = sent + part < n->len;
            rcp_header c = {RCP_OP_GET, (uint16_t)(RCP_F_RESPONSE | (more ? RCP_F_MORE : 0)),
                            h.id, head + part};
            rcp_header_encode(&c, frame);
            if (head) {
                rcp_get_resp_head gh = {n->len, RCP_SRC_RAM};
                assert_int_equal(rcp_encode_get_resp_head(&gh, frame + RCP_HEADER_SIZE, head),
                                 (int)head);
            }
            for (uint32_t i = 0; i < part; i++)
                frame[RCP_HEADER_SIZE + head + i] = byte_at(g, sent + i);
            write_slowly(fd, frame, RCP_HEADER_SIZE + head + part);
            sent += part;
        }
    }
    free(frame);
    /* stay until the client has closed: what it has not read yet stays readable */
    while (read(fd, body, sizeof(body)) > 0) {
    }
    close(fd);
    return NULL;
}

typedef struct {
    bool done;
    cc_result res;
} waiter;

static void on_done(const cc_result *res, void *arg)
{
    waiter *w = arg;
    w->res = *res;
    w->done = true;
}

static void run(uint32_t len, uint32_t chunk, int gets)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 1), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    trickle_node n = {lfd, gets, len, chunk};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, trickle_main, &n), 0);

    struct event_base *base = event_base_new();
    cc_config cfg = {.host = "127.0.0.1",
                     .port = ntohs(sa.sin_port),
                     .request_timeout_ms = 5000,
                     .connect_timeout_ms = 2000};
    cc_conn *c = NULL;
    assert_int_equal(cc_conn_create(&c, base, &cfg), 0);
    uint8_t *buf = malloc(len);
    for (int g = 0; g < gets; g++) {
        rcp_get_req req = {.obj = {rcp_s("bucket"), rcp_s("key"), rcp_s("v1"), len},
                           .length = len};
        waiter w = {0};
        memset(buf, 0, len);
        assert_int_equal(cc_get(c, &req, buf, len, on_done, &w, NULL), 0);
        while (!w.done)
            event_base_loop(base, EVLOOP_ONCE);
        if (w.res.code != 0)
            fail_msg("GET %d of %u bytes in chunks of %u: %d %s", g, len, chunk, w.res.code,
                     w.res.message);
        assert_int_equal(w.res.bytes, len);
        for (uint32_t i = 0; i < len; i++)
            if (buf[i] != byte_at(g, i))
                fail_msg("GET %d: byte %u differs", g, i);
    }
    cc_conn_destroy(&c);
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_free(base);
    pthread_join(th, NULL);
    close(lfd);
    free(buf);
}

/* One chunk per answer: each completes on its last byte. */
static void test_one_chunk_answers(void **state)
{
    (void)state;
    run(200 * 1024, 256 * 1024, 3);
}

/* Answers of several chunks: each chunk's body and the next header in one
 * wake-up, the last chunk on its own. */
static void test_chunked_answers(void **state)
{
    (void)state;
    run(600 * 1024, 128 * 1024, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_chunk_answers),
        cmocka_unit_test(test_chunked_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
