/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_compress.c: HTTP compression as ClickHouse offers it: answers are
 * compressed only with enable_http_compression=1 and an Accept-Encoding that
 * names gzip, deflate or zstd (in that order of preference); request bodies
 * with Content-Encoding gzip, deflate or zstd are decompressed as they
 * arrive, bounded (a small body cannot inflate past max_body_size). zlib for
 * gzip and deflate (deflate is the zlib format, as HTTP means it), libzstd's
 * streaming API for zstd. Streams are flushed after each piece of the
 * answer, so a client decodes rows as they come.
 *
 * Thread-safety: a stream belongs to one thread at a time.
 */
#include "srv_int.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

struct srv_zstream {
    srv_codec codec;
    bool compress;
    bool zinit;
    z_stream z;
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
    uint64_t out_total, max_out;
    bool ended; /* a decompressor saw the end of the stream */
};

/* Whether list (a header value) names token, ignoring parameters (;q=). */
static bool names(const char *list, const char *token)
{
    size_t tl = strlen(token);
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ';' && *e != ' ')
            e++;
        if ((size_t)(e - p) == tl && strncasecmp(p, token, tl) == 0) {
            /* q=0 means "not this one" */
            const char *q = e;
            while (*q == ' ')
                q++;
            if (*q == ';' && strstr(q, "q=0") && !strstr(q, "q=0."))
                return false;
            return true;
        }
        p = strchr(e, ',');
    }
    return false;
}

srv_codec srv_codec_accept(const char *ae)
{
    if (!ae)
        return SRV_CODEC_NONE;
    if (names(ae, "gzip") || names(ae, "x-gzip"))
        return SRV_CODEC_GZIP;
    if (names(ae, "deflate"))
        return SRV_CODEC_DEFLATE;
    if (names(ae, "zstd"))
        return SRV_CODEC_ZSTD;
    return SRV_CODEC_NONE;
}

int srv_codec_of(const char *ce)
{
    if (!ce || !ce[0] || strcasecmp(ce, "identity") == 0)
        return SRV_CODEC_NONE;
    if (strcasecmp(ce, "gzip") == 0 || strcasecmp(ce, "x-gzip") == 0)
        return SRV_CODEC_GZIP;
    if (strcasecmp(ce, "deflate") == 0)
        return SRV_CODEC_DEFLATE;
    if (strcasecmp(ce, "zstd") == 0)
        return SRV_CODEC_ZSTD;
    return -1;
}

const char *srv_codec_name(srv_codec c)
{
    switch (c) {
    case SRV_CODEC_GZIP: return "gzip";
    case SRV_CODEC_DEFLATE: return "deflate";
    case SRV_CODEC_ZSTD: return "zstd";
    default: return "identity";
    }
}

int srv_zstream_create(srv_zstream **out, srv_codec c, bool compress, int level)
{
    *out = NULL;
    srv_zstream *z = calloc(1, sizeof(*z));
    if (!z)
        return -ENOMEM;
    z->codec = c;
    z->compress = compress;
    z->max_out = UINT64_MAX;
    int rc = 0;
    if (c == SRV_CODEC_GZIP || c == SRV_CODEC_DEFLATE) {
        int wbits = c == SRV_CODEC_GZIP ? 15 + 16 : 15;
        if (compress)
            rc = deflateInit2(&z->z,
                              level < 1   ? 3
                              : level > 9 ? 9
                                          : level,
                              Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY);
        else
            rc = inflateInit2(&z->z, c == SRV_CODEC_GZIP ? 15 + 32 : 15);
        if (rc != Z_OK) {
            free(z);
            return -ENOMEM;
        }
        z->zinit = true;
    } else if (c == SRV_CODEC_ZSTD) {
        if (compress) {
            z->zc = ZSTD_createCCtx();
            if (z->zc)
                ZSTD_CCtx_setParameter(z->zc, ZSTD_c_compressionLevel, level < 1 ? 3 : level);
        } else {
            z->zd = ZSTD_createDCtx();
        }
        if (!z->zc && !z->zd) {
            free(z);
            return -ENOMEM;
        }
    } else {
        free(z);
        return -EINVAL;
    }
    *out = z;
    return 0;
}

void srv_zstream_set_max_out(srv_zstream *z, uint64_t max_out)
{
    z->max_out = max_out;
}

void srv_zstream_destroy(srv_zstream **pz)
{
    if (!pz || !*pz)
        return;
    srv_zstream *z = *pz;
    if (z->zinit) {
        if (z->compress)
            deflateEnd(&z->z);
        else
            inflateEnd(&z->z);
    }
    ZSTD_freeCCtx(z->zc);
    ZSTD_freeDCtx(z->zd);
    free(z);
    *pz = NULL;
}

#define ZCHUNK (64u << 10)

static int put_out(srv_zstream *z, struct evbuffer *out, const void *p, size_t n)
{
    z->out_total += n;
    if (!z->compress && z->out_total > z->max_out)
        return -EFBIG;
    return n && evbuffer_add(out, p, n) < 0 ? -ENOMEM : 0;
}

static int feed_zlib(srv_zstream *z, const void *in, size_t n, struct evbuffer *out, bool flush,
                     bool finish)
{
    unsigned char buf[ZCHUNK];
    z->z.next_in = (Bytef *)in;
    z->z.avail_in = (uInt)n;
    if (z->compress) {
        int mode = finish ? Z_FINISH : flush ? Z_SYNC_FLUSH : Z_NO_FLUSH;
        int rc;
        do {
            z->z.next_out = buf;
            z->z.avail_out = sizeof(buf);
            rc = deflate(&z->z, mode);
            if (rc == Z_STREAM_ERROR)
                return -EINVAL;
            int e = put_out(z, out, buf, sizeof(buf) - z->z.avail_out);
            if (e)
                return e;
        } while (z->z.avail_out == 0 || (finish && rc != Z_STREAM_END));
        return 0;
    }
    while (z->z.avail_in > 0 && !z->ended) {
        z->z.next_out = buf;
        z->z.avail_out = sizeof(buf);
        int rc = inflate(&z->z, Z_NO_FLUSH);
        if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR)
            return rc == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;
        int e = put_out(z, out, buf, sizeof(buf) - z->z.avail_out);
        if (e)
            return e;
        if (rc == Z_STREAM_END)
            z->ended = true;
        else if (rc == Z_BUF_ERROR && z->z.avail_out != 0)
            break;
    }
    if (z->ended && z->z.avail_in > 0)
        return -EBADMSG; /* bytes after the end of the stream */
    if (finish && !z->ended)
        return -EBADMSG;
    return 0;
}

static int feed_zstd(srv_zstream *z, const void *in, size_t n, struct evbuffer *out, bool flush,
                     bool finish)
{
    unsigned char buf[ZCHUNK];
    ZSTD_inBuffer ib = {in, n, 0};
    if (z->compress) {
        ZSTD_EndDirective mode = finish ? ZSTD_e_end : flush ? ZSTD_e_flush : ZSTD_e_continue;
        size_t left;
        do {
            ZSTD_outBuffer ob = {buf, sizeof(buf), 0};
            left = ZSTD_compressStream2(z->zc, &ob, &ib, mode);
            if (ZSTD_isError(left))
                return -EINVAL;
            int e = put_out(z, out, buf, ob.pos);
            if (e)
                return e;
        } while (ib.pos < ib.size || (mode != ZSTD_e_continue && left != 0));
        return 0;
    }
    size_t last = 1;
    while (ib.pos < ib.size) {
        ZSTD_outBuffer ob = {buf, sizeof(buf), 0};
        last = ZSTD_decompressStream(z->zd, &ob, &ib);
        if (ZSTD_isError(last))
            return -EBADMSG;
        int e = put_out(z, out, buf, ob.pos);
        if (e)
            return e;
        z->ended = last == 0;
    }
    /* output still buffered inside the decoder */
    for (;;) {
        ZSTD_outBuffer ob = {buf, sizeof(buf), 0};
        ZSTD_inBuffer none = {NULL, 0, 0};
        size_t r = ZSTD_decompressStream(z->zd, &ob, &none);
        if (ZSTD_isError(r))
            return -EBADMSG;
        int e = put_out(z, out, buf, ob.pos);
        if (e)
            return e;
        if (ob.pos == 0)
            break;
        z->ended = r == 0;
    }
    if (finish && !z->ended)
        return -EBADMSG;
    return 0;
}

int srv_zstream_feed(srv_zstream *z, const void *in, size_t n, struct evbuffer *out, bool flush,
                     bool finish)
{
    if (z->codec == SRV_CODEC_ZSTD)
        return feed_zstd(z, in, n, out, flush, finish);
    return feed_zlib(z, in, n, out, flush, finish);
}
