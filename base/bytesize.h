/* SPDX-License-Identifier: Apache-2.0
 *
 * bytesize.h: the one parser (and formatter) of byte sizes, for every option
 * that takes one: the cache node's config file and flags (cached/config.h,
 * CFG_SIZE) and the CLI's sizes.
 *
 *   size := digits [unit]       no sign, no space, no fraction, no exponent
 *   unit := b | k | ki | kb | kib | m | mi | mb | mib | g | gi | gb | gib
 *         | t | ti | tb | tib   (case-insensitive)
 *
 * Every unit is binary, a power of 1024: "64k" = "64KB" = "64KiB" = 65536,
 * "1MB" = "1MiB" = 1048576, "2G" = 2147483648. Decimal units are not offered:
 * ClickHouse and Kubernetes read KB, MB, GB as powers of 1000 (and KiB, MiB,
 * GiB as powers of 1024), so a value written for them in KB/MB/GB means 2.4%
 * to 10% more here; write KiB, MiB, GiB, TiB to mean the same everywhere.
 * Sizes are at most INT64_MAX bytes (8 EiB less one), so they fit an int64_t
 * and a uint64_t alike.
 *
 * Pure functions over the caller's buffers, no state: thread-safe.
 */
#ifndef RINGCACHE_BYTESIZE_H
#define RINGCACHE_BYTESIZE_H

#include <stddef.h>
#include <stdint.h>

/* Parses text (NUL-terminated) into *out. Returns 0; -EINVAL for anything
 * that is not a size (empty, a sign, junk, a fraction, an unknown unit);
 * -ERANGE over INT64_MAX. On error *out is untouched and err (may be NULL)
 * holds one sentence naming the value and how to write it, e.g.
 * "'10XB' is not a size: 'XB' is not a unit (use KiB, MiB, GiB or TiB)". */
int bytesize_parse(const char *text, uint64_t *out, char *err, size_t errlen);

/* Writes v in the largest binary unit that divides it exactly ("1MiB",
 * "1536KiB", "4097", "0"); bytesize_parse reads it back to v (for v up to
 * INT64_MAX). Always
 * NUL-terminates when cap > 0; 24 bytes hold any value. */
void bytesize_format(uint64_t v, char *buf, size_t cap);

#endif /* RINGCACHE_BYTESIZE_H */
