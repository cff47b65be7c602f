/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_bytesize.c: arbitrary bytes as a size for bytesize_parse. Besides not
 * crashing: the answer is 0, -EINVAL or -ERANGE; a refusal always says why
 * and leaves the output alone; an accepted value fits an int64_t, and what
 * bytesize_format writes for it parses back to the same value.
 */
#include "bytesize.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[256];
    if (size >= sizeof text)
        size = sizeof text - 1;
    memcpy(text, data, size);
    text[size] = '\0';
    char err[300];
    err[0] = '\0';
    uint64_t v = 42;
    int rc = bytesize_parse(text, &v, err, sizeof err);
    CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
    if (rc != 0) {
        CHECK(err[0] != '\0' && v == 42);
        return 0;
    }
    CHECK(v <= (uint64_t)INT64_MAX);
    char buf[32];
    bytesize_format(v, buf, sizeof buf);
    uint64_t back = 0;
    CHECK(bytesize_parse(buf, &back, NULL, 0) == 0 && back == v);
    return 0;
}
