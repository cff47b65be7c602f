/* SPDX-License-Identifier: Apache-2.0
 *
 * test_ringcached_store.c: a real ringcached on a damaged data folder. For
 * each kind of damage (the superblock cut short or garbled, the index files
 * garbled, the data file cut short, a restart with another block size than
 * the folder was made with):
 *  - with --strict-store the node refuses to start, saying what is damaged
 *    and that --strict-store is why it stops;
 *  - without it the node starts, counts the quarantine in
 *    ringcached_store_quarantines_total, has set the old files aside into
 *    DIR/quarantine-TIME/ (with a `reason`), and serves every block of the
 *    object with the right bytes, refilled from S3 (one fill per block);
 *  - a restart after that finds a sound folder: no quarantine, and the
 *    blocks are hits.
 * Real S3 (s3rver), real node processes; everything cleaned up by the
 * harness whatever happens.
 */
#include "node_util.h"
#include "s3_test_util.h"

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#define KEY "store/obj.bin"
#define MIB (1u << 20)

static h_env *env;
static h_s3 *s3;
static unsigned char *data;
static size_t size;
static char etag[S3_ETAG_MAX];

static int setup(void **state)
{
    (void)state;
    assert_int_equal(h_env_create(&env, "test_ringcached_store"), 0);
    s3 = t_start_s3(env, 3);
    size = 5 * MIB + 12345;
    data = t_alloc_data(size, 77);
    s3_config cfg;
    t_s3_config(&cfg, h_s3_endpoint(s3), NULL, NULL);
    assert_int_equal(t_put_object(&cfg, H_S3_DEFAULT_BUCKET, KEY, data, size, etag), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    h_env_destroy(&env);
    free(data);
    return 0;
}

/* Reads every block of the object through n (block size bs) and checks it. */
static void read_all(const t_node *n, uint32_t bs)
{
    struct event_base *base = event_base_new();
    cc_conn *c = t_conn(base, n, NULL);
    assert_non_null(c);
    unsigned char *buf = malloc(bs);
    uint64_t nb = (size + bs - 1) / bs;
    for (uint64_t b = 0; b < nb; b++) {
        size_t len = b + 1 < nb ? bs : size - b * bs;
        cc_result r = t_get(base, c, H_S3_DEFAULT_BUCKET, KEY, etag, size, b, buf, bs);
        if (r.code)
            fprintf(stderr, "block %llu: %d %s\n", (unsigned long long)b, r.code, r.message);
        assert_int_equal(r.code, 0);
        assert_int_equal(r.bytes, len);
        assert_memory_equal(buf, data + b * bs, len);
    }
    free(buf);
    cc_conn_destroy(&c);
    event_base_free(base);
}

static int count_quarantine(const char *dir, char *first, size_t cap)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, "quarantine-", 11) == 0 && n++ == 0)
            snprintf(first, cap, "%s/%s", dir, de->d_name);
    closedir(d);
    return n;
}

static void garble_file(const char *path)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    static const char junk[] = "0123456789abcdefghijklmnopqrstuv";
    off_t off = st.st_size > 64 ? st.st_size / 2 : 0;
    assert_int_equal(pwrite(fd, junk, 32, off), 32);
    close(fd);
}

enum damage { D_SB_SHORT, D_SB_GARBLED, D_INDEX, D_DATA_SHORT, D_BLOCK_SIZE, D__COUNT };
static const char *const names[D__COUNT] = {"superblock truncated", "superblock garbled",
                                            "index files garbled", "data file truncated",
                                            "another block size"};

static void damage(const char *dir, enum damage d)
{
    char p[1200];
    switch (d) {
    case D_SB_SHORT:
        snprintf(p, sizeof(p), "%s/superblock", dir);
        assert_int_equal(truncate(p, 10), 0);
        break;
    case D_SB_GARBLED:
        snprintf(p, sizeof(p), "%s/superblock", dir);
        garble_file(p);
        break;
    case D_INDEX: {
        char ix[900];
        snprintf(ix, sizeof(ix), "%s/index", dir);
        DIR *dd = opendir(ix);
        assert_non_null(dd);
        struct dirent *de;
        int n = 0;
        while ((de = readdir(dd)) != NULL) {
            size_t l = strlen(de->d_name);
            if (strncmp(de->d_name, "MANIFEST", 8) == 0 ||
                (l > 4 && strcmp(de->d_name + l - 4, ".sst") == 0)) {
                snprintf(p, sizeof(p), "%s/%s", ix, de->d_name);
                garble_file(p);
                n++;
            }
        }
        closedir(dd);
        assert_true(n > 0);
        break;
    }
    case D_DATA_SHORT:
        snprintf(p, sizeof(p), "%s/data", dir);
        assert_int_equal(truncate(p, 3 * MIB), 0);
        break;
    default: break;
    }
}

/* The log of the node named name from byte `from` on. */
static void log_since(const char *name, long from, char *out, size_t cap)
{
    char p[1200], file[1300];
    snprintf(p, sizeof(p), "%s.log", name);
    h_env_path(env, file, sizeof(file), p);
    out[0] = '\0';
    FILE *f = fopen(file, "r");
    if (!f)
        return;
    fseek(f, from, SEEK_SET);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
}

static long log_size(const char *name)
{
    char p[1200], file[1300];
    snprintf(p, sizeof(p), "%s.log", name);
    h_env_path(env, file, sizeof(file), p);
    struct stat st;
    return stat(file, &st) == 0 ? (long)st.st_size : 0;
}

static void test_each_damage(void **state)
{
    (void)state;
    for (int d = 0; d < D__COUNT; d++) {
        char name[32];
        snprintf(name, sizeof(name), "n%d", d);
        fprintf(stderr, "damage: %s\n", names[d]);
        /* a node with the object's blocks on disk, stopped cleanly */
        t_node n;
        t_node_start(env, &n, name, h_s3_endpoint(s3), NULL);
        read_all(&n, MIB);
        assert_int_equal(t_node_metric(&n, "ringcached_s3_get_requests_total"), 6);
        assert_int_equal(h_proc_stop(n.proc, 15000), 0);
        damage(n.dir, (enum damage)d);
        const char *bsz[] = {"--block-size", "2MiB", NULL};
        const char *const *more = d == D_BLOCK_SIZE ? bsz : NULL;
        uint32_t bs = d == D_BLOCK_SIZE ? 2 * MIB : MIB;

        /* --strict-store: refused, in a sentence, nothing moved */
        const char *strict[4] = {"--strict-store", NULL, NULL, NULL};
        if (more) {
            strict[1] = more[0];
            strict[2] = more[1];
        }
        long from = log_size(name);
        t_node s;
        assert_int_equal(t_node_try_start(env, &s, name, h_s3_endpoint(s3), strict), -ECHILD);
        char log[8192];
        log_since(name, from, log, sizeof(log));
        fprintf(stderr, "  strict: %s", log);
        assert_non_null(strstr(log, n.dir));
        assert_non_null(strstr(log, "--strict-store is set"));
        char q[1200];
        assert_int_equal(count_quarantine(n.dir, q, sizeof(q)), 0);

        /* by default: set aside, started empty, serving, refilled from S3 */
        from = log_size(name);
        t_node_start(env, &n, name, h_s3_endpoint(s3), more);
        assert_int_equal(t_node_metric(&n, "ringcached_store_quarantines_total"), 1);
        assert_int_equal(t_node_metric(&n, "ringcached_blocks_stored"), 0);
        log_since(name, from, log, sizeof(log));
        assert_non_null(strstr(log, "level=warn"));
        assert_non_null(strstr(log, "set aside"));
        assert_int_equal(count_quarantine(n.dir, q, sizeof(q)), 1);
        char reason[1300];
        snprintf(reason, sizeof(reason), "%s/reason", q);
        struct stat st;
        assert_int_equal(stat(reason, &st), 0);
        assert_true(st.st_size > 20);
        read_all(&n, bs);
        uint64_t nb = (size + bs - 1) / bs;
        assert_int_equal(t_node_metric(&n, "ringcached_s3_get_requests_total"), (int64_t)nb);
        assert_int_equal(h_proc_stop(n.proc, 15000), 0);

        /* the new folder is sound: no quarantine, the blocks are hits */
        t_node_start(env, &n, name, h_s3_endpoint(s3), more);
        assert_int_equal(t_node_metric(&n, "ringcached_store_quarantines_total"), 0);
        read_all(&n, bs);
        assert_int_equal(t_node_metric(&n, "ringcached_s3_get_requests_total"), 0);
        assert_int_equal(count_quarantine(n.dir, q, sizeof(q)), 1);
        assert_int_equal(h_proc_stop(n.proc, 15000), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_damage),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
