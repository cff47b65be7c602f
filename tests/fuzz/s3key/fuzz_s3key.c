/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_s3key.c: arbitrary bytes as a key for s3_key_check, the rule every
 * entry applies to keys (the node for tenants, the CLI always). Besides not
 * crashing: a key with a literal "." or ".." segment is always refused, a
 * refusal always says why, and spelling every '.' as "%2E" changes nothing
 * (the rule decodes before it looks).
 */
#include "s3.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

static int literal_dot_segment(const uint8_t *p, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '/' && p[i] != '\\')
            continue;
        size_t len = i - start;
        if ((len == 1 && p[start] == '.') || (len == 2 && p[start] == '.' && p[start + 1] == '.'))
            return 1;
        start = i + 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[300];
    why[0] = '\0';
    int rc = s3_key_check((const char *)data, size, why, sizeof(why));
    CHECK(rc == 0 || rc == -22);
    CHECK(rc == 0 || why[0] != '\0');
    if (size <= 1024 && literal_dot_segment(data, size))
        CHECK(rc != 0);
    /* '.' -> "%2E" keeps the verdict (when it still fits S3's 1024 bytes) */
    char enc[1024];
    size_t k = 0;
    int fits = 1;
    for (size_t i = 0; i < size && fits; i++) {
        if (data[i] == '.') {
            if (k + 3 > sizeof(enc))
                fits = 0;
            else
                memcpy(enc + k, "%2E", 3), k += 3;
        } else if (k + 1 > sizeof(enc)) {
            fits = 0;
        } else {
            enc[k++] = (char)data[i];
        }
    }
    if (fits && size <= 1024)
        CHECK(s3_key_check(enc, k, NULL, 0) == rc);
    return 0;
}
