/* SPDX-License-Identifier: Apache-2.0
 *
 * pq_encoding.c: the value encodings of Parquet that are not plain copies
 * (spec: apache/parquet-format Encodings.md): LSB-first bit unpacking, the
 * RLE / bit-packed hybrid (levels, dictionary indices, RLE booleans) and
 * DELTA_BINARY_PACKED (also the lengths inside DELTA_LENGTH_BYTE_ARRAY and
 * DELTA_BYTE_ARRAY); INT96 and FLOAT16 conversions. Every decoder is given the
 * exact number of values it must produce and fails, never reads past `len`,
 * when the bytes do not hold them.
 *
 *   hybrid run header (ULEB128):  (n << 1) | 0  -> RLE: n copies of one value
 *                                               of ceil(width/8) LE bytes
 *                                 (g << 1) | 1  -> bit-packed: g groups of 8
 *                                               values, g * width bytes
 *
 *   delta:  <block size> <miniblocks per block> <total count> <first value>
 *           then blocks: <min delta (zigzag)> <one bit width per miniblock>
 *           <miniblocks, each (block size / miniblocks) values bit-packed>
 */
#include "parquet_int.h"

#include <errno.h>
#include <string.h>

const char *pq__encoding_name(int enc)
{
    switch (enc) {
    case PQ__ENC_PLAIN: return "PLAIN";
    case PQ__ENC_PLAIN_DICTIONARY: return "PLAIN_DICTIONARY";
    case PQ__ENC_RLE: return "RLE";
    case PQ__ENC_BIT_PACKED: return "BIT_PACKED";
    case PQ__ENC_DELTA_BINARY_PACKED: return "DELTA_BINARY_PACKED";
    case PQ__ENC_DELTA_LENGTH_BYTE_ARRAY: return "DELTA_LENGTH_BYTE_ARRAY";
    case PQ__ENC_DELTA_BYTE_ARRAY: return "DELTA_BYTE_ARRAY";
    case PQ__ENC_RLE_DICTIONARY: return "RLE_DICTIONARY";
    case PQ__ENC_BYTE_STREAM_SPLIT: return "BYTE_STREAM_SPLIT";
    }
    return "unknown";
}

static inline uint64_t pq__load64(const uint8_t *p, size_t avail)
{
    uint64_t v = 0;
    if (avail >= 8) {
        memcpy(&v, p, 8);
        return v;
    }
    for (size_t i = 0; i < avail; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void pq__unpack32(const uint8_t *in, size_t in_len, int width, uint32_t *out, size_t count)
{
    if (width == 0) {
        memset(out, 0, count * sizeof(*out));
        return;
    }
    const uint64_t mask = width == 32 ? 0xffffffffull : ((1ull << width) - 1);
    uint64_t bit = 0;
    size_t i = 0;
    /* Fast part: a full 8-byte load is in bounds. */
    for (; i < count; i++, bit += (uint64_t)width) {
        size_t byte = (size_t)(bit >> 3);
        if (byte + 8 > in_len)
            break;
        uint64_t v;
        memcpy(&v, in + byte, 8);
        out[i] = (uint32_t)((v >> (bit & 7)) & mask);
    }
    for (; i < count; i++, bit += (uint64_t)width) {
        size_t byte = (size_t)(bit >> 3);
        uint64_t v = byte < in_len ? pq__load64(in + byte, in_len - byte) : 0;
        out[i] = (uint32_t)((v >> (bit & 7)) & mask);
    }
}

static void pq__unpack64(const uint8_t *in, size_t in_len, int width, uint64_t *out, size_t count)
{
    if (width == 0) {
        memset(out, 0, count * sizeof(*out));
        return;
    }
    const uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
    uint64_t bit = 0;
    for (size_t i = 0; i < count; i++, bit += (uint64_t)width) {
        size_t byte = (size_t)(bit >> 3);
        unsigned shift = (unsigned)(bit & 7);
        uint64_t lo = byte < in_len ? pq__load64(in + byte, in_len - byte) : 0;
        uint64_t v = lo >> shift;
        if (shift + (unsigned)width > 64) {
            uint64_t hi = byte + 8 < in_len ? in[byte + 8] : 0;
            v |= hi << (64 - shift);
        }
        out[i] = v & mask;
    }
}

static int pq__uleb(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return -EBADMSG;
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -EBADMSG;
}

/* One run of the RLE / bit-packed hybrid, read from its header at *pos: the
 * values it gives (at most want), and for a bit-packed run the bytes of it
 * that are there (avail: a last run may be cut short by the writer, so only
 * what is used must be there). On return *pos is at the run's bytes (the
 * packed values, or the repeated value's vbytes, both checked to be there). */
typedef struct pq__run {
    bool packed;
    size_t take, avail;
} pq__run;

static inline __attribute__((always_inline)) int pq__run_next(const uint8_t *p, size_t len,
                                                              size_t *pos, int bit_width,
                                                              size_t vbytes, size_t want,
                                                              pq__run *r)
{
    uint64_t header;
    if (pq__uleb(p, len, pos, &header) < 0)
        return -EBADMSG;
    uint64_t count;
    r->packed = header & 1;
    if (r->packed) {
        uint64_t groups = header >> 1;
        if (groups > (1ull << 40))
            return -EBADMSG;
        count = groups * 8;
        uint64_t bytes = groups * (uint64_t)bit_width;
        r->take = count < want ? (size_t)count : want;
        size_t need = (r->take * (size_t)bit_width + 7) / 8;
        if (need > len - *pos)
            return -EBADMSG;
        r->avail = bytes < len - *pos ? (size_t)bytes : len - *pos;
    } else {
        count = header >> 1;
        if (vbytes > len - *pos)
            return -EBADMSG;
        r->take = count < want ? (size_t)count : want;
        r->avail = vbytes;
    }
    return 0;
}

bool pq__rle_all_ones(const uint8_t *p, size_t len, size_t n)
{
    size_t pos = 0, got = 0;
    while (got < n) {
        uint64_t header;
        if (pq__uleb(p, len, &pos, &header) < 0 || (header & 1) || pos >= len || p[pos] != 1)
            return false;
        pos++;
        uint64_t count = header >> 1;
        if (count == 0)
            return false;
        got += count < n - got ? (size_t)count : n - got;
    }
    return true;
}

int64_t pq__rle_decode(const uint8_t *p, size_t len, int bit_width, uint32_t *out, size_t n)
{
    if (bit_width < 0 || bit_width > 32)
        return -EBADMSG;
    size_t pos = 0, got = 0;
    const size_t vbytes = ((size_t)bit_width + 7) / 8;
    while (got < n) {
        pq__run r;
        if (pq__run_next(p, len, &pos, bit_width, vbytes, n - got, &r) < 0)
            return -EBADMSG;
        if (r.packed) {
            pq__unpack32(p + pos, r.avail, bit_width, out + got, r.take);
        } else {
            uint32_t v = 0;
            for (size_t i = 0; i < vbytes; i++)
                v |= (uint32_t)p[pos + i] << (8 * i);
            if (bit_width < 32)
                v &= (1u << bit_width) - 1;
            for (size_t i = 0; i < r.take; i++)
                out[got + i] = v;
        }
        pos += r.avail;
        got += r.take;
    }
    return (int64_t)pos;
}

int64_t pq__rle_decode8(const uint8_t *p, size_t len, int bit_width, uint8_t *out, size_t n)
{
    if (bit_width < 0 || bit_width > 8)
        return -EBADMSG;
    size_t pos = 0, got = 0;
    const size_t vbytes = ((size_t)bit_width + 7) / 8;
    uint32_t tmp[64];
    while (got < n) {
        pq__run r;
        if (pq__run_next(p, len, &pos, bit_width, vbytes, n - got, &r) < 0)
            return -EBADMSG;
        size_t take = r.take, avail = r.avail;
        if (r.packed) {
            if (bit_width == 1) {
                for (size_t i = 0; i < take; i++)
                    out[got + i] = (p[pos + (i >> 3)] >> (i & 7)) & 1;
            } else {
                for (size_t done = 0; done < take;) {
                    size_t k = take - done < 64 ? take - done : 64;
                    size_t off = done * (size_t)bit_width / 8; /* done is a multiple of 64 */
                    pq__unpack32(p + pos + off, avail - off, bit_width, tmp, k);
                    for (size_t i = 0; i < k; i++)
                        out[got + done + i] = (uint8_t)tmp[i];
                    done += k;
                }
            }
        } else {
            /* Bits above the width are not part of the value (a writer's
             * garbage must not become a level of 253). */
            uint8_t v = vbytes ? (uint8_t)(p[pos] & ((1u << bit_width) - 1)) : 0;
            memset(out + got, v, take);
        }
        pos += avail;
        got += take;
    }
    return (int64_t)pos;
}

int64_t pq__delta_decode(const uint8_t *p, size_t len, int64_t *out, size_t cap, size_t *count)
{
    size_t pos = 0;
    uint64_t block, mbs, total, first;
    if (pq__uleb(p, len, &pos, &block) < 0 || pq__uleb(p, len, &pos, &mbs) < 0 ||
        pq__uleb(p, len, &pos, &total) < 0 || pq__uleb(p, len, &pos, &first) < 0)
        return -EBADMSG;
    if (block == 0 || block % 128 || mbs == 0 || block % mbs || (block / mbs) % 32 ||
        block > (1u << 20) || total > cap)
        return -EBADMSG;
    *count = (size_t)total;
    if (total == 0)
        return (int64_t)pos;
    const size_t per_mb = (size_t)(block / mbs);
    uint64_t last = (first >> 1) ^ -(first & 1);
    out[0] = (int64_t)last;
    size_t got = 1;
    uint64_t deltas[512];
    while (got < total) {
        uint64_t zz;
        if (pq__uleb(p, len, &pos, &zz) < 0)
            return -EBADMSG;
        uint64_t min_delta = (zz >> 1) ^ -(zz & 1);
        if (mbs > len - pos)
            return -EBADMSG;
        const uint8_t *widths = p + pos;
        pos += mbs;
        for (size_t m = 0; m < mbs && got < total; m++) {
            int w = widths[m];
            if (w > 64)
                return -EBADMSG;
            size_t full = per_mb * (size_t)w / 8;
            size_t take = per_mb < total - got ? per_mb : (size_t)(total - got);
            size_t need = (take * (size_t)w + 7) / 8;
            if (need > len - pos)
                return -EBADMSG;
            size_t avail = full < len - pos ? full : len - pos;
            for (size_t done = 0; done < take;) {
                size_t k = take - done < 512 ? take - done : 512;
                size_t off = done * (size_t)w / 8; /* done is a multiple of 512 */
                pq__unpack64(p + pos + off, avail - off, w, deltas, k);
                for (size_t i = 0; i < k; i++) {
                    last += min_delta + deltas[i];
                    out[got + done + i] = (int64_t)last;
                }
                done += k;
            }
            pos += avail;
            got += take;
        }
    }
    return (int64_t)pos;
}

int64_t pq__int96_to_ns(const uint8_t *p)
{
    uint64_t nanos;
    uint32_t jd;
    memcpy(&nanos, p, 8);
    memcpy(&jd, p + 8, 4);
    /* Julian day 2440588 is 1970-01-01. Wrapping arithmetic: garbage in gives
     * garbage out, never undefined behaviour. */
    uint64_t days = (uint64_t)((int64_t)jd - 2440588);
    return (int64_t)(days * 86400000000000ull + nanos);
}

float pq__half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {
            /* Subnormal: normalise. */
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400));
            mant &= 0x3ff;
            bits = sign | (uint32_t)(127 - 15 - e) << 23 | mant << 13;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | mant << 13;
    } else {
        bits = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}
