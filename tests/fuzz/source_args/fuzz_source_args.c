/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_source_args.c: libFuzzer target for what a query hands s3() and
 * file() as text: the S3 URL (src__s3_url_parse) and the structure argument
 * (src__structure_parse). The input is a URL, a newline, then the structure.
 * Beyond "no crash, no leak, no UB" it checks what the callers rely on: a
 * parsed URL has a bucket and a key that fit their buffers, an endpoint only
 * for the endpoint form; a parsed structure has at least one column, every
 * name non-empty and none twice.
 */
#include "src_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    char *nl = strchr(s, '\n');
    const char *structure = "";
    if (nl) {
        *nl = 0;
        structure = nl + 1;
    }
    src_s3_url u;
    char why[512];
    if (src__s3_url_parse(s, &u, why, sizeof(why)) == 0) {
        if (!u.bucket[0] || strlen(u.key) > 1024)
            abort();
        if ((u.kind == SRC_URL_ENDPOINT) != (u.endpoint[0] != 0))
            abort();
    } else if (!why[0]) {
        abort(); /* a refusal always says why */
    }
    eng_schema sc;
    char err[512];
    if (src__structure_parse(structure, &sc, err, sizeof(err)) == 0) {
        if (sc.n < 1 || !sc.given)
            abort();
        for (int i = 0; i < sc.n; i++) {
            if (!sc.cols[i].name[0])
                abort();
            for (int j = 0; j < i; j++)
                if (strcmp(sc.cols[i].name, sc.cols[j].name) == 0)
                    abort();
        }
        eng_schema_free(&sc);
    }
    free(s);
    return 0;
}
