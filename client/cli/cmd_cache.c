/* SPDX-License-Identifier: Apache-2.0
 *
 * cmd_cache.c: the CLI's path through the cache tier (`--cache MEMBERS`), on
 * libringcache (ringcache.h): get and cat read through the page cache and the
 * nodes (S3 directly when every node is down, unless --cache-only), head and
 * put go through a node, ls lists S3, stats prints every node's counters, and
 * warm loads objects into the nodes without reading them here.
 */
#include "cli_cache.h"

#include "ringcache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cc_open(rc_client **c, const cli_cache_opts *o)
{
    rc_config cfg;
    cli_cache_config(o, &cfg);
    cfg.page_cache_bytes = 256u << 20;
    cfg.max_threads = 1;
    char err[RC_ERR_MAX];
    int rc = rc_create(c, &cfg, err, sizeof(err));
    if (rc < 0) {
        cli_error("--cache: %s", err);
        return rc == -EINVAL ? CLI_USAGE : CLI_FAIL;
    }
    return 0;
}

static void cc_verbose(rc_client *c)
{
    if (!getenv("RINGCACHE_VERBOSE"))
        return;
    rc_stats st;
    rc_stats_get(c, &st);
    fprintf(stderr,
            "blocks=%" PRIu64 " hits=%" PRIu64 " misses=%" PRIu64 " readahead=%" PRIu64
            " failovers=%" PRIu64 " hedges=%" PRIu64 " fallbacks=%" PRIu64
            " upstream_fallbacks=%" PRIu64 " stalls=%" PRIu64 " node_bytes=%" PRIu64
            " s3_bytes=%" PRIu64 "\n",
            st.node_blocks, st.hits, st.misses, st.readahead_fetches, st.failovers, st.hedges,
            st.fallbacks, st.upstream_fallbacks, st.stalls, st.node_bytes, st.s3_bytes);
}

int cli_cache_head(const cli_cache_opts *o, const char *bucket, const char *key)
{
    rc_client *c;
    int rc = cc_open(&c, o);
    if (rc)
        return rc;
    rc_handle *h;
    char err[RC_ERR_MAX];
    rc = rc_open(c, bucket, key, &h, err, sizeof(err));
    if (rc < 0)
        cli_error("%s", err);
    else
        printf("url: s3://%s/%s\nsize: %" PRIu64 "\netag: %s\n", bucket, key, rc_size(h),
               rc_version(h));
    rc_close(&h);
    rc_destroy(&c);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

int cli_cache_get(const cli_cache_opts *o, const char *bucket, const char *key, uint64_t off,
                  uint64_t len, int fd, cli_progress *p)
{
    rc_client *c;
    int rc = cc_open(&c, o);
    if (rc)
        return rc;
    rc_handle *h;
    char err[RC_ERR_MAX];
    if ((rc = rc_open(c, bucket, key, &h, err, sizeof(err))) < 0) {
        cli_error("%s", err);
        rc_destroy(&c);
        return CLI_FAIL;
    }
    uint64_t size = rc_size(h);
    if (off > size || (off == size && size)) {
        cli_error("get: the range starts past the end of s3://%s/%s (%" PRIu64 " bytes)", bucket,
                  key, size);
        rc_close(&h);
        rc_destroy(&c);
        return CLI_FAIL;
    }
    uint64_t total = size - off;
    if (len && len < total)
        total = len;
    cli_progress_init(p, "get", total);
    const uint64_t window = 16ull << 20;
    uint8_t *buf = malloc(window);
    if (!buf) {
        cli_error("get: out of memory");
        rc_close(&h);
        rc_destroy(&c);
        return CLI_FAIL;
    }
    uint64_t done = 0;
    rc = 0;
    while (done < total) {
        uint64_t n = total - done < window ? total - done : window;
        int64_t got = rc_pread(h, buf, (size_t)n, off + done);
        if (got <= 0) {
            rc_last_error(h, err, sizeof(err));
            cli_error("get s3://%s/%s: %s", bucket, key,
                      got < 0 ? err : "the object ended early");
            rc = got < 0 ? (int)got : -EIO;
            break;
        }
        for (uint64_t w = 0; w < (uint64_t)got;) {
            ssize_t k = write(fd, buf + w, (size_t)got - w);
            if (k < 0) {
                rc = -errno;
                cli_error("get: cannot write the output: %s", strerror(errno));
                break;
            }
            w += (uint64_t)k;
        }
        if (rc < 0)
            break;
        done += (uint64_t)got;
        cli_progress_update(done, total, p);
    }
    cli_progress_end(p);
    cc_verbose(c);
    free(buf);
    rc_close(&h);
    rc_destroy(&c);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

typedef struct {
    int fd;
    cli_progress *p;
    uint64_t total;
} put_src;

static int64_t put_read_at(void *arg, void *buf, size_t len, uint64_t off)
{
    put_src *s = arg;
    ssize_t n = pread(s->fd, buf, len, (off_t)off);
    if (n < 0)
        return -errno;
    cli_progress_update(off + (uint64_t)n, s->total, s->p);
    return n;
}

int cli_cache_put(const cli_cache_opts *o, const char *bucket, const char *key, int fd,
                  uint64_t size, cli_progress *p)
{
    rc_client *c;
    int rc = cc_open(&c, o);
    if (rc)
        return rc;
    put_src src = {fd, p, size};
    cli_progress_init(p, "put", size);
    char version[RC_VERSION_MAX], err[RC_ERR_MAX];
    rc = rc_put_stream(c, bucket, key, size, put_read_at, &src, version, err, sizeof(err));
    cli_progress_end(p);
    if (rc < 0)
        cli_error("put s3://%s/%s: %s", bucket, key, err);
    else
        printf("s3://%s/%s etag=%s size=%" PRIu64 "\n", bucket, key, version, size);
    rc_destroy(&c);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

static void stats_node(const char *id, const char *addr, int code, const char *text, void *arg)
{
    (void)arg;
    printf("== %s (%s)\n", id, addr);
    if (code < 0) {
        printf("# unreachable: %s\n", text ? text : strerror(-code));
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

int cli_cache_stats(const cli_cache_opts *o)
{
    rc_client *c;
    int rc = cc_open(&c, o);
    if (rc)
        return rc;
    rc = rc_node_stats(c, stats_node, NULL);
    if (rc < 0)
        cli_error("stats: %s", strerror(-rc));
    rc_destroy(&c);
    return rc != 0 ? CLI_FAIL : CLI_OK;
}

int cli_cache_ls(const cli_cache_opts *o, const char *bucket, const char *pattern,
                 s3_object_fn fn, void *arg)
{
    rc_client *c;
    int rc = cc_open(&c, o);
    if (rc)
        return rc;
    char err[RC_ERR_MAX];
    rc = rc_list(c, bucket, pattern, fn, arg, err, sizeof(err));
    if (rc < 0)
        cli_error("%s", err);
    rc_destroy(&c);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}

typedef struct {
    char (*keys)[1025];
    uint64_t *sizes;
    size_t n, cap;
} warm_list;

static int warm_collect(const s3_object_info *info, void *arg)
{
    warm_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char(*k)[1025] = realloc(l->keys, cap * sizeof(*k));
        if (!k)
            return -ENOMEM;
        l->keys = k;
        uint64_t *s = realloc(l->sizes, cap * sizeof(*s));
        if (!s)
            return -ENOMEM;
        l->sizes = s;
        l->cap = cap;
    }
    snprintf(l->keys[l->n], sizeof(l->keys[0]), "%s", info->key);
    l->sizes[l->n++] = info->size;
    return 0;
}

typedef struct {
    size_t obj, n_obj;
    uint64_t bytes_before, bytes_total;
    uint64_t obj_size;
    bool tty;
} warm_progress;

static void warm_tick(uint64_t done, uint64_t total, void *arg)
{
    warm_progress *w = arg;
    if (!w->tty)
        return;
    double frac = total ? (double)done / (double)total : 1.0;
    double bytes = (double)w->bytes_before + frac * (double)w->obj_size;
    fprintf(stderr, "\rwarm: object %zu/%zu, %.1f / %.1f MiB", w->obj + 1, w->n_obj,
            bytes / 1048576.0, (double)w->bytes_total / 1048576.0);
    fflush(stderr);
}

int cli_cache_warm(const cli_cache_opts *o, const char *bucket, const char *pattern, bool wait)
{
    rc_client *c;
    int rc = cc_open(&c, o);
    if (rc)
        return rc;
    char err[RC_ERR_MAX];
    warm_list l = {0};
    rc = rc_list(c, bucket, pattern, warm_collect, &l, err, sizeof(err));
    if (rc < 0) {
        cli_error("warm: %s", err);
        goto out;
    }
    warm_progress wp = {.n_obj = l.n, .tty = isatty(STDERR_FILENO) != 0};
    for (size_t i = 0; i < l.n; i++)
        wp.bytes_total += l.sizes[i];
    uint64_t blocks = 0;
    for (size_t i = 0; i < l.n; i++) {
        wp.obj = i;
        wp.obj_size = l.sizes[i];
        if (l.sizes[i] == 0)
            continue;
        int64_t n = rc_warm(c, bucket, l.keys[i], wait, warm_tick, &wp, err, sizeof(err));
        if (n < 0) {
            if (wp.tty)
                fputc('\n', stderr);
            cli_error("warm: %s", err);
            rc = (int)n;
            goto out;
        }
        blocks += (uint64_t)n;
        wp.bytes_before += l.sizes[i];
        /* one line per object when not on a terminal, so logs show progress too */
        if (!wp.tty)
            fprintf(stderr, "warm: %zu/%zu s3://%s/%s %" PRIu64 " blocks\n", i + 1, l.n,
                    bucket, l.keys[i], (uint64_t)n);
    }
    if (wp.tty && l.n)
        fputc('\n', stderr);
    printf("warmed %zu objects, %" PRIu64 " bytes, %" PRIu64 " blocks%s\n", l.n, wp.bytes_total,
           blocks, wait ? "" : " (fills started)");
out:
    free(l.keys);
    free(l.sizes);
    rc_destroy(&c);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}
