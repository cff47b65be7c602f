/* SPDX-License-Identifier: Apache-2.0
 *
 * src_file.c: the file() table function: file('path/glob' [, 'Format' [,
 * 'structure' [, 'compression']]]) over local files. The glob (s3_glob_create's grammar) is walked from the folder
 * of its literal prefix, following sub-folders up to 32 deep; a path without
 * wildcards names one file. The files are scanned by src_files.c.
 */
#include "src_int.h"

#include "s3.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int walk(const char *dir, const s3_glob *g, int depth, flist *l)
{
    if (depth > 32)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char p[4096];
        int k = strcmp(dir, ".") == 0 && !s3_glob_prefix(g)[0]
                    ? snprintf(p, sizeof(p), "%s", de->d_name)
                    : snprintf(p, sizeof(p), "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
                               de->d_name);
        if (k < 0 || (size_t)k >= sizeof(p))
            continue;
        struct stat st;
        if (stat(p, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            rc = walk(p, g, depth + 1, l);
            if (rc == -EACCES)
                rc = 0;
        } else if (S_ISREG(st.st_mode) && s3_glob_match(g, p)) {
            if ((rc = src__flist_add(l, p, (uint64_t)st.st_size)) == 0)
                l->f[l->n - 1].mtime = (int64_t)st.st_mtime;
        }
    }
    closedir(d);
    return rc;
}

static int list_local(const char *pattern, flist *l, char *err, size_t errlen)
{
    s3_glob *g;
    if (s3_glob_create(&g, pattern) < 0) {
        snprintf(err, errlen, "bad glob '%s' in file(): check braces and ranges ({a,b}, {1..9})",
                 pattern);
        return -EINVAL;
    }
    int rc = 0;
    if (!s3_glob_has_wildcards(g)) {
        struct stat st;
        if (stat(pattern, &st) < 0) {
            rc = -errno;
            snprintf(err, errlen, "cannot open %s: %s (check the path in file())", pattern,
                     strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = -EISDIR;
            snprintf(err, errlen, "%s is a folder: add a glob such as '%s/*.parquet'", pattern,
                     pattern);
        } else if ((rc = src__flist_add(l, pattern, (uint64_t)st.st_size)) == 0) {
            l->f[l->n - 1].mtime = (int64_t)st.st_mtime;
        }
        s3_glob_destroy(&g);
        return rc;
    }
    /* walk from the folder of the literal prefix */
    const char *pre = s3_glob_prefix(g);
    char dir[4096];
    const char *slash = strrchr(pre, '/');
    if (slash)
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - pre == 0 ? 1 : slash - pre), pre);
    else
        snprintf(dir, sizeof(dir), ".");
    rc = walk(dir, g, 0, l);
    s3_glob_destroy(&g);
    if (rc < 0 && rc != -ENOENT) {
        snprintf(err, errlen, "cannot list %s for file('%s'): %s", dir, pattern, strerror(-rc));
        return rc;
    }
    if (l->n == 0) {
        snprintf(err, errlen, "no files match '%s' (check the path and the glob)", pattern);
        return -ENOENT;
    }
    return 0;
}

int src__file_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                   size_t errlen)
{
    const char *path, *fmtarg;
    int rc = src__path_args(c, 4, "data/*.parquet", &path, &fmtarg, err, errlen);
    src_fargs a;
    if (rc < 0 || (rc = src__tail_args(c, 1, &a, err, errlen)) < 0)
        return rc;
    flist fl = {0};
    rc = list_local(path, &fl, err, errlen);
    if (rc < 0) {
        src__flist_free(&fl);
        return rc;
    }
    return src__files_open_args(out, env, c, path, &fl, false, "", &a, err, errlen);
}
