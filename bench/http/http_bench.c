/* SPDX-License-Identifier: Apache-2.0
 *
 * http_bench.c: the HTTP server core (client/http/httpd.h) against Debian's
 * nginx serving the same bytes from the same files, in one run, interleaved:
 *  - requests/s of small keep-alive GETs (a 100-byte file) from wrk (one
 *    thread, --conns connections, --seconds each), ours vs nginx;
 *  - CPU-seconds per GiB of one large streamed answer (a --big-mib file read
 *    by curl to /dev/null, three times per sample), the server process's
 *    CPU only, ours vs nginx:
 *    ours sends the file with httpd_resp_write_file (sendfile, as nginx
 *    does), and, in the table only, from memory (an mmap of it, written with
 *    httpd_resp_write_ref, copied into the socket: what a node does with RAM
 *    blocks).
 * Both servers are single processes with one event loop (nginx:
 * worker_processes 1; ours: this binary re-run with --serve, one loop thread),
 * so each ratio compares one core's work; ours writes 256 KiB pieces while
 * httpd_resp_room() allows and continues from the writable callback. Medians
 * of --reps interleaved runs. The last line:
 *   http: small_rps_vs_nginx=<a> cpu_per_gib_vs_nginx=<b>
 * Usage: http_bench [--reps N (3)] [--seconds S (5)] [--conns N (32)]
 *                   [--big-mib N (1024)]
 */
#include "harness.h"
#include "httpd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include "../bench.h"

#define SMALL_BYTES 100
#define PIECE       (256 * 1024)

static void die(const char *what)
{
    fprintf(stderr, "http_bench: %s\n", what);
    exit(1);
}

/* ---- the server (--serve PORT_FILE DIR) ------------------------------------ */

typedef struct files {
    const unsigned char *small, *big;
    size_t small_len, big_len;
    int big_fd;
} files;

typedef struct stream {
    const files *f;
    size_t off;
    bool from_file;
} stream;

static const unsigned char *map_file(const char *dir, const char *name, size_t *len)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        die("cannot open the served files");
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        die("cannot map the served files");
    *len = (size_t)st.st_size;
    return m;
}

static void fill(httpd_req *req, void *arg)
{
    stream *s = arg;
    while (s->off < s->f->big_len && httpd_resp_room(req) > 0) {
        /* a file goes in 1 MiB segments (one sendfile each, as nginx's
         * sendfile_max_chunk), memory in 256 KiB references */
        size_t piece = s->from_file ? 4 * PIECE : PIECE;
        size_t n = s->f->big_len - s->off < piece ? s->f->big_len - s->off : piece;
        int rc = s->from_file ? httpd_resp_write_file(req, s->f->big_fd, (int64_t)s->off, n)
                              : httpd_resp_write_ref(req, s->f->big + s->off, n, NULL, NULL);
        if (rc < 0)
            return;
        s->off += n;
    }
    if (s->off == s->f->big_len)
        httpd_resp_end(req);
}

static void stream_done(httpd_req *req, int status, void *arg)
{
    (void)req, (void)status;
    free(arg);
}

static void handle(httpd_req *req, void *arg)
{
    const files *f = arg;
    const char *path = httpd_req_path(req);
    if (strcmp(path, "/small") == 0) {
        httpd_resp_add_header(req, "Content-Type", "application/octet-stream");
        httpd_resp_start(req, (int64_t)f->small_len);
        httpd_resp_write_ref(req, f->small, f->small_len, NULL, NULL);
        httpd_resp_end(req);
    } else if (strcmp(path, "/big") == 0 || strcmp(path, "/bigmem") == 0) {
        stream *s = calloc(1, sizeof *s);
        if (s == NULL) {
            httpd_resp_send(req, 500, "text/plain", "out of memory\n", 14);
            return;
        }
        s->f = f;
        s->from_file = strcmp(path, "/big") == 0;
        httpd_req_on_done(req, stream_done, s);
        httpd_resp_add_header(req, "Content-Type", "application/octet-stream");
        httpd_resp_start(req, (int64_t)f->big_len);
        httpd_resp_on_writable(req, fill, s);
    } else {
        httpd_resp_send(req, 404, "text/plain", "not found\n", 10);
    }
}

static void on_term(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    event_base_loopbreak(arg);
}

static int serve(const char *port_file, const char *dir)
{
    files f;
    f.small = map_file(dir, "small", &f.small_len);
    f.big = map_file(dir, "big", &f.big_len);
    char bp[1100];
    snprintf(bp, sizeof bp, "%s/big", dir);
    f.big_fd = open(bp, O_RDONLY | O_CLOEXEC);
    if (f.big_fd < 0)
        die("cannot open the large file");
    struct event_base *base = event_base_new();
    httpd_config cfg;
    httpd_config_init(&cfg);
    cfg.handler = handle;
    cfg.handler_arg = &f;
    httpd_server *srv;
    char err[256];
    if (httpd_server_create(&srv, base, &cfg, err, sizeof err) < 0)
        die(err);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *pf = fopen(tmp, "w");
    if (pf == NULL)
        die("cannot write the port file");
    fprintf(pf, "%d\n", httpd_server_port(srv));
    fclose(pf);
    rename(tmp, port_file);
    struct event *term = evsignal_new(base, SIGTERM, on_term, base);
    event_add(term, NULL);
    event_base_dispatch(base);
    event_free(term);
    httpd_server_destroy(&srv);
    event_base_free(base);
    return 0;
}

/* ---- the measurements ---------------------------------------------------------- */

static h_env *env;

/* wrk's Requests/sec on url, or -1. */
static double wrk_rps(const char *url, int conns, int seconds)
{
    char c[16], d[16];
    snprintf(c, sizeof c, "%d", conns);
    snprintf(d, sizeof d, "%ds", seconds);
    const char *argv[] = {"/usr/bin/wrk", "-t1", "-c", c, "-d", d, url, NULL};
    h_run_result r;
    if (h_run(env, &r, argv, NULL) < 0 || r.status != 0) {
        fprintf(stderr, "http_bench: wrk failed: %s\n", r.err);
        return -1;
    }
    if (strstr(r.out, "Non-2xx") || strstr(r.out, "Socket errors")) {
        fprintf(stderr, "http_bench: wrk saw errors:\n%s\n", r.out);
        return -1;
    }
    const char *p = strstr(r.out, "Requests/sec:");
    return p ? strtod(p + 13, NULL) : -1;
}

/* Server CPU-seconds per GiB and GiB/s over GETS GETs of the big file, one
 * after the other (/proc counts CPU in 10 ms ticks: a few GiB per sample). */
#define GETS 3

static void big_get(const char *url, pid_t pid, bool group, double big_gib, double *cpu_per_gib,
                    double *gib_s)
{
    double c0 = group ? h_pgrp_cpu_s(pid) : h_pid_cpu_s(pid);
    double t0 = bench_now_s();
    for (int i = 0; i < GETS; i++) {
        const char *argv[] = {"/usr/bin/curl", "-sS", "-f", "-o", "/dev/null", url, NULL};
        h_run_result r;
        if (h_run(env, &r, argv, NULL) < 0 || r.status != 0)
            die("curl could not read the large answer");
    }
    double t = bench_now_s() - t0;
    double c1 = group ? h_pgrp_cpu_s(pid) : h_pid_cpu_s(pid);
    *cpu_per_gib = (c1 - c0) / (GETS * big_gib);
    *gib_s = GETS * big_gib / t;
}

static void write_files(const char *dir, size_t big)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/small", dir);
    FILE *f = fopen(p, "wb");
    if (f == NULL)
        die("cannot write the small file");
    for (int i = 0; i < SMALL_BYTES; i++)
        fputc('a' + i % 26, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/big", dir);
    f = fopen(p, "wb");
    if (f == NULL)
        die("cannot write the large file");
    unsigned char *buf = malloc(1 << 20);
    for (size_t i = 0; i < 1 << 20; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    for (size_t w = 0; w < big; w += 1 << 20)
        if (fwrite(buf, 1, 1 << 20, f) != 1 << 20)
            die("cannot write the large file");
    free(buf);
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--serve") == 0)
        return serve(argv[2], argv[3]);
    int reps = 3, seconds = 5, conns = 32, big_mib = 1024;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--conns") == 0 && i + 1 < argc)
            conns = atoi(argv[++i]);
        else if (strcmp(argv[i], "--big-mib") == 0 && i + 1 < argc)
            big_mib = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: http_bench [--reps N (3)] [--seconds S (5)] [--conns N (32)] "
                            "[--big-mib N (1024)]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 50 || seconds < 1 || conns < 1 || big_mib < 1)
        die("--reps 1..50, --seconds, --conns and --big-mib at least 1");
    if (access("/usr/bin/wrk", X_OK) != 0)
        die("wrk is missing: apt-get install wrk (scripts/setup.sh does)");
    if (h_env_create(&env, "http_bench") < 0)
        die("cannot make a temp folder");
    char dir[1024];
    h_env_path(env, dir, sizeof dir, "www");
    mkdir(dir, 0755);
    write_files(dir, (size_t)big_mib << 20);

    char self[1024];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        die("cannot find this program's path");
    self[sl] = '\0';
    h_proc *ours, *ng;
    char *const sargv[] = {self, "--serve", "ours.port", dir, NULL};
    if (h_proc_start(env, &ours, "httpd", sargv, NULL, "ours.port", 0) < 0)
        die("our server did not start");
    int nport;
    if (h_nginx_static_start(env, &ng, dir, 1, &nport) < 0)
        die("nginx did not start (apt-get install nginx)");
    int oport = h_proc_port(ours);

    char ou_s[128], ng_s[128], ou_b[128], ng_b[128], ou_m[128];
    snprintf(ou_s, sizeof ou_s, "http://127.0.0.1:%d/small", oport);
    snprintf(ng_s, sizeof ng_s, "http://127.0.0.1:%d/small", nport);
    snprintf(ou_b, sizeof ou_b, "http://127.0.0.1:%d/big", oport);
    snprintf(ng_b, sizeof ng_b, "http://127.0.0.1:%d/big", nport);
    snprintf(ou_m, sizeof ou_m, "http://127.0.0.1:%d/bigmem", oport);
    double big_gib = (double)big_mib / 1024.0;

    /* a warm-up of each: page cache, connections, branch predictors */
    wrk_rps(ou_s, conns, 1);
    wrk_rps(ng_s, conns, 1);
    double rps_o[50], rps_n[50], cpu_o[50], cpu_n[50], gs_o[50], gs_n[50], cpu_m[50], gs_m[50];
    for (int i = 0; i < reps; i++) {
        rps_o[i] = wrk_rps(ou_s, conns, seconds);
        rps_n[i] = wrk_rps(ng_s, conns, seconds);
        if (rps_o[i] <= 0 || rps_n[i] <= 0)
            die("a wrk run failed");
        big_get(ou_b, h_proc_pid(ours), false, big_gib, &cpu_o[i], &gs_o[i]);
        big_get(ng_b, h_proc_pid(ng), true, big_gib, &cpu_n[i], &gs_n[i]);
        big_get(ou_m, h_proc_pid(ours), false, big_gib, &cpu_m[i], &gs_m[i]);
        fprintf(stderr,
                "rep %d: small %.0f vs %.0f req/s; big %.3f (from memory %.3f) vs %.3f "
                "CPU-s/GiB, %.2f (%.2f) vs %.2f GiB/s\n",
                i + 1, rps_o[i], rps_n[i], cpu_o[i], cpu_m[i], cpu_n[i], gs_o[i], gs_m[i], gs_n[i]);
    }
    double ro = bench_median(rps_o, reps), rn = bench_median(rps_n, reps);
    double co = bench_median(cpu_o, reps), cn = bench_median(cpu_n, reps);
    double go = bench_median(gs_o, reps), gn = bench_median(gs_n, reps);
    double cm = bench_median(cpu_m, reps), gm = bench_median(gs_m, reps);
    printf("| measure | httpd (ours) | nginx | ratio |\n|---|---|---|---|\n");
    printf("| %d-byte GETs, keep-alive, wrk -t1 -c%d, %d s, req/s | %.0f | %.0f | %.2f |\n",
           SMALL_BYTES, conns, seconds, ro, rn, ro / rn);
    printf("| a %d MiB file to curl (x3), server CPU-s per GiB (both sendfile) | %.3f | %.3f | "
           "%.2f |\n",
           big_mib, co, cn, co / cn);
    printf("| the same, GiB/s | %.2f | %.2f | %.2f |\n", go, gn, go / gn);
    printf("| the same bytes from memory (ours: write_ref, copied), CPU-s per GiB | %.3f | "
           "%.3f | %.2f |\n",
           cm, cn, cm / cn);
    printf("| the same, GiB/s | %.2f | %.2f | %.2f |\n", gm, gn, gm / gn);
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("http: small_rps_vs_nginx=%.2f cpu_per_gib_vs_nginx=%.2f\n", ro / rn, co / cn);
    if (h_proc_stop(ours, 5000) != 0)
        fprintf(stderr, "http_bench: our server did not exit cleanly\n");
    h_proc_stop(ng, 5000);
    h_env_destroy(&env);
    return 0;
}
