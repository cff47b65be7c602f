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
#include "s3.h"

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
            cli_error("get s3://%s/%s: %s", bucket, key, got < 0 ? err : "the object ended early");
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

/* ---- stats --------------------------------------------------------------- */

/* One node's answer, kept until every node has answered, then printed in
 * member order (the ring's order of answers is not stable). */
typedef struct stats_row {
    char id[128];
    char addr[300];
    int code;
    char *text;
} stats_row;

typedef struct stats_rows {
    stats_row *r;
    size_t n, cap;
    bool oom;
} stats_rows;

static void stats_collect(const char *id, const char *addr, int code, const char *text, void *arg)
{
    stats_rows *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        stats_row *nr = realloc(l->r, cap * sizeof(*nr));
        if (!nr) {
            l->oom = true;
            return;
        }
        l->r = nr;
        l->cap = cap;
    }
    stats_row *r = &l->r[l->n++];
    snprintf(r->id, sizeof(r->id), "%s", id);
    snprintf(r->addr, sizeof(r->addr), "%s", addr);
    r->code = code;
    r->text = text ? strdup(text) : NULL;
    if (text && !r->text)
        l->oom = true;
}

static int stats_cmp(const void *a, const void *b)
{
    const stats_row *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : strcmp(x->addr, y->addr);
}

/* The value of metric `name` with exactly the labels `labels` (NULL: none) in
 * Prometheus text; 0 when absent. */
static double prom_value(const char *text, const char *name, const char *labels)
{
    size_t nl = strlen(name);
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        if (l[0] != '#' && strncmp(l, name, nl) == 0) {
            const char *p = l + nl;
            bool match = false;
            if (!labels)
                match = *p == ' ';
            else if (*p == '{') {
                size_t ll = strlen(labels);
                match = strncmp(p + 1, labels, ll) == 0 && p[1 + ll] == '}';
                p += ll + 2;
            }
            if (match)
                return strtod(p, NULL);
        }
        l = e ? e + 1 : NULL;
    }
    return 0;
}

/* The figures of the table, from a node's /metrics. */
typedef struct stats_fig {
    double hits, misses, ssd_used, ssd_cap, ram_used, ram_cap, blocks, fills, s3_bytes, s3_errors,
        disk_errors, errors_sent;
} stats_fig;

static void stats_read(const char *t, stats_fig *f)
{
    f->hits = prom_value(t, "ringcached_hits_total", NULL);
    f->misses = prom_value(t, "ringcached_misses_total", NULL);
    f->ssd_used = prom_value(t, "ringcached_capacity_used_bytes", "tier=\"ssd\"");
    f->ssd_cap = prom_value(t, "ringcached_capacity_bytes", "tier=\"ssd\"");
    f->ram_used = prom_value(t, "ringcached_capacity_used_bytes", "tier=\"ram\"");
    f->ram_cap = prom_value(t, "ringcached_capacity_bytes", "tier=\"ram\"");
    f->blocks = prom_value(t, "ringcached_blocks_stored", NULL);
    f->fills = prom_value(t, "ringcached_s3_get_requests_total", NULL);
    f->s3_bytes = prom_value(t, "ringcached_s3_get_bytes_total", NULL);
    f->s3_errors = prom_value(t, "ringcached_s3_errors_total", NULL);
    f->disk_errors = prom_value(t, "ringcached_io_errors_total", NULL) +
                     prom_value(t, "ringcached_checksum_failures_total", NULL);
    f->errors_sent = prom_value(t, "ringcached_error_answers_total", NULL);
}

static void stats_add(stats_fig *t, const stats_fig *f)
{
    t->hits += f->hits;
    t->misses += f->misses;
    t->ssd_used += f->ssd_used;
    t->ssd_cap += f->ssd_cap;
    t->ram_used += f->ram_used;
    t->ram_cap += f->ram_cap;
    t->blocks += f->blocks;
    t->fills += f->fills;
    t->s3_bytes += f->s3_bytes;
    t->s3_errors += f->s3_errors;
    t->disk_errors += f->disk_errors;
    t->errors_sent += f->errors_sent;
}

/* Bytes in powers of 1024, as the nodes' options are written. */
static void stats_bytes(double v, char *buf, size_t cap)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int k = 0;
    while (v >= 1024 && k < 5) {
        v /= 1024;
        k++;
    }
    snprintf(buf, cap, k ? "%.1f %s" : "%.0f %s", v, u[k]);
}

static void stats_line(const char *id, const char *addr, const stats_fig *f)
{
    char hit[16], ssd[64], ram[64], s3b[24], a[24], b[24];
    double lookups = f->hits + f->misses;
    if (lookups > 0)
        snprintf(hit, sizeof(hit), "%.1f%%", 100.0 * f->hits / lookups);
    else
        snprintf(hit, sizeof(hit), "-");
    stats_bytes(f->ssd_used, a, sizeof(a));
    stats_bytes(f->ssd_cap, b, sizeof(b));
    snprintf(ssd, sizeof(ssd), "%s / %s", a, b);
    stats_bytes(f->ram_used, a, sizeof(a));
    stats_bytes(f->ram_cap, b, sizeof(b));
    snprintf(ram, sizeof(ram), "%s / %s", a, b);
    stats_bytes(f->s3_bytes, s3b, sizeof(s3b));
    printf("%-10s %-21s %6s %9.0f %9.0f %9.0f %9.0f %6.0f %6.0f %6.0f %10s  %-19s  %s\n", id, addr,
           hit, f->hits, f->misses, f->blocks, f->fills, f->s3_errors, f->disk_errors,
           f->errors_sent, s3b, ssd, ram);
}

static void stats_table(const stats_rows *l)
{
    printf("%-10s %-21s %6s %9s %9s %9s %9s %6s %6s %6s %10s  %-19s  %s\n", "NODE", "ADDRESS",
           "HIT%", "HITS", "MISSES", "BLOCKS", "S3 GETS", "S3 ER", "DISK", "ERR", "S3 BYTES",
           "SSD USED / CAP", "RAM USED / CAP");
    stats_fig total = {0};
    size_t up = 0;
    for (size_t i = 0; i < l->n; i++) {
        const stats_row *r = &l->r[i];
        if (r->code < 0) {
            printf("%-12s %-21s unreachable: %s\n", r->id, r->addr,
                   r->text ? r->text : strerror(-r->code));
            continue;
        }
        stats_fig f;
        stats_read(r->text ? r->text : "", &f);
        stats_line(r->id, r->addr, &f);
        stats_add(&total, &f);
        up++;
    }
    char nodes[48];
    snprintf(nodes, sizeof(nodes), "%zu/%zu", up, l->n);
    stats_line("TOTAL", nodes, &total);
    puts("\nHIT% = hits / (hits + misses) of the nodes' GETs; S3 GETS = fills, one ranged GET\n"
         "per block (S3 BYTES their bytes); S3 ER = fills and S3 calls that failed; DISK = disk\n"
         "I/O errors and checksum failures; ERR = error answers sent. TOTAL sums the nodes\n"
         "that answered (of all). `ringcache stats --raw`: every counter of every node.");
}

static void stats_raw(const stats_rows *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const stats_row *r = &l->r[i];
        printf("== %s (%s)\n", r->id, r->addr);
        if (r->code < 0) {
            printf("# unreachable: %s\n", r->text ? r->text : strerror(-r->code));
            continue;
        }
        /* the counters without the HELP/TYPE comments */
        for (const char *t = r->text; t && *t;) {
            const char *e = strchr(t, '\n');
            size_t n = e ? (size_t)(e - t) : strlen(t);
            if (n && t[0] != '#')
                printf("%.*s\n", (int)n, t);
            t = e ? e + 1 : NULL;
        }
    }
}

int cli_cache_stats(const cli_cache_opts *o, bool raw)
{
    rc_client *c;
    int rc = cc_open(&c, o);
    if (rc)
        return rc;
    stats_rows l = {0};
    int failed = rc_node_stats(c, stats_collect, &l);
    rc_destroy(&c);
    if (failed < 0) {
        cli_error("stats: %s", strerror(-failed));
    } else if (l.oom) {
        cli_error("stats: out of memory");
        failed = -ENOMEM;
    } else {
        qsort(l.r, l.n, sizeof(*l.r), stats_cmp);
        if (raw)
            stats_raw(&l);
        else
            stats_table(&l);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.r[i].text);
    free(l.r);
    return failed != 0 ? CLI_FAIL : CLI_OK;
}

int cli_cache_ls(const cli_cache_opts *o, const char *bucket, const char *pattern, s3_object_fn fn,
                 void *arg)
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
    char (*keys)[S3_KEY_MAX + 1];
    uint64_t *sizes;
    size_t n, cap;
} warm_list;

static int warm_collect(const s3_object_info *info, void *arg)
{
    warm_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char(*k)[S3_KEY_MAX + 1] = realloc(l->keys, cap * sizeof(*k));
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
            fprintf(stderr, "warm: %zu/%zu s3://%s/%s %" PRIu64 " blocks\n", i + 1, l.n, bucket,
                    l.keys[i], (uint64_t)n);
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
