/* SPDX-License-Identifier: Apache-2.0
 *
 * cmd_cache.c: the CLI's path through the cache tier (`--cache MEMBERS`):
 * get, head and put go to the cache nodes by the ring (cluster.h) instead of
 * S3, and `ringcache stats` prints every node's counters. Blocking wrappers
 * over the cluster's event loop, one command per process.
 */
#include "cli_cache.h"

#include "cluster.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    struct event_base *base;
    rcl_cluster *cl;
    bool done;
    int code;
    char msg[2600];
    uint64_t size;
    char version[130];
} cli_cl;

static void cl_done(int code, const char *msg, void *arg)
{
    cli_cl *c = arg;
    c->code = code;
    snprintf(c->msg, sizeof(c->msg), "%s", msg ? msg : "");
    c->done = true;
}

static void cl_wait(cli_cl *c)
{
    while (!c->done)
        event_base_loop(c->base, EVLOOP_ONCE);
    c->done = false;
}

static int cl_open(cli_cl *c, const cli_cache_opts *o)
{
    memset(c, 0, sizeof(*c));
    c->base = event_base_new();
    rcl_config rc = {0};
    rc.members = o->members;
    rc.token = o->token;
    rc.parallel = o->parallel > 0 ? o->parallel : 16;
    char err[512];
    if (!c->base || rcl_create(&c->cl, c->base, &rc, err, sizeof(err)) < 0) {
        cli_error("--cache: %s", c->base ? err : "out of memory");
        if (c->base)
            event_base_free(c->base);
        return CLI_USAGE;
    }
    if (rcl_connect(c->cl, cl_done, c) < 0) {
        cli_error("--cache: no cache node can be reached (%s)", o->members);
        return CLI_FAIL;
    }
    cl_wait(c);
    if (c->code < 0) {
        cli_error("--cache: %s", c->msg);
        return CLI_FAIL;
    }
    return 0;
}

static void cl_close(cli_cl *c)
{
    rcl_destroy(&c->cl);
    event_base_loop(c->base, EVLOOP_NONBLOCK);
    event_base_free(c->base);
}

static void cl_head_done(int code, const char *msg, uint64_t size, const char *version, void *arg)
{
    cli_cl *c = arg;
    c->size = size;
    snprintf(c->version, sizeof(c->version), "%s", version ? version : "");
    cl_done(code, msg, arg);
}

static int cl_head(cli_cl *c, const char *bucket, const char *key)
{
    if (rcl_head(c->cl, bucket, key, cl_head_done, c) < 0)
        return -ENOMEM;
    cl_wait(c);
    if (c->code < 0)
        cli_error("%s", c->msg[0] ? c->msg : strerror(-c->code));
    return c->code;
}

int cli_cache_head(const cli_cache_opts *o, const char *bucket, const char *key)
{
    cli_cl c;
    int rc = cl_open(&c, o);
    if (rc)
        return rc;
    rc = cl_head(&c, bucket, key);
    if (rc == 0)
        printf("url: s3://%s/%s\nsize: %" PRIu64 "\netag: %s\n", bucket, key, c.size, c.version);
    cl_close(&c);
    return rc ? CLI_FAIL : CLI_OK;
}

int cli_cache_get(const cli_cache_opts *o, const char *bucket, const char *key, uint64_t off,
                  uint64_t len, int fd, cli_progress *p)
{
    cli_cl c;
    int rc = cl_open(&c, o);
    if (rc)
        return rc;
    if ((rc = cl_head(&c, bucket, key)) < 0) {
        cl_close(&c);
        return CLI_FAIL;
    }
    if (off > c.size || (off == c.size && c.size)) {
        cli_error("get: the range starts past the end of s3://%s/%s (%" PRIu64 " bytes)", bucket,
                  key, c.size);
        cl_close(&c);
        return CLI_FAIL;
    }
    uint64_t total = c.size - off;
    if (len && len < total)
        total = len;
    cli_progress_init(p, "get", total);
    const uint64_t window = 64ull << 20;
    uint8_t *buf = malloc(total < window ? (total ? total : 1) : window);
    if (!buf) {
        cl_close(&c);
        cli_error("get: out of memory");
        return CLI_FAIL;
    }
    rcl_object obj = {bucket, key, c.version, c.size};
    uint64_t done = 0;
    while (done < total) {
        uint64_t n = total - done < window ? total - done : window;
        if ((rc = rcl_read(c.cl, &obj, off + done, n, buf, NULL, cl_done, &c)) < 0) {
            cli_error("get: %s", strerror(-rc));
            break;
        }
        cl_wait(&c);
        if (c.code < 0) {
            rc = c.code;
            cli_error("get: %s", c.msg);
            break;
        }
        for (uint64_t w = 0; w < n;) {
            ssize_t k = write(fd, buf + w, n - w);
            if (k < 0) {
                rc = -errno;
                cli_error("get: cannot write the output: %s", strerror(errno));
                break;
            }
            w += (uint64_t)k;
        }
        if (rc < 0)
            break;
        done += n;
        cli_progress_update(done, total, p);
    }
    cli_progress_end(p);
    rcl_stats st;
    rcl_stats_get(c.cl, &st);
    if (getenv("RINGCACHE_VERBOSE"))
        fprintf(stderr, "blocks=%" PRIu64 " from_s3=%" PRIu64 " failovers=%" PRIu64 "\n",
                st.blocks, st.from_s3, st.failovers);
    free(buf);
    cl_close(&c);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

typedef struct {
    int fd;
    uint64_t off;
    cli_progress *p;
    uint64_t total;
} put_src;

static int64_t put_read(void *buf, size_t cap, void *arg)
{
    put_src *s = arg;
    ssize_t n = pread(s->fd, buf, cap, (off_t)s->off);
    if (n < 0)
        return -errno;
    s->off += (uint64_t)n;
    cli_progress_update(s->off, s->total, s->p);
    return n;
}

static void put_done(int code, const char *msg, const char *version, void *arg)
{
    cli_cl *c = arg;
    snprintf(c->version, sizeof(c->version), "%s", version ? version : "");
    cl_done(code, msg, arg);
}

int cli_cache_put(const cli_cache_opts *o, const char *bucket, const char *key, int fd,
                  uint64_t size, cli_progress *p)
{
    cli_cl c;
    int rc = cl_open(&c, o);
    if (rc)
        return rc;
    put_src src = {fd, 0, p, size};
    cli_progress_init(p, "put", size);
    if ((rc = rcl_put(c.cl, bucket, key, size, put_read, &src, put_done, &c)) < 0) {
        cli_error("put: no cache node can be reached: %s", strerror(-rc));
        cl_close(&c);
        return CLI_FAIL;
    }
    cl_wait(&c);
    cli_progress_end(p);
    if (c.code < 0)
        cli_error("put s3://%s/%s: %s", bucket, key, c.msg);
    else
        printf("s3://%s/%s etag=%s size=%" PRIu64 "\n", bucket, key, c.version, size);
    cl_close(&c);
    return c.code < 0 ? CLI_FAIL : CLI_OK;
}

static void stats_node(const char *id, const char *addr, int code, const char *text, void *arg)
{
    int *failed = arg;
    printf("== %s (%s)\n", id, addr);
    if (code < 0) {
        printf("# unreachable: %s\n", text ? text : strerror(-code));
        (*failed)++;
        return;
    }
    /* the counters without the HELP/TYPE comments */
    const char *l = text;
    while (l && *l) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        if (n && l[0] != '#')
            printf("%.*s\n", (int)n, l);
        l = e ? e + 1 : NULL;
    }
}

typedef struct {
    cli_cl *c;
    int failed;
} stats_ctx;

static void stats_node_cb(const char *id, const char *addr, int code, const char *text, void *arg)
{
    stats_ctx *s = arg;
    stats_node(id, addr, code, text, &s->failed);
}

static void stats_done(int code, const char *msg, void *arg)
{
    stats_ctx *s = arg;
    cl_done(code, msg, s->c);
}

int cli_cache_stats(const cli_cache_opts *o)
{
    cli_cl c;
    memset(&c, 0, sizeof(c));
    c.base = event_base_new();
    rcl_config rc = {0};
    rc.members = o->members;
    rc.token = o->token;
    char err[512];
    if (!c.base || rcl_create(&c.cl, c.base, &rc, err, sizeof(err)) < 0) {
        cli_error("--cache: %s", c.base ? err : "out of memory");
        return CLI_USAGE;
    }
    stats_ctx s = {&c, 0};
    rcl_stats_all(c.cl, stats_node_cb, stats_done, &s);
    cl_wait(&c);
    cl_close(&c);
    return s.failed ? CLI_FAIL : CLI_OK;
}
