/* SPDX-License-Identifier: Apache-2.0
 *
 * text_fuzz.c: see text_fuzz.h.
 */
#include "text_fuzz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int drop(ex_vec *cols, int ncols, uint32_t n, void *arg)
{
    eng_mem *m = arg;
    for (int k = 0; k < ncols; k++) {
        if (cols[k].n != n)
            abort();
        ex_vec_clear(m, &cols[k]);
    }
    return 0;
}

/* An error must be one a malformed file may give, and name the file. */
static void check_error(int rc, const char *name, const char *err)
{
    if (rc != -EBADMSG && rc != -ENOMEM)
        abort();
    if (rc == -EBADMSG && !strstr(err, name))
        abort();
}

void text_fuzz_one(tx_format f, const char *name, const char *text, size_t len)
{
    eng_schema s;
    char err[512] = "";
    int rc = tx_infer(f, name, text, len, &s, err, sizeof(err));
    if (rc < 0) {
        check_error(rc, name, err);
        return;
    }
    int *want = calloc((size_t)s.n + 1, sizeof(int));
    if (!want)
        abort();
    for (int k = 0; k < s.n; k++)
        want[k] = k;
    eng_mem m = {0};
    rc = tx_parse(&m, f, name, text, len, &s, want, s.n, 3, drop, &m, err, sizeof(err));
    if (rc < 0)
        check_error(rc, name, err);
    if (atomic_load(&m.cur) != 0)
        abort();
    free(want);
    eng_schema_free(&s);
}
