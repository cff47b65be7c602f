/* SPDX-License-Identifier: Apache-2.0
 *
 * test_readfile.c: a whole small file (base/readfile.h): its bytes and a NUL
 * after them, an empty file, a missing one and one over the limit refused
 * with sentences that name the file and the fix, the outputs untouched then.
 */
#include "readfile.h"

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

static char g_dir[] = "/tmp/test_readfile_XXXXXX";

static void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_reads(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/a.conf", g_dir);
    write_file(path, "x = 1\0y", 7);
    char *buf = NULL;
    size_t len = 0;
    char err[256] = "";
    assert_int_equal(
        readfile_all(path, 7, "config file", "fix --config", &buf, &len, err, sizeof err), 0);
    assert_int_equal(len, 7);
    assert_memory_equal(buf, "x = 1\0y", 8);
    assert_string_equal(err, "");
    free(buf);

    snprintf(path, sizeof path, "%s/empty", g_dir);
    write_file(path, "", 0);
    buf = NULL;
    assert_int_equal(readfile_all(path, 16, "member file", "check it", &buf, &len, NULL, 0), 0);
    assert_int_equal(len, 0);
    assert_string_equal(buf, "");
    free(buf);
}

static void test_refuses(void **state)
{
    (void)state;
    char path[128], want[256], err[256];
    char *buf = (char *)"keep";
    size_t len = 99;
    snprintf(path, sizeof path, "%s/missing", g_dir);
    assert_int_equal(readfile_all(path, 16, "tenants file", "fix the path given to --tenants", &buf,
                                  &len, err, sizeof err),
                     -ENOENT);
    snprintf(want, sizeof want,
             "cannot open tenants file %s: No such file or directory (fix the path given to "
             "--tenants)",
             path);
    assert_string_equal(err, want);
    assert_string_equal(buf, "keep");
    assert_int_equal(len, 99);

    snprintf(path, sizeof path, "%s/big", g_dir);
    write_file(path, "12345678", 8);
    assert_int_equal(
        readfile_all(path, 7, "users file", "check --users", &buf, &len, err, sizeof err), -EFBIG);
    snprintf(want, sizeof want, "users file %s is larger than 7 bytes; is it the right file?",
             path);
    assert_string_equal(err, want);
    assert_string_equal(buf, "keep");
    assert_int_equal(len, 99);

    assert_int_equal(
        readfile_all(g_dir, 64, "config file", "give a file", &buf, &len, err, sizeof err),
        -EISDIR);
    snprintf(want, sizeof want, "cannot read config file %s: Is a directory (give a file)", g_dir);
    assert_string_equal(err, want);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    const char *names[] = {"a.conf", "empty", "big"};
    char path[128];
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    return rmdir(g_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads),
        cmocka_unit_test(test_refuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
