/* SPDX-License-Identifier: Apache-2.0
 *
 * src_int.h: internals shared by the file-reading table functions (s3() in
 * src_s3.c, file() in src_file.c) and the scan of a list of files they both
 * hand over to (src_files.c).
 *
 * Thread-safety: an efile's source, footer, generation and consumed flag
 * change under its mutex (a re-plan, on a worker); the rest is set before
 * the workers start.
 */
#ifndef RINGCACHE_SRC_INT_H
#define RINGCACHE_SRC_INT_H

#include "eng_source.h"
#include "parquet.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct efile {
    char *path; /* local path or key */
    uint64_t size;
    int64_t mtime; /* seconds since the epoch, -1 when unknown (_time) */
    pthread_mutex_t mu;
    rs_source *src;
    pq_file *pf;
    int gen;       /* reopen count (0 or 1: a file is re-planned once) */
    bool consumed; /* rows of it went into the workers' tables */
    rs_source *old_src[2];
    pq_file *old_pf[2];
    int *colmap;  /* scan slot -> file column */
    int rg_first; /* Parquet: first unit of this file */
    int n_rg;     /* Parquet: its units (row groups not pruned) */
} efile;

/* _path, _file, _size, _time */
#define SRC_N_VIRT 4

/* The files a glob matched, as they are listed. */
typedef struct flist {
    efile *f;
    int n, cap;
} flist;

int src__flist_add(flist *l, const char *path, uint64_t size);
void src__flist_free(flist *l);

/* Whether a distributed query's unit k names the file of an earlier unit
 * (row-group ranges of one file): the file is listed once. */
static inline bool src__unit_seen(const eng_scan_env *env, int k)
{
    for (int j = 0; j < k; j++)
        if (strcmp(env->unit[j].path, env->unit[k].path) == 0)
            return true;
    return false;
}

/* The arguments of a table function that reads files: a path (a string
 * literal, then up to max_args - 1 more, the last a string: the format).
 * *fmtarg is NULL without one. 0 or -EINVAL with a sentence naming the call's
 * place and showing `example` as the path. */
int src__path_args(const eng_tf_call *c, int max_args, const char *example, const char **path,
                   const char **fmtarg, char *err, size_t errlen);

/* The scan of the files in l (taken: l is emptied, also on failure), keys of
 * bucket when s3, else local paths: sorted by name, read in the format fmtarg
 * names (NULL: by the first file's extension), the schema taken from the
 * first file. c and path name the call in errors. 0 or -errno with a
 * sentence in err. */
int src__files_open(eng_source **out, const eng_scan_env *env, const eng_tf_call *c,
                    const char *path, flist *l, bool s3, const char *bucket, const char *fmtarg,
                    char *err, size_t errlen);

/* An S3 URL as users paste it (src_s3url.c). */
enum { SRC_URL_S3 = 1, SRC_URL_AWS, SRC_URL_ENDPOINT };
typedef struct src_s3_url {
    int kind; /* SRC_URL_* */
    char bucket[64];
    char key[1100];     /* the key or glob, percent-decoded for http(s) URLs */
    char region[64];    /* SRC_URL_AWS: the host's region ("": the global endpoint) */
    char endpoint[256]; /* SRC_URL_ENDPOINT: scheme://host[:port] */
} src_s3_url;
/* s3://bucket/key, AWS's virtual-hosted and path-style https URLs, and
 * http(s)://host[:port]/bucket/key. 0, or -EINVAL with a sentence in why. */
int src__s3_url_parse(const char *url, src_s3_url *u, char *why, size_t whylen);

/* What file() and s3() take after the path (and s3()'s credentials), as
 * ClickHouse orders it: [format [, structure [, compression]]] (src_args.c);
 * NULL when absent or 'auto'. */
typedef struct src_fargs {
    const char *format, *structure, *compression;
} src_fargs;
/* Reads args[first..] of c. 0, or -EINVAL with a sentence naming the place. */
int src__tail_args(const eng_tf_call *c, int first, src_fargs *out, char *err, size_t errlen);
/* "name Type, name Type" into *out (out->given set). 0, -EINVAL or -ENOMEM
 * with a sentence. */
int src__structure_parse(const char *text, eng_schema *out, char *err, size_t errlen);
/* src__files_open with the format, structure and compression of a. The
 * structure is the schema of text files (by position in plain CSV/TSV, by
 * name with a header and in JSONEachRow); of Parquet files, the columns read,
 * each of which must be in the files with that type. */
int src__files_open_args(eng_source **out, const eng_scan_env *env, const eng_tf_call *c,
                         const char *path, flist *l, bool s3, const char *bucket,
                         const src_fargs *a, char *err, size_t errlen);

/* Hands a source of src__files_open(_args) the S3 access its env names (made for
 * its own credentials), to be freed with it. */
void src__files_adopt(eng_source *s, const eng_s3_access *a);

/* Hands a decoded batch to a unit's callback as scan vectors: its
 * buffers (cb_batch_mem) charged to the query while the callback runs, the
 * rows and bytes counted.
 * 0, the callback's error, or -ENOMEM (the tracker's sentence in err). */
int src__scan_batch(const eng_scan_env *env, const cb_batch *bt, eng_scan_fn fn, void *arg,
                    char *err, size_t errlen);

/* The registry's entries (eng_source.c): s3(), file(), numbers(), zeros(),
 * s3Cluster(). */
int src__s3_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                 size_t errlen);
int src__file_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                   size_t errlen);
int src__numbers_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                      size_t errlen);
int src__zeros_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                    size_t errlen);
int src__s3cluster_open(const eng_tf_call *c, const eng_scan_env *env, eng_source **out, char *err,
                        size_t errlen);

#endif /* RINGCACHE_SRC_INT_H */
