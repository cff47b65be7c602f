/* SPDX-License-Identifier: Apache-2.0
 *
 * test_syncconn.c: the blocking connection (syncconn.h) against a node that
 * has gone away (the far end of a socketpair closed): the GET fails with an
 * error and leaves the connection unusable; the process is not killed by
 * SIGPIPE (a program reading through libringcache need not ignore it).
 */
#include "syncconn.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

static void test_node_gone(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    sc_conn *c = NULL;
    assert_int_equal(sc_from_fd(&c, sv[0], 0), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_gone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
