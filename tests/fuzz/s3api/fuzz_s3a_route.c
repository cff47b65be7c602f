/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the S3 request router (cached/s3api/s3a_route.h) and
 * x-amz-copy-source parsing. Input: "method\nhost\npath\nquery\ncopy-source"
 * (missing lines are empty; an empty host is no Host). Besides memory errors
 * it checks what a route promises: a known operation, a bucket name S3
 * accepts (or none for ListBuckets), a key of at most 1024 bytes exactly for
 * object operations, a part number in 1..10000 for UploadPart, and an error
 * with a status and code whenever routing fails; then writes the error as
 * XML, which must succeed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s3a_route.h"
#include "s3a_xml.h"

#include "../fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool object_op(s3a_op op)
{
    return op >= S3A_OP_GET_OBJECT && op <= S3A_OP_LIST_PARTS;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *buf = malloc(size + 1);
    CHECK(buf != NULL);
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *f[5] = {"", "", "", "", ""};
    char *p = buf;
    for (int i = 0; i < 5 && p; i++) {
        f[i] = p;
        p = strchr(p, '\n');
        if (p)
            *p++ = '\0';
    }
    static const char *const domains[] = {"s3.example.com", "localhost"};
    s3a_route_config cfg = {.domains = domains, .n_domains = 2};
    s3a_route r;
    s3a_error e = {0};
    int rc =
        s3a_route_parse(&cfg, f[0], f[1][0] ? f[1] : NULL, f[2], f[3], f[4][0] != '\0', &r, &e);
    if (rc == 0) {
        CHECK(r.op > S3A_OP_NONE && r.op < S3A_OP__COUNT);
        CHECK(e.code == NULL);
        size_t bl = strlen(r.bucket);
        CHECK(r.op == S3A_OP_LIST_BUCKETS ? bl == 0 : s3a_bucket_name_valid(r.bucket, bl));
        CHECK(object_op(r.op) == (r.key != NULL));
        if (r.key)
            CHECK(r.key_len == strlen(r.key) && r.key_len <= S3A_KEY_MAX && r.key_len > 0);
        if (r.op == S3A_OP_UPLOAD_PART || r.op == S3A_OP_UPLOAD_PART_COPY)
            CHECK(r.part_number >= 1 && r.part_number <= 10000 && r.upload_id != NULL);
        CHECK(strcmp(s3a_op_name(r.op), "Unknown") != 0);
    } else if (rc != -ENOMEM) {
        CHECK(e.code != NULL && e.status >= 400 && e.status <= 599);
        s3a_buf b = {0};
        CHECK(s3a_xml_error(&b, &e, r.bucket, r.key, NULL, "R", "H") == 0);
        s3a_buf_free(&b);
    }
    s3a_route_deinit(&r);

    char bucket[S3A_BUCKET_MAX + 1];
    char *key = NULL, *vid = NULL;
    rc = s3a_copy_source_parse(f[4], bucket, &key, &vid, &e);
    if (rc == 0) {
        CHECK(s3a_bucket_name_valid(bucket, strlen(bucket)) && key != NULL && key[0] != '\0');
    } else {
        CHECK(key == NULL && vid == NULL);
    }
    free(key);
    free(vid);
    s3a_error_deinit(&e);
    free(buf);
    return 0;
}
