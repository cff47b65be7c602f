/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_s3glob.c: libFuzzer target for key globs (client/s3/s3_glob.c). The input
 * is a pattern, a newline, then keys separated by newlines. Beyond "no crash,
 * no leak, no UB", it checks the properties s3_sync_glob relies on: every key
 * a glob matches starts with s3_glob_prefix (listing only the prefix misses
 * nothing), and a pattern without wildcards matches exactly itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 20000)
        return 0;
    char *s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char *nl = strchr(s, '\n');
    char *keys = NULL;
    if (nl != NULL) {
        *nl = '\0';
        keys = nl + 1;
    }
    s3_glob *g = NULL;
    if (s3_glob_create(&g, s) == 0) {
        const char *prefix = s3_glob_prefix(g);
        size_t plen = strlen(prefix);
        if (!s3_glob_has_wildcards(g) && !s3_glob_match(g, s))
            abort();
        for (char *k = keys; k != NULL;) {
            char *next = strchr(k, '\n');
            if (next != NULL)
                *next++ = '\0';
            bool m = s3_glob_match(g, k);
            if (m && strncmp(k, prefix, plen) != 0)
                abort();
            if (!s3_glob_has_wildcards(g) && m != (strcmp(k, s) == 0))
                abort();
            k = next;
        }
        s3_glob_destroy(&g);
    } else if (g != NULL) {
        abort();
    }
    free(s);
    return 0;
}
