/* SPDX-License-Identifier: Apache-2.0
 *
 * dist_cluster.c: --cluster's grammar (dist_cluster.h).
 */
#include "dist_cluster.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dist_clusters_free(dist_clusters *cs)
{
    for (int i = 0; i < cs->n_members; i++)
        free(cs->members[i]);
    free(cs->members);
    for (int i = 0; i < cs->n; i++)
        free((void *)cs->c[i].members);
    free(cs->text);
    memset(cs, 0, sizeof(*cs));
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

static bool good_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
            return false;
    return true;
}

/* host:port or [v6]:port, port 1..65535. */
static bool good_member(const char *m)
{
    const char *colon = strrchr(m, ':');
    if (!colon || colon == m || !colon[1])
        return false;
    if (m[0] == '[' && colon[-1] != ']')
        return false;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535)
        return false;
    for (const char *p = m; p < colon; p++)
        if (isspace((unsigned char)*p) || *p == ',' || *p == '=')
            return false;
    return true;
}

static int add_member(dist_clusters *cs, const char *m, char **out)
{
    char **nm = realloc(cs->members, sizeof(char *) * ((size_t)cs->n_members + 1));
    if (!nm)
        return -ENOMEM;
    cs->members = nm;
    if (!(nm[cs->n_members] = strdup(m)))
        return -ENOMEM;
    *out = nm[cs->n_members++];
    return 0;
}

static bool is_self(const char *m, const char *const *selves, int n_self)
{
    for (int i = 0; i < n_self; i++)
        if (selves[i] && strcmp(selves[i], m) == 0)
            return true;
    return false;
}

int dist_clusters_parse(dist_clusters *out, const char *spec, const char *self, char *err,
                        size_t errlen)
{
    const char *selves[1] = {self};
    return dist_clusters_build(out, spec, selves, self ? 1 : 0, NULL, 0, err, errlen);
}

int dist_clusters_build(dist_clusters *out, const char *spec, const char *const *selves, int n_self,
                        const dist_resolved *res, int n_res, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!spec || !*spec)
        return 0;
    if (!(out->text = strdup(spec)))
        goto oom;
    char *save = NULL;
    for (char *part = strtok_r(out->text, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
        part = trim(part);
        if (!*part)
            continue;
        char *eq = strchr(part, '=');
        if (!eq) {
            snprintf(err, errlen,
                     "--cluster '%s' has no '=': write NAME=host:port,host:port "
                     "or NAME=dns:SRV-NAME",
                     part);
            goto bad;
        }
        *eq = 0;
        char *name = trim(part), *list = trim(eq + 1);
        if (!good_name(name)) {
            snprintf(err, errlen,
                     "--cluster: '%s' is not a cluster name (letters, digits, "
                     "'_', '-', '.')",
                     name);
            goto bad;
        }
        for (int i = 0; i < out->n; i++)
            if (strcmp(out->c[i].name, name) == 0) {
                snprintf(err, errlen, "--cluster: cluster '%s' is given twice", name);
                goto bad;
            }
        if (out->n == DIST_MAX_CLUSTERS) {
            snprintf(err, errlen, "--cluster: at most %d clusters", DIST_MAX_CLUSTERS);
            goto bad;
        }
        eng_cluster *c = &out->c[out->n++];
        c->name = name;
        c->local = -1;
        if (strncmp(list, "dns:", 4) == 0) {
            if (!good_name(list + 4) && !good_member(list + 4)) {
                snprintf(err, errlen,
                         "--cluster %s: '%s' is not a DNS name: write "
                         "%s=dns:SRV-NAME",
                         name, list, name);
                goto bad;
            }
            c->dns = list + 4;
            const dist_resolved *r = NULL;
            for (int i = 0; i < n_res; i++)
                if (strcmp(res[i].cluster, name) == 0)
                    r = &res[i];
            if (!r || r->n == 0)
                continue; /* not resolved yet: no members */
            const char **ms = calloc((size_t)r->n, sizeof(char *));
            if (!ms)
                goto oom;
            c->members = ms;
            for (int i = 0; i < r->n; i++) {
                char *own;
                if (add_member(out, r->members[i], &own) < 0)
                    goto oom;
                if (c->local < 0 && is_self(own, selves, n_self))
                    c->local = c->n_members;
                ms[c->n_members++] = own;
            }
            continue;
        }
        int cap = 1;
        for (const char *p = list; *p; p++)
            cap += *p == ',';
        const char **ms = calloc((size_t)cap, sizeof(char *));
        if (!ms)
            goto oom;
        c->members = ms;
        char *s2 = NULL;
        for (char *m = strtok_r(list, ",", &s2); m; m = strtok_r(NULL, ",", &s2)) {
            m = trim(m);
            if (!good_member(m)) {
                snprintf(err, errlen,
                         "--cluster %s: '%s' is not host:port (a member is named "
                         "by its HTTP address, as in 10.0.0.5:8123)",
                         name, m);
                goto bad;
            }
            for (int i = 0; i < c->n_members; i++)
                if (strcmp(ms[i], m) == 0) {
                    snprintf(err, errlen, "--cluster %s: member %s is given twice", name, m);
                    goto bad;
                }
            char *own;
            if (add_member(out, m, &own) < 0)
                goto oom;
            if (c->local < 0 && is_self(m, selves, n_self))
                c->local = c->n_members;
            ms[c->n_members++] = own;
        }
        if (c->n_members == 0) {
            snprintf(err, errlen, "--cluster %s has no members: write %s=host:port,host:port", name,
                     name);
            goto bad;
        }
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    dist_clusters_free(out);
    return -ENOMEM;
bad:
    dist_clusters_free(out);
    return -EINVAL;
}
