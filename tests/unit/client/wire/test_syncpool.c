/* SPDX-License-Identifier: Apache-2.0
 *
 * test_syncpool.c: the pool of blocking connections (syncconn.h, sc_pool)
 * without a node: connections made over socketpairs (sc_from_fd) are put
 * back and handed out again per address, at most keep_per_node are kept (the
 * others are closed: their peer sees the end), a broken connection is never
 * kept, and a connection to an address nobody listens on fails with a
 * sentence naming it.
 */
#include "harness.h"
#include "syncconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

/* A connection over one end of a socketpair; *peer is the other end. */
static sc_conn *pair_conn(int *peer)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    sc_conn *c = NULL;
    assert_int_equal(sc_from_fd(&c, sv[0], 0, 0), 0);
    *peer = sv[1];
    return c;
}

/* Whether the far end of peer was closed (a read sees the end at once). */
static bool closed(int peer)
{
    char b;
    return recv(peer, &b, 1, MSG_DONTWAIT) == 0;
}

static sc_pool *make_pool(int keep)
{
    sc_pool_config cfg = {.connect_timeout_ms = 500, .timeout_ms = 500, .keep_per_node = keep};
    sc_pool *p = NULL;
    assert_int_equal(sc_pool_create(&p, &cfg), 0);
    return p;
}

static void test_reuse_per_address(void **state)
{
    (void)state;
    sc_pool *p = make_pool(4);
    int pa, pb;
    sc_conn *a = pair_conn(&pa), *b = pair_conn(&pb);
    sc_conn *ka = a, *kb = b;
    sc_pool_put(p, "10.0.0.1", 7070, &a);
    sc_pool_put(p, "10.0.0.2", 7070, &b);
    assert_null(a);
    assert_null(b);
    sc_conn *got = NULL;
    char err[256];
    assert_int_equal(sc_pool_get(p, "10.0.0.2", 7070, &got, err, sizeof(err)), 0);
    assert_ptr_equal(got, kb); /* the address's own, not the other's */
    sc_pool_put(p, "10.0.0.2", 7070, &got);
    assert_int_equal(sc_pool_get(p, "10.0.0.1", 7070, &got, err, sizeof(err)), 0);
    assert_ptr_equal(got, ka);
    sc_close(&got);
    assert_false(closed(pb)); /* still idle in the pool */
    sc_pool_destroy(&p);
    assert_null(p);
    assert_true(closed(pa));
    assert_true(closed(pb)); /* the pool closed what it kept */
    close(pa);
    close(pb);
}

static void test_keep_limit(void **state)
{
    (void)state;
    sc_pool *p = make_pool(2);
    int peer[3];
    for (int i = 0; i < 3; i++) {
        sc_conn *c = pair_conn(&peer[i]);
        sc_pool_put(p, "n0", 1, &c);
    }
    assert_false(closed(peer[0]));
    assert_false(closed(peer[1]));
    assert_true(closed(peer[2])); /* no room: closed at once */
    sc_pool_destroy(&p);
    for (int i = 0; i < 3; i++)
        close(peer[i]);
}

static void test_broken_not_kept(void **state)
{
    (void)state;
    sc_pool *p = make_pool(4);
    int peer;
    sc_conn *c = pair_conn(&peer);
    close(peer); /* the node went away: the next GET breaks the connection */
    rcp_get_req g = {.obj = {rcp_s("bucket"), rcp_s("k"), rcp_s("v"), 100}, .length = 10};
    char buf[10], msg[64];
    int node_err = 0;
    assert_true(sc_get(c, &g, buf, sizeof(buf), &node_err, msg, sizeof(msg)) < 0);
    assert_false(sc_usable(c));
    sc_pool_put(p, "n0", 1, &c);
    assert_null(c);
    /* nothing idle for n0 now: get must connect, and nobody listens there */
    int port = h_free_port();
    assert_true(port > 0);
    sc_conn *got = NULL;
    char err[256] = "";
    int rc = sc_pool_get(p, "127.0.0.1", port, &got, err, sizeof(err));
    assert_int_equal(rc, -ECONNREFUSED);
    assert_null(got);
    char where[64];
    snprintf(where, sizeof(where), "127.0.0.1:%d", port);
    assert_non_null(strstr(err, where));
    sc_pool_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_per_address),
        cmocka_unit_test(test_keep_limit),
        cmocka_unit_test(test_broken_not_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
