/* SPDX-License-Identifier: Apache-2.0
 *
 * jsonu.c: JSON's \u escape (four hex digits) to UTF-8 (jsonu.h).
 */
#include "jsonu.h"

static int hex4(const char *p, size_t n, uint32_t *v)
{
    if (n < 4)
        return -1;
    uint32_t x = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char c = (unsigned char)p[k];
        uint32_t d = c >= '0' && c <= '9'   ? (uint32_t)(c - '0')
                     : c >= 'a' && c <= 'f' ? (uint32_t)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (uint32_t)(c - 'A' + 10)
                                            : 16;
        if (d == 16)
            return -1;
        x = x * 16 + d;
    }
    *v = x;
    return 0;
}

size_t jsonu_decode(const char *p, size_t n, uint8_t out[4], size_t *outlen)
{
    uint32_t cp, lo;
    size_t used = 4;
    if (hex4(p, n, &cp) < 0)
        return 0;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (n >= 10 && p[4] == '\\' && p[5] == 'u' && hex4(p + 6, n - 6, &lo) == 0 &&
            lo >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            used = 10;
        } else {
            cp = 0xfffd;
        }
    } else if (cp >= 0xdc00 && cp <= 0xdfff) {
        cp = 0xfffd;
    }
    *outlen = jsonu_utf8(cp, out);
    return used;
}

size_t jsonu_utf8(uint32_t cp, uint8_t out[4])
{
    size_t o = 0;
    if (cp < 0x80) {
        out[o++] = (uint8_t)cp;
    } else if (cp < 0x800) {
        out[o++] = (uint8_t)(0xc0 | cp >> 6);
        out[o++] = (uint8_t)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[o++] = (uint8_t)(0xe0 | cp >> 12);
        out[o++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        out[o++] = (uint8_t)(0x80 | (cp & 0x3f));
    } else {
        out[o++] = (uint8_t)(0xf0 | cp >> 18);
        out[o++] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
        out[o++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
        out[o++] = (uint8_t)(0x80 | (cp & 0x3f));
    }
    return o;
}
