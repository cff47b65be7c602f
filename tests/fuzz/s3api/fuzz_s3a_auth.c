/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for signature verification (cached/s3api/s3a_auth.h):
 * the Authorization header, the presigned query (SigV4 and SigV2), dates,
 * credentials and SignedHeaders lists all come from the input. Input:
 * "METHOD path?query\n" then "Name: value" lines. Besides memory errors it
 * checks that a refusal always carries a status and an S3 code and writes as
 * XML, and that an accepted signed request names the key the lookup knows.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3a_auth.h"
#include "s3a_xml.h"

#include "../fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lookup(void *arg, const char *akid, char *secret, size_t cap, void **principal)
{
    (void)arg;
    if (strcmp(akid, "AKIAIOSFODNN7EXAMPLE") != 0)
        return -ENOENT;
    snprintf(secret, cap, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    *principal = NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384)
        return 0;
    static s3a_verifier *v;
    if (v == NULL) {
        s3a_auth_config cfg = {.secret = lookup};
        CHECK(s3a_verifier_create(&v, &cfg) == 0);
    }
    char *buf = malloc(size + 1);
    CHECK(buf != NULL);
    memcpy(buf, data, size);
    buf[size] = '\0';
    s3a_header h[32];
    size_t nh = 0;
    char *line = buf, *next = strchr(line, '\n');
    if (next)
        *next++ = '\0';
    char *method = line, *target = strchr(line, ' ');
    if (target)
        *target++ = '\0';
    else
        target = "/";
    char *query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    for (line = next; line && nh < 32; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *colon = strchr(line, ':');
        if (colon == NULL)
            continue;
        *colon = '\0';
        char *val = colon + 1;
        while (*val == ' ')
            val++;
        h[nh].name = line;
        h[nh].value = val;
        nh++;
    }
    s3a_request r = {.method = method,
                     .path = target,
                     .query = query,
                     .headers = h,
                     .n_headers = nh,
                     .vhost_bucket = (size & 1) ? "examplebucket" : NULL};
    s3a_auth a;
    s3a_error e = {0};
    int rc = s3a_verify(v, &r, 1369353600, &a, &e);
    if (rc == 0) {
        CHECK(a.kind == S3A_AUTH_ANONYMOUS || strcmp(a.access_key, "AKIAIOSFODNN7EXAMPLE") == 0);
    } else if (rc != -ENOMEM) {
        CHECK(e.code != NULL && e.status >= 400);
        s3a_buf b = {0};
        CHECK(s3a_xml_error(&b, &e, NULL, NULL, target, "R", "H") == 0);
        s3a_buf_free(&b);
    }
    s3a_error_deinit(&e);
    free(buf);
    return 0;
}
