/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_csv.c: arbitrary bytes as CSV, CSVWithNames, TSV and TSVWithNames
 * (the first byte picks the format): infer the schema, then parse every
 * column in small batches. Errors must be -EBADMSG with a sentence naming
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
    if (size < 1)
        return 0;
    static const tx_format fmts[] = {TX_CSV, TX_CSV_NAMES, TX_TSV, TX_TSV_NAMES};
    tx_format f = fmts[data[0] & 3];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    eng_schema s;
    char err[512] = "";
    int rc = tx_infer(f, "fuzz.csv", text, len, &s, err, sizeof(err));
    if (rc < 0) {
        if (rc != -EBADMSG && rc != -ENOMEM)
            abort();
        if (rc == -EBADMSG && !strstr(err, "fuzz.csv"))
            abort();
        return 0;
    }
    int *want = calloc((size_t)s.n + 1, sizeof(int));
    if (!want)
        abort();
    for (int k = 0; k < s.n; k++)
        want[k] = k;
    eng_mem m = {0};
    rc = tx_parse(&m, f, "fuzz.csv", text, len, &s, want, s.n, 3, drop, &m, err, sizeof(err));
    if (rc < 0 && rc != -EBADMSG && rc != -ENOMEM)
        abort();
    if (rc == -EBADMSG && !strstr(err, "fuzz.csv"))
        abort();
    if (atomic_load(&m.cur) != 0)
        abort();
    free(want);
    eng_schema_free(&s);
    return 0;
}
