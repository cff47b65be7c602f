/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_cli.c: `ringcache query`, the command-line face of the engine. Reads
 * the SQL from the argument, --queries-file or standard input; picks the
 * output format (--format, else PrettyCompact on a terminal and TSV
 * otherwise, like clickhouse-client); reads S3 directly (AWS environment) or,
 * with --cache MEMBERS, through libringcache (the cache tier and its page
 * cache); prints the result on stdout and the summary on stderr.
 */
#include "eng_cli.h"

#include "eng.h"
#include "rangesrc.h"
#include "ringcache.h"
#include "rs_rc.h"
#include "s3.h"
#include "warehouse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char query_help[] =
    "usage: ringcache query [options] \"SQL\"\n"
    "       ringcache query [options] --queries-file FILE\n"
    "       ... | ringcache query [options]\n\n"
    "Runs SELECT / DESCRIBE statements (ClickHouse dialect) over Parquet, CSV, TSV and\n"
    "JSONEachRow files: FROM file('path/glob') or FROM s3('s3://bucket/glob' [, 'Format']),\n"
    "and over MergeTree tables kept on S3 (--warehouse): CREATE TABLE, INSERT INTO t\n"
    "SELECT / VALUES / FORMAT F (the data on standard input), OPTIMIZE, TRUNCATE, DROP,\n"
    "SHOW TABLES, DESCRIBE t, FROM t [FINAL], system.parts / tables / columns.\n\n"
    "Options:\n"
    "  --format F          PrettyCompact (default on a terminal), TSV, TSVWithNames, CSV,\n"
    "                      CSVWithNames, JSONEachRow, Null, Parquet (default otherwise: TSV)\n"
    "  --queries-file F    read the statements from F (separated by ';')\n"
    "  --max_threads N     default of the max_threads setting (default: the cores)\n"
    "  --cache MEMBERS     read S3 through cache nodes (libringcache): host:port,... or\n"
    "                      dns:NAME; default: RINGCACHE_CACHE; none: S3 directly\n"
    "  --page-cache SIZE   RAM of the compute-side page cache with --cache (default 512MiB)\n"
    "  --endpoint URL      S3 endpoint (default: AWS_ENDPOINT_URL or AWS)\n"
    "  --warehouse URL     where tables live: s3://bucket/prefix/ (default:\n"
    "                      RINGCACHE_WAREHOUSE); CREATE TABLE, INSERT, FROM t, system.*\n"
    "  --database NAME     the current database (default: default)\n"
    "  --no-progress       no progress line on a terminal\n"
    "S3 credentials and region come from the AWS environment (AWS_ACCESS_KEY_ID, ...);\n"
    "without credentials requests are anonymous.\n";

/* ---- S3 directly --------------------------------------------------------- */

typedef struct direct_s3 {
    s3_config cfg;
} direct_s3;

typedef struct glob_ctx {
    eng_key_fn fn;
    void *arg;
    int rc;
} glob_ctx;

static int glob_cb(const s3_object_info *info, void *arg)
{
    glob_ctx *g = arg;
    int rc = g->fn(info->key, info->size, g->arg);
    if (rc < 0) {
        g->rc = rc;
        return rc;
    }
    return 0;
}

static int direct_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
                       char *err, size_t errlen)
{
    direct_s3 *d = impl;
    s3_sync *s;
    int rc = s3_sync_create(&s, &d->cfg);
    if (rc < 0) {
        snprintf(err, errlen, "cannot start the S3 client: %s", strerror(-rc));
        return rc;
    }
    glob_ctx g = {fn, arg, 0};
    s3_error e = {0};
    rc = s3_sync_glob(s, bucket, glob, glob_cb, &g, &e);
    s3_sync_destroy(&s);
    if (g.rc < 0)
        rc = g.rc;
    if (rc < 0)
        snprintf(err, errlen, "cannot list s3://%s/%s: %s", bucket, glob,
                 e.message[0] ? e.message : strerror(-rc));
    return rc < 0 ? rc : 0;
}

static int direct_open(void *impl, const char *bucket, const char *key, rs_source **out,
                       char *err, size_t errlen)
{
    direct_s3 *d = impl;
    return rs_s3_open(out, &d->cfg, bucket, key, err, errlen);
}

/* ---- through the cache -------------------------------------------------- */

static int cache_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
                      char *err, size_t errlen)
{
    glob_ctx g = {fn, arg, 0};
    int rc = rc_list(impl, bucket, glob, glob_cb, &g, err, errlen);
    return g.rc < 0 ? g.rc : rc;
}

static int cache_open(void *impl, const char *bucket, const char *key, rs_source **out,
                      char *err, size_t errlen)
{
    return rs_rc_open(out, impl, bucket, key, err, errlen);
}

/* ---- tables --------------------------------------------------------------------- */

static int cache_put(void *arg, const char *bucket, const char *key, const void *data,
                     size_t len, char *err, size_t errlen)
{
    return rc_put(arg, bucket, key, data, len, NULL, err, errlen);
}

static int64_t stdin_read(void *arg, void *buf, size_t len)
{
    size_t n = fread(buf, 1, len, arg);
    if (n == 0 && ferror((FILE *)arg))
        return -EIO;
    return (int64_t)n;
}

/* The warehouse (--warehouse, else RINGCACHE_WAREHOUSE): its log and listings
 * straight to S3; its part objects through the cache when there is one
 * (written through, read from the nodes). 0 when there is none. */
static int setup_warehouse(tb_wh *wh, const char *url, const s3_config *cfg, rc_client *rcc,
                           char *err, size_t errlen)
{
    if (!url)
        url = getenv("RINGCACHE_WAREHOUSE");
    if (!url || !url[0])
        return 0;
    int rc = tb_wh_init(wh, url, cfg, err, errlen);
    if (rc < 0)
        return rc;
    if (rcc) {
        wh->io.open = cache_open;
        wh->io.open_arg = rcc;
        wh->io.put = cache_put;
        wh->io.put_arg = rcc;
    }
    return 1;
}

/* ---- the command --------------------------------------------------------------- */

static char *read_stream(FILE *f, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    if (!b)
        return NULL;
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    b[n] = 0;
    *len = n;
    return b;
}

static int opt(int argc, char **argv, int *i, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return 0;
    if (argv[*i][n] == '=') {
        *val = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != 0)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "ringcache query: %s needs a value (see ringcache query --help)\n", name);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

int eng_cli_query(int argc, char **argv)
{
    const char *sql = NULL, *qfile = NULL, *fmt = NULL, *cache = NULL, *endpoint = NULL,
               *threads = NULL, *pcache = NULL, *warehouse = NULL, *database = NULL;
    bool no_progress = false;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(query_help, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--no-progress") == 0) {
            no_progress = true;
            continue;
        }
        if ((r = opt(argc, argv, &i, "--format", &v)) != 0) {
            if (r < 0)
                return 2;
            fmt = v;
        } else if ((r = opt(argc, argv, &i, "--queries-file", &v)) != 0) {
            if (r < 0)
                return 2;
            qfile = v;
        } else if ((r = opt(argc, argv, &i, "--cache", &v)) != 0) {
            if (r < 0)
                return 2;
            cache = v;
        } else if ((r = opt(argc, argv, &i, "--endpoint", &v)) != 0) {
            if (r < 0)
                return 2;
            endpoint = v;
        } else if ((r = opt(argc, argv, &i, "--max_threads", &v)) != 0 ||
                   (r = opt(argc, argv, &i, "--max-threads", &v)) != 0) {
            if (r < 0)
                return 2;
            threads = v;
        } else if ((r = opt(argc, argv, &i, "--warehouse", &v)) != 0) {
            if (r < 0)
                return 2;
            warehouse = v;
        } else if ((r = opt(argc, argv, &i, "--database", &v)) != 0) {
            if (r < 0)
                return 2;
            database = v;
        } else if ((r = opt(argc, argv, &i, "--page-cache", &v)) != 0) {
            if (r < 0)
                return 2;
            pcache = v;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "ringcache query: unknown option '%s' (see ringcache query --help)\n",
                    argv[i]);
            return 2;
        } else if (!sql) {
            sql = argv[i];
        } else {
            fprintf(stderr, "ringcache query: more than one query argument: put several "
                            "statements in one string separated by ';'\n");
            return 2;
        }
    }
    eng_ctx ctx = {.out = stdout, .allow_outfile = true};
    if (fmt) {
        int f = eng_format_parse(fmt);
        if (f < 0) {
            fprintf(stderr, "ringcache query: unknown format '%s' (use PrettyCompact, TSV, "
                            "TSVWithNames, CSV, CSVWithNames, JSONEachRow, Null or Parquet)\n",
                    fmt);
            return 2;
        }
        ctx.format = (eng_format)f;
    } else {
        ctx.format = isatty(STDOUT_FILENO) ? ENG_FMT_PRETTY_COMPACT : ENG_FMT_TSV;
    }
    if (threads) {
        char *end;
        long t = strtol(threads, &end, 10);
        if (*end || t < 0 || t > 1024) {
            fprintf(stderr, "ringcache query: --max_threads needs a number 0..1024, not '%s'\n",
                    threads);
            return 2;
        }
        ctx.max_threads = (int)t;
    }
    if (!no_progress && isatty(STDERR_FILENO))
        ctx.progress = stderr;
    char *text = NULL;
    size_t len = 0;
    if (sql && qfile) {
        fprintf(stderr, "ringcache query: give the SQL or --queries-file, not both\n");
        return 2;
    }
    if (qfile) {
        FILE *f = fopen(qfile, "rb");
        if (!f) {
            fprintf(stderr, "ringcache query: cannot open %s: %s (check --queries-file)\n", qfile,
                    strerror(errno));
            return 1;
        }
        text = read_stream(f, &len);
        fclose(f);
    } else if (sql) {
        text = strdup(sql);
        len = text ? strlen(text) : 0;
    } else {
        if (isatty(STDIN_FILENO)) {
            fputs(query_help, stderr);
            return 2;
        }
        text = read_stream(stdin, &len);
    }
    if (!text) {
        fprintf(stderr, "ringcache query: out of memory reading the query\n");
        return 1;
    }
    direct_s3 d;
    s3_config_init(&d.cfg);
    char err[ENG_MSG_MAX];
    int rc = s3_config_from_env(&d.cfg, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "ringcache query: %s\n", err);
        free(text);
        return 2;
    }
    if (endpoint) {
        snprintf(d.cfg.endpoint, sizeof(d.cfg.endpoint), "%s", endpoint);
        d.cfg.path_style = true;
    }
    if (!d.cfg.access_key[0])
        d.cfg.anonymous = true;
    ctx.list_s3 = direct_list;
    ctx.open_s3 = direct_open;
    ctx.s3_impl = &d;
    rc_client *rcc = NULL;
    if (!cache)
        cache = getenv("RINGCACHE_CACHE");
    if (cache && cache[0]) {
        rc_config rcfg;
        rc_config_init(&rcfg);
        rcfg.members = cache;
        if (rc_config_from_env(&rcfg, err, sizeof(err)) < 0) {
            fprintf(stderr, "ringcache query: %s\n", err);
            free(text);
            return 2;
        }
        rcfg.s3 = d.cfg;
        if (pcache) {
            char *end;
            unsigned long long v = strtoull(pcache, &end, 10);
            if (*end == 'K' || *end == 'k')
                v <<= 10;
            else if (*end == 'M')
                v <<= 20;
            else if (*end == 'G')
                v <<= 30;
            rcfg.page_cache_bytes = (size_t)v;
        }
        if (ctx.max_threads > 0)
            rcfg.max_threads = ctx.max_threads;
        if (rc_create(&rcc, &rcfg, err, sizeof(err)) < 0) {
            fprintf(stderr, "ringcache query: cannot start the cache client: %s\n", err);
            free(text);
            return 1;
        }
        ctx.list_s3 = cache_list;
        ctx.open_s3 = cache_open;
        ctx.s3_impl = rcc;
    }
    tb_wh wh;
    rc = setup_warehouse(&wh, warehouse, &d.cfg, rcc, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "ringcache query: %s\n", err);
        rc_destroy(&rcc);
        free(text);
        return 2;
    }
    if (rc > 0)
        ctx.warehouse = &wh;
    ctx.database = database;
    if ((sql || qfile) && !isatty(STDIN_FILENO)) { /* stdin: INSERT ... FORMAT F data */
        ctx.input_read = stdin_read;
        ctx.input_arg = stdin;
    }
    eng_result res;
    rc = eng_run(&ctx, text, len, stderr, &res, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "ringcache query: %s\n", err);
    rc_destroy(&rcc);
    free(text);
    return rc < 0 ? 1 : 0;
}
