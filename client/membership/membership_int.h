/* SPDX-License-Identifier: Apache-2.0
 *
 * Internals shared by the membership files: the object, the install step that
 * every source ends in, the DNS source's entry points, and the DNS message
 * codec (SRV queries are sent by hand: libevent 2.1's evdns resolves only A,
 * AAAA and PTR). Thread-safety as in membership.h.
 */
#ifndef RINGCACHE_MEMBERSHIP_INT_H
#define RINGCACHE_MEMBERSHIP_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "membership.h"

enum membership__kind {
    MEMBERSHIP__STATIC,
    MEMBERSHIP__FILE,
    MEMBERSHIP__DNS,
};

struct membership__dns;

struct membership {
    enum membership__kind kind;
    char *spec;
    char *path;    /* file: */
    char *name;    /* dns: */
    uint16_t port; /* dns: port for A-only answers and the preferred SRV port */
    struct membership_options o;
    struct ring_holder *holder;
    struct membership__dns *dns;
    bool creating; /* inside membership_create: no on_change */
    _Atomic uint64_t rounds_ok, rounds_failed, changes, members;
};

void membership__log(struct membership *ms, enum membership_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copies `s` into out[0..len) for a logfmt quoted value (no '"', no control
 * characters). Returns out. */
const char *membership__q(char *out, size_t len, const char *s);

/* Builds and installs a ring from `n` members unless they equal the current
 * ring's; logs joins, departures and address changes; counts a good round.
 * Returns 1 if a new ring was installed, 0 if nothing changed, or -errno (a
 * sentence in why) if the ring could not be built (the last ring stays). */
int membership__install(struct membership *ms, const struct ring_member *m, size_t n, char *why,
                        size_t why_len);

/* DNS source: set up and start the first round / start a round now / stop. */
int membership__dns_start(struct membership *ms, char *why, size_t why_len);
void membership__dns_reload(struct membership *ms);
void membership__dns_stop(struct membership *ms);

/* ---- DNS messages (membership_dnsmsg.c) ---- */

#define MEMBERSHIP__DNS_TYPE_A   1
#define MEMBERSHIP__DNS_TYPE_SRV 33
#define MEMBERSHIP__DNS_NAME_MAX 255
#define MEMBERSHIP__DNS_UDP_MAX  4096

struct membership__srv {
    uint16_t priority, weight, port;
    char target[MEMBERSHIP__DNS_NAME_MAX + 1];
};

/* Writes a query for (name, type) with id `id`, recursion desired and an EDNS0
 * OPT record asking for MEMBERSHIP__DNS_UDP_MAX-byte answers. Returns the
 * length, or -EINVAL if the name is not a valid DNS name or does not fit. */
int membership__dns_query(uint8_t *buf, size_t cap, uint16_t id, const char *name, uint16_t type);

/* Parses an answer to query `id`. Returns the DNS RCODE (0 NOERROR, 3 NXDOMAIN,
 * ...) with the SRV records of the answer section in out[0..*n) (at most `cap`;
 * others ignored), or -EBADMSG (malformed, not an answer, wrong id) or
 * -EMSGSIZE (truncated: TC set). Untrusted input: bounded, never fatal. */
int membership__dns_parse_srv(const uint8_t *msg, size_t len, uint16_t id,
                              struct membership__srv *out, size_t cap, size_t *n);

#endif /* RINGCACHE_MEMBERSHIP_INT_H */
