/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_settings.c: the settings a request may set (as URL parameters, with
 * SET in a session, in a query's SETTINGS clause), with ClickHouse's names,
 * defaults and meanings: one table drives parsing, the readonly rules and
 * system.settings. Settings of the engine that the table does not list (the
 * engine's own table grows with it) are checked by the engine
 * (eng_settings_apply) and passed to it as they are.
 *
 * Readonly, as ClickHouse has it: 1 forbids changing any setting, 2 allows
 * every change but of readonly itself; a GET request runs with 2 at least.
 */
#include "srv_int.h"

#include "eng_plan.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum st_type { ST_UINT, ST_BOOL, ST_SECONDS, ST_STRING, ST_INT } st_type;

typedef struct st_def {
    const char *name;
    st_type type;
    const char *def;
    size_t off;
    size_t size;
    uint64_t max; /* ST_UINT: 0 none */
    const char *desc;
} st_def;

#define F(field) offsetof(srv_qset, field), sizeof(((srv_qset *)0)->field)

static const st_def defs[] = {
    {"max_threads", ST_INT, "0", F(eng.max_threads), 1024,
     "The maximum number of threads that read and process one query (0: one per core)."},
    {"max_download_threads", ST_INT, "4", F(eng.max_download_threads), 1024,
     "The maximum number of threads downloading a query's files ahead of its readers."},
    {"max_download_buffer_size", ST_UINT, "10485760", F(eng.max_download_buffer_size), 0,
     "The bytes one download thread holds ahead; a file is read in parallel ranges when "
     "larger than twice this."},
    {"max_memory_usage", ST_UINT, "0", F(eng.max_memory_usage), INT64_MAX,
     "The maximum memory one query may use, in bytes (0: no limit of its own)."},
    {"join_use_nulls", ST_BOOL, "0", F(eng.join_use_nulls), 0,
     "1: the columns of a JOIN's missing side are NULL (Nullable); 0: their types' "
     "default values, as ClickHouse does by default."},
    {"readonly", ST_UINT, "0", F(readonly), 2,
     "0: any query; 1: only reading queries and no setting changes; 2: reading queries and "
     "setting changes but readonly."},
    {"max_execution_time", ST_SECONDS, "0", F(max_execution_time), 0,
     "A query running longer than this many seconds is stopped with TIMEOUT_EXCEEDED (0: "
     "no limit)."},
    {"send_progress_in_http_headers", ST_BOOL, "0", F(send_progress_in_http_headers), 0,
     "Send X-ClickHouse-Progress headers while the query runs, until its first bytes."},
    {"http_headers_progress_interval_ms", ST_UINT, "100", F(http_headers_progress_interval_ms), 0,
     "The milliseconds between two X-ClickHouse-Progress headers."},
    {"http_wait_end_of_query", ST_BOOL, "0", F(http_wait_end_of_query), 0,
     "Hold the whole result until the query has finished, so that any error gets its HTTP "
     "status."},
    {"http_response_buffer_size", ST_UINT, "0", F(http_response_buffer_size), 0,
     "The bytes held before the answer starts (0: 1 MiB); an error before that gets its "
     "HTTP status."},
    {"enable_http_compression", ST_BOOL, "0", F(enable_http_compression), 0,
     "Compress the answer as the request's Accept-Encoding allows (gzip, deflate, zstd)."},
    {"http_zlib_compression_level", ST_UINT, "3", F(http_zlib_compression_level), 9,
     "The compression level of gzip and deflate answers (zstd uses it too), 1 to 9."},
    {"add_http_cors_header", ST_BOOL, "0", F(add_http_cors_header), 0,
     "Add Access-Control-Allow-Origin: * to the answer."},
    {"max_query_size", ST_UINT, "262144", F(max_query_size), 0,
     "The maximum bytes of a query's text (an INSERT's data does not count)."},
    {"log_queries", ST_BOOL, "1", F(log_queries), 0, "Write the query's rows to system.query_log."},
    {"log_comment", ST_STRING, "", F(log_comment), 0,
     "A comment kept with the query in system.query_log."},
    {"cancel_http_readonly_queries_on_client_close", ST_BOOL, "0",
     F(cancel_http_readonly_queries_on_client_close), 0,
     "Accepted for ClickHouse's clients: this server stops every query whose client goes "
     "away."},
    {"output_format_write_statistics", ST_BOOL, "1", F(output_format_write_statistics), 0,
     "Write the statistics (elapsed, rows_read, bytes_read) at the end of the JSON formats."},
};

#define N_DEFS (sizeof(defs) / sizeof(defs[0]))
_Static_assert(N_DEFS <= SRV_SET_MAX, "SRV_SET_MAX is too small for the settings table");

static int find(const char *name)
{
    for (size_t i = 0; i < N_DEFS; i++)
        if (strcmp(defs[i].name, name) == 0)
            return (int)i;
    return -1;
}

bool srv_qset_owns(const char *name)
{
    return find(name) >= 0;
}

/* Parses value into the field of d. 0 or -EINVAL. */
static int store(srv_qset *q, const st_def *d, const char *v)
{
    void *f = (char *)q + d->off;
    char *end;
    switch (d->type) {
    case ST_BOOL: {
        bool b;
        if (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0)
            b = true;
        else if (strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0)
            b = false;
        else
            return -EINVAL;
        *(bool *)f = b;
        return 0;
    }
    case ST_UINT:
    case ST_INT: {
        if (!*v || *v == '-' || *v == '+' || strlen(v) > 20)
            return -EINVAL;
        errno = 0;
        unsigned long long u = strtoull(v, &end, 10);
        if (*end || errno)
            return -EINVAL;
        if (d->max && u > d->max)
            return -EINVAL;
        if (d->type == ST_INT)
            *(int *)f = (int)u;
        else if (d->size == sizeof(int64_t) && d->max == INT64_MAX)
            *(int64_t *)f = (int64_t)u;
        else
            *(uint64_t *)f = u;
        return 0;
    }
    case ST_SECONDS: {
        double s = strtod(v, &end);
        if (!*v || *end || !isfinite(s) || s < 0)
            return -EINVAL;
        *(double *)f = s;
        return 0;
    }
    case ST_STRING:
        if (strlen(v) >= d->size)
            return -EINVAL;
        snprintf(f, d->size, "%s", v);
        return 0;
    }
    return -EINVAL;
}

static void show(const srv_qset *q, const st_def *d, char *buf, size_t cap)
{
    const void *f = (const char *)q + d->off;
    switch (d->type) {
    case ST_BOOL: snprintf(buf, cap, "%d", *(const bool *)f ? 1 : 0); break;
    case ST_INT: snprintf(buf, cap, "%d", *(const int *)f); break;
    case ST_UINT:
        if (d->size == sizeof(int64_t) && d->max == INT64_MAX)
            snprintf(buf, cap, "%lld", (long long)*(const int64_t *)f);
        else
            snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)f);
        break;
    case ST_SECONDS: snprintf(buf, cap, "%g", *(const double *)f); break;
    case ST_STRING: snprintf(buf, cap, "%s", (const char *)f); break;
    }
}

void srv_qset_init(srv_qset *q, const srv_conf *conf)
{
    memset(q, 0, sizeof(*q));
    for (size_t i = 0; i < N_DEFS; i++)
        store(q, &defs[i], defs[i].def);
    if (conf) {
        q->eng.max_threads = (int)conf->max_threads;
        q->eng.max_memory_usage = conf->max_memory_usage;
        q->max_execution_time = (double)conf->max_execution_time_ms / 1000.0;
        q->max_query_size = (uint64_t)conf->max_query_size;
    }
}

/* An engine setting the table lacks: the engine checks it. */
static int engine_check(const char *name, const char *value, char *err, size_t errlen)
{
    sql_node v = {
        .kind = SQL_STRING, .s = (char *)value, .slen = strlen(value), .line = 1, .col = 1};
    sql_setting st = {.name = (char *)name, .value = &v, .line = 1, .col = 1};
    sql_stmt stmt = {.kind = SQL_SELECT, .settings = &st, .n_settings = 1};
    eng_settings scratch = {0};
    char e[256];
    int rc = eng_settings_apply(&stmt, &scratch, e, sizeof(e));
    if (rc < 0) {
        const char *w = strstr(e, ": ");
        snprintf(err, errlen, "%s", w ? w + 2 : e);
        return strstr(e, "unknown setting") ? ENG_E_UNKNOWN_SETTING : ENG_E_INVALID_SETTING_VALUE;
    }
    return 0;
}

int srv_qset_apply(srv_qset *q, const char *name, const char *value, char *err, size_t errlen)
{
    int k = find(name);
    if (q->readonly == 1 || (q->readonly == 2 && k >= 0 && strcmp(name, "readonly") == 0)) {
        snprintf(err, errlen, "Cannot modify '%s' setting in readonly mode", name);
        return ENG_E_READONLY;
    }
    if (k < 0) {
        int rc = engine_check(name, value, err, errlen);
        if (rc == ENG_E_UNKNOWN_SETTING) {
            const char *cands[N_DEFS];
            for (size_t i = 0; i < N_DEFS; i++)
                cands[i] = defs[i].name;
            const char *sg = eng_suggest(name, cands, (int)N_DEFS);
            if (sg)
                snprintf(err, errlen, "Unknown setting '%s': maybe you meant '%s'", name, sg);
            else
                snprintf(err, errlen,
                         "Unknown setting '%s' (system.settings lists the settings this server "
                         "knows)",
                         name);
            return rc;
        }
        if (rc)
            return rc;
        for (int i = 0; i < q->n_extra; i++)
            if (strcmp(q->extra[i].name, name) == 0) {
                snprintf(q->extra[i].value, sizeof(q->extra[i].value), "%s", value);
                return 0;
            }
        if (q->n_extra >= SRV_SET_EXTRA || strlen(name) >= sizeof(q->extra[0].name) ||
            strlen(value) >= sizeof(q->extra[0].value)) {
            snprintf(err, errlen, "too many or too long settings in one query");
            return ENG_E_INVALID_SETTING_VALUE;
        }
        snprintf(q->extra[q->n_extra].name, sizeof(q->extra[0].name), "%s", name);
        snprintf(q->extra[q->n_extra].value, sizeof(q->extra[0].value), "%s", value);
        q->n_extra++;
        return 0;
    }
    if (store(q, &defs[k], value) < 0) {
        const char *what = defs[k].type == ST_BOOL      ? "0 or 1"
                           : defs[k].type == ST_SECONDS ? "a number of seconds"
                           : defs[k].type == ST_STRING  ? "a shorter text"
                                                        : "a non-negative integer";
        if (defs[k].max && defs[k].type != ST_BOOL && defs[k].max < INT64_MAX)
            snprintf(err, errlen,
                     "Cannot parse '%.64s' as the value of setting %s: it takes %s "
                     "up to %llu",
                     value, name, what, (unsigned long long)defs[k].max);
        else
            snprintf(err, errlen, "Cannot parse '%.64s' as the value of setting %s: it takes %s",
                     value, name, what);
        return ENG_E_INVALID_SETTING_VALUE;
    }
    q->changed[k] = true;
    return 0;
}

int srv_qset_get(const srv_qset *q, const char *name, char *buf, size_t cap)
{
    int k = find(name);
    if (k >= 0) {
        show(q, &defs[k], buf, cap);
        return 0;
    }
    for (int i = 0; i < q->n_extra; i++)
        if (strcmp(q->extra[i].name, name) == 0) {
            snprintf(buf, cap, "%s", q->extra[i].value);
            return 0;
        }
    return -ENOENT;
}

void srv_qset_each(const srv_qset *q, srv_set_row_fn fn, void *arg)
{
    static const char *const tn[] = {"UInt64", "Bool", "Seconds", "String", "UInt64"};
    for (size_t i = 0; i < N_DEFS; i++) {
        char v[300];
        show(q, &defs[i], v, sizeof(v));
        fn(arg, defs[i].name, v, q->changed[i], tn[defs[i].type], defs[i].def, defs[i].desc);
    }
    for (int i = 0; i < q->n_extra; i++)
        fn(arg, q->extra[i].name, q->extra[i].value, true, "String", "",
           "A setting of the engine.");
}

int srv_qset_engine(const srv_qset *q, eng_settings *out, char *err, size_t errlen)
{
    *out = q->eng;
    if (q->n_extra == 0)
        return 0;
    sql_node vals[SRV_SET_EXTRA];
    sql_setting st[SRV_SET_EXTRA];
    for (int i = 0; i < q->n_extra; i++) {
        vals[i] = (sql_node){.kind = SQL_STRING,
                             .s = (char *)q->extra[i].value,
                             .slen = strlen(q->extra[i].value),
                             .line = 1,
                             .col = 1};
        st[i] =
            (sql_setting){.name = (char *)q->extra[i].name, .value = &vals[i], .line = 1, .col = 1};
    }
    sql_stmt stmt = {.kind = SQL_SELECT, .settings = st, .n_settings = q->n_extra};
    if (eng_settings_apply(&stmt, out, err, errlen) < 0)
        return ENG_E_INVALID_SETTING_VALUE;
    return 0;
}
