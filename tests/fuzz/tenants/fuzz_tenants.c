/* SPDX-License-Identifier: Apache-2.0
 *
 * Fuzzes the tenants file parser, ten_parse() (cached/tenants.h): any bytes
 * give either a set of at least one tenant, each with a name, an allow list it
 * answers for and consistent credentials, or -EINVAL/-ENOMEM with a message
 * and no set. Lookups with bytes from the input never crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tenants.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ten_set *s = (ten_set *)data; /* must be overwritten */
    char err[256] = "";
    int rc = ten_parse(&s, (const char *)data, size, "fuzz", err, sizeof err);
    if (rc != 0) {
        if ((rc != -EINVAL && rc != -ENOMEM) || s != NULL || err[0] == '\0')
            abort();
        return 0;
    }
    size_t n = ten_count(s);
    if (n == 0 || ten_at(s, n) != NULL)
        abort();
    for (size_t i = 0; i < n; i++) {
        const ten_tenant *t = ten_at(s, i);
        if (t == NULL || ten_name(t) == NULL || ten_name(t)[0] == '\0')
            abort();
        if ((ten_access_key(t) == NULL) != (ten_secret_key(t) == NULL))
            abort();
        if (ten_session_token(t) != NULL && ten_access_key(t) == NULL)
            abort();
        for (size_t k = 0; k < i; k++)
            if (strcmp(ten_name(ten_at(s, k)), ten_name(t)) == 0)
                abort();
        /* lookups with slices of the input */
        size_t half = size / 2;
        (void)ten_allows(t, (const char *)data, half, (const char *)data + half, size - half);
        (void)ten_allows(t, (const char *)data, size, NULL, 0);
    }
    (void)ten_find(s, (const char *)data, size);
    ten_destroy(&s);
    if (s != NULL)
        abort();
    return 0;
}
