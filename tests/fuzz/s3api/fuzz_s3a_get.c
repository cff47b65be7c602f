/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for GetObject's Range and conditional headers
 * (cached/s3api/s3a_get.h). Input: an 8-byte object size, then
 * "range\nif-match\nif-none-match\nif-modified-since\nif-unmodified-since"
 * (an empty line is an absent header). Besides memory errors it checks what
 * a plan promises: one of S3's statuses, and for 200/206 a range inside the
 * object whose count matches (the whole object for 200). Each line is also
 * read as each of the three date forms S3 speaks (s3a.h): -1 or a time, and
 * an XML date read back from what s3a_iso8601_ms writes for it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3a.h"
#include "s3a_get.h"

#include "../fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8 || size > 4096)
        return 0;
    uint64_t osize = 0;
    memcpy(&osize, data, 8);
    osize %= (1ull << 50);
    char *buf = malloc(size - 8 + 1);
    CHECK(buf != NULL);
    memcpy(buf, data + 8, size - 8);
    buf[size - 8] = '\0';
    char *f[5] = {"", "", "", "", ""};
    char *p = buf;
    for (int i = 0; i < 5 && p; i++) {
        f[i] = p;
        p = strchr(p, '\n');
        if (p)
            *p++ = '\0';
    }
    s3a_get_headers h = {f[1][0] ? f[1] : NULL, f[2][0] ? f[2] : NULL, f[3][0] ? f[3] : NULL,
                         f[4][0] ? f[4] : NULL, f[0][0] ? f[0] : NULL};
    s3a_get_object o = {"\"0123456789abcdef\"", 1700000000, osize};
    s3a_get_plan plan;
    s3a_get_decide(&o, &h, &plan);
    int s = plan.status;
    CHECK(s == 200 || s == 206 || s == 304 || s == 412 || s == 416);
    if (s == 200) {
        CHECK(plan.first == 0 && plan.count == osize);
    } else if (s == 206) {
        CHECK(h.range != NULL && plan.first <= plan.last && plan.last < osize);
        CHECK(plan.count == plan.last - plan.first + 1);
    } else if (s == 412) {
        CHECK(plan.condition != NULL);
    } else if (s == 416) {
        CHECK(h.range != NULL);
    }
    for (int i = 0; i < 5; i++) {
        int64_t t = s3a_parse_iso8601(f[i]);
        CHECK(t >= -1 && s3a_parse_http_date(f[i]) >= -1 && s3a_parse_amz_date(f[i]) >= -1);
        if (t >= 0 && t < 253402300800LL) { /* up to 9999-12-31 */
            char d[25];
            s3a_iso8601_ms(t * 1000, d);
            CHECK(s3a_parse_iso8601(d) == t);
        }
    }
    free(buf);
    return 0;
}
