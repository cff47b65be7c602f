/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_insert.c: INSERT INTO [db.]t [(columns)] FORMAT name, with its data
 * after the statement in the same stream (the rest of the body, or of the
 * query text), as ClickHouse reads it:
 *
 *   ?query=INSERT+INTO+t+FORMAT+JSONEachRow      body: {"a":1}\n{"a":2}\n
 *   body: INSERT INTO t FORMAT TSV\n1\n2\n
 *   INSERT INTO t VALUES (1, 'a'), (2, 'b')     (the Values format)
 *
 * Here the head is found, so that the statement can be told from its data
 * while the body is still arriving; the engine then runs the statement
 * (eng_table.c: the table of the warehouse, its columns, the part sink, one
 * committed log version) and reads the data from the body as eng_ctx's input
 * stream: JSONEachRow, CSV[WithNames], TSV / TabSeparated[WithNames],
 * Parquet, and JSONCompactEachRow (the JS client's default for insert()),
 * whose rows become JSONEachRow objects here with the columns' names. INSERT ... SELECT and INSERT ... VALUES carry their data in the
 * statement: the engine parses them whole.
 */
#include "srv_int.h"

#include "eng_tdef.h"

#include <ctype.h>
#include <event2/buffer.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the head ------------------------------------------------------------------------ */

typedef struct ins_lex {
    const char *s;
    size_t n, i;
} ins_lex;

static void skip_blank(ins_lex *l)
{
    for (;;) {
        while (l->i < l->n && isspace((unsigned char)l->s[l->i]))
            l->i++;
        if (l->i + 1 < l->n && l->s[l->i] == '-' && l->s[l->i + 1] == '-') {
            while (l->i < l->n && l->s[l->i] != '\n')
                l->i++;
            continue;
        }
        if (l->i + 1 < l->n && l->s[l->i] == '/' && l->s[l->i + 1] == '*') {
            l->i += 2;
            while (l->i + 1 < l->n && !(l->s[l->i] == '*' && l->s[l->i + 1] == '/'))
                l->i++;
            l->i = l->i + 2 > l->n ? l->n : l->i + 2;
            continue;
        }
        return;
    }
}

/* A word or a quoted name into out: 1, 0 at the end of the text, -1 none. */
static int ident(ins_lex *l, char *out, size_t cap)
{
    skip_blank(l);
    if (l->i >= l->n)
        return 0;
    size_t o = 0;
    char c = l->s[l->i];
    if (c == '`' || c == '"') {
        l->i++;
        while (l->i < l->n && l->s[l->i] != c) {
            if (o + 1 < cap)
                out[o++] = l->s[l->i];
            l->i++;
        }
        if (l->i >= l->n)
            return 0;
        l->i++;
        out[o] = 0;
        return 1;
    }
    if (!isalpha((unsigned char)c) && c != '_')
        return -1;
    while (l->i < l->n && (isalnum((unsigned char)l->s[l->i]) || l->s[l->i] == '_')) {
        if (o + 1 < cap)
            out[o++] = l->s[l->i];
        l->i++;
    }
    out[o] = 0;
    return 1;
}

static int bad(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "Syntax error in INSERT: %s", what);
    return -EINVAL;
}

int srv_insert_parse(const char *text, size_t len, srv_insert_head *h, size_t *data_off, char *err,
                     size_t errlen)
{
    return srv_insert_parse_whole(text, len, true, h, data_off, err, errlen);
}

/* whole: text is all there will be (else the body is still arriving: a word
 * at its very end may go on, -EAGAIN). */
int srv_insert_parse_whole(const char *text, size_t len, bool whole, srv_insert_head *h,
                           size_t *data_off, char *err, size_t errlen)
{
    memset(h, 0, sizeof(*h));
    ins_lex l = {text, len, 0};
    char w[128];
    int r = ident(&l, w, sizeof(w));
    if (r == 0)
        return whole ? 0 : -EAGAIN;
    if (r < 0 || strcasecmp(w, "INSERT") != 0)
        return 0;
    if (l.i >= len && !whole)
        return -EAGAIN;
#define WORD()                                                                                     \
    do {                                                                                           \
        r = ident(&l, w, sizeof(w));                                                               \
        if (r == 0 || (l.i >= len && !whole))                                                      \
            return whole ? bad(err, errlen, "the statement ends too early") : -EAGAIN;             \
        if (r < 0)                                                                                 \
            return bad(err, errlen, "expected a name");                                            \
    } while (0)
    WORD();
    if (strcasecmp(w, "INTO") != 0)
        return bad(err, errlen, "expected INTO after INSERT");
    WORD();
    if (strcasecmp(w, "TABLE") == 0)
        WORD();
    if (strcasecmp(w, "FUNCTION") == 0) {
        snprintf(err, errlen, "INSERT INTO FUNCTION is not supported: insert into a table");
        return -EINVAL;
    }
    snprintf(h->table, sizeof(h->table), "%s", w);
    skip_blank(&l);
    if (l.i < len && text[l.i] == '.') {
        l.i++;
        snprintf(h->db, sizeof(h->db), "%s", h->table);
        WORD();
        snprintf(h->table, sizeof(h->table), "%s", w);
    }
    skip_blank(&l);
    if (l.i >= len)
        return whole ? bad(err, errlen, "expected FORMAT, VALUES or SELECT after the table")
                     : -EAGAIN;
    if (text[l.i] == '(') {
        l.i++;
        for (;;) {
            skip_blank(&l);
            if (l.i < len && text[l.i] == '*') {
                snprintf(err, errlen,
                         "INSERT INTO t (* EXCEPT ...) is not supported: name the "
                         "columns");
                return -EINVAL;
            }
            if (h->n_cols >= 64)
                return bad(err, errlen, "at most 64 columns in the column list");
            WORD();
            snprintf(h->cols[h->n_cols++], sizeof(h->cols[0]), "%s", w);
            skip_blank(&l);
            if (l.i >= len)
                return whole ? bad(err, errlen, "the column list is not closed") : -EAGAIN;
            if (text[l.i] == ',') {
                l.i++;
                continue;
            }
            if (text[l.i] == ')') {
                l.i++;
                break;
            }
            return bad(err, errlen, "expected ',' or ')' in the column list");
        }
    }
    WORD();
    if (strcasecmp(w, "SELECT") == 0 || strcasecmp(w, "WITH") == 0) {
        h->select = true;
        *data_off = len;
        return 1;
    }
    if (strcasecmp(w, "VALUES") == 0) {
        snprintf(h->format, sizeof(h->format), "Values");
        h->select = true;
        *data_off = len;
        return 1;
    }
    if (strcasecmp(w, "FORMAT") != 0)
        return bad(err, errlen, "expected FORMAT, VALUES or SELECT after the table");
    r = ident(&l, h->format, sizeof(h->format));
    if (r == 0)
        return whole ? bad(err, errlen, "expected a format name after FORMAT") : -EAGAIN;
    if (r < 0)
        return bad(err, errlen, "expected a format name after FORMAT");
    if (l.i >= len && !whole)
        return -EAGAIN;
    /* the data: after blanks and one line feed */
    while (l.i < len && (text[l.i] == ' ' || text[l.i] == '\t'))
        l.i++;
    if (l.i < len && text[l.i] == '\r')
        l.i++;
    if (l.i < len && text[l.i] == '\n')
        l.i++;
    *data_off = l.i;
    return 1;
#undef WORD
}

/* ---- the whole INSERT ----------------------------------------------------------------------- */

/* ---- JSONCompactEachRow, as the JS client's insert() sends by default ------------------- */

/* One JSONCompactEachRow line [v1, v2, ...] as a JSONEachRow object with
 * the names, into out (evbuffer). 0, -EBADMSG (not an array of n values). */
static int compact_line(const char *p, size_t n, char *const *names, int n_names,
                        struct evbuffer *out)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)p[i]))
        i++;
    if (i == n)
        return 0; /* a blank line */
    if (p[i] != '[')
        return -EBADMSG;
    i++;
    evbuffer_add(out, "{", 1);
    int k = 0;
    for (;;) {
        while (i < n && isspace((unsigned char)p[i]))
            i++;
        if (i < n && p[i] == ']' && k == 0)
            break;
        size_t start = i;
        int depth = 0;
        bool str = false;
        for (; i < n; i++) {
            char c = p[i];
            if (str) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    str = false;
                continue;
            }
            if (c == '"')
                str = true;
            else if (c == '[' || c == '{')
                depth++;
            else if (c == ']' || c == '}') {
                if (depth == 0)
                    break;
                depth--;
            } else if (c == ',' && depth == 0)
                break;
        }
        if (i >= n || k >= n_names)
            return -EBADMSG;
        evbuffer_add_printf(out, "%s\"%s\":", k ? "," : "", names[k]);
        evbuffer_add(out, p + start, i - start);
        k++;
        if (p[i] == ']')
            break;
        i++;
    }
    i++;
    while (i < n && isspace((unsigned char)p[i]))
        i++;
    if (i != n || k != n_names)
        return -EBADMSG;
    evbuffer_add(out, "}\n", 2);
    return 0;
}

typedef struct compact_in {
    srv_query *q;
    char **names; /* JSON-escaped column names */
    int n;
    struct evbuffer *raw, *conv;
    bool eof;
    int rc;
} compact_in;

/* eng_ctx.input_read over the body: whole lines converted. */
static int64_t compact_read(void *arg, void *buf, size_t len)
{
    compact_in *c = arg;
    while (evbuffer_get_length(c->conv) == 0 && !c->eof && c->rc == 0) {
        char tmp[65536], e[256];
        ssize_t got = srv_query_read_body(c->q, tmp, sizeof(tmp), e, sizeof(e));
        if (got < 0) {
            c->rc = (int)got;
            break;
        }
        if (got > 0) {
            atomic_fetch_add(&c->q->written_bytes, (uint64_t)got);
            evbuffer_add(c->raw, tmp, (size_t)got);
        } else {
            c->eof = true;
            if (evbuffer_get_length(c->raw))
                evbuffer_add(c->raw, "\n", 1);
        }
        size_t nl;
        struct evbuffer_ptr at;
        while ((at = evbuffer_search(c->raw, "\n", 1, NULL)).pos >= 0 && c->rc == 0) {
            nl = (size_t)at.pos;
            char *line = (char *)evbuffer_pullup(c->raw, (ssize_t)nl + 1);
            if (compact_line(line, nl, c->names, c->n, c->conv) < 0)
                c->rc = -EBADMSG;
            evbuffer_drain(c->raw, nl + 1);
        }
    }
    if (evbuffer_get_length(c->conv))
        return evbuffer_remove(c->conv, buf, len);
    return c->rc;
}

/* The columns the rows carry: the INSERT's list, else the table's. */
static int compact_names(srv_query *q, const srv_insert_head *h, const char *db, compact_in *c,
                         char *err, size_t errlen)
{
    const char *list[64];
    int n = 0;
    tb_table *t = NULL;
    tb_snapshot *snap = NULL;
    if (h->n_cols) {
        for (int i = 0; i < h->n_cols; i++)
            list[n++] = h->cols[i];
    } else {
        tb_wh wh;
        srv_wh_for(q->s, q->cache, &wh);
        int rc = tb_wh_open(&wh, db, h->table, false, &t, err, errlen);
        if (rc == 0)
            rc = tb_table_snapshot(t, &snap, err, errlen);
        if (rc < 0) {
            tb_table_destroy(&t);
            return rc == -ENOENT ? ENG_E_UNKNOWN_TABLE : ENG_E_STD_EXCEPTION;
        }
        for (uint32_t i = 0; i < snap->schema.n_cols && n < 64; i++)
            if (!eng_tdef_hidden(snap->schema.cols[i].name)) /* a key expression's value */
                list[n++] = snap->schema.cols[i].name;
    }
    c->names = calloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; c->names && i < n; i++) {
        size_t l = strlen(list[i]);
        char *e = malloc(2 * l + 1), *o = e;
        for (size_t k = 0; e && k < l; k++) {
            if (list[i][k] == '"' || list[i][k] == '\\')
                *o++ = '\\';
            *o++ = list[i][k];
        }
        if (e)
            *o = 0;
        c->names[c->n++] = e;
        if (!e)
            break;
    }
    tb_snapshot_destroy(&snap);
    tb_table_destroy(&t);
    if (!c->names || (n && !c->names[n - 1])) {
        snprintf(err, errlen, "out of memory");
        return ENG_E_MEMORY_LIMIT_EXCEEDED;
    }
    return 0;
}

int srv_insert_run(srv_query *q, const srv_insert_head *h, const char *sql, size_t len, char *err,
                   size_t errlen)
{
    const char *db = h->db[0] ? h->db : q->database;
    if (strcmp(db, "system") == 0) {
        snprintf(err, errlen, "Table system.%s does not accept INSERT: it is the server's",
                 h->table);
        return ENG_E_NOT_IMPLEMENTED;
    }
    if (!srv_database_exists(q->s, db)) {
        snprintf(err, errlen, "Database %s does not exist", db);
        return ENG_E_UNKNOWN_DATABASE;
    }
    if (!q->s->wh_set) {
        snprintf(err, errlen,
                 "Table %s.%s does not exist: this server has no tables (start it "
                 "with --warehouse s3://bucket/prefix/)",
                 db, h->table);
        return ENG_E_UNKNOWN_TABLE;
    }
    if (strcasecmp(h->format, "JSONCompactEachRow") != 0)
        return srv_run_engine(q, sql, len, true, err, errlen);
    /* the engine reads JSONEachRow: the rows become objects on the way */
    compact_in c = {q, NULL, 0, evbuffer_new(), evbuffer_new(), false, 0};
    int code =
        c.raw && c.conv ? compact_names(q, h, db, &c, err, errlen) : ENG_E_MEMORY_LIMIT_EXCEEDED;
    if (!code) {
        char *stmt = NULL;
        size_t sl = 0;
        FILE *f = open_memstream(&stmt, &sl);
        if (f) {
            fprintf(f, "INSERT INTO `%s`.`%s` (", db, h->table);
            for (int i = 0; i < c.n; i++)
                fprintf(f, "%s`%s`", i ? ", " : "", c.names[i]);
            fprintf(f, ") FORMAT JSONEachRow");
            fclose(f);
        }
        if (!f || !stmt) {
            snprintf(err, errlen, "out of memory");
            code = ENG_E_MEMORY_LIMIT_EXCEEDED;
        } else {
            code = srv_run_engine_input(q, stmt, sl, compact_read, &c, err, errlen);
            if (c.rc == -EBADMSG) {
                snprintf(err, errlen,
                         "Cannot parse input: a JSONCompactEachRow row is not an "
                         "array of %d values (the table's columns, or the INSERT's "
                         "list)",
                         c.n);
                code = ENG_E_CANNOT_PARSE_INPUT_ASSERTION_FAILED;
            }
        }
        free(stmt);
    }
    for (int i = 0; i < c.n; i++)
        free(c.names[i]);
    free(c.names);
    if (c.raw)
        evbuffer_free(c.raw);
    if (c.conv)
        evbuffer_free(c.conv);
    return code;
}
