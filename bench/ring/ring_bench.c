/* SPDX-License-Identifier: Apache-2.0
 *
 * ring_bench: the numbers behind the ring's design, in one run.
 *   - keys moved when one member joins or leaves a ring of N (N = 3, 10, 100),
 *     over 1M block keys, against the ideal (the joiner's or leaver's fair
 *     share: 1/(N+1) on a join, 1/N on a leave);
 *   - balance computed exactly from the slot table: max / mean share;
 *   - the ring's memory and build time;
 *   - lookup cost next to XXH3-64 of the same 16-byte key in the same run
 *     (interleaved repetitions, medians), for 1 owner and for 3 owners;
 *   - a weighted ring (one member at weight 2) and, for comparison, a virtual
 *     node circle (ketama style, binary search) at 160 and 1000 points per
 *     member, whose balance is also computed exactly from its arcs.
 * Prints a table, then one summary line:
 *   ring: moved_ratio=<worst moved/ideal> balance=<worst max/mean share> lookup_ns_vs_hash=<ratio>
 * Usage: ring_bench [--keys N] [--table-bits B] [--reps R]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ring.h"
#include "../bench.h"

#define KEY_LEN 16

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct memberset {
    struct ring_member *m;
    char (*id)[32];
    char (*addr)[32];
    size_t n;
};

static int members_make(struct memberset *s, size_t n)
{
    s->n = n;
    s->m = calloc(n, sizeof *s->m);
    s->id = calloc(n, sizeof *s->id);
    s->addr = calloc(n, sizeof *s->addr);
    if (!s->m || !s->id || !s->addr)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        snprintf(s->id[i], sizeof s->id[i], "ringcache-%zu", i);
        snprintf(s->addr[i], sizeof s->addr[i], "10.0.%zu.%zu:7070", i / 250, i % 250 + 1);
        s->m[i] = (struct ring_member){s->id[i], s->addr[i], 0, NULL};
    }
    return 0;
}

static void members_free(struct memberset *s)
{
    free(s->m);
    free(s->id);
    free(s->addr);
}

static struct ring *build(const struct ring_member *m, size_t n, unsigned bits, double *secs)
{
    struct ring_options o = {.table_bits = bits};
    struct ring *r = NULL;
    char why[256];
    double t0 = bench_now_s();
    int rc = ring_create(&r, m, n, &o, why, sizeof why);
    if (secs)
        *secs = bench_now_s() - t0;
    if (rc != 0) {
        fprintf(stderr, "ring_bench: cannot build a ring of %zu members: %s\n", n, why);
        exit(1);
    }
    return r;
}

/* Fraction of keys whose first owner differs between two rings. */
static double moved_fraction(const struct ring *a, const struct ring *b, const unsigned char *keys,
                             size_t nkeys)
{
    size_t moved = 0;
    for (size_t k = 0; k < nkeys; k++) {
        const struct ring_member *x[1], *y[1];
        ring_lookup(a, keys + k * KEY_LEN, KEY_LEN, x, 1);
        ring_lookup(b, keys + k * KEY_LEN, KEY_LEN, y, 1);
        moved += strcmp(x[0]->id, y[0]->id) != 0;
    }
    return (double)moved / (double)nkeys;
}

static double balance(const struct ring *r)
{
    uint32_t max = 0;
    for (size_t i = 0; i < ring_member_count(r); i++)
        if (ring_member_slots(r, i) > max)
            max = ring_member_slots(r, i);
    double mean = (double)ring_slots(r) / (double)ring_member_count(r);
    return max / mean;
}

static volatile uint64_t sink;

static double time_hash(const unsigned char *keys, size_t nkeys)
{
    uint64_t acc = 0;
    double t0 = bench_now_s();
    for (size_t k = 0; k < nkeys; k++)
        acc += XXH3_64bits(keys + k * KEY_LEN, KEY_LEN);
    double t = bench_now_s() - t0;
    sink += acc;
    return t;
}

static double time_ring(const struct ring *r, const unsigned char *keys, size_t nkeys,
                        size_t owners)
{
    uintptr_t acc = 0;
    const struct ring_member *o[RING_OWNERS_MAX];
    double t0 = bench_now_s();
    for (size_t k = 0; k < nkeys; k++) {
        ring_lookup(r, keys + k * KEY_LEN, KEY_LEN, o, owners);
        acc += (uintptr_t)o[0];
    }
    double t = bench_now_s() - t0;
    sink += acc;
    return t;
}

/* --- comparison: virtual nodes on a 64-bit circle, binary search ---------- */

struct vpoint {
    uint64_t pos;
    uint32_t member;
};

struct vring {
    struct vpoint *p;
    size_t n;
    size_t members;
};

static int cmp_vpoint(const void *a, const void *b)
{
    const struct vpoint *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return (x->member > y->member) - (x->member < y->member);
}

static int vring_build(struct vring *v, const struct memberset *s, size_t per)
{
    v->members = s->n;
    v->n = s->n * per;
    v->p = malloc(v->n * sizeof *v->p);
    if (v->p == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t seed = XXH3_64bits(s->id[i], strlen(s->id[i]));
        for (uint64_t j = 0; j < per; j++)
            v->p[i * per + j] = (struct vpoint){XXH3_64bits_withSeed(&j, 8, seed), (uint32_t)i};
    }
    qsort(v->p, v->n, sizeof *v->p, cmp_vpoint);
    return 0;
}

static uint32_t vring_lookup(const struct vring *v, const void *key, size_t len)
{
    uint64_t h = XXH3_64bits(key, len);
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->p[mid].pos < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return v->p[lo == v->n ? 0 : lo].member;
}

/* Exact: a point owns the arc (previous point, point]. */
static double vring_balance(const struct vring *v)
{
    long double *share = calloc(v->members, sizeof *share);
    if (share == NULL)
        return 0;
    for (size_t i = 0; i < v->n; i++) {
        uint64_t prev = v->p[i == 0 ? v->n - 1 : i - 1].pos;
        share[v->p[i].member] += (long double)(uint64_t)(v->p[i].pos - prev);
    }
    long double max = 0, mean = 18446744073709551616.0L / v->members;
    for (size_t i = 0; i < v->members; i++)
        if (share[i] > max)
            max = share[i];
    free(share);
    return (double)(max / mean);
}

static double time_vring(const struct vring *v, const unsigned char *keys, size_t nkeys)
{
    uint64_t acc = 0;
    double t0 = bench_now_s();
    for (size_t k = 0; k < nkeys; k++)
        acc += vring_lookup(v, keys + k * KEY_LEN, KEY_LEN);
    double t = bench_now_s() - t0;
    sink += acc;
    return t;
}

int main(int argc, char **argv)
{
    size_t nkeys = 1000000;
    unsigned bits = RING_TABLE_BITS_DEFAULT;
    int reps = 7;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
            nkeys = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--table-bits") == 0 && i + 1 < argc)
            bits = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: ring_bench [--keys N] [--table-bits B] [--reps R]\n");
            return strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    if (nkeys == 0 || reps < 1 || reps > 99) {
        fprintf(stderr, "ring_bench: --keys must be > 0 and --reps 1..99\n");
        return 2;
    }

    /* Block keys are XXH3-128 digests: 16 random-looking bytes. */
    unsigned char *keys = malloc(nkeys * KEY_LEN);
    if (keys == NULL) {
        fprintf(stderr, "ring_bench: out of memory for %zu keys\n", nkeys);
        return 1;
    }
    for (uint64_t k = 0; k < nkeys; k++) {
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits(&k, sizeof k));
        memcpy(keys + k * KEY_LEN, c.digest, KEY_LEN);
    }

    static const size_t sizes[] = {3, 10, 100};
    double worst_moved = 0, worst_balance = 0, worst_lookup = 0;
    printf("ring_bench: %zu keys of %d bytes, table_bits=%u, %d interleaved reps (medians)\n\n",
           nkeys, KEY_LEN, bits, reps);
    printf(
        "| N   | join moved/ideal | leave moved/ideal | max/mean share | memory    | build s | hash ns | lookup ns | lookup/hash | 3 owners ns |\n");
    printf(
        "|-----|------------------|-------------------|----------------|-----------|---------|---------|-----------|-------------|-------------|\n");
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        struct memberset s;
        if (members_make(&s, n + 1) != 0) {
            fprintf(stderr, "ring_bench: out of memory\n");
            return 1;
        }
        double build_s;
        struct ring *base = build(s.m, n, bits, &build_s);
        struct ring *join = build(s.m, n + 1, bits, NULL);
        /* leave: drop the middle member */
        struct ring_member *less = malloc(n * sizeof *less);
        size_t j = 0;
        for (size_t i = 0; i < n; i++)
            if (i != n / 2)
                less[j++] = s.m[i];
        struct ring *leave = build(less, n - 1, bits, NULL);
        free(less);

        double join_ratio = moved_fraction(base, join, keys, nkeys) * (double)(n + 1);
        double leave_ratio = moved_fraction(base, leave, keys, nkeys) * (double)n;
        double bal = balance(base);

        double th[99], tr[99], t3[99];
        for (int r = 0; r < reps; r++) {
            th[r] = time_hash(keys, nkeys);
            tr[r] = time_ring(base, keys, nkeys, 1);
            t3[r] = time_ring(base, keys, nkeys, 3);
        }
        double hash_ns = median(th, reps) * 1e9 / nkeys;
        double ring_ns = median(tr, reps) * 1e9 / nkeys;
        double ring3_ns = median(t3, reps) * 1e9 / nkeys;
        double lookup_ratio = ring_ns / hash_ns;

        printf(
            "| %-3zu | %16.4f | %17.4f | %14.4f | %6.2f MiB | %7.3f | %7.2f | %9.2f | %11.2f | %11.1f |\n",
            n, join_ratio, leave_ratio, bal, ring_memory(base) / 1048576.0, build_s, hash_ns,
            ring_ns, lookup_ratio, ring3_ns);
        if (join_ratio > worst_moved)
            worst_moved = join_ratio;
        if (leave_ratio > worst_moved)
            worst_moved = leave_ratio;
        if (bal > worst_balance)
            worst_balance = bal;
        if (lookup_ratio > worst_lookup)
            worst_lookup = lookup_ratio;
        ring_destroy(&base);
        ring_destroy(&join);
        ring_destroy(&leave);
        members_free(&s);
    }

    /* Weights: one member of 10 at weight 2 should own 2/11 of the space. */
    {
        struct memberset s;
        if (members_make(&s, 10) != 0)
            return 1;
        s.m[0].weight = 2;
        struct ring *r = build(s.m, 10, bits, NULL);
        double share =
            (double)ring_member_slots(r, (size_t)ring_find(r, "ringcache-0")) / ring_slots(r);
        double one =
            (double)ring_member_slots(r, (size_t)ring_find(r, "ringcache-1")) / ring_slots(r);
        printf(
            "\nweights: N=10, ringcache-0 at weight 2 owns %.4f (ideal %.4f), a weight-1 member %.4f (ideal %.4f)\n",
            share, 2.0 / 11, one, 1.0 / 11);
        ring_destroy(&r);
        members_free(&s);
    }

    /* Comparison: virtual nodes at N = 100. */
    printf(
        "\ncomparison at N=100: virtual nodes on a circle (binary search), balance exact from arcs\n");
    printf("| points/member | max/mean share | memory    | lookup/hash |\n");
    printf("|---------------|----------------|-----------|-------------|\n");
    static const size_t pers[] = {160, 1000};
    for (size_t pi = 0; pi < sizeof pers / sizeof pers[0]; pi++) {
        struct memberset s;
        struct vring v;
        if (members_make(&s, 100) != 0 || vring_build(&v, &s, pers[pi]) != 0)
            return 1;
        double th[99], tv[99];
        for (int r = 0; r < reps; r++) {
            th[r] = time_hash(keys, nkeys);
            tv[r] = time_vring(&v, keys, nkeys);
        }
        double ratio = median(tv, reps) / median(th, reps);
        printf("| %13zu | %14.4f | %6.2f MiB | %11.2f |\n", pers[pi], vring_balance(&v),
               v.n * sizeof *v.p / 1048576.0, ratio);
        free(v.p);
        members_free(&s);
    }

    free(keys);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("\nring: moved_ratio=%.4f balance=%.4f lookup_ns_vs_hash=%.2f\n", worst_moved,
           worst_balance, worst_lookup);
    return 0;
}
