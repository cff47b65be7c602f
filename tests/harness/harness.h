/* SPDX-License-Identifier: Apache-2.0
 *
 * The test harness: starts real processes on loopback for integration tests and
 * benchmarks (an S3 server, the S3 model proxy, cache nodes), each test in its own
 * temp folder, with ready-waits that have deadlines and say why they failed, and a
 * cleanup that runs whether the test passes, fails, exits, aborts or crashes.
 *
 * Thread-safety: none. Use the harness from one thread (the test's main thread):
 * the environment registry behind the signal handlers is process-global, and
 * PR_SET_PDEATHSIG is tied to the thread that forks the children. The one
 * exception is the DNS server's zone (h_dns_*), which locks.
 *
 * Model: h2o t/Util.pm spawn_server and memcached testapp.c start_server().
 *
 *   h_env *env;
 *   h_env_create(&env, "s3_put_get");          // /tmp/s3_put_get.XXXXXX/
 *   h_s3 *s3;
 *   int rc = h_s3_start(env, &s3, NULL);        // s3rver 3, bucket "ringcache-test"
 *   if (rc == -ENOPKG) h_skip(h_last_error()); // exit 77: skipped, says why
 *   ... h_s3_endpoint(s3) -> "http://127.0.0.1:PORT" ...
 *   assert(h_proc_stop(h_s3_proc(s3), 5000) == 0);
 *   h_env_destroy(&env);                        // stops the rest, removes the folder
 *
 * Environment variables read: RINGCACHE_TEST_TMP (base of temp folders, default
 * /tmp), RINGCACHE_BUILD_DIR, RINGCACHE_SOURCE_DIR, RINGCACHE_NODE_MODULES (all
 * three set by ctest), RINGCACHE_TEST_KEEP=1 (keep the temp folders, for
 * debugging), RINGCACHE_TEST_SANITIZE and RINGCACHE_TEST_FULL (h_rounds).
 *
 * Errors: functions return >= 0 on success and -errno on failure, and print a
 * sentence naming the thing and the fix to stderr; h_last_error() returns it.
 */
#ifndef RINGCACHE_TESTS_HARNESS_H
#define RINGCACHE_TESTS_HARNESS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct h_env h_env;
typedef struct h_proc h_proc;
typedef struct h_s3 h_s3;
typedef struct h_s3model h_s3model;

/* Exit code that ctest reports as "skipped" (SKIP_RETURN_CODE 77). */
#define H_EXIT_SKIP 77

/* Default ready-wait deadline when a caller passes 0. */
#define H_READY_TIMEOUT_MS 20000

/* ---- environment ---------------------------------------------------------- */

/* Creates a test environment: a fresh folder mkdtemp(<base>/<test_name>.XXXXXX)
 * and an empty list of processes. The first call installs the atexit handler and
 * the SIGINT/SIGTERM/SIGABRT/SIGSEGV/SIGBUS handlers that kill every child and
 * remove every folder (then let the signal take its course).
 * -ENOMEM, -ENOSPC (too many live environments), or the errno of mkdtemp. */
int h_env_create(h_env **out, const char *test_name);

/* Stops every process still running (SIGTERM to its process group, up to 5 s,
 * then SIGKILL), frees them, removes the folder recursively (unless
 * RINGCACHE_TEST_KEEP=1), and sets *env to NULL. Accepts NULL and *env == NULL. */
void h_env_destroy(h_env **env);

/* The environment's folder (absolute path, no trailing slash). Borrowed. */
const char *h_env_dir(const h_env *env);

/* Writes "<dir>/<name>" into buf. -ENAMETOOLONG if it does not fit. */
int h_env_path(const h_env *env, char *buf, size_t len, const char *name);

/* ---- processes ------------------------------------------------------------ */

/* Starts argv[0] (looked up in PATH unless it contains a '/') with argv, the
 * current environment plus envp_extra ("KEY=VALUE" strings overriding same-named
 * variables; may be NULL), in its own process group, with PR_SET_PDEATHSIG
 * SIGKILL, the env folder as its working directory, stdin from /dev/null,
 * stdout and stderr appended to "<env dir>/<name>.log".
 *
 * If port_file is not NULL (a path; relative paths are inside the env folder),
 * it is removed first, then waited for: ready means the file holds a port AND a
 * TCP connect to 127.0.0.1:port succeeds. ready_timeout_ms 0 means
 * H_READY_TIMEOUT_MS. If port_file is NULL, returns right after the fork.
 *
 * The process belongs to env (h_env_destroy stops and frees it); *out is
 * borrowed. On failure the process is killed, the last lines of its log are
 * printed to stderr, *out is NULL, and the result is -ETIMEDOUT (deadline
 * passed), -ECHILD (the process exited before it was ready), or -errno of
 * fork/open. */
int h_proc_start(h_env *env, h_proc **out, const char *name, char *const argv[],
                 char *const envp_extra[], const char *port_file, int ready_timeout_ms);

/* The port read from the port file (0 if started without one). */
int h_proc_port(const h_proc *proc);

/* The child's pid (also its process-group id). */
pid_t h_proc_pid(const h_proc *proc);

/* The log file "<env dir>/<name>.log". Borrowed. */
const char *h_proc_log_path(const h_proc *proc);

/* Sends SIGTERM to the process group, waits up to timeout_ms (0: 5000) for the
 * process to exit, then SIGKILLs the group if it has not. Returns its exit status:
 * the exit code (0..255), or 128 + signal number if a signal ended it. A status
 * other than 0 prints the last lines of its log. If the process had already
 * exited (or been stopped), returns that status again. */
int h_proc_stop(h_proc *proc, int timeout_ms);

/* Waits up to timeout_ms (< 0: forever) for the process to exit by itself;
 * returns its status as h_proc_stop does, or -ETIMEDOUT if it still runs. */
int h_proc_wait(h_proc *proc, int timeout_ms);

/* Sends sig to the process group (fault tests: SIGKILL, SIGSTOP, SIGCONT).
 * 0, or -ESRCH if the process has already been reaped. */
int h_proc_kill(h_proc *proc, int sig);

/* Prints the last max_lines lines of the process's log to stderr. */
void h_proc_print_log_tail(const h_proc *proc, int max_lines);

/* What h_run captured: the exit status (the code, or 128 + the signal that
 * ended it), standard output and error (NUL-terminated, cut to fit), and the
 * file that holds the whole standard output (in env's folder; for binary
 * output). */
typedef struct h_run_result {
    int status;
    char out_path[1024];
    char out[65536];
    char err[8192];
} h_run_result;

/* Runs argv (NULL-terminated; argv[0] is the program's path) to completion,
 * without a shell. The child gets HOME = env's folder (never the machine's
 * ~/.aws or config), then each entry of env_set in order: "NAME=VALUE" sets,
 * "NAME" alone unsets (env_set may be NULL). 0 (whatever the program's
 * status), or -errno when the output files or the fork fail. */
int h_run(h_env *env, h_run_result *r, const char *const argv[], const char *const env_set[]);

/* The start of a file as a NUL-terminated string (at most cap - 1 bytes; ""
 * when it cannot be read). */
void h_read_text(const char *path, char *buf, size_t cap);

/* ---- locations, skips, errors --------------------------------------------- */

/* "<$RINGCACHE_BUILD_DIR>/<rel>" into buf, e.g. rel "bench/s3model/s3model".
 * -ENOENT (with a message) if the variable is unset or the file does not exist. */
int h_build_path(char *buf, size_t len, const char *rel);

/* Where the build puts the programs tests run, relative to the build folder. */
#define H_RINGCACHE_CLI "ingest/cli/ringcache"
#define H_RINGCACHED    "cached/ringcached"

/* "<$RINGCACHE_SOURCE_DIR>/<rel>" into buf; falls back to the source folder this
 * harness was compiled from. -ENOENT if the file does not exist. */
int h_source_path(char *buf, size_t len, const char *rel);

/* Prints "SKIP: <why>" to stderr and exits H_EXIT_SKIP (cleanup runs at exit). */
_Noreturn void h_skip(const char *why);

/* How many times to repeat a round whose count is not what the test checks
 * (kills at random moments, restarts, queries again): full, or sanitized
 * (at least 1) when RINGCACHE_TEST_SANITIZE is set, as ctest sets it in the
 * ASan and TSan builds, where one round costs several times as much.
 * RINGCACHE_TEST_FULL=1 asks for the full count there too. */
int h_rounds(int full, int sanitized);

/* The last error message the harness printed (empty string if none). */
const char *h_last_error(void);

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t h_now_ms(void);

/* Writes a self-signed P-256 certificate for 127.0.0.1 (subjectAltName IP,
 * CA:TRUE, valid for an hour) and its key as PEM files, for TLS tests: the
 * certificate is its own CA. 0 or -errno. */
int h_make_cert(const char *cert_path, const char *key_path);

/* The same with the names given: san is an OpenSSL subjectAltName value, e.g.
 * "DNS:n0.svc.test,DNS:n1.svc.test" or "DNS:*.svc.test,IP:127.0.0.1" (the
 * subject CN is the first name). 0, -EINVAL (a bad san) or -errno. */
int h_make_cert_san(const char *cert_path, const char *key_path, const char *san);

/* CPU seconds (user + system, all threads) and resident KiB of a process, from
 * /proc; 0 / -1 when it is gone. */
double h_pid_cpu_s(pid_t pid);
long h_pid_rss_kib(pid_t pid);

/* CPU seconds of every live process in process group pgid (h_proc starts each
 * process in a group of its own: a server and the workers it forks, such as
 * nginx's). Processes that have exited are not counted. */
double h_pgrp_cpu_s(pid_t pgid);

/* A port the kernel says is free on 127.0.0.1 now (for servers without a port
 * file, such as nginx and iperf3), or -errno. */
int h_free_port(void);

/* Starts Debian's nginx as a slice cache (slice 1m, proxy_cache,
 * proxy_cache_lock on) in front of 127.0.0.1:upstream_port, everything in the
 * env folder; *port_out is its port. 0 or -errno (nginx missing: its error). */
int h_nginx_start(h_env *env, h_proc **out, int upstream_port, int *port_out);

/* Starts Debian's nginx serving the files of root (an absolute folder) as
 * they are: sendfile on, tcp_nopush off, access log off, keep-alive with no
 * request limit, `workers` worker processes; everything else in the env
 * folder. *port_out is its port. For benches that compare a server with
 * nginx on the same bytes. 0 or -errno. */
int h_nginx_static_start(h_env *env, h_proc **out, const char *root, int workers, int *port_out);

/* The loopback ceiling: iperf3 -P streams for `seconds` against its own
 * server on a free port. GiB/s received, 0 when iperf3 is missing. */
double h_iperf_gib_s(h_env *env, int streams, int seconds);

/* The two halves, to measure through something (a proxy): a one-session
 * iperf3 server on *port_out (0: a free port, written back), and a client run
 * (reverse: the server sends). Start a proxy in front before the server: the
 * harness's ready probe through the proxy would use up the server's session. */
int h_iperf_server_start(h_env *env, h_proc **out, int *port_out);
double h_iperf_client_gib_s(int port, int streams, int seconds, int reverse);

/* A blocking TCP connect to 127.0.0.1:port; returns the fd or -errno. */
int h_tcp_connect(int port, int timeout_ms);

/* ---- a DNS server (UDP on 127.0.0.1) -------------------------------------- */

/* A tiny authoritative DNS server for dns: membership tests: SRV records of a
 * headless-Service-like name pointing at targets, and A records of the
 * targets, changed while it runs. It answers from a thread of its own, so the
 * zone functions below may be called from any thread (they lock); start and
 * stop from the test's main thread. A name with SRV records or an A entry
 * gets NOERROR (no records of the asked type: NODATA); any other NXDOMAIN. */
typedef struct h_dns h_dns;

/* Binds a free UDP port on 127.0.0.1 and starts answering. 0, or -errno
 * (with a message) when no socket can be bound: callers skip (77). */
int h_dns_start(h_dns **out);
/* Stops answering (the port is closed: queries then fail) and frees. Accepts
 * NULL and *dns == NULL; sets *dns to NULL. */
void h_dns_stop(h_dns **dns);
/* "127.0.0.1:PORT", for rc_config.dns_server and evdns. Borrowed. */
const char *h_dns_server(const h_dns *dns);
int h_dns_port(const h_dns *dns);
/* Questions answered so far. */
int64_t h_dns_queries(const h_dns *dns);
/* Adds an SRV record name -> target:port (priority 10, weight 50), or changes
 * the port of the same (name, target). 0, -ENOSPC, -ENAMETOOLONG. */
int h_dns_add_srv(h_dns *dns, const char *name, const char *target, uint16_t port);
/* Removes the SRV record name -> target. 0 or -ENOENT. */
int h_dns_remove_srv(h_dns *dns, const char *name, const char *target);
/* Sets the A record of host to ipv4, or with "" makes host a name that exists
 * without an A record. 0, -EINVAL, -ENOSPC. */
int h_dns_set_a(h_dns *dns, const char *host, const char *ipv4);

/* ---- S3 servers (npm) ----------------------------------------------------- */

#define H_S3_DEFAULT_BUCKET "ringcache-test"
#define H_S3_DEFAULT_KEY    "S3RVER"

typedef struct h_s3_opts {
    int version; /* 3: s3rver 3.7.1 (default), 5: @20minutes/s3rver 5 (SigV4 checked) */
    const char *const *buckets; /* NULL-terminated; NULL: just H_S3_DEFAULT_BUCKET */
    const char *access_key;     /* NULL: S3RVER */
    const char *secret_key;     /* NULL: S3RVER */
    const char *name;           /* process/log name; NULL: "s3rver" */
    int verbose;                /* log every request to the log file */
    int ready_timeout_ms;       /* 0: H_READY_TIMEOUT_MS */
    int no_conditional_writes;  /* ignore If-None-Match / If-Match on PUT, as some stores do */
} h_s3_opts;

/* Starts an S3 server on 127.0.0.1 (free port) through tests/harness/s3server.js,
 * with its data folder "<env dir>/<name>-data" and the buckets pre-created.
 * Overwrites are atomic and conditional writes (If-None-Match: * and If-Match on
 * PutObject and CompleteMultipartUpload) answer as AWS S3 does. opts
 * may be NULL. Returns 0, -ENOPKG if node or the npm package is missing (call
 * h_skip(h_last_error())), or an error of h_proc_start. *out belongs to env. */
int h_s3_start(h_env *env, h_s3 **out, const h_s3_opts *opts);

/* "http://127.0.0.1:PORT". Borrowed. */
const char *h_s3_endpoint(const h_s3 *s3);
int h_s3_port(const h_s3 *s3);
/* The server's data folder. Borrowed. */
const char *h_s3_data_dir(const h_s3 *s3);
/* The process, for h_proc_stop / h_proc_kill. */
h_proc *h_s3_proc(const h_s3 *s3);

/* ---- the S3 model proxy (bench/s3model) ----------------------------------- */

/* Starts $RINGCACHE_BUILD_DIR/bench/s3model/s3model in front of 127.0.0.1:
 * upstream_port with the given first-byte latency and per-connection bandwidth
 * (0 disables each). Returns 0, -ENOENT if the binary was not built, or an error
 * of h_proc_start. *out belongs to env. */
int h_s3model_start(h_env *env, h_s3model **out, int upstream_port, int latency_ms,
                    int bandwidth_mib_s);

int h_s3model_port(const h_s3model *m);
int h_s3model_admin_port(const h_s3model *m);
/* "http://127.0.0.1:PORT" of the data port. Borrowed. */
const char *h_s3model_endpoint(const h_s3model *m);
h_proc *h_s3model_proc(const h_s3model *m);

/* Number of requests the model has seen (forwarded or answered by a fault) since
 * the last reset: method NULL = any method, path NULL = any object; path is the
 * request path without its query string, as sent ("/bucket/key").
 * Returns the count (>= 0) or -errno. */
int64_t h_s3model_count(const h_s3model *m, const char *method, const char *path);

/* A named total from the model: "requests", "bytes_in", "bytes_out",
 * "faults_503", "faults_reset", "faults_stall", "connections", "bad_requests".
 * Returns the value or -errno (-ENOENT for an unknown name). */
int64_t h_s3model_stat(const h_s3model *m, const char *name);

/* The whole counts document (JSON) into *json (malloc'd, caller frees). */
int h_s3model_counts_json(const h_s3model *m, char **json);

/* Resets every counter. 0 or -errno. */
int h_s3model_reset(const h_s3model *m);

/* Arms a fault for the next count requests that match method (NULL: any) and
 * whose path contains path_substr (NULL: any): kind "503" (answer 503 SlowDown
 * without reaching upstream), "reset" (close the connection with RST), "stall"
 * (hold the request stall_ms before forwarding it). 0 or -errno. */
int h_s3model_fault(const h_s3model *m, const char *kind, int count, const char *method,
                    const char *path_substr, int stall_ms);

/* Changes latency and bandwidth at run time; a negative value leaves it as is. */
int h_s3model_config(const h_s3model *m, int latency_ms, int bandwidth_mib_s);

/* ---- ringcached nodes ----------------------------------------------------- */

typedef struct h_node_opts {
    const char *name;         /* the process and log name, and the --node-id unless id is set */
    const char *id;           /* --node-id; NULL: name */
    const char *dir;          /* the data folder (created); NULL: "<env dir>/<name>" */
    const char *s3_endpoint;  /* --s3-endpoint, with S3RVER's credentials */
    const char *ssd;          /* --ssd-capacity; NULL: 512MiB */
    const char *ram;          /* --ram-capacity; NULL: 64MiB */
    int port;                 /* --port; 0: the node picks one */
    const char *members;      /* --members; NULL: none */
    int threads;              /* --threads; 0: the node's default */
    const char *log_level;    /* --log-level; NULL: the node's default */
    const char *const *extra; /* more flags, NULL-terminated (may be NULL); with
                               * --s3-api-port among them, its port file is added
                               * and read into s3api_port */
    const char *const *wrap;  /* NULL, or a command that execs the node keeping
                               * its pid ({"prlimit", "--nofile=128:128", NULL}) */
} h_node_opts;

typedef struct h_node {
    h_proc *proc; /* belongs to env */
    int port;
    int admin_port;
    int s3api_port; /* 0 without --s3-api-port */
    char dir[PATH_MAX];
} h_node;

/* Starts ringcached (o->name's log in env) on 127.0.0.1 with --no-sync, its
 * data, admin (and S3 API) ports written to files in env's folder and read
 * back, ready when its data port takes a connection. 0; -ENOENT when the
 * binary is not built; an error of h_proc_start; -EPROTO when it wrote no
 * admin (or S3 API) port. h_last_error() says which. */
int h_node_start(h_env *env, h_node *out, const h_node_opts *o);

/* Appends "id=127.0.0.1:port" to the --members list in members (comma
 * separated; cut to cap). */
void h_members_add(char *members, size_t cap, const char *id, int port);

/* A sample from a node's Prometheus text at http://127.0.0.1:admin_port/metrics:
 * the first line that starts with metric (a name, or a name with its labels)
 * followed by a space or '{'. -1 when absent or unreachable. */
int64_t h_metric(int admin_port, const char *metric);

/* ---- blocking HTTP on loopback (libcurl) ---------------------------------- */

typedef struct h_http_resp {
    long status; /* HTTP status, 0 if no response */
    char *body;  /* malloc'd, NUL-terminated; NULL if empty */
    size_t body_len;
    char *headers; /* raw response header block, malloc'd, NUL-terminated */
    size_t headers_len;
} h_http_resp;

typedef struct h_http_req {
    const char *method; /* NULL: GET, or PUT when body is set */
    const char *url;
    const void *body; /* request body, may be NULL */
    size_t body_len;
    const char *const *headers; /* NULL-terminated "Name: value" lines, may be NULL */
    const char *aws_sigv4;      /* e.g. "aws:amz:us-east-1:s3": sign with libcurl's SigV4 */
    const char *userpwd;        /* "ACCESS:SECRET" for aws_sigv4 */
    int timeout_ms;             /* 0: 60000 */
} h_http_req;

/* Performs one request on a fresh connection. Returns the HTTP status (> 0) and
 * fills *resp (release with h_http_resp_deinit), or -errno on a transport error:
 * -ECONNREFUSED, -ECONNRESET (reset or closed without an answer), -ETIMEDOUT,
 * -EIO for anything else. resp may be NULL. */
int h_http(const h_http_req *req, h_http_resp *resp);

/* GET url; body into resp. Same results as h_http. */
int h_http_get(const char *url, h_http_resp *resp);

/* Frees what h_http put into resp and zeroes it. Accepts NULL. */
void h_http_resp_deinit(h_http_resp *resp);

/* Finds header name (case-insensitive) in resp->headers and copies its value
 * (trimmed) into buf. Length of the value, or -ENOENT / -ENAMETOOLONG. */
int h_http_header(const h_http_resp *resp, const char *name, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* RINGCACHE_TESTS_HARNESS_H */
