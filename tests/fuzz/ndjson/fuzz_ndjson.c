/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_ndjson.c: arbitrary bytes as JSONEachRow (NDJSON) lines: infer the
 * schema, then parse every column in small batches. Errors must be -EBADMSG with a sentence naming
 * the file, never a crash, and every tracked byte must be given back.
 */
#include "eng_int.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tx_format f = TX_JSON_EACH_ROW;
    const char *text = (const char *)data;
    size_t len = size;
    eng_schema s;
    char err[512] = "";
    int rc = tx_infer(f, "fuzz.ndjson", text, len, &s, err, sizeof(err));
    if (rc < 0) {
        if (rc != -EBADMSG && rc != -ENOMEM)
            abort();
        if (rc == -EBADMSG && !strstr(err, "fuzz.ndjson"))
            abort();
        return 0;
    }
    int *want = calloc((size_t)s.n + 1, sizeof(int));
    if (!want)
        abort();
    for (int k = 0; k < s.n; k++)
        want[k] = k;
    eng_mem m = {0};
    rc = tx_parse(&m, f, "fuzz.ndjson", text, len, &s, want, s.n, 3, drop, &m, err, sizeof(err));
    if (rc < 0 && rc != -EBADMSG && rc != -ENOMEM)
        abort();
    if (rc == -EBADMSG && !strstr(err, "fuzz.ndjson"))
        abort();
    if (atomic_load(&m.cur) != 0)
        abort();
    free(want);
    eng_schema_free(&s);
    return 0;
}
