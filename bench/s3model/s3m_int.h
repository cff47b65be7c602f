/* SPDX-License-Identifier: Apache-2.0
 *
 * Internals shared by the S3 model's files: the proxy struct, the counters
 * (by method, by object), the armed faults, and the admin port's entry points.
 * Thread-safety: none (one event loop).
 */
#ifndef RINGCACHE_S3M_INT_H
#define RINGCACHE_S3M_INT_H

#include <stddef.h>
#include <stdint.h>

#include "s3model.h"

struct evbuffer;
struct evconnlistener;
struct evhttp;
struct s3m_conn;

/* Methods counted by name; anything else counts as OTHER. */
enum { S3M_M_GET, S3M_M_HEAD, S3M_M_PUT, S3M_M_POST, S3M_M_DELETE, S3M_M_OTHER, S3M_M_COUNT };

/* Distinct objects counted individually; later ones count under "(other)". */
#define S3M_MAX_OBJECTS 100000
#define S3M_MAX_FAULTS  64
#define S3M_MAX_PATH    1024

typedef struct s3m_object {
    struct s3m_object *next; /* hash chain */
    uint64_t count[S3M_M_COUNT];
    size_t path_len;
    char path[]; /* NUL-terminated */
} s3m_object;

typedef enum s3m_fault_kind {
    S3M_FAULT_NONE = 0,
    S3M_FAULT_503,
    S3M_FAULT_RESET,
    S3M_FAULT_STALL
} s3m_fault_kind;

typedef struct s3m_fault {
    s3m_fault_kind kind;
    int remaining;
    int stall_ms;
    char method[16];           /* empty: any */
    char substr[S3M_MAX_PATH]; /* empty: any; matched against the whole target */
} s3m_fault;

typedef struct s3m_stats {
    uint64_t requests;
    uint64_t by_method[S3M_M_COUNT];
    uint64_t bytes_in;        /* request bytes received from clients */
    uint64_t bytes_out;       /* response bytes sent to clients */
    uint64_t connections;     /* accepted */
    uint64_t bad_requests;    /* answered 400 */
    uint64_t upstream_errors; /* answered 502 or cut short by the upstream */
    uint64_t faults_503, faults_reset, faults_stall;
    s3m_object **buckets; /* hash table of objects */
    size_t nbuckets;
    size_t nobjects;
    uint64_t other_objects[S3M_M_COUNT];
} s3m_stats;

struct s3m_proxy {
    struct event_base *base;
    s3m_config cfg;
    struct evconnlistener *listener;
    struct evhttp *admin;
    int port, admin_port;
    struct s3m_conn *conns; /* doubly linked list of live connections */
    uint64_t live;
    s3m_stats stats;
    s3m_fault faults[S3M_MAX_FAULTS];
    int nfaults;
};

int s3m__method_index(const char *method);
extern const char *const s3m__method_names[S3M_M_COUNT];

int s3m__stats_init(s3m_stats *st);
void s3m__stats_deinit(s3m_stats *st);
void s3m__stats_reset(s3m_stats *st);
/* Counts one request of method for the object path[0, len). */
void s3m__stats_count(s3m_stats *st, const char *method, const char *path, size_t len);
/* Requests for method (NULL: any) and path (NULL: any). */
uint64_t s3m__stats_query(const s3m_stats *st, const char *method, const char *path);
/* Appends the counts document (JSON) to out. */
int s3m__stats_json(const s3m_proxy *px, struct evbuffer *out);
/* A named total (see harness.h h_s3model_stat); -ENOENT for unknown names. */
int s3m__stats_named(const s3m_proxy *px, const char *name, uint64_t *value);

/* Arms a fault. -ENOSPC if S3M_MAX_FAULTS are armed, -EINVAL for bad values. */
int s3m__fault_arm(s3m_proxy *px, const s3m_fault *f);
/* Takes one use of the first armed fault matching the request; NONE if none. */
s3m_fault_kind s3m__fault_take(s3m_proxy *px, const char *method, const char *target,
                               size_t target_len, int *stall_ms);

int s3m__admin_setup(s3m_proxy *px);
void s3m__admin_teardown(s3m_proxy *px);

int s3m__conn_listen(s3m_proxy *px);
void s3m__conn_close_all(s3m_proxy *px);

/* logfmt line on stderr: "level=<lvl> <msg...>". */
void s3m__log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* RINGCACHE_S3M_INT_H */
