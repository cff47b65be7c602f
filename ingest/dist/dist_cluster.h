/* SPDX-License-Identifier: Apache-2.0
 *
 * dist_cluster.h: the clusters a compute server is configured with, parsed
 * from --cluster's value: "NAME=host:port,host:port" or "NAME=dns:SRV-NAME"
 * (the members are then the name's SRV answers, or its A records with the
 * server's own port, resolved by the server: dist_clusters_build), several
 * clusters separated by ';'.
 * Members are named by their HTTP address; the one equal to the server's own
 * is its local member.
 *
 * Thread-safety: parsing is reentrant; a parsed set is read-only while
 * queries use it (a server swaps the whole set to change members).
 */
#ifndef RINGCACHE_DIST_CLUSTER_H
#define RINGCACHE_DIST_CLUSTER_H

#include "eng_source.h"

#include <stddef.h>

#define DIST_MAX_CLUSTERS 32

typedef struct dist_clusters {
    eng_cluster c[DIST_MAX_CLUSTERS];
    int n;
    char *text;     /* the parsed copy the names point into */
    char **members; /* every member's string, owned */
    int n_members;
} dist_clusters;

/* Parses spec (may be NULL or empty: no clusters); self ("host:port", may
 * be NULL) marks each cluster's local member. 0, or -EINVAL with a sentence
 * naming the part that is wrong and the form it takes. */
int dist_clusters_parse(dist_clusters *out, const char *spec, const char *self, char *err,
                        size_t errlen);

/* What a dns: cluster's name resolved to: its members, "host:port" each. */
typedef struct dist_resolved {
    const char *cluster;
    const char *const *members;
    int n;
} dist_resolved;

/* The same as dist_clusters_parse, with the server's own addresses (any of
 * selves marks the local member: a server on 0.0.0.0 is each of its
 * interfaces' addresses) and the members each dns: cluster resolved to (a
 * dns: cluster absent from res has no members yet). The server builds a new
 * set this way whenever a name resolves to other members, and swaps it in. */
int dist_clusters_build(dist_clusters *out, const char *spec, const char *const *selves, int n_self,
                        const dist_resolved *res, int n_res, char *err, size_t errlen);
void dist_clusters_free(dist_clusters *cs);

#endif /* RINGCACHE_DIST_CLUSTER_H */
