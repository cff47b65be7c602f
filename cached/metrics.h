/* SPDX-License-Identifier: Apache-2.0
 *
 * metrics.h: one table of metrics per module, counted per thread without
 * locks and served as Prometheus text (exposition format 0.0.4) on the admin
 * port. Counters and histograms keep one slot per worker thread (each thread's
 * slots on their own cache lines, written with relaxed atomics by that thread
 * only) and are summed when read, like memcached's per-thread stats. Gauges are
 * one value, or a callback evaluated at render time for a number another
 * module owns (the block store's bytes used).
 *
 * A registry owns its metrics' names, help and labels (copies), and every
 * slot; a callback's argument stays its caller's.
 *
 * Thread-safety:
 *   - met_create / met_register / met_destroy: setup and teardown, before any
 *     thread calls met_add / met_observe_us and after they have all stopped.
 *     met_register may run while another thread calls met_render, met_get or
 *     met_set_fn (they share a lock), but never while a thread calls met_add,
 *     met_observe_us met_set or met_gauge_add (those take no lock).
 *   - met_add / met_observe_us with thread = t (0 <= t < n_threads): only from
 *     the one thread that owns slot t; lock-free, no shared cache line.
 *   - met_add / met_observe_us with thread = met_shared_slot(r) (= n_threads):
 *     from any number of other threads at once (admin, store, S3 callbacks
 *     outside the workers); lock-free, an atomic add on a shared line.
 *   - met_set / met_gauge_add: any thread (atomic store / add). met_set_fn: any thread; the callback
 *     runs on the thread that calls met_render / met_get (the admin thread), so
 *     it must be safe to call from there; it must not call back into the
 *     same registry (met_render holds the registry's lock while it runs).
 *   - met_get / met_render: any thread, any time; values are summed with
 *     relaxed loads, so a sum read while threads count is a recent value, not a
 *     snapshot across metrics.
 */
#ifndef RINGCACHE_METRICS_H
#define RINGCACHE_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct met_registry met_registry;

typedef enum met_kind { MET_COUNTER, MET_GAUGE, MET_HISTOGRAM } met_kind;

typedef struct met_def {
    const char *name; /* full name, "ringcached_hits_total": [a-zA-Z_:][a-zA-Z0-9_:]* */
    const char *help; /* one line for # HELP */
    met_kind kind;
    const char *labels; /* optional constant labels, `tier="ram"` or
                           `tier="ram",op="get"`; NULL for none; "le" is
                           reserved for histograms */
} met_def;

/* A gauge's value computed at render time. arg is the one given to met_set_fn. */
typedef int64_t (*met_gauge_fn)(void *arg);

/* Histogram buckets (upper bounds, seconds): request latencies from 50us to
 * 10s. An observation of exactly a bound counts in that bucket (le = "<="). */
#define MET_HIST_BUCKETS 17
extern const uint64_t met_hist_bounds_us[MET_HIST_BUCKETS];

/* Creates an empty registry for n_threads worker threads (1..1024) plus one
 * shared slot. Returns 0, -EINVAL, -ENOMEM. */
int met_create(met_registry **out, unsigned n_threads);

/* Frees the registry; accepts NULL and *r == NULL; sets *r to NULL. No thread
 * may use it any more. */
void met_destroy(met_registry **r);

/* The slot for threads that are not workers: n_threads. */
unsigned met_shared_slot(const met_registry *r);

/* Adds a table of n metrics. The strings are copied. Returns the index of
 * defs[0]; defs[i] is then index base + i. -EINVAL for a bad name, labels or
 * kind, or a name already registered with another kind; -EEXIST for a name
 * and labels already registered; -ENOMEM. Metrics sharing a name (with
 * different labels) are rendered under one # HELP / # TYPE, the first one's. */
int met_register(met_registry *r, const met_def *defs, size_t n);

/* Counter idx += v, in slot `thread` (see the thread-safety notes above). */
void met_add(met_registry *r, unsigned thread, int idx, uint64_t v);

/* Gauge idx = v; clears a callback set by met_set_fn. */
void met_set(met_registry *r, int idx, int64_t v);

/* Gauge idx += delta (negative to decrease), atomically: for gauges several
 * threads move, such as open connections or in-flight I/O. */
void met_gauge_add(met_registry *r, int idx, int64_t delta);

/* Gauge idx = fn(arg) at every read from now on; fn NULL goes back to the
 * value of met_set. On a counter, fn gives a running total kept elsewhere
 * (the block store's): the counter reads as its own additions plus the
 * highest value fn has returned, so it never decreases within the process.
 * Returns 0, or -EINVAL if idx is a histogram or out of range. */
int met_set_fn(met_registry *r, int idx, met_gauge_fn fn, void *arg);

/* Counter or gauge idx counts 1/scale of the unit its name says (CPU time
 * in microseconds for a _seconds metric: 1000000): rendered as the decimal
 * value / scale ("12.345678"); met_get still returns the raw count. scale is
 * a power of 10; 1 (the default): whole units. Returns 0, or -EINVAL for a
 * histogram, an index out of range or a scale that is not a power of 10. */
int met_set_scale(met_registry *r, int idx, uint32_t scale);

/* Records one observation of `us` microseconds into histogram idx. */
void met_observe_us(met_registry *r, unsigned thread, int idx, uint64_t us);

/* Counter: the sum over all slots. Gauge: its value (or the callback's, as
 * uint64_t: cast back to int64_t for negative gauges). Histogram: the number
 * of observations. For tests and the STATS operation. */
uint64_t met_get(met_registry *r, int idx);

/* Histogram idx: the sum of observations in microseconds and the cumulative
 * count per bucket (counts has MET_HIST_BUCKETS + 1 entries, the last is +Inf).
 * Returns 0, or -EINVAL if idx is not a histogram. */
int met_get_histogram(met_registry *r, int idx, uint64_t *sum_us, uint64_t *counts);

/* Renders every metric as Prometheus text exposition format 0.0.4 into a
 * malloc'd buffer the caller frees (*out is NUL-terminated; *len excludes
 * the NUL). Returns 0 or -ENOMEM. */
int met_render(met_registry *r, char **out, size_t *len);

#endif /* RINGCACHE_METRICS_H */
