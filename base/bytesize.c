/* SPDX-License-Identifier: Apache-2.0
 *
 * bytesize.c: the size grammar of bytesize.h. Strict on purpose: a value
 * that is not exactly digits and a known unit is refused with a sentence,
 * never read as its leading digits ("1x" is not 1 byte).
 */
#include "bytesize.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct unit {
    const char *name;
    unsigned shift; /* the unit is 1 << shift bytes */
} unit;

static const unit units[] = {
    {"", 0},    {"b", 0},    {"k", 10},  {"ki", 10},  {"kb", 10}, {"kib", 10},
    {"m", 20},  {"mi", 20},  {"mb", 20}, {"mib", 20}, {"g", 30},  {"gi", 30},
    {"gb", 30}, {"gib", 30}, {"t", 40},  {"ti", 40},  {"tb", 40}, {"tib", 40},
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int bytesize_parse(const char *text, uint64_t *out, char *err, size_t errlen)
{
    const char *v = text ? text : "";
    /* the value as it is shown in messages: quoted, cut at 64 bytes */
    char shown[80], why[256];
    snprintf(shown, sizeof shown, "'%.64s%s'", v, strlen(v) > 64 ? "..." : "");
    const char *p = v;
    int rc = -EINVAL;
    uint64_t num = 0;
    bool overflow = false;
    if (*p == '-' || *p == '+') {
        snprintf(why, sizeof why, "%s is not a size: a size is a number of bytes, without a sign",
                 shown);
        goto refused;
    }
    if (!is_digit(*p)) {
        snprintf(why, sizeof why,
                 "%s is not a size: give a number of bytes, optionally with a unit (4096, 64KiB, "
                 "1MiB, 2GiB)",
                 shown);
        goto refused;
    }
    for (; is_digit(*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (num > ((uint64_t)INT64_MAX - d) / 10)
            overflow = true;
        else
            num = num * 10 + d;
    }
    if (*p == '.' || *p == ',') {
        snprintf(why, sizeof why,
                 "%s is not a size: use a whole number of a smaller unit (1536KiB, not 1.5MiB)",
                 shown);
        goto refused;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(p, units[i].name) != 0)
            continue;
        if (overflow || num > ((uint64_t)INT64_MAX >> units[i].shift)) {
            snprintf(why, sizeof why, "%s is too large for a size (at most 8 EiB)", shown);
            rc = -ERANGE;
            goto refused;
        }
        *out = num << units[i].shift;
        return 0;
    }
    snprintf(why, sizeof why,
             "%s is not a size: '%.16s' is not a unit (use KiB, MiB, GiB or TiB, or none for "
             "bytes; every unit is a power of 1024)",
             shown, p);
refused:
    if (err && errlen)
        snprintf(err, errlen, "%s", why);
    return rc;
}

void bytesize_format(uint64_t v, char *buf, size_t cap)
{
    static const unit big[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
    if (cap == 0)
        return;
    for (size_t i = 0; v != 0 && i < sizeof big / sizeof big[0]; i++) {
        uint64_t mult = (uint64_t)1 << big[i].shift;
        if (v % mult == 0) {
            snprintf(buf, cap, "%" PRIu64 "%s", v / mult, big[i].name);
            return;
        }
    }
    snprintf(buf, cap, "%" PRIu64, v);
}
