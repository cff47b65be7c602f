/* SPDX-License-Identifier: Apache-2.0
 *
 * ringcached.c: the cache node's main(): parse the options (node_conf.c's
 * table), send the node's log to stderr, compose the node, turn
 * SIGTERM/SIGINT into a drain and SIGHUP into a membership reload (libevent
 * signal events on the main loop, so the handlers run as ordinary callbacks),
 * run, tear down. Exit 0 after a clean drain, 1 when the node cannot start, 2
 * for a bad command line.
 */
#include "node.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>

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

/* One line per call: stdio's lock keeps lines of several threads whole. */
static void log_to_stderr(void *arg, int level, const char *line)
{
    (void)arg;
    (void)level;
    fprintf(stderr, "%s\n", line);
}

int main(int argc, char **argv)
{
    node_conf conf;
    char err[1024];
    int rc = node_conf_load(&conf, argc, argv, err, sizeof(err));
    if (rc == 1) {
        node_conf_help(stdout);
        return 0;
    }
    if (rc == 2) {
        printf("ringcached %s\n", node_version());
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "ringcached: %s\n", err);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    node_log_to(log_to_stderr, NULL);
    node *n = NULL;
    if (node_create(&n, &conf, err, sizeof(err)) < 0) {
        fprintf(stderr, "ringcached: %s\n", err);
        return 1;
    }
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
