/* SPDX-License-Identifier: Apache-2.0
 *
 * test_cli_s3.c: the `ringcache` CLI's S3 commands as a user types them, against
 * a real s3rver, configured only through the AWS environment: put (single and
 * multipart), ls with a glob, head, get to a file and to stdout, --range, rm;
 * and the failures: a missing key (exit 1, one line naming it), bad usage
 * (exit 2), --help on each command (exit 0).
 */
#include "s3_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

static h_env *env;
static h_s3 *s3;
static char cli[4096];

typedef h_run_result run_result;

/* Runs the CLI with args (NULL-terminated, without the program) against the
 * test's S3 server with its credentials; captures stdout and stderr. */
static void run(run_result *r, const char *const *args)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = cli;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    char ep[300];
    snprintf(ep, sizeof(ep), "AWS_ENDPOINT_URL=%s", h_s3_endpoint(s3));
    const char *const set[] = {"AWS_PROFILE",
                               "AWS_ACCESS_KEY_ID=S3RVER",
                               "AWS_SECRET_ACCESS_KEY=S3RVER",
                               "AWS_REGION=us-east-1",
                               ep,
                               NULL};
    assert_int_equal(h_run(env, r, argv, set), 0);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_cli_s3") < 0)
        return -1;
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        h_skip("the ringcache CLI is not built");
    s3 = t_start_s3(env, 3);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void test_put_ls_head_get_rm(void **state)
{
    (void)state;
    run_result r;
    char small[4096], big[4096], out[4096];
    h_env_path(env, small, sizeof(small), "small.txt");
    h_env_path(env, big, sizeof(big), "big.bin");
    h_env_path(env, out, sizeof(out), "out.bin");
    write_file(small, "hello, ringcache\n", 17);
    size_t bsize = 13u << 20;
    unsigned char *bdata = t_alloc_data(bsize, 11);
    write_file(big, bdata, bsize);

    run(&r, (const char *[]){"put", small, "s3://ringcache-test/cli/a/small.txt", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "etag="));
    run(&r, (const char *[]){"put", big, "s3://ringcache-test/cli/b/big.bin", "--part-size", "5MiB",
                             NULL});
    if (r.status)
        fprintf(stderr, "%s", r.err);
    assert_int_equal(r.status, 0);

    run(&r, (const char *[]){"ls", "s3://ringcache-test/cli/", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 2);
    run(&r, (const char *[]){"ls", "s3://ringcache-test/cli/*/*.bin", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(count_lines(r.out), 1);
    assert_non_null(strstr(r.out, "s3://ringcache-test/cli/b/big.bin"));
    assert_non_null(strstr(r.out, "13631488"));

    run(&r, (const char *[]){"head", "s3://ringcache-test/cli/b/big.bin", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "size: 13631488"));

    run(&r, (const char *[]){"get", "s3://ringcache-test/cli/b/big.bin", "-o", out, NULL});
    assert_int_equal(r.status, 0);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_size, (off_t)bsize);
    unsigned char *back = malloc(bsize);
    FILE *f = fopen(out, "rb");
    assert_int_equal(fread(back, 1, bsize, f), bsize);
    fclose(f);
    assert_memory_equal(back, bdata, bsize);

    run(&r,
        (const char *[]){"get", "s3://ringcache-test/cli/b/big.bin", "--range", "1000-1999", NULL});
    assert_int_equal(r.status, 0);
    /* stdout captured into a file: compare the 1000 bytes */
    f = fopen(r.out_path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(back, 1, 2000, f), 1000);
    fclose(f);
    assert_memory_equal(back, bdata + 1000, 1000);

    run(&r, (const char *[]){"get", "s3://ringcache-test/cli/a/small.txt", NULL});
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "hello, ringcache\n");

    run(&r, (const char *[]){"rm", "s3://ringcache-test/cli/a/small.txt", NULL});
    assert_int_equal(r.status, 0);
    run(&r, (const char *[]){"head", "s3://ringcache-test/cli/a/small.txt", NULL});
    assert_int_equal(r.status, 1);
    free(back);
    free(bdata);
}

/* -o onto something that is not a regular file (a FIFO here, /dev/null for
 * users) writes into it and never replaces it with a file */
static void test_get_into_a_fifo(void **state)
{
    (void)state;
    char fifo[4096], sink[4096], src[4096];
    h_env_path(env, fifo, sizeof(fifo), "out.fifo");
    h_env_path(env, sink, sizeof(sink), "fifo.copy");
    h_env_path(env, src, sizeof(src), "fifo-src.txt");
    write_file(src, "through a pipe\n", 15);
    run_result r;
    run(&r, (const char *[]){"put", src, "s3://ringcache-test/cli/fifo.txt", NULL});
    assert_int_equal(r.status, 0);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* the reader end: copy the FIFO into a file */
        int in = open(fifo, O_RDONLY), out = open(sink, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char b[256];
        ssize_t k;
        while ((k = read(in, b, sizeof(b))) > 0)
            if (write(out, b, (size_t)k) != k)
                _exit(1);
        _exit(0);
    }
    run(&r, (const char *[]){"get", "s3://ringcache-test/cli/fifo.txt", "-o", fifo, NULL});
    int st;
    waitpid(pid, &st, 0);
    assert_int_equal(r.status, 0);
    struct stat sb;
    assert_int_equal(stat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode)); /* still a FIFO, not replaced by a file */
    char got[64];
    h_read_text(sink, got, sizeof(got));
    assert_string_equal(got, "through a pipe\n");
}

static void test_errors_and_help(void **state)
{
    (void)state;
    run_result r;
    char out[4096];
    h_env_path(env, out, sizeof(out), "never.bin");
    run(&r, (const char *[]){"get", "s3://ringcache-test/no/such.bin", "-o", out, NULL});
    assert_int_equal(r.status, 1);
    assert_int_equal(count_lines(r.err), 1);
    assert_non_null(strstr(r.err, "no/such.bin"));
    assert_non_null(strstr(r.err, "no such key"));
    struct stat st;
    assert_int_not_equal(stat(out, &st), 0); /* nothing left behind */
    char part[4200];
    snprintf(part, sizeof(part), "%s.part", out);
    assert_int_not_equal(stat(part, &st), 0);

    run(&r, (const char *[]){"get", "not-a-url", NULL});
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "s3://bucket/key"));
    run(&r, (const char *[]){"get", "s3://ringcache-test/x", "--range", "-100", NULL});
    assert_int_equal(r.status, 2);
    run(&r, (const char *[]){"frobnicate", NULL});
    assert_int_equal(r.status, 2);
    run(&r, (const char *[]){"ls", "s3://ringcache-test/", "--bogus", NULL});
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "--bogus"));

    const char *cmds[] = {"ls", "head", "get", "put", "rm"};
    for (size_t i = 0; i < 5; i++) {
        run(&r, (const char *[]){cmds[i], "--help", NULL});
        assert_int_equal(r.status, 0);
        assert_non_null(strstr(r.out, "usage: ringcache"));
        assert_non_null(strstr(r.out, "--endpoint"));
    }
    run(&r, (const char *[]){"--help", NULL});
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "Commands:"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_ls_head_get_rm),
        cmocka_unit_test(test_get_into_a_fifo),
        cmocka_unit_test(test_errors_and_help),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
