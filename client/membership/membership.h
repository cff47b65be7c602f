/* SPDX-License-Identifier: Apache-2.0
 *
 * membership: where the ring's member list comes from, behind one interface.
 * A source is named by a spec string:
 *   "ringcache-0=10.0.0.1:7070,ringcache-1=10.0.0.2:7070"  a static list
 *   "10.0.0.1:7070,10.0.0.2:7070"                          a static list (id = address)
 *   "file:/etc/ringcache/members"                          a file, re-read by reload
 *   "dns:ringcache-headless.ns.svc.cluster.local[:7070]"   a headless Service
 * Every source builds a ring (ring/ring.h) and swaps it into a ring_holder, so
 * lookups on any thread see either the old or the new ring, never a mix.
 *
 * Member list grammar (static lists and files): members are separated by commas
 * or white space; `#` starts a comment to the end of the line. A member is
 *   id=host:port     stable id (letters, digits, '.', '_', '-') and address
 *   host:port        the address is also the id
 * optionally followed by `,weight` (an integer 1..1000000; a token that is all
 * digits is the weight of the member before it). host is a name, an IPv4
 * address or a bracketed IPv6 address ([fd00::1]:7070); a missing port is the
 * default port. An empty list, a malformed member and a duplicate id are
 * errors whose message names the member and the fix.
 *
 * DNS: the SRV records of the name give one member per target: the id is the
 * target's first label (the StatefulSet pod name, stable across restarts), the
 * address is the target's IPv4 address (IPv6 if it has none) and the SRV port,
 * and the member's host is the target itself (ring_member.host: the name TLS
 * verifies, since a certificate shared by the pods cannot name their IPs).
 * A name without SRV records is looked up as A (then AAAA): each address is a
 * member whose id is "ip:port" and whose host is the name. The name is re-resolved every interval; a
 * change is logged and the ring rebuilt. A round that fails (time-out, server
 * failure, a target that does not resolve) changes nothing: the last good ring
 * stays. Give the fully qualified name: the SRV query does not walk the
 * resolver's search list.
 *
 * Thread-safety: membership_ring() and membership_stats() may be called from
 * any thread. Everything else, and every callback, runs on the thread that
 * runs `base` (the caller's event loop); create, reload and destroy must be
 * called there too. on_change never fires from inside membership_create()
 * (the static or file ring is in place when it returns); for a file source it
 * fires from inside membership_reload(), for dns from the event loop. The log
 * callback may fire from any of these, always on the loop thread.
 */
#ifndef RINGCACHE_MEMBERSHIP_H
#define RINGCACHE_MEMBERSHIP_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

struct event_base;
struct evdns_base;

#define MEMBERSHIP_DEFAULT_PORT           7070u
#define MEMBERSHIP_DEFAULT_INTERVAL_MS    10000u
#define MEMBERSHIP_DEFAULT_DNS_TIMEOUT_MS 2000u
/* Longest member list text a file may hold. */
#define MEMBERSHIP_FILE_MAX (1u << 20)

enum membership_level {
    MEMBERSHIP_DEBUG,
    MEMBERSHIP_INFO,
    MEMBERSHIP_WARN,
    MEMBERSHIP_ERROR,
};

/* A log line without level and time, in logfmt: `msg="member joined"
 * source=dns:x id=ringcache-3 addr=10.0.0.4:7070`. `line` is borrowed. */
typedef void (*membership_log_fn)(void *arg, enum membership_level level, const char *line);

/* A new ring was installed (the holder already has it); `ring` is borrowed:
 * ring_ref() it to keep it. */
typedef void (*membership_change_fn)(void *arg, struct ring *ring);

/* A parsed member list. Owns its strings; free with membership_list_deinit(). */
struct membership_list {
    struct ring_member *members;
    size_t n;
    char *strings;
};

/* Parses `len` bytes of `text` (need not be NUL-terminated) in the grammar
 * above into *out (caller-owned struct, filled on success). A member without a
 * port gets `default_port`, or is an error if it is 0. Returns 0, -EINVAL with
 * a sentence in why[0..why_len) (may be NULL) that names the bad member and the
 * fix, or -ENOMEM. Pure; any thread. */
int membership_parse_list(const char *text, size_t len, uint16_t default_port,
                          struct membership_list *out, char *why, size_t why_len);

/* Frees what membership_parse_list() filled; leaves *l empty. Accepts an
 * already empty list. */
void membership_list_deinit(struct membership_list *l);

struct membership_options {
    /* Event loop for DNS queries and the re-resolution timer. Required for
	 * dns: sources; unused by static and file sources (may be NULL). */
    struct event_base *base;
    /* Resolver for target lookups and the nameservers for SRV queries. NULL:
	 * the membership creates one from /etc/resolv.conf (or `nameserver`).
	 * Borrowed. */
    struct evdns_base *dns;
    /* dns: with `dns` NULL, the one DNS server to ask instead of those of
	 * /etc/resolv.conf: "IP" or "IP:PORT" ("[IPv6]:PORT"), e.g.
	 * "10.96.0.10:53" or a test's "127.0.0.1:5353". NULL: /etc/resolv.conf.
	 * Borrowed for membership_create(). */
    const char *nameserver;
    /* dns: re-resolution interval; 0 = MEMBERSHIP_DEFAULT_INTERVAL_MS. */
    unsigned interval_ms;
    /* dns: time-out of one SRV query per nameserver; 0 = default. */
    unsigned dns_timeout_ms;
    /* Port for members without one and for dns: names without SRV; 0 = 7070. */
    uint16_t default_port;
    /* Ring settings; every process of a cluster must agree on them. */
    struct ring_options ring;
    membership_log_fn log;
    void *log_arg;
    membership_change_fn on_change;
    void *change_arg;
};

struct membership_stats {
    uint64_t rounds_ok;     /* resolutions/reads that produced a member list */
    uint64_t rounds_failed; /* ... that failed and kept the last good ring */
    uint64_t changes;       /* rings installed */
    uint64_t members;       /* members of the current ring (0 if none) */
};

struct membership;

/* Creates the source named by `spec` (see above). A static list or file is
 * parsed and its ring built before this returns (errors: -EINVAL malformed or
 * empty, -ENOENT/-EACCES/... unreadable file, -EFBIG file over
 * MEMBERSHIP_FILE_MAX, -ENOMEM). A dns: source starts its first resolution and
 * returns 0 with no ring yet (membership_ring() gives NULL until the first
 * round succeeds; on_change tells when). why[0..why_len) gets a sentence on
 * failure (may be NULL). Must be called on `opts->base`'s thread. */
int membership_create(struct membership **out, const char *spec,
                      const struct membership_options *opts, char *why, size_t why_len);

/* Stops the source (pending queries are cancelled without callbacks), drops
 * its ring and frees it. Accepts NULL; sets *ms to NULL. Loop thread. */
void membership_destroy(struct membership **ms);

/* The current ring, with a new reference (release with ring_unref()), or NULL
 * before the first successful round. Any thread; lock-free. */
struct ring *membership_ring(struct membership *ms);

/* File: re-reads it now (the daemon calls this on SIGHUP); returns 0 (changed
 * or not) or the -errno of the failure, in which case the last good ring stays
 * and the failure is logged. DNS: starts a round now unless one is running;
 * returns 0 (the outcome shows in the log and the stats). Static: returns 0.
 * Loop thread. */
int membership_reload(struct membership *ms);

/* Counters; any thread. */
void membership_stats(struct membership *ms, struct membership_stats *out);

/* The spec this source was created from. */
const char *membership_spec(const struct membership *ms);

#endif /* RINGCACHE_MEMBERSHIP_H */
