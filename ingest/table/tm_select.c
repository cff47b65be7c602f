/* SPDX-License-Identifier: Apache-2.0
 *
 * tm_select.c: the merge selector (see merge.h). For every contiguous range
 * of at least two parts that fits max_parts_to_merge and max_bytes_to_merge,
 * the range is allowed when its parts are balanced enough:
 *
 *     (sum + n x fixed) / (max + fixed) >= base'
 *
 * with base' moved from `base` toward 1 by how far the partition's part
 * count is between the two thresholds plus how large the range is on a log
 * scale between min/max_size_to_lower_base. Among allowed ranges the one
 * with the lowest (sum + n x fixed) / (n - 1.9) wins: the bytes rewritten per
 * part removed, slightly favouring longer ranges. Pure, O(n x max_parts).
 */
#include "merge.h"

#include <math.h>

void tm_settings_init(tm_settings *s)
{
    s->max_bytes_to_merge = 150ull << 30;
    s->max_parts_to_merge = 100;
    s->base = 5.0;
    s->lower_base_after_parts_start = 10;
    s->lower_base_after_parts_end = 50;
    s->fixed_cost_bytes = 5ull << 20;
    s->min_size_to_lower_base = 1ull << 20;
    s->max_size_to_lower_base = 100ull << 30;
    s->mem = NULL;
}

static double unit(double v, double lo, double hi)
{
    if (v <= lo)
        return 0;
    if (v >= hi || hi <= lo)
        return 1;
    return (v - lo) / (hi - lo);
}

static bool allowed(double sum, double max, size_t count, size_t partition_parts,
                    const tm_settings *s)
{
    double size_n = unit(log1p(sum), log1p((double)s->min_size_to_lower_base),
                         log1p((double)s->max_size_to_lower_base));
    double parts_n = unit((double)partition_parts, s->lower_base_after_parts_start,
                          s->lower_base_after_parts_end);
    double ratio = size_n + parts_n > 1 ? 1 : size_n + parts_n;
    double base = s->base + (1.0 - s->base) * ratio;
    double fixed = (double)s->fixed_cost_bytes;
    return (sum + (double)count * fixed) / (max + fixed) >= base;
}

int tm_select(const uint64_t *sizes, size_t n, const tm_settings *s, tm_range *out)
{
    if (n < 2)
        return 0;
    bool found = false;
    tm_range best = {0, 0, 0};
    double fixed = (double)s->fixed_cost_bytes;
    size_t max_parts = s->max_parts_to_merge >= 2 ? s->max_parts_to_merge : 2;
    for (size_t b = 0; b + 1 < n; b++) {
        double sum = 0, max = 0;
        for (size_t e = b; e < n && e - b < max_parts; e++) {
            double sz = (double)sizes[e];
            sum += sz;
            if (sz > max)
                max = sz;
            if (sum > (double)s->max_bytes_to_merge)
                break;
            size_t count = e - b + 1;
            if (count < 2 || !allowed(sum, max, count, n, s))
                continue;
            double score = (sum + fixed * (double)count) / ((double)count - 1.9);
            if (!found || score < best.score) {
                best = (tm_range){b, e + 1, score};
                found = true;
            }
        }
    }
    if (found)
        *out = best;
    return found;
}
