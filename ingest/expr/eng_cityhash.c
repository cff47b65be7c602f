/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_cityhash.c: CityHash64 as ClickHouse's cityHash64 computes it, which is
 * CityHash version 1.0.2 (Pike and Alakuijala, 2011), kept by ClickHouse
 * because its stored hashes depend on it; the later versions (1.1 on) give
 * other values for most inputs. Written from the algorithm's description:
 * little-endian 64-bit words, the 0..16, 17..32, 33..64 byte cases, and 64-byte
 * rounds keeping 56 bytes of state beyond. Reentrant.
 */
#include "expr_int.h"

static const uint64_t K0 = 0xc3a5c85c97cb3127ull;
static const uint64_t K1 = 0xb492b66fbe98f273ull;
static const uint64_t K2 = 0x9ae16a3b2f90404full;
static const uint64_t K3 = 0xc949d7c7509e6557ull;

static uint64_t ld64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

static uint64_t ld32(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

/* Right rotation (shift 0 leaves the value). */
static uint64_t ror(uint64_t v, unsigned s)
{
    return s == 0 ? v : (v >> s) | (v << (64 - s));
}

static uint64_t shift_mix(uint64_t v)
{
    return v ^ (v >> 47);
}

uint64_t bx_city_hash128to64(uint64_t lo, uint64_t hi)
{
    const uint64_t mul = 0x9ddfea08eb382d69ull;
    uint64_t a = (lo ^ hi) * mul;
    a ^= a >> 47;
    uint64_t b = (hi ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t len0to16(const uint8_t *s, size_t len)
{
    if (len > 8) {
        uint64_t a = ld64(s), b = ld64(s + len - 8);
        return bx_city_hash128to64(a, ror(b + len, (unsigned)len)) ^ b;
    }
    if (len >= 4) {
        uint64_t a = ld32(s);
        return bx_city_hash128to64(len + (a << 3), ld32(s + len - 4));
    }
    if (len > 0) {
        uint32_t y = (uint32_t)s[0] + ((uint32_t)s[len >> 1] << 8);
        uint32_t z = (uint32_t)len + ((uint32_t)s[len - 1] << 2);
        return shift_mix(y * K2 ^ z * K3) * K2;
    }
    return K2;
}

static uint64_t len17to32(const uint8_t *s, size_t len)
{
    uint64_t a = ld64(s) * K1, b = ld64(s + 8);
    uint64_t c = ld64(s + len - 8) * K2, d = ld64(s + len - 16) * K0;
    return bx_city_hash128to64(ror(a - b, 43) + ror(c, 30) + d, a + ror(b ^ K3, 20) - c + len);
}

static uint64_t len33to64(const uint8_t *s, size_t len)
{
    uint64_t z = ld64(s + 24);
    uint64_t a = ld64(s) + (len + ld64(s + len - 16)) * K0;
    uint64_t b = ror(a + z, 52), c = ror(a, 37);
    a += ld64(s + 8);
    c += ror(a, 7);
    a += ld64(s + 16);
    uint64_t vf = a + z, vs = b + ror(a, 31) + c;
    a = ld64(s + 16) + ld64(s + len - 32);
    z = ld64(s + len - 8);
    b = ror(a + z, 52);
    c = ror(a, 37);
    a += ld64(s + len - 24);
    c += ror(a, 7);
    a += ld64(s + len - 16);
    uint64_t wf = a + z, ws = b + ror(a, 31) + c;
    uint64_t r = shift_mix((vf + ws) * K2 + (wf + vs) * K0);
    return shift_mix(r * K0 + vs) * K2;
}

/* The 32 bytes at s mixed into the seeds (a, b): out[0], out[1]. */
static void weak32(const uint8_t *s, uint64_t a, uint64_t b, uint64_t out[2])
{
    uint64_t w = ld64(s), x = ld64(s + 8), y = ld64(s + 16), z = ld64(s + 24);
    a += w;
    b = ror(b + a + z, 21);
    uint64_t c = a;
    a += x + y;
    b += ror(a, 44);
    out[0] = a + z;
    out[1] = b + c;
}

uint64_t bx_cityhash64(const uint8_t *s, size_t len)
{
    if (len <= 16)
        return len0to16(s, len);
    if (len <= 32)
        return len17to32(s, len);
    if (len <= 64)
        return len33to64(s, len);
    /* the last 64 bytes first, then the 64-byte blocks from the start */
    uint64_t x = ld64(s), y = ld64(s + len - 16) ^ K1, z = ld64(s + len - 56) ^ K0;
    uint64_t v[2], w[2];
    weak32(s + len - 64, len, y, v);
    weak32(s + len - 32, len * K1, K0, w);
    z += shift_mix(v[1]) * K1;
    x = ror(z + x, 39) * K1;
    y = ror(y, 33) * K1;
    size_t left = (len - 1) & ~(size_t)63;
    do {
        x = ror(x + y + v[0] + ld64(s + 16), 37) * K1;
        y = ror(y + v[1] + ld64(s + 48), 42) * K1;
        x ^= w[1];
        y ^= v[0];
        z = ror(z ^ w[0], 33);
        weak32(s, v[1] * K1, x + w[0], v);
        weak32(s + 32, z + w[1], y, w);
        uint64_t t = z;
        z = x;
        x = t;
        s += 64;
        left -= 64;
    } while (left != 0);
    return bx_city_hash128to64(bx_city_hash128to64(v[0], w[0]) + shift_mix(y) * K1 + z,
                               bx_city_hash128to64(v[1], w[1]) + x);
}
