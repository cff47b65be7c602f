/* SPDX-License-Identifier: Apache-2.0
 *
 * jsonu.h: the one decoder of JSON's \u escape, for every reader of
 * JSON-quoted text (the JSONEachRow reader, array literals in text, the
 * table log's strict parser through jsonu_utf8): four hex digits, and a UTF-16 surrogate pair written as two escapes
 * ("\ud83d\ude00") joined into one code point, as JSON (RFC 8259, 7) says.
 * Out comes UTF-8. A lone surrogate becomes U+FFFD, the replacement
 * character, so what is written is always valid UTF-8.
 *
 * Pure: no state, thread-safe.
 */
#ifndef RINGCACHE_JSONU_H
#define RINGCACHE_JSONU_H

#include <stddef.h>
#include <stdint.h>

/* The escape whose hex digits start at p (just past "\u"), n bytes readable.
 * Writes 1-4 bytes of UTF-8 to out and their count to *outlen, and returns
 * the bytes consumed from p: 4, or 10 for a surrogate pair. 0 when p does not
 * start with four hex digits (nothing written). */
size_t jsonu_decode(const char *p, size_t n, uint8_t out[4], size_t *outlen);

/* Code point cp (at most U+10FFFF) as UTF-8 in out: the byte count, 1-4. */
size_t jsonu_utf8(uint32_t cp, uint8_t out[4]);

#endif
