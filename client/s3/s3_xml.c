/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_xml.c: the XML S3 answers with, read with expat, and the one XML body
 * the client sends (CompleteMultipartUpload). The answers come from the
 * network, so everything here is bounded and treats the input as hostile:
 *
 *  - no DTD at all (a DOCTYPE is refused: no entity expansion, no external
 *    entities), nesting deeper than XP_MAX_DEPTH is refused;
 *  - only the text of the few elements we read is kept, each with a byte cap
 *    (a key at most 1024 bytes, as S3's own limit), and a page holds at most
 *    XP_MAX_OBJECTS objects and as many prefixes;
 *  - anything malformed or unexpected is -EPROTO with a sentence saying what
 *    and where; nothing crashes and nothing leaks (fuzzed: tests/fuzz/s3xml).
 *
 * Element names are compared by their local part (after any "prefix:"), so a
 * server that writes <s3:Key> is read like one that writes <Key>.
 */
#include "s3_int.h"
#include "errf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <expat.h>

#define XP_MAX_DEPTH     32
#define XP_MAX_OBJECTS   10000
#define XP_KEY_MAX       1024 /* S3's limit on a key, in bytes */
#define XP_KEY_TEXT_MAX  3072 /* a key as sent with encoding-type=url */
#define XP_TOKEN_MAX     8192
#define XP_UPLOAD_ID_MAX 2048
#define XP_CHUNK         (1u << 20) /* expat takes an int length: feed it in pieces */

enum el {
    E_OTHER,
    E_ListBucketResult,
    E_Contents,
    E_Key,
    E_Size,
    E_ETag,
    E_LastModified,
    E_CommonPrefixes,
    E_Prefix,
    E_IsTruncated,
    E_NextContinuationToken,
    E_EncodingType,
    E_Error,
    E_Code,
    E_Message,
    E_InitiateMultipartUploadResult,
    E_UploadId,
    E_CompleteMultipartUploadResult,
    E_COUNT
};

static const char *const el_names[E_COUNT] = {
    [E_OTHER] = "",
    [E_ListBucketResult] = "ListBucketResult",
    [E_Contents] = "Contents",
    [E_Key] = "Key",
    [E_Size] = "Size",
    [E_ETag] = "ETag",
    [E_LastModified] = "LastModified",
    [E_CommonPrefixes] = "CommonPrefixes",
    [E_Prefix] = "Prefix",
    [E_IsTruncated] = "IsTruncated",
    [E_NextContinuationToken] = "NextContinuationToken",
    [E_EncodingType] = "EncodingType",
    [E_Error] = "Error",
    [E_Code] = "Code",
    [E_Message] = "Message",
    [E_InitiateMultipartUploadResult] = "InitiateMultipartUploadResult",
    [E_UploadId] = "UploadId",
    [E_CompleteMultipartUploadResult] = "CompleteMultipartUploadResult",
};

static int el_id(const char *name)
{
    const char *colon = strrchr(name, ':');
    const char *local = colon ? colon + 1 : name;
    for (int i = 1; i < E_COUNT; i++)
        if (strcmp(local, el_names[i]) == 0)
            return i;
    return E_OTHER;
}

/* ---- the shared driver -------------------------------------------------- */

typedef struct xp xp;

/* Called at each element start with x->depth counting it; returns how many
 * bytes of its text to keep (0: none). May set x->truncate_ok. */
typedef size_t (*xp_start_fn)(xp *x, int id);
/* Called at each element end; text is the kept text (NUL-terminated) or NULL. */
typedef void (*xp_end_fn)(xp *x, int id, char *text, size_t len);

struct xp {
    XML_Parser p;
    const char *what; /* "ListObjectsV2 answer" */
    int depth;
    unsigned char ids[XP_MAX_DEPTH];
    int root;
    /* kept text of the element at capture_depth (0: none) */
    int capture_depth;
    size_t capture_cap;
    bool truncate_ok;
    char *text;
    size_t len, alloc;
    /* first failure wins */
    int rc;
    char *err;
    size_t errlen;
    /* an <Error> document's code and message, whatever parser reads it */
    char ecode[64];
    char emsg[256];
    xp_start_fn start;
    xp_end_fn end;
    void *user;
};

__attribute__((format(printf, 3, 4))) static void xp_fail(xp *x, int rc, const char *fmt, ...)
{
    if (x->rc != 0)
        return;
    x->rc = rc;
    va_list ap;
    va_start(ap, fmt);
    errf_vset(x->err, x->errlen, fmt, ap);
    va_end(ap);
    XML_StopParser(x->p, XML_FALSE);
}

static int xp_parent(const xp *x)
{
    return x->depth >= 2 ? x->ids[x->depth - 2] : E_OTHER;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    xp *x = ud;
    (void)attrs;
    if (x->rc != 0)
        return;
    if (x->depth >= XP_MAX_DEPTH) {
        xp_fail(x, -EPROTO,
                "the %s nests elements deeper than %d levels; is the endpoint an "
                "S3 server?",
                x->what, XP_MAX_DEPTH);
        return;
    }
    int id = el_id(name);
    x->ids[x->depth++] = (unsigned char)id;
    if (x->depth == 1)
        x->root = id;
    size_t cap = 0;
    x->truncate_ok = false;
    if (x->root == E_Error && x->depth == 2 && (id == E_Code || id == E_Message)) {
        cap = id == E_Code ? sizeof x->ecode - 1 : sizeof x->emsg - 1;
        x->truncate_ok = true;
    } else {
        cap = x->start(x, id);
    }
    if (x->rc == 0 && cap > 0 && x->capture_depth == 0) {
        x->capture_depth = x->depth;
        x->capture_cap = cap;
        x->len = 0;
    }
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    xp *x = ud;
    (void)name;
    if (x->rc != 0 || x->depth == 0)
        return;
    int id = x->ids[x->depth - 1];
    if (x->capture_depth == x->depth) {
        x->capture_depth = 0;
        if (x->text == NULL) {
            /* an element with no text at all */
            x->text = malloc(1);
            if (x->text == NULL) {
                xp_fail(x, -ENOMEM, "out of memory reading the %s", x->what);
                return;
            }
            x->alloc = 1;
        }
        x->text[x->len] = '\0';
        if (x->root == E_Error && x->depth == 2 && id == E_Code)
            snprintf(x->ecode, sizeof x->ecode, "%s", x->text);
        else if (x->root == E_Error && x->depth == 2 && id == E_Message)
            snprintf(x->emsg, sizeof x->emsg, "%s", x->text);
        else
            x->end(x, id, x->text, x->len);
    } else {
        x->end(x, id, NULL, 0);
    }
    x->depth--;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int n)
{
    xp *x = ud;
    if (x->rc != 0 || x->capture_depth != x->depth || n <= 0)
        return;
    size_t add = (size_t)n;
    if (x->len + add > x->capture_cap) {
        if (x->truncate_ok) {
            add = x->capture_cap - x->len;
        } else {
            xp_fail(x, -EPROTO, "<%s> in the %s is longer than %zu bytes",
                    el_names[x->ids[x->depth - 1]], x->what, x->capture_cap);
            return;
        }
    }
    if (x->len + add + 1 > x->alloc) {
        size_t a = x->alloc ? x->alloc : 64;
        while (a < x->len + add + 1)
            a *= 2;
        char *t = realloc(x->text, a);
        if (t == NULL) {
            xp_fail(x, -ENOMEM, "out of memory reading the %s", x->what);
            return;
        }
        x->text = t;
        x->alloc = a;
    }
    memcpy(x->text + x->len, s, add);
    x->len += add;
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    xp *x = ud;
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    xp_fail(x, -EPROTO,
            "the %s has a DOCTYPE, which S3 never sends; is the endpoint an S3 "
            "server?",
            x->what);
}

/* Parse xml[0..len) with x's callbacks. Returns x->rc (0 or -errno). */
static int xp_run(xp *x, const char *xml, size_t len)
{
    /* S3 may send white space ahead of a CompleteMultipartUpload answer to
     * keep the connection alive; an XML declaration must come first for
     * expat, so skip it. */
    if (xml == NULL)
        len = 0;
    while (len > 0 && (*xml == ' ' || *xml == '\t' || *xml == '\r' || *xml == '\n'))
        xml++, len--;
    if (len == 0) {
        x->rc = -EPROTO;
        if (x->err && x->errlen)
            snprintf(x->err, x->errlen, "the %s is empty; is the endpoint an S3 server?", x->what);
        return x->rc;
    }
    x->p = XML_ParserCreate(NULL);
    if (x->p == NULL) {
        x->rc = -ENOMEM;
        if (x->err && x->errlen)
            snprintf(x->err, x->errlen, "out of memory reading the %s", x->what);
        return x->rc;
    }
    XML_SetUserData(x->p, x);
    XML_SetElementHandler(x->p, on_start, on_end);
    XML_SetCharacterDataHandler(x->p, on_text);
    XML_SetStartDoctypeDeclHandler(x->p, on_doctype);
    size_t off = 0;
    while (x->rc == 0) {
        size_t n = len - off < XP_CHUNK ? len - off : XP_CHUNK;
        int final = off + n == len;
        if (XML_Parse(x->p, xml + off, (int)n, final) == XML_STATUS_ERROR) {
            if (x->rc == 0) {
                x->rc = -EPROTO;
                if (x->err && x->errlen)
                    snprintf(x->err, x->errlen,
                             "malformed XML in the %s at line %lu, column %lu: %s; is the "
                             "endpoint an S3 server?",
                             x->what, (unsigned long)XML_GetCurrentLineNumber(x->p),
                             (unsigned long)XML_GetCurrentColumnNumber(x->p),
                             XML_ErrorString(XML_GetErrorCode(x->p)));
            }
            break;
        }
        off += n;
        if (final)
            break;
    }
    XML_ParserFree(x->p);
    x->p = NULL;
    free(x->text);
    x->text = NULL;
    x->len = x->alloc = 0;
    return x->rc;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* The sentence for a document whose root is not the one expected. */
static void wrong_root(xp *x, const char *want)
{
    if (x->root == E_Error)
        xp_fail(x, -EPROTO, "the %s is an S3 <Error> document, not a <%s>", x->what, want);
    else
        xp_fail(x, -EPROTO, "the %s is not a <%s> document; is the endpoint an S3 server?", x->what,
                want);
}

/* ---- numbers and dates -------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    if (*s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    if (*s != '\0')
        return false;
    *out = v;
    return true;
}

static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's method). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* "2009-10-12T17:50:30.000Z" (or with +hh:mm / no zone, taken as UTC) ->
 * unix seconds. Returns false when it is not that shape. */
static bool parse_iso8601(const char *s, int64_t *out)
{
    const char *p = s;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    int Y = digits(&p, 4);
    if (Y < 0 || *p++ != '-')
        return false;
    int M = digits(&p, 2);
    if (M < 1 || M > 12 || *p++ != '-')
        return false;
    int D = digits(&p, 2);
    if (D < 1 || D > 31 || (*p != 'T' && *p != 't' && *p != ' '))
        return false;
    p++;
    int h = digits(&p, 2);
    if (h < 0 || h > 23 || *p++ != ':')
        return false;
    int mi = digits(&p, 2);
    if (mi < 0 || mi > 59 || *p++ != ':')
        return false;
    int sec = digits(&p, 2);
    if (sec < 0 || sec > 60)
        return false;
    if (*p == '.' || *p == ',') {
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    int64_t offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        int oh = digits(&p, 2);
        if (oh < 0 || oh > 23)
            return false;
        if (*p == ':')
            p++;
        int om = digits(&p, 2);
        if (om < 0 || om > 59)
            return false;
        offset = sign * (oh * 3600 + om * 60);
    }
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (*p != '\0')
        return false;
    *out = days_from_civil(Y, M, D) * 86400 + h * 3600 + mi * 60 + sec - offset;
    return true;
}

/* Decode %XY in place (encoding-type=url); false on a bad escape. */
static bool url_decode(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == '%') {
            int v = 0;
            for (int i = 1; i <= 2; i++) {
                char c = r[i];
                int d = (c >= '0' && c <= '9')   ? c - '0'
                        : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                 : -1;
                if (d < 0)
                    return false;
                v = v * 16 + d;
            }
            if (v == 0)
                return false; /* a NUL would cut the key short */
            *w++ = (char)v;
            r += 2;
        } else if (*r == '+') {
            *w++ = ' '; /* S3 encodes spaces as '+' here (form encoding) */
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return true;
}

/* ---- ListObjectsV2 ------------------------------------------------------- */

typedef struct list_state {
    s3_list_page *page;
    size_t obj_alloc, pfx_alloc;
    /* the <Contents> being read */
    char *key;
    bool has_size;
    uint64_t size;
    char etag[S3_ETAG_MAX];
    int64_t mtime;
    bool url_encoded;
    bool truncated_seen;
} list_state;

static size_t list_start(xp *x, int id)
{
    list_state *st = x->user;
    int parent = xp_parent(x);
    if (x->depth == 1) {
        if (id != E_ListBucketResult)
            wrong_root(x, "ListBucketResult");
        return 0;
    }
    if (x->depth == 2) {
        switch (id) {
        case E_Contents:
            if (st->page->n_objects >= XP_MAX_OBJECTS) {
                xp_fail(x, -EPROTO, "the %s lists more than %d objects in one page", x->what,
                        XP_MAX_OBJECTS);
                return 0;
            }
            free(st->key);
            st->key = NULL;
            st->has_size = false;
            st->size = 0;
            st->etag[0] = '\0';
            st->mtime = 0;
            return 0;
        case E_CommonPrefixes: return 0;
        case E_IsTruncated: return 16;
        case E_NextContinuationToken: return XP_TOKEN_MAX;
        case E_EncodingType: return 16;
        default: return 0;
        }
    }
    if (x->depth == 3 && parent == E_Contents) {
        switch (id) {
        case E_Key: return XP_KEY_TEXT_MAX;
        case E_Size: return 32;
        case E_ETag: return 1024;
        case E_LastModified: return 64;
        default: return 0;
        }
    }
    if (x->depth == 3 && parent == E_CommonPrefixes && id == E_Prefix) {
        if (st->page->n_prefixes >= XP_MAX_OBJECTS) {
            xp_fail(x, -EPROTO, "the %s lists more than %d common prefixes in one page", x->what,
                    XP_MAX_OBJECTS);
            return 0;
        }
        return XP_KEY_TEXT_MAX;
    }
    return 0;
}

static bool grow(void **arr, size_t *alloc, size_t n, size_t elem)
{
    if (n < *alloc)
        return true;
    size_t a = *alloc ? *alloc * 2 : 16;
    void *p = realloc(*arr, a * elem);
    if (p == NULL)
        return false;
    *arr = p;
    *alloc = a;
    return true;
}

static void list_end(xp *x, int id, char *text, size_t len)
{
    list_state *st = x->user;
    s3_list_page *pg = st->page;
    int parent = xp_parent(x);
    if (x->depth == 3 && parent == E_Contents && text != NULL) {
        switch (id) {
        case E_Key:
            free(st->key);
            st->key = dup_n(text, len);
            if (st->key == NULL)
                xp_fail(x, -ENOMEM, "out of memory reading the %s", x->what);
            break;
        case E_Size:
            if (!parse_u64(text, &st->size))
                xp_fail(x, -EPROTO, "the %s has a <Size> that is not a number", x->what);
            st->has_size = true;
            break;
        case E_ETag:
            if (s3_etag_normalize(text, st->etag, sizeof st->etag) < 0)
                xp_fail(x, -EPROTO, "the %s has an <ETag> longer than %d bytes", x->what,
                        S3_ETAG_MAX - 1);
            break;
        case E_LastModified:
            /* Unknown is 0: a date we cannot read is not worth failing a list. */
            if (!parse_iso8601(text, &st->mtime))
                st->mtime = 0;
            break;
        default: break;
        }
        return;
    }
    if (x->depth == 3 && parent == E_CommonPrefixes && id == E_Prefix && text != NULL) {
        if (!grow((void **)&pg->prefixes, &st->pfx_alloc, pg->n_prefixes, sizeof(char *))) {
            xp_fail(x, -ENOMEM, "out of memory reading the %s", x->what);
            return;
        }
        char *p = dup_n(text, len);
        if (p == NULL) {
            xp_fail(x, -ENOMEM, "out of memory reading the %s", x->what);
            return;
        }
        pg->prefixes[pg->n_prefixes++] = p;
        return;
    }
    if (x->depth != 2)
        return;
    switch (id) {
    case E_Contents:
        if (st->key == NULL || st->key[0] == '\0') {
            xp_fail(x, -EPROTO, "the %s has a <Contents> without a <Key>", x->what);
            return;
        }
        if (!st->has_size) {
            xp_fail(x, -EPROTO, "the %s has a <Contents> without a <Size>", x->what);
            return;
        }
        if (!grow((void **)&pg->objects, &st->obj_alloc, pg->n_objects, sizeof *pg->objects)) {
            xp_fail(x, -ENOMEM, "out of memory reading the %s", x->what);
            return;
        }
        s3_object_info *o = &pg->objects[pg->n_objects++];
        memset(o, 0, sizeof *o);
        o->key = st->key;
        st->key = NULL;
        o->size = st->size;
        memcpy(o->etag, st->etag, sizeof o->etag);
        o->last_modified = st->mtime;
        break;
    case E_IsTruncated:
        if (text == NULL)
            break;
        if (strcmp(text, "true") == 0)
            pg->truncated = true;
        else if (strcmp(text, "false") == 0)
            pg->truncated = false;
        else
            xp_fail(x, -EPROTO, "the %s has an <IsTruncated> that is neither true nor false",
                    x->what);
        break;
    case E_NextContinuationToken:
        if (text == NULL)
            break;
        free(pg->next_token);
        pg->next_token = dup_n(text, len);
        if (pg->next_token == NULL)
            xp_fail(x, -ENOMEM, "out of memory reading the %s", x->what);
        break;
    case E_EncodingType:
        if (text != NULL && strcmp(text, "url") == 0)
            st->url_encoded = true;
        break;
    default: break;
    }
}

void s3__list_page_free(s3_list_page *page)
{
    if (page == NULL)
        return;
    for (size_t i = 0; i < page->n_objects; i++)
        free(page->objects[i].key);
    free(page->objects);
    for (size_t i = 0; i < page->n_prefixes; i++)
        free(page->prefixes[i]);
    free(page->prefixes);
    free(page->next_token);
    memset(page, 0, sizeof *page);
}

int s3__xml_parse_list(const char *xml, size_t len, s3_list_page *page, char *err, size_t errlen)
{
    if (page == NULL)
        return -EINVAL;
    memset(page, 0, sizeof *page);
    list_state st = {.page = page};
    xp x = {.what = "ListObjectsV2 answer",
            .err = err,
            .errlen = errlen,
            .start = list_start,
            .end = list_end,
            .user = &st};
    int rc = xp_run(&x, xml, len);
    free(st.key);
    if (rc == 0 && page->truncated && (page->next_token == NULL || page->next_token[0] == 0)) {
        errf_set(err, errlen,
                 "the %s says it is truncated but has no <NextContinuationToken>; "
                 "is the endpoint an S3 server with ListObjectsV2?",
                 x.what);
        rc = -EPROTO;
    }
    /* encoding-type=url: keys and prefixes arrive percent-encoded. */
    for (size_t i = 0; rc == 0 && i < page->n_objects; i++) {
        char *k = page->objects[i].key;
        if ((st.url_encoded && !url_decode(k)) || k[0] == '\0') {
            errf_set(err, errlen, "the %s has a <Key> with a bad %%-escape", x.what);
            rc = -EPROTO;
        } else if (strlen(k) > XP_KEY_MAX) {
            errf_set(err, errlen, "the %s has a <Key> longer than S3's 1024 bytes", x.what);
            rc = -EPROTO;
        }
    }
    for (size_t i = 0; rc == 0 && i < page->n_prefixes; i++) {
        char *p = page->prefixes[i];
        if (st.url_encoded && !url_decode(p)) {
            errf_set(err, errlen, "the %s has a <Prefix> with a bad %%-escape", x.what);
            rc = -EPROTO;
        } else if (strlen(p) > XP_KEY_MAX) {
            errf_set(err, errlen, "the %s has a <Prefix> longer than S3's 1024 bytes", x.what);
            rc = -EPROTO;
        }
    }
    if (rc < 0)
        s3__list_page_free(page);
    return rc;
}

/* ---- Error documents ---------------------------------------------------- */

static size_t none_start(xp *x, int id)
{
    (void)x, (void)id;
    return 0;
}

static void none_end(xp *x, int id, char *text, size_t len)
{
    (void)x, (void)id, (void)text, (void)len;
}

static void copy_out(char *dst, size_t cap, const char *src)
{
    if (dst != NULL && cap > 0)
        snprintf(dst, cap, "%s", src);
}

int s3__xml_parse_error(const char *xml, size_t len, char *code, size_t code_cap, char *message,
                        size_t message_cap)
{
    copy_out(code, code_cap, "");
    copy_out(message, message_cap, "");
    xp x = {.what = "error answer", .start = none_start, .end = none_end};
    int rc = xp_run(&x, xml, len);
    if (rc < 0)
        return rc == -ENOMEM ? -ENOMEM : -EPROTO;
    if (x.root != E_Error)
        return -ENOENT;
    copy_out(code, code_cap, x.ecode);
    copy_out(message, message_cap, x.emsg);
    return 0;
}

/* ---- multipart upload answers ------------------------------------------- */

typedef struct mpu_state {
    int want_root;
    int want_leaf; /* E_UploadId or E_ETag */
    size_t cap;
    char *value;
} mpu_state;

static size_t mpu_start(xp *x, int id)
{
    mpu_state *st = x->user;
    if (x->depth == 1 && id != st->want_root && id != E_Error)
        wrong_root(x, el_names[st->want_root]);
    if (x->depth == 2 && x->root == st->want_root && id == st->want_leaf)
        return st->cap;
    return 0;
}

static void mpu_end(xp *x, int id, char *text, size_t len)
{
    mpu_state *st = x->user;
    if (text == NULL || x->depth != 2 || id != st->want_leaf)
        return;
    free(st->value);
    st->value = dup_n(text, len);
    if (st->value == NULL)
        xp_fail(x, -ENOMEM, "out of memory reading the %s", x->what);
}

int s3__xml_parse_mpu_initiate(const char *xml, size_t len, char **upload_id, char *err,
                               size_t errlen)
{
    if (upload_id == NULL)
        return -EINVAL;
    *upload_id = NULL;
    mpu_state st = {E_InitiateMultipartUploadResult, E_UploadId, XP_UPLOAD_ID_MAX, NULL};
    xp x = {.what = "CreateMultipartUpload answer",
            .err = err,
            .errlen = errlen,
            .start = mpu_start,
            .end = mpu_end,
            .user = &st};
    int rc = xp_run(&x, xml, len);
    if (rc == 0 && x.root == E_Error) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "the %s is an S3 error (%s: %s)", x.what, x.ecode, x.emsg);
        rc = -EPROTO;
    } else if (rc == 0 && (st.value == NULL || st.value[0] == '\0')) {
        errf_set(err, errlen, "the %s has no <UploadId>; is the endpoint an S3 server?", x.what);
        rc = -EPROTO;
    }
    if (rc < 0) {
        free(st.value);
        return rc;
    }
    *upload_id = st.value;
    return 0;
}

int s3__xml_parse_mpu_complete(const char *xml, size_t len, char etag[S3_ETAG_MAX], char *err,
                               size_t errlen)
{
    if (etag == NULL)
        return -EINVAL;
    etag[0] = '\0';
    mpu_state st = {E_CompleteMultipartUploadResult, E_ETag, 1024, NULL};
    xp x = {.what = "CompleteMultipartUpload answer",
            .err = err,
            .errlen = errlen,
            .start = mpu_start,
            .end = mpu_end,
            .user = &st};
    int rc = xp_run(&x, xml, len);
    if (rc == 0 && x.root == E_Error) {
        /* S3 answers 200 and then reports the failure in the body. */
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s: %s", x.ecode, x.emsg);
        rc = -EIO;
    } else if (rc == 0 && st.value == NULL) {
        errf_set(err, errlen, "the %s has no <ETag>; is the endpoint an S3 server?", x.what);
        rc = -EPROTO;
    } else if (rc == 0 && s3_etag_normalize(st.value, etag, S3_ETAG_MAX) < 0) {
        errf_set(err, errlen, "the %s has an <ETag> longer than 129 bytes", x.what);
        etag[0] = '\0';
        rc = -EPROTO;
    }
    free(st.value);
    return rc;
}

/* ---- the CompleteMultipartUpload body ----------------------------------- */

/*   <CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
 *     <Part><PartNumber>1</PartNumber><ETag>"etag-1"</ETag></Part>
 *     ...
 *   </CompleteMultipartUpload>
 * (written without the white space). ETags are normalised, then quoted as in
 * AWS's examples; '&', '<', '>' and an inner '"' are escaped for XML. NULL for n_parts outside 1..10000, a NULL ETag, or ENOMEM. */
char *s3__xml_build_mpu_complete(const char *const *part_etags, int n_parts)
{
    static const char head[] =
        "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
    static const char tail[] = "</CompleteMultipartUpload>";
    if (part_etags == NULL || n_parts < 1 || n_parts > 10000)
        return NULL;
    /* per part: fixed text, a 5-digit number, an ETag escaped at most 5x */
    size_t cap = sizeof head + sizeof tail;
    for (int i = 0; i < n_parts; i++) {
        if (part_etags[i] == NULL)
            return NULL;
        cap += 96 + 6 * (S3_ETAG_MAX - 1);
    }
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    size_t w = 0;
    memcpy(out, head, sizeof head - 1);
    w += sizeof head - 1;
    for (int i = 0; i < n_parts; i++) {
        char e[S3_ETAG_MAX];
        if (s3_etag_normalize(part_etags[i], e, sizeof e) < 0) {
            free(out);
            return NULL;
        }
        w += (size_t)snprintf(out + w, cap - w, "<Part><PartNumber>%d</PartNumber><ETag>\"", i + 1);
        for (const char *p = e; *p; p++) {
            const char *rep = *p == '&'   ? "&amp;"
                              : *p == '<' ? "&lt;"
                              : *p == '>' ? "&gt;"
                              : *p == '"' ? "&quot;"
                                          : NULL;
            if (rep) {
                size_t n = strlen(rep);
                memcpy(out + w, rep, n);
                w += n;
            } else {
                out[w++] = *p;
            }
        }
        static const char end[] = "\"</ETag></Part>";
        memcpy(out + w, end, sizeof end - 1);
        w += sizeof end - 1;
    }
    memcpy(out + w, tail, sizeof tail);
    return out;
}
