/* SPDX-License-Identifier: Apache-2.0
 *
 * readfile.c: a whole small file into one buffer (readfile.h).
 */
#include "readfile.h"
#include "errf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int readfile_all(const char *path, size_t max, const char *what, const char *fix, char **out,
                 size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        errf_set(err, errlen, "cannot open %s %s: %s (%s)", what, path, strerror(e), fix);
        return -e;
    }
    /* One buffer of max + 1 bytes (untouched pages cost nothing): a file
     * longer than max is seen as such, and no copy of the bytes is left
     * behind in memory freed by a realloc. */
    char *buf = malloc(max + 1);
    if (buf == NULL) {
        fclose(f);
        errf_set(err, errlen, "out of memory reading %s %s", what, path);
        return -ENOMEM;
    }
    size_t n = fread(buf, 1, max + 1, f);
    int rc = ferror(f) ? (errno ? -errno : -EIO) : 0;
    fclose(f);
    if (rc == 0 && n > max)
        rc = -EFBIG;
    if (rc == -EFBIG)
        errf_set(err, errlen, "%s %s is larger than %zu bytes; is it the right file?", what, path,
                 max);
    else if (rc != 0)
        errf_set(err, errlen, "cannot read %s %s: %s (%s)", what, path, strerror(-rc), fix);
    if (rc != 0) {
        memset(buf, 0, n);
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}
