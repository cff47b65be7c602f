/* SPDX-License-Identifier: Apache-2.0
 *
 * src_s3cluster.c: the s3Cluster() table function: s3Cluster('cluster',
 * 's3://bucket/glob' [, 'Format']), the arguments after the cluster's name
 * as s3()'s. The cluster must be one this process knows (a server's
 * --cluster, listed by system.clusters). The source is s3()'s scan of the
 * glob, marked with its cluster: on the initiator ingest/dist/ hands its
 * units (files, row-group ranges) to the cluster's servers; on a worker,
 * which is given one unit (eng_scan_env.unit), it reads that unit alone,
 * whatever clusters the worker knows.
 */
#include "src_int.h"

#include <errno.h>
#include <stdio.h>

int src__s3cluster_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                        size_t errlen)
{
    *out = NULL;
    if (c->n_args < 2 || c->args[0]->kind != SQL_STRING) {
        snprintf(err, errlen,
                 "line %d, column %d: s3Cluster takes the cluster's name and an S3 "
                 "URL, as in s3Cluster('default', 's3://bucket/data/*.parquet' [, "
                 "'Parquet'])",
                 c->line, c->col);
        return -EINVAL;
    }
    const char *name = c->args[0]->s;
    const eng_cluster *cl = eng_cluster_find(env->clusters, env->n_clusters, name);
    if (!cl && !env->unit) {
        snprintf(err, errlen,
                 "line %d, column %d: cluster '%s' is not configured here "
                 "(CLUSTER_DOESNT_EXIST): start the server with --cluster "
                 "%s=host:port,host:port (SELECT * FROM system.clusters lists the "
                 "clusters it knows)",
                 c->line, c->col, name, name);
        return -ENOENT;
    }
    /* the rest is s3()'s call, placed where s3Cluster's is */
    eng_tf_call s3c = {c->name, c->args + 1, c->n_args - 1, c->line, c->col};
    int rc = src__s3_open(&s3c, env, out, err, errlen);
    if (rc == 0)
        (*out)->cluster = cl;
    return rc;
}
