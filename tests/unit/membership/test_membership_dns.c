/* SPDX-License-Identifier: Apache-2.0
 *
 * DNS membership against a tiny DNS server this test runs on 127.0.0.1 (an
 * ephemeral port, libevent's evdns server API), reached through an evdns base
 * pointed at it (glibc cannot be pointed at a resolver on a custom port).
 * Covers: SRV records giving pod names and ports; records added, removed and
 * changed; the server gone and a target that does not resolve (the last good
 * ring is kept); A-only names; a name that does not resolve at all; and
 * re-resolution on the interval timer. Rounds are driven by
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
#include <event2/dns_struct.h>
#include <event2/event.h>
#include <event2/util.h>

#include "membership.h"

#define SVC "ringcache-headless.test.local"
#define MAX_RECORDS 8
#define TEST_TYPE_SRV 33 /* RFC 2782; evdns has no name for it */

struct host {
	char name[128];
	char ip[32]; /* "" = no A record */
};

struct zone {
	struct {
		char target[128];
		uint16_t port;
	} srv[MAX_RECORDS];
	int nsrv;
	struct host hosts[MAX_RECORDS * 2];
	int nhosts;
	int queries;
};

struct fixture {
	struct event_base *base;
	struct evdns_base *dns;
	evutil_socket_t fd;
	struct evdns_server_port *port;
	struct zone zone;
	struct membership *ms;
	char log[8192];
	int changes;
};

static bool g_skip;

static int encode_name(uint8_t *out, const char *name)
{
	int o = 0;
	const char *p = name;
	while (*p) {
		const char *dot = strchr(p, '.');
		int l = dot ? (int)(dot - p) : (int)strlen(p);
		out[o++] = (uint8_t)l;
		memcpy(out + o, p, (size_t)l);
		o += l;
		p += l + (dot ? 1 : 0);
	}
	out[o++] = 0;
	return o;
}

static void server_cb(struct evdns_server_request *req, void *arg)
{
	struct zone *z = arg;
	z->queries++;
	bool found = false;
	for (int i = 0; i < req->nquestions; i++) {
		const struct evdns_server_question *q = req->questions[i];
		if (q->type == TEST_TYPE_SRV && strcasecmp(q->name, SVC) == 0) {
			found = true;
			for (int k = 0; k < z->nsrv; k++) {
				uint8_t rdata[300] = { 0, 10, 0, 50 };
				rdata[4] = (uint8_t)(z->srv[k].port >> 8);
				rdata[5] = (uint8_t)z->srv[k].port;
				int l = 6 + encode_name(rdata + 6, z->srv[k].target);
				evdns_server_request_add_reply(req, EVDNS_ANSWER_SECTION, q->name,
							       TEST_TYPE_SRV, EVDNS_CLASS_INET, 5, l,
							       0, (const char *)rdata);
			}
		}
		for (int k = 0; k < z->nhosts; k++) {
			if (strcasecmp(q->name, z->hosts[k].name) != 0)
				continue;
			found = true;
			if (q->type == EVDNS_TYPE_A && z->hosts[k].ip[0] != '\0') {
				struct in_addr a;
				inet_pton(AF_INET, z->hosts[k].ip, &a);
				evdns_server_request_add_a_reply(req, q->name, 1, &a, 5);
			}
		}
	}
	evdns_server_request_respond(req, found ? 0 : DNS_ERR_NOTEXIST);
}

static void zone_host(struct zone *z, const char *name, const char *ip)
{
	for (int k = 0; k < z->nhosts; k++)
		if (strcmp(z->hosts[k].name, name) == 0) {
			snprintf(z->hosts[k].ip, sizeof z->hosts[k].ip, "%s", ip);
			return;
		}
	assert_true(z->nhosts < MAX_RECORDS * 2);
	snprintf(z->hosts[z->nhosts].name, sizeof z->hosts[0].name, "%s", name);
	snprintf(z->hosts[z->nhosts].ip, sizeof z->hosts[0].ip, "%s", ip);
	z->nhosts++;
}

static void zone_srv(struct zone *z, const char *pod, uint16_t port, const char *ip)
{
	char target[128];
	snprintf(target, sizeof target, "%s." SVC, pod);
	assert_true(z->nsrv < MAX_RECORDS);
	snprintf(z->srv[z->nsrv].target, sizeof z->srv[0].target, "%s", target);
	z->srv[z->nsrv].port = port;
	z->nsrv++;
	if (ip != NULL)
		zone_host(z, target, ip);
}

static void zone_srv_remove(struct zone *z, const char *pod)
{
	for (int k = 0; k < z->nsrv; k++)
		if (strncmp(z->srv[k].target, pod, strlen(pod)) == 0 &&
		    z->srv[k].target[strlen(pod)] == '.') {
			z->srv[k] = z->srv[--z->nsrv];
			return;
		}
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

static void server_stop(struct fixture *f)
{
	if (f->port != NULL) {
		evdns_close_server_port(f->port);
		f->port = NULL;
	}
	if (f->fd >= 0) {
		evutil_closesocket(f->fd);
		f->fd = -1;
	}
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	assert_non_null(f);
	f->base = event_base_new();
	assert_non_null(f->base);
	f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t sl = sizeof sa;
	if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    getsockname(f->fd, (struct sockaddr *)&sa, &sl) < 0) {
		fprintf(stderr, "skipped: cannot bind a UDP socket on 127.0.0.1: %s\n",
			strerror(errno));
		g_skip = true;
		return -1;
	}
	f->port = evdns_add_server_port_with_base(f->base, f->fd, 0, server_cb, &f->zone);
	assert_non_null(f->port);
	f->dns = evdns_base_new(f->base, 0);
	assert_non_null(f->dns);
	char ns[64];
	snprintf(ns, sizeof ns, "127.0.0.1:%u", ntohs(sa.sin_port));
	assert_int_equal(evdns_base_nameserver_ip_add(f->dns, ns), 0);
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
	server_stop(f);
	event_base_free(f->base);
	free(f);
	return 0;
}

static void create(struct fixture *f, const char *spec, unsigned interval_ms)
{
	struct membership_options o = {
		.base = f->base, .dns = f->dns, .interval_ms = interval_ms,
		.dns_timeout_ms = 1000, .ring.table_bits = 12,
		.log = log_cb, .log_arg = f, .on_change = change_cb, .change_arg = f,
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

static void test_srv_added_removed_changed(void **state)
{
	struct fixture *f = *state;
	zone_srv(&f->zone, "ringcache-0", 7070, "127.0.0.10");
	zone_srv(&f->zone, "ringcache-1", 7071, "127.0.0.11");
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

	/* added */
	zone_srv(&f->zone, "ringcache-2", 7070, "127.0.0.12");
	reload_and_wait(f);
	assert_int_equal(f->changes, 2);
	assert_non_null(strstr(f->log, "msg=\"member joined\""));
	assert_non_null(strstr(f->log, "id=ringcache-2 addr=127.0.0.12:7070"));
	struct ring *r2 = membership_ring(f->ms);
	assert_int_equal(ring_member_count(r2), 3);
	assert_int_equal(ring_member_count(r1), 2); /* the old ring is still ours */

	/* removed */
	zone_srv_remove(&f->zone, "ringcache-0");
	reload_and_wait(f);
	assert_int_equal(f->changes, 3);
	assert_non_null(strstr(f->log, "msg=\"member left\""));
	assert_non_null(strstr(f->log, "id=ringcache-0"));
	struct ring *r3 = membership_ring(f->ms);
	assert_int_equal(ring_member_count(r3), 2);
	assert_int_equal(ring_find(r3, "ringcache-0"), -ENOENT);

	/* a pod restarted with a new IP: same id, new address */
	zone_host(&f->zone, "ringcache-1." SVC, "127.0.0.21");
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
	zone_srv(&f->zone, "ringcache-0", 7070, "127.0.0.10");
	zone_srv(&f->zone, "ringcache-1", 7070, "127.0.0.11");
	create(f, "dns:" SVC, 3600 * 1000);
	run_rounds(f, 1);
	struct ring *good = membership_ring(f->ms);
	assert_non_null(good);

	/* a target without an address: the round fails and names it */
	zone_srv(&f->zone, "ringcache-2", 7070, "");
	reload_and_wait(f);
	assert_non_null(strstr(f->log, "keeping the last ring"));
	assert_non_null(strstr(f->log, "ringcache-2." SVC));
	struct ring *now = membership_ring(f->ms);
	assert_ptr_equal(now, good);
	ring_unref(&now);

	/* the server gone */
	zone_srv_remove(&f->zone, "ringcache-2");
	server_stop(f);
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
	zone_host(&f->zone, "plain.test.local", "127.0.0.30");
	create(f, "dns:plain.test.local:7443", 3600 * 1000);
	run_rounds(f, 1);
	struct ring *r = membership_ring(f->ms);
	assert_non_null(r);
	assert_int_equal(ring_member_count(r), 1);
	expect_member(r, "127.0.0.30:7443", "127.0.0.30:7443");
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
	zone_srv(&f->zone, "ringcache-0", 7070, "127.0.0.10");
	create(f, "dns:" SVC, 20);
	run_rounds(f, 1);
	assert_int_equal(f->changes, 1);
	zone_srv(&f->zone, "ringcache-1", 7070, "127.0.0.11");
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
	assert_true(f->zone.queries >= 4); /* two rounds: SRV + A each */
}

static void test_bad_specs(void **state)
{
	struct fixture *f = *state;
	struct membership_options o = { .base = f->base, .dns = f->dns };
	char why[256] = "";
	struct membership *ms = NULL;
	assert_int_equal(membership_create(&ms, "dns:" SVC ":0", &o, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "port"));
	assert_int_equal(membership_create(&ms, "dns:bad..name", &o, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "bad..name"));
	assert_int_equal(membership_create(&ms, "dns:", &o, why, sizeof why), -EINVAL);
	assert_null(ms);
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
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	return g_skip ? 77 : rc;
}
