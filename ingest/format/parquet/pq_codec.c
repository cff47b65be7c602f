/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_codec.c: page decompression through the Debian codec libraries (snappy's
 * C API, zlib, libzstd, liblz4). The caller always knows the uncompressed size
 * from the page header, so every codec decompresses into an exact buffer and a
 * size that does not match is corruption. GZIP may hold several members
 * (concatenated gzip streams); Hadoop-framed LZ4 (codec LZ4) is a sequence of
 * [4-byte BE uncompressed size][4-byte BE compressed size][raw LZ4 block],
 * and some writers put a raw LZ4 block under that codec, so both are tried.
 */
#include "parquet_int.h"

#include <errno.h>
#include <lz4.h>
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

const char *pq__codec_name(int codec)
{
    switch (codec) {
    case PQ__CODEC_UNCOMPRESSED: return "UNCOMPRESSED";
    case PQ__CODEC_SNAPPY: return "SNAPPY";
    case PQ__CODEC_GZIP: return "GZIP";
    case PQ__CODEC_LZO: return "LZO";
    case PQ__CODEC_BROTLI: return "BROTLI";
    case PQ__CODEC_LZ4: return "LZ4";
    case PQ__CODEC_ZSTD: return "ZSTD";
    case PQ__CODEC_LZ4_RAW: return "LZ4_RAW";
    }
    return "unknown";
}

static int pq__gunzip(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                      const char **why)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    /* 15 + 32: zlib or gzip header, detected. */
    if (inflateInit2(&z, 15 + 32) != Z_OK) {
        *why = "zlib could not be initialised";
        return -ENOMEM;
    }
    size_t in_pos = 0, out_pos = 0;
    int rc = 0;
    while (in_pos < src_len) {
        z.next_in = (Bytef *)(uintptr_t)(src + in_pos);
        z.avail_in = (uInt)((src_len - in_pos) > UINT32_MAX ? UINT32_MAX : src_len - in_pos);
        z.next_out = dst + out_pos;
        z.avail_out = (uInt)(dst_len - out_pos > UINT32_MAX ? UINT32_MAX : dst_len - out_pos);
        size_t before_in = z.avail_in, before_out = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH);
        in_pos += before_in - z.avail_in;
        out_pos += before_out - z.avail_out;
        if (zr == Z_STREAM_END) {
            /* Another member may follow (multi-member gzip); trailing zero
             * padding is tolerated. */
            while (in_pos < src_len && src[in_pos] == 0)
                in_pos++;
            if (in_pos < src_len && inflateReset(&z) != Z_OK) {
                rc = -EBADMSG;
                *why = "the GZIP data is corrupt";
                break;
            }
            continue;
        }
        if (zr != Z_OK || (before_in == z.avail_in && before_out == z.avail_out)) {
            rc = -EBADMSG;
            *why = (zr == Z_OK || zr == Z_BUF_ERROR) && out_pos == dst_len
                       ? "the GZIP data inflates to more than the page header says"
                       : "the GZIP data is corrupt or truncated";
            break;
        }
    }
    inflateEnd(&z);
    if (rc == 0 && out_pos != dst_len) {
        *why = "the GZIP data inflates to fewer bytes than the page header says";
        rc = -EBADMSG;
    }
    return rc;
}

static uint32_t pq__be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int pq__lz4_hadoop(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len)
{
    size_t in = 0, out = 0;
    while (in < src_len) {
        if (src_len - in < 8)
            return -EBADMSG;
        uint32_t ulen = pq__be32(src + in), clen = pq__be32(src + in + 4);
        in += 8;
        if (clen > src_len - in || ulen > dst_len - out || clen > INT32_MAX || ulen > INT32_MAX)
            return -EBADMSG;
        int got =
            LZ4_decompress_safe((const char *)src + in, (char *)dst + out, (int)clen, (int)ulen);
        if (got < 0 || (uint32_t)got != ulen)
            return -EBADMSG;
        in += clen;
        out += ulen;
    }
    return out == dst_len ? 0 : -EBADMSG;
}

int pq__decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                   const char **why)
{
    switch (codec) {
    case PQ__CODEC_UNCOMPRESSED:
        if (src_len != dst_len) {
            *why = "an uncompressed page's two sizes differ";
            return -EBADMSG;
        }
        if (dst_len)
            memcpy(dst, src, dst_len);
        return 0;
    case PQ__CODEC_SNAPPY: {
        size_t ulen;
        if (snappy_uncompressed_length((const char *)src, src_len, &ulen) != SNAPPY_OK) {
            *why = "the SNAPPY data is corrupt (bad length header)";
            return -EBADMSG;
        }
        if (ulen != dst_len) {
            *why = "the SNAPPY data holds another size than the page header says";
            return -EBADMSG;
        }
        size_t out = dst_len;
        if (snappy_uncompress((const char *)src, src_len, (char *)dst, &out) != SNAPPY_OK ||
            out != dst_len) {
            *why = "the SNAPPY data is corrupt";
            return -EBADMSG;
        }
        return 0;
    }
    case PQ__CODEC_GZIP: return pq__gunzip(src, src_len, dst, dst_len, why);
    case PQ__CODEC_ZSTD: {
        size_t got = ZSTD_decompress(dst, dst_len, src, src_len);
        if (ZSTD_isError(got)) {
            *why = ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall
                       ? "the ZSTD data decompresses to more than the page header says"
                       : "the ZSTD data is corrupt";
            return -EBADMSG;
        }
        if (got != dst_len) {
            *why = "the ZSTD data decompresses to fewer bytes than the page header says";
            return -EBADMSG;
        }
        return 0;
    }
    case PQ__CODEC_LZ4_RAW:
    case PQ__CODEC_LZ4: {
        if (codec == PQ__CODEC_LZ4 && pq__lz4_hadoop(src, src_len, dst, dst_len) == 0)
            return 0;
        if (src_len > INT32_MAX || dst_len > INT32_MAX) {
            *why = "an LZ4 page is larger than 2 GiB";
            return -EBADMSG;
        }
        int got = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
        if (got < 0 || (size_t)got != dst_len) {
            *why = got < 0 ? "the LZ4 data is corrupt"
                           : "the LZ4 data decompresses to fewer bytes than the page header says";
            return -EBADMSG;
        }
        return 0;
    }
    case PQ__CODEC_LZO:
    case PQ__CODEC_BROTLI:
        *why = "the codec is not supported by this reader (LZO and BROTLI are not; rewrite the "
               "file with ZSTD or SNAPPY)";
        return -ENOTSUP;
    default: *why = "the codec is unknown"; return -ENOTSUP;
    }
}
