/* SPDX-License-Identifier: Apache-2.0
 *
 * test_dlist.c: the intrusive list (base/dlist.h): pushing at both ends,
 * walking in order, removing the first, a middle and the last node (and the
 * only one), removing while walking, counts, and finding the struct back
 * from its node.
 */
#include "dlist.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

typedef struct item {
    int value;
    dlist_node link;
} item;

/* The values in list order into out; returns how many. */
static size_t walk(const dlist *l, int *out, size_t cap)
{
    size_t k = 0;
    for (dlist_node *i = dlist_first(l); i && k < cap; i = dlist_next(l, i))
        out[k++] = DLIST_ENTRY(i, item, link)->value;
    return k;
}

static void test_push_walk_remove(void **state)
{
    (void)state;
    dlist l;
    dlist_init(&l);
    assert_true(dlist_empty(&l));
    assert_null(dlist_first(&l));
    item it[5];
    for (int i = 0; i < 5; i++)
        it[i].value = i;
    dlist_push_back(&l, &it[2].link);
    dlist_push_front(&l, &it[1].link);
    dlist_push_back(&l, &it[3].link);
    dlist_push_front(&l, &it[0].link);
    dlist_push_back(&l, &it[4].link);
    int v[8];
    assert_int_equal(walk(&l, v, 8), 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(v[i], i);
    assert_int_equal(l.count, 5);

    dlist_remove(&l, &it[0].link); /* first */
    dlist_remove(&l, &it[2].link); /* middle */
    dlist_remove(&l, &it[4].link); /* last */
    assert_null(it[2].link.next);
    assert_int_equal(walk(&l, v, 8), 2);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 3);
    assert_int_equal(l.count, 2);
    dlist_remove(&l, &it[1].link);
    dlist_remove(&l, &it[3].link); /* the only one */
    assert_true(dlist_empty(&l));
    assert_int_equal(l.count, 0);
}

static void test_remove_while_walking(void **state)
{
    (void)state;
    dlist l;
    dlist_init(&l);
    item it[6];
    for (int i = 0; i < 6; i++) {
        it[i].value = i;
        dlist_push_back(&l, &it[i].link);
    }
    /* drop the even ones, saving the next node before each removal */
    for (dlist_node *i = dlist_first(&l), *nx; i; i = nx) {
        nx = dlist_next(&l, i);
        if (DLIST_ENTRY(i, item, link)->value % 2 == 0)
            dlist_remove(&l, i);
    }
    int v[8];
    assert_int_equal(walk(&l, v, 8), 3);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 3);
    assert_int_equal(v[2], 5);
    assert_ptr_equal(DLIST_ENTRY(&it[3].link, item, link), &it[3]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_walk_remove),
        cmocka_unit_test(test_remove_while_walking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
