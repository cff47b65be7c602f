/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_syncconn.c: plays a cache node that answers a GET with arbitrary
 * bytes. The first two input bytes choose how many bytes the GET asks for
 * (so answers that fit, fall short and overflow are all tried); the rest is
 * what the node sends, then it hangs up. sc_get must either fill exactly the
 * bytes asked for and say 0, or fail: never write past the buffer (ASan
 * watches a buffer of exactly that size), never hang (the other end is
 * closed), never report success for a short answer.
 */
#include "syncconn.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 60000)
        return 0;
    uint32_t want = (uint32_t)data[0] | (uint32_t)data[1] << 8;
    data += 2;
    size -= 2;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 0;
    int sz = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    size_t off = 0;
    while (off < size) {
        ssize_t k = write(sv[1], data + off, size - off);
        if (k <= 0)
            break;
        off += (size_t)k;
    }
    shutdown(sv[1], SHUT_WR);
    sc_conn *c;
    if (sc_from_fd(&c, sv[0], 1u << 16, 0) < 0) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    uint8_t *buf = malloc(want ? want : 1);
    rcp_get_req g = {.obj = {rcp_s("bucket"), rcp_s("key"), rcp_s("etag"), 1u << 20},
                     .block = 0,
                     .offset = 0,
                     .length = want,
                     .flags = 0};
    int node_err = 0;
    char msg[256];
    int rc = sc_get(c, &g, buf, want, &node_err, msg, sizeof(msg));
    if (rc == 0 && !sc_usable(c))
        abort();
    free(buf);
    sc_close(&c);
    close(sv[1]);
    return 0;
}
