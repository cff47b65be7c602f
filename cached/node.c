/* SPDX-License-Identifier: Apache-2.0
 *
 * node.c: the node's lifecycle. node_create runs an ordered list of module
 * setups, each with its teardown; on a failure, and in node_destroy, the
 * teardowns of the modules set up so far run in reverse (Pelikan's
 * setup()/teardown()). A setup writes one sentence into err on failure and
 * never prints. node_run starts the workers and waits for node_stop; the
 * drain itself is node_worker.c's.
 *
 *   module      sets up                                      needs
 *   log         the log level                                -
 *   s3          the S3 settings (environment, then flags)    -
 *   tenants     the tenants file                             -
 *   access      protected mode: the listen address           tenants
 *   limits      worker threads, --max-connections            -
 *   tls         the protocol port's certificate              -
 *   store       the block store                              -
 *   metrics     the registry and the node's table            store, limits
 *   fills       the fill table                               -
 *   workers     loops, listeners, store workers, S3 clients  all above
 *   s3api       the S3 API's listeners (--s3-api-port)       workers, tenants, tls
 *   main-loop   the main thread's loop, the membership       -
 *   admin       the admin HTTP server                        metrics
 *   port-file   --port-file                                  workers
 */
#include "node_int.h"
#include "node_s3api.h"
#include "errf.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

/* ---- the modules' setups and teardowns -------------------------------------------- */

static int log_setup(node *n, char *err, size_t errlen)
{
    int level = node_log_level_of(n->conf.log_level);
    if (level < 0) {
        errf_set(err, errlen, "--log-level must be error, warn, info or debug, not '%s'",
                 n->conf.log_level);
        return -EINVAL;
    }
    node_log_set_level(level);
    return 0;
}

static int s3_setup(node *n, char *err, size_t errlen)
{
    const node_conf *conf = &n->conf;
    s3_config_init(&n->s3cfg);
    if (s3_config_from_env(&n->s3cfg, err, errlen) < 0)
        return -EINVAL;
    if (conf->s3_endpoint[0]) {
        snprintf(n->s3cfg.endpoint, sizeof(n->s3cfg.endpoint), "%s", conf->s3_endpoint);
        n->s3cfg.path_style = true;
    }
    if (conf->s3_region[0])
        snprintf(n->s3cfg.region, sizeof(n->s3cfg.region), "%s", conf->s3_region);
    if (conf->s3_access_key[0])
        snprintf(n->s3cfg.access_key, sizeof(n->s3cfg.access_key), "%s", conf->s3_access_key);
    if (conf->s3_secret_key[0])
        snprintf(n->s3cfg.secret_key, sizeof(n->s3cfg.secret_key), "%s", conf->s3_secret_key);
    n->s3cfg.max_connections = (int)conf->s3_connections;
    /* a fill's own S3 retries must fit inside the fill deadline */
    n->s3cfg.retry_budget_ms = (int)conf->fill_deadline_ms;
    if (!n->s3cfg.endpoint[0] && !conf->s3_region[0] && !getenv("AWS_REGION") &&
        !getenv("AWS_DEFAULT_REGION")) {
        errf_set(err, errlen,
                 "no S3 endpoint: set --s3-endpoint (or AWS_ENDPOINT_URL) for an "
                 "S3-compatible store, or --s3-region (or AWS_REGION) for AWS");
        return -EINVAL;
    }
    return 0;
}

static int tenants_setup(node *n, char *err, size_t errlen)
{
    return n->conf.tenants[0] ? ten_load(&n->tenants, n->conf.tenants, err, errlen) : 0;
}

static void tenants_teardown(node *n)
{
    ten_destroy(&n->tenants);
}

/* Protected mode: a node without tenants answers anyone who reaches it with
 * the node's own S3 credentials, so it serves loopback only unless told
 * otherwise. */
static int access_setup(node *n, char *err, size_t errlen)
{
    node_conf *conf = &n->conf;
    bool protected_mode = !n->tenants && !conf->allow_anonymous;
    if (!conf->listen[0]) {
        snprintf(conf->listen, sizeof(conf->listen), "%s",
                 protected_mode ? "127.0.0.1" : "0.0.0.0");
    } else if (protected_mode && !ten_addr_text_is_loopback(conf->listen)) {
        errf_set(err, errlen,
                 "--listen %s without --tenants would let any host that reaches the port read "
                 "whatever this node's S3 credentials can read: give --tenants FILE, or "
                 "--allow-anonymous to serve anonymous clients on purpose, or listen on "
                 "127.0.0.1",
                 conf->listen);
        return -EINVAL;
    }
    if (protected_mode)
        node_log(NODE_LOG_INFO,
                 "msg=\"protected mode: no --tenants, so only clients on this host are served\" "
                 "listen=%s fix=\"give --tenants FILE, or --allow-anonymous to serve other "
                 "hosts\"",
                 conf->listen);
    else if (!n->tenants)
        node_log(NODE_LOG_WARN,
                 "msg=\"anonymous clients allowed (--allow-anonymous): anyone who reaches the "
                 "port reads what this node's S3 credentials can\" listen=%s",
                 conf->listen);
    return 0;
}

/* Connections: what the descriptor limit allows, less a reserve for the
 * store, S3 and peer connections, the admin port and accept itself. */
static int limits_setup(node *n, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const node_conf *conf = &n->conf;
    struct rlimit rl;
    long long fd_room = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                            ? (long long)rl.rlim_cur - 64 - 2 * conf->s3_connections
                            : 10000;
    if (conf->max_connections > 0) {
        n->max_connections = (int)conf->max_connections;
        if (conf->max_connections > fd_room)
            node_log(NODE_LOG_WARN,
                     "msg=\"--max-connections %lld is more than the descriptor limit leaves "
                     "room for (about %lld): raise ulimit -n, or accepting will pause when it "
                     "runs out\"",
                     (long long)conf->max_connections, fd_room);
    } else {
        n->max_connections = (int)(fd_room > 10000 ? 10000 : fd_room < 16 ? 16 : fd_room);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    n->n_workers = conf->threads > 0 ? (unsigned)conf->threads : cores > 0 ? (unsigned)cores : 1;
    return 0;
}

static int tls_setup(node *n, char *err, size_t errlen)
{
    const node_conf *conf = &n->conf;
    if (!conf->tls_cert[0] && !conf->tls_key[0])
        return 0;
    if (!conf->tls_cert[0] || !conf->tls_key[0]) {
        errf_set(err, errlen, "TLS needs both --tls-cert and --tls-key");
        return -EINVAL;
    }
    n->ssl_ctx = SSL_CTX_new(TLS_server_method());
    if (!n->ssl_ctx || SSL_CTX_use_certificate_chain_file(n->ssl_ctx, conf->tls_cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(n->ssl_ctx, conf->tls_key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(n->ssl_ctx) != 1) {
        char why[256];
        ERR_error_string_n(ERR_get_error(), why, sizeof(why));
        errf_set(err, errlen,
                 "cannot load the TLS certificate %s / key %s: %s (check the files and that the "
                 "key matches the certificate)",
                 conf->tls_cert, conf->tls_key, why);
        return -EINVAL;
    }
    SSL_CTX_set_min_proto_version(n->ssl_ctx, TLS1_2_VERSION);
    return 0;
}

static void tls_teardown(node *n)
{
    SSL_CTX_free(n->ssl_ctx);
    n->ssl_ctx = NULL;
}

static void bs_log_cb(void *ctx, int level, const char *msg)
{
    (void)ctx;
    node_log(level <= BS_LOG_ERROR  ? NODE_LOG_ERROR
             : level == BS_LOG_WARN ? NODE_LOG_WARN
             : level == BS_LOG_INFO ? NODE_LOG_INFO
                                    : NODE_LOG_DEBUG,
             "module=store %s", msg);
}

static int store_setup(node *n, char *err, size_t errlen)
{
    const node_conf *conf = &n->conf;
    bs_config bc = {0};
    bc.dir = conf->data_dir;
    bc.ssd_bytes = (uint64_t)conf->ssd_capacity;
    bc.ram_bytes = (uint64_t)conf->ram_capacity;
    bc.block_size = (uint32_t)conf->block_size;
    bc.region_size = (uint32_t)conf->region_size;
    bc.io_mode = !strcmp(conf->io, "io_uring")  ? BS_IO_URING
                 : !strcmp(conf->io, "threads") ? BS_IO_THREADS
                                                : BS_IO_AUTO;
    bc.no_sync = conf->no_sync;
    bc.strict = conf->strict_store;
    bc.log = bs_log_cb;
    int rc = bs_open(&n->store, &bc, err, errlen);
    if (rc == -EMEDIUMTYPE || rc == -EUCLEAN) { /* damaged, and --strict-store */
        size_t k = strlen(err);
        snprintf(err + k, errlen - k,
                 "; --strict-store is set: without it the node sets the "
                 "damaged folder aside and starts empty");
    }
    return rc;
}

static void store_teardown(node *n)
{
    bs_close(&n->store);
}

static int fills_setup(node *n, char *err, size_t errlen)
{
    int rc = node_fills_setup(&n->fills, n);
    if (rc < 0)
        errf_set(err, errlen, "out of memory setting up the fill table");
    return rc;
}

static void fills_teardown(node *n)
{
    node_fills_teardown(&n->fills);
}

static void membership_log_cb(void *arg, enum membership_level level, const char *line)
{
    (void)arg;
    node_log(level == MEMBERSHIP_ERROR  ? NODE_LOG_ERROR
             : level == MEMBERSHIP_WARN ? NODE_LOG_WARN
             : level == MEMBERSHIP_INFO ? NODE_LOG_INFO
                                        : NODE_LOG_DEBUG,
             "module=membership %s", line);
}

/* The main thread's loop (membership re-resolution, the signal events of
 * ringcached.c) and the membership it runs. */
static int main_loop_setup(node *n, char *err, size_t errlen)
{
    n->main_base = event_base_new();
    if (!n->main_base) {
        errf_set(err, errlen, "out of memory setting up the main event loop");
        return -ENOMEM;
    }
    if (!n->conf.members[0])
        return 0;
    struct membership_options mo = {0};
    mo.base = n->main_base;
    mo.log = membership_log_cb;
    char why[512];
    int rc = membership_create(&n->members, n->conf.members, &mo, why, sizeof(why));
    if (rc < 0)
        errf_set(err, errlen, "--members: %s", why);
    return rc;
}

static void main_loop_teardown(node *n)
{
    membership_destroy(&n->members);
    if (n->main_base) {
        event_base_loop(n->main_base, EVLOOP_NONBLOCK);
        event_base_free(n->main_base);
        n->main_base = NULL;
    }
}

static int config_text_cb(void *arg, char **out, size_t *len)
{
    node *n = arg;
    size_t cap = 64 * 1024;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    int k = cfg_format(node_opts, node_n_opts, &n->conf, buf, cap);
    if (k < 0) {
        free(buf);
        return k;
    }
    *out = buf;
    *len = (size_t)k;
    return 0;
}

static int admin_setup(node *n, char *err, size_t errlen)
{
    const node_conf *conf = &n->conf;
    adm_config ac = {conf->admin_listen, (int)conf->admin_port,
                     conf->admin_port_file[0] ? conf->admin_port_file : NULL,
                     conf->tls_cert[0] ? conf->tls_cert : NULL,
                     conf->tls_key[0] ? conf->tls_key : NULL};
    return adm_start(&n->admin, &ac, n->metrics, config_text_cb, n, err, errlen);
}

static void admin_teardown(node *n)
{
    adm_stop(&n->admin);
}

static int port_file_setup(node *n, char *err, size_t errlen)
{
    if (!n->conf.port_file[0])
        return 0;
    return cfg_write_port_file(n->conf.port_file, n->port, "port file", "--port-file", err, errlen);
}

typedef struct node_module {
    const char *name;
    int (*setup)(node *n, char *err, size_t errlen);
    void (*teardown)(node *n); /* NULL: nothing to undo */
} node_module;

static const node_module node_modules[] = {
    {"log", log_setup, NULL},
    {"s3", s3_setup, NULL},
    {"tenants", tenants_setup, tenants_teardown},
    {"access", access_setup, NULL},
    {"limits", limits_setup, NULL},
    {"tls", tls_setup, tls_teardown},
    {"store", store_setup, store_teardown},
    {"metrics", node_metrics_setup, node_metrics_teardown},
    {"fills", fills_setup, fills_teardown},
    {"workers", node_workers_setup, node_workers_teardown},
    {"s3api", node_s3api_setup, node_s3api_teardown},
    {"main-loop", main_loop_setup, main_loop_teardown},
    {"admin", admin_setup, admin_teardown},
    {"port-file", port_file_setup, NULL},
};
#define NODE_N_MODULES (sizeof(node_modules) / sizeof(node_modules[0]))

/* ---- the node ------------------------------------------------------------------ */

int node_create(node **out, const node_conf *conf, char *err, size_t errlen)
{
    *out = NULL;
    evthread_use_pthreads();
    node *n = calloc(1, sizeof(*n));
    if (!n) {
        errf_set(err, errlen, "out of memory creating the node");
        return -ENOMEM;
    }
    n->conf = *conf;
    for (size_t i = 0; i < NODE_N_MODULES; i++) {
        /* counted first: a teardown also undoes its setup's failure halfway */
        n->n_setup = i + 1;
        int rc = node_modules[i].setup(n, err, errlen);
        if (rc < 0) {
            node_destroy(&n);
            return rc;
        }
    }
    bs_stats st;
    bs_stats_get(n->store, &st);
    node_log(NODE_LOG_INFO,
             "msg=\"ringcached ready\" node=%s listen=%s port=%d admin_port=%d s3_api_port=%d "
             "tls=%s threads=%u io=%s max_connections=%d blocks=%llu ssd_capacity=%llu "
             "ram_capacity=%llu",
             n->conf.node_id, n->conf.listen, n->port, adm_port(n->admin), n->s3api_port,
             n->ssl_ctx ? "on" : "off", n->n_workers, st.io_uring ? "io_uring" : "threads",
             n->max_connections, (unsigned long long)st.blocks_stored,
             (unsigned long long)st.ssd_capacity, (unsigned long long)st.ram_capacity);
    *out = n;
    return 0;
}

void node_stop(node *n)
{
    if (atomic_exchange(&n->stopping, true))
        return;
    adm_set_ready(n->admin, false);
    adm_set_not_ready_reason(n->admin, "draining");
    node_workers_stop(n);
    event_base_loopbreak(n->main_base);
}

void node_reload(node *n)
{
    if (n->members) {
        int rc = membership_reload(n->members);
        node_log(rc < 0 ? NODE_LOG_WARN : NODE_LOG_INFO,
                 "msg=\"membership reloaded\" spec=\"%s\" rc=%d", membership_spec(n->members), rc);
    }
}

int node_run(node *n)
{
    if (node_workers_start(n) < 0)
        node_stop(n);
    adm_set_ready(n->admin, true);
    /* the main loop: membership re-resolution and the signal events of main() */
    while (!atomic_load(&n->stopping))
        event_base_loop(n->main_base, EVLOOP_ONCE);
    node_workers_join(n);
    node_log(NODE_LOG_INFO, "msg=\"drained\"");
    return 0;
}

struct event_base *node_main_base(node *n)
{
    return n->main_base;
}

void node_destroy(node **np)
{
    if (!np || !*np)
        return;
    node *n = *np;
    for (size_t i = n->n_setup; i-- > 0;)
        if (node_modules[i].teardown)
            node_modules[i].teardown(n);
    free(n);
    *np = NULL;
}
