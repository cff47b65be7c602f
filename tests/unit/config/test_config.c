/* SPDX-License-Identifier: Apache-2.0
 *
 * test_config.c: the table-driven option loader (cached/config.h): defaults,
 * every value type and its units and ranges, the file grammar (comments,
 * quotes, CRLF), flags in every spelling, precedence of file and flags, the
 * error messages (unknown keys with file:line and a suggestion, positional
 * words, missing values, required options, secrets never echoed), --help, and
 * the round trip cfg_format -> cfg_load_text.
 */
#include "config.h"

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

typedef struct conf {
    char data_dir[64];
    char token[32];
    int64_t port;
    int64_t block_size;
    int64_t timeout;
    int64_t offset;
    bool tls;
    bool verbose;
    char endpoint[128];
} conf;

#define F(field) offsetof(conf, field), sizeof(((conf *)0)->field)

static const cfg_opt opts[] = {
    {"data-dir", CFG_STR, "/var/cache/ringcache", "folder of the block store", F(data_dir), 0, 0,
     false, false},
    {"token", CFG_STR, NULL, "the secret token", F(token), 0, 0, true, false},
    {"port", CFG_INT, "7070", "listen port (0: any free port)", F(port), 0, 65535, false, false},
    {"block-size", CFG_SIZE, "1MiB", "block size", F(block_size), 4096, 64 << 20, false, false},
    {"fill-timeout", CFG_MS, "2s", "deadline of an S3 fill", F(timeout), 1, 3600000, false, false},
    {"offset", CFG_INT, "-5", "a signed number without range", F(offset), 0, 0, false, false},
    {"tls", CFG_BOOL, "false", "serve TLS", F(tls), 0, 0, false, false},
    {"verbose", CFG_BOOL, NULL, "log more", F(verbose), 0, 0, false, false},
    {"s3-endpoint", CFG_STR, NULL, "S3 endpoint URL", F(endpoint), 0, 0, false, true},
};
#define NOPTS (sizeof opts / sizeof opts[0])

/* argv from a NULL-terminated list, "ringcached" prepended. */
static int load(conf *c, char *err, size_t errlen, ...)
{
    char *argv[32] = {"ringcached"};
    int argc = 1;
    va_list ap;
    va_start(ap, errlen);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    memset(c, 0x5a, sizeof *c);
    return cfg_load(opts, NOPTS, c, argc, argv, err, errlen);
}

static char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/test_config_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_defaults(void **state)
{
    (void)state;
    conf c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "http://s3", NULL), 0);
    assert_string_equal(c.data_dir, "/var/cache/ringcache");
    assert_string_equal(c.token, "");
    assert_int_equal(c.port, 7070);
    assert_int_equal(c.block_size, 1 << 20);
    assert_int_equal(c.timeout, 2000);
    assert_int_equal(c.offset, -5);
    assert_false(c.tls);
    assert_false(c.verbose);
    assert_string_equal(c.endpoint, "http://s3");
}

static void test_flag_spellings(void **state)
{
    (void)state;
    conf c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint=http://x", "--port", "0",
                          "--block-size=64k", "--fill-timeout", "500ms", "--tls", "--verbose",
                          "false", "--data-dir", "-weird", NULL),
                     0);
    assert_int_equal(c.port, 0);
    assert_int_equal(c.block_size, 65536);
    assert_int_equal(c.timeout, 500);
    assert_true(c.tls);
    assert_false(c.verbose);
    assert_string_equal(c.data_dir, "-weird");

    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--tls", "--no-tls",
                          "--verbose=yes", "--port", "9", "--port", "10", NULL),
                     0);
    assert_false(c.tls);
    assert_true(c.verbose);
    assert_int_equal(c.port, 10); /* a later flag wins */
}

static void test_value_types(void **state)
{
    (void)state;
    static const struct {
        const char *flag, *value;
        int64_t want;
    } ok[] = {
        {"--block-size", "1MiB", 1 << 20}, {"--block-size", "1m", 1 << 20},
        {"--block-size", "2G", 0},         {"--block-size", "4096", 4096},
        {"--block-size", "8KB", 8192},     {"--block-size", "64MiB", 64 << 20},
        {"--block-size", "64Ki", 65536},   {"--fill-timeout", "2s", 2000},
        {"--fill-timeout", "1m", 60000},   {"--fill-timeout", "1h", 3600000},
        {"--fill-timeout", "250", 250},
    };
    char err[256];
    conf c;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int rc = load(&c, err, sizeof err, "--s3-endpoint", "e", ok[i].flag, ok[i].value, NULL);
        if (ok[i].want == 0) { /* 2G is above the block-size range */
            assert_int_equal(rc, -EINVAL);
            assert_non_null(strstr(err, "--block-size"));
            assert_non_null(strstr(err, "4KiB to 64MiB"));
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(strcmp(ok[i].flag, "--block-size") == 0 ? c.block_size : c.timeout,
                         ok[i].want);
    }

    static const char *const bad[][2] = {
        {"--port", "abc"},
        {"--port", "70000"},
        {"--port", "-1"},
        {"--port", "12x"},
        {"--port", ""},
        {"--block-size", "1.5M"},
        {"--block-size", "1MiBB"},
        {"--block-size", "-4096"},
        {"--fill-timeout", "2 s"},
        {"--fill-timeout", "0"},
        {"--fill-timeout", "99999999999999999999s"},
        {"--tls=maybe", NULL},
        {"--offset", "99999999999999999999"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = bad[i][1]
                     ? load(&c, err, sizeof err, "--s3-endpoint", "e", bad[i][0], bad[i][1], NULL)
                     : load(&c, err, sizeof err, "--s3-endpoint", "e", bad[i][0], NULL);
        assert_int_equal(rc, -EINVAL);
        assert_true(strlen(err) > 10);
    }
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--port", "abc", NULL),
                     -EINVAL);
    assert_string_equal(err, "--port: 'abc' is not an integer");
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--port", "70000", NULL),
                     -EINVAL);
    assert_string_equal(err, "--port: '70000' is out of range (use 0 to 65535)");
    /* sizes: bytesize.h's sentence, naming the value and the unit it does not know */
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--block-size", "10XB", NULL),
                     -EINVAL);
    assert_non_null(strstr(err, "--block-size: '10XB' is not a size: 'XB' is not a unit"));

    /* without a range, any int64 goes */
    assert_int_equal(
        load(&c, err, sizeof err, "--s3-endpoint", "e", "--offset", "-9223372036854775808", NULL),
        0);
    assert_int_equal(c.offset, INT64_MIN);
    /* a string longer than its buffer */
    char longv[100];
    memset(longv, 'a', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--data-dir", longv, NULL),
                     -EINVAL);
    assert_string_equal(err, "--data-dir: the value is 99 bytes long, more than the 63 allowed");
}

static void test_flag_errors(void **state)
{
    (void)state;
    conf c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "serve", NULL), -EINVAL);
    assert_non_null(strstr(err, "unexpected argument 'serve'"));
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--blok-size", "1m", NULL),
                     -EINVAL);
    assert_string_equal(err, "unknown option --blok-size (did you mean --block-size?)");
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--zzzzzzzz", NULL), -EINVAL);
    assert_string_equal(err, "unknown option --zzzzzzzz (see --help)");
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "-p", "1", NULL), -EINVAL);
    assert_non_null(strstr(err, "unknown option -p"));
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--port", NULL), -EINVAL);
    assert_string_equal(err, "--port needs a value (--port VALUE or --port=VALUE)");
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "--port", "1", NULL), -EINVAL);
    assert_non_null(strstr(err, "--s3-endpoint needs a value"));
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--no-tls=1", NULL), -EINVAL);
    assert_non_null(strstr(err, "--no-tls takes no value"));
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--no-port", NULL), -EINVAL);
    assert_non_null(strstr(err, "unknown option --no-port"));
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--", "x", NULL), -EINVAL);
    /* required */
    assert_int_equal(load(&c, err, sizeof err, NULL), -EINVAL);
    assert_string_equal(err, "s3-endpoint is required: set --s3-endpoint or `s3-endpoint = ...` "
                             "in the --config file");
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "", NULL), -EINVAL);
    /* err may be NULL */
    assert_int_equal(load(&c, NULL, 0, "bogus", NULL), -EINVAL);
}

static void test_secret_never_echoed(void **state)
{
    (void)state;
    static const cfg_opt sopts[] = {
        {"key", CFG_STR, NULL, "a secret", 0, 8, 0, 0, true, false},
        {"pin", CFG_INT, NULL, "a secret number", 8, 8, 0, 9999, true, false},
    };
    struct {
        char key[8];
        int64_t pin;
    } s;
    char *argv[] = {"x", "--pin", "123456789", NULL};
    char err[256];
    assert_int_equal(cfg_load(sopts, 2, &s, 3, argv, err, sizeof err), -EINVAL);
    assert_null(strstr(err, "123456789"));
    assert_non_null(strstr(err, "--pin: the value is out of range"));
    const char *text = "key = hunter2hunter2\n";
    assert_int_equal(cfg_load_text(sopts, 2, &s, text, strlen(text), "f", err, sizeof err),
                     -EINVAL);
    assert_null(strstr(err, "hunter2"));
}

static void test_help_wins(void **state)
{
    (void)state;
    conf c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--help", NULL), 1);
    assert_int_equal(load(&c, err, sizeof err, "bogus", "--port", "x", "-h", NULL), 1);
    assert_int_equal(load(&c, err, sizeof err, "--config", "/nonexistent/x", "--help", NULL), 1);
    /* a value that looks like -h belongs to its flag */
    assert_int_equal(load(&c, err, sizeof err, "--s3-endpoint", "e", "--data-dir", "-h", NULL), 0);
    assert_string_equal(c.data_dir, "-h");

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    cfg_help(opts, NOPTS, "ringcached [options]", f);
    fclose(f);
    assert_non_null(strstr(buf, "Usage: ringcached [options]\n"));
    assert_non_null(strstr(buf, "--block-size SIZE"));
    assert_non_null(strstr(buf, "block size (default: 1MiB) [4KiB..64MiB]"));
    assert_non_null(strstr(buf, "--[no-]tls"));
    assert_non_null(strstr(buf, "S3 endpoint URL (required)"));
    assert_non_null(strstr(buf, "the secret token (secret)"));
    assert_non_null(strstr(buf, "--config FILE"));
    /* every option is listed */
    for (size_t i = 0; i < NOPTS; i++)
        assert_non_null(strstr(buf, opts[i].name));
    free(buf);
}

static void test_file_and_precedence(void **state)
{
    (void)state;
    const char *text = "# ringcached test config\n"
                       "\n"
                       "   data-dir = /srv/cache   # trailing comment\r\n"
                       "block-size=4MiB\n"
                       "port = 9000\n"
                       "token = \"a # not a comment \\\" \\\\ \"\n"
                       "tls = on\n"
                       "s3-endpoint = http://a#b\n";
    char *path = write_tmp(text);
    conf c;
    char err[256];
    assert_int_equal(load(&c, err, sizeof err, "--port", "9001", "--config", path, NULL), 0);
    assert_string_equal(c.data_dir, "/srv/cache");
    assert_int_equal(c.block_size, 4 << 20);
    assert_int_equal(c.port, 9001); /* the flag wins, wherever it is */
    assert_string_equal(c.token, "a # not a comment \" \\ ");
    assert_true(c.tls);
    assert_string_equal(c.endpoint, "http://a#b");
    assert_int_equal(c.timeout, 2000); /* untouched: default */

    char eqflag[96];
    snprintf(eqflag, sizeof eqflag, "--config=%s", path);
    assert_int_equal(load(&c, err, sizeof err, eqflag, NULL), 0);
    assert_int_equal(c.port, 9000);
    assert_int_equal(load(&c, err, sizeof err, eqflag, "--config", path, NULL), -EINVAL);
    assert_non_null(strstr(err, "--config is given twice"));
    unlink(path);

    assert_int_equal(load(&c, err, sizeof err, "--config", "/nonexistent/ringcached.conf", NULL),
                     -ENOENT);
    assert_string_equal(err, "cannot open config file /nonexistent/ringcached.conf: No such file "
                             "or directory (fix the path given to --config)");
    assert_int_equal(load(&c, err, sizeof err, "--config", "/tmp", NULL), -EISDIR);
}

static void test_file_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"port = 1\nblok-size = 1m\n", "F:2: unknown key 'blok-size' (did you mean 'block-size'?)"},
        {"data_dir = /x\n", "F:1: unknown key 'data_dir' (did you mean 'data-dir'?)"},
        {"\n\nqqqqqqqqqq = 1\n", "F:3: unknown key 'qqqqqqqqqq' (see --help for the known keys)"},
        {"port 7070\n", "F:1: expected `key = value`"},
        {"= 7070\n", "F:1: expected `key = value`"},
        {"port = 1\nport = 2\n", "F:2: key 'port' is already set on line 1; keep one of the two"},
        {"token = \"abc\n", "F:1: the quoted value has no closing quote"},
        {"token = \"abc\" x\n", "F:1: text after the closing quote (start a comment with #)"},
        {"token = \"a\\qb\"\n",
         "F:1: unknown escape in a quoted value (use \\\" \\\\ \\n \\t or \\r)"},
        {"port = 80 80\n", "F:1: port: '80 80' is not an integer"},
        {"config = /etc/x\n",
         "F:1: `config` cannot be set inside a config file (pass --config once)"},
        {"tls = \n", "F:1: tls: '' is not a boolean (use true or false)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        conf c;
        memset(&c, 0, sizeof c);
        char err[256] = "";
        int rc = cfg_load_text(opts, NOPTS, &c, cases[i].text, strlen(cases[i].text), "F", err,
                               sizeof err);
        assert_int_equal(rc, -EINVAL);
        assert_string_equal(err, cases[i].want);
    }
    /* a NUL byte in the text */
    conf c;
    char err[256];
    assert_int_equal(cfg_load_text(opts, NOPTS, &c, "port = 1\n\0x", 11, "F", err, sizeof err),
                     -EINVAL);
    assert_string_equal(err, "F:2: the line contains a NUL byte (is this a text file?)");
    /* a file error names the file through cfg_load */
    char *path = write_tmp("port = 1\nbogus = 2\n");
    assert_int_equal(load(&c, err, sizeof err, "--config", path, NULL), -EINVAL);
    char want[128];
    snprintf(want, sizeof want, "config file %s:2: unknown key 'bogus'", path);
    assert_memory_equal(err, want, strlen(want));
    unlink(path);
}

static void test_format_roundtrip(void **state)
{
    (void)state;
    conf a, b;
    char err[256];
    assert_int_equal(load(&a, err, sizeof err, "--s3-endpoint", " spaced\tvalue # x\n ",
                          "--block-size", "3m", "--fill-timeout", "90s", "--offset", "-17",
                          "--data-dir", "", "--tls", NULL),
                     0);
    char buf[1024];
    int n = cfg_format(opts, NOPTS, &a, buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(buf));
    assert_non_null(strstr(buf, "block-size = 3MiB\n"));
    assert_non_null(strstr(buf, "fill-timeout = 90s\n"));
    assert_non_null(strstr(buf, "port = 7070\n"));
    assert_non_null(strstr(buf, "offset = -17\n"));
    assert_non_null(strstr(buf, "tls = true\n"));
    assert_non_null(strstr(buf, "token = \n")); /* an unset secret shows as unset */
    assert_non_null(strstr(buf, "s3-endpoint = \" spaced\\tvalue # x\\n \"\n"));

    memset(&b, 0, sizeof b);
    assert_int_equal(cfg_load_text(opts, NOPTS, &b, buf, (size_t)n, "formatted", err, sizeof err),
                     0);
    assert_string_equal(a.data_dir, b.data_dir);
    assert_string_equal(a.endpoint, b.endpoint);
    assert_int_equal(a.port, b.port);
    assert_int_equal(a.block_size, b.block_size);
    assert_int_equal(a.timeout, b.timeout);
    assert_int_equal(a.offset, b.offset);
    assert_int_equal(a.tls, b.tls);
    assert_int_equal(a.verbose, b.verbose);

    /* a set secret is redacted */
    assert_int_equal(
        load(&a, err, sizeof err, "--s3-endpoint", "e", "--token", "s3cr3t-value", NULL), 0);
    n = cfg_format(opts, NOPTS, &a, buf, sizeof buf);
    assert_true(n > 0);
    assert_null(strstr(buf, "s3cr3t"));
    assert_non_null(strstr(buf, "token = <redacted>\n"));

    /* too small: -ENOSPC, still a terminated string */
    char small[20];
    assert_int_equal(cfg_format(opts, NOPTS, &a, small, sizeof small), -ENOSPC);
    assert_true(strlen(small) < sizeof small);
    assert_int_equal(cfg_format(opts, NOPTS, &a, small, 0), -ENOSPC);
}

static void test_bad_tables(void **state)
{
    (void)state;
    struct {
        int64_t x;
        bool b;
    } s;
    char err[256];
    char *argv[] = {"x"};
    cfg_opt t1[] = {{"x", CFG_INT, "oops", "h", 0, 8, 0, 0, false, false}};
    assert_int_equal(cfg_load(t1, 1, &s, 1, argv, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "the default of option x is invalid"));
    cfg_opt t2[] = {{"x", CFG_INT, NULL, "h", 0, 4, 0, 0, false, false}};
    assert_int_equal(cfg_load(t2, 1, &s, 1, argv, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "not an int64_t"));
    cfg_opt t3[] = {{"config", CFG_BOOL, NULL, "h", 8, 1, 0, 0, false, false}};
    assert_int_equal(cfg_load(t3, 1, &s, 1, argv, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "reserved"));
    cfg_opt t4[] = {{"x", CFG_INT, NULL, "h", 0, 8, 0, 0, false, false},
                    {"x", CFG_INT, NULL, "h", 0, 8, 0, 0, false, false}};
    assert_int_equal(cfg_load(t4, 2, &s, 1, argv, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "appears twice"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_flag_spellings),
        cmocka_unit_test(test_value_types),
        cmocka_unit_test(test_flag_errors),
        cmocka_unit_test(test_secret_never_echoed),
        cmocka_unit_test(test_help_wins),
        cmocka_unit_test(test_file_and_precedence),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_format_roundtrip),
        cmocka_unit_test(test_bad_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
