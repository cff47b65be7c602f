/* SPDX-License-Identifier: Apache-2.0
 *
 * cli_conn.c: the connection options every `ringcache` command takes, S3's
 * and the cache tier's, in one table that drives the environment, the
 * command line and --help (see cli_cache.h). S3's variables (AWS_*) and the
 * shared AWS files are read by the S3 client's own chain
 * (s3_config_from_env), after --profile; the cache tier's (RINGCACHE_*) by
 * this table. An option on the command line wins over its variable.
 * Requests are signed with the credentials that chain finds; unsigned
 * requests only when asked (--no-sign-request), never because none were
 * found.
 */
#include "cli_cache.h"

#include "ringcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char cli_no_credentials[] =
    "no S3 credentials were found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or "
    "--profile, ~/.aws/credentials, ~/.aws/config): set them, or pass --no-sign-request for a "
    "public bucket";

/* ---- values ----------------------------------------------------------------- */

static int set_bool(const char *what, const char *v, bool *out)
{
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
        !strcasecmp(v, "on")) {
        *out = true;
        return 0;
    }
    if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") ||
        !strcasecmp(v, "off")) {
        *out = false;
        return 0;
    }
    cli_error("%s='%s' is not a yes or no (1, true, yes, on or 0, false, no, off)", what, v);
    return -1;
}

static int set_members(cli_conn *c, const char *what, const char *v)
{
    (void)what;
    c->cache.members = v;
    return 0;
}

static int set_token(cli_conn *c, const char *what, const char *v)
{
    (void)what;
    c->cache.token = v;
    return 0;
}

static int set_tls(cli_conn *c, const char *what, const char *v)
{
    return set_bool(what, v, &c->cache.tls);
}

static int set_tls_ca(cli_conn *c, const char *what, const char *v)
{
    (void)what;
    c->cache.tls_ca = v;
    return 0;
}

static int set_dns(cli_conn *c, const char *what, const char *v)
{
    (void)what;
    c->cache.dns_server = v;
    return 0;
}

static int set_hedge(cli_conn *c, const char *what, const char *v)
{
    char *end = NULL;
    long ms = strtol(v, &end, 10);
    if (end == v || *end || ms < 0 || ms > 600000) {
        cli_error("%s '%s' is not a number of milliseconds from 0 to 600000 (0 turns hedging "
                  "off)",
                  what, v);
        return -1;
    }
    c->cache.hedge_ms = (int)ms;
    return 0;
}

static int set_cache_only(cli_conn *c, const char *what, const char *v)
{
    return set_bool(what, v, &c->cache.cache_only);
}

static int set_no_fill(cli_conn *c, const char *what, const char *v)
{
    return set_bool(what, v, &c->cache.no_fill);
}

/* ---- the table ----------------------------------------------------------------- */

enum { G_S3, G_CACHE };

typedef struct conn_opt {
    const char *name; /* the flag, without "--" */
    const char *arg;  /* its value in --help; NULL: a switch */
    const char *env;  /* the variable this table reads (NULL: none) */
    int (*set)(cli_conn *c, const char *what, const char *v); /* NULL: cli_s3_opt's */
    const char *help; /* for --help; lines after the first start with \n */
    int group;
} conn_opt;

static const conn_opt conn_opts[] = {
    {"endpoint", "URL", NULL, NULL,
     "S3 endpoint, e.g. http://127.0.0.1:9000, path-style\n(AWS_ENDPOINT_URL_S3, "
     "AWS_ENDPOINT_URL; default: AWS for the\nregion)",
     G_S3},
    {"region", "NAME", NULL, NULL,
     "signing region (AWS_REGION, AWS_DEFAULT_REGION; default\n"
     "us-east-1)",
     G_S3},
    {"profile", "NAME", NULL, NULL,
     "section of ~/.aws/credentials and ~/.aws/config (AWS_PROFILE;\ndefault: default)", G_S3},
    {"no-sign-request", NULL, NULL, NULL,
     "unsigned requests, for public buckets (without it requests are\nsigned with "
     "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and\nAWS_SESSION_TOKEN, else the profile's "
     "keys; none found is an\nerror)",
     G_S3},
    {"ca-bundle", "FILE", NULL, NULL, "PEM file of CAs for https (AWS_CA_BUNDLE)", G_S3},
    {"virtual-host", NULL, NULL, NULL, "bucket.host addressing instead of host/bucket", G_S3},
    {"connect-timeout", "MS", NULL, NULL, "per attempt (default 3000)", G_S3},
    {"timeout", "MS", NULL, NULL,
     "a transfer that moves nothing this long fails (default\n"
     "30000)",
     G_S3},
    {"attempts", "N", NULL, NULL, "tries per request, the first included (default 5)", G_S3},
    {"cache", "MEMBERS", "RINGCACHE_CACHE", set_members,
     "go through these cache nodes instead of S3 directly:\nid=host:port,... or host:port,..., "
     "file:PATH, or dns:NAME:PORT\nfor the SRV records of a headless Service",
     G_CACHE},
    {"token", "TOKEN", "RINGCACHE_TOKEN", set_token, "tenant token the nodes expect", G_CACHE},
    {"cache-tls", NULL, "RINGCACHE_CACHE_TLS", set_tls,
     "TLS to the cache nodes; a node found through dns: must carry\nits SRV target's name in its "
     "certificate (e.g.\n*.ringcache-headless.NS.svc.cluster.local), a listed one the\nhost or "
     "IP it is listed as",
     G_CACHE},
    {"cache-tls-ca", "FILE", "RINGCACHE_CACHE_TLS_CA", set_tls_ca,
     "PEM file of the CAs that signed the nodes' certificates\n(default the system's); implies "
     "--cache-tls",
     G_CACHE},
    {"dns-server", "IP:PORT", "RINGCACHE_DNS_SERVER", set_dns,
     "DNS server for dns: members instead of /etc/resolv.conf's", G_CACHE},
    {"hedge-ms", "MS", "RINGCACHE_HEDGE_MS", set_hedge,
     "a node that sends nothing for MS ms, then does not answer a\nPING within 2 x MS ms, is "
     "marked down and its requests also go\nto the next owner (default 500; 0: off, a stopped "
     "node then\nholds a read for 30 s)",
     G_CACHE},
    {"cache-only", NULL, NULL, set_cache_only,
     "this process never calls S3 itself: reads, HEADs and PUTs go\nthrough the nodes only "
     "(which fill from S3 as usual); fail when\nno node can answer or a node's own S3 fails "
     "(listing a glob\nneeds S3: ls, warm and globs in queries are refused)",
     G_CACHE},
    {"no-fill", NULL, NULL, set_no_fill,
     "ask the nodes not to fill from S3: blocks they do not have are\nread from S3 directly, or "
     "fail with --cache-only (to check\nthat a warm holds an object)",
     G_CACHE},
};

#define N_CONN_OPTS (sizeof(conn_opts) / sizeof(conn_opts[0]))

int cli_conn_init(cli_conn *c, int argc, char **argv)
{
    memset(c, 0, sizeof(*c));
    c->cache.hedge_ms = -1;
    const char *profile = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r = cli_opt(argc, argv, &i, "profile", &v);
        if (r < 0)
            return CLI_USAGE;
        if (r > 0)
            profile = v;
    }
    int rc = cli_s3_env(&c->s3, profile);
    if (rc)
        return rc;
    c->cache.s3 = &c->s3.cfg;
    for (size_t k = 0; k < N_CONN_OPTS; k++) {
        const conn_opt *o = &conn_opts[k];
        const char *v = o->env ? getenv(o->env) : NULL;
        if (v && v[0] && o->set(c, o->env, v) < 0)
            return CLI_USAGE;
    }
    return 0;
}

int cli_conn_opt(cli_conn *c, int argc, char **argv, int *i)
{
    for (size_t k = 0; k < N_CONN_OPTS; k++) {
        const conn_opt *o = &conn_opts[k];
        if (!o->set) {
            if (!strcmp(o->name, "profile")) { /* applied by cli_conn_init */
                const char *v;
                int r = cli_opt(argc, argv, i, "profile", &v);
                if (r)
                    return r;
                continue;
            }
            continue; /* S3's: below */
        }
        char what[64];
        snprintf(what, sizeof(what), "--%s", o->name);
        if (!o->arg) {
            if (strcmp(argv[*i], what) != 0)
                continue;
            return o->set(c, what, "1") < 0 ? -1 : 1;
        }
        const char *v;
        int r = cli_opt(argc, argv, i, o->name, &v);
        if (r < 0)
            return -1;
        if (r > 0)
            return o->set(c, what, v) < 0 ? -1 : 1;
    }
    return cli_s3_opt(&c->s3, argc, argv, i);
}

void cli_conn_help(FILE *f)
{
    static const char *const titles[] = {
        "S3 options (S3's variables and the AWS files give the defaults):\n",
        "Cache options (through cache nodes; the variable is read when the option is not\n"
        "given):\n"};
    for (int g = G_S3; g <= G_CACHE; g++) {
        fputs(titles[g], f);
        for (size_t k = 0; k < N_CONN_OPTS; k++) {
            const conn_opt *o = &conn_opts[k];
            if (o->group != g)
                continue;
            char left[64];
            snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "",
                     o->arg ? o->arg : "");
            fprintf(f, "  %-22s ", left);
            for (const char *h = o->help; *h; h++) {
                fputc(*h, f);
                if (*h == '\n')
                    fprintf(f, "%25s", "");
            }
            if (o->env)
                fprintf(f, "%s(%s%s)",
                        strlen(o->help) > 40 || strchr(o->help, '\n')
                            ? "\n                         "
                            : " ",
                        o->env, o->arg ? "" : "=1");
            fputc('\n', f);
        }
        fputc('\n', f);
    }
    fputs("A node that cannot be used (connection refused, timed out, TLS, token refused,\n"
          "stopped, its own S3 failing) is named once on stderr, with where its blocks go.\n\n",
          f);
}

void cli_cache_config(const cli_cache_opts *o, rc_config *cfg)
{
    rc_config_init(cfg);
    cfg->members = o->members;
    cfg->token = o->token;
    if (o->s3)
        cfg->s3 = *o->s3;
    cfg->cache_only = o->cache_only;
    cfg->no_fill = o->no_fill;
    if (o->hedge_ms >= 0)
        cfg->hedge_ms = o->hedge_ms;
    cfg->node_warn = cli_node_warn;
    bool ca = o->tls_ca && o->tls_ca[0];
    cfg->tls = o->tls || ca; /* --cache-tls-ca implies --cache-tls */
    cfg->tls_ca = ca ? o->tls_ca : NULL;
    cfg->dns_server = o->dns_server;
}

/* node_warn: the I/O thread or a reader's; stderr's own lock keeps lines whole. */
void cli_node_warn(const char *sentence, void *arg)
{
    (void)arg;
    fprintf(stderr, "ringcache: warning: %s\n", sentence);
}

bool cli_s3_signable(const s3_config *cfg)
{
    return cfg->anonymous || cfg->access_key[0];
}
