/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests of the member-list parser (good and malformed input, each error
 * naming the member) and of the static and file membership sources (reload
 * installs a new ring, a bad or missing file keeps the last good ring).
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

#include "membership.h"

static struct membership_list parse_ok(const char *text, uint16_t port)
{
    struct membership_list l = {0};
    char why[256] = "";
    int rc = membership_parse_list(text, strlen(text), port, &l, why, sizeof why);
    if (rc != 0)
        fail_msg("parse of \"%s\" failed: %d %s", text, rc, why);
    return l;
}

static void parse_bad(const char *text, uint16_t port, const char *needle)
{
    struct membership_list l = {0};
    char why[256] = "";
    int rc = membership_parse_list(text, strlen(text), port, &l, why, sizeof why);
    if (rc != -EINVAL)
        fail_msg("parse of \"%s\" gave %d, want -EINVAL", text, rc);
    assert_null(l.members);
    if (strstr(why, needle) == NULL)
        fail_msg("error for \"%s\" is \"%s\", which does not mention \"%s\"", text, why, needle);
}

static void test_parse_ids_and_weights(void **state)
{
    (void)state;
    struct membership_list l = parse_ok("ringcache-0=10.0.0.1:7070,ringcache-1=10.0.0.2:7071,3,"
                                        "ringcache-2=[fd00::2]:7072",
                                        0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.members[0].id, "ringcache-0");
    assert_string_equal(l.members[0].addr, "10.0.0.1:7070");
    assert_int_equal(l.members[0].weight, 0);
    assert_string_equal(l.members[1].addr, "10.0.0.2:7071");
    assert_int_equal(l.members[1].weight, 3);
    assert_string_equal(l.members[2].id, "ringcache-2");
    assert_string_equal(l.members[2].addr, "[fd00::2]:7072");
    membership_list_deinit(&l);
    assert_null(l.members);
    membership_list_deinit(&l);
}

static void test_parse_plain_addresses_and_default_port(void **state)
{
    (void)state;
    struct membership_list l = parse_ok("  10.0.0.1:7070 cache-b.local\n"
                                        "# a comment, ignored\n"
                                        "[::1]  # trailing comment\n",
                                        9000);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.members[0].id, "10.0.0.1:7070");
    assert_string_equal(l.members[0].addr, "10.0.0.1:7070");
    assert_string_equal(l.members[1].addr, "cache-b.local:9000");
    assert_string_equal(l.members[2].addr, "[::1]:9000");
    membership_list_deinit(&l);
}

static void test_parse_malformed(void **state)
{
    (void)state;
    parse_bad("", 7070, "empty");
    parse_bad("  # only a comment\n", 7070, "empty");
    parse_bad("a=10.0.0.1:7070,,b=10.0.0.2:7070", 7070, "extra comma");
    parse_bad(",a=10.0.0.1:7070", 7070, "comma");
    parse_bad("a=10.0.0.1:7070,", 7070, "ends with a comma");
    parse_bad("a=10.0.0.1:7070,b=10.0.0.2", 0, "b=10.0.0.2");
    parse_bad("a=10.0.0.1:7070,b=10.0.0.2:", 7070, "b=10.0.0.2:");
    parse_bad("a=10.0.0.1:99999", 7070, "a=10.0.0.1:99999");
    parse_bad("a=10.0.0.1:0", 7070, "bad port");
    parse_bad("a=10.0.0.1:70x", 7070, "a=10.0.0.1:70x");
    parse_bad("=10.0.0.1:7070", 7070, "empty id");
    parse_bad("bad/id=10.0.0.1:7070", 7070, "bad/id");
    parse_bad("a=", 7070, "no address");
    parse_bad("a=:7070", 7070, "empty host");
    parse_bad("a=ho$t:7070", 7070, "ho$t");
    parse_bad("a=fd00::1:7070", 7070, "brackets");
    parse_bad("a=[fd00::1:7070", 7070, "closing");
    parse_bad("a=[fd00::zz]:7070", 7070, "IPv6");
    parse_bad("a=[fd00::1]x", 7070, "after its IPv6");
    parse_bad("5,a=10.0.0.1:7070", 7070, "before any member");
    parse_bad("a=10.0.0.1:7070,0", 7070, "weight 0");
    parse_bad("a=10.0.0.1:7070,1000001", 7070, "weight 1000001");
    parse_bad("a=10.0.0.1:7070,99999999999999999999999", 7070, "weight");
    parse_bad("a=10.0.0.1:7070,2,3", 7070, "second weight");
    parse_bad("twin=10.0.0.1:7070,other=10.0.0.3:1,twin=10.0.0.2:7070", 7070, "twin");
    parse_bad("10.0.0.1:7070 10.0.0.1:7070", 7070, "appears twice");
    char long_tok[700];
    memset(long_tok, 'a', sizeof long_tok - 1);
    long_tok[sizeof long_tok - 1] = '\0';
    parse_bad(long_tok, 7070, "characters long");
    /* control characters are shown as '?', never echoed raw */
    char why[256];
    struct membership_list l = {0};
    assert_int_equal(membership_parse_list("a=h\x01t:1", 7, 7070, &l, why, sizeof why), -EINVAL);
    assert_null(strchr(why, '\x01'));
    /* NULL why is allowed; text need not be NUL-terminated */
    assert_int_equal(membership_parse_list("a=,", 3, 7070, &l, NULL, 0), -EINVAL);
    char unterminated[4] = {'h', ':', '1', 'X'};
    assert_int_equal(membership_parse_list(unterminated, 3, 0, &l, NULL, 0), 0);
    assert_string_equal(l.members[0].addr, "h:1");
    membership_list_deinit(&l);
}

static void test_static_source(void **state)
{
    (void)state;
    struct membership *ms = NULL;
    char why[256] = "";
    assert_int_equal(membership_create(&ms, "ringcache-0=10.0.0.1:7070,ringcache-1=10.0.0.2:7070",
                                       NULL, why, sizeof why),
                     0);
    struct ring *r = membership_ring(ms);
    assert_non_null(r);
    assert_int_equal(ring_member_count(r), 2);
    assert_int_equal(membership_reload(ms), 0);
    struct membership_stats st;
    membership_stats(ms, &st);
    assert_int_equal(st.changes, 1);
    assert_int_equal(st.members, 2);
    ring_unref(&r);
    membership_destroy(&ms);
    assert_null(ms);
    membership_destroy(&ms);

    assert_int_equal(membership_create(&ms, "ok=1.2.3.4:1,bad=", NULL, why, sizeof why), -EINVAL);
    assert_null(ms);
    assert_non_null(strstr(why, "bad="));
    assert_int_equal(membership_create(&ms, "", NULL, why, sizeof why), -EINVAL);
    assert_int_equal(membership_create(&ms, "dns:x.example", NULL, why, sizeof why), -EINVAL);
    assert_non_null(strstr(why, "event loop"));
}

struct logbuf {
    char text[4096];
    int changes;
};

static void log_cb(void *arg, enum membership_level level, const char *line)
{
    struct logbuf *lb = arg;
    size_t l = strlen(lb->text);
    snprintf(lb->text + l, sizeof lb->text - l, "%d %s\n", (int)level, line);
}

static void change_cb(void *arg, struct ring *ring)
{
    struct logbuf *lb = arg;
    assert_non_null(ring);
    lb->changes++;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_file_source_reload(void **state)
{
    (void)state;
    char dir[] = "/tmp/ringcache-test-membership-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128], spec[140];
    snprintf(path, sizeof path, "%s/members", dir);
    snprintf(spec, sizeof spec, "file:%s", path);
    write_file(path, "# cache nodes\nringcache-0=10.0.0.1:7070\nringcache-1=10.0.0.2:7070\n");

    struct logbuf lb = {.text = ""};
    struct membership_options o = {.log = log_cb,
                                   .log_arg = &lb,
                                   .on_change = change_cb,
                                   .change_arg = &lb,
                                   .ring.table_bits = 12};
    struct membership *ms = NULL;
    char why[512] = "";
    assert_int_equal(membership_create(&ms, spec, &o, why, sizeof why), 0);
    assert_int_equal(lb.changes, 0); /* never from inside create */
    struct ring *first = membership_ring(ms);
    assert_int_equal(ring_member_count(first), 2);

    /* unchanged file: no new ring */
    assert_int_equal(membership_reload(ms), 0);
    assert_int_equal(lb.changes, 0);

    /* a member joins, one moves */
    write_file(path,
               "ringcache-0=10.0.0.1:7070 ringcache-1=10.0.0.9:7070 ringcache-2=10.0.0.3:7070,2\n");
    lb.text[0] = '\0';
    assert_int_equal(membership_reload(ms), 0);
    assert_int_equal(lb.changes, 1);
    assert_non_null(strstr(lb.text, "msg=\"member joined\""));
    assert_non_null(strstr(lb.text, "id=ringcache-2 addr=10.0.0.3:7070 weight=2"));
    assert_non_null(strstr(lb.text, "id=ringcache-1 addr=10.0.0.9:7070 old_addr=10.0.0.2:7070"));
    struct ring *second = membership_ring(ms);
    assert_int_equal(ring_member_count(second), 3);
    assert_int_equal(ring_member_count(first), 2); /* old reference still valid */

    /* malformed: error, last good ring kept, failure logged with the member */
    write_file(path, "ringcache-0=10.0.0.1:7070 ringcache-1=10.0.0.2:notaport\n");
    lb.text[0] = '\0';
    assert_int_equal(membership_reload(ms), -EINVAL);
    assert_non_null(strstr(lb.text, "keeping the last ring"));
    assert_non_null(strstr(lb.text, "notaport"));
    struct ring *still = membership_ring(ms);
    assert_ptr_equal(still, second);
    ring_unref(&still);

    /* empty file: refused, kept */
    write_file(path, "\n# nobody\n");
    assert_int_equal(membership_reload(ms), -EINVAL);
    /* missing file: kept */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(membership_reload(ms), -ENOENT);
    still = membership_ring(ms);
    assert_ptr_equal(still, second);
    ring_unref(&still);

    /* a member leaves */
    write_file(path, "ringcache-0=10.0.0.1:7070 ringcache-2=10.0.0.3:7070,2\n");
    lb.text[0] = '\0';
    assert_int_equal(membership_reload(ms), 0);
    assert_non_null(strstr(lb.text, "msg=\"member left\" "));
    assert_non_null(strstr(lb.text, "id=ringcache-1"));
    struct membership_stats st;
    membership_stats(ms, &st);
    assert_int_equal(st.changes, 3);
    assert_int_equal(st.rounds_failed, 3);
    assert_int_equal(st.members, 2);

    ring_unref(&first);
    ring_unref(&second);
    membership_destroy(&ms);
    unlink(path);

    /* a missing file at creation is an error naming it */
    assert_int_equal(membership_create(&ms, spec, &o, why, sizeof why), -ENOENT);
    assert_non_null(strstr(why, path));
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ids_and_weights),
        cmocka_unit_test(test_parse_plain_addresses_and_default_port),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_static_source),
        cmocka_unit_test(test_file_source_reload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
