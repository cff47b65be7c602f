/* SPDX-License-Identifier: Apache-2.0
 *
 * ringcached.c: the cache node's main(): parse the options (node.c's table),
 * compose the node, turn SIGTERM/SIGINT into a drain and SIGHUP into a
 * membership reload (libevent signal events on the main loop, so the handlers
 * run as ordinary callbacks), run, tear down. Exit 0 after a clean drain.
 */
#include "node.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>

struct event_base *node_main_base(node *n);

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    node *n = arg;
    if (sig == SIGHUP) {
        node_reload(n);
        return;
    }
    node_log(NODE_LOG_INFO, "msg=\"draining\" signal=%d", (int)sig);
    node_stop(n);
}

int main(int argc, char **argv)
{
    node_conf conf;
    int rc = node_conf_load(&conf, argc, argv);
    if (rc == 1)
        return 0;
    if (rc < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    node *n = NULL;
    if (node_create(&n, &conf) < 0)
        return 1;
    struct event_base *base = node_main_base(n);
    struct event *sigs[3];
    int which[3] = {SIGTERM, SIGINT, SIGHUP};
    for (int i = 0; i < 3; i++) {
        sigs[i] = evsignal_new(base, which[i], on_signal, n);
        event_add(sigs[i], NULL);
    }
    rc = node_run(n);
    for (int i = 0; i < 3; i++)
        event_free(sigs[i]);
    node_destroy(&n);
    return rc == 0 ? 0 : 1;
}
