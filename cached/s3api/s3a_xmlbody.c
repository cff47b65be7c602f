/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_xmlbody.c: the two XML request bodies (s3a_xml.h), read with expat as
 * they stream in:
 *
 *   <CompleteMultipartUpload>                 <Delete>
 *     <Part><PartNumber>1</PartNumber>          <Object><Key>a</Key>
 *       <ETag>"..."</ETag>                        <VersionId>v</VersionId>?</Object>*
 *       <ChecksumCRC32>..</ChecksumCRC32>?     <Quiet>true</Quiet>?   (before or after)
 *     </Part>*                                </Delete>
 *   </CompleteMultipartUpload>
 *
 * Elements match by local name (after any "prefix:"); anything else inside is
 * skipped. Only the text of the elements above is kept, each with a cap.
 */
#include "s3a_xml.h"
#include "s3a_checksum.h"
#include "s3.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

#define MAX_DEPTH         16
#define DEFAULT_MAX_BYTES (4u << 20)
#define TEXT_MAX          (S3A_KEY_MAX + 64) /* a key; an ETag or checksum is shorter */
#define FEED_PIECE        (1u << 20)         /* expat takes an int length */

enum field {
    F_NONE,
    F_PART_NUMBER,
    F_ETAG,
    F_CK_CRC32,
    F_CK_CRC32C,
    F_CK_CRC64NVME,
    F_CK_SHA1,
    F_CK_SHA256,
    F_KEY,
    F_VERSION_ID,
    F_QUIET,
};

struct s3a_xmlbody {
    s3a_xmlbody_kind kind;
    XML_Parser p;
    size_t max, fed;
    int depth;
    bool root_seen, root_closed;
    bool in_item;
    enum field field;
    char text[TEXT_MAX + 1];
    size_t tlen;
    bool text_over;
    /* the first failure wins */
    int rc;
    int status;
    const char *code;
    char msg[256];
    /* results */
    s3a_body_part *parts;
    size_t nparts, partcap;
    s3a_body_part cur;
    char *cur_number;
    s3a_body_object *objs;
    size_t nobjs, objcap;
    s3a_body_object curo;
    bool quiet;
    bool finished;
};

__attribute__((format(printf, 4, 5))) static void fail(s3a_xmlbody *x, int status, const char *code,
                                                       const char *fmt, ...)
{
    if (x->rc != 0)
        return;
    x->rc = status == 400 ? -EINVAL : -ENOMEM;
    x->status = status;
    x->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
    if (x->p)
        XML_StopParser(x->p, XML_FALSE);
}

static const char *local(const char *name)
{
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

static const char *root_name(const s3a_xmlbody *x)
{
    return x->kind == S3A_BODY_COMPLETE_MPU ? "CompleteMultipartUpload" : "Delete";
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    s3a_xmlbody *x = ud;
    (void)attrs;
    if (x->rc)
        return;
    if (++x->depth > MAX_DEPTH) {
        fail(x, 400, "MalformedXML", "The XML you provided nests deeper than %d levels.",
             MAX_DEPTH);
        return;
    }
    const char *n = local(name);
    if (x->depth == 1) {
        if (strcmp(n, root_name(x)) != 0)
            fail(x, 400, "MalformedXML",
                 "The XML you provided was not well-formed or did not validate against our "
                 "published schema: its root is <%s>, not <%s>.",
                 n, root_name(x));
        x->root_seen = true;
        return;
    }
    x->field = F_NONE;
    if (x->kind == S3A_BODY_COMPLETE_MPU) {
        if (x->depth == 2 && strcmp(n, "Part") == 0) {
            x->in_item = true;
            memset(&x->cur, 0, sizeof x->cur);
        } else if (x->depth == 3 && x->in_item) {
            static const struct {
                const char *n;
                enum field f;
            } f[] = {{"PartNumber", F_PART_NUMBER},         {"ETag", F_ETAG},
                     {"ChecksumCRC32", F_CK_CRC32},         {"ChecksumCRC32C", F_CK_CRC32C},
                     {"ChecksumCRC64NVME", F_CK_CRC64NVME}, {"ChecksumSHA1", F_CK_SHA1},
                     {"ChecksumSHA256", F_CK_SHA256}};
            for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
                if (strcmp(n, f[i].n) == 0)
                    x->field = f[i].f;
        }
    } else {
        if (x->depth == 2 && strcmp(n, "Object") == 0) {
            x->in_item = true;
            memset(&x->curo, 0, sizeof x->curo);
        } else if (x->depth == 2 && strcmp(n, "Quiet") == 0) {
            x->field = F_QUIET;
        } else if (x->depth == 3 && x->in_item) {
            if (strcmp(n, "Key") == 0)
                x->field = F_KEY;
            else if (strcmp(n, "VersionId") == 0)
                x->field = F_VERSION_ID;
        }
    }
    x->tlen = 0;
    x->text_over = false;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    s3a_xmlbody *x = ud;
    if (x->rc || x->field == F_NONE || len <= 0)
        return;
    if (x->tlen + (size_t)len > TEXT_MAX) {
        x->text_over = true;
        return;
    }
    memcpy(x->text + x->tlen, s, (size_t)len);
    x->tlen += (size_t)len;
}

static char *trimmed_dup(const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static void free_part(s3a_body_part *p)
{
    free(p->etag);
    for (int i = 0; i < 6; i++)
        free(p->checksum[i]);
    memset(p, 0, sizeof *p);
}

static bool grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? *cap * 2 : 16;
    void *a = realloc(*arr, c * elem);
    if (a == NULL)
        return false;
    *arr = a;
    *cap = c;
    return true;
}

static void end_part(s3a_xmlbody *x)
{
    s3a_body_part *c = &x->cur;
    char *num = x->cur_number;
    x->cur_number = NULL;
    if (num == NULL || c->etag == NULL) {
        free(num);
        free_part(c);
        fail(x, 400, "MalformedXML",
             "The XML you provided was not well-formed or did not validate against our "
             "published schema: each <Part> needs a <PartNumber> and an <ETag>.");
        return;
    }
    char *end = NULL;
    long v = strtol(num, &end, 10);
    bool ok = num[0] != '\0' && *end == '\0' && v >= 1 && v <= S3A_MPU_MAX_PARTS;
    free(num);
    if (!ok) {
        free_part(c);
        fail(x, 400, "InvalidArgument",
             "Part number must be an integer between 1 and 10000, inclusive");
        return;
    }
    c->number = (int)v;
    if (x->nparts >= S3A_MPU_MAX_PARTS) {
        free_part(c);
        fail(x, 400, "MalformedXML", "The XML you provided lists more than 10000 parts.");
        return;
    }
    if (x->nparts > 0 && c->number <= x->parts[x->nparts - 1].number) {
        free_part(c);
        fail(x, 400, "InvalidPartOrder",
             "The list of parts was not in ascending order. The parts list must be specified "
             "in order by part number.");
        return;
    }
    if (!grow((void **)&x->parts, &x->partcap, x->nparts, sizeof *x->parts)) {
        free_part(c);
        fail(x, 500, "InternalError", "out of memory reading the part list");
        return;
    }
    x->parts[x->nparts++] = *c;
    memset(c, 0, sizeof *c);
}

static void end_object(s3a_xmlbody *x)
{
    s3a_body_object *o = &x->curo;
    if (o->key == NULL || o->key[0] == '\0') {
        free(o->key);
        free(o->version_id);
        memset(o, 0, sizeof *o);
        fail(x, 400, "MalformedXML",
             "The XML you provided was not well-formed or did not validate against our "
             "published schema: each <Object> needs a <Key>.");
        return;
    }
    if (x->nobjs >= S3A_DELETE_MAX_KEYS ||
        !grow((void **)&x->objs, &x->objcap, x->nobjs, sizeof *x->objs)) {
        free(o->key);
        free(o->version_id);
        memset(o, 0, sizeof *o);
        fail(x, 400, "MalformedXML",
             "The XML you provided was not well-formed or did not validate against our "
             "published schema: at most 1000 objects may be deleted at once.");
        return;
    }
    x->objs[x->nobjs++] = *o;
    memset(o, 0, sizeof *o);
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    s3a_xmlbody *x = ud;
    (void)name;
    if (x->rc)
        return;
    if (x->field != F_NONE) {
        enum field f = x->field;
        x->field = F_NONE;
        if (x->text_over) {
            fail(x, 400, f == F_KEY ? "KeyTooLongError" : "MalformedXML",
                 f == F_KEY ? "Your key is too long"
                            : "The XML you provided has an element text longer than %d bytes.",
                 TEXT_MAX);
            return;
        }
        char *t = f == F_KEY ? malloc(x->tlen + 1) : trimmed_dup(x->text, x->tlen);
        if (t == NULL) {
            fail(x, 500, "InternalError", "out of memory reading the request body");
            return;
        }
        if (f == F_KEY) {
            /* keys keep their spaces */
            memcpy(t, x->text, x->tlen);
            t[x->tlen] = '\0';
            if (x->tlen > S3A_KEY_MAX || strlen(t) != x->tlen) {
                free(t);
                fail(x, 400, "KeyTooLongError", "Your key is too long");
                return;
            }
        }
        char **slot = NULL;
        switch (f) {
        case F_PART_NUMBER: slot = &x->cur_number; break;
        case F_ETAG: {
            char e[S3_ETAG_MAX];
            if (s3_etag_normalize(t, e, sizeof e) < 0) {
                free(t);
                fail(x, 400, "MalformedXML", "An <ETag> in the part list is not an ETag.");
                return;
            }
            free(t);
            t = strdup(e);
            if (t == NULL) {
                fail(x, 500, "InternalError", "out of memory reading the request body");
                return;
            }
            slot = &x->cur.etag;
            break;
        }
        case F_CK_CRC32: slot = &x->cur.checksum[S3A_CK_CRC32 - 1]; break;
        case F_CK_CRC32C: slot = &x->cur.checksum[S3A_CK_CRC32C - 1]; break;
        case F_CK_CRC64NVME: slot = &x->cur.checksum[S3A_CK_CRC64NVME - 1]; break;
        case F_CK_SHA1: slot = &x->cur.checksum[S3A_CK_SHA1 - 1]; break;
        case F_CK_SHA256: slot = &x->cur.checksum[S3A_CK_SHA256 - 1]; break;
        case F_KEY: slot = &x->curo.key; break;
        case F_VERSION_ID: slot = &x->curo.version_id; break;
        case F_QUIET:
            if (strcmp(t, "true") == 0 || strcmp(t, "false") == 0) {
                x->quiet = t[0] == 't';
            } else {
                fail(x, 400, "MalformedXML", "<Quiet> must be true or false.");
            }
            free(t);
            x->depth--;
            return;
        case F_NONE: break;
        }
        if (slot != NULL) {
            if (*slot != NULL) {
                free(t);
                fail(x, 400, "MalformedXML", "An element of the body is given twice.");
                return;
            }
            *slot = t;
        } else {
            free(t);
        }
    } else if (x->depth == 2 && x->in_item) {
        x->in_item = false;
        if (x->kind == S3A_BODY_COMPLETE_MPU)
            end_part(x);
        else
            end_object(x);
    } else if (x->depth == 1) {
        x->root_closed = true;
    }
    x->depth--;
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    s3a_xmlbody *x = ud;
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    fail(x, 400, "MalformedXML", "The XML you provided has a DOCTYPE, which S3 does not take.");
}

int s3a_xmlbody_create(s3a_xmlbody **out, s3a_xmlbody_kind kind, size_t max_bytes)
{
    *out = NULL;
    s3a_xmlbody *x = calloc(1, sizeof *x);
    if (x == NULL)
        return -ENOMEM;
    x->kind = kind;
    x->max = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
    x->p = XML_ParserCreate(NULL);
    if (x->p == NULL) {
        free(x);
        return -ENOMEM;
    }
    XML_SetUserData(x->p, x);
    XML_SetElementHandler(x->p, on_start, on_end);
    XML_SetCharacterDataHandler(x->p, on_text);
    XML_SetStartDoctypeDeclHandler(x->p, on_doctype);
    *out = x;
    return 0;
}

void s3a_xmlbody_destroy(s3a_xmlbody **px)
{
    if (px == NULL || *px == NULL)
        return;
    s3a_xmlbody *x = *px;
    if (x->p)
        XML_ParserFree(x->p);
    for (size_t i = 0; i < x->nparts; i++)
        free_part(&x->parts[i]);
    free(x->parts);
    free_part(&x->cur);
    free(x->cur_number);
    for (size_t i = 0; i < x->nobjs; i++) {
        free(x->objs[i].key);
        free(x->objs[i].version_id);
    }
    free(x->objs);
    free(x->curo.key);
    free(x->curo.version_id);
    free(x);
    *px = NULL;
}

static int report(s3a_xmlbody *x, s3a_error *err)
{
    int rc = s3a_error_set(err, x->status, x->code, "%s", x->msg);
    return x->status == 500 ? -ENOMEM : rc;
}

static int parse(s3a_xmlbody *x, const char *d, size_t len, bool final)
{
    do {
        size_t n = len < FEED_PIECE ? len : FEED_PIECE;
        bool last = final && n == len;
        if (XML_Parse(x->p, d, (int)n, last) == XML_STATUS_ERROR && x->rc == 0)
            fail(x, 400, "MalformedXML",
                 "The XML you provided was not well-formed or did not validate against our "
                 "published schema: %s at line %lu, column %lu.",
                 XML_ErrorString(XML_GetErrorCode(x->p)),
                 (unsigned long)XML_GetCurrentLineNumber(x->p),
                 (unsigned long)XML_GetCurrentColumnNumber(x->p));
        d += n;
        len -= n;
    } while (len > 0 && x->rc == 0);
    return x->rc;
}

int s3a_xmlbody_feed(s3a_xmlbody *x, const void *data, size_t len, s3a_error *err)
{
    if (x->rc == 0 && x->finished)
        fail(x, 400, "MalformedXML", "The request body continues after its end.");
    if (x->rc == 0 && x->fed + len > x->max)
        fail(x, 400, "MalformedXML", "The XML you provided is larger than %zu bytes.", x->max);
    if (x->rc == 0 && len > 0) {
        x->fed += len;
        parse(x, data, len, false);
    }
    return x->rc ? report(x, err) : 0;
}

int s3a_xmlbody_finish(s3a_xmlbody *x, s3a_error *err)
{
    if (x->rc == 0 && !x->finished) {
        x->finished = true;
        if (x->fed > 0)
            parse(x, "", 0, true);
    }
    if (x->rc == 0 && (!x->root_seen || !x->root_closed))
        fail(x, 400, "MalformedXML",
             "The XML you provided was not well-formed or did not validate against our "
             "published schema: the body has no <%s> document.",
             root_name(x));
    if (x->rc == 0 && x->kind == S3A_BODY_COMPLETE_MPU && x->nparts == 0)
        fail(x, 400, "InvalidRequest", "You must specify at least one part");
    if (x->rc == 0 && x->kind == S3A_BODY_DELETE && x->nobjs == 0)
        fail(x, 400, "MalformedXML",
             "The XML you provided was not well-formed or did not validate against our "
             "published schema: <Delete> needs at least one <Object>.");
    return x->rc ? report(x, err) : 0;
}

const s3a_body_part *s3a_xmlbody_parts(const s3a_xmlbody *x, size_t *n)
{
    *n = x->rc == 0 ? x->nparts : 0;
    return x->parts;
}

const s3a_body_object *s3a_xmlbody_objects(const s3a_xmlbody *x, size_t *n, bool *quiet)
{
    *n = x->rc == 0 ? x->nobjs : 0;
    if (quiet)
        *quiet = x->quiet;
    return x->objs;
}
