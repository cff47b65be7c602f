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

#include "cli_cache.h"
#include "eng.h"
#include "rangesrc.h"
#include "ringcache.h"
#include "rs_rc.h"
#include "s3.h"
#include "warehouse.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char query_help[] =
    "usage: ringcache query [options] \"SQL\"\n"
    "       ringcache query [options] --queries-file FILE\n"
    "       ... | ringcache query [options]\n\n"
    "Runs SELECT / DESCRIBE statements (ClickHouse dialect) over Parquet, CSV, TSV and\n"
    "JSONEachRow files: FROM file('path/glob') or FROM s3('s3://bucket/glob' [, 'Format']);\n"
    "also FROM numbers(N), zeros(N), system.numbers, and SELECT without FROM; and over\n"
    "MergeTree tables kept on S3 (--warehouse): CREATE TABLE, INSERT INTO t SELECT /\n"
    "VALUES / FORMAT F (the data on standard input), OPTIMIZE, TRUNCATE, DROP, SHOW\n"
    "TABLES, DESCRIBE t, FROM t [FINAL], system.parts / tables / columns.\n"
    "s3(url, 'KEY', 'SECRET' [, 'SESSION_TOKEN'] [, 'Format']) reads that source with those\n"
    "credentials, s3(url, NOSIGN [, 'Format']) unsigned; both from S3 directly, also with\n"
    "--cache (the nodes fill with their own credentials).\n\n"
    "Options:\n"
    "  --format F             the output format: PrettyCompact (default on a terminal),\n"
    "                         Pretty, PrettySpace, TSV (default otherwise),\n"
    "                         TSVWithNames[AndTypes], TSVRaw, CSV, CSVWithNames[AndTypes],\n"
    "                         JSON, JSONCompact, JSONStrings, JSONEachRow,\n"
    "                         JSONStringsEachRow, JSONCompactEachRow[WithNames[AndTypes]],\n"
    "                         JSONCompactStringsEachRow, Vertical, Markdown, Values, Null,\n"
    "                         Parquet\n"
    "  --queries-file F       read the statements from F (separated by ';')\n"
    "  --max_threads N        default of the max_threads setting (default: the cores)\n"
    "  --page-cache SIZE      RAM of the compute-side page cache with --cache (default\n"
    "                         512MiB)\n"
    "  --warehouse URL        where tables live: s3://bucket/prefix/ (default:\n"
    "                         RINGCACHE_WAREHOUSE); CREATE TABLE, INSERT, FROM t, system.*\n"
    "  --database NAME        the current database (default: default)\n"
    "  --no-progress          no progress line on a terminal\n\n";

/* ---- S3 directly, or through the cache ------------------------------------ */

/* The query's S3 access: the S3 settings, and the cache client when --cache
 * is given (then rc is set and reads go through the nodes). A source with
 * its own credentials gets an s3_access of its own with rc NULL. */
typedef struct s3_access {
    s3_config cfg;
    rc_client *rc;
    bool cache_only; /* --cache-only: this process does not call S3 */
    const char *own; /* a source's own credentials: how errors name them */
    /* with --cache: bytes read from S3 directly by sources with their own
     * credentials (the query's access owns it; the others point at it) */
    _Atomic uint64_t direct_bytes;
    _Atomic uint64_t *count;
} s3_access;

/* An error of a source with its own credentials says whose they are: the S3
 * sentence's advice names the environment's variables, which that source
 * does not use, so the advice names what was given to s3() instead. */
static int own_error(const s3_access *a, int rc, char *err, size_t errlen)
{
    return a->own ? rs_s3_own_error(a->own, rc, err, errlen) : rc;
}

static int direct_list(const s3_config *cfg, const char *bucket, const char *glob,
                       const rs_key_ctx *g, char *err, size_t errlen)
{
    if (!cli_s3_signable(cfg)) {
        snprintf(err, errlen, "cannot list s3://%s/%s: %s", bucket, glob, cli_no_credentials);
        return -EACCES;
    }
    return rs_s3_list((void *)cfg, bucket, glob, g->fn, g->arg, err, errlen);
}

/* With --cache-only a listing cannot come from S3: a path without wildcards
 * names one object, whose size a HEAD through the nodes gives. */
static int cache_only_list(rc_client *c, const char *bucket, const char *glob, rs_key_ctx *g,
                           char *err, size_t errlen)
{
    s3_glob *sg = NULL;
    bool wild = s3_glob_create(&sg, glob) < 0 || s3_glob_has_wildcards(sg);
    s3_glob_destroy(&sg);
    if (wild)
        return rc_list(c, bucket, glob, rs_key_cb, g, err, errlen); /* refused, in words */
    rc_handle *h;
    int rc = rc_open(c, bucket, glob, &h, err, errlen);
    if (rc < 0)
        return rc;
    rc = g->fn(glob, rc_size(h), g->arg);
    rc_close(&h);
    return rc;
}

static int access_list(void *impl, const char *bucket, const char *glob, eng_key_fn fn, void *arg,
                       char *err, size_t errlen)
{
    s3_access *a = impl;
    rs_key_ctx g = {fn, arg, 0};
    int rc;
    if (!a->rc)
        return own_error(a, direct_list(&a->cfg, bucket, glob, &g, err, errlen), err, errlen);
    if (a->cache_only)
        rc = cache_only_list(a->rc, bucket, glob, &g, err, errlen);
    else
        rc = rc_list(a->rc, bucket, glob, rs_key_cb, &g, err, errlen);
    return g.rc < 0 ? g.rc : rc;
}

/* A source read from S3 directly while --cache is on: its bytes are counted
 * for the summary's "from S3 directly". */
typedef struct counted {
    rs_source *inner;
    _Atomic uint64_t *count;
} counted;

static int counted_read(void *impl, const rs_range *r, size_t n, char *err, size_t errlen)
{
    counted *c = impl;
    int rc = rs_read_ranges(c->inner, r, n, err, errlen);
    uint64_t b = 0;
    for (size_t i = 0; rc == 0 && i < n; i++)
        b += r[i].length;
    atomic_fetch_add_explicit(c->count, b, memory_order_relaxed);
    return rc;
}

static void counted_free(void *impl)
{
    counted *c = impl;
    rs_destroy(&c->inner);
    free(c);
}

static int access_open(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                       size_t errlen)
{
    s3_access *a = impl;
    if (a->rc)
        return rs_rc_open(out, a->rc, bucket, key, err, errlen);
    if (!cli_s3_signable(&a->cfg)) {
        snprintf(err, errlen, "cannot read s3://%s/%s: %s", bucket, key, cli_no_credentials);
        return -EACCES;
    }
    int rc = own_error(a, rs_s3_open(out, &a->cfg, bucket, key, err, errlen), err, errlen);
    if (rc < 0 || !a->count)
        return rc;
    counted *c = malloc(sizeof(*c));
    if (!c) {
        rs_destroy(out);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *c = (counted){*out, a->count};
    static const rs_ops ops = {counted_read, counted_free};
    rs_source *inner = *out;
    rc = rs_source_create(out, &ops, c, rs_name(inner), rs_size(inner), rs_version(inner));
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}

static void access_free(void *impl)
{
    s3_access *a = impl;
    if (a) {
        memset(a->cfg.secret_key, 0, sizeof(a->cfg.secret_key));
        free(a);
    }
}

/* s3(url, key, secret [, token]) and s3(url, NOSIGN): S3 directly with those
 * credentials and the process's endpoint and settings, also with --cache:
 * the cache nodes fill with their own credentials, so serving such a source
 * from the nodes would answer without its key ever being checked. */
static int access_as(void *impl, const eng_s3_creds *cr, eng_s3_access *out, char *err,
                     size_t errlen)
{
    const s3_access *q = impl;
    if (q->cache_only) {
        snprintf(err, errlen,
                 "s3() with its own credentials reads S3 directly (the cache "
                 "nodes fill with theirs), and --cache-only says this process does "
                 "not call S3: drop the credentials from s3() or --cache-only");
        return -EHOSTDOWN;
    }
    s3_access *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    a->count = q->rc ? (_Atomic uint64_t *)&((s3_access *)impl)->direct_bytes : NULL;
    int rc = rs_s3_own_config(&a->cfg, &q->cfg, cr->nosign != 0, cr->access_key, cr->secret_key,
                              cr->session_token, &a->own, err, errlen);
    if (rc < 0) {
        access_free(a);
        return rc;
    }
    *out = (eng_s3_access){access_list, access_open, a, access_free};
    return 0;
}

/* ---- the summary's line about the cache ------------------------------------ */

/* With --cache, after each statement's summary: how many bytes the cache
 * nodes answered and how many came from S3 directly (a node down, a node's
 * own S3 failing, or a source with its own credentials), so a cache that is
 * not used does not go unnoticed. */
typedef struct cache_summary {
    s3_access *a;
    rc_stats last;
    uint64_t last_direct;
} cache_summary;

/* After each statement: the line, and the next statement is another query
 * to the cache client (rc_query_begin). */
static void cache_summary_line(void *arg, FILE *f)
{
    cache_summary *cs = arg;
    rc_query_begin(cs->a->rc);
    rc_stats st;
    rc_stats_get(cs->a->rc, &st);
    uint64_t direct = atomic_load(&cs->a->direct_bytes);
    uint64_t node = st.node_bytes - cs->last.node_bytes;
    uint64_t s3 = st.s3_bytes - cs->last.s3_bytes + (direct - cs->last_direct);
    uint64_t fb = st.fallbacks - cs->last.fallbacks;
    uint64_t up = st.upstream_fallbacks - cs->last.upstream_fallbacks;
    char nb[32], sb[32];
    eng_format_bytes((double)node, nb, sizeof(nb));
    eng_format_bytes((double)s3, sb, sizeof(sb));
    fprintf(f, "Read through the cache: %s from cache nodes, %s from S3 directly", nb, sb);
    if (fb)
        fprintf(f, " (%llu block read%s went to S3: %s)", (unsigned long long)fb,
                fb == 1 ? "" : "s",
                up == fb ? "the nodes' own S3 access failed"
                : up     ? "no node could serve them, or a node's own S3 failed"
                         : "no node could serve them");
    if (direct - cs->last_direct)
        fputs("; sources with their own credentials in s3() are read from S3 directly", f);
    fputs(".\n", f);
    cs->last = st;
    cs->last_direct = direct;
}

/* ---- tables --------------------------------------------------------------------- */

static int cache_open(void *impl, const char *bucket, const char *key, rs_source **out, char *err,
                      size_t errlen)
{
    return rs_rc_open(out, impl, bucket, key, err, errlen);
}

static int cache_put(void *arg, const char *bucket, const char *key, const void *data, size_t len,
                     char *err, size_t errlen)
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
        wh->io.put_v = rs_rc_put_key_v;           /* the log records each part's version */
        wh->io.open_known = rs_rc_open_known_key; /* and a query opens it without a HEAD */
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

int eng_cli_query(int argc, char **argv)
{
    const char *sql = NULL, *qfile = NULL, *fmt = NULL, *threads = NULL, *warehouse = NULL,
               *database = NULL;
    uint64_t pcache = 0;
    bool no_progress = false;
    cli_conn conn;
    int rc = cli_conn_init(&conn, argc, argv);
    if (rc)
        return rc;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(query_help, stdout);
            cli_conn_help(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--no-progress") == 0) {
            no_progress = true;
            continue;
        }
        if ((r = cli_conn_opt(&conn, argc, argv, &i)) != 0) {
            if (r < 0)
                return CLI_USAGE;
        } else if ((r = cli_opt(argc, argv, &i, "format", &v)) != 0) {
            if (r < 0)
                return CLI_USAGE;
            fmt = v;
        } else if ((r = cli_opt(argc, argv, &i, "queries-file", &v)) != 0) {
            if (r < 0)
                return CLI_USAGE;
            qfile = v;
        } else if ((r = cli_opt(argc, argv, &i, "max_threads", &v)) != 0 ||
                   (r = cli_opt(argc, argv, &i, "max-threads", &v)) != 0) {
            if (r < 0)
                return CLI_USAGE;
            threads = v;
        } else if ((r = cli_opt(argc, argv, &i, "warehouse", &v)) != 0) {
            if (r < 0)
                return CLI_USAGE;
            warehouse = v;
        } else if ((r = cli_opt(argc, argv, &i, "database", &v)) != 0) {
            if (r < 0)
                return CLI_USAGE;
            database = v;
        } else if ((r = cli_opt(argc, argv, &i, "page-cache", &v)) != 0) {
            if (r < 0 || cli_size_opt("page-cache", v, &pcache) < 0)
                return CLI_USAGE;
            if (pcache == 0 || pcache > SIZE_MAX / 2) {
                cli_error("--page-cache takes a size above 0, such as 512MiB");
                return CLI_USAGE;
            }
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            cli_error("query: unknown option '%s' (see ringcache query --help)", argv[i]);
            return CLI_USAGE;
        } else if (!sql) {
            sql = argv[i];
        } else {
            cli_error("query: more than one query argument: put several statements in one "
                      "string separated by ';'");
            return CLI_USAGE;
        }
    }
    eng_ctx ctx = {.out = stdout, .allow_outfile = true};
    if (fmt) {
        int f = eng_format_parse(fmt);
        if (f < 0) {
            cli_error("query: unknown format '%s' (use %s)", fmt, eng_format_list());
            return CLI_USAGE;
        }
        ctx.format = (eng_format)f;
    } else {
        ctx.format = isatty(STDOUT_FILENO) ? ENG_FMT_PRETTY_COMPACT : ENG_FMT_TSV;
    }
    if (threads) {
        char *end;
        long t = strtol(threads, &end, 10);
        if (*threads == 0 || *end || t < 0 || t > 1024) {
            cli_error("query: --max_threads needs a number 0..1024, not '%s'", threads);
            return CLI_USAGE;
        }
        ctx.max_threads = (int)t;
    }
    if (!no_progress && isatty(STDERR_FILENO))
        ctx.progress = stderr;
    char *text = NULL;
    size_t len = 0;
    if (sql && qfile) {
        cli_error("query: give the SQL or --queries-file, not both");
        return CLI_USAGE;
    }
    if (qfile) {
        FILE *f = fopen(qfile, "rb");
        if (!f) {
            cli_error("query: cannot open %s: %s (check --queries-file)", qfile, strerror(errno));
            return CLI_FAIL;
        }
        text = read_stream(f, &len);
        fclose(f);
    } else if (sql) {
        text = strdup(sql);
        len = text ? strlen(text) : 0;
    } else {
        if (isatty(STDIN_FILENO)) {
            fputs(query_help, stderr);
            return CLI_USAGE;
        }
        text = read_stream(stdin, &len);
    }
    if (!text) {
        cli_error("query: out of memory reading the query");
        return CLI_FAIL;
    }
    s3_access d = {.cfg = conn.s3.cfg, .cache_only = conn.cache.cache_only};
    ctx.list_s3 = access_list;
    ctx.open_s3 = access_open;
    ctx.s3_impl = &d;
    ctx.s3_as = access_as;
    char err[ENG_MSG_MAX];
    rc_client *rcc = NULL;
    const char *cache = conn.cache.members;
    if (cache && cache[0]) {
        rc_config rcfg;
        cli_cache_config(&conn.cache, &rcfg);
        if (pcache)
            rcfg.page_cache_bytes = (size_t)pcache;
        if (ctx.max_threads > 0)
            rcfg.max_threads = ctx.max_threads;
        /* a file may be read more than once in one query (a text file's schema
         * is inferred from its first bytes, then scanned; several statements
         * read the same files): what was fetched stays for the next read */
        rcfg.cache_scans = true;
        rc = rc_create(&rcc, &rcfg, err, sizeof(err));
        if (rc < 0) {
            cli_error("--cache: %s", err);
            free(text);
            return rc == -EINVAL ? CLI_USAGE : CLI_FAIL;
        }
        d.rc = rcc;
    }
    cache_summary cs = {&d, {0}, 0};
    if (rcc) {
        rc_stats_get(rcc, &cs.last);
        ctx.summary_more = cache_summary_line;
        ctx.summary_arg = &cs;
    }
    tb_wh wh;
    rc = setup_warehouse(&wh, warehouse, &d.cfg, rcc, err, sizeof(err));
    if (rc < 0) {
        cli_error("query: %s", err);
        rc_destroy(&rcc);
        free(text);
        return CLI_USAGE;
    }
    tb_cat *cat = NULL;
    if (rc > 0) {
        /* the tables' states and part footers kept between the statements of
         * one run: the second query of a table costs S3 one List of its log */
        if (tb_cat_create(&cat, 0) == 0)
            wh.cat = cat;
        ctx.warehouse = &wh;
    }
    ctx.database = database;
    if ((sql || qfile) && !isatty(STDIN_FILENO)) { /* stdin: INSERT ... FORMAT F data */
        ctx.input_read = stdin_read;
        ctx.input_arg = stdin;
    }
    eng_result res;
    rc = eng_run(&ctx, text, len, stderr, &res, err, sizeof(err));
    if (rc < 0)
        cli_error("query: %s", err);
    tb_cat_destroy(&cat);
    rc_destroy(&rcc);
    free(text);
    return rc < 0 ? CLI_FAIL : CLI_OK;
}
