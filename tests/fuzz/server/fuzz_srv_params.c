/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the compute server's parsers of request text: the
 * URL's query string (srv_params_parse), the {name:Type} substitution of
 * param_* values into the SQL (srv_params_substitute), and the statements
 * the server answers itself (sql_admin_parse) on the substituted text.
 * Also the secret masking of query_log's text (srv_mask_secrets).
 * Besides memory errors, it checks what the parsers promise: decoded names
 * are never empty and hold no NUL; the first and last lookups agree with
 * the list; a substitution that succeeds gives a text NUL-terminated at its
 * length, and a failure carries a ClickHouse code, a sentence and no text.
 *
 * Input: the query string, a 0xff byte, then the SQL (no 0xff: all URL).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sql_admin.h"
#include "srv_params.h"

#include "../fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    const uint8_t *cut = memchr(data, 0xff, size);
    size_t ulen = cut ? (size_t)(cut - data) : size;
    const char *sql = cut ? (const char *)cut + 1 : "";
    size_t slen = cut ? size - ulen - 1 : 0;

    srv_params ps = {0};
    char err[512];
    err[0] = 0;
    int rc = srv_params_parse(&ps, p, ulen, err, sizeof(err));
    if (rc < 0) {
        CHECK(rc == -EINVAL ? err[0] != 0 : rc == -ENOMEM);
        srv_params_free(&ps);
        return 0;
    }
    CHECK(ps.n <= SRV_PARAMS_MAX);
    for (int i = 0; i < ps.n; i++) {
        CHECK(ps.kv[i].name && ps.kv[i].name[0]);
        CHECK(ps.kv[i].value);
        CHECK(strlen(ps.kv[i].name) <= ulen && strlen(ps.kv[i].value) <= ulen);
        CHECK(srv_params_first(&ps, ps.kv[i].name) != NULL);
        CHECK(srv_params_last(&ps, ps.kv[i].name) != NULL);
        (void)srv_param_is_reserved(ps.kv[i].name);
    }
    if (ps.n) /* the first of a name is its first occurrence */
        CHECK(srv_params_first(&ps, ps.kv[0].name) == ps.kv[0].value);

    /* the text query_log shows: never longer than promised, NUL-terminated */
    char *masked = srv_mask_secrets(sql, slen);
    CHECK(masked != NULL);
    CHECK(strlen(masked) <= 4 * slen + 15);
    free(masked);

    char *out = NULL;
    size_t olen = 0;
    err[0] = 0;
    int code = srv_params_substitute(sql, slen, &ps, &out, &olen, err, sizeof(err));
    if (code == 0) {
        CHECK(out != NULL);
        CHECK(out[olen] == 0);
        sql_admin a;
        char e2[512];
        int r = sql_admin_parse(out, olen, &a, e2, sizeof(e2));
        CHECK(r == 0 || r == 1 || (r < 0 && e2[0] != 0) || r == -ENOMEM);
        free(out);
    } else {
        CHECK(code > 0 && err[0] != 0);
        CHECK(out == NULL);
    }
    srv_params_free(&ps);
    return 0;
}
