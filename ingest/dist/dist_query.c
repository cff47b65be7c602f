/* SPDX-License-Identifier: Apache-2.0
 *
 * dist_query.c: the initiator of a distributed query (dist_query.h): a
 * few feeder threads per server (one per unit in flight on it), the scheduler between them, the merge under a
 * mutex, the deadline watched by the calling thread.
 */
#include "dist_query.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct dq dq;

typedef struct dq_server {
    dq *q;
    int idx;
    pthread_t th[DIST_MAX_LANES]; /* its feeders: one per unit in flight on it */
    int started;
    _Atomic int stop;
    _Atomic int finished;  /* feeders that returned */
    char why[ENG_MSG_MAX]; /* why it was given up on */
} dq_server;

struct dq {
    const eng_cluster *cl;
    const char *sql;
    size_t len;
    const dist_transport *tr;
    dist_units us;
    dist_sched *s;
    eng_pstate *ps;
    pthread_mutex_t mu; /* the merge, the report, fail */
    eng_fail fail;      /* a state that could not be merged fails the query */
    dist_report *rep;
    dq_server *sv;
    _Atomic int stop_all;
    bool insert;     /* INSERT ... SELECT: each server inserts its units */
    int batch;       /* units handed over at once, at most */
    eng_result sums; /* an INSERT's: what its units read and wrote */
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *feeder_main(void *arg)
{
    dq_server *sv = arg;
    dq *q = sv->q;
    const char *member = q->cl->members[sv->idx];
    while (!atomic_load(&q->stop_all) && !atomic_load(&sv->stop)) {
        int u = dist_sched_next(q->s, sv->idx, now_ms());
        if (u == DIST_SCHED_WAIT) {
            sleep_ms(5);
            continue;
        }
        if (u < 0)
            break; /* done, or given up on */
        /* a batch: more of its own queue, one request and one state */
        int us[DIST_MAX_BATCH], nb = 1;
        uint32_t ids[DIST_MAX_BATCH];
        eng_unit eu[DIST_MAX_BATCH];
        us[0] = u;
        while (nb < q->batch) {
            int v = dist_sched_next_own(q->s, sv->idx, now_ms());
            if (v < 0)
                break;
            us[nb++] = v;
        }
        for (int k = 0; k < nb; k++) {
            ids[k] = (uint32_t)us[k];
            dist_unit_to_eng(&q->us.u[us[k]], &eu[k]);
        }
        ew_buf b;
        ew_init(&b, (size_t)DIST_STATE_MAX_BODY + DIST_STATE_HEADER);
        char err[ENG_MSG_MAX] = "";
        int rc = q->tr->run_unit(q->tr->arg, sv->idx, member, q->sql, q->len, eu, ids, nb,
                                 &sv->stop, &b, err, sizeof(err));
        dist_state_hdr h;
        dist_insert_done d = {0};
        if (rc == 0 && q->insert)
            rc = dist_state_read_insert(b.p, b.n, &d, err, sizeof(err));
        if (rc == 0 && (rc = dist_state_header(b.p, b.n, &h, err, sizeof(err))) == 0 &&
            h.unit != (uint32_t)u) {
            snprintf(err, sizeof(err), "it answered unit %u for unit %d", h.unit, u);
            rc = -EBADMSG;
        }
        if (rc < 0) {
            ew_free(&b);
            pthread_mutex_lock(&q->mu);
            if (!atomic_load(&sv->stop) && !sv->why[0])
                snprintf(sv->why, sizeof(sv->why), "%s", err[0] ? err : strerror(-rc));
            pthread_mutex_unlock(&q->mu);
            dist_sched_lose(q->s, sv->idx);
            atomic_store(&sv->stop, 1); /* its other feeders' units are cancelled */
            break;
        }
        pthread_mutex_lock(&q->mu);
        if (dist_sched_complete_n(q->s, us, nb, sv->idx)) {
            if (q->insert) {
                q->sums.rows_read += d.rows_read;
                q->sums.bytes_read += d.bytes_read;
                q->sums.rows_written += d.rows_written;
                q->sums.bytes_written += d.bytes_written;
                if (q->rep) {
                    q->rep->rows_written[sv->idx] += d.rows_written;
                    q->rep->bytes_written[sv->idx] += d.bytes_written;
                }
                rc = 0;
            } else {
                rc = dist_state_merge(q->ps, b.p, b.n, err, sizeof(err));
            }
            if (rc < 0) {
                eng_fail_set(&q->fail, rc, err);
                atomic_store(&q->stop_all, 1);
            } else if (q->rep) {
                q->rep->units_run[sv->idx] += nb;
                q->rep->rows_read[sv->idx] += h.rows_read;
                q->rep->bytes_read[sv->idx] += h.bytes_read;
            }
        } else if (q->rep) {
            q->rep->dropped++;
        }
        pthread_mutex_unlock(&q->mu);
        ew_free(&b);
    }
    atomic_fetch_add(&sv->finished, 1);
    return NULL;
}

/* "a: why; b: why" over the lost servers. */
static void lost_sentence(dq *q, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < q->cl->n_members && o < cap; i++)
        if (q->sv[i].why[0])
            o += (size_t)snprintf(out + o, cap - o, "%s%s: %s", o ? "; " : "", q->cl->members[i],
                                  q->sv[i].why);
}

int dist_query_run(const eng_ctx *ctx, const char *sql, size_t len, const dist_transport *tr,
                   const dist_opts *o, eng_result *res, dist_report *rep, char *err, size_t errlen)
{
    dq q = {.sql = sql, .len = len, .tr = tr, .rep = rep};
    int rc = eng_pstate_open(ctx, sql, len, &q.ps, err, errlen);
    if (rc < 0)
        return rc;
    q.cl = eng_pstate_cluster(q.ps);
    if (!q.cl || ctx->unit) {
        eng_pstate_destroy(&q.ps);
        snprintf(err, errlen, "not a query over s3Cluster()");
        return -ENOTSUP;
    }
    if (q.cl->n_members == 0 && q.cl->dns) {
        snprintf(err, errlen,
                 "cluster '%s' has no servers yet: dns:%s has not resolved to any "
                 "(check the name, its SRV or A records, and the DNS server)",
                 q.cl->name, q.cl->dns);
        eng_pstate_destroy(&q.ps);
        return -EINVAL;
    }
    if (q.cl->n_members < 1 || q.cl->n_members > DIST_MAX_SERVERS) {
        snprintf(err, errlen, "cluster '%s' has %d servers: it needs 1 to %d", q.cl->name,
                 q.cl->n_members, DIST_MAX_SERVERS);
        eng_pstate_destroy(&q.ps);
        return -EINVAL;
    }
    q.insert = eng_pstate_is_insert(q.ps);
    if (q.insert && eng_pstate_settings(q.ps)->parallel_distributed_insert_select == 0) {
        eng_pstate_destroy(&q.ps);
        snprintf(err, errlen, "parallel_distributed_insert_select = 0: this server inserts");
        return -ENOTSUP;
    }
    int n = q.cl->n_members;
    uint64_t split = o && o->split_bytes ? o->split_bytes : 8ull << 20;
    uint64_t grace = o && o->grace_ms ? o->grace_ms : 100;
    uint64_t deadline = o && o->deadline_ms ? o->deadline_ms : 120000;
    int lanes = o && o->lanes ? o->lanes : 2;
    if (lanes > DIST_MAX_LANES)
        lanes = DIST_MAX_LANES;
    if (rep) {
        memset(rep, 0, sizeof(*rep));
        rep->n_servers = n;
    }
    pthread_mutex_init(&q.mu, NULL);
    eng_fail_init(&q.fail);
    q.sv = calloc((size_t)n, sizeof(dq_server));
    if (!q.sv) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if ((rc = dist_units_plan(q.ps, split, &q.us)) < 0) {
        snprintf(err, errlen,
                 rc == -ENOTSUP ? "s3Cluster's source cannot be split by file"
                                : "out of memory planning the units");
        goto out;
    }
    if (rep)
        rep->units = q.us.n;
    /* a batch of a fair share of the units per request at most (a server's
     * own, in one state: fewer partial states to build, send and merge);
     * an INSERT's units one by one (each unit's block ids are its own) */
    q.batch = o && o->batch ? o->batch : (q.us.n + n * lanes - 1) / (n * lanes);
    if (q.batch > DIST_MAX_BATCH)
        q.batch = DIST_MAX_BATCH;
    if (q.batch < 1 || q.insert)
        q.batch = 1;
    if ((rc = dist_sched_create(&q.s, &q.us, q.cl->members, n, grace)) < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* servers down at the start */
    bool skip = eng_pstate_settings(q.ps)->skip_unavailable_shards;
    for (int i = 0; i < n; i++) {
        q.sv[i].q = &q;
        q.sv[i].idx = i;
        char why[ENG_MSG_MAX] = "";
        if (!tr->ping || tr->ping(tr->arg, i, q.cl->members[i], why, sizeof(why)) == 0)
            continue;
        if (!skip) {
            snprintf(err, errlen,
                     "server %s of cluster '%s' is unavailable: %s (SETTINGS "
                     "skip_unavailable_shards = 1 runs the query without it)",
                     q.cl->members[i], q.cl->name, why);
            rc = -EHOSTUNREACH;
            goto out;
        }
        snprintf(q.sv[i].why, sizeof(q.sv[i].why), "%s", why);
        dist_sched_lose(q.s, i);
        if (rep)
            rep->skipped[i] = true;
    }
    for (int i = 0; i < n; i++)
        for (int l = 0; l < lanes; l++)
            if (pthread_create(&q.sv[i].th[q.sv[i].started], NULL, feeder_main, &q.sv[i]) == 0)
                q.sv[i].started++;
    /* watch: stalls, the end, no server left */
    for (;;) {
        bool all_done = true;
        for (int i = 0; i < n; i++)
            if (atomic_load(&q.sv[i].finished) < q.sv[i].started)
                all_done = false;
        if (all_done || atomic_load(&q.stop_all))
            break;
        if (dist_sched_done(q.s))
            break;
        if (dist_sched_live(q.s) == 0)
            break;
        bool was[DIST_MAX_SERVERS];
        for (int i = 0; i < n; i++)
            was[i] = dist_sched_server_live(q.s, i);
        if (dist_sched_expire(q.s, now_ms(), deadline) > 0) {
            /* stalled: its feeder's call is cancelled, its units went to the others */
            pthread_mutex_lock(&q.mu);
            for (int i = 0; i < n; i++)
                if (was[i] && !dist_sched_server_live(q.s, i)) {
                    if (!q.sv[i].why[0])
                        snprintf(q.sv[i].why, sizeof(q.sv[i].why),
                                 "it ran a unit for longer than the deadline (%llu ms)",
                                 (unsigned long long)deadline);
                    atomic_store(&q.sv[i].stop, 1);
                }
            pthread_mutex_unlock(&q.mu);
        }
        sleep_ms(10);
    }
    atomic_store(&q.stop_all, 1);
    for (int i = 0; i < n; i++) {
        atomic_store(&q.sv[i].stop, 1);
        for (int l = 0; l < q.sv[i].started; l++)
            pthread_join(q.sv[i].th[l], NULL);
    }
    if ((rc = atomic_load(&q.fail.rc)) < 0) {
        snprintf(err, errlen, "%s", q.fail.msg);
        goto out;
    }
    if (!dist_sched_done(q.s)) {
        char lost[ENG_MSG_MAX];
        lost_sentence(&q, lost, sizeof(lost));
        snprintf(err, errlen, "every server of cluster '%s' failed, the query cannot finish: %s",
                 q.cl->name, lost[0] ? lost : "no server answered");
        rc = -EHOSTUNREACH;
        goto out;
    }
    if (q.insert) {
        rc = 0;
        if (res) {
            memset(res, 0, sizeof(*res));
            *res = q.sums;
        }
    } else {
        rc = eng_pstate_finish(q.ps, res, err, errlen);
    }
    if (rep)
        for (int i = 0; i < n; i++)
            rep->lost[i] = !rep->skipped[i] && q.sv[i].why[0];
out:
    dist_sched_destroy(&q.s);
    dist_units_free(&q.us);
    free(q.sv);
    eng_pstate_destroy(&q.ps);
    eng_fail_deinit(&q.fail);
    pthread_mutex_destroy(&q.mu);
    return rc;
}
