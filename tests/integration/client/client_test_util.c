/* SPDX-License-Identifier: Apache-2.0
 *
 * client_test_util.c: shared set-up of the libringcache integration tests
 * (see the header).
 */
#include "client_test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static int t_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        fprintf(stderr, "cannot find a free port: %s\n", strerror(errno));
        exit(1);
    }
    close(fd);
    return ntohs(a.sin_port);
}

void t_cluster_start(t_cluster *tc, const char *name, const char *const *node_extra)
{
    memset(tc, 0, sizeof(*tc));
    if (h_env_create(&tc->env, name) < 0) {
        fprintf(stderr, "cannot create the test folder: %s\n", h_last_error());
        exit(1);
    }
    tc->s3 = t_start_s3(tc->env, 3);
    int rc = h_s3model_start(tc->env, &tc->model, h_s3_port(tc->s3), 0, 0);
    if (rc < 0) {
        if (rc == -ENOENT)
            h_skip("the S3 model is not built");
        fprintf(stderr, "cannot start the S3 model: %s\n", h_last_error());
        exit(1);
    }
    t_s3_config(&tc->direct, h_s3_endpoint(tc->s3), NULL, NULL);
    t_s3_config(&tc->via_model, h_s3model_endpoint(tc->model), NULL, NULL);
    /* the nodes must know each other for write-through placement, so their
     * ports are picked before they start (bound and released here). Another
     * test running at the same time may take one of them meanwhile: the node
     * then exits, and the whole set is started again on new ports. */
    for (int attempt = 1;; attempt++) {
        int ports[T_NODES];
        size_t off = 0;
        for (int i = 0; i < T_NODES; i++) {
            ports[i] = t_free_port();
            off += (size_t)snprintf(tc->members + off, sizeof(tc->members) - off,
                                    "%sn%d=127.0.0.1:%d", i ? "," : "", i, ports[i]);
        }
        int err = 0, i;
        for (i = 0; i < T_NODES && err == 0; i++) {
            char nm[16], port[16];
            snprintf(nm, sizeof(nm), "n%d", i);
            snprintf(port, sizeof(port), "%d", ports[i]);
            const char *extra[32] = {"--port",         port,  "--members", tc->members,
                                     "--ssd-capacity", "3GiB"};
            int k = 6;
            for (int j = 0; node_extra && node_extra[j] && k < 31; j++)
                extra[k++] = node_extra[j];
            extra[k] = NULL;
            err =
                t_node_try_start(tc->env, &tc->nodes[i], nm, h_s3model_endpoint(tc->model), extra);
        }
        if (err == 0)
            break;
        if (attempt == 3) {
            fprintf(stderr, "cannot start node n%d: %s\n", i - 1, h_last_error());
            exit(1);
        }
        fprintf(stderr, "node n%d did not start (%s); starting the nodes again on new ports\n",
                i - 1, h_last_error());
        for (int j = 0; j < i - 1; j++) {
            h_proc_stop(tc->nodes[j].proc, 5000);
            tc->nodes[j].proc = NULL;
        }
        char dirs[3 * 600];
        size_t dl = 0;
        for (int j = 0; j < T_NODES; j++)
            dl += (size_t)snprintf(dirs + dl, sizeof(dirs) - dl, " '%s'", tc->nodes[j].dir);
        char cmd[sizeof(dirs) + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf%s", dirs);
        if (system(cmd) != 0)
            fprintf(stderr, "could not clear the nodes' folders\n");
    }
}

void t_cluster_publish(t_cluster *tc, h_dns *dns, const char *svc)
{
    for (int i = 0; i < T_NODES; i++) {
        char target[256];
        snprintf(target, sizeof(target), "n%d.%s", i, svc);
        assert_int_equal(h_dns_add_srv(dns, svc, target, (uint16_t)tc->nodes[i].port), 0);
        assert_int_equal(h_dns_set_a(dns, target, "127.0.0.1"), 0);
    }
}

void t_run_cli(t_cluster *tc, h_run_result *r, const char *cli, const char *const *env_extra,
               const char *const *args)
{
    t_run_cli_at(tc->env, h_s3model_endpoint(tc->model), r, cli, env_extra, args);
}

void t_run_cli_at(h_env *env, const char *endpoint, h_run_result *r, const char *cli,
                  const char *const *env_extra, const char *const *args)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = cli;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    char ep[300];
    snprintf(ep, sizeof(ep), "AWS_ENDPOINT_URL=%s", endpoint);
    const char *set[24] = {"AWS_PROFILE",
                           "RINGCACHE_CACHE",
                           "AWS_ACCESS_KEY_ID=S3RVER",
                           "AWS_SECRET_ACCESS_KEY=S3RVER",
                           "AWS_REGION=us-east-1",
                           ep};
    int k = 6;
    for (int i = 0; env_extra && env_extra[i] && k < 23; i++)
        set[k++] = env_extra[i];
    set[k] = NULL;
    assert_int_equal(h_run(env, r, argv, set), 0);
    if (r->status)
        fprintf(stderr, "ringcache %s: exit %d: %s\n", args[0], r->status, r->err);
}

void t_scattered_reads(rc_handle *h, const unsigned char *data, size_t size, int n, uint64_t seed)
{
    const size_t len = 64u << 10;
    unsigned char *b = malloc(len);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t off = (x >> 11) % (size - len);
        int64_t got = rc_pread(h, b, len, off);
        if (got != (int64_t)len) {
            char err[RC_ERR_MAX];
            rc_last_error(h, err, sizeof(err));
            fprintf(stderr, "scattered read at %llu: %lld: %s\n", (unsigned long long)off,
                    (long long)got, err);
        }
        assert_int_equal(got, len);
        assert_memory_equal(b, data + off, len);
    }
    free(b);
}

void t_cluster_stop(t_cluster *tc)
{
    for (int i = 0; i < T_NODES; i++) {
        if (!tc->nodes[i].proc)
            continue;
        int st = h_proc_stop(tc->nodes[i].proc, 15000);
        if (st != 0)
            fprintf(stderr, "node %s exited with %d\n", tc->nodes[i].name, st);
        assert_int_equal(st, 0);
    }
    h_env_destroy(&tc->env);
}

size_t t_size_mib(size_t release_mib, size_t sanitized_mib)
{
    size_t mib = release_mib;
#ifdef RC_TEST_SANITIZED
    mib = sanitized_mib;
#else
    (void)sanitized_mib;
#endif
    const char *cap = getenv("RINGCACHE_CLIENT_TEST_MIB");
    if (cap && atoi(cap) > 0 && (size_t)atoi(cap) < mib)
        mib = (size_t)atoi(cap);
    return mib << 20;
}

void t_put_direct(t_cluster *tc, const char *key, const void *data, size_t len, char *etag)
{
    assert_int_equal(
        t_put_object_parallel(&tc->direct, H_S3_DEFAULT_BUCKET, key, data, len, 4, etag), 0);
}

void t_rc_config(t_cluster *tc, rc_config *cfg)
{
    rc_config_init(cfg);
    cfg->members = tc->members;
    cfg->s3 = tc->via_model;
    cfg->page_cache_bytes = 256u << 20;
    cfg->max_threads = 2;
}

int64_t t_s3_gets(t_cluster *tc, const char *key)
{
    char path[1200];
    snprintf(path, sizeof(path), "/%s/%s", H_S3_DEFAULT_BUCKET, key);
    return h_s3model_count(tc->model, "GET", path);
}

void t_file_equals(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *b = malloc(len + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, len + 1, f), len);
    fclose(f);
    assert_memory_equal(b, data, len);
    free(b);
}
