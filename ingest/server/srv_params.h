/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_params.h: the parts of a ClickHouse HTTP request that are plain text
 * from the network, parsed without any server state (so the fuzz target
 * tests/fuzz/server drives them alone):
 *
 *  - the URL's parameters: application/x-www-form-urlencoded ('+' is a space,
 *    %XX a byte), in order, repeats kept; which names are the interface's own
 *    (query, database, user, param_*, ...) and which are settings;
 *  - query parameters: `{name:Type}` in the SQL, given as param_name=value,
 *    substituted as a literal of that type (a String value is quoted and
 *    escaped, so a value can never become SQL), an Identifier as a quoted
 *    name;
 *  - the secrets given to s3() in a query's text, hidden for query_log and
 *    processes (srv_mask_secrets);
 *  - an INSERT's head (srv_insert_parse, in srv_int.h) lives with the INSERT.
 *
 * Thread-safety: pure functions on the caller's memory.
 */
#ifndef RINGCACHE_SRV_PARAMS_H
#define RINGCACHE_SRV_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct srv_kv {
    char *name;
    char *value;
} srv_kv;

typedef struct srv_params {
    srv_kv *kv;
    int n, cap;
} srv_params;

/* At most this many parameters in one URL. */
#define SRV_PARAMS_MAX 1024

/* Decodes a query string (len bytes, no '?'). Empty names are skipped; a
 * name without '=' has the value "". 0, -EINVAL (a bad %-escape, a NUL byte,
 * too many parameters: sentence in err), -ENOMEM. p is emptied first; free
 * with srv_params_free also after an error. */
int srv_params_parse(srv_params *p, const char *query, size_t len, char *err, size_t errlen);
void srv_params_free(srv_params *p);
/* The first value of name, or NULL (param_x: ClickHouse keeps the first). */
const char *srv_params_first(const srv_params *p, const char *name);
/* The last value of name, or NULL (settings and the rest: the last wins). */
const char *srv_params_last(const srv_params *p, const char *name);
/* Whether a parameter is the HTTP interface's own rather than a setting:
 * query, database, default_format, user, password, quota_key, query_id,
 * session_*, close_session, param_*, compress, decompress, buffer_size,
 * wait_end_of_query, stacktrace, client_protocol_version, role. */
bool srv_param_is_reserved(const char *name);

/* Replaces every {name:Type} of sql (outside strings, quoted names and
 * comments) with the value of param_name as a literal of Type. *out is
 * malloc'ed, NUL-terminated. 0, or a ClickHouse code with a sentence:
 * UNKNOWN_QUERY_PARAMETER (no value), BAD_QUERY_PARAMETER (the value is not
 * of that type, or the type is not supported), SYNTAX_ERROR (a '{' that is
 * not a parameter), MEMORY_LIMIT_EXCEEDED (no memory). */
int srv_params_substitute(const char *sql, size_t len, const srv_params *p, char **out,
                          size_t *outlen, char *err, size_t errlen);

/* t[0..n) with the secrets given to s3() and s3Cluster() (the secret and the
 * session token, string literals) written '[HIDDEN]', as ClickHouse shows
 * them in query_log and processes; the rest as it was. Pure. malloc'd, NUL-
 * terminated, at most 4 * n + 15 bytes; NULL when out of memory. */
char *srv_mask_secrets(const char *t, size_t n);

#endif /* RINGCACHE_SRV_PARAMS_H */
