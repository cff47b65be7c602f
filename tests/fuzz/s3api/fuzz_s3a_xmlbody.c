/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the XML request bodies (cached/s3api/s3a_xml.h:
 * CompleteMultipartUpload and Delete). Input: byte 0's low bit picks the
 * kind, the next byte the piece size; the rest is the body. Besides memory
 * errors it checks that the verdict, the error code and what was read (part
 * numbers and ETags, keys, Quiet) are the same fed whole and in pieces, and
 * that accepted part lists ascend within 1..10000 and delete lists hold
 * 1..1000 non-empty keys of at most 1024 bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3a_xml.h"

#include "../fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static s3a_xmlbody *run(s3a_xmlbody_kind kind, const uint8_t *d, size_t len, size_t piece, int *rc,
                        const char **code)
{
    s3a_xmlbody *x;
    CHECK(s3a_xmlbody_create(&x, kind, 1 << 16) == 0);
    s3a_error e = {0};
    *rc = 0;
    for (size_t off = 0; off < len && *rc == 0;) {
        size_t n = piece == 0 || len - off < piece ? len - off : piece;
        *rc = s3a_xmlbody_feed(x, d + off, n, &e);
        off += n;
    }
    if (*rc == 0)
        *rc = s3a_xmlbody_finish(x, &e);
    *code = e.code;
    s3a_error_deinit(&e);
    return x;
}

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    s3a_xmlbody_kind kind = data[0] & 1 ? S3A_BODY_DELETE : S3A_BODY_COMPLETE_MPU;
    size_t piece = data[1];
    int r1, r2;
    const char *c1, *c2;
    s3a_xmlbody *a = run(kind, data + 2, size - 2, 0, &r1, &c1);
    s3a_xmlbody *b = run(kind, data + 2, size - 2, piece, &r2, &c2);
    CHECK(r1 == r2 && same_str(c1, c2));
    if (r1 == 0 && kind == S3A_BODY_COMPLETE_MPU) {
        size_t na, nb;
        const s3a_body_part *pa = s3a_xmlbody_parts(a, &na), *pb = s3a_xmlbody_parts(b, &nb);
        CHECK(na == nb && na >= 1 && na <= S3A_MPU_MAX_PARTS);
        for (size_t i = 0; i < na; i++) {
            CHECK(pa[i].number == pb[i].number && same_str(pa[i].etag, pb[i].etag));
            CHECK(pa[i].number >= 1 && pa[i].number <= 10000);
            CHECK(i == 0 || pa[i].number > pa[i - 1].number);
            for (int k = 0; k < 6; k++)
                CHECK(same_str(pa[i].checksum[k], pb[i].checksum[k]));
        }
    } else if (r1 == 0) {
        size_t na, nb;
        bool qa, qb;
        const s3a_body_object *oa = s3a_xmlbody_objects(a, &na, &qa);
        const s3a_body_object *ob = s3a_xmlbody_objects(b, &nb, &qb);
        CHECK(na == nb && qa == qb && na >= 1 && na <= S3A_DELETE_MAX_KEYS);
        for (size_t i = 0; i < na; i++) {
            CHECK(same_str(oa[i].key, ob[i].key) && same_str(oa[i].version_id, ob[i].version_id));
            CHECK(oa[i].key[0] != '\0' && strlen(oa[i].key) <= S3A_KEY_MAX);
        }
    }
    s3a_xmlbody_destroy(&a);
    s3a_xmlbody_destroy(&b);
    return 0;
}
