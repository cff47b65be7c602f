/* SPDX-License-Identifier: Apache-2.0
 *
 * rc_arena_test.c: libringcache's page buffers (rc_int.h, rc__arena_*): the
 * mapping is advised for huge pages only when asked (the kernel's VmFlags for
 * it in /proc/self/smaps say `hg`, and `nh` otherwise), slots come out in
 * order, a freed slot is the next one handed out, and anything not a slot
 * comes from the heap.
 */
#include "rc_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define SLOT (64u * 1024)

/* The VmFlags line of the mapping that holds p, into flags: true if found. */
static bool vm_flags_of(const void *p, char *flags, size_t cap)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return false;
    char line[512];
    bool in = false, found = false;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a >= lo && a < hi;
        } else if (in && !strncmp(line, "VmFlags:", 8)) {
            snprintf(flags, cap, "%s", line + 8);
            found = true;
            break;
        }
    }
    fclose(f);
    return found;
}

static bool has_flag(const char *flags, const char *f)
{
    char pad[600];
    snprintf(pad, sizeof(pad), " %s ", flags);
    pad[strcspn(pad, "\n")] = ' ';
    char want[8];
    snprintf(want, sizeof(want), " %s ", f);
    return strstr(pad, want) != NULL;
}

static void check_advice(bool huge)
{
    rc_arena a;
    rc__arena_init(&a, 64 * SLOT, SLOT, false, huge);
    assert_non_null(a.map);
    void *p = rc__arena_alloc(&a, 4096, SLOT);
    assert_ptr_equal(p, a.start);
    char flags[512];
    assert_true(vm_flags_of(p, flags, sizeof(flags)));
    assert_int_equal(has_flag(flags, "hg"), huge);
    assert_int_equal(has_flag(flags, "nh"), !huge);
    rc__arena_free(&a, p, SLOT);
    rc__arena_deinit(&a);
}

static void test_no_huge_pages_unless_asked(void **state)
{
    (void)state;
    check_advice(false);
    check_advice(true);
}

static void test_slots(void **state)
{
    (void)state;
    rc_arena a;
    rc__arena_init(&a, 4 * SLOT, SLOT, true, false);
    uint8_t *s0 = rc__arena_alloc(&a, 4096, SLOT), *s1 = rc__arena_alloc(&a, 4096, SLOT);
    assert_ptr_equal(s0, a.start);
    assert_ptr_equal(s1, a.start + SLOT);
    memset(s1, 0xab, SLOT);
    rc__arena_free(&a, s0, SLOT);
    assert_ptr_equal(rc__arena_alloc(&a, 4096, SLOT), s0); /* the freed slot first */
    void *other = rc__arena_alloc(&a, 64, 100);            /* not a slot: the heap */
    assert_non_null(other);
    assert_true((uint8_t *)other < a.start || (uint8_t *)other >= a.start + 4 * SLOT);
    rc__arena_free(&a, other, 100);
    rc__arena_deinit(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_huge_pages_unless_asked),
        cmocka_unit_test(test_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
