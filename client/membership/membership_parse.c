/* SPDX-License-Identifier: Apache-2.0
 *
 * The member-list parser shared by static lists, member files and the CLI:
 * text from a flag or a file in, a list of (id, address, weight) out, or a
 * sentence naming the malformed member. The grammar is in membership.h. Input
 * is untrusted (a file anyone may have edited): every length is bounded and
 * nothing is fatal; tests/fuzz/membership fuzzes this file.
 */
#include "membership.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_MAX 512u
#define ID_MAX    253u

struct parsed {
    size_t id_off, addr_off;
    uint32_t weight;
    unsigned token_no;
};

struct parser {
    struct parsed *v;
    size_t n, cap;
    char *buf;
    size_t len, bufcap;
    char *why;
    size_t why_len;
};

static void mp__why(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void mp__why(struct parser *p, const char *fmt, ...)
{
    if (p->why == NULL || p->why_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, p->why_len, fmt, ap);
    va_end(ap);
}

/* A token quoted for a message: printable, at most 64 characters. */
static const char *mp__show(char out[80], const char *tok, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k < 64; i++)
        out[k++] = isprint((unsigned char)tok[i]) ? tok[i] : '?';
    if (len > 64) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

static int mp__append(struct parser *p, const char *s, size_t len, size_t *off)
{
    if (p->len + len + 1 > p->bufcap) {
        size_t cap = p->bufcap ? p->bufcap * 2 : 256;
        while (cap < p->len + len + 1)
            cap *= 2;
        char *nb = realloc(p->buf, cap);
        if (nb == NULL)
            return -ENOMEM;
        p->buf = nb;
        p->bufcap = cap;
    }
    memcpy(p->buf + p->len, s, len);
    p->buf[p->len + len] = '\0';
    *off = p->len;
    p->len += len + 1;
    return 0;
}

static bool mp__id_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

static bool mp__host_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
}

/* Parses "host:port", "host", "[v6]:port", "[v6]" into "host:port" text. */
static int mp__addr(struct parser *p, const char *tok, size_t tlen, const char *a, size_t alen,
                    uint16_t default_port, unsigned no, char *out, size_t outsz)
{
    char show[80];
    const char *host = a, *port = NULL;
    size_t hlen, plen = 0;
    bool v6 = false;
    if (alen == 0) {
        mp__why(p, "member %u \"%s\" has no address (write id=host:port)", no,
                mp__show(show, tok, tlen));
        return -EINVAL;
    }
    if (a[0] == '[') {
        const char *close = memchr(a, ']', alen);
        if (close == NULL) {
            mp__why(p,
                    "member %u \"%s\" has an IPv6 address without its closing "
                    "']' (write [fd00::1]:7070)",
                    no, mp__show(show, tok, tlen));
            return -EINVAL;
        }
        host = a + 1;
        hlen = (size_t)(close - host);
        v6 = true;
        size_t rest = alen - (size_t)(close + 1 - a);
        if (rest > 0) {
            if (close[1] != ':') {
                mp__why(p,
                        "member %u \"%s\" has text after its IPv6 address "
                        "(write [addr]:port)",
                        no, mp__show(show, tok, tlen));
                return -EINVAL;
            }
            port = close + 2;
            plen = rest - 1;
            if (plen == 0)
                port = NULL, plen = 1; /* "[..]:" : empty port */
        }
        for (size_t i = 0; i < hlen; i++)
            if (!isxdigit((unsigned char)host[i]) && host[i] != ':' && host[i] != '.') {
                mp__why(p, "member %u \"%s\" has a malformed IPv6 address", no,
                        mp__show(show, tok, tlen));
                return -EINVAL;
            }
    } else {
        const char *colon = memchr(a, ':', alen);
        if (colon != NULL && memchr(colon + 1, ':', alen - (size_t)(colon + 1 - a))) {
            mp__why(p,
                    "member %u \"%s\": put an IPv6 address in brackets "
                    "([fd00::1]:7070)",
                    no, mp__show(show, tok, tlen));
            return -EINVAL;
        }
        hlen = colon ? (size_t)(colon - a) : alen;
        if (colon) {
            port = colon + 1;
            plen = alen - hlen - 1;
            if (plen == 0)
                port = NULL, plen = 1;
        }
        for (size_t i = 0; i < hlen; i++)
            if (!mp__host_char(host[i])) {
                mp__why(p,
                        "member %u \"%s\" has a character that is not allowed "
                        "in a host name ('%c'; use letters, digits, '.', '-')",
                        no, mp__show(show, tok, tlen),
                        isprint((unsigned char)host[i]) ? host[i] : '?');
                return -EINVAL;
            }
    }
    if (hlen == 0) {
        mp__why(p, "member %u \"%s\" has an empty host (write id=host:port)", no,
                mp__show(show, tok, tlen));
        return -EINVAL;
    }
    unsigned long pv;
    if (port == NULL && plen == 0) {
        if (default_port == 0) {
            mp__why(p, "member %u \"%s\" has no port (write host:port)", no,
                    mp__show(show, tok, tlen));
            return -EINVAL;
        }
        pv = default_port;
    } else {
        pv = 0;
        bool ok = port != NULL && plen <= 5;
        for (size_t i = 0; ok && i < plen; i++) {
            if (!isdigit((unsigned char)port[i]))
                ok = false;
            else
                pv = pv * 10 + (unsigned long)(port[i] - '0');
        }
        if (!ok || pv == 0 || pv > 65535) {
            mp__why(p, "member %u \"%s\" has a bad port (give a number 1..65535)", no,
                    mp__show(show, tok, tlen));
            return -EINVAL;
        }
    }
    snprintf(out, outsz, v6 ? "[%.*s]:%lu" : "%.*s:%lu", (int)hlen, host, pv);
    return 0;
}

static int mp__token(struct parser *p, const char *tok, size_t tlen, uint16_t default_port,
                     unsigned no)
{
    char show[80];
    if (tlen > TOKEN_MAX) {
        mp__why(p, "member %u \"%s\" is %zu characters long (at most %u)", no,
                mp__show(show, tok, tlen), tlen, TOKEN_MAX);
        return -EINVAL;
    }
    bool digits = true;
    for (size_t i = 0; i < tlen; i++)
        digits = digits && isdigit((unsigned char)tok[i]);
    if (digits) {
        if (p->n == 0) {
            mp__why(p,
                    "weight \"%s\" comes before any member (write "
                    "id=host:port,weight)",
                    mp__show(show, tok, tlen));
            return -EINVAL;
        }
        struct parsed *prev = &p->v[p->n - 1];
        const char *pid = p->buf + prev->id_off;
        if (prev->weight != 0) {
            mp__why(p,
                    "member %s has a second weight \"%s\" (give one weight "
                    "per member)",
                    pid, mp__show(show, tok, tlen));
            return -EINVAL;
        }
        unsigned long w = 0;
        for (size_t i = 0; i < tlen && w <= RING_WEIGHT_MAX; i++)
            w = w * 10 + (unsigned long)(tok[i] - '0');
        if (w == 0 || w > RING_WEIGHT_MAX) {
            mp__why(p, "member %s has weight %s (give 1..%u)", pid, mp__show(show, tok, tlen),
                    RING_WEIGHT_MAX);
            return -EINVAL;
        }
        prev->weight = (uint32_t)w;
        return 0;
    }

    const char *eq = memchr(tok, '=', tlen);
    const char *a = tok;
    size_t alen = tlen;
    if (eq != NULL) {
        size_t idlen = (size_t)(eq - tok);
        if (idlen == 0 || idlen > ID_MAX) {
            mp__why(p, "member %u \"%s\" has %s id (write id=host:port)", no,
                    mp__show(show, tok, tlen), idlen ? "too long an" : "an empty");
            return -EINVAL;
        }
        for (size_t i = 0; i < idlen; i++)
            if (!mp__id_char(tok[i])) {
                mp__why(p,
                        "member %u \"%s\" has an id with '%c' (use letters, "
                        "digits, '.', '_', '-')",
                        no, mp__show(show, tok, tlen),
                        isprint((unsigned char)tok[i]) ? tok[i] : '?');
                return -EINVAL;
            }
        a = eq + 1;
        alen = tlen - idlen - 1;
    }
    char addr[TOKEN_MAX + 16];
    int rc = mp__addr(p, tok, tlen, a, alen, default_port, no, addr, sizeof addr);
    if (rc < 0)
        return rc;

    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct parsed *nv = realloc(p->v, cap * sizeof *nv);
        if (nv == NULL)
            return -ENOMEM;
        p->v = nv;
        p->cap = cap;
    }
    if (p->n >= RING_MEMBERS_MAX) {
        mp__why(p, "more than %u members (split the cluster)", RING_MEMBERS_MAX);
        return -E2BIG;
    }
    struct parsed *m = &p->v[p->n];
    m->weight = 0;
    m->token_no = no;
    if ((rc = mp__append(p, addr, strlen(addr), &m->addr_off)) < 0)
        return rc;
    if (eq != NULL)
        rc = mp__append(p, tok, (size_t)(eq - tok), &m->id_off);
    else
        rc = mp__append(p, addr, strlen(addr), &m->id_off);
    if (rc < 0)
        return rc;
    p->n++;
    return 0;
}

static int mp__cmp_id(const void *a, const void *b)
{
    const struct ring_member *x = *(const struct ring_member *const *)a;
    const struct ring_member *y = *(const struct ring_member *const *)b;
    return strcmp(x->id, y->id);
}

void membership_list_deinit(struct membership_list *l)
{
    if (l == NULL)
        return;
    free(l->members);
    free(l->strings);
    l->members = NULL;
    l->strings = NULL;
    l->n = 0;
}

int membership_parse_list(const char *text, size_t len, uint16_t default_port,
                          struct membership_list *out, char *why, size_t why_len)
{
    struct parser p = {.why = why, .why_len = why_len};
    int rc = 0;
    unsigned no = 0;
    bool comma_pending = false;
    size_t i = 0;
    if (text == NULL)
        len = 0;
    while (i < len) {
        char c = text[i];
        if (c == '#') {
            while (i < len && text[i] != '\n')
                i++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            i++;
        } else if (c == ',') {
            if (comma_pending || no == 0) {
                mp__why(&p, "empty member before comma %s (remove the extra comma)",
                        no == 0 ? "at the start" : "in the list");
                rc = -EINVAL;
                goto out;
            }
            comma_pending = true;
            i++;
        } else {
            size_t start = i;
            while (i < len && text[i] != ',' && text[i] != ' ' && text[i] != '\t' &&
                   text[i] != '\r' && text[i] != '\n' && text[i] != '#')
                i++;
            comma_pending = false;
            bool is_weight = true;
            for (size_t k = start; k < i; k++)
                is_weight = is_weight && isdigit((unsigned char)text[k]);
            if (!is_weight)
                no++;
            rc = mp__token(&p, text + start, i - start, default_port, no ? no : 1);
            if (rc < 0)
                goto out;
        }
    }
    if (comma_pending) {
        mp__why(&p, "the member list ends with a comma (remove it)");
        rc = -EINVAL;
        goto out;
    }
    if (p.n == 0) {
        mp__why(&p, "the member list is empty (give at least one member as "
                    "id=host:port or host:port)");
        rc = -EINVAL;
        goto out;
    }

    struct ring_member *m = calloc(p.n, sizeof *m);
    const struct ring_member **sorted = calloc(p.n, sizeof *sorted);
    if (m == NULL || sorted == NULL) {
        free(m);
        free(sorted);
        rc = -ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < p.n; k++) {
        m[k].id = p.buf + p.v[k].id_off;
        m[k].addr = p.buf + p.v[k].addr_off;
        m[k].weight = p.v[k].weight;
        sorted[k] = &m[k];
    }
    qsort(sorted, p.n, sizeof *sorted, mp__cmp_id);
    for (size_t k = 1; k < p.n; k++)
        if (strcmp(sorted[k - 1]->id, sorted[k]->id) == 0) {
            mp__why(&p,
                    "member id %s appears twice (%s and %s; ids must be "
                    "unique)",
                    sorted[k]->id, sorted[k - 1]->addr, sorted[k]->addr);
            rc = -EINVAL;
            break;
        }
    free(sorted);
    if (rc < 0) {
        free(m);
        goto out;
    }
    out->members = m;
    out->n = p.n;
    out->strings = p.buf;
    p.buf = NULL;
out:
    if (rc == -ENOMEM)
        mp__why(&p, "out of memory parsing the member list");
    free(p.v);
    free(p.buf);
    return rc;
}
