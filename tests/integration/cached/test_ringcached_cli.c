/* SPDX-License-Identifier: Apache-2.0
 *
 * test_ringcached_cli.c: ringcached's command line as an operator meets it:
 * --help lists every option with its default; a port in use, a data folder
 * that does not exist, an unknown key (in a flag and in a config file), a
 * missing S3 endpoint and a half TLS setting each stop it with exit status
 * non-zero and one sentence that names the thing and the fix; a config file
 * and flags combine, and /config shows the effective values with secrets
 * redacted; --version says the version `ringcache --version` says, and
 * /metrics has the build and the process (CPU, memory, descriptors, start
 * time, uptime) with their types and plausible values.
 */
#include "harness.h"

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

static h_env *env;
static char bin[1024];

typedef h_run_result run_result;

/* Runs ringcached with args (NULL-terminated) and waits for it (it must exit). */
static void run(run_result *r, const char *const *args)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    const char *const set[] = {"AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", NULL};
    assert_int_equal(h_run(env, r, argv, set), 0);
}

static int setup(void **state)
{
    (void)state;
    if (h_env_create(&env, "test_ringcached_cli") < 0)
        return -1;
    if (h_build_path(bin, sizeof(bin), H_RINGCACHED) < 0)
        h_skip("ringcached is not built");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    return 0;
}

static void test_help(void **state)
{
    (void)state;
    run_result r;
    run(&r, (const char *[]){"--help", NULL});
    assert_int_equal(r.status, 0);
    const char *keys[] = {"--data-dir",  "--ssd-capacity", "--ram-capacity", "--block-size",
                          "--listen",    "--port",         "--admin-port",   "--s3-endpoint",
                          "--s3-region", "--members",      "--tenants",      "--tls-cert",
                          "--config",    "--port-file"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (!strstr(r.out, keys[i]))
            fprintf(stderr, "--help does not list %s\n", keys[i]);
        assert_non_null(strstr(r.out, keys[i]));
    }
    assert_non_null(strstr(r.out, "default: 1MiB"));
}

static void test_errors_name_the_fix(void **state)
{
    (void)state;
    run_result r;
    char data[600];
    h_env_path(env, data, sizeof(data), "data");
    mkdir(data, 0755);

    run(&r, (const char *[]){"--data-dir", data, "--bogus-key", "1", NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "bogus-key"));

    run(&r, (const char *[]){"--data-dir", data, "--listen", "127.0.0.1", "--port", "0",
                             "--admin-port", "0", NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "--s3-endpoint"));

    run(&r, (const char *[]){"--data-dir", "/nonexistent/ringcache", "--s3-endpoint",
                             "http://127.0.0.1:1", "--port", "0", "--admin-port", "0", NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "/nonexistent/ringcache"));

    /* a port in use */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 1), 0);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    char port[16];
    snprintf(port, sizeof(port), "%d", ntohs(sa.sin_port));
    run(&r,
        (const char *[]){"--data-dir", data, "--s3-endpoint", "http://127.0.0.1:1", "--listen",
                         "127.0.0.1", "--port", port, "--admin-listen", "127.0.0.1", "--admin-port",
                         "0", "--ssd-capacity", "256MiB", "--ram-capacity", "0", NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "in use"));
    assert_non_null(strstr(r.err, "--port"));
    close(fd);

    run(&r, (const char *[]){"--data-dir", data, "--s3-endpoint", "http://127.0.0.1:1",
                             "--tls-cert", "/x.pem", "--port", "0", "--admin-port", "0",
                             "--ssd-capacity", "256MiB", "--ram-capacity", "0", NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "--tls-key"));

    run(&r, (const char *[]){"--data-dir", data, "--s3-endpoint", "http://127.0.0.1:1",
                             "--peer-token-file", "/nonexistent/token", NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "/nonexistent/token"));

    /* an unknown key in a config file names the file and the line */
    char conf[600];
    h_env_path(env, conf, sizeof(conf), "bad.conf");
    FILE *f = fopen(conf, "w");
    fprintf(f, "# a comment\nblock-size = 1MiB\nssd-capacty = 1GiB\n");
    fclose(f);
    run(&r, (const char *[]){"--config", conf, "--data-dir", data, NULL});
    assert_int_not_equal(r.status, 0);
    assert_non_null(strstr(r.err, "bad.conf"));
    assert_non_null(strstr(r.err, ":3"));
    assert_non_null(strstr(r.err, "ssd-capacity")); /* did you mean */
}

/* GET path from the admin port a node wrote to port_file: 200 into resp; the
 * URL is left in url (for more requests). */
static void admin_get(const char *port_file, const char *path, char *url, size_t cap,
                      h_http_resp *resp)
{
    int port = 0;
    FILE *f = fopen(port_file, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &port), 1);
    fclose(f);
    snprintf(url, cap, "http://127.0.0.1:%d%s", port, path);
    memset(resp, 0, sizeof(*resp));
    assert_int_equal(h_http_get(url, resp), 200);
}

static void test_config_file_and_effective_config(void **state)
{
    (void)state;
    char data[600], conf[600], pf[600], af[600];
    h_env_path(env, data, sizeof(data), "data2");
    mkdir(data, 0755);
    h_env_path(env, conf, sizeof(conf), "good.conf");
    h_env_path(env, pf, sizeof(pf), "good.port");
    h_env_path(env, af, sizeof(af), "good.admin");
    FILE *f = fopen(conf, "w");
    fprintf(f, "listen = 127.0.0.1\nadmin-listen = 127.0.0.1\nport = 0\nadmin-port = 0\n"
               "ssd-capacity = 256MiB\nram-capacity = 32MiB\ns3-endpoint = http://127.0.0.1:1\n"
               "s3-secret-key = very-secret-value\nthreads = 1\n");
    fclose(f);
    const char *argv[] = {bin, "--config",          conf, "--data-dir",   data,     "--port-file",
                          pf,  "--admin-port-file", af,   "--chunk-size", "128KiB", NULL};
    h_proc *p;
    assert_int_equal(h_proc_start(env, &p, "good", (char *const *)argv, NULL, pf, 0), 0);
    char url[128];
    h_http_resp resp;
    admin_get(af, "/config", url, sizeof(url), &resp);
    assert_non_null(strstr(resp.body, "ram-capacity = 32MiB")); /* from the file */
    assert_non_null(strstr(resp.body, "chunk-size = 128KiB"));  /* from a flag */
    assert_non_null(strstr(resp.body, "s3-secret-key = <redacted>"));
    assert_null(strstr(resp.body, "very-secret-value"));
    h_http_resp_deinit(&resp);
    admin_get(af, "/readyz", url, sizeof(url), &resp);
    h_http_resp_deinit(&resp);
    assert_int_equal(h_proc_stop(p, 15000), 0); /* SIGTERM: drained, exit 0 */
}

/* "ringcache 0.1.0\n" -> "0.1.0" */
static void version_word(const char *out, const char *program, char *word, size_t cap)
{
    size_t pl = strlen(program);
    assert_int_equal(strncmp(out, program, pl), 0);
    assert_int_equal(out[pl], ' ');
    snprintf(word, cap, "%.*s", (int)strcspn(out + pl + 1, "\n"), out + pl + 1);
    assert_true(strlen(word) > 0);
}

static void test_version(void **state)
{
    (void)state;
    run_result r;
    run(&r, (const char *[]){"--version", NULL});
    assert_int_equal(r.status, 0);
    char node_v[64], cli_v[64], cli[1024];
    version_word(r.out, "ringcached", node_v, sizeof(node_v));
    if (h_build_path(cli, sizeof(cli), H_RINGCACHE_CLI) < 0)
        h_skip("the ringcache CLI is not built");
    const char *argv[] = {cli, "--version", NULL};
    assert_int_equal(h_run(env, &r, argv, NULL), 0);
    assert_int_equal(r.status, 0);
    version_word(r.out, "ringcache", cli_v, sizeof(cli_v));
    assert_string_equal(node_v, cli_v);
    /* --help shows it */
    run(&r, (const char *[]){"--help", NULL});
    assert_non_null(strstr(r.out, "--version"));
}

/* The value of the sample `name` (no labels) or `name{` (labels given as
 * the start of the braces' text), after checking `# TYPE name type`. */
static double sample(const char *text, const char *name, const char *labels, const char *type)
{
    char want[256];
    snprintf(want, sizeof(want), "\n# TYPE %s %s\n", name, type);
    if (!strstr(text, want))
        fprintf(stderr, "no '%s' in /metrics\n", want + 1);
    assert_non_null(strstr(text, want));
    if (labels)
        snprintf(want, sizeof(want), "\n%s{%s", name, labels);
    else
        snprintf(want, sizeof(want), "\n%s ", name);
    const char *p = strstr(text, want);
    if (!p)
        fprintf(stderr, "no sample '%s' in /metrics\n", want + 1);
    assert_non_null(p);
    p = strchr(labels ? strchr(p + 1, '}') : p + 1, ' ');
    char *end;
    double v = strtod(p + 1, &end);
    assert_true(end > p + 1 && *end == '\n');
    return v;
}

static void test_build_and_process_metrics(void **state)
{
    (void)state;
    time_t before = time(NULL);
    h_node_opts o = {.name = "metrics",
                     .s3_endpoint = "http://127.0.0.1:1",
                     .ssd = "256MiB",
                     .ram = "0",
                     .threads = 1};
    h_node n;
    assert_int_equal(h_node_start(env, &n, &o), 0);
    h_proc *p = n.proc;
    char af[600];
    h_env_path(env, af, sizeof(af), "metrics.admin-port"); /* written by the node */
    char url[128];
    h_http_resp resp;
    admin_get(af, "/metrics", url, sizeof(url), &resp);
    time_t after = time(NULL);
    const char *t = resp.body;

    run_result r;
    run(&r, (const char *[]){"--version", NULL});
    char v[64], lab[96];
    version_word(r.out, "ringcached", v, sizeof(v));
    snprintf(lab, sizeof(lab), "version=\"%s\",", v);
    assert_true(sample(t, "ringcached_build_info", lab, "gauge") == 1.0);

    double cpu = sample(t, "process_cpu_seconds_total", NULL, "counter");
    assert_true(cpu >= 0.0 && cpu < 600.0);
    double rss = sample(t, "process_resident_memory_bytes", NULL, "gauge");
    assert_true(rss > 1024.0 * 1024.0 && rss < 64.0 * 1024 * 1024 * 1024);
    double fds = sample(t, "process_open_fds", NULL, "gauge");
    assert_true(fds >= 4.0); /* stdin/out/err, the listeners, the store's files */
    double max_fds = sample(t, "process_max_fds", NULL, "gauge");
    assert_true(max_fds >= fds);
    double start = sample(t, "process_start_time_seconds", NULL, "gauge");
    assert_true(start >= (double)before - 60.0 && start <= (double)after + 1.0);
    double up = sample(t, "ringcached_uptime_seconds", NULL, "gauge");
    assert_true(up >= 0.0 && up <= (double)(after - before) + 60.0);
    h_http_resp_deinit(&resp);

    /* CPU time is a counter: later it is not lower */
    assert_int_equal(h_http_get(url, &resp), 200);
    assert_true(sample(resp.body, "process_cpu_seconds_total", NULL, "counter") >= cpu);
    h_http_resp_deinit(&resp);
    assert_int_equal(h_proc_stop(p, 15000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_errors_name_the_fix),
        cmocka_unit_test(test_config_file_and_effective_config),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_build_and_process_metrics),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
