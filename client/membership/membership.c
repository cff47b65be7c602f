/* SPDX-License-Identifier: Apache-2.0
 *
 * The membership object: picks the source from the spec, owns the ring holder,
 * and installs each new member list as a ring (logging who joined, left or
 * moved). The static and file sources live here; the DNS source is in
 * membership_dns.c.
 */
#include "membership_int.h"
#include "errf.h"
#include "readfile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void membership__log(struct membership *ms, enum membership_level level, const char *fmt, ...)
{
    if (ms->o.log == NULL)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ms->o.log(ms->o.log_arg, level, line);
}

const char *membership__q(char *out, size_t len, const char *s)
{
    size_t k = 0;
    for (; s && *s && k + 1 < len; s++)
        out[k++] = (*s == '"' || (unsigned char)*s < 0x20) ? '\'' : *s;
    out[k] = '\0';
    return out;
}

static int cmp_member_id(const void *a, const void *b)
{
    const struct ring_member *x = a, *y = b;
    return strcmp(x->id, y->id);
}

/* Host names as the ring keeps them: NULL and "" are both "none". */
static bool same_host(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

int membership__install(struct membership *ms, const struct ring_member *in, size_t n, char *why,
                        size_t why_len)
{
    struct ring_member *m = malloc((n ? n : 1) * sizeof *m);
    if (m == NULL)
        return -ENOMEM;
    memcpy(m, in, n * sizeof *m);
    for (size_t i = 0; i < n; i++)
        if (m[i].weight == 0)
            m[i].weight = 1;
    qsort(m, n, sizeof *m, cmp_member_id);

    struct ring *old = ring_holder_acquire(ms->holder);
    if (old != NULL && ring_member_count(old) == n) {
        size_t i = 0;
        for (; i < n; i++) {
            const struct ring_member *o = ring_member_at(old, i);
            if (strcmp(o->id, m[i].id) || strcmp(o->addr, m[i].addr) || o->weight != m[i].weight ||
                !same_host(o->host, m[i].host))
                break;
        }
        if (i == n) {
            ring_unref(&old);
            free(m);
            atomic_fetch_add(&ms->rounds_ok, 1);
            return 0;
        }
    }

    struct ring *next = NULL;
    int rc = ring_create(&next, m, n, &ms->o.ring, why, why_len);
    if (rc < 0) {
        ring_unref(&old);
        free(m);
        return rc;
    }
    /* Merge the two id-sorted lists to name what changed. */
    char q[256];
    size_t i = 0, j = 0, on = old ? ring_member_count(old) : 0;
    while (i < on || j < n) {
        const struct ring_member *o = i < on ? ring_member_at(old, i) : NULL;
        const struct ring_member *nw = j < n ? ring_member_at(next, j) : NULL;
        int c = !o ? 1 : !nw ? -1 : strcmp(o->id, nw->id);
        if (c < 0) {
            membership__log(ms, MEMBERSHIP_INFO,
                            "msg=\"member left\" source=\"%s\" "
                            "id=%s addr=%s",
                            membership__q(q, sizeof q, ms->spec), o->id, o->addr);
            i++;
        } else if (c > 0) {
            membership__log(ms, MEMBERSHIP_INFO,
                            "msg=\"member joined\" source=\"%s\" "
                            "id=%s addr=%s weight=%u host=%s",
                            membership__q(q, sizeof q, ms->spec), nw->id, nw->addr, nw->weight,
                            nw->host ? nw->host : "-");
            j++;
        } else {
            if (strcmp(o->addr, nw->addr) || o->weight != nw->weight ||
                !same_host(o->host, nw->host))
                membership__log(ms, MEMBERSHIP_INFO,
                                "msg=\"member changed\" "
                                "source=\"%s\" id=%s addr=%s old_addr=%s weight=%u "
                                "old_weight=%u host=%s old_host=%s",
                                membership__q(q, sizeof q, ms->spec), nw->id, nw->addr, o->addr,
                                nw->weight, o->weight, nw->host ? nw->host : "-",
                                o->host ? o->host : "-");
            i++;
            j++;
        }
    }
    membership__log(ms, MEMBERSHIP_INFO,
                    "msg=\"ring rebuilt\" source=\"%s\" members=%zu "
                    "previous=%zu",
                    membership__q(q, sizeof q, ms->spec), n, on);
    ring_unref(&old);
    free(m);
    ring_holder_swap(ms->holder, ring_ref(next));
    atomic_fetch_add(&ms->rounds_ok, 1);
    atomic_fetch_add(&ms->changes, 1);
    atomic_store(&ms->members, n);
    if (ms->o.on_change != NULL && !ms->creating)
        ms->o.on_change(ms->o.change_arg, next);
    ring_unref(&next);
    return 1;
}

/* Parses `text` and installs it. */
static int install_text(struct membership *ms, const char *text, size_t len, char *why,
                        size_t why_len)
{
    struct membership_list l = {0};
    int rc = membership_parse_list(text, len, ms->o.default_port, &l, why, why_len);
    if (rc < 0)
        return rc;
    rc = membership__install(ms, l.members, l.n, why, why_len);
    membership_list_deinit(&l);
    return rc;
}

static int load_file(struct membership *ms, char *why, size_t why_len)
{
    char *text = NULL;
    size_t len = 0;
    int rc = readfile_all(ms->path, MEMBERSHIP_FILE_MAX, "member file",
                          "check the path given as file:PATH", &text, &len, why, why_len);
    if (rc < 0)
        return rc;
    char inner[512] = "";
    rc = install_text(ms, text, len, inner, sizeof inner);
    free(text);
    if (rc < 0)
        errf_set(why, why_len, "member file %s: %s", ms->path, inner);
    return rc;
}

int membership_create(struct membership **out, const char *spec,
                      const struct membership_options *opts, char *why, size_t why_len)
{
    if (spec == NULL || spec[0] == '\0') {
        errf_set(why, why_len,
                 "no members given (give a list id=host:port,..., "
                 "file:PATH or dns:NAME)");
        return -EINVAL;
    }
    struct membership *ms = calloc(1, sizeof *ms);
    if (ms == NULL)
        return -ENOMEM;
    if (opts != NULL)
        ms->o = *opts;
    if (ms->o.default_port == 0)
        ms->o.default_port = MEMBERSHIP_DEFAULT_PORT;
    if (ms->o.interval_ms == 0)
        ms->o.interval_ms = MEMBERSHIP_DEFAULT_INTERVAL_MS;
    if (ms->o.dns_timeout_ms == 0)
        ms->o.dns_timeout_ms = MEMBERSHIP_DEFAULT_DNS_TIMEOUT_MS;
    ms->spec = strdup(spec);
    int rc = ms->spec ? ring_holder_create(&ms->holder, NULL) : -ENOMEM;
    if (rc < 0)
        goto fail;

    ms->creating = true;
    if (strncmp(spec, "file:", 5) == 0) {
        ms->kind = MEMBERSHIP__FILE;
        ms->path = strdup(spec + 5);
        if (ms->path == NULL) {
            rc = -ENOMEM;
            goto fail;
        }
        if (ms->path[0] == '\0') {
            errf_set(why, why_len, "file: needs a path (file:/etc/ringcache/members)");
            rc = -EINVAL;
            goto fail;
        }
        rc = load_file(ms, why, why_len);
    } else if (strncmp(spec, "dns:", 4) == 0) {
        ms->kind = MEMBERSHIP__DNS;
        rc = membership__dns_start(ms, why, why_len);
    } else {
        ms->kind = MEMBERSHIP__STATIC;
        rc = install_text(ms, spec, strlen(spec), why, why_len);
    }
    ms->creating = false;
    ms->o.nameserver = NULL; /* borrowed for this call only */
    if (rc < 0)
        goto fail;
    *out = ms;
    return 0;
fail:
    if (rc == -ENOMEM)
        errf_set(why, why_len, "out of memory setting up membership %s", spec);
    membership_destroy(&ms);
    return rc;
}

void membership_destroy(struct membership **msp)
{
    if (msp == NULL || *msp == NULL)
        return;
    struct membership *ms = *msp;
    *msp = NULL;
    if (ms->kind == MEMBERSHIP__DNS)
        membership__dns_stop(ms);
    ring_holder_destroy(&ms->holder);
    free(ms->spec);
    free(ms->path);
    free(ms->name);
    free(ms);
}

struct ring *membership_ring(struct membership *ms)
{
    return ring_holder_acquire(ms->holder);
}

int membership_reload(struct membership *ms)
{
    switch (ms->kind) {
    case MEMBERSHIP__STATIC: return 0;
    case MEMBERSHIP__DNS: membership__dns_reload(ms); return 0;
    case MEMBERSHIP__FILE: break;
    }
    char why[640];
    int rc = load_file(ms, why, sizeof why);
    if (rc < 0) {
        char q[700];
        atomic_fetch_add(&ms->rounds_failed, 1);
        membership__log(ms, MEMBERSHIP_WARN,
                        "msg=\"member file reload failed, keeping "
                        "the last ring\" source=\"%s\" error=\"%s\"",
                        ms->spec, membership__q(q, sizeof q, why));
        return rc;
    }
    return 0; /* 1 (installed) or 0 (unchanged) */
}

void membership_stats(struct membership *ms, struct membership_stats *out)
{
    out->rounds_ok = atomic_load(&ms->rounds_ok);
    out->rounds_failed = atomic_load(&ms->rounds_failed);
    out->changes = atomic_load(&ms->changes);
    out->members = atomic_load(&ms->members);
}

const char *membership_spec(const struct membership *ms)
{
    return ms->spec;
}
