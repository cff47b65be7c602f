/* SPDX-License-Identifier: Apache-2.0
 *
 * DNS membership against the harness's tiny DNS server on 127.0.0.1 (h_dns:
 * an ephemeral port, answering from its own thread), reached through an evdns
 * base pointed at it (glibc cannot be pointed at a resolver on a custom port)
 * or through the nameserver option. Covers: SRV records giving pod names,
 * ports and host names (the SRV target, what TLS verifies); records added,
 * removed and changed; the server gone and a target that does not resolve
 * (the last good ring is kept); A-only names; a name that does not resolve at
 * all; re-resolution on the interval timer; the nameserver option. Rounds are driven by
 * membership_reload() or the timer and awaited through the stats counters; the
 * only deadline is a guard against hanging, never an assertion on time.
 * Exits 77 (skipped) if it cannot bind a UDP socket on 127.0.0.1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "harness.h"
#include "membership.h"

#define SVC "ringcache-headless.test.local"

struct fixture {
    struct event_base *base;
    struct evdns_base *dns;
    h_dns *server;
    struct membership *ms;
    char log[8192];
    int changes;
};

static bool g_skip;

/* An SRV record SVC -> pod.SVC:port and, unless ip is NULL, the target's A
 * record ("" = the target exists without one). */
static void zone_srv(struct fixture *f, const char *pod, uint16_t port, const char *ip)
{
    char target[128];
    snprintf(target, sizeof target, "%s." SVC, pod);
    assert_int_equal(h_dns_add_srv(f->server, SVC, target, port), 0);
    if (ip != NULL)
        assert_int_equal(h_dns_set_a(f->server, target, ip), 0);
}

static void zone_host(struct fixture *f, const char *name, const char *ip)
{
    assert_int_equal(h_dns_set_a(f->server, name, ip), 0);
}

static void zone_srv_remove(struct fixture *f, const char *pod)
{
    char target[128];
    snprintf(target, sizeof target, "%s." SVC, pod);
    if (h_dns_remove_srv(f->server, SVC, target) != 0)
        fail_msg("no SRV record for %s", pod);
}

static void log_cb(void *arg, enum membership_level level, const char *line)
{
    struct fixture *f = arg;
    size_t l = strlen(f->log);
    snprintf(f->log + l, sizeof f->log - l, "%d %s\n", (int)level, line);
}

static void change_cb(void *arg, struct ring *ring)
{
    struct fixture *f = arg;
    f->changes++;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->base = event_base_new();
    assert_non_null(f->base);
    if (h_dns_start(&f->server) < 0) {
        fprintf(stderr, "skipped: %s\n", "cannot run a DNS server on 127.0.0.1");
        g_skip = true;
        event_base_free(f->base);
        free(f);
        return -1;
    }
    f->dns = evdns_base_new(f->base, 0);
    assert_non_null(f->dns);
    assert_int_equal(evdns_base_nameserver_ip_add(f->dns, h_dns_server(f->server)), 0);
    /* a dead server should fail a round in about a second, not fifteen */
    evdns_base_set_option(f->dns, "timeout:", "1");
    evdns_base_set_option(f->dns, "attempts:", "1");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f == NULL)
        return 0;
    membership_destroy(&f->ms);
    /* cancelled evdns lookups deliver their callbacks from the loop */
    event_base_loop(f->base, EVLOOP_NONBLOCK);
    evdns_base_free(f->dns, 0);
    h_dns_stop(&f->server);
    event_base_free(f->base);
    free(f);
    return 0;
}

static void create(struct fixture *f, const char *spec, unsigned interval_ms)
{
    struct membership_options o = {
        .base = f->base,
        .dns = f->dns,
        .interval_ms = interval_ms,
        .dns_timeout_ms = 1000,
        .ring.table_bits = 12,
        .log = log_cb,
        .log_arg = f,
        .on_change = change_cb,
        .change_arg = f,
    };
    char why[512] = "";
    int rc = membership_create(&f->ms, spec, &o, why, sizeof why);
    if (rc != 0)
        fail_msg("membership_create(%s): %d %s", spec, rc, why);
    assert_int_equal(f->changes, 0);
}

/* Runs the loop until `rounds` rounds have ended in total (guard: 60 s). */
static void run_rounds(struct fixture *f, uint64_t rounds)
{
    time_t guard = time(NULL) + 60;
    struct membership_stats st;
    for (;;) {
        membership_stats(f->ms, &st);
        if (st.rounds_ok + st.rounds_failed >= rounds)
            return;
        if (time(NULL) > guard)
            fail_msg("no membership round ended (have %llu, want %llu); log:\n%s",
                     (unsigned long long)(st.rounds_ok + st.rounds_failed),
                     (unsigned long long)rounds, f->log);
        event_base_loop(f->base, EVLOOP_ONCE);
    }
}

static uint64_t rounds(struct fixture *f)
{
    struct membership_stats st;
    membership_stats(f->ms, &st);
    return st.rounds_ok + st.rounds_failed;
}

static void reload_and_wait(struct fixture *f)
{
    uint64_t before = rounds(f);
    f->log[0] = '\0';
    assert_int_equal(membership_reload(f->ms), 0);
    run_rounds(f, before + 1);
}

static void expect_member(struct ring *r, const char *id, const char *addr)
{
    int i = ring_find(r, id);
    if (i < 0)
        fail_msg("member %s is not on the ring", id);
    assert_string_equal(ring_member_at(r, (size_t)i)->addr, addr);
}

static void expect_host(struct ring *r, const char *id, const char *host)
{
    int i = ring_find(r, id);
    if (i < 0)
        fail_msg("member %s is not on the ring", id);
    const char *got = ring_member_at(r, (size_t)i)->host;
    if (got == NULL || strcmp(got, host) != 0)
        fail_msg("member %s has host %s, not %s", id, got ? got : "(none)", host);
}

static void test_srv_added_removed_changed(void **state)
{
    struct fixture *f = *state;
    zone_srv(f, "ringcache-0", 7070, "127.0.0.10");
    zone_srv(f, "ringcache-1", 7071, "127.0.0.11");
    create(f, "dns:" SVC ":7070", 3600 * 1000);
    struct ring *none = membership_ring(f->ms);
    assert_null(none); /* nothing before the first round */
    run_rounds(f, 1);
    assert_int_equal(f->changes, 1);
    struct ring *r1 = membership_ring(f->ms);
    assert_non_null(r1);
    assert_int_equal(ring_member_count(r1), 2);
    expect_member(r1, "ringcache-0", "127.0.0.10:7070");
    expect_member(r1, "ringcache-1", "127.0.0.11:7071");
    /* the SRV target is the name a TLS client verifies */
    expect_host(r1, "ringcache-0", "ringcache-0." SVC);
    expect_host(r1, "ringcache-1", "ringcache-1." SVC);

    /* added */
    zone_srv(f, "ringcache-2", 7070, "127.0.0.12");
    reload_and_wait(f);
    assert_int_equal(f->changes, 2);
    assert_non_null(strstr(f->log, "msg=\"member joined\""));
    assert_non_null(strstr(f->log, "id=ringcache-2 addr=127.0.0.12:7070"));
    struct ring *r2 = membership_ring(f->ms);
    assert_int_equal(ring_member_count(r2), 3);
    assert_int_equal(ring_member_count(r1), 2); /* the old ring is still ours */

    /* removed */
    zone_srv_remove(f, "ringcache-0");
    reload_and_wait(f);
    assert_int_equal(f->changes, 3);
    assert_non_null(strstr(f->log, "msg=\"member left\""));
    assert_non_null(strstr(f->log, "id=ringcache-0"));
    struct ring *r3 = membership_ring(f->ms);
    assert_int_equal(ring_member_count(r3), 2);
    assert_int_equal(ring_find(r3, "ringcache-0"), -ENOENT);

    /* a pod restarted with a new IP: same id, new address */
    zone_host(f, "ringcache-1." SVC, "127.0.0.21");
    reload_and_wait(f);
    assert_non_null(strstr(f->log, "msg=\"member changed\""));
    struct ring *r4 = membership_ring(f->ms);
    expect_member(r4, "ringcache-1", "127.0.0.21:7071");

    /* nothing changed: no new ring */
    reload_and_wait(f);
    assert_int_equal(f->changes, 4);
    struct ring *r5 = membership_ring(f->ms);
    assert_ptr_equal(r5, r4);

    ring_unref(&r1);
    ring_unref(&r2);
    ring_unref(&r3);
    ring_unref(&r4);
    ring_unref(&r5);
}

static void test_failures_keep_last_ring(void **state)
{
    struct fixture *f = *state;
    zone_srv(f, "ringcache-0", 7070, "127.0.0.10");
    zone_srv(f, "ringcache-1", 7070, "127.0.0.11");
    create(f, "dns:" SVC, 3600 * 1000);
    run_rounds(f, 1);
    struct ring *good = membership_ring(f->ms);
    assert_non_null(good);

    /* a target without an address: the round fails and names it */
    zone_srv(f, "ringcache-2", 7070, "");
    reload_and_wait(f);
    assert_non_null(strstr(f->log, "keeping the last ring"));
    assert_non_null(strstr(f->log, "ringcache-2." SVC));
    struct ring *now = membership_ring(f->ms);
    assert_ptr_equal(now, good);
    ring_unref(&now);

    /* the server gone */
    zone_srv_remove(f, "ringcache-2");
    h_dns_stop(&f->server);
    reload_and_wait(f);
    assert_non_null(strstr(f->log, "keeping the last ring"));
    assert_non_null(strstr(f->log, SVC));
    now = membership_ring(f->ms);
    assert_ptr_equal(now, good);
    ring_unref(&now);
    struct membership_stats st;
    membership_stats(f->ms, &st);
    assert_int_equal(st.rounds_failed, 2);
    assert_int_equal(st.changes, 1);
    assert_int_equal(st.members, 2);
    assert_int_equal(f->changes, 1);
    ring_unref(&good);
}

static void test_a_records_only(void **state)
{
    struct fixture *f = *state;
    zone_host(f, "plain.test.local", "127.0.0.30");
    create(f, "dns:plain.test.local:7443", 3600 * 1000);
    run_rounds(f, 1);
    struct ring *r = membership_ring(f->ms);
    assert_non_null(r);
    assert_int_equal(ring_member_count(r), 1);
    expect_member(r, "127.0.0.30:7443", "127.0.0.30:7443");
    expect_host(r, "127.0.0.30:7443", "plain.test.local");
    ring_unref(&r);
}

static void test_name_that_does_not_resolve(void **state)
{
    struct fixture *f = *state;
    create(f, "dns:nobody.test.local", 3600 * 1000);
    run_rounds(f, 1);
    struct ring *r = membership_ring(f->ms);
    assert_null(r);
    assert_non_null(strstr(f->log, "nobody.test.local"));
    /* first failure, no ring yet: logged as an error */
    char want[16];
    snprintf(want, sizeof want, "%d msg=", (int)MEMBERSHIP_ERROR);
    assert_non_null(strstr(f->log, want));
}

static void test_interval_re_resolves(void **state)
{
    struct fixture *f = *state;
    zone_srv(f, "ringcache-0", 7070, "127.0.0.10");
    create(f, "dns:" SVC, 20);
    run_rounds(f, 1);
    assert_int_equal(f->changes, 1);
    zone_srv(f, "ringcache-1", 7070, "127.0.0.11");
    /* no reload: the timer alone must pick the new pod up */
    time_t guard = time(NULL) + 60;
    while (f->changes < 2) {
        if (time(NULL) > guard)
            fail_msg("the interval never re-resolved; log:\n%s", f->log);
        event_base_loop(f->base, EVLOOP_ONCE);
    }
    struct ring *r = membership_ring(f->ms);
    assert_int_equal(ring_member_count(r), 2);
    ring_unref(&r);
    assert_true(h_dns_queries(f->server) >= 4); /* two rounds: SRV + A each */
}

static void test_bad_specs(void **state)
{
    struct fixture *f = *state;
    struct membership_options o = {.base = f->base, .dns = f->dns};
    char why[256] = "";
    struct membership *ms = NULL;
    assert_int_equal(membership_create(&ms, "dns:" SVC ":0", &o, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "port"));
    assert_int_equal(membership_create(&ms, "dns:bad..name", &o, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "bad..name"));
    assert_int_equal(membership_create(&ms, "dns:", &o, why, sizeof why), -EINVAL);
    assert_null(ms);
}

/* options.nameserver instead of an evdns base: the membership asks that one
 * server (a resolver on another port, as rc_config.dns_server does). */
static void test_nameserver_option(void **state)
{
    struct fixture *f = *state;
    zone_srv(f, "ringcache-0", 7070, "127.0.0.10");
    zone_srv(f, "ringcache-1", 7071, "127.0.0.11");
    struct membership_options o = {
        .base = f->base,
        .nameserver = h_dns_server(f->server),
        .interval_ms = 3600 * 1000,
        .dns_timeout_ms = 1000,
        .ring.table_bits = 12,
        .log = log_cb,
        .log_arg = f,
        .on_change = change_cb,
        .change_arg = f,
    };
    char why[512] = "";
    int rc = membership_create(&f->ms, "dns:" SVC ":7070", &o, why, sizeof why);
    if (rc != 0)
        fail_msg("membership_create: %d %s", rc, why);
    int64_t before = h_dns_queries(f->server);
    run_rounds(f, 1);
    struct ring *r = membership_ring(f->ms);
    if (r == NULL)
        fail_msg("no ring; log:\n%s", f->log);
    assert_int_equal(ring_member_count(r), 2);
    expect_member(r, "ringcache-1", "127.0.0.11:7071");
    expect_host(r, "ringcache-1", "ringcache-1." SVC);
    ring_unref(&r);
    assert_true(h_dns_queries(f->server) >= before + 3); /* SRV + one A per target */

    /* not an address: refused at create, naming it and the form */
    struct membership *bad = NULL;
    o.nameserver = "dns.example.com";
    assert_int_equal(membership_create(&bad, "dns:" SVC, &o, why, sizeof why), -EINVAL);
    assert_null(bad);
    assert_non_null(strstr(why, "dns.example.com"));
    assert_non_null(strstr(why, "IP:PORT"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_srv_added_removed_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures_keep_last_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_records_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_that_does_not_resolve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interval_re_resolves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_specs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nameserver_option, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    return g_skip ? 77 : rc;
}
