/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_dist.c: distributed execution in the compute server (ingest/dist/).
 *
 * As a worker: a request with X-RingCache-Unit ("ID RG_BEGIN RG_END PATH",
 * the path percent-encoded) and the cluster's secret in
 * X-RingCache-Cluster-Secret runs its text over that one unit up to the
 * mergeable state, which is the answer's body (dist_state.h bytes).
 *
 * As the initiator: a SELECT over s3Cluster('name', ...) of a configured
 * cluster runs through dist_query_run with the transport here: each unit is
 * a blocking POST of the query to the member with those headers (libcurl,
 * one easy handle per call, on the feeder thread), cancelled through its
 * progress callback once the unit is given up on; a member is pinged with
 * GET /ping at the start. A member that is this server is sent its units
 * over HTTP too (its own query threads run them).
 */
#include "srv_int.h"

#include "dist_query.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the worker's side ---- */

static int hexv(char c)
{
    return c >= '0' && c <= '9'                 ? c - '0'
           : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                : -1;
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
    unsigned id;
    int b, e, off = 0;
    if (sscanf(q->dist_unit, "%u %d %d %n", &id, &b, &e, &off) != 3 || off <= 0) {
        snprintf(err, errlen, "X-RingCache-Unit is not 'ID RG_BEGIN RG_END PATH'");
        return ENG_E_BAD_ARGUMENTS;
    }
    const char *enc = q->dist_unit + off;
    char *path = malloc(strlen(enc) + 1);
    if (!path) {
        snprintf(err, errlen, "out of memory");
        return ENG_E_MEMORY_LIMIT_EXCEEDED;
    }
    size_t o = 0;
    for (const char *p = enc; *p; p++) {
        if (*p == '%' && hexv(p[1]) >= 0 && hexv(p[2]) >= 0) {
            path[o++] = (char)(hexv(p[1]) * 16 + hexv(p[2]));
            p += 2;
        } else {
            path[o++] = *p;
        }
    }
    path[o] = 0;
    eng_unit u = {path, b, e};
    eng_ctx ctx = *ctx0;
    ctx.unit = &u;
    eng_pstate *ps;
    int rc = eng_pstate_open(&ctx, sql, len, &ps, err, errlen);
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
    free(path);
    if (rc == 0)
        return 0;
    return eng_error_classify(ENG_STAGE_EXEC, rc, err);
}

/* ---- the initiator's transport ---- */

typedef struct xfer {
    ew_buf *out;
    const _Atomic int *stop;
} xfer;

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

static int t_run_unit(void *arg, int server, const char *member, const char *sql, size_t len,
                      const eng_unit *u, uint32_t unit_id, const _Atomic int *stop, ew_buf *out,
                      char *err, size_t errlen)
{
    (void)server;
    const srv_query *q = arg;
    srv *s = q->s;
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    char url[512], hu[8192], hs[512], hq[192];
    snprintf(url, sizeof(url), "http://%s/", member);
    char *ep = curl_easy_escape(c, u->path, 0);
    snprintf(hu, sizeof(hu), "X-RingCache-Unit: %u %d %d %s", unit_id, u->rg_begin, u->rg_end,
             ep ? ep : "");
    curl_free(ep);
    snprintf(hs, sizeof(hs), "X-RingCache-Cluster-Secret: %s", s->conf.cluster_secret);
    snprintf(hq, sizeof(hq), "X-RingCache-Initial-Query-Id: %s", q->id);
    struct curl_slist *h = curl_slist_append(NULL, hu);
    h = curl_slist_append(h, hs);
    h = curl_slist_append(h, hq);
    h = curl_slist_append(h, "Content-Type: text/plain");
    xfer x = {out, stop};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, sql);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (cc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(err, errlen, "cancelled");
        return -ECANCELED;
    }
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s", curl_easy_strerror(cc));
        return -ECONNRESET;
    }
    if (status != 200) {
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
    (void)arg;
    (void)server;
    CURL *c = curl_easy_init();
    if (!c)
        return -ENOMEM;
    char url[512];
    snprintf(url, sizeof(url), "http://%s/ping", member);
    ew_buf sink;
    ew_init(&sink, 4096);
    xfer x = {&sink, NULL};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 3000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    ew_free(&sink);
    if (cc != CURLE_OK) {
        snprintf(err, errlen, "%s", curl_easy_strerror(cc));
        return -ECONNREFUSED;
    }
    if (status != 200) {
        snprintf(err, errlen, "/ping answered %ld", status);
        return -EPROTO;
    }
    return 0;
}

int srv_dist_run_query(srv_query *q, const eng_ctx *ctx, const char *sql, size_t len,
                       eng_result *res, char *err, size_t errlen)
{
    dist_transport tr = {t_run_unit, t_ping, q};
    dist_report rep;
    memset(res, 0, sizeof(*res));
    int rc = dist_query_run(ctx, sql, len, &tr, NULL, res, &rep, err, errlen);
    if (rc == -ENOTSUP)
        return rc;
    atomic_store(&q->live.rows_read, res->rows_read);
    atomic_store(&q->live.bytes_read, res->bytes_read);
    atomic_store(&q->live.result_rows, res->rows_out);
    if (rc == 0) {
        srv_log(SRV_LOG_DEBUG, "msg=\"distributed query\" query_id=%s units=%d dropped=%d", q->id,
                rep.units, rep.dropped);
        return 0;
    }
    if (atomic_load(&q->cancel))
        return ENG_E_QUERY_WAS_CANCELLED;
    return rc == -EHOSTUNREACH ? ENG_E_NETWORK_ERROR : eng_error_classify(ENG_STAGE_EXEC, rc, err);
}
