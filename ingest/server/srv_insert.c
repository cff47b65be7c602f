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
 * Parquet. INSERT ... SELECT and INSERT ... VALUES carry their data in the
 * statement: the engine parses them whole.
 */
#include "srv_int.h"

#include <ctype.h>
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

int srv_insert_parse(const char *text, size_t len, srv_insert_head *h, size_t *data_off,
                     char *err, size_t errlen)
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
#define WORD()                                                                                   \
    do {                                                                                         \
        r = ident(&l, w, sizeof(w));                                                             \
        if (r == 0 || (l.i >= len && !whole))                                                    \
            return whole ? bad(err, errlen, "the statement ends too early") : -EAGAIN;           \
        if (r < 0)                                                                               \
            return bad(err, errlen, "expected a name");                                          \
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
                snprintf(err, errlen, "INSERT INTO t (* EXCEPT ...) is not supported: name the "
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

int srv_insert_run(srv_query *q, const srv_insert_head *h, const char *sql, size_t len,
                   char *err, size_t errlen)
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
        snprintf(err, errlen, "Table %s.%s does not exist: this server has no tables (start it "
                              "with --warehouse s3://bucket/prefix/)",
                 db, h->table);
        return ENG_E_UNKNOWN_TABLE;
    }
    return srv_run_engine(q, sql, len, true, err, errlen);
}
