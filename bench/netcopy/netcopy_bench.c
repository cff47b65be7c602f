/* SPDX-License-Identifier: Apache-2.0
 *
 * netcopy_bench.c: what moving 1 MiB blocks over loopback TCP costs on this
 * kernel, in CPU-seconds per GiB of the sender and of the receiver, for the
 * ways a cache node could send a block and a client could receive one:
 *
 *   send        send() of a block in memory (the node's RAM tier today: the
 *               kernel copies it into the socket)
 *   zerocopy    send(MSG_ZEROCOPY) of the same block, completions reaped from
 *               the error queue (the pages are lent to the stack)
 *   vmsplice    vmsplice() of the block into a pipe, splice() to the socket
 *   sendfile    sendfile() from a file in the OS page cache (a store that left
 *               its blocks to the kernel's cache instead of O_DIRECT)
 * received by
 *   recv        recv() into a 1 MiB buffer (the client today, readv into a page)
 *   uring       io_uring IORING_OP_RECV into the same buffer, one submit and
 *               one wait per receive (liburing)
 *
 * Each pair moves --gib GiB (default 2) between two threads of this process;
 * pairs are interleaved over --rounds rounds (default 5) and the medians
 * printed, since the machine is shared. CPU is each thread's own
 * (CLOCK_THREAD_CPUTIME_ID), so softirq work lands on whichever thread the
 * kernel ran it on: compare the sums.
 *
 *   netcopy_bench [--gib N] [--rounds N]
 * Last line: netcopy: zerocopy_cpu_vs_send=A vmsplice_cpu_vs_send=B
 *            sendfile_cpu_vs_send=C uring_recv_cpu_vs_recv=D
 * (CPU-seconds per GiB, sender + receiver, against send + recv: below 1 is
 * better). vmsplice lends the block's pages to the pipe: a sender must not
 * rewrite them until sent, which this best case does not wait for.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "../bench.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define BLOCK (1u << 20)

enum { S_SEND, S_ZEROCOPY, S_VMSPLICE, S_SENDFILE, N_SEND };
enum { R_RECV, R_URING, N_RECV };
static const char *send_names[N_SEND] = {"send", "zerocopy", "vmsplice", "sendfile"};
static const char *recv_names[N_RECV] = {"recv", "uring"};

static uint64_t total_bytes;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "netcopy_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

typedef struct {
    int fd;
    int method;
    int file_fd; /* sendfile's source */
    uint8_t *block;
    double cpu;
} sender_t;

typedef struct {
    int fd;
    int method;
    double cpu;
} receiver_t;

/* Reaps MSG_ZEROCOPY completions; returns how many sends they cover. */
static uint32_t zc_reap(int fd, bool wait)
{
    uint32_t done = 0;
    for (;;) {
        char control[128];
        struct msghdr msg = {.msg_control = control, .msg_controllen = sizeof(control)};
        if (recvmsg(fd, &msg, MSG_ERRQUEUE | (wait && !done ? 0 : MSG_DONTWAIT)) < 0)
            return done;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
            struct sock_extended_err *e = (struct sock_extended_err *)CMSG_DATA(cm);
            if (e->ee_origin == SO_EE_ORIGIN_ZEROCOPY)
                done += e->ee_data - e->ee_info + 1;
        }
    }
}

static void send_all(int fd, const uint8_t *p, size_t n, int flags)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, flags);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOBUFS && (flags & MSG_ZEROCOPY)) {
                zc_reap(fd, true);
                continue;
            }
            die("send");
        }
        p += k;
        n -= (size_t)k;
    }
}

static void *sender_main(void *arg)
{
    sender_t *s = arg;
    double c0 = thread_cpu_s();
    uint64_t sent = 0;
    uint32_t zc_out = 0;
    int pipefd[2] = {-1, -1};
    if (s->method == S_VMSPLICE) {
        if (pipe(pipefd) != 0)
            die("pipe");
        fcntl(pipefd[1], F_SETPIPE_SZ, BLOCK);
    }
    while (sent < total_bytes) {
        switch (s->method) {
        case S_SEND: send_all(s->fd, s->block, BLOCK, 0); break;
        case S_ZEROCOPY:
            send_all(s->fd, s->block, BLOCK, MSG_ZEROCOPY);
            zc_out++;
            /* the block may be reused only once the stack is done with it;
             * keep a few sends in flight as a node's send queue would */
            while (zc_out > 4)
                zc_out -= zc_reap(s->fd, true);
            break;
        case S_VMSPLICE: {
            size_t left = BLOCK;
            const uint8_t *p = s->block;
            while (left > 0) {
                struct iovec iov = {(void *)p, left};
                ssize_t k = vmsplice(pipefd[1], &iov, 1, 0);
                if (k < 0)
                    die("vmsplice");
                ssize_t m = 0;
                while (m < k) {
                    ssize_t z = splice(pipefd[0], NULL, s->fd, NULL, (size_t)(k - m),
                                       SPLICE_F_MOVE | SPLICE_F_MORE);
                    if (z < 0)
                        die("splice");
                    m += z;
                }
                p += k;
                left -= (size_t)k;
            }
            break;
        }
        case S_SENDFILE: {
            off_t off = 0;
            size_t left = BLOCK;
            while (left > 0) {
                ssize_t k = sendfile(s->fd, s->file_fd, &off, left);
                if (k < 0)
                    die("sendfile");
                left -= (size_t)k;
            }
            break;
        }
        }
        sent += BLOCK;
    }
    while (s->method == S_ZEROCOPY && zc_out > 0)
        zc_out -= zc_reap(s->fd, true);
    if (pipefd[0] >= 0) {
        close(pipefd[0]);
        close(pipefd[1]);
    }
    s->cpu = thread_cpu_s() - c0;
    shutdown(s->fd, SHUT_WR);
    return NULL;
}

static void *receiver_main(void *arg)
{
    receiver_t *r = arg;
    uint8_t *buf = aligned_alloc(4096, BLOCK);
    memset(buf, 0, BLOCK);
    struct io_uring ring;
    if (r->method == R_URING && io_uring_queue_init(8, &ring, 0) < 0) {
        fprintf(stderr, "netcopy_bench: io_uring is not available here\n");
        exit(1);
    }
    double c0 = thread_cpu_s();
    uint64_t got = 0;
    for (;;) {
        ssize_t k;
        if (r->method == R_RECV) {
            k = recv(r->fd, buf, BLOCK, 0);
        } else {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
            io_uring_prep_recv(sqe, r->fd, buf, BLOCK, 0);
            io_uring_submit(&ring);
            struct io_uring_cqe *cqe;
            if (io_uring_wait_cqe(&ring, &cqe) < 0)
                die("io_uring_wait_cqe");
            k = cqe->res;
            io_uring_cqe_seen(&ring, cqe);
            if (k < 0) {
                errno = (int)-k;
                k = -1;
            }
        }
        if (k < 0) {
            if (errno == EINTR)
                continue;
            die("recv");
        }
        if (k == 0)
            break;
        got += (uint64_t)k;
    }
    r->cpu = thread_cpu_s() - c0;
    if (got != total_bytes) {
        fprintf(stderr, "netcopy_bench: received %llu of %llu bytes\n", (unsigned long long)got,
                (unsigned long long)total_bytes);
        exit(1);
    }
    if (r->method == R_URING)
        io_uring_queue_exit(&ring);
    free(buf);
    return NULL;
}

/* A connected loopback TCP pair: out[0] sends, out[1] receives. */
static void tcp_pair(int out[2])
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    out[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(out[0], (struct sockaddr *)&a, sizeof(a)) != 0)
        die("connect");
    out[1] = accept(l, NULL, NULL);
    if (out[1] < 0)
        die("accept");
    close(l);
    int one = 1;
    setsockopt(out[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(out[0], SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one));
}

/* CPU-seconds per GiB of sender + receiver for one pair. */
static double run_pair(int sm, int rm, uint8_t *block, int file_fd, double *wall)
{
    int fds[2];
    tcp_pair(fds);
    sender_t s = {fds[0], sm, file_fd, block, 0};
    receiver_t r = {fds[1], rm, 0};
    pthread_t ts, tr;
    double t0 = bench_now_s();
    pthread_create(&tr, NULL, receiver_main, &r);
    pthread_create(&ts, NULL, sender_main, &s);
    pthread_join(ts, NULL);
    pthread_join(tr, NULL);
    *wall = bench_now_s() - t0;
    close(fds[0]);
    close(fds[1]);
    double gib = (double)total_bytes / (1u << 30);
    return (s.cpu + r.cpu) / gib;
}

int main(int argc, char **argv)
{
    double gib = 2;
    int rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gib") && i + 1 < argc)
            gib = atof(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: netcopy_bench [--gib N (2)] [--rounds N (5)]\n");
            return 2;
        }
    }
    if (rounds < 1 || rounds > 50 || gib <= 0)
        return 2;
    total_bytes = (uint64_t)(gib * (1u << 30)) / BLOCK * BLOCK;
    uint8_t *block = aligned_alloc(4096, BLOCK);
    for (size_t i = 0; i < BLOCK; i++)
        block[i] = (uint8_t)(i * 131);
    char path[] = "/tmp/netcopy_bench.XXXXXX";
    int file_fd = mkstemp(path);
    if (file_fd < 0 || write(file_fd, block, BLOCK) != (ssize_t)BLOCK)
        die("the sendfile source");
    unlink(path);
    /* the pairs: every sender into recv, and send into either receiver */
    struct {
        int sm, rm;
    } pairs[] = {{S_SEND, R_RECV},
                 {S_ZEROCOPY, R_RECV},
                 {S_VMSPLICE, R_RECV},
                 {S_SENDFILE, R_RECV},
                 {S_SEND, R_URING}};
    enum { NP = sizeof(pairs) / sizeof(pairs[0]) };
    double cpu[NP][50], wall[NP][50];
    for (int r = 0; r < rounds; r++)
        for (int p = 0; p < NP; p++)
            cpu[p][r] = run_pair(pairs[p].sm, pairs[p].rm, block, file_fd, &wall[p][r]);
    printf("netcopy_bench: %.1f GiB in 1 MiB blocks over loopback TCP per pair, %d rounds "
           "interleaved, medians\n",
           (double)total_bytes / (1u << 30), rounds);
    printf(
        "| sender | receiver | CPU-s per GiB (sender + receiver) | GiB/s |\n|---|---|---|---|\n");
    double med[NP];
    for (int p = 0; p < NP; p++) {
        med[p] = bench_median(cpu[p], rounds);
        double w = bench_median(wall[p], rounds);
        printf("| %s | %s | %.3f | %.2f |\n", send_names[pairs[p].sm], recv_names[pairs[p].rm],
               med[p], (double)total_bytes / (1u << 30) / w);
    }
    printf("%s\n", BENCH_RATIO_CONVENTION);
    printf("netcopy: zerocopy_cpu_vs_send=%.2f vmsplice_cpu_vs_send=%.2f "
           "sendfile_cpu_vs_send=%.2f uring_recv_cpu_vs_recv=%.2f\n",
           med[1] / med[0], med[2] / med[0], med[3] / med[0], med[4] / med[0]);
    close(file_fd);
    free(block);
    return 0;
}
