/* SPDX-License-Identifier: Apache-2.0
 *
 * `ringcache ring --members LIST KEY...`: builds the ring every client and
 * node would build from LIST and prints each key's owners in preference order
 * (first = the node that fills and serves it, then where clients go when it is
 * down). LIST is any membership spec: a static list, file:PATH, or dns:NAME
 * (resolved once). A KEY is hashed as the bytes given on the command line
 * (XXH3-64, seed 0, no terminating NUL), exactly as ring_lookup() hashes a key;
 * with --hex, KEY is hexadecimal (e.g. a 32-digit block key) and its decoded
 * bytes are hashed.
 */
#include "cli_ring.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "membership.h"
#include "ring.h"

static const char usage[] =
    "usage: ringcache ring --members LIST [options] KEY...\n"
    "\n"
    "Prints the owners of each KEY on the ring built from LIST, in preference\n"
    "order, one line per key: KEY<TAB>id=addr id=addr ...\n"
    "\n"
    "  --members LIST    id=host:port[,weight],... or host:port,... or file:PATH\n"
    "                    or dns:NAME[:PORT] (resolved once)\n"
    "  --owners N        owners to print per key (default 3, at most 16)\n"
    "  --table-bits B    ring table size 2^B (default 20; must match the cluster)\n"
    "  --hex             KEY is hexadecimal; its bytes are hashed\n"
    "  --shares          also print each member's exact share of the hash space\n"
    "  --help            this text\n"
    "\n"
    "A KEY is hashed as the bytes given (XXH3-64, seed 0), like ring_lookup().\n";

/* `--name value` or `--name=value`: 1 and *value set, 0 not this option,
 * -1 value missing. */
static int opt(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t l = strlen(name);
    if (strncmp(argv[*i], name, l) != 0)
        return 0;
    if (argv[*i][l] == '=') {
        *value = argv[*i] + l + 1;
        return 1;
    }
    if (argv[*i][l] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "ringcache ring: %s needs a value (see --help)\n", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

static int hex_decode(const char *s, unsigned char *out, size_t cap, size_t *len)
{
    size_t n = strlen(s);
    if (n % 2 != 0 || n / 2 > cap)
        return -EINVAL;
    for (size_t i = 0; i < n; i += 2) {
        if (!isxdigit((unsigned char)s[i]) || !isxdigit((unsigned char)s[i + 1]))
            return -EINVAL;
        char b[3] = {s[i], s[i + 1], 0};
        out[i / 2] = (unsigned char)strtoul(b, NULL, 16);
    }
    *len = n / 2;
    return 0;
}

static void log_stderr(void *arg, enum membership_level level, const char *line)
{
    if (level >= MEMBERSHIP_WARN)
        fprintf(stderr, "ringcache ring: %s\n", line);
}

/* dns: sources resolve on an event loop: run it until the first round ends. */
static struct ring *resolve(const char *spec, unsigned bits, struct event_base **basep,
                            struct membership **msp)
{
    struct membership_options o = {.ring.table_bits = bits, .log = log_stderr};
    char why[640] = "";
    bool dns = strncmp(spec, "dns:", 4) == 0;
    if (dns) {
        *basep = event_base_new();
        if (*basep == NULL) {
            fprintf(stderr, "ringcache ring: cannot create an event loop\n");
            return NULL;
        }
        o.base = *basep;
    }
    int rc = membership_create(msp, spec, &o, why, sizeof why);
    if (rc < 0) {
        fprintf(stderr, "ringcache ring: %s\n", why[0] ? why : strerror(-rc));
        return NULL;
    }
    if (dns) {
        struct membership_stats st;
        do {
            if (event_base_loop(*basep, EVLOOP_ONCE) < 0)
                break;
            membership_stats(*msp, &st);
        } while (st.rounds_ok + st.rounds_failed == 0);
    }
    return membership_ring(*msp);
}

int cli_ring_main(int argc, char **argv)
{
    const char *members = NULL, *v;
    unsigned long owners = 3, bits = 0;
    int hex = 0, shares = 0, first_key = argc, r;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if ((r = opt(argc, argv, &i, "--members", &v)) != 0) {
            if (r < 0)
                return 2;
            members = v;
        } else if ((r = opt(argc, argv, &i, "--owners", &v)) != 0) {
            char *end;
            if (r < 0)
                return 2;
            owners = strtoul(v, &end, 10);
            if (*end != '\0' || owners == 0 || owners > RING_OWNERS_MAX) {
                fprintf(stderr, "ringcache ring: --owners %s: give 1..%u\n", v, RING_OWNERS_MAX);
                return 2;
            }
        } else if ((r = opt(argc, argv, &i, "--table-bits", &v)) != 0) {
            char *end;
            if (r < 0)
                return 2;
            bits = strtoul(v, &end, 10);
            if (*end != '\0' || bits < RING_TABLE_BITS_MIN || bits > RING_TABLE_BITS_MAX) {
                fprintf(stderr, "ringcache ring: --table-bits %s: give %u..%u\n", v,
                        RING_TABLE_BITS_MIN, RING_TABLE_BITS_MAX);
                return 2;
            }
        } else if (strcmp(argv[i], "--hex") == 0) {
            hex = 1;
        } else if (strcmp(argv[i], "--shares") == 0) {
            shares = 1;
        } else if (strcmp(argv[i], "--") == 0) {
            first_key = i + 1;
            break;
        } else if (strncmp(argv[i], "--", 2) == 0) {
            fprintf(stderr, "ringcache ring: unknown option %s (see --help)\n", argv[i]);
            return 2;
        } else {
            first_key = i;
            break;
        }
    }
    if (members == NULL) {
        fprintf(stderr, "ringcache ring: give the members with --members LIST "
                        "(see --help)\n");
        return 2;
    }
    if (first_key >= argc && !shares) {
        fprintf(stderr, "ringcache ring: give at least one KEY (or --shares)\n");
        return 2;
    }

    struct event_base *base = NULL;
    struct membership *ms = NULL;
    struct ring *ring = resolve(members, (unsigned)bits, &base, &ms);
    int rc = 0;
    if (ring == NULL) {
        rc = 1;
        goto out;
    }
    if (shares) {
        for (size_t i = 0; i < ring_member_count(ring); i++) {
            const struct ring_member *m = ring_member_at(ring, i);
            printf("share\t%s=%s\t%.6f\n", m->id, m->addr,
                   (double)ring_member_slots(ring, i) / ring_slots(ring));
        }
    }
    for (int i = first_key; i < argc; i++) {
        unsigned char buf[1024];
        const void *key = argv[i];
        size_t len = strlen(argv[i]);
        if (hex) {
            if (hex_decode(argv[i], buf, sizeof buf, &len) < 0) {
                fprintf(stderr,
                        "ringcache ring: key %s is not hexadecimal (an even "
                        "number of 0-9a-f digits, at most %zu bytes)\n",
                        argv[i], sizeof buf);
                rc = 2;
                goto out;
            }
            key = buf;
        }
        const struct ring_member *o[RING_OWNERS_MAX];
        int n = ring_lookup(ring, key, len, o, owners);
        printf("%s\t", argv[i]);
        for (int k = 0; k < n; k++)
            printf("%s%s=%s", k ? " " : "", o[k]->id, o[k]->addr);
        printf("\n");
    }
out:
    ring_unref(&ring);
    membership_destroy(&ms);
    if (base != NULL) {
        /* let cancelled lookups deliver their (ignored) callbacks and free */
        event_base_loop(base, EVLOOP_NONBLOCK);
        event_base_free(base);
    }
    return rc;
}
