/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests of the ring's placement properties on small rings: determinism
 * across member orderings, distinct owners, minimal movement on join and
 * leave, proportional weights, input validation, and pinned placements that
 * catch any accidental change of the algorithm (which would move every block
 * of a deployed cluster).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "ring.h"

#define TEST_BITS   16u
#define MAX_MEMBERS 64

struct members {
    struct ring_member m[MAX_MEMBERS];
    char id[MAX_MEMBERS][48];
    char addr[MAX_MEMBERS][48];
    size_t n;
};

static void members_fill(struct members *ms, size_t n)
{
    assert_true(n <= MAX_MEMBERS);
    ms->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(ms->id[i], sizeof ms->id[i], "ringcache-%zu", i);
        snprintf(ms->addr[i], sizeof ms->addr[i], "10.0.0.%zu:7070", i + 1);
        ms->m[i] = (struct ring_member){ms->id[i], ms->addr[i], 0, NULL};
    }
}

static struct ring *build(const struct ring_member *m, size_t n, unsigned bits)
{
    struct ring_options o = {.table_bits = bits};
    struct ring *r = NULL;
    char why[256] = "";
    int rc = ring_create(&r, m, n, &o, why, sizeof why);
    if (rc != 0)
        fail_msg("ring_create: %d %s", rc, why);
    return r;
}

static void key_of(char *buf, size_t len, unsigned i)
{
    snprintf(buf, len, "bucket/object-%u/block-%u", i / 7, i);
}

static void test_determinism_across_orderings(void **state)
{
    (void)state;
    struct members ms;
    members_fill(&ms, 9);
    struct ring_member rev[9], shuf[9];
    for (size_t i = 0; i < 9; i++)
        rev[i] = ms.m[8 - i];
    static const size_t perm[9] = {4, 7, 0, 2, 8, 1, 6, 3, 5};
    for (size_t i = 0; i < 9; i++)
        shuf[i] = ms.m[perm[i]];
    struct ring *a = build(ms.m, 9, TEST_BITS);
    struct ring *b = build(rev, 9, TEST_BITS);
    struct ring *c = build(shuf, 9, TEST_BITS);
    for (unsigned k = 0; k < 20000; k++) {
        char key[64];
        key_of(key, sizeof key, k);
        const struct ring_member *oa[4], *ob[4], *oc[4];
        assert_int_equal(ring_lookup(a, key, strlen(key), oa, 4), 4);
        assert_int_equal(ring_lookup(b, key, strlen(key), ob, 4), 4);
        assert_int_equal(ring_lookup(c, key, strlen(key), oc, 4), 4);
        for (int j = 0; j < 4; j++) {
            assert_string_equal(oa[j]->id, ob[j]->id);
            assert_string_equal(oa[j]->id, oc[j]->id);
            assert_string_equal(oa[j]->addr, oc[j]->addr);
        }
    }
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(ring_member_slots(a, i), ring_member_slots(c, i));
    ring_destroy(&a);
    ring_destroy(&b);
    ring_destroy(&c);
    assert_null(a);
}

static void test_owners_distinct_and_first_matches_table(void **state)
{
    (void)state;
    struct members ms;
    members_fill(&ms, 7);
    struct ring *r = build(ms.m, 7, TEST_BITS);
    for (unsigned k = 0; k < 5000; k++) {
        char key[64];
        key_of(key, sizeof key, k);
        const struct ring_member *one[1], *all[RING_OWNERS_MAX];
        assert_int_equal(ring_lookup(r, key, strlen(key), one, 1), 1);
        /* asking for more than there are members gives each member once */
        assert_int_equal(ring_lookup(r, key, strlen(key), all, 10), 7);
        assert_ptr_equal(one[0], all[0]);
        unsigned seen = 0;
        for (int j = 0; j < 7; j++) {
            size_t idx = ring_member_index(r, all[j]);
            assert_true(idx < 7);
            assert_false(seen & (1u << idx));
            seen |= 1u << idx;
        }
        /* a shorter list is a prefix of the longer one */
        const struct ring_member *three[3];
        assert_int_equal(ring_lookup(r, key, strlen(key), three, 3), 3);
        for (int j = 0; j < 3; j++)
            assert_ptr_equal(three[j], all[j]);
    }
    const struct ring_member *o[1];
    assert_int_equal(ring_lookup(r, "k", 1, o, 0), -EINVAL);
    ring_destroy(&r);
}

static void test_single_member_owns_everything(void **state)
{
    (void)state;
    struct ring_member m = {"solo", "127.0.0.1:7070", 0, NULL};
    struct ring *r = build(&m, 1, RING_TABLE_BITS_MIN);
    const struct ring_member *o[3];
    assert_int_equal(ring_lookup(r, "abc", 3, o, 3), 1);
    assert_string_equal(o[0]->id, "solo");
    assert_int_equal(ring_member_slots(r, 0), ring_slots(r));
    ring_destroy(&r);
}

/* On a join, a key either stays or moves to the new member; the number of
 * moved slots is exactly the new member's share. On a leave, only the
 * leaver's keys move, each to what was its second owner. */
static void test_movement_join_and_leave(void **state)
{
    (void)state;
    struct members ms;
    members_fill(&ms, 11);
    struct ring *r10 = build(ms.m, 10, TEST_BITS);
    struct ring *r11 = build(ms.m, 11, TEST_BITS);
    int new_idx = ring_find(r11, "ringcache-10");
    assert_true(new_idx >= 0);
    unsigned moved = 0, total = 60000, to_new = 0;
    for (unsigned k = 0; k < total; k++) {
        char key[64];
        key_of(key, sizeof key, k);
        const struct ring_member *a[1], *b[1];
        ring_lookup(r10, key, strlen(key), a, 1);
        ring_lookup(r11, key, strlen(key), b, 1);
        if (strcmp(a[0]->id, b[0]->id) != 0) {
            moved++;
            assert_string_equal(b[0]->id, "ringcache-10");
        }
        if (strcmp(b[0]->id, "ringcache-10") == 0)
            to_new++;
    }
    /* every key the new member owns came from someone else */
    assert_int_equal(moved, to_new);
    /* about 1/11 of the keys move: well inside 0.8x..1.2x of ideal */
    double ideal = total / 11.0;
    assert_true(moved > 0.8 * ideal && moved < 1.2 * ideal);

    /* leave: remove ringcache-3 from the 11 */
    struct ring_member less[10];
    size_t j = 0;
    for (size_t i = 0; i < 11; i++)
        if (i != 3)
            less[j++] = ms.m[i];
    struct ring *r_less = build(less, 10, TEST_BITS);
    unsigned left_moved = 0;
    for (unsigned k = 0; k < total; k++) {
        char key[64];
        key_of(key, sizeof key, k);
        const struct ring_member *before[2], *after[1];
        ring_lookup(r11, key, strlen(key), before, 2);
        ring_lookup(r_less, key, strlen(key), after, 1);
        if (strcmp(before[0]->id, "ringcache-3") == 0) {
            left_moved++;
            assert_string_equal(after[0]->id, before[1]->id);
        } else {
            assert_string_equal(after[0]->id, before[0]->id);
        }
    }
    assert_true(left_moved > 0.8 * ideal && left_moved < 1.2 * ideal);
    ring_destroy(&r10);
    ring_destroy(&r11);
    ring_destroy(&r_less);
}

static void test_weights_proportional(void **state)
{
    (void)state;
    struct members ms;
    members_fill(&ms, 4);
    static const uint32_t w[4] = {1, 2, 1, 4};
    for (size_t i = 0; i < 4; i++)
        ms.m[i].weight = w[i];
    struct ring *r = build(ms.m, 4, 18);
    double total = ring_slots(r);
    for (size_t i = 0; i < 4; i++) {
        int idx = ring_find(r, ms.id[i]);
        assert_true(idx >= 0);
        double share = ring_member_slots(r, (size_t)idx) / total;
        double want = w[i] / 8.0;
        if (share < 0.97 * want || share > 1.03 * want)
            fail_msg("%s weight %u owns %.4f of the space, want %.4f", ms.id[i], w[i], share, want);
    }
    /* doubling one member's weight roughly doubles its share */
    ms.m[0].weight = 2;
    struct ring *r2 = build(ms.m, 4, 18);
    double s_before = ring_member_slots(r, (size_t)ring_find(r, "ringcache-0")) / total;
    double s_after = ring_member_slots(r2, (size_t)ring_find(r2, "ringcache-0")) / total;
    assert_true(s_after > 1.8 * s_before * (8.0 / 9.0) && s_after < 2.2 * s_before);
    ring_destroy(&r);
    ring_destroy(&r2);
}

static void test_equal_weights_are_scale_free(void **state)
{
    (void)state;
    struct members a, b;
    members_fill(&a, 5);
    members_fill(&b, 5);
    for (size_t i = 0; i < 5; i++)
        b.m[i].weight = 7;
    struct ring *ra = build(a.m, 5, TEST_BITS), *rb = build(b.m, 5, TEST_BITS);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(ring_member_slots(ra, i), ring_member_slots(rb, i));
    ring_destroy(&ra);
    ring_destroy(&rb);
}

static void test_addresses_do_not_move_blocks(void **state)
{
    (void)state;
    struct members a, b;
    members_fill(&a, 6);
    members_fill(&b, 6);
    b.m[2].addr = "10.9.9.9:7071"; /* ringcache-2 restarted with a new IP */
    struct ring *ra = build(a.m, 6, TEST_BITS), *rb = build(b.m, 6, TEST_BITS);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(ring_member_slots(ra, i), ring_member_slots(rb, i));
    const struct ring_member *o[1];
    for (unsigned k = 0; k < 3000; k++) {
        char key[64];
        key_of(key, sizeof key, k);
        ring_lookup(rb, key, strlen(key), o, 1);
        if (strcmp(o[0]->id, "ringcache-2") == 0)
            assert_string_equal(o[0]->addr, "10.9.9.9:7071");
    }
    ring_destroy(&ra);
    ring_destroy(&rb);
}

/* A member's host name (the SRV target TLS verifies) is copied with it, an
 * empty one reads back as NULL, and neither moves a block. */
static void test_host_names_are_kept(void **state)
{
    (void)state;
    struct members a, b;
    members_fill(&a, 4);
    members_fill(&b, 4);
    char host[64];
    snprintf(host, sizeof host, "ringcache-1.ringcache-headless.ns.svc.cluster.local");
    b.m[1].host = host;
    b.m[2].host = "";
    struct ring *ra = build(a.m, 4, TEST_BITS), *rb = build(b.m, 4, TEST_BITS);
    memset(host, 'x', 10); /* the ring has its own copy */
    const struct ring_member *m1 = ring_member_at(rb, (size_t)ring_find(rb, "ringcache-1"));
    assert_string_equal(m1->host, "ringcache-1.ringcache-headless.ns.svc.cluster.local");
    assert_null(ring_member_at(rb, (size_t)ring_find(rb, "ringcache-2"))->host);
    assert_null(ring_member_at(ra, (size_t)ring_find(ra, "ringcache-1"))->host);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(ring_member_slots(ra, i), ring_member_slots(rb, i));
    ring_destroy(&ra);
    ring_destroy(&rb);
}

static void expect_invalid(const struct ring_member *m, size_t n, unsigned bits, int want,
                           const char *needle)
{
    struct ring_options o = {.table_bits = bits};
    struct ring *r = (struct ring *)0x1;
    char why[256] = "";
    int rc = ring_create(&r, m, n, &o, why, sizeof why);
    assert_int_equal(rc, want);
    assert_ptr_equal(r, (struct ring *)0x1); /* *out untouched on failure */
    if (strstr(why, needle) == NULL)
        fail_msg("message \"%s\" does not mention \"%s\"", why, needle);
}

static void test_invalid_member_lists(void **state)
{
    (void)state;
    struct ring_member dup[3] = {
        {"a", "10.0.0.1:1", 0, NULL},
        {"dup-node", "10.0.0.2:1", 0, NULL},
        {"dup-node", "10.0.0.3:1", 0, NULL},
    };
    expect_invalid(dup, 3, 0, -EINVAL, "dup-node");
    expect_invalid(dup, 0, 0, -EINVAL, "empty");
    expect_invalid(NULL, 0, 0, -EINVAL, "empty");
    struct ring_member noid[1] = {{"", "10.0.0.7:1", 0, NULL}};
    expect_invalid(noid, 1, 0, -EINVAL, "10.0.0.7:1");
    struct ring_member noaddr[2] = {{"a", "x:1", 0, NULL}, {"lonely", NULL, 0, NULL}};
    expect_invalid(noaddr, 2, 0, -EINVAL, "lonely");
    struct ring_member heavy[1] = {{"heavy", "x:1", RING_WEIGHT_MAX + 1, NULL}};
    expect_invalid(heavy, 1, 0, -EINVAL, "heavy");
    struct ring_member ok[1] = {{"ok", "x:1", 0, NULL}};
    expect_invalid(ok, 1, RING_TABLE_BITS_MAX + 1, -EINVAL, "table_bits");
    expect_invalid(ok, 1, RING_TABLE_BITS_MIN - 1, -EINVAL, "table_bits");
    /* why may be NULL */
    struct ring *r = NULL;
    assert_int_equal(ring_create(&r, dup, 3, NULL, NULL, 0), -EINVAL);
    assert_null(r);
}

static void test_accessors_and_null_destroy(void **state)
{
    (void)state;
    struct members ms;
    members_fill(&ms, 5);
    struct ring *r = build(ms.m, 5, TEST_BITS);
    assert_int_equal(ring_member_count(r), 5);
    uint64_t sum = 0;
    for (size_t i = 0; i < 5; i++) {
        const struct ring_member *m = ring_member_at(r, i);
        assert_non_null(m);
        assert_int_equal(ring_member_index(r, m), i);
        assert_int_equal(ring_find(r, m->id), (int)i);
        if (i > 0)
            assert_true(strcmp(ring_member_at(r, i - 1)->id, m->id) < 0);
        sum += ring_member_slots(r, i);
    }
    assert_int_equal(sum, ring_slots(r));
    assert_int_equal(ring_slots(r), 1u << TEST_BITS);
    assert_null(ring_member_at(r, 5));
    assert_int_equal(ring_find(r, "nobody"), -ENOENT);
    assert_true(ring_memory(r) >= (1u << TEST_BITS)); /* one byte per slot */
    struct ring *extra = ring_ref(r);
    ring_unref(&extra);
    assert_null(extra);
    assert_int_equal(ring_member_count(r), 5); /* still alive: one ref left */
    ring_destroy(&r);
    ring_destroy(&r);
    ring_destroy(NULL);
    ring_unref(NULL);
}

/* Pinned placements: these change only if the algorithm changes, which would
 * move every cached block of a running cluster. Update them deliberately. */
static void test_pinned_placements(void **state)
{
    (void)state;
    struct members ms;
    members_fill(&ms, 5);
    struct ring *r = build(ms.m, 5, RING_TABLE_BITS_DEFAULT);
    static const struct {
        const char *key;
        const char *owners[3];
    } pins[] = {
        {"a", {"ringcache-2", "ringcache-1", "ringcache-4"}},
        {"bucket/key/0", {"ringcache-4", "ringcache-3", "ringcache-1"}},
        {"bucket/key/1", {"ringcache-1", "ringcache-2", "ringcache-0"}},
        {"block-42", {"ringcache-1", "ringcache-4", "ringcache-2"}},
        {"hello world", {"ringcache-3", "ringcache-4", "ringcache-0"}},
        {"x", {"ringcache-4", "ringcache-1", "ringcache-3"}},
        {"ringcache", {"ringcache-3", "ringcache-1", "ringcache-4"}},
    };
    for (size_t i = 0; i < sizeof pins / sizeof pins[0]; i++) {
        const struct ring_member *o[3];
        assert_int_equal(ring_lookup(r, pins[i].key, strlen(pins[i].key), o, 3), 3);
        for (int j = 0; j < 3; j++)
            assert_string_equal(o[j]->id, pins[i].owners[j]);
    }
    assert_int_equal(ring_hash_key("", 0), UINT64_C(0x2d06800538d394c2));
    ring_destroy(&r);
}

/* Re-derives owners from the definition written in ring.h, with the xxHash
 * library directly: slot = top table_bits of XXH3-64(key); owners in order of
 * XXH3-64(slot as 8 little-endian bytes, seed = XXH3-64(id)), ties to the
 * lower id. Another implementation (another language, a tool) can agree. */
static void test_matches_documented_definition(void **state)
{
    (void)state;
    struct members ms;
    members_fill(&ms, 8);
    const unsigned bits = 12;
    struct ring *r = build(ms.m, 8, bits);
    for (unsigned k = 0; k < 3000; k++) {
        char key[64];
        key_of(key, sizeof key, k);
        uint64_t slot = XXH3_64bits(key, strlen(key)) >> (64 - bits);
        unsigned char le[8];
        for (int b = 0; b < 8; b++)
            le[b] = (unsigned char)(slot >> (8 * b));
        uint64_t sc[8];
        for (size_t i = 0; i < 8; i++)
            sc[i] = XXH3_64bits_withSeed(le, 8, XXH3_64bits(ms.id[i], strlen(ms.id[i])));
        const struct ring_member *o[3];
        bool placed[8] = {false};
        assert_int_equal(ring_lookup(r, key, strlen(key), o, 3), 3);
        for (int j = 0; j < 3; j++) {
            size_t best = 8;
            for (size_t i = 0; i < 8; i++) {
                if (placed[i])
                    continue;
                if (best == 8 || sc[i] > sc[best] ||
                    (sc[i] == sc[best] && strcmp(ms.id[i], ms.id[best]) < 0))
                    best = i;
            }
            assert_string_equal(o[j]->id, ms.id[best]);
            placed[best] = true;
        }
    }
    ring_destroy(&r);
}

/* Over 256 members the table holds two-byte indices: same rules apply. */
static void test_wide_table(void **state)
{
    (void)state;
    enum { N = 300 };
    static struct ring_member m[N];
    static char id[N][16];
    for (size_t i = 0; i < N; i++) {
        snprintf(id[i], sizeof id[i], "node-%03zu", i);
        m[i] = (struct ring_member){id[i], "10.1.1.1:7070", 0, NULL};
    }
    struct ring *r = build(m, N, 14);
    assert_true(ring_memory(r) >= (2u << 14));
    uint64_t sum = 0;
    for (size_t i = 0; i < N; i++)
        sum += ring_member_slots(r, i);
    assert_int_equal(sum, 1u << 14);
    bool seen_high = false;
    for (unsigned k = 0; k < 4000; k++) {
        char key[64];
        key_of(key, sizeof key, k);
        const struct ring_member *one[1], *two[2];
        ring_lookup(r, key, strlen(key), one, 1);
        assert_int_equal(ring_lookup(r, key, strlen(key), two, 2), 2);
        assert_ptr_equal(one[0], two[0]);
        assert_ptr_not_equal(two[0], two[1]);
        if (ring_member_index(r, one[0]) >= 256)
            seen_high = true;
    }
    assert_true(seen_high); /* indices above one byte do come back */
    ring_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism_across_orderings),
        cmocka_unit_test(test_owners_distinct_and_first_matches_table),
        cmocka_unit_test(test_single_member_owns_everything),
        cmocka_unit_test(test_movement_join_and_leave),
        cmocka_unit_test(test_weights_proportional),
        cmocka_unit_test(test_equal_weights_are_scale_free),
        cmocka_unit_test(test_addresses_do_not_move_blocks),
        cmocka_unit_test(test_host_names_are_kept),
        cmocka_unit_test(test_invalid_member_lists),
        cmocka_unit_test(test_accessors_and_null_destroy),
        cmocka_unit_test(test_pinned_placements),
        cmocka_unit_test(test_matches_documented_definition),
        cmocka_unit_test(test_wide_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
