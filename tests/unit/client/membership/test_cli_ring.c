/* SPDX-License-Identifier: Apache-2.0
 *
 * `ringcache ring` (client/cli/cmd_ring.c): its output for a static member
 * list agrees with ring_lookup() on the same list, --hex hashes the decoded
 * bytes, and bad command lines exit 2 with a message. stdout is captured in a
 * temporary file.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_ring.h"
#include "membership.h"

#define MEMBERS "ringcache-0=10.0.0.1:7070,ringcache-1=10.0.0.2:7070,ringcache-2=10.0.0.3:7070"

/* Runs cli_ring_main with stdout redirected; returns its exit code. */
static int run(char *out, size_t cap, int argc, char **argv)
{
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    dup2(fileno(tmp), STDOUT_FILENO);
    int rc = cli_ring_main(argc, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, cap - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    return rc;
}

static void test_owners_match_ring(void **state)
{
    (void)state;
    char *argv[] = {"ring", "--members", MEMBERS, "--owners", "2", "bucket/key/0", "x"};
    char out[4096];
    assert_int_equal(run(out, sizeof out, 7, argv), 0);

    struct membership_list l = {0};
    assert_int_equal(membership_parse_list(MEMBERS, strlen(MEMBERS), 0, &l, NULL, 0), 0);
    struct ring *r = NULL;
    assert_int_equal(ring_create(&r, l.members, l.n, NULL, NULL, 0), 0);
    char want[4096] = "";
    const char *keys[] = {"bucket/key/0", "x"};
    for (int k = 0; k < 2; k++) {
        const struct ring_member *o[2];
        assert_int_equal(ring_lookup(r, keys[k], strlen(keys[k]), o, 2), 2);
        size_t len = strlen(want);
        snprintf(want + len, sizeof want - len, "%s\t%s=%s %s=%s\n", keys[k], o[0]->id, o[0]->addr,
                 o[1]->id, o[1]->addr);
    }
    assert_string_equal(out, want);
    ring_destroy(&r);
    membership_list_deinit(&l);
}

static void test_hex_keys_and_shares(void **state)
{
    (void)state;
    /* "6869" is "hi": the same owners as the plain key "hi" */
    char *a[] = {"ring", "--members=" MEMBERS, "--hex", "6869"};
    char *b[] = {"ring", "--members", MEMBERS, "hi"};
    char out_a[1024], out_b[1024];
    assert_int_equal(run(out_a, sizeof out_a, 4, a), 0);
    assert_int_equal(run(out_b, sizeof out_b, 4, b), 0);
    assert_string_equal(strchr(out_a, '\t'), strchr(out_b, '\t'));

    char *s[] = {"ring", "--members", MEMBERS, "--shares"};
    char out[1024];
    assert_int_equal(run(out, sizeof out, 4, s), 0);
    double sum = 0;
    int lines = 0;
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        assert_int_equal(strncmp(line, "share\t", 6), 0);
        sum += strtod(strrchr(line, '\t') + 1, NULL);
        lines++;
    }
    assert_int_equal(lines, 3);
    assert_true(sum > 0.999 && sum < 1.001);
}

static void test_usage_errors(void **state)
{
    (void)state;
    char out[2048];
    char *help[] = {"ring", "--help"};
    assert_int_equal(run(out, sizeof out, 2, help), 0);
    assert_non_null(strstr(out, "usage: ringcache ring --members"));
    char *nomembers[] = {"ring", "key"};
    assert_int_equal(run(out, sizeof out, 2, nomembers), 2);
    char *nokeys[] = {"ring", "--members", MEMBERS};
    assert_int_equal(run(out, sizeof out, 3, nokeys), 2);
    char *badowners[] = {"ring", "--members", MEMBERS, "--owners", "0", "k"};
    assert_int_equal(run(out, sizeof out, 6, badowners), 2);
    char *badhex[] = {"ring", "--members", MEMBERS, "--hex", "xyz"};
    assert_int_equal(run(out, sizeof out, 5, badhex), 2);
    char *unknown[] = {"ring", "--frobnicate"};
    assert_int_equal(run(out, sizeof out, 2, unknown), 2);
    char *missing[] = {"ring", "--members"};
    assert_int_equal(run(out, sizeof out, 2, missing), 2);
    /* a malformed member list is a failure to read the members */
    char *bad[] = {"ring", "--members", "a=1.2.3.4:1,b=", "k"};
    assert_int_equal(run(out, sizeof out, 4, bad), 1);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owners_match_ring),
        cmocka_unit_test(test_hex_keys_and_shares),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
