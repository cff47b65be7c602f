/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_support.c: helpers shared by the block store tests and benchmark (see
 * bs_support.h).
 */
#include "bs_support.h"

#include <errno.h>
#include <event2/event.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bs_io_mode bst_mode = BS_IO_THREADS;
unsigned bst_sync_callbacks;
static bool in_call;

bs_io_mode bst_io_mode(int *argc, char **argv)
{
    bs_io_mode m = BS_IO_THREADS;
    int j = 1;
    for (int i = 1; i < *argc; i++) {
        if (strncmp(argv[i], "--io=", 5) == 0) {
            if (strcmp(argv[i] + 5, "uring") == 0)
                m = BS_IO_URING;
            else if (strcmp(argv[i] + 5, "threads") == 0)
                m = BS_IO_THREADS;
            else {
                fprintf(stderr, "unknown %s (use --io=threads or --io=uring)\n", argv[i]);
                exit(2);
            }
            continue;
        }
        argv[j++] = argv[i];
    }
    *argc = j;
    argv[j] = NULL;
    const char *env = getenv("RINGCACHE_BS_IO");
    if (env && strcmp(env, "uring") == 0)
        m = BS_IO_URING;
    if (m == BS_IO_URING) {
        struct io_uring r;
        int rc = io_uring_queue_init(8, &r, 0);
        if (rc < 0) {
            fprintf(stderr, "SKIP: io_uring cannot be set up here (%s)\n", strerror(-rc));
            exit(77);
        }
        io_uring_queue_exit(&r);
    }
    bst_mode = m;
    return m;
}

void bst_mkdir(char *out, size_t len, const char *name)
{
    const char *base = getenv("RINGCACHE_TEST_TMP");
    snprintf(out, len, "%s/%s.XXXXXX", base && *base ? base : "/tmp", name);
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        abort();
    }
}

void bst_rmdir(const char *dir)
{
    if (getenv("RINGCACHE_TEST_KEEP"))
        return;
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

void bst_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (level <= BS_LOG_WARN || getenv("BST_VERBOSE"))
        fprintf(stderr, "bs: level=%d %s\n", level, msg);
}

bs_config bst_config(const char *dir, unsigned nregions)
{
    bs_config c;
    memset(&c, 0, sizeof(c));
    c.dir = dir;
    c.block_size = 64 * 1024;
    c.region_size = 256 * 1024;
    c.ssd_bytes = (uint64_t)nregions * c.region_size;
    c.io_mode = bst_mode;
    c.io_threads = 2;
    c.no_sync = true;
    c.log = bst_log;
    return c;
}

void bst_id_init(bst_id *b, const char *bucket, unsigned object, const char *version,
                 uint64_t object_size, uint64_t index)
{
    snprintf(b->key, sizeof(b->key), "obj/%u", object);
    snprintf(b->version, sizeof(b->version), "%s", version);
    bkey_id_init(&b->id, "t", bucket, b->key, b->version, object_size, index);
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint8_t byte_at(uint64_t seed, uint64_t pos)
{
    return (uint8_t)(mix(seed + (pos >> 3)) >> (8 * (pos & 7)));
}

void bst_fill(const bkey_id *id, uint64_t off, uint8_t *buf, size_t len)
{
    uint64_t seed = bkey_seed(bkey_of(id));
    for (size_t i = 0; i < len; i++)
        buf[i] = byte_at(seed, off + i);
}

bool bst_check(const bkey_id *id, uint64_t off, const uint8_t *buf, size_t len)
{
    uint64_t seed = bkey_seed(bkey_of(id));
    for (size_t i = 0; i < len; i++)
        if (buf[i] != byte_at(seed, off + i))
            return false;
    return true;
}

struct wait {
    bool done;
    int rc;
    uint8_t *out;
    size_t len;
};

static void on_write(void *arg, int rc)
{
    struct wait *wt = arg;
    if (in_call)
        bst_sync_callbacks++;
    wt->rc = rc;
    wt->done = true;
}

static void on_read(void *arg, int rc, bs_buf *buf)
{
    struct wait *wt = arg;
    if (in_call)
        bst_sync_callbacks++;
    wt->rc = rc;
    if (rc >= 0) {
        if (wt->out)
            memcpy(wt->out, bs_buf_data(buf), bs_buf_len(buf));
        wt->len = bs_buf_len(buf);
        if (wt->len != (size_t)rc)
            wt->rc = -EPROTO;
        bs_buf_unref(&buf);
    }
    wt->done = true;
}

int bst_write(bs_worker *w, struct event_base *base, const bkey_id *id, const void *data,
              size_t len)
{
    struct wait wt = {0};
    in_call = true;
    int rc = bs_write(w, id, data, len, on_write, &wt);
    in_call = false;
    if (rc < 0)
        return rc;
    while (!wt.done)
        event_base_loop(base, EVLOOP_ONCE);
    return wt.rc;
}

int bst_write_block(bs_worker *w, struct event_base *base, const bkey_id *id, uint32_t bsize)
{
    size_t len = bkey_block_len(id->object_size, bsize, id->index);
    uint8_t *buf = malloc(len ? len : 1);
    bst_fill(id, 0, buf, len);
    int rc = bst_write(w, base, id, buf, len);
    free(buf);
    return rc;
}

int bst_read(bs_worker *w, struct event_base *base, const bkey_id *id, uint64_t off, uint64_t len,
             uint8_t *out)
{
    struct wait wt = {.out = out};
    in_call = true;
    int rc = bs_read(w, id, off, len, on_read, &wt);
    in_call = false;
    if (rc < 0)
        return rc;
    while (!wt.done)
        event_base_loop(base, EVLOOP_ONCE);
    return wt.rc;
}
