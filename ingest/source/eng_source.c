/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_source.c: the table-function registry (eng_source.h): one entry per
 * function a FROM clause may name, looked up by name as ClickHouse does
 * (case-insensitively). A new source adds its line here.
 */
#include "eng_source.h"

#include "src_int.h"
#include "src_int_table.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const eng_table_fn registry[] = {
    {"s3", src__s3_open},       {"file", src__file_open},           {"numbers", src__numbers_open},
    {"zeros", src__zeros_open}, {"s3Cluster", src__s3cluster_open},
};

#define N_REGISTRY (sizeof(registry) / sizeof(registry[0]))

const eng_table_fn *eng_table_fn_find(const char *name)
{
    for (size_t i = 0; i < N_REGISTRY; i++)
        if (strcasecmp(name, registry[i].name) == 0)
            return &registry[i];
    return NULL;
}

int eng_source_open(const eng_tf_call *call, const eng_scan_env *env, eng_source **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    const eng_table_fn *tf = eng_table_fn_find(call->name);
    if (!tf) {
        /* "use s3() or file()": every name the registry knows */
        char names[256];
        size_t o = 0;
        for (size_t i = 0; i < N_REGISTRY && o < sizeof(names); i++)
            o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s()",
                                  i == 0                ? ""
                                  : i + 1 == N_REGISTRY ? " or "
                                                        : ", ",
                                  registry[i].name);
        snprintf(err, errlen, "line %d, column %d: unknown table function '%s': use %s", call->line,
                 call->col, call->name, names);
        return -EINVAL;
    }
    return tf->open(call, env, out, err, errlen);
}

int eng_source_open_table(const eng_table_ref *t, const eng_scan_env *env, eng_source **out,
                          char *err, size_t errlen)
{
    *out = NULL;
    if (t->db && strcasecmp(t->db, "system") == 0)
        return src__system_open(t, env, out, err, errlen);
    return src__table_open(t, env, out, err, errlen);
}

int eng_source_open_wh_table(const eng_table_ref *t, const eng_scan_env *env, eng_source **out,
                             char *err, size_t errlen)
{
    *out = NULL;
    return src__table_open(t, env, out, err, errlen);
}

const eng_cluster *eng_cluster_find(const eng_cluster *cs, int n, const char *name)
{
    for (int i = 0; cs && i < n; i++)
        if (strcmp(cs[i].name, name) == 0)
            return &cs[i];
    return NULL;
}

void eng_source_destroy(eng_source **s)
{
    if (!s || !*s)
        return;
    (*s)->ops->destroy(*s);
    *s = NULL;
}
