/* SPDX-License-Identifier: Apache-2.0
 *
 * rs_source.c: the generic part of the byte-range source (rangesrc.h): the
 * wrapper every implementation sits behind, range checks before any I/O, and
 * counters. Also the local-file implementation, which is a few lines of pread.
 */
#include "rangesrc.h"
#include "errf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct rs_source {
    rs_ops ops;
    void *impl;
    char *name;
    char *version;
    uint64_t size;
    atomic_uint_fast64_t calls, ranges, bytes;
};

int rs_source_create(rs_source **out, const rs_ops *ops, void *impl, const char *name,
                     uint64_t size, const char *version)
{
    *out = NULL;
    if (!ops || !ops->read_ranges || !name) {
        if (ops && ops->destroy)
            ops->destroy(impl);
        return -EINVAL;
    }
    rs_source *s = calloc(1, sizeof(*s));
    if (s) {
        s->name = strdup(name);
        s->version = strdup(version ? version : "");
    }
    if (!s || !s->name || !s->version) {
        if (s) {
            free(s->name);
            free(s->version);
            free(s);
        }
        if (ops->destroy)
            ops->destroy(impl);
        return -ENOMEM;
    }
    s->ops = *ops;
    s->impl = impl;
    s->size = size;
    *out = s;
    return 0;
}

void rs_destroy(rs_source **s)
{
    if (!s || !*s)
        return;
    if ((*s)->ops.destroy)
        (*s)->ops.destroy((*s)->impl);
    free((*s)->name);
    free((*s)->version);
    free(*s);
    *s = NULL;
}

const char *rs_name(const rs_source *s)
{
    return s->name;
}
uint64_t rs_size(const rs_source *s)
{
    return s->size;
}
const char *rs_version(const rs_source *s)
{
    return s->version;
}

void rs_stats_get(const rs_source *s, rs_stats *out)
{
    out->calls = atomic_load_explicit(&s->calls, memory_order_relaxed);
    out->ranges = atomic_load_explicit(&s->ranges, memory_order_relaxed);
    out->bytes = atomic_load_explicit(&s->bytes, memory_order_relaxed);
}

int rs_read_ranges(rs_source *s, const rs_range *ranges, size_t n, char *err, size_t errlen)
{
    char scratch[RS_MSG_MAX];
    if (!err || !errlen) {
        err = scratch;
        errlen = sizeof(scratch);
    }
    err[0] = '\0';
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const rs_range *r = &ranges[i];
        if (r->offset > s->size || r->length > s->size - r->offset) {
            errf_set(err, errlen,
                     "%s: range of %" PRIu64 " bytes at offset %" PRIu64
                     " runs past the end of the object (%" PRIu64 " bytes)",
                     s->name, r->length, r->offset, s->size);
            return -ERANGE;
        }
        total += r->length;
    }
    if (n == 0)
        return 0;
    atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->ranges, n, memory_order_relaxed);
    int rc = s->ops.read_ranges(s->impl, ranges, n, err, errlen);
    if (rc < 0 && !err[0])
        errf_set(err, errlen, "%s: read failed: %s", s->name, strerror(-rc));
    if (rc >= 0)
        atomic_fetch_add_explicit(&s->bytes, total, memory_order_relaxed);
    return rc < 0 ? rc : 0;
}

int rs_read(rs_source *s, uint64_t offset, void *buf, uint64_t length, char *err, size_t errlen)
{
    rs_range r = {.offset = offset, .length = length, .buf = buf};
    return rs_read_ranges(s, &r, 1, err, errlen);
}

/* ---- local files --------------------------------------------------------- */

typedef struct rs__file {
    int fd;
    char *path;
} rs__file;

static int rs__file_read(void *impl, const rs_range *ranges, size_t n, char *err, size_t errlen)
{
    rs__file *f = impl;
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = ranges[i].buf;
        uint64_t off = ranges[i].offset, left = ranges[i].length;
        while (left > 0) {
            size_t chunk = left > (1u << 30) ? (1u << 30) : (size_t)left;
            ssize_t got = pread(f->fd, p, chunk, (off_t)off);
            if (got < 0) {
                if (errno == EINTR)
                    continue;
                int e = errno;
                errf_set(err, errlen, "%s: cannot read %" PRIu64 " bytes at offset %" PRIu64 ": %s",
                         f->path, ranges[i].length, ranges[i].offset, strerror(e));
                return -e;
            }
            if (got == 0) {
                /* The file shrank since open: the version we pinned is gone. */
                errf_set(err, errlen,
                         "%s: the file ended at offset %" PRIu64
                         " while reading it (it changed since it was opened; open it again)",
                         f->path, off);
                return -ESTALE;
            }
            p += got;
            off += (uint64_t)got;
            left -= (uint64_t)got;
        }
    }
    return 0;
}

static void rs__file_destroy(void *impl)
{
    rs__file *f = impl;
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    free(f->path);
    free(f);
}

int rs_file_open(rs_source **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        errf_set(err, errlen, "cannot open %s: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        errf_set(err, errlen, "cannot stat %s: %s", path, strerror(e));
        return -e;
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        errf_set(err, errlen, "cannot read %s: it is a folder, not a file", path);
        return -EISDIR;
    }
    rs__file *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path))) {
        free(f);
        close(fd);
        return -ENOMEM;
    }
    f->fd = fd;
    char version[64];
    snprintf(version, sizeof(version), "%" PRId64 "-%" PRId64,
             (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, (int64_t)st.st_size);
    static const rs_ops ops = {.read_ranges = rs__file_read, .destroy = rs__file_destroy};
    int rc = rs_source_create(out, &ops, f, path, (uint64_t)st.st_size, version);
    if (rc < 0)
        errf_set(err, errlen, "cannot open %s: %s", path, strerror(-rc));
    return rc;
}
