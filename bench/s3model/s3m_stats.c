/* SPDX-License-Identifier: Apache-2.0
 *
 * The S3 model's counters (requests by method and by object, byte totals, fault
 * counts) with their JSON rendering, the table of armed faults, and the logfmt
 * logger. Objects sit in a chained hash table keyed by path, bounded by
 * S3M_MAX_OBJECTS so a long benchmark cannot grow it without limit.
 * Thread-safety: none (one event loop).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "s3m_int.h"

const char *const s3m__method_names[S3M_M_COUNT] = {"GET",  "HEAD",   "PUT",
                                                    "POST", "DELETE", "OTHER"};

void s3m__log(const char *level, const char *fmt, ...)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "ts=%lld.%03ld level=%s component=s3model %s\n", (long long)ts.tv_sec,
            ts.tv_nsec / 1000000, level, msg);
}

int s3m__method_index(const char *method)
{
    for (int i = 0; i < S3M_M_OTHER; i++) {
        if (strcmp(method, s3m__method_names[i]) == 0)
            return i;
    }
    return S3M_M_OTHER;
}

static uint64_t s3m_hash(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

int s3m__stats_init(s3m_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->nbuckets = 4096;
    st->buckets = calloc(st->nbuckets, sizeof(*st->buckets));
    return st->buckets != NULL ? 0 : -ENOMEM;
}

static void s3m_free_objects(s3m_stats *st)
{
    for (size_t i = 0; i < st->nbuckets; i++) {
        s3m_object *o = st->buckets[i];
        while (o != NULL) {
            s3m_object *next = o->next;
            free(o);
            o = next;
        }
        st->buckets[i] = NULL;
    }
    st->nobjects = 0;
}

void s3m__stats_deinit(s3m_stats *st)
{
    if (st->buckets != NULL)
        s3m_free_objects(st);
    free(st->buckets);
    memset(st, 0, sizeof(*st));
}

void s3m__stats_reset(s3m_stats *st)
{
    s3m_object **buckets = st->buckets;
    size_t nbuckets = st->nbuckets;
    s3m_free_objects(st);
    memset(st, 0, sizeof(*st));
    st->buckets = buckets;
    st->nbuckets = nbuckets;
}

static void s3m_grow(s3m_stats *st)
{
    size_t n = st->nbuckets * 2;
    s3m_object **b = calloc(n, sizeof(*b));
    if (b == NULL)
        return; /* keep the longer chains */
    for (size_t i = 0; i < st->nbuckets; i++) {
        s3m_object *o = st->buckets[i];
        while (o != NULL) {
            s3m_object *next = o->next;
            size_t k = s3m_hash(o->path, o->path_len) & (n - 1);
            o->next = b[k];
            b[k] = o;
            o = next;
        }
    }
    free(st->buckets);
    st->buckets = b;
    st->nbuckets = n;
}

static s3m_object *s3m_find(const s3m_stats *st, const char *path, size_t len)
{
    size_t k = s3m_hash(path, len) & (st->nbuckets - 1);
    for (s3m_object *o = st->buckets[k]; o != NULL; o = o->next) {
        if (o->path_len == len && memcmp(o->path, path, len) == 0)
            return o;
    }
    return NULL;
}

void s3m__stats_count(s3m_stats *st, const char *method, const char *path, size_t len)
{
    int m = s3m__method_index(method);
    st->requests++;
    st->by_method[m]++;
    if (len > S3M_MAX_PATH)
        len = S3M_MAX_PATH;
    s3m_object *o = s3m_find(st, path, len);
    if (o == NULL && st->nobjects < S3M_MAX_OBJECTS) {
        o = malloc(sizeof(*o) + len + 1);
        if (o != NULL) {
            memset(o->count, 0, sizeof(o->count));
            o->path_len = len;
            memcpy(o->path, path, len);
            o->path[len] = '\0';
            size_t k = s3m_hash(path, len) & (st->nbuckets - 1);
            o->next = st->buckets[k];
            st->buckets[k] = o;
            if (++st->nobjects > st->nbuckets)
                s3m_grow(st);
        }
    }
    if (o != NULL)
        o->count[m]++;
    else
        st->other_objects[m]++;
}

uint64_t s3m__stats_query(const s3m_stats *st, const char *method, const char *path)
{
    int m = method != NULL ? s3m__method_index(method) : -1;
    if (path == NULL)
        return m < 0 ? st->requests : st->by_method[m];
    const s3m_object *o = s3m_find(st, path, strlen(path));
    if (o == NULL)
        return 0;
    if (m >= 0)
        return o->count[m];
    uint64_t sum = 0;
    for (int i = 0; i < S3M_M_COUNT; i++)
        sum += o->count[i];
    return sum;
}

int s3m__stats_named(const s3m_proxy *px, const char *name, uint64_t *value)
{
    const s3m_stats *st = &px->stats;
    struct {
        const char *name;
        uint64_t v;
    } t[] = {
        {"requests", st->requests},
        {"bytes_in", st->bytes_in},
        {"bytes_out", st->bytes_out},
        {"connections", st->connections},
        {"live_connections", px->live},
        {"bad_requests", st->bad_requests},
        {"upstream_errors", st->upstream_errors},
        {"faults_503", st->faults_503},
        {"faults_reset", st->faults_reset},
        {"faults_stall", st->faults_stall},
        {"faults", st->faults_503 + st->faults_reset + st->faults_stall},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (strcmp(name, t[i].name) == 0) {
            *value = t[i].v;
            return 0;
        }
    }
    return -ENOENT;
}

static void s3m_json_str(struct evbuffer *out, const char *s)
{
    evbuffer_add(out, "\"", 1);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            evbuffer_add_printf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            evbuffer_add_printf(out, "\\u%04x", c);
        else
            evbuffer_add(out, s, 1);
    }
    evbuffer_add(out, "\"", 1);
}

static void s3m_json_methods(struct evbuffer *out, const uint64_t *count)
{
    evbuffer_add(out, "{", 1);
    int first = 1;
    for (int i = 0; i < S3M_M_COUNT; i++) {
        if (count[i] == 0)
            continue;
        evbuffer_add_printf(out, "%s\"%s\":%llu", first ? "" : ",", s3m__method_names[i],
                            (unsigned long long)count[i]);
        first = 0;
    }
    evbuffer_add(out, "}", 1);
}

int s3m__stats_json(const s3m_proxy *px, struct evbuffer *out)
{
    const s3m_stats *st = &px->stats;
    evbuffer_add_printf(out,
                        "{\"requests\":%llu,\"bytes_in\":%llu,\"bytes_out\":%llu,"
                        "\"connections\":%llu,\"live_connections\":%llu,\"bad_requests\":%llu,"
                        "\"upstream_errors\":%llu,\"faults\":{\"503\":%llu,\"reset\":%llu,"
                        "\"stall\":%llu},\"armed_faults\":%d,\"latency_ms\":%d,"
                        "\"bandwidth_mib\":%d,\"by_method\":",
                        (unsigned long long)st->requests, (unsigned long long)st->bytes_in,
                        (unsigned long long)st->bytes_out, (unsigned long long)st->connections,
                        (unsigned long long)px->live, (unsigned long long)st->bad_requests,
                        (unsigned long long)st->upstream_errors, (unsigned long long)st->faults_503,
                        (unsigned long long)st->faults_reset, (unsigned long long)st->faults_stall,
                        px->nfaults, px->cfg.latency_ms, px->cfg.bandwidth_mib);
    s3m_json_methods(out, st->by_method);
    evbuffer_add_printf(out, ",\"by_object\":{");
    int first = 1;
    for (size_t i = 0; i < st->nbuckets; i++) {
        for (const s3m_object *o = st->buckets[i]; o != NULL; o = o->next) {
            if (!first)
                evbuffer_add(out, ",", 1);
            first = 0;
            s3m_json_str(out, o->path);
            evbuffer_add(out, ":", 1);
            s3m_json_methods(out, o->count);
        }
    }
    uint64_t other = 0;
    for (int i = 0; i < S3M_M_COUNT; i++)
        other += st->other_objects[i];
    if (other > 0) {
        evbuffer_add_printf(out, "%s\"(other)\":", first ? "" : ",");
        s3m_json_methods(out, st->other_objects);
    }
    evbuffer_add_printf(out, "}}\n");
    return 0;
}

int s3m__fault_arm(s3m_proxy *px, const s3m_fault *f)
{
    if (f->kind == S3M_FAULT_NONE || f->remaining <= 0 || f->stall_ms < 0)
        return -EINVAL;
    if (px->nfaults >= S3M_MAX_FAULTS)
        return -ENOSPC;
    px->faults[px->nfaults++] = *f;
    return 0;
}

static int s3m_contains(const char *hay, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    if (m == 0)
        return 1;
    for (size_t i = 0; i + m <= n; i++) {
        if (memcmp(hay + i, needle, m) == 0)
            return 1;
    }
    return 0;
}

s3m_fault_kind s3m__fault_take(s3m_proxy *px, const char *method, const char *target,
                               size_t target_len, int *stall_ms)
{
    for (int i = 0; i < px->nfaults; i++) {
        s3m_fault *f = &px->faults[i];
        if (f->method[0] != '\0' && strcmp(f->method, method) != 0)
            continue;
        if (!s3m_contains(target, target_len, f->substr))
            continue;
        s3m_fault_kind kind = f->kind;
        *stall_ms = f->stall_ms;
        if (--f->remaining == 0) {
            memmove(&px->faults[i], &px->faults[i + 1],
                    (size_t)(px->nfaults - i - 1) * sizeof(px->faults[0]));
            px->nfaults--;
        }
        switch (kind) {
        case S3M_FAULT_503: px->stats.faults_503++; break;
        case S3M_FAULT_RESET: px->stats.faults_reset++; break;
        case S3M_FAULT_STALL: px->stats.faults_stall++; break;
        default: break;
        }
        return kind;
    }
    return S3M_FAULT_NONE;
}
