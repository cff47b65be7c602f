/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_s3xml.c: libFuzzer target for the XML answers of S3 (client/s3/s3_xml.c).
 * The same bytes go to every parser: ListObjectsV2, Error, Initiate and
 * Complete multipart upload. Beyond "no crash, no leak, no UB" (ASan+UBSan),
 * it checks what a caller relies on: a parsed page obeys the documented
 * bounds, a failure leaves nothing allocated and a sentence in err, and the
 * ETags are normalised. Lines of the input also become the part ETags of a
 * CompleteMultipartUpload body, which must be well-formed XML by construction.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

#include "s3_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A normalised ETag fits, and normalising it again changes nothing. */
static void check_etag(const char *e)
{
    size_t n = strnlen(e, S3_ETAG_MAX);
    if (n >= S3_ETAG_MAX)
        abort();
    char again[S3_ETAG_MAX];
    if (s3_etag_normalize(e, again, sizeof again) != (int)n || strcmp(again, e) != 0)
        abort();
}

static void fuzz_list(const char *xml, size_t len)
{
    s3_list_page pg;
    char err[256] = "";
    int rc = s3__xml_parse_list(xml, len, &pg, err, sizeof err);
    if (rc == 0) {
        if (pg.n_objects > 10000 || pg.n_prefixes > 10000)
            abort();
        for (size_t i = 0; i < pg.n_objects; i++) {
            size_t kl = strlen(pg.objects[i].key);
            if (kl == 0 || kl > 1024)
                abort();
            check_etag(pg.objects[i].etag);
        }
        for (size_t i = 0; i < pg.n_prefixes; i++)
            if (strlen(pg.prefixes[i]) > 1024)
                abort();
        if (pg.truncated && (pg.next_token == NULL || pg.next_token[0] == '\0'))
            abort();
    } else {
        if (rc != -EPROTO && rc != -ENOMEM)
            abort();
        if (pg.objects || pg.prefixes || pg.next_token || pg.n_objects || err[0] == '\0')
            abort();
    }
    s3__list_page_free(&pg);
}

static void fuzz_error(const char *xml, size_t len)
{
    char code[64], msg[256];
    int rc = s3__xml_parse_error(xml, len, code, sizeof code, msg, sizeof msg);
    if (rc != 0 && rc != -ENOENT && rc != -EPROTO && rc != -ENOMEM)
        abort();
    if (strnlen(code, sizeof code) >= sizeof code || strnlen(msg, sizeof msg) >= sizeof msg)
        abort();
}

static void fuzz_mpu(const char *xml, size_t len)
{
    char *id = NULL;
    char err[256] = "";
    int rc = s3__xml_parse_mpu_initiate(xml, len, &id, err, sizeof err);
    if ((rc == 0) != (id != NULL))
        abort();
    if (rc == 0 && id[0] == '\0')
        abort();
    free(id);
    char etag[S3_ETAG_MAX];
    rc = s3__xml_parse_mpu_complete(xml, len, etag, err, sizeof err);
    if (rc != 0 && rc != -EIO && rc != -EPROTO && rc != -ENOMEM)
        abort();
    if (rc == 0)
        check_etag(etag);
}

/* Each line of the input is a part's ETag; the body must parse as XML. */
static void fuzz_build(const char *s, size_t len)
{
    const char *parts[16];
    char buf[16][S3_ETAG_MAX];
    int n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len && n < 16; i++) {
        if (i < len && s[i] != '\n')
            continue;
        size_t l = i - start;
        if (l >= S3_ETAG_MAX)
            l = S3_ETAG_MAX - 1;
        memcpy(buf[n], s + start, l);
        buf[n][l] = '\0';
        parts[n] = buf[n];
        n++;
        start = i + 1;
    }
    char *body = s3__xml_build_mpu_complete(parts, n);
    if (body == NULL)
        return; /* an ETag that normalises to too long, or ENOMEM */
    /* Control bytes are not XML characters; only check bodies without them. */
    bool plain = true;
    for (const char *p = body; *p; p++)
        if ((unsigned char)*p < 0x20)
            plain = false;
    if (plain) {
        XML_Parser p = XML_ParserCreate("ISO-8859-1"); /* any byte is a character */
        if (p != NULL) {
            if (XML_Parse(p, body, (int)strlen(body), 1) != XML_STATUS_OK)
                abort();
            XML_ParserFree(p);
        }
    }
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *xml = (const char *)data;
    fuzz_list(xml, size);
    fuzz_error(xml, size);
    fuzz_mpu(xml, size);
    if (size < 4096)
        fuzz_build(xml, size);
    return 0;
}
