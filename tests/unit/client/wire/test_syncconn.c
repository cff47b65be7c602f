/* SPDX-License-Identifier: Apache-2.0
 *
 * test_syncconn.c: the blocking connection (syncconn.h) against a node played
 * over a socketpair. A node that has gone away (the far end closed): the GET
 * fails with an error and leaves the connection unusable; the process is not
 * killed by SIGPIPE (a program reading through libringcache need not ignore
 * it). A node whose answers take far longer than the spin window (a capped or
 * far link): after the first GET shows it, the reader sleeps at once instead
 * of polling; the bytes are right either way.
 */
#include "syncconn.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

static void test_node_gone(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    sc_conn *c = NULL;
    assert_int_equal(sc_from_fd(&c, sv[0], 0, 0), 0);
    close(sv[1]);
    rcp_get_req g = {.obj = {rcp_s("bucket"), rcp_s("key"), rcp_s("v1"), 100}, .length = 10};
    char buf[10], msg[64];
    int node_err = 0;
    assert_int_equal(sc_get(c, &g, buf, sizeof(buf), &node_err, msg, sizeof(msg)), -EPIPE);
    assert_false(sc_usable(c));
    assert_int_equal(sc_get(c, &g, buf, sizeof(buf), &node_err, msg, sizeof(msg)), -EPIPE);
    sc_close(&c);
    assert_null(c);
}

/* The node: answers `gets` GETs of 10 bytes, each after delay_ms. */
typedef struct {
    int fd, gets, delay_ms;
} slow_node;

static void read_exact(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = read(fd, p, n);
        assert_true(k > 0);
        p += k;
        n -= (size_t)k;
    }
}

static void *slow_node_main(void *arg)
{
    slow_node *n = arg;
    for (int i = 0; i < n->gets; i++) {
        uint8_t hb[RCP_HEADER_SIZE], body[RCP_GET_REQ_MAX];
        read_exact(n->fd, hb, sizeof(hb));
        rcp_header h;
        assert_int_equal(rcp_header_decode(hb, RCP_MAX_FRAME_BODY, &h), 0);
        assert_true(h.len <= sizeof(body));
        read_exact(n->fd, body, h.len);
        struct timespec ts = {0, (long)n->delay_ms * 1000000L};
        nanosleep(&ts, NULL);
        uint8_t out[RCP_HEADER_SIZE + RCP_GET_RESP_HEAD_SIZE + 10];
        rcp_header a = {RCP_OP_GET, RCP_F_RESPONSE, h.id, RCP_GET_RESP_HEAD_SIZE + 10};
        rcp_header_encode(&a, out);
        rcp_get_resp_head gh = {10, RCP_SRC_RAM};
        assert_int_equal(
            rcp_encode_get_resp_head(&gh, out + RCP_HEADER_SIZE, RCP_GET_RESP_HEAD_SIZE),
            RCP_GET_RESP_HEAD_SIZE);
        memset(out + RCP_HEADER_SIZE + RCP_GET_RESP_HEAD_SIZE, 'a' + i, 10);
        assert_int_equal(write(n->fd, out, sizeof(out)), (ssize_t)sizeof(out));
    }
    return NULL;
}

static void test_no_spin_for_slow_answers(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    sc_conn *c = NULL;
    assert_int_equal(sc_from_fd(&c, sv[0], 0, 200), 0);
    slow_node n = {sv[1], 4, 20}; /* 20 ms: a hundred times the 200 us window */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, slow_node_main, &n), 0);
    rcp_get_req g = {.obj = {rcp_s("bucket"), rcp_s("key"), rcp_s("v1"), 100}, .length = 10};
    char buf[10], msg[64], want[10];
    int node_err = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(sc_get(c, &g, buf, sizeof(buf), &node_err, msg, sizeof(msg)), 0);
        memset(want, 'a' + i, sizeof(want));
        assert_memory_equal(buf, want, sizeof(want));
    }
    /* the first GET polled (nothing was known of the link), the others slept */
    assert_int_equal(sc_spins(c), 1);
    pthread_join(t, NULL);
    sc_close(&c);
    close(sv[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_gone),
        cmocka_unit_test(test_no_spin_for_slow_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
