/* SPDX-License-Identifier: Apache-2.0
 *
 * bs_super.c: the data folder. Checks it (exists, writable, O_DIRECT with the
 * alignment statx(STATX_DIOALIGN) reports, room for the capacity), creates or
 * verifies the superblock, and opens the data file. Every refusal is a
 * sentence naming the folder and the fix.
 *
 * FOLDER
 *   <dir>/superblock   4 KiB, below; written last at creation (temp file,
 *                      fsync, rename, fsync of the folder), so a folder without
 *                      one is a creation that did not finish and starts over
 *   <dir>/data         nregions * region_size bytes, preallocated, O_DIRECT
 *   <dir>/index/       RocksDB (bs_index.c)
 *   <dir>/lock         flock'ed while a store has the folder open
 *   <dir>/quarantine-<UTC time>/  a damaged store set aside (bs_open): its
 *                      superblock, its index and a file `reason`
 *
 * SUPERBLOCK (little-endian)
 *
 *   0                8          12         16         20         24       28
 *   +----------------+----------+----------+----------+----------+--------+
 *   | "RCBSTORE"     | format   | block    | region   | regions  | DIO    |
 *   |                | version  | size     | size     | count    | align  |
 *   +----------------+----------+----------+----------+----------+--------+
 *   28   32                    48              56                    4088   4096
 *   +----+---------------------+---------------+ - - - zero - - - - +------+
 *   | 0  | store id (16 bytes) | created, unix |                    |XXH64 |
 *   |    | random              | seconds u64   |                    |[0,   |
 *   +----+---------------------+---------------+ - - - - - - - - - -+4088) +
 *
 * DATA FILE: region r covers [r * region_size, (r + 1) * region_size). Blocks
 * are appended at BS_ALIGN boundaries; a short block is zero-padded to the
 * alignment on disk and keeps its logical length in the index:
 *
 *   region r: | block a (1 MiB) | block b (1 MiB) | c (300 KiB)|pad| ... |free|
 *             ^ r*region_size                                      ^ used
 * No header: every fact about a block is in its index entry, and the
 * per-chunk checksums seeded by its identity reject stale bytes.
 */
#include "blockstore_int.h"
#include "errf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define SB_SIZE  4096u
#define SB_MAGIC "RCBSTORE"

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

void bs__data_path(const bs_store *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s/data", s->dir);
}

/* Probes writability and O_DIRECT with a scratch file; fills dio_align. */
static int probe_folder(bs_store *s, char *err, size_t errlen)
{
    struct stat st;
    if (stat(s->dir, &st) != 0) {
        int e = errno;
        errf_set(
            err, errlen,
            "cannot use data folder %s: %s (create it, or set the data folder to an existing one)",
            s->dir, strerror(e));
        return -e;
    }
    if (!S_ISDIR(st.st_mode)) {
        errf_set(err, errlen,
                 "data folder %s is not a folder (point the data folder at a directory)", s->dir);
        return -ENOTDIR;
    }
    char p[4200];
    snprintf(p, sizeof(p), "%s/.probe", s->dir);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        errf_set(
            err, errlen,
            "data folder %s is not writable: %s (give this user write access, or choose a writable folder)",
            s->dir, strerror(e));
        return -e;
    }
    close(fd);
    fd = open(p, O_RDWR | O_DIRECT | O_CLOEXEC);
    int e = fd < 0 ? errno : 0;
    struct statx sx;
    memset(&sx, 0, sizeof(sx));
    if (fd >= 0 && statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) != 0)
        e = errno;
    if (fd >= 0)
        close(fd);
    unlink(p);
    if (e == EINVAL || (e == 0 && (!(sx.stx_mask & STATX_DIOALIGN) || sx.stx_dio_mem_align == 0 ||
                                   sx.stx_dio_offset_align == 0))) {
        errf_set(
            err, errlen,
            "the filesystem of data folder %s does not support O_DIRECT (it reports no direct-I/O alignment; use a folder on a local disk with ext4 or xfs)",
            s->dir);
        return -EOPNOTSUPP;
    }
    if (e) {
        errf_set(err, errlen, "cannot open a file with O_DIRECT in data folder %s: %s", s->dir,
                 strerror(e));
        return -e;
    }
    uint32_t a = sx.stx_dio_mem_align > sx.stx_dio_offset_align ? sx.stx_dio_mem_align
                                                                : sx.stx_dio_offset_align;
    if (a > BS_ALIGN) {
        errf_set(
            err, errlen,
            "data folder %s needs O_DIRECT alignment of %u bytes, above the store's %u (use another disk)",
            s->dir, a, BS_ALIGN);
        return -EOPNOTSUPP;
    }
    s->dio_align = a;
    return 0;
}

static int write_superblock(bs_store *s, char *err, size_t errlen)
{
    uint8_t sb[SB_SIZE];
    memset(sb, 0, sizeof(sb));
    memcpy(sb, SB_MAGIC, 8);
    le32(sb + 8, BS_FORMAT_VERSION);
    le32(sb + 12, s->block_size);
    le32(sb + 16, s->region_size);
    le32(sb + 20, s->nregions);
    le32(sb + 24, s->dio_align);
    if (getrandom(s->store_id, sizeof(s->store_id), 0) != (ssize_t)sizeof(s->store_id)) {
        uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
        memcpy(s->store_id, &t, 8);
        memcpy(s->store_id + 8, &t, 8);
    }
    memcpy(sb + 32, s->store_id, 16);
    le64(sb + 48, (uint64_t)time(NULL));
    le64(sb + SB_SIZE - 8, XXH64(sb, SB_SIZE - 8, 0));

    char tmp[4200], path[4200];
    snprintf(tmp, sizeof(tmp), "%s/superblock.tmp", s->dir);
    snprintf(path, sizeof(path), "%s/superblock", s->dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = 0;
    if (fd < 0 || write(fd, sb, sizeof(sb)) != (ssize_t)sizeof(sb) || fsync(fd) != 0)
        rc = -errno;
    if (fd >= 0)
        close(fd);
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc == 0) {
        int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    if (rc < 0)
        errf_set(err, errlen, "cannot write the superblock in %s: %s", s->dir, strerror(-rc));
    return rc;
}

/* 1: verified, 0: absent, < 0: refused. */
static int read_superblock(bs_store *s, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/superblock", s->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        int e = errno;
        errf_set(err, errlen, "cannot read %s: %s", path, strerror(e));
        return -e;
    }
    uint8_t sb[SB_SIZE];
    ssize_t n = read(fd, sb, sizeof(sb));
    close(fd);
    if (n != (ssize_t)sizeof(sb) || memcmp(sb, SB_MAGIC, 8) != 0 ||
        rd64(sb + SB_SIZE - 8) != XXH64(sb, SB_SIZE - 8, 0)) {
        errf_set(
            err, errlen,
            "%s is not a ringcache block store superblock or is damaged (point the data folder elsewhere, or empty this folder to start over)",
            path);
        return -EMEDIUMTYPE;
    }
    uint32_t ver = rd32(sb + 8), bsz = rd32(sb + 12), rsz = rd32(sb + 16), nr = rd32(sb + 20);
    if (ver != BS_FORMAT_VERSION) {
        errf_set(
            err, errlen,
            "data folder %s holds store format %u, this build reads format %u (empty the folder to start over)",
            s->dir, ver, BS_FORMAT_VERSION);
        return -EMEDIUMTYPE;
    }
    if (bsz != s->block_size) {
        errf_set(
            err, errlen,
            "data folder %s was created with block size %u, not %u (use block size %u, or empty the folder to start over)",
            s->dir, bsz, s->block_size, bsz);
        return -EMEDIUMTYPE;
    }
    if (rsz != s->region_size || nr != s->nregions) {
        errf_set(
            err, errlen,
            "data folder %s was created with %u regions of %u bytes, not %u of %u (keep the capacity and region size, or empty the folder to start over)",
            s->dir, nr, rsz, s->nregions, s->region_size);
        return -EMEDIUMTYPE;
    }
    memcpy(s->store_id, sb + 32, 16);
    return 1;
}

/* One store per folder: two would overwrite each other's regions, and a
 * second one's quarantine would pull the files from under the first. */
int bs__lock_folder(const char *dir, int *fd_out, char *err, size_t errlen)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/lock", dir);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        errf_set(err, errlen, "cannot create the lock file %s: %s", p, strerror(e));
        return -e;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK) {
            errf_set(
                err, errlen,
                "data folder %s is in use by another process (stop it, or give this one another data folder)",
                dir);
            return -EBUSY;
        }
        errf_set(err, errlen, "cannot lock data folder %s: %s", dir, strerror(e));
        return -e;
    }
    *fd_out = fd;
    return 0;
}

int bs__super_setup(bs_store *s, char *err, size_t errlen)
{
    int rc = probe_folder(s, err, errlen);
    if (rc == 0 && s->lock_fd < 0)
        rc = bs__lock_folder(s->dir, &s->lock_fd, err, errlen);
    if (rc < 0)
        return rc;
    rc = read_superblock(s, err, errlen);
    if (rc < 0)
        return rc;
    bool fresh = rc == 0;
    uint64_t size = (uint64_t)s->nregions * s->region_size;
    char path[4200];
    bs__data_path(s, path, sizeof(path));

    if (fresh) {
        /* A creation that did not finish: start it over. */
        char ixp[4200];
        snprintf(ixp, sizeof(ixp), "%s/index", s->dir);
        if (bs__index_destroy(ixp) < 0) {
            errf_set(err, errlen, "cannot clear the unfinished index in %s (remove it by hand)",
                     s->dir);
            return -EIO;
        }
        struct stat st;
        uint64_t have = stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
        struct statvfs vfs;
        if (!s->cfg.sparse && statvfs(s->dir, &vfs) == 0 &&
            (uint64_t)vfs.f_bavail * vfs.f_frsize + have < size) {
            errf_set(
                err, errlen,
                "data folder %s has %llu MiB free, less than the %llu MiB asked for (lower the SSD capacity or free space)",
                s->dir, (unsigned long long)(((uint64_t)vfs.f_bavail * vfs.f_frsize + have) >> 20),
                (unsigned long long)(size >> 20));
            return -ENOSPC;
        }
    }

    int fd = open(path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        errf_set(err, errlen, "cannot open the data file %s: %s", path, strerror(e));
        return -e;
    }
    if (fresh) {
        if (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)size) != 0)
            rc = -errno;
        if (rc == 0 && !s->cfg.sparse && fallocate(fd, 0, 0, (off_t)size) != 0)
            rc = -errno;
        if (rc == 0 && fsync(fd) != 0)
            rc = -errno;
        if (rc < 0) {
            errf_set(
                err, errlen,
                "cannot preallocate %llu MiB for %s: %s (free space, or lower the SSD capacity)",
                (unsigned long long)(size >> 20), path, strerror(-rc));
            close(fd);
            return rc == -EOPNOTSUPP ? -EOPNOTSUPP : -ENOSPC;
        }
        rc = write_superblock(s, err, errlen);
        if (rc < 0) {
            close(fd);
            return rc;
        }
    } else {
        struct stat st;
        if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != size) {
            errf_set(
                err, errlen,
                "data file %s has the wrong size for its superblock (empty the folder to start over)",
                path);
            close(fd);
            return -EMEDIUMTYPE;
        }
    }
    s->data_fd = fd;
    return 0;
}

/* ---- quarantine ------------------------------------------------------------ */

/* Removes path and everything under it (a quarantine folder). */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            char p[4200];
            snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Keeps the newest `keep` quarantine folders of dir (their names sort by
 * time), removing the others. */
static void prune_quarantine(const char *dir, unsigned keep)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < sizeof(names) / sizeof(names[0]))
        if (strncmp(de->d_name, "quarantine-", 11) == 0 && (names[n] = strdup(de->d_name)))
            n++;
    closedir(d);
    qsort(names, n, sizeof(names[0]), name_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i + keep < n) {
            char p[4200];
            snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
            remove_tree(p);
        }
        free(names[i]);
    }
}

int bs__quarantine(const char *dir, const char *reason, char *qdir, size_t qlen, char *err,
                   size_t errlen)
{
    char q[4200];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
    int rc = -EEXIST;
    for (int i = 0; i < 100 && rc == -EEXIST; i++) {
        if (i == 0)
            snprintf(q, sizeof(q), "%s/quarantine-%s", dir, stamp);
        else
            snprintf(q, sizeof(q), "%s/quarantine-%s-%02d", dir, stamp, i);
        rc = mkdir(q, 0755) == 0 ? 0 : -errno;
    }
    if (rc < 0) {
        errf_set(err, errlen,
                 "cannot make a quarantine folder in %s: %s (empty the folder by hand)", dir,
                 strerror(-rc));
        return rc;
    }
    static const char *const kept[] = {"superblock", "superblock.tmp", "index"};
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        char from[4200], to[4300];
        snprintf(from, sizeof(from), "%s/%s", dir, kept[i]);
        snprintf(to, sizeof(to), "%s/%s", q, kept[i]);
        if (rename(from, to) != 0 && errno != ENOENT) {
            int e = errno;
            errf_set(err, errlen, "cannot move %s into %s: %s (empty the folder by hand)", from, q,
                     strerror(e));
            return -e;
        }
    }
    char p[4300];
    snprintf(p, sizeof(p), "%s/data", dir);
    if (unlink(p) != 0 && errno != ENOENT) {
        int e = errno;
        errf_set(err, errlen,
                 "cannot remove the damaged data file %s: %s (empty the folder by hand)", p,
                 strerror(e));
        return -e;
    }
    snprintf(p, sizeof(p), "%s/reason", q);
    FILE *f = fopen(p, "w");
    if (f) {
        fprintf(f, "%s\n", reason);
        fclose(f);
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    prune_quarantine(dir, BS_QUARANTINE_KEEP);
    snprintf(qdir, qlen, "%s", q);
    return 0;
}
