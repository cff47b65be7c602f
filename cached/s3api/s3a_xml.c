/* SPDX-License-Identifier: Apache-2.0
 *
 * s3a_xml.c: the XML answers of the S3 API (s3a_xml.h), in the element order
 * S3 (and minio, which clients are tested against) writes them; clients read
 * by element name, so the order is for people comparing with S3. Shapes, as
 * written (white space added here only):
 *
 *   <ListBucketResult xmlns="...">            ListObjectsV2 / ListObjects
 *     <Name/> <Prefix/> <StartAfter/>? <ContinuationToken/>? (V2)
 *     <Marker/> <NextMarker/>? (V1)  <NextContinuationToken/>? (V2)
 *     <KeyCount/>(V2) <MaxKeys/> <Delimiter/>? <IsTruncated/>
 *     <Contents><Key/><LastModified/><ETag/><Size/><Owner/>?<StorageClass/></Contents>*
 *     <CommonPrefixes><Prefix/></CommonPrefixes>*  <EncodingType>url</EncodingType>?
 *   </ListBucketResult>
 */
#include "s3a_xml.h"
#include "s3_sigv4.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char decl[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

static void esc(s3a_buf *b, const char *s)
{
    if (s == NULL)
        return;
    const char *run = s;
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        const char *rep = NULL;
        char num[8];
        if (c == '\0')
            break;
        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        default:
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
                num[0] = '&', num[1] = '#', num[2] = 'x';
                num[3] = "0123456789ABCDEF"[c >> 4];
                num[4] = "0123456789ABCDEF"[c & 15];
                num[5] = ';', num[6] = '\0';
                rep = num;
            }
        }
        if (rep != NULL) {
            s3a_buf_add(b, run, (size_t)(p - run));
            s3a_buf_adds(b, rep);
            run = p + 1;
        }
    }
    s3a_buf_adds(b, run);
}

/* <name>text</name>, the text escaped (and URL-encoded when url). */
static void el(s3a_buf *b, const char *name, const char *text, bool url)
{
    s3a_buf_printf(b, "<%s>", name);
    if (url && text != NULL) {
        char *enc = s3__uri_encode(text, strlen(text), true);
        if (enc == NULL)
            b->oom = true;
        esc(b, enc);
        free(enc);
    } else {
        esc(b, text);
    }
    s3a_buf_printf(b, "</%s>", name);
}

static void el_i(s3a_buf *b, const char *name, long long v)
{
    s3a_buf_printf(b, "<%s>%lld</%s>", name, v, name);
}

static void el_b(s3a_buf *b, const char *name, bool v)
{
    s3a_buf_printf(b, "<%s>%s</%s>", name, v ? "true" : "false", name);
}

static void el_time(s3a_buf *b, const char *name, int64_t ms)
{
    char t[25];
    s3a_iso8601_ms(ms, t);
    s3a_buf_printf(b, "<%s>%s</%s>", name, t, name);
}

static void el_etag(s3a_buf *b, const char *etag)
{
    s3a_buf_adds(b, "<ETag>");
    const char *e = etag ? etag : "";
    bool quoted = e[0] == '"';
    if (!quoted)
        s3a_buf_adds(b, "&quot;");
    esc(b, e);
    if (!quoted)
        s3a_buf_adds(b, "&quot;");
    s3a_buf_adds(b, "</ETag>");
}

static void owner(s3a_buf *b, const char *tag, const s3a_xml_owner *o)
{
    s3a_buf_printf(b, "<%s>", tag);
    el(b, "ID", o && o->id ? o->id : "", false);
    el(b, "DisplayName", o && o->name ? o->name : "", false);
    s3a_buf_printf(b, "</%s>", tag);
}

static int done(s3a_buf *b)
{
    return b->oom ? -ENOMEM : 0;
}

int s3a_xml_error(s3a_buf *b, const s3a_error *err, const char *bucket, const char *key,
                  const char *resource, const char *request_id, const char *host_id)
{
    s3a_buf_adds(b, decl);
    s3a_buf_adds(b, "<Error>");
    el(b, "Code", err->code ? err->code : "InternalError", false);
    el(b, "Message", err->message, false);
    for (int i = 0; i < err->n_extra; i++)
        el(b, err->extra[i].name, err->extra[i].value, false);
    if (key)
        el(b, "Key", key, false);
    if (bucket)
        el(b, "BucketName", bucket, false);
    if (resource)
        el(b, "Resource", resource, false);
    el(b, "RequestId", request_id ? request_id : "", false);
    el(b, "HostId", host_id ? host_id : "", false);
    s3a_buf_adds(b, "</Error>");
    return done(b);
}

int s3a_xml_list_buckets(s3a_buf *b, const s3a_xml_owner *o, const s3a_xml_bucket *buckets,
                         size_t n)
{
    s3a_buf_adds(b, decl);
    s3a_buf_adds(b, "<ListAllMyBucketsResult xmlns=\"" S3A_XMLNS "\">");
    owner(b, "Owner", o);
    s3a_buf_adds(b, "<Buckets>");
    for (size_t i = 0; i < n; i++) {
        s3a_buf_adds(b, "<Bucket>");
        el(b, "Name", buckets[i].name, false);
        el_time(b, "CreationDate", buckets[i].created_ms);
        s3a_buf_adds(b, "</Bucket>");
    }
    s3a_buf_adds(b, "</Buckets></ListAllMyBucketsResult>");
    return done(b);
}

int s3a_xml_location(s3a_buf *b, const char *region)
{
    s3a_buf_adds(b, decl);
    if (region == NULL || region[0] == '\0' || strcmp(region, "us-east-1") == 0) {
        s3a_buf_adds(b, "<LocationConstraint xmlns=\"" S3A_XMLNS "\"/>");
    } else {
        s3a_buf_adds(b, "<LocationConstraint xmlns=\"" S3A_XMLNS "\">");
        esc(b, region);
        s3a_buf_adds(b, "</LocationConstraint>");
    }
    return done(b);
}

int s3a_xml_list_objects(s3a_buf *b, const s3a_xml_list *l)
{
    bool u = l->url_encode;
    s3a_buf_adds(b, decl);
    s3a_buf_adds(b, "<ListBucketResult xmlns=\"" S3A_XMLNS "\">");
    el(b, "Name", l->bucket, false);
    el(b, "Prefix", l->prefix ? l->prefix : "", u);
    if (l->v2) {
        if (l->start_after)
            el(b, "StartAfter", l->start_after, u);
        if (l->continuation_token)
            el(b, "ContinuationToken", l->continuation_token, false);
        if (l->truncated && l->next_continuation_token)
            el(b, "NextContinuationToken", l->next_continuation_token, false);
        el_i(b, "KeyCount", (long long)(l->n_objects + l->n_prefixes));
    } else {
        el(b, "Marker", l->marker ? l->marker : "", u);
        if (l->truncated && l->next_marker)
            el(b, "NextMarker", l->next_marker, u);
    }
    el_i(b, "MaxKeys", l->max_keys);
    if (l->delimiter)
        el(b, "Delimiter", l->delimiter, u);
    el_b(b, "IsTruncated", l->truncated);
    bool with_owner = !l->v2 || l->fetch_owner;
    for (size_t i = 0; i < l->n_objects; i++) {
        const s3a_xml_object *o = &l->objects[i];
        s3a_buf_adds(b, "<Contents>");
        el(b, "Key", o->key, u);
        el_time(b, "LastModified", o->mtime_ms);
        el_etag(b, o->etag);
        el_i(b, "Size", (long long)o->size);
        if (with_owner)
            owner(b, "Owner", l->owner);
        el(b, "StorageClass", o->storage_class ? o->storage_class : "STANDARD", false);
        s3a_buf_adds(b, "</Contents>");
    }
    for (size_t i = 0; i < l->n_prefixes; i++) {
        s3a_buf_adds(b, "<CommonPrefixes>");
        el(b, "Prefix", l->prefixes[i], u);
        s3a_buf_adds(b, "</CommonPrefixes>");
    }
    if (u)
        s3a_buf_adds(b, "<EncodingType>url</EncodingType>");
    s3a_buf_adds(b, "</ListBucketResult>");
    return done(b);
}

int s3a_xml_initiate_mpu(s3a_buf *b, const char *bucket, const char *key, const char *upload_id)
{
    s3a_buf_adds(b, decl);
    s3a_buf_adds(b, "<InitiateMultipartUploadResult xmlns=\"" S3A_XMLNS "\">");
    el(b, "Bucket", bucket, false);
    el(b, "Key", key, false);
    el(b, "UploadId", upload_id, false);
    s3a_buf_adds(b, "</InitiateMultipartUploadResult>");
    return done(b);
}

int s3a_xml_complete_mpu(s3a_buf *b, const char *location, const char *bucket, const char *key,
                         const char *etag, const char *checksum_label, const char *checksum,
                         const char *checksum_type)
{
    s3a_buf_adds(b, decl);
    s3a_buf_adds(b, "<CompleteMultipartUploadResult xmlns=\"" S3A_XMLNS "\">");
    if (location)
        el(b, "Location", location, false);
    el(b, "Bucket", bucket, false);
    el(b, "Key", key, false);
    el_etag(b, etag);
    if (checksum_label && checksum) {
        char name[32];
        /* ChecksumCRC32, ChecksumCRC32C, ChecksumSHA256, ... */
        size_t n = strlen(checksum_label);
        if (n < sizeof name - 8) {
            memcpy(name, "Checksum", 8);
            memcpy(name + 8, checksum_label, n + 1);
            el(b, name, checksum, false);
        }
    }
    if (checksum_type)
        el(b, "ChecksumType", checksum_type, false);
    s3a_buf_adds(b, "</CompleteMultipartUploadResult>");
    return done(b);
}

int s3a_xml_list_parts(s3a_buf *b, const s3a_xml_parts *p)
{
    s3a_buf_adds(b, decl);
    s3a_buf_adds(b, "<ListPartsResult xmlns=\"" S3A_XMLNS "\">");
    el(b, "Bucket", p->bucket, false);
    el(b, "Key", p->key, false);
    el(b, "UploadId", p->upload_id, false);
    owner(b, "Initiator", p->owner);
    owner(b, "Owner", p->owner);
    el(b, "StorageClass", "STANDARD", false);
    el_i(b, "PartNumberMarker", p->part_number_marker);
    el_i(b, "NextPartNumberMarker", p->next_part_number_marker);
    el_i(b, "MaxParts", p->max_parts);
    el_b(b, "IsTruncated", p->truncated);
    for (size_t i = 0; i < p->n_parts; i++) {
        const s3a_xml_part *x = &p->parts[i];
        s3a_buf_adds(b, "<Part>");
        el_i(b, "PartNumber", x->number);
        el_time(b, "LastModified", x->mtime_ms);
        el_etag(b, x->etag);
        el_i(b, "Size", (long long)x->size);
        s3a_buf_adds(b, "</Part>");
    }
    s3a_buf_adds(b, "</ListPartsResult>");
    return done(b);
}

int s3a_xml_delete_result(s3a_buf *b, const s3a_xml_deleted *items, size_t n, bool quiet)
{
    s3a_buf_adds(b, decl);
    s3a_buf_adds(b, "<DeleteResult xmlns=\"" S3A_XMLNS "\">");
    for (size_t i = 0; i < n; i++) {
        const s3a_xml_deleted *d = &items[i];
        if (d->code == NULL) {
            if (quiet)
                continue;
            s3a_buf_adds(b, "<Deleted>");
            el(b, "Key", d->key, false);
            s3a_buf_adds(b, "</Deleted>");
        } else {
            s3a_buf_adds(b, "<Error>");
            el(b, "Key", d->key, false);
            el(b, "Code", d->code, false);
            el(b, "Message", d->message ? d->message : "", false);
            s3a_buf_adds(b, "</Error>");
        }
    }
    s3a_buf_adds(b, "</DeleteResult>");
    return done(b);
}

int s3a_xml_copy_result(s3a_buf *b, bool part, const char *etag, int64_t mtime_ms)
{
    const char *root = part ? "CopyPartResult" : "CopyObjectResult";
    s3a_buf_adds(b, decl);
    s3a_buf_printf(b, "<%s xmlns=\"" S3A_XMLNS "\">", root);
    el_time(b, "LastModified", mtime_ms);
    el_etag(b, etag);
    s3a_buf_printf(b, "</%s>", root);
    return done(b);
}
