/* SPDX-License-Identifier: Apache-2.0
 *
 * The ring holder under concurrency: reader threads acquire, look up and
 * release while a writer swaps freshly built rings in (each old ring is freed
 * as soon as its last reader lets go). Built in the TSan configuration this is
 * the data-race check (label `threads`); in every build a reader that got a
 * freed or half-built ring sees a member count or an owner that does not match
 * the generation it claims, and the test fails.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ring.h"

#define READERS         3
#define SWAPS           3000
#define MAX_GEN_MEMBERS 6

struct shared {
    struct ring_holder *h;
    atomic_bool stop;
    atomic_ulong acquired;
    atomic_ulong bad;
    atomic_ulong empty;
};

/* Generation g has (g % MAX_GEN_MEMBERS) + 1 members whose ids all encode
 * g's member count: a reader checks the two agree. */
static struct ring *make_ring(unsigned g)
{
    unsigned n = g % MAX_GEN_MEMBERS + 1;
    struct ring_member m[MAX_GEN_MEMBERS];
    char id[MAX_GEN_MEMBERS][32];
    for (unsigned i = 0; i < n; i++) {
        snprintf(id[i], sizeof id[i], "n%u-m%u", n, i);
        m[i] = (struct ring_member){id[i], "127.0.0.1:1", 0, NULL};
    }
    struct ring_options o = {.table_bits = RING_TABLE_BITS_MIN};
    struct ring *r = NULL;
    if (ring_create(&r, m, n, &o, NULL, 0) != 0)
        return NULL;
    return r;
}

static void *reader(void *arg)
{
    struct shared *s = arg;
    unsigned k = 0;
    while (!atomic_load(&s->stop)) {
        struct ring *r = ring_holder_acquire(s->h);
        if (r == NULL) {
            atomic_fetch_add(&s->empty, 1);
            continue;
        }
        char key[32];
        snprintf(key, sizeof key, "key-%u", k++);
        const struct ring_member *o[MAX_GEN_MEMBERS];
        size_t n = ring_member_count(r);
        int got = ring_lookup(r, key, strlen(key), o, MAX_GEN_MEMBERS);
        unsigned want_n = 0;
        if (got != (int)n || sscanf(o[0]->id, "n%u-", &want_n) != 1 || want_n != n)
            atomic_fetch_add(&s->bad, 1);
        atomic_fetch_add(&s->acquired, 1);
        ring_unref(&r);
    }
    return NULL;
}

static void test_swaps_while_reading(void **state)
{
    (void)state;
    struct shared s;
    memset(&s, 0, sizeof s);
    atomic_init(&s.stop, false);
    atomic_init(&s.acquired, 0);
    atomic_init(&s.bad, 0);
    atomic_init(&s.empty, 0);
    struct ring *first = make_ring(0);
    assert_non_null(first);
    assert_int_equal(ring_holder_create(&s.h, first), 0);

    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, reader, &s), 0);
    for (unsigned g = 1; g <= SWAPS; g++) {
        struct ring *next = make_ring(g);
        assert_non_null(next);
        ring_holder_swap(s.h, next);
    }
    /* a NULL ring is a legal state too (e.g. before the first resolution) */
    ring_holder_swap(s.h, NULL);
    ring_holder_swap(s.h, make_ring(1));
    atomic_store(&s.stop, true);
    for (int i = 0; i < READERS; i++)
        pthread_join(t[i], NULL);

    assert_int_equal(atomic_load(&s.bad), 0);
    struct ring *last = ring_holder_acquire(s.h);
    assert_non_null(last);
    assert_int_equal(ring_member_count(last), 2);
    ring_unref(&last);
    ring_holder_destroy(&s.h);
    assert_null(s.h);
    ring_holder_destroy(&s.h);
    printf("# %lu acquisitions, %lu while empty, during %d swaps\n", atomic_load(&s.acquired),
           atomic_load(&s.empty), SWAPS);
}

/* A reader's reference outlives the swap that replaced its ring. */
static void test_reference_outlives_swap(void **state)
{
    (void)state;
    struct ring_holder *h = NULL;
    assert_int_equal(ring_holder_create(&h, NULL), 0);
    assert_null(ring_holder_acquire(h));
    ring_holder_swap(h, make_ring(2)); /* 3 members */
    struct ring *held = ring_holder_acquire(h);
    assert_non_null(held);
    ring_holder_swap(h, make_ring(4)); /* 5 members */
    assert_int_equal(ring_member_count(held), 3);
    const struct ring_member *o[1];
    assert_int_equal(ring_lookup(held, "k", 1, o, 1), 1);
    assert_non_null(strstr(o[0]->id, "n3-"));
    ring_unref(&held);
    struct ring *now = ring_holder_acquire(h);
    assert_int_equal(ring_member_count(now), 5);
    ring_unref(&now);
    ring_holder_destroy(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_swaps_while_reading),
        cmocka_unit_test(test_reference_outlives_swap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
