/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_main.c: `ringcache server`: parse the options (srv_conf.c's table),
 * compose the server, turn SIGTERM and SIGINT into a drain (libevent signal
 * events on the loop, so the handlers run as ordinary callbacks), run, tear
 * down. Exit 0 after a clean drain.
 */
#include "srv_int.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    srv *s = arg;
    srv_log(SRV_LOG_INFO, "msg=\"stopping\" signal=%d", (int)sig);
    srv_stop(s);
}

int srv_main(int argc, char **argv)
{
    srv_conf conf;
    int rc = srv_conf_load(&conf, argc, argv);
    if (rc == 1)
        return 0;
    if (rc < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    srv *s = NULL;
    char err[1024];
    if (srv_create(&s, &conf, err, sizeof(err)) < 0) {
        fprintf(stderr, "ringcache server: %s\n", err);
        return 1;
    }
    int which[2] = {SIGTERM, SIGINT};
    struct event *sigs[2];
    for (int i = 0; i < 2; i++) {
        sigs[i] = evsignal_new(s->base, which[i], on_signal, s);
        event_add(sigs[i], NULL);
    }
    rc = srv_run(s);
    for (int i = 0; i < 2; i++)
        event_free(sigs[i]);
    srv_destroy(&s);
    srv_log(SRV_LOG_INFO, "msg=\"stopped\" clean=%s", rc == 0 ? "true" : "false");
    return rc == 0 ? 0 : 1;
}
