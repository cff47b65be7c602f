/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_dist.c: distributed execution in the compute server (ingest/dist/).
 *
 * As a worker: a request with X-RingCache-Unit ("ID RG_BEGIN RG_END PATH",
 * the path percent-encoded; a batch of a SELECT's units: several, joined by
 * ';', run as one query into one state named by the first ID) and the cluster's secret in
 * X-RingCache-Cluster-Secret runs its text over that one unit up to the
 * mergeable state, which is the answer's body (dist_state.h bytes).
 *
 * As the initiator: a SELECT over s3Cluster('name', ...) of a configured
 * cluster runs through dist_query_run with the transport here: each unit is
 * a blocking POST of the query to the member with those headers (libcurl,
 * from the feeder threads, each taking one of the server's kept-alive
 * connections of the query), cancelled through its
 * progress callback once the unit is given up on; a member is pinged with
 * GET /ping at the start. A member that is this server is sent its units
 * over HTTP too (its own query threads run them). When this server serves
 * HTTPS (--tls-cert) the cluster does: every request is https:// and the
 * member's certificate is verified (its host, against --cluster-tls-ca or
 * the system's CAs); a member on plain HTTP fails with a sentence naming it.
 *
 * An INSERT ... SELECT over s3Cluster with parallel_distributed_insert_select
 * 1 or 2 goes the same way: each unit's request carries the INSERT, the
 * worker runs it over the unit into the shared table (the unit's name and
 * the initiator's query id, X-RingCache-Initial-Query-Id, key its block ids,
 * eng_ctx.unit_name) and answers what it read and wrote (dist_state.h kind
 * 3); the initiator's summary is their sum.
 */
#include "srv_int.h"

#include "dist_query.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the worker's side ---- */

static int hexv(char c)
{
    return c >= '0' && c <= '9'                 ? c - '0'
           : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                : -1;
}

/* An INSERT's unit: the INSERT over it, into the table here; the answer
 * says what it read and wrote. The unit's name keys its block ids. */
static int run_insert_unit(srv_query *q, eng_ctx *ctx, uint32_t id, const char *sql, size_t len,
                           char *err, size_t errlen)
{
    const eng_unit *u = ctx->unit;
    size_t nn = strlen(u->path) + 48;
    char *name = malloc(nn);
    if (!name) {
        snprintf(err, errlen, "out of memory");
        return ENG_E_MEMORY_LIMIT_EXCEEDED;
    }
    snprintf(name, nn, "%s#%d-%d", u->path, u->rg_begin, u->rg_end);
    ctx->unit_name = name;
    ctx->unit_query = q->initial_id[0] ? q->initial_id : q->id;
    eng_result res = {0};
    int rc = eng_run(ctx, sql, len, NULL, &res, err, errlen);
    free(name);
    atomic_store(&q->live.rows_read, res.rows_read);
    atomic_store(&q->live.bytes_read, res.bytes_read);
    atomic_store(&q->written_rows, res.rows_written);
    atomic_store(&q->written_bytes, res.bytes_written);
    if (rc < 0) {
        if (atomic_load(&q->cancel))
            return ENG_E_QUERY_WAS_CANCELLED;
        return res.code ? res.code : ENG_E_STD_EXCEPTION;
    }
    dist_insert_done d = {res.rows_read, res.bytes_read, res.rows_written, res.bytes_written};
    ew_buf w;
    ew_init(&w, 4096);
    rc = dist_state_encode_insert(id, &d, &w);
    if (rc == 0) {
        eng_writer wr;
        srv_query_writer(q, &wr);
        if ((rc = wr.write(wr.arg, w.p, w.n)) < 0)
            snprintf(err, errlen, "the initiator went away");
    } else {
        snprintf(err, errlen, "out of memory");
    }
    ew_free(&w);
    return rc == 0 ? 0 : ENG_E_STD_EXCEPTION;
}

int srv_dist_run_unit(srv_query *q, const eng_ctx *ctx0, const char *sql, size_t len, char *err,
                      size_t errlen)
{
    if (!q->dist_auth) {
        snprintf(err, errlen,
                 "this server takes a cluster's work units only with the cluster's "
                 "secret: start every server of the cluster with the same "
                 "--cluster-secret");
        return ENG_E_AUTHENTICATION_FAILED;
    }
    /* "ID RG_BEGIN RG_END PATH", several separated by ';' (a batch: one
     * query over them, one state named by the first ID; ';' is
     * percent-encoded in a path) */
    eng_unit u[DIST_MAX_BATCH];
    char *paths[DIST_MAX_BATCH] = {0};
    unsigned id = 0;
    int n = 0, rc = 0;
    for (const char *p = q->dist_unit; *p && rc == 0; n++) {
        unsigned uid;
        int b, e, off = 0;
        if (n == DIST_MAX_BATCH) {
            snprintf(err, errlen, "X-RingCache-Unit has over %d units", DIST_MAX_BATCH);
            rc = ENG_E_BAD_ARGUMENTS;
            break;
        }
        if (sscanf(p, "%u %d %d %n", &uid, &b, &e, &off) != 3 || off <= 0) {
            snprintf(err, errlen, "X-RingCache-Unit is not 'ID RG_BEGIN RG_END PATH[;...]'");
            rc = ENG_E_BAD_ARGUMENTS;
            break;
        }
        if (n == 0)
            id = uid;
        const char *enc = p + off;
        size_t el = strcspn(enc, ";");
        char *path = malloc(el + 1);
        if (!path) {
            snprintf(err, errlen, "out of memory");
            rc = ENG_E_MEMORY_LIMIT_EXCEEDED;
            break;
        }
        size_t o = 0;
        for (size_t i = 0; i < el; i++) {
            if (enc[i] == '%' && i + 2 < el && hexv(enc[i + 1]) >= 0 && hexv(enc[i + 2]) >= 0) {
                path[o++] = (char)(hexv(enc[i + 1]) * 16 + hexv(enc[i + 2]));
                i += 2;
            } else {
                path[o++] = enc[i];
            }
        }
        path[o] = 0;
        paths[n] = path;
        u[n] = (eng_unit){path, b, e};
        p = enc + el + (enc[el] == ';');
    }
    if (rc == 0 && n == 0) {
        snprintf(err, errlen, "X-RingCache-Unit names no unit");
        rc = ENG_E_BAD_ARGUMENTS;
    }
    if (rc == 0 && n > 1 && !strcmp(q->kind, "Insert")) {
        snprintf(err, errlen, "an INSERT's work unit is one unit, not %d", n);
        rc = ENG_E_BAD_ARGUMENTS;
    }
    if (rc != 0) {
        for (int i = 0; i < n && i < DIST_MAX_BATCH; i++)
            free(paths[i]);
        return rc;
    }
    eng_ctx ctx = *ctx0;
    ctx.unit = u;
    ctx.n_unit = n;
    if (!strcmp(q->kind, "Insert")) {
        rc = run_insert_unit(q, &ctx, id, sql, len, err, errlen);
        free(paths[0]);
        return rc;
    }
    eng_pstate *ps;
    rc = eng_pstate_open(&ctx, sql, len, &ps, err, errlen);
    if (rc == 0)
        rc = eng_pstate_run(ps, err, errlen);
    ew_buf w;
    ew_init(&w, (size_t)DIST_STATE_MAX_BODY + DIST_STATE_HEADER);
    if (rc == 0 && (rc = dist_state_encode(ps, id, &w)) < 0)
        snprintf(err, errlen, "the unit's state is over %u bytes", DIST_STATE_MAX_BODY);
    if (rc == 0) {
        eng_writer wr;
        srv_query_writer(q, &wr);
        rc = wr.write(wr.arg, w.p, w.n);
        if (rc < 0)
            snprintf(err, errlen, "the initiator went away");
    }
    uint64_t rows = 0, bytes = 0;
    if (ps)
        eng_pstate_stats(ps, &rows, &bytes);
    atomic_store(&q->live.rows_read, rows);
    atomic_store(&q->live.bytes_read, bytes);
    ew_free(&w);
    eng_pstate_destroy(&ps);
    for (int i = 0; i < n; i++)
        free(paths[i]);
    if (rc == 0)
        return 0;
    return eng_error_classify(ENG_STAGE_EXEC, rc, err);
}

/* ---- the initiator's transport ---- */

/* A connection to a server: a libcurl handle taken by one feeder thread
 * at a time (tx_get/tx_put), so it is kept alive from unit to unit: one TCP
 * (and TLS) handshake per unit in flight, server and query, not per unit. */
typedef struct tx_conn {
    CURL *c;
    bool busy;
    /* the unit on it: what its progress headers said (its feeder's only) */
    uint64_t cur_rows, cur_bytes;
} tx_conn;

typedef struct dist_tx {
    srv_query *q;
    pthread_mutex_t mu; /* busy, member */
    tx_conn conn[DIST_MAX_SERVERS][DIST_MAX_LANES];
    char member[DIST_MAX_SERVERS][80]; /* each server's name, for query_log */
} dist_tx;

typedef struct xfer {
    ew_buf *out;
    const _Atomic int *stop;
    dist_tx *t;
    tx_conn *conn;
    bool failed; /* X-ClickHouse-Exception-Code after a flushed head */
} xfer;

/* The initiator's live counters (progress headers, system.processes) are
 * the units that finished plus what the units in flight said so far: a
 * unit's counters replace what its progress said (deltas modulo 2^64). */
static void tx_progress(dist_tx *t, tx_conn *k, uint64_t rows, uint64_t bytes)
{
    eng_live *l = &t->q->live;
    atomic_fetch_add(&l->rows_read, rows - k->cur_rows);
    atomic_fetch_add(&l->bytes_read, bytes - k->cur_bytes);
    k->cur_rows = rows;
    k->cur_bytes = bytes;
}

static uint64_t json_u64(const char *p, size_t n, const char *key)
{
    char k[48];
    int kl = snprintf(k, sizeof(k), "\"%s\":\"", key);
    for (size_t i = 0; i + (size_t)kl < n; i++)
        if (memcmp(p + i, k, (size_t)kl) == 0)
            return strtoull(p + i + kl, NULL, 10);
    return 0;
}

/* A worker's head: X-ClickHouse-Progress while its unit runs (sent when the
 * initiator's query asked for progress headers), and the exception code
 * that follows a flushed head when the unit failed after all. */
static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    xfer *x = arg;
    size_t len = sz * n;
    static const char prog[] = "x-clickhouse-progress:", exc[] = "x-clickhouse-exception-code:";
    if (len > sizeof(prog) && strncasecmp(p, prog, sizeof(prog) - 1) == 0) {
        /* read_rows never goes down within a unit */
        uint64_t r = json_u64(p, len, "read_rows"), b = json_u64(p, len, "read_bytes");
        if (r >= x->conn->cur_rows)
            tx_progress(x->t, x->conn, r, b);
    } else if (len > sizeof(exc) && strncasecmp(p, exc, sizeof(exc) - 1) == 0) {
        x->failed = true;
    }
    return len;
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    xfer *x = arg;
    ew_raw(x->out, p, sz * n);
    return x->out->err ? 0 : sz * n;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    xfer *x = arg;
    return x->stop && atomic_load(x->stop) ? 1 : 0;
}

/* A free connection to server (the caller's until tx_put), its handle
 * reset and pointed at path on member: https:// when this server serves
 * HTTPS (the cluster is then TLS, every member verified against
 * --cluster-tls-ca or the system's CAs), else http://. NULL: out of memory. */
static tx_conn *tx_get(dist_tx *t, int server, const char *member, const char *path, char *curl_err)
{
    if (server < 0 || server >= DIST_MAX_SERVERS)
        return NULL;
    tx_conn *k = NULL;
    pthread_mutex_lock(&t->mu);
    if (!t->member[server][0])
        snprintf(t->member[server], sizeof(t->member[server]), "%s", member);
    for (int i = 0; i < DIST_MAX_LANES && !k; i++)
        if (!t->conn[server][i].busy && t->conn[server][i].c)
            k = &t->conn[server][i];
    for (int i = 0; i < DIST_MAX_LANES && !k; i++)
        if (!t->conn[server][i].busy)
            k = &t->conn[server][i];
    if (k)
        k->busy = true;
    pthread_mutex_unlock(&t->mu);
    if (!k)
        return NULL;
    CURL *c = k->c;
    if (c) {
        curl_easy_reset(c);
    } else if (!(c = k->c = curl_easy_init())) {
        k->busy = false;
        return NULL;
    }
    const srv_conf *cf = &t->q->s->conf;
    bool tls = cf->tls_cert[0] != 0;
    char url[600];
    snprintf(url, sizeof(url), "%s://%s%s", tls ? "https" : "http", member, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (tls) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        if (cf->cluster_tls_ca[0])
            curl_easy_setopt(c, CURLOPT_CAINFO, cf->cluster_tls_ca);
    }
    curl_err[0] = 0;
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    k->cur_rows = k->cur_bytes = 0;
    return k;
}

static void tx_put(dist_tx *t, tx_conn *k)
{
    pthread_mutex_lock(&t->mu);
    k->busy = false;
    pthread_mutex_unlock(&t->mu);
}

/* The sentence of a failed transfer: TLS failures say what to configure. */
static void tx_error(const srv_conf *cf, CURLcode cc, const char *curl_err, char *err,
                     size_t errlen)
{
    const char *what = curl_err[0] ? curl_err : curl_easy_strerror(cc);
    bool tls = cf->tls_cert[0] != 0;
    if (tls && (cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_GOT_NOTHING))
        snprintf(err, errlen,
                 "no HTTPS handshake with it (%s): this server has --tls-cert, so the "
                 "cluster talks HTTPS; every member needs --tls-cert and --tls-key",
                 what);
    else if (tls && cc == CURLE_PEER_FAILED_VERIFICATION)
        snprintf(err, errlen,
                 "its certificate is not trusted (%s): give --cluster-tls-ca the CA "
                 "that signed the members' certificates, each naming the member's host",
                 what);
    else if (tls && cc == CURLE_SSL_CACERT_BADFILE)
        snprintf(err, errlen, "cannot read --cluster-tls-ca %s (%s)", cf->cluster_tls_ca, what);
    else if (!tls && (cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR))
        snprintf(err, errlen,
                 "%s (if it serves HTTPS, this server needs --tls-cert and --tls-key too: "
                 "a cluster talks HTTPS only when every member does)",
                 what);
    else
        snprintf(err, errlen, "%s", what);
}

static int t_run_unit(void *arg, int server, const char *member, const char *sql, size_t len,
                      const eng_unit *u, const uint32_t *unit_ids, int n_units,
                      const _Atomic int *stop, ew_buf *out, char *err, size_t errlen)
{
    dist_tx *t = arg;
    srv_query *q = t->q;
    srv *s = q->s;
    char cerr[CURL_ERROR_SIZE], path[96] = "/";
    if (q->set.send_progress_in_http_headers)
        snprintf(path, sizeof(path),
                 "/?send_progress_in_http_headers=1&http_headers_progress_interval_ms=%llu",
                 (unsigned long long)q->set.http_headers_progress_interval_ms);
    tx_conn *k = tx_get(t, server, member, path, cerr);
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    CURL *c = k->c;
    char hu[16384], hs[512], hq[192];
    size_t o = (size_t)snprintf(hu, sizeof(hu), "X-RingCache-Unit: ");
    for (int i = 0; i < n_units && o < sizeof(hu); i++) {
        char *ep = curl_easy_escape(c, u[i].path, 0);
        o += (size_t)snprintf(hu + o, sizeof(hu) - o, "%s%u %d %d %s", i ? ";" : "", unit_ids[i],
                              u[i].rg_begin, u[i].rg_end, ep ? ep : "");
        curl_free(ep);
    }
    if (o >= sizeof(hu)) {
        tx_put(t, k);
        snprintf(err, errlen, "the paths of a batch of units are over %zu bytes", sizeof(hu));
        return -ENAMETOOLONG;
    }
    snprintf(hs, sizeof(hs), "X-RingCache-Cluster-Secret: %s", s->conf.cluster_secret);
    snprintf(hq, sizeof(hq), "X-RingCache-Initial-Query-Id: %s", q->id);
    struct curl_slist *h = curl_slist_append(NULL, hu);
    h = curl_slist_append(h, hs);
    h = curl_slist_append(h, hq);
    h = curl_slist_append(h, "Content-Type: text/plain");
    xfer x = {out, stop, t, k, false};
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, sql);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(h);
    /* what the unit read: its state's counters, else nothing */
    dist_state_hdr sh;
    char herr[64];
    if (cc == CURLE_OK && status == 200 && !x.failed &&
        dist_state_header(out->p, out->n, &sh, herr, sizeof(herr)) == 0)
        tx_progress(t, k, sh.rows_read, sh.bytes_read);
    else
        tx_progress(t, k, 0, 0);
    tx_put(t, k);
    if (cc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(err, errlen, "cancelled");
        return -ECANCELED;
    }
    if (cc != CURLE_OK) {
        tx_error(&s->conf, cc, cerr, err, errlen);
        return -ECONNRESET;
    }
    if (status != 200 || x.failed) {
        /* its ClickHouse exception text */
        int n = (int)(out->n < 400 ? out->n : 400);
        snprintf(err, errlen, "it answered %ld: %.*s", status, n, out->p ? (char *)out->p : "");
        for (char *p = err; *p; p++)
            if (*p == '\n')
                *p = ' ';
        return -EPROTO;
    }
    return 0;
}

static int t_ping(void *arg, int server, const char *member, char *err, size_t errlen)
{
    dist_tx *t = arg;
    char cerr[CURL_ERROR_SIZE];
    tx_conn *k = tx_get(t, server, member, "/ping", cerr);
    if (!k)
        return -ENOMEM;
    CURL *c = k->c;
    ew_buf sink;
    ew_init(&sink, 4096);
    xfer x = {&sink, NULL, t, k, false};
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 3000L);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    tx_put(t, k);
    ew_free(&sink);
    if (cc != CURLE_OK) {
        tx_error(&t->q->s->conf, cc, cerr, err, errlen);
        return -ECONNREFUSED;
    }
    if (status != 200) {
        snprintf(err, errlen, "/ping answered %ld", status);
        return -EPROTO;
    }
    return 0;
}

/* query_log's cluster_shares: "member=ROWS/BYTES" of each server, in the
 * cluster's order, comma-separated; "(lost)" after one given up on during
 * the query (what it finished still counts), "member=skipped" for one down
 * at the start. NULL when out of memory. */
static char *shares(const dist_tx *t, const dist_report *rep)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    for (int i = 0; i < rep->n_servers && i < DIST_MAX_SERVERS; i++) {
        const char *m = t->member[i][0] ? t->member[i] : "?";
        if (rep->skipped[i])
            fprintf(f, "%s%s=skipped", i ? "," : "", m);
        else
            fprintf(f, "%s%s=%llu/%llu%s", i ? "," : "", m, (unsigned long long)rep->rows_read[i],
                    (unsigned long long)rep->bytes_read[i], rep->lost[i] ? "(lost)" : "");
    }
    if (fclose(f) != 0) {
        free(out);
        return NULL;
    }
    return out;
}

int srv_dist_run_query(srv_query *q, const eng_ctx *ctx, const char *sql, size_t len,
                       eng_result *res, char *err, size_t errlen)
{
    dist_tx *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return ENG_E_MEMORY_LIMIT_EXCEEDED;
    }
    t->q = q;
    pthread_mutex_init(&t->mu, NULL);
    dist_transport tr = {t_run_unit, t_ping, t};
    dist_report rep;
    memset(res, 0, sizeof(*res));
    int rc = dist_query_run(ctx, sql, len, &tr, NULL, res, &rep, err, errlen);
    if (q->cache && q->cache->cat)
        tb_cat_expire(q->cache->cat); /* an INSERT's servers committed, not this one */
    for (int i = 0; i < DIST_MAX_SERVERS; i++)
        for (int l = 0; l < DIST_MAX_LANES; l++)
            if (t->conn[i][l].c)
                curl_easy_cleanup(t->conn[i][l].c);
    pthread_mutex_destroy(&t->mu);
    if (rc == -ENOTSUP) {
        free(t);
        return rc;
    }
    atomic_store(&q->live.rows_read, res->rows_read);
    atomic_store(&q->live.bytes_read, res->bytes_read);
    atomic_store(&q->live.result_rows, res->rows_out);
    atomic_store(&q->written_rows, res->rows_written);
    atomic_store(&q->written_bytes, res->bytes_written);
    if (rc == 0) {
        srv_log(SRV_LOG_DEBUG, "msg=\"distributed query\" query_id=%s units=%d dropped=%d", q->id,
                rep.units, rep.dropped);
        free(q->dist_shares);
        q->dist_shares = shares(t, &rep);
        free(t);
        return 0;
    }
    free(t);
    if (atomic_load(&q->cancel))
        return ENG_E_QUERY_WAS_CANCELLED;
    return rc == -EHOSTUNREACH ? ENG_E_NETWORK_ERROR : eng_error_classify(ENG_STAGE_EXEC, rc, err);
}
