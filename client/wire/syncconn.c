/* SPDX-License-Identifier: Apache-2.0
 *
 * syncconn.c: a blocking connection to a cache node (syncconn.h). Frames as
 * in PROTOCOL.md: a 16-byte header, then the body; a GET answer is one or
 * more chunks (RESPONSE, MORE on all but the last), the first starting with
 * the 8-byte answer head. Lengths are checked against what was asked before
 * a byte is written to the caller's buffer.
 */
#include "syncconn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct sc_conn {
    int fd;
    int spin_us;
    int64_t wait_us; /* smoothed time from a GET sent to its answer's first
                                   bytes (each sample capped at SC_WAIT_CAP x spin_us);
                                   0: none yet */
    uint64_t spins;  /* GETs that polled for their answer */
    bool broken;
    uint32_t next_id;
    uint32_t max_body;
};

static int sc_errno_or(int fallback)
{
    return errno ? -errno : fallback;
}

/* Reads exactly n bytes. 0, -ETIMEDOUT (SO_RCVTIMEO), -ECONNRESET (EOF). */
static int sc_read_full(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, 0);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k == 0) {
            return -ECONNRESET;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return -ETIMEDOUT;
        } else {
            return -errno;
        }
    }
    return 0;
}

/* Writes the header and body in one call where the socket takes them. */
static int sc_send_frame(sc_conn *c, uint8_t op, uint32_t id, const uint8_t *body, size_t len)
{
    uint8_t h[RCP_HEADER_SIZE];
    rcp_header hd = {op, 0, id, (uint32_t)len};
    rcp_header_encode(&hd, h);
    struct iovec iov[2] = {{h, sizeof(h)}, {(void *)body, len}};
    int cnt = len ? 2 : 1;
    size_t left = sizeof(h) + len;
    while (left > 0) {
        /* MSG_NOSIGNAL: a node that closed the connection is -EPIPE here, not
         * a SIGPIPE that kills whatever program reads through this library */
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
        ssize_t k = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
        }
        left -= (size_t)k;
        for (int i = 0; i < cnt && k > 0; i++) {
            size_t take = (size_t)k < iov[i].iov_len ? (size_t)k : iov[i].iov_len;
            iov[i].iov_base = (uint8_t *)iov[i].iov_base + take;
            iov[i].iov_len -= take;
            k -= (ssize_t)take;
        }
    }
    return 0;
}

/* A sample of the wait counts at most this many spin windows: one slow answer
 * (a fill from S3) does not stop the polling for long, a link that is slow
 * every time stops it for good. */
#define SC_WAIT_CAP 4

static int64_t sc_now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Waits until fd has bytes to read. An answer due within spin_us (the last
 * answers came that fast) is polled for, yielding the core between looks: it
 * then costs no wake-up. One not due that soon (a far or capped link, a node
 * busy filling) is slept for at once in the blocking read (SO_RCVTIMEO):
 * polling for it would only take the core from whoever could use it. */
static void sc_wait_readable(sc_conn *c)
{
    if (c->spin_us <= 0 || c->wait_us > c->spin_us)
        return;
    c->spins++;
    int64_t until = sc_now_us() + c->spin_us;
    for (;;) {
        uint8_t b;
        ssize_t k = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (k > 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || k == 0)
            return;
        if (sc_now_us() >= until)
            return;
        sched_yield();
    }
}

/* The answer's first bytes came `sample` microseconds after the GET. */
static void sc_note_wait(sc_conn *c, int64_t sample)
{
    int64_t cap = (int64_t)SC_WAIT_CAP * (c->spin_us > 0 ? c->spin_us : 1);
    if (sample > cap)
        sample = cap;
    c->wait_us = c->wait_us ? (3 * c->wait_us + sample) / 4 : sample;
}

static int sc_read_header(sc_conn *c, rcp_header *h)
{
    uint8_t b[RCP_HEADER_SIZE];
    int rc = sc_read_full(c->fd, b, sizeof(b));
    if (rc < 0)
        return rc;
    rc = rcp_header_decode(b, c->max_body, h);
    if (rc < 0)
        return rc;
    return (h->flags & RCP_F_RESPONSE) ? 0 : -EPROTO;
}

/* Reads an ERROR frame's body (h already read): its code, and its message
 * into msg (msglen bytes, may be 0). */
static int sc_read_error(sc_conn *c, const rcp_header *h, int *code, char *msg, size_t msglen)
{
    uint8_t body[1024];
    if (h->len > sizeof(body))
        return -EMSGSIZE;
    int rc = sc_read_full(c->fd, body, h->len);
    if (rc < 0)
        return rc;
    rcp_error e;
    if (rcp_parse_error(body, h->len, &e) < 0)
        return -EPROTO;
    *code = e.code;
    if (msglen)
        snprintf(msg, msglen, "%.*s", (int)e.message.len, e.message.p);
    return 0;
}

static int sc_connect_fd(const char *host, int port, int timeout_ms, char *err, size_t errlen)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int g = getaddrinfo(host, ps, &hints, &ai);
    if (g != 0) {
        snprintf(err, errlen, "cannot resolve cache node %s: %s", host, gai_strerror(g));
        return -EHOSTUNREACH;
    }
    int rc = -ECONNREFUSED;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        errno = 0;
        if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
            rc = -errno;
            close(fd);
            continue;
        }
        struct pollfd pf = {fd, POLLOUT, 0};
        int pr;
        while ((pr = poll(&pf, 1, timeout_ms)) < 0 && errno == EINTR) {
        }
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (pr == 0) {
            rc = -ETIMEDOUT;
        } else if (pr < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
            rc = sc_errno_or(-EIO);
        } else if (soerr) {
            rc = -soerr;
        } else {
            int fl = fcntl(fd, F_GETFL);
            fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            freeaddrinfo(ai);
            return fd;
        }
        close(fd);
    }
    freeaddrinfo(ai);
    snprintf(err, errlen, "cannot connect to cache node %s:%d: %s", host, port, strerror(-rc));
    return rc;
}

int sc_open(sc_conn **out, const char *host, int port, const char *token, uint32_t block_size,
            int connect_timeout_ms, int timeout_ms, int spin_us, char *err, size_t errlen)
{
    *out = NULL;
    int fd = sc_connect_fd(host, port, connect_timeout_ms, err, errlen);
    if (fd < 0)
        return fd;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sc_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return -ENOMEM;
    }
    c->fd = fd;
    c->spin_us = spin_us;
    c->next_id = 1;
    c->max_body = RCP_MAX_FRAME_BODY;
    uint8_t b[RCP_MAX_HELLO_BODY]; /* our HELLO, and its (smaller) answer */
    rcp_hello_req h = {RCP_VERSION, RCP_VERSION, rcp_s(token ? token : ""), block_size,
                       rcp_s("ringcache-sync")};
    int n = rcp_encode_hello_req(&h, b, sizeof(b));
    int rc = n < 0 ? -EINVAL : sc_send_frame(c, RCP_OP_HELLO, 0, b, (size_t)n);
    rcp_header hd;
    if (rc == 0)
        rc = sc_read_header(c, &hd);
    if (rc == 0 && hd.op == RCP_OP_ERROR) {
        int code = 0;
        rc = sc_read_error(c, &hd, &code, NULL, 0);
        if (rc == 0)
            rc = code == RCP_E_UNAUTHORIZED ? -EACCES : -EPROTO;
    } else if (rc == 0 && (hd.op != RCP_OP_HELLO || hd.len > sizeof(b))) {
        rc = -EPROTO;
    } else if (rc == 0) {
        rcp_hello_resp hr;
        rc = sc_read_full(c->fd, b, hd.len);
        if (rc == 0 && (rcp_parse_hello_resp(b, hd.len, &hr) < 0 || hr.version != RCP_VERSION ||
                        (block_size && hr.block_size != block_size)))
            rc = -EPROTO;
        if (rc == 0 && hr.max_body && hr.max_body < c->max_body)
            c->max_body = hr.max_body;
    }
    if (rc < 0) {
        snprintf(err, errlen, "HELLO to cache node %s:%d failed: %s", host, port, strerror(-rc));
        sc_close(&c);
        return rc;
    }
    *out = c;
    return 0;
}

int sc_get(sc_conn *c, const rcp_get_req *req, void *buf, uint32_t len, int *node_err, char *msg,
           size_t msglen)
{
    if (c->broken)
        return -EPIPE;
    uint8_t body[RCP_GET_REQ_MAX];
    int n = rcp_encode_get_req(req, body, sizeof(body));
    if (n < 0)
        return n; /* nothing sent: still usable */
    uint32_t id = c->next_id++;
    if (c->next_id == 0)
        c->next_id = 1;
    int64_t sent_us = sc_now_us();
    int rc = sc_send_frame(c, RCP_OP_GET, id, body, (size_t)n);
    if (rc == 0)
        sc_wait_readable(c);
    uint32_t got = 0;
    bool head_seen = false;
    while (rc == 0) {
        rcp_header h;
        if ((rc = sc_read_header(c, &h)) < 0)
            break;
        if (!head_seen)
            sc_note_wait(c, sc_now_us() - sent_us);
        if (h.id != id) {
            rc = -EPROTO;
            break;
        }
        if (h.op == RCP_OP_ERROR) {
            rc = sc_read_error(c, &h, node_err, msg, msglen);
            if (rc == 0)
                return -EREMOTEIO; /* an answer: the framing is intact */
            break;
        }
        if (h.op != RCP_OP_GET) {
            rc = -EPROTO;
            break;
        }
        uint32_t data = h.len;
        if (!head_seen) {
            uint8_t hb[RCP_GET_RESP_HEAD_SIZE];
            rcp_get_resp_head gh;
            if (data < sizeof(hb) || (rc = sc_read_full(c->fd, hb, sizeof(hb))) < 0) {
                rc = rc < 0 ? rc : -EPROTO;
                break;
            }
            if (rcp_parse_get_resp_head(hb, sizeof(hb), &gh) < 0 || gh.length != len) {
                rc = -EPROTO;
                break;
            }
            head_seen = true;
            data -= (uint32_t)sizeof(hb);
        }
        if (data > len - got) {
            rc = -EPROTO;
            break;
        }
        if ((rc = sc_read_full(c->fd, (uint8_t *)buf + got, data)) < 0)
            break;
        got += data;
        if (!(h.flags & RCP_F_MORE)) {
            if (head_seen && got == len)
                return 0;
            rc = -EPROTO;
        }
    }
    c->broken = true;
    return rc < 0 ? rc : -EPROTO;
}

int sc_from_fd(sc_conn **out, int fd, uint32_t max_body, int spin_us)
{
    sc_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->fd = fd;
    c->spin_us = spin_us;
    c->next_id = 1;
    c->max_body = max_body && max_body < RCP_MAX_FRAME_BODY ? max_body : RCP_MAX_FRAME_BODY;
    *out = c;
    return 0;
}

uint64_t sc_spins(const sc_conn *c)
{
    return c->spins;
}

bool sc_usable(const sc_conn *c)
{
    return c && !c->broken;
}

void sc_close(sc_conn **cp)
{
    sc_conn *c = *cp;
    if (!c)
        return;
    close(c->fd);
    free(c);
    *cp = NULL;
}
