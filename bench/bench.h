/* SPDX-License-Identifier: Apache-2.0
 *
 * bench.h: what every benchmark prints above its one-line summary, so a reader of
 * any `NAME: a_vs_b=...` line knows which way is better. The convention itself is
 * written out in bench/README.md.
 */
#ifndef RINGCACHE_BENCH_H
#define RINGCACHE_BENCH_H

#define BENCH_RATIO_CONVENTION                                                            \
    "(ratios: a_vs_b is ours over the peer's, measured side by side in this run; a speed " \
    "(a bare name: throughput, or 1/time) above 1 is better, a cost (a name with p50, "    \
    "p99, cpu, mem, rss, overhead or a unit) below 1 is better)"

#endif /* RINGCACHE_BENCH_H */
