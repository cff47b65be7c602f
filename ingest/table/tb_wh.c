/* SPDX-License-Identifier: Apache-2.0
 *
 * tb_wh.c: the warehouse (warehouse.h): names, roots, listing and dropping
 * tables under an S3 prefix, with a blocking S3 client made per call.
 */
#include "errf.h"
#include "warehouse.h"

#include "tb_int.h"
#include "tp_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG0 "_log/00000000000000000000.json"

int tb_wh_init(tb_wh *w, const char *url, const s3_config *cfg, char *err, size_t errlen)
{
    memset(w, 0, sizeof(*w));
    w->s3 = *cfg;
    char key[1100];
    if (!url || s3_url_parse(url, w->bucket, sizeof(w->bucket), key, sizeof(key)) < 0) {
        char why[256] = "";
        if (url)
            s3_url_explain(url, why, sizeof(why));
        return errf_fail(err, errlen, -EINVAL,
                         "bad warehouse '%s'%s%s: write s3://bucket/prefix/ (--warehouse or "
                         "RINGCACHE_WAREHOUSE)",
                         url ? url : "", why[0] ? ": " : "", why);
    }
    size_t n = strlen(key);
    while (n && key[n - 1] == '/')
        key[--n] = 0;
    if (n >= sizeof(w->prefix))
        return errf_fail(err, errlen, -EINVAL, "the warehouse prefix of '%s' is too long", url);
    memcpy(w->prefix, key, n + 1);
    return 0;
}

bool tb_wh_name_ok(const char *s)
{
    size_t n = 0;
    if (!s || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return n > 0 && n < TB_WH_NAME_MAX;
}

int tb_wh_root(const tb_wh *w, const char *db, const char *table, char *buf, size_t cap, char *err,
               size_t errlen)
{
    if (!db)
        db = TB_WH_DEFAULT_DB;
    if (!tb_wh_name_ok(db))
        return errf_fail(err, errlen, -EINVAL,
                         "database name '%s' is not supported: use 1 to 63 letters, digits and "
                         "'_', not starting with a digit",
                         db);
    if (!tb_wh_name_ok(table))
        return errf_fail(err, errlen, -EINVAL,
                         "table name '%s' is not supported: use 1 to 63 letters, digits and "
                         "'_', not starting with a digit",
                         table ? table : "");
    int k = snprintf(buf, cap, "%s%s%s/%s", w->prefix, w->prefix[0] ? "/" : "", db, table);
    return k < 0 || (size_t)k >= cap ? -ENOSPC : 0;
}

void tb_wh_opts(const tb_wh *w, const char *root, bool writer, tb_table_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->s3 = w->s3;
    o->bucket = w->bucket;
    o->root = root;
    o->writer = writer;
}

int tb_wh_open(const tb_wh *w, const char *db, const char *table, bool writer, tb_table **out,
               char *err, size_t errlen)
{
    *out = NULL;
    char root[700];
    int rc = tb_wh_root(w, db, table, root, sizeof(root), err, errlen);
    if (rc < 0)
        return rc;
    tb_table_opts o;
    tb_wh_opts(w, root, writer, &o);
    char msg[1024];
    if (w->cat) {
        tb_snapshot *known = NULL;
        char etag[S3_ETAG_MAX] = "";
        int64_t listed = 0;
        if (tb__cat_get(w->cat, w->bucket, root, &known, etag, &listed) < 0)
            known = NULL;
        bool reuse = known && !writer && w->reuse_ms > 0 && listed > 0 &&
                     tb__mono_ms() - listed < w->reuse_ms;
        bool probe = writer && !tb__cat_probed(w->cat);
        o.writer = false; /* probed here or before, once per process */
        rc = tb__table_open_known(out, &o, known, etag, listed, reuse, probe, w->cat, msg,
                                  sizeof(msg));
        tb_snapshot_destroy(&known);
        if (rc == 0 && probe)
            tb__cat_set_probed(w->cat);
        if (rc == -ENOENT)
            tb__cat_forget(w->cat, w->bucket, root);
    } else {
        rc = tb_table_open(out, &o, msg, sizeof(msg));
    }
    if (rc == -ENOENT)
        return errf_fail(err, errlen, rc, "table %s.%s does not exist (UNKNOWN_TABLE)",
                         db ? db : TB_WH_DEFAULT_DB, table);
    if (rc < 0)
        return errf_fail(err, errlen, rc, "%s", msg);
    tb_table_set_io(*out, &w->io);
    return 0;
}

/* ---- listing -------------------------------------------------------------------- */

typedef struct wh_list {
    const tb_wh *w;
    size_t plen; /* of "<prefix>/" */
    const char *db;
    char **names; /* "db\0table" pairs as "db/table" */
    size_t n, cap;
    int rc;
} wh_list;

static int list_cb(const s3_object_info *o, void *arg)
{
    wh_list *l = arg;
    const char *k = o->key + l->plen;
    if (strlen(o->key) < l->plen)
        return 0;
    const char *s1 = strchr(k, '/');
    if (!s1)
        return 0;
    const char *s2 = strchr(s1 + 1, '/');
    if (!s2 || strcmp(s2 + 1, LOG0) != 0)
        return 0;
    size_t dl = (size_t)(s1 - k), tl = (size_t)(s2 - s1 - 1);
    if (dl >= TB_WH_NAME_MAX || tl >= TB_WH_NAME_MAX)
        return 0;
    char d[TB_WH_NAME_MAX], t[TB_WH_NAME_MAX];
    memcpy(d, k, dl);
    d[dl] = 0;
    memcpy(t, s1 + 1, tl);
    t[tl] = 0;
    if (!tb_wh_name_ok(d) || !tb_wh_name_ok(t) || (l->db && strcmp(l->db, d) != 0))
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **p = realloc(l->names, cap * sizeof(char *));
        if (!p)
            return l->rc = -ENOMEM;
        l->names = p;
        l->cap = cap;
    }
    char *e = malloc(dl + tl + 2);
    if (!e)
        return l->rc = -ENOMEM;
    memcpy(e, d, dl);
    e[dl] = '/';
    memcpy(e + dl + 1, t, tl + 1);
    l->names[l->n++] = e;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tb_wh_list(const tb_wh *w, const char *db, tb_wh_table_fn fn, void *arg, char *err,
               size_t errlen)
{
    char prefix[700];
    int k = snprintf(prefix, sizeof(prefix), "%s%s%s%s", w->prefix, w->prefix[0] ? "/" : "",
                     db ? db : "", db ? "/" : "");
    if (k < 0 || (size_t)k >= sizeof(prefix))
        return -ENOSPC;
    if (db && !tb_wh_name_ok(db))
        return errf_fail(err, errlen, -EINVAL, "database name '%s' is not supported", db);
    s3_sync *s;
    int rc = s3_sync_create(&s, &w->s3);
    if (rc < 0)
        return errf_fail(err, errlen, rc, "cannot start an S3 client: %s", strerror(-rc));
    wh_list l = {.w = w, .plen = strlen(w->prefix) + (w->prefix[0] ? 1 : 0), .db = db};
    s3_error e = {0};
    rc = s3_sync_list(s, w->bucket, prefix, list_cb, &l, &e);
    s3_sync_destroy(&s);
    if (l.rc < 0)
        rc = l.rc;
    else if (rc < 0)
        errf_fail(err, errlen, rc, "cannot list the warehouse s3://%s/%s: %s", w->bucket, prefix,
                  e.message[0] ? e.message : strerror(-rc));
    if (rc == 0) {
        if (l.n) /* qsort of NULL is undefined, even of 0 items */
            qsort(l.names, l.n, sizeof(char *), name_cmp);
        for (size_t i = 0; i < l.n && rc == 0; i++) {
            char *slash = strchr(l.names[i], '/');
            *slash = 0;
            rc = fn(l.names[i], slash + 1, arg);
            *slash = '/';
        }
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.names[i]);
    free(l.names);
    return rc;
}

/* ---- dropping -------------------------------------------------------------------- */

typedef struct wh_keys {
    char **keys;
    size_t n, cap;
    int rc;
} wh_keys;

static int keys_cb(const s3_object_info *o, void *arg)
{
    wh_keys *k = arg;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        char **p = realloc(k->keys, cap * sizeof(char *));
        if (!p)
            return k->rc = -ENOMEM;
        k->keys = p;
        k->cap = cap;
    }
    if (!(k->keys[k->n] = strdup(o->key)))
        return k->rc = -ENOMEM;
    k->n++;
    return 0;
}

int tb_wh_drop(const tb_wh *w, const char *db, const char *table, char *err, size_t errlen)
{
    char root[700], key[800];
    int rc = tb_wh_root(w, db, table, root, sizeof(root), err, errlen);
    if (rc < 0)
        return rc;
    s3_sync *s;
    if ((rc = s3_sync_create(&s, &w->s3)) < 0)
        return errf_fail(err, errlen, rc, "cannot start an S3 client: %s", strerror(-rc));
    snprintf(key, sizeof(key), "%s/%s", root, LOG0);
    s3_error e = {0};
    s3_object_info oi;
    memset(&oi, 0, sizeof(oi));
    rc = s3_sync_head(s, w->bucket, key, &oi, &e);
    free(oi.key);
    if (w->cat)
        tb__cat_forget(w->cat, w->bucket, root);
    if (rc == -ENOENT) {
        s3_sync_destroy(&s);
        return errf_fail(err, errlen, rc, "table %s.%s does not exist (UNKNOWN_TABLE)",
                         db ? db : TB_WH_DEFAULT_DB, table);
    }
    if (rc == 0)
        rc = s3_sync_delete(s, w->bucket, key, &e);
    wh_keys k = {0};
    if (rc == 0) {
        snprintf(key, sizeof(key), "%s/", root);
        rc = s3_sync_list(s, w->bucket, key, keys_cb, &k, &e);
        if (k.rc < 0)
            rc = k.rc;
    }
    for (size_t i = 0; i < k.n; i++) {
        if (rc == 0) {
            int drc = s3_sync_delete(s, w->bucket, k.keys[i], &e);
            if (drc < 0 && drc != -ENOENT)
                rc = drc;
        }
        free(k.keys[i]);
    }
    free(k.keys);
    s3_sync_destroy(&s);
    if (rc < 0)
        return errf_fail(err, errlen, rc, "cannot drop table %s.%s: %s", db ? db : TB_WH_DEFAULT_DB,
                         table, e.message[0] ? e.message : strerror(-rc));
    return 0;
}
