/* SPDX-License-Identifier: Apache-2.0
 *
 * cmd_s3.c: the S3 subcommands of `ringcache` (ls, head, get, put, rm), talking
 * to S3 directly through the blocking S3 client. Each prints one line of error
 * and exits non-zero on failure; `get -o FILE` writes FILE.part and renames it
 * only when the whole range arrived, so a failed download leaves nothing behind.
 */
#include "cli.h"
#include "cli_cache.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CLI_BUCKET_MAX 64
#define CLI_KEY_MAX    1025

typedef struct cli_args {
    cli_conn conn;      /* conn.cache.members set: go through the cache tier */
    const char *pos[3]; /* positional words */
    int n_pos;
} cli_args;

/* Parses the connection options (cli_conn.c) and up to 3 positional words;
 * any other option is handled by `extra` (returns 1 when it took the word, 0
 * if unknown, -1 bad). */
typedef int (*cli_extra_fn)(int argc, char **argv, int *i, void *arg);

static int cli_parse(int argc, char **argv, cli_args *a, cli_extra_fn extra, void *extra_arg,
                     const char *usage)
{
    int rc = cli_conn_init(&a->conn, argc, argv);
    if (rc)
        return rc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            cli_conn_help(stdout);
            exit(CLI_OK);
        }
        int r = cli_conn_opt(&a->conn, argc, argv, &i);
        if (r < 0)
            return CLI_USAGE;
        if (r > 0)
            continue;
        if (extra) {
            r = extra(argc, argv, &i, extra_arg);
            if (r < 0)
                return CLI_USAGE;
            if (r > 0)
                continue;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            cli_error("%s: unknown option %s (see ringcache %s --help)", argv[0], argv[i], argv[0]);
            return CLI_USAGE;
        }
        if (a->n_pos == 3) {
            cli_error("%s: too many arguments (see ringcache %s --help)", argv[0], argv[0]);
            return CLI_USAGE;
        }
        a->pos[a->n_pos++] = argv[i];
    }
    return 0;
}

static int cli_url(const char *cmd, const char *url, char *bucket, char *key)
{
    int rc = s3_url_parse(url, bucket, CLI_BUCKET_MAX, key, CLI_KEY_MAX);
    if (rc < 0) {
        char why[512];
        s3_url_explain(url, why, sizeof(why));
        cli_error("%s: %s", cmd, why);
        return CLI_USAGE;
    }
    char why[300];
    if (s3_key_check(key, strlen(key), why, sizeof(why)) < 0) {
        cli_error("%s: %s: %s", cmd, url, why);
        return CLI_USAGE;
    }
    return 0;
}

static int cli_open(s3_sync **s, const cli_args *a)
{
    if (!cli_s3_signable(&a->conn.s3.cfg)) {
        cli_error("%s", cli_no_credentials);
        return CLI_FAIL;
    }
    int rc = s3_sync_create(s, &a->conn.s3.cfg);
    if (rc < 0) {
        cli_error("cannot set up the S3 client: %s (check --endpoint)", strerror(-rc));
        return CLI_FAIL;
    }
    return 0;
}

static void cli_fmt_time(int64_t t, char *buf, size_t cap)
{
    struct tm tm;
    time_t tt = (time_t)t;
    if (t <= 0 || !gmtime_r(&tt, &tm))
        snprintf(buf, cap, "-");
    else
        strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- ls ------------------------------------------------------------------ */

static const char ls_usage[] =
    "usage: ringcache ls s3://bucket[/glob] [options]\n"
    "List objects: one line each with size, last modified (UTC), ETag and URL.\n"
    "Globs mean what they mean in ClickHouse's s3(): * (not crossing /), ** (crossing /),\n"
    "? (one character), {a,b} and {1..10}. Only the prefix before the first wildcard is\n"
    "listed. Without a glob, everything under the prefix is listed.\n\n";

typedef struct {
    const char *bucket;
    uint64_t n, bytes;
} cli_ls_state;

static int cli_ls_print(const s3_object_info *o, void *arg)
{
    cli_ls_state *st = arg;
    char t[32];
    cli_fmt_time(o->last_modified, t, sizeof(t));
    printf("%12" PRIu64 "  %s  %s  s3://%s/%s\n", o->size, t, o->etag, st->bucket, o->key);
    st->n++;
    st->bytes += o->size;
    return 0;
}

int cli_cmd_ls(int argc, char **argv)
{
    cli_args a = {0};
    int rc = cli_parse(argc, argv, &a, NULL, NULL, ls_usage);
    if (rc)
        return rc;
    if (a.n_pos != 1) {
        cli_error("ls: give one s3://bucket/prefix-or-glob (see ringcache ls --help)");
        return CLI_USAGE;
    }
    char bucket[CLI_BUCKET_MAX], key[CLI_KEY_MAX];
    if ((rc = cli_url("ls", a.pos[0], bucket, key)))
        return rc;
    cli_ls_state st = {bucket, 0, 0};
    if (a.conn.cache.members && a.conn.cache.members[0]) {
        rc = cli_cache_ls(&a.conn.cache, bucket, key, cli_ls_print, &st);
        if (rc == CLI_OK && isatty(STDOUT_FILENO))
            fprintf(stderr, "%" PRIu64 " objects, %" PRIu64 " bytes\n", st.n, st.bytes);
        return rc;
    }
    s3_sync *s;
    if ((rc = cli_open(&s, &a)))
        return rc;
    s3_error err;
    s3_glob *g = NULL;
    bool glob = s3_glob_create(&g, key) == 0 && s3_glob_has_wildcards(g);
    s3_glob_destroy(&g);
    rc = glob ? s3_sync_glob(s, bucket, key, cli_ls_print, &st, &err)
              : s3_sync_list(s, bucket, key, cli_ls_print, &st, &err);
    s3_sync_destroy(&s);
    if (rc < 0) {
        cli_error("%s", err.message);
        return CLI_FAIL;
    }
    if (isatty(STDOUT_FILENO))
        fprintf(stderr, "%" PRIu64 " objects, %" PRIu64 " bytes\n", st.n, st.bytes);
    return CLI_OK;
}

/* ---- head ---------------------------------------------------------------- */

static const char head_usage[] =
    "usage: ringcache head s3://bucket/key [options]\n"
    "Print an object's size, version (ETag, quotes stripped) and last-modified time.\n\n";

int cli_cmd_head(int argc, char **argv)
{
    cli_args a = {0};
    int rc = cli_parse(argc, argv, &a, NULL, NULL, head_usage);
    if (rc)
        return rc;
    if (a.n_pos != 1) {
        cli_error("head: give one s3://bucket/key (see ringcache head --help)");
        return CLI_USAGE;
    }
    char bucket[CLI_BUCKET_MAX], key[CLI_KEY_MAX];
    if ((rc = cli_url("head", a.pos[0], bucket, key)))
        return rc;
    if (!key[0]) {
        cli_error("head: %s names a bucket, not an object", a.pos[0]);
        return CLI_USAGE;
    }
    if (a.conn.cache.members && a.conn.cache.members[0])
        return cli_cache_head(&a.conn.cache, bucket, key);
    s3_sync *s;
    if ((rc = cli_open(&s, &a)))
        return rc;
    s3_object_info info;
    s3_error err;
    rc = s3_sync_head(s, bucket, key, &info, &err);
    s3_sync_destroy(&s);
    if (rc < 0) {
        cli_error("%s", err.message);
        return CLI_FAIL;
    }
    char t[32];
    cli_fmt_time(info.last_modified, t, sizeof(t));
    printf("url: s3://%s/%s\nsize: %" PRIu64 "\netag: %s\nlast_modified: %s\n", bucket, key,
           info.size, info.etag, t);
    return CLI_OK;
}

/* ---- get ----------------------------------------------------------------- */

static const char get_usage[] =
    "usage: ringcache get s3://bucket/key [-o FILE] [--range START-END] [--parallel N]\n"
    "                     [--part-size SIZE] [options]\n"
    "Download an object (or an inclusive byte range of it, as in HTTP) to FILE or to\n"
    "standard output. Every part is pinned to the version HEAD saw, so a concurrent\n"
    "overwrite fails the download instead of mixing versions. FILE is written as\n"
    "FILE.part and renamed when complete.\n"
    "  -o, --output FILE      where to write (default: standard output)\n"
    "  --range START-END      inclusive byte range; START- means to the end\n"
    "  --parallel N           ranged requests in flight (default 4; 1 = one stream)\n"
    "  --part-size SIZE       bytes per ranged request (default 8MiB)\n\n";

static const char cat_usage[] =
    "usage: ringcache cat s3://bucket/key [--range START-END] [options]\n"
    "Write an object (or an inclusive byte range of it) to standard output, for pipes:\n"
    "`ringcache cat s3://b/data.csv --cache dns:ringcache-headless:7070 | head`.\n"
    "Pinned to the version HEAD saw: a concurrent overwrite fails instead of mixing.\n"
    "  --range START-END      inclusive byte range; START- means to the end\n"
    "  --parallel N           ranged requests in flight without --cache (default 4)\n\n";

typedef struct {
    const char *out;
    const char *range;
    int parallel;
    uint64_t part_size;
} cli_get_opts;

static int cli_get_extra(int argc, char **argv, int *i, void *arg)
{
    cli_get_opts *g = arg;
    const char *v;
    int r;
    if (strcmp(argv[*i], "-o") == 0) {
        if (*i + 1 >= argc) {
            cli_error("-o needs a file name");
            return -1;
        }
        g->out = argv[++*i];
        return 1;
    }
    if ((r = cli_opt(argc, argv, i, "output", &v)) != 0) {
        if (r > 0)
            g->out = v;
        return r;
    }
    if ((r = cli_opt(argc, argv, i, "range", &v)) != 0) {
        if (r > 0)
            g->range = v;
        return r;
    }
    if ((r = cli_opt(argc, argv, i, "parallel", &v)) != 0) {
        if (r < 0)
            return -1;
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > 256) {
            cli_error("--parallel takes 1 to 256, not '%s'", v);
            return -1;
        }
        g->parallel = (int)n;
        return 1;
    }
    if ((r = cli_opt(argc, argv, i, "part-size", &v)) != 0) {
        if (r < 0)
            return -1;
        if (cli_size_opt("part-size", v, &g->part_size) < 0)
            return -1;
        if (g->part_size == 0) {
            cli_error("--part-size takes a size above 0, such as 8MiB");
            return -1;
        }
        return 1;
    }
    return 0;
}

static int cli_parse_range(const char *r, uint64_t *off, uint64_t *len)
{
    char *end;
    if (!r || !*r || *r == '-')
        return -EINVAL; /* suffix ranges are not supported: see REFERENCES */
    errno = 0;
    unsigned long long a = strtoull(r, &end, 10);
    if (errno || *end != '-')
        return -EINVAL;
    if (end[1] == '\0') {
        *off = a;
        *len = 0;
        return 0;
    }
    char *end2;
    unsigned long long b = strtoull(end + 1, &end2, 10);
    if (errno || *end2 || b < a)
        return -EINVAL;
    *off = a;
    *len = b - a + 1;
    return 0;
}

static int cli_get_or_cat(int argc, char **argv, bool cat)
{
    cli_args a = {0};
    cli_get_opts g = {.parallel = 4};
    int rc = cli_parse(argc, argv, &a, cli_get_extra, &g, cat ? cat_usage : get_usage);
    if (rc)
        return rc;
    if (a.n_pos != 1) {
        cli_error("%s: give one s3://bucket/key (see ringcache %s --help)", argv[0], argv[0]);
        return CLI_USAGE;
    }
    if (cat && g.out) {
        cli_error("cat: writes to standard output; use ringcache get -o FILE for a file");
        return CLI_USAGE;
    }
    char bucket[CLI_BUCKET_MAX], key[CLI_KEY_MAX];
    if ((rc = cli_url(argv[0], a.pos[0], bucket, key)))
        return rc;
    if (!key[0]) {
        cli_error("get: %s names a bucket, not an object", a.pos[0]);
        return CLI_USAGE;
    }
    uint64_t off = 0, len = 0;
    if (g.range && cli_parse_range(g.range, &off, &len) < 0) {
        cli_error("get: --range wants START-END (inclusive) or START-, not '%s'", g.range);
        return CLI_USAGE;
    }
    char tmp[4096];
    int fd = STDOUT_FILENO;
    /* a regular file (or a new one) is written as FILE.part and renamed when
     * complete; anything else that exists (/dev/null, a FIFO, a terminal) is
     * written in place: never replaced */
    struct stat ost;
    bool staged = g.out && (stat(g.out, &ost) != 0 || S_ISREG(ost.st_mode));
    if (g.out && !staged) {
        fd = open(g.out, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
            cli_error("get: cannot write %s: %s", g.out, strerror(errno));
            return CLI_FAIL;
        }
    } else if (g.out) {
        if ((size_t)snprintf(tmp, sizeof(tmp), "%s.part", g.out) >= sizeof(tmp)) {
            cli_error("get: the output path is too long");
            return CLI_USAGE;
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            cli_error("get: cannot create %s: %s (choose a writable path with -o)", tmp,
                      strerror(errno));
            return CLI_FAIL;
        }
    }
    if (a.conn.cache.members && a.conn.cache.members[0]) {
        cli_progress cp;
        a.conn.cache.parallel = g.parallel > 4 ? g.parallel : 16;
        rc = cli_cache_get(&a.conn.cache, bucket, key, off, len, fd, &cp);
        if (g.out && !staged) {
            if (close(fd) != 0 && rc == CLI_OK) {
                cli_error("get: cannot write %s: %s", g.out, strerror(errno));
                return CLI_FAIL;
            }
            return rc;
        }
        if (g.out) {
            if (rc == CLI_OK && close(fd) == 0 && rename(tmp, g.out) == 0)
                return CLI_OK;
            if (rc == CLI_OK)
                cli_error("get: cannot write %s: %s", g.out, strerror(errno));
            close(fd);
            unlink(tmp);
            return CLI_FAIL;
        }
        return rc;
    }
    s3_sync *s;
    if ((rc = cli_open(&s, &a))) {
        if (g.out) {
            close(fd);
            if (staged)
                unlink(tmp);
        }
        return rc;
    }
    cli_progress p;
    cli_progress_init(&p, "get", UINT64_MAX);
    s3_sync_get_args ga = {
        .bucket = bucket,
        .key = key,
        .offset = off,
        .length = len,
        .fd = fd,
        .parallel = g.parallel,
        .part_size = g.part_size,
        .progress = cli_progress_update,
        .progress_arg = &p,
    };
    /* the bar is drawn only for large transfers: decide once the size is known */
    s3_object_info info;
    s3_error err;
    rc = s3_sync_head(s, bucket, key, &info, &err);
    if (rc == 0) {
        uint64_t total = info.size > off ? info.size - off : 0;
        if (len && len < total)
            total = len;
        cli_progress_init(&p, "get", total);
        int64_t n = s3_sync_get(s, &ga, &err);
        rc = n < 0 ? (int)n : 0;
    }
    cli_progress_end(&p);
    s3_sync_destroy(&s);
    if (g.out && !staged) {
        if (close(fd) != 0 && rc == 0) {
            cli_error("get: cannot write %s: %s", g.out, strerror(errno));
            return CLI_FAIL;
        }
    } else if (g.out) {
        if (rc == 0 && close(fd) != 0) {
            cli_error("get: cannot write %s: %s", tmp, strerror(errno));
            unlink(tmp);
            return CLI_FAIL;
        }
        if (rc < 0) {
            close(fd);
            unlink(tmp);
        } else if (rename(tmp, g.out) != 0) {
            cli_error("get: cannot rename %s to %s: %s", tmp, g.out, strerror(errno));
            unlink(tmp);
            return CLI_FAIL;
        }
    }
    if (rc < 0) {
        cli_error("%s", err.message);
        return CLI_FAIL;
    }
    return CLI_OK;
}

int cli_cmd_get(int argc, char **argv)
{
    return cli_get_or_cat(argc, argv, false);
}

int cli_cmd_cat(int argc, char **argv)
{
    return cli_get_or_cat(argc, argv, true);
}

/* ---- warm ---------------------------------------------------------------- */

static const char warm_usage[] =
    "usage: ringcache warm s3://bucket/glob --cache MEMBERS [--no-wait] [options]\n"
    "Load every object the glob matches into the cache tier (each block on its owner\n"
    "node, fetched from S3 by the nodes); no object data comes to this machine. Shows\n"
    "progress on a terminal, one line per object otherwise. Globs as in `ringcache ls`.\n"
    "  --no-wait              return once the nodes have the requests, not the blocks\n\n";

static int cli_warm_extra(int argc, char **argv, int *i, void *arg)
{
    (void)argc;
    bool *wait = arg;
    if (strcmp(argv[*i], "--no-wait") == 0) {
        *wait = false;
        return 1;
    }
    return 0;
}

int cli_cmd_warm(int argc, char **argv)
{
    cli_args a = {0};
    bool wait = true;
    int rc = cli_parse(argc, argv, &a, cli_warm_extra, &wait, warm_usage);
    if (rc)
        return rc;
    if (a.n_pos != 1) {
        cli_error("warm: give one s3://bucket/glob (see ringcache warm --help)");
        return CLI_USAGE;
    }
    if (!a.conn.cache.members || !a.conn.cache.members[0]) {
        cli_error("warm: give --cache MEMBERS (or set RINGCACHE_CACHE): warm loads the cache "
                  "nodes");
        return CLI_USAGE;
    }
    char bucket[CLI_BUCKET_MAX], key[CLI_KEY_MAX];
    if ((rc = cli_url("warm", a.pos[0], bucket, key)))
        return rc;
    return cli_cache_warm(&a.conn.cache, bucket, key, wait);
}

/* ---- put ----------------------------------------------------------------- */

static const char put_usage[] =
    "usage: ringcache put FILE s3://bucket/key [--part-size SIZE] [--parallel N] [options]\n"
    "Upload FILE. Files larger than the part size go up as a multipart upload with\n"
    "parts in parallel; a failed upload is aborted so no parts are left behind.\n"
    "  --part-size SIZE       bytes per part (default 8MiB, at least 5MiB)\n"
    "  --parallel N           parts in flight (default 4)\n\n";

int cli_cmd_put(int argc, char **argv)
{
    cli_args a = {0};
    cli_get_opts g = {.parallel = 4};
    int rc = cli_parse(argc, argv, &a, cli_get_extra, &g, put_usage);
    if (rc)
        return rc;
    if (a.n_pos != 2 || g.out || g.range) {
        cli_error("put: give FILE and s3://bucket/key (see ringcache put --help)");
        return CLI_USAGE;
    }
    char bucket[CLI_BUCKET_MAX], key[CLI_KEY_MAX];
    if ((rc = cli_url("put", a.pos[1], bucket, key)))
        return rc;
    if (!key[0] || key[strlen(key) - 1] == '/') {
        cli_error("put: %s needs an object key after the bucket", a.pos[1]);
        return CLI_USAGE;
    }
    int fd = open(a.pos[0], O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        cli_error("put: cannot read %s: %s", a.pos[0],
                  fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return CLI_FAIL;
    }
    if (a.conn.cache.members && a.conn.cache.members[0]) {
        cli_progress cp;
        rc = cli_cache_put(&a.conn.cache, bucket, key, fd, (uint64_t)st.st_size, &cp);
        close(fd);
        return rc;
    }
    s3_sync *s;
    if ((rc = cli_open(&s, &a))) {
        close(fd);
        return rc;
    }
    cli_progress p;
    cli_progress_init(&p, "put", (uint64_t)st.st_size);
    s3_sync_put_args pa = {
        .bucket = bucket,
        .key = key,
        .fd = fd,
        .size = (uint64_t)st.st_size,
        .part_size = g.part_size,
        .parallel = g.parallel,
        .progress = cli_progress_update,
        .progress_arg = &p,
    };
    char etag[S3_ETAG_MAX];
    s3_error err;
    rc = s3_sync_put(s, &pa, etag, &err);
    cli_progress_end(&p);
    s3_sync_destroy(&s);
    close(fd);
    if (rc < 0) {
        cli_error("%s", err.message);
        return CLI_FAIL;
    }
    printf("s3://%s/%s etag=%s size=%lld\n", bucket, key, etag, (long long)st.st_size);
    return CLI_OK;
}

/* ---- rm ------------------------------------------------------------------ */

static const char rm_usage[] = "usage: ringcache rm s3://bucket/key [options]\n"
                               "Delete an object (deleting a missing key succeeds, as in S3).\n\n";

int cli_cmd_rm(int argc, char **argv)
{
    cli_args a = {0};
    int rc = cli_parse(argc, argv, &a, NULL, NULL, rm_usage);
    if (rc)
        return rc;
    if (a.n_pos != 1) {
        cli_error("rm: give one s3://bucket/key (see ringcache rm --help)");
        return CLI_USAGE;
    }
    char bucket[CLI_BUCKET_MAX], key[CLI_KEY_MAX];
    if ((rc = cli_url("rm", a.pos[0], bucket, key)))
        return rc;
    if (!key[0]) {
        cli_error("rm: %s names a bucket, not an object", a.pos[0]);
        return CLI_USAGE;
    }
    s3_sync *s;
    if ((rc = cli_open(&s, &a)))
        return rc;
    s3_error err;
    rc = s3_sync_delete(s, bucket, key, &err);
    s3_sync_destroy(&s);
    if (rc < 0) {
        cli_error("%s", err.message);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* ---- stats ----------------------------------------------------------------- */

static const char stats_usage[] =
    "usage: ringcache stats --cache MEMBERS [--raw] [options]\n"
    "A table of every cache node, in member order: hit ratio of GETs, hits and misses,\n"
    "SSD and RAM used / capacity, blocks stored, fills (S3 GETs) and their bytes, S3\n"
    "errors, disk errors, error answers; then the total.\n"
    "  --raw                  every counter of every node instead (its /metrics, without\n"
    "                         comments)\n\n";

static int cli_stats_extra(int argc, char **argv, int *i, void *arg)
{
    (void)argc;
    bool *raw = arg;
    if (strcmp(argv[*i], "--raw") == 0) {
        *raw = true;
        return 1;
    }
    return 0;
}

int cli_cmd_stats(int argc, char **argv)
{
    cli_args a = {0};
    bool raw = false;
    int rc = cli_parse(argc, argv, &a, cli_stats_extra, &raw, stats_usage);
    if (rc)
        return rc;
    if (!a.conn.cache.members || !a.conn.cache.members[0] || a.n_pos) {
        cli_error("stats: give --cache MEMBERS (or set RINGCACHE_CACHE)");
        return CLI_USAGE;
    }
    return cli_cache_stats(&a.conn.cache, raw);
}
