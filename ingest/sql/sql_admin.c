/* SPDX-License-Identifier: Apache-2.0
 *
 * sql_admin.c: the statements a server answers from its own state rather
 * than by scanning (sql_admin.h): SHOW DATABASES, SHOW TABLES, SHOW
 * PROCESSLIST, EXISTS, USE, SET, KILL QUERY, SYSTEM ... They are a handful of
 * words and literals, so a small tokenizer of their own reads them, apart
 * from the SELECT grammar of sql.c: a text that is none of them is left to
 * sql_parse_script.
 */
#include "sql_admin.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef enum { A_EOF, A_WORD, A_QWORD, A_STRING, A_NUMBER, A_PUNCT, A_BAD } a_kind;

typedef struct a_tok {
    a_kind kind;
    char text[512];
    int line, col;
} a_tok;

typedef struct a_lex {
    const char *s;
    size_t n, i;
    int line, col;
    a_tok cur;
} a_lex;

static void a_adv(a_lex *l)
{
    if (l->s[l->i] == '\n') {
        l->line++;
        l->col = 1;
    } else {
        l->col++;
    }
    l->i++;
}

static void a_next(a_lex *l)
{
    a_tok *t = &l->cur;
    for (;;) {
        while (l->i < l->n && isspace((unsigned char)l->s[l->i]))
            a_adv(l);
        if (l->i + 1 < l->n && l->s[l->i] == '-' && l->s[l->i + 1] == '-') {
            while (l->i < l->n && l->s[l->i] != '\n')
                a_adv(l);
            continue;
        }
        if (l->i + 1 < l->n && l->s[l->i] == '/' && l->s[l->i + 1] == '*') {
            while (l->i + 1 < l->n && !(l->s[l->i] == '*' && l->s[l->i + 1] == '/'))
                a_adv(l);
            if (l->i + 1 < l->n) {
                a_adv(l);
                a_adv(l);
            } else {
                l->i = l->n;
            }
            continue;
        }
        break;
    }
    t->line = l->line;
    t->col = l->col;
    t->text[0] = 0;
    if (l->i >= l->n) {
        t->kind = A_EOF;
        return;
    }
    char c = l->s[l->i];
    size_t o = 0;
    if (isalpha((unsigned char)c) || c == '_') {
        while (l->i < l->n && (isalnum((unsigned char)l->s[l->i]) || l->s[l->i] == '_')) {
            if (o + 1 < sizeof(t->text))
                t->text[o++] = l->s[l->i];
            a_adv(l);
        }
        t->text[o] = 0;
        t->kind = A_WORD;
        return;
    }
    if (isdigit((unsigned char)c)) {
        while (l->i < l->n && (isalnum((unsigned char)l->s[l->i]) || l->s[l->i] == '.')) {
            if (o + 1 < sizeof(t->text))
                t->text[o++] = l->s[l->i];
            a_adv(l);
        }
        t->text[o] = 0;
        t->kind = A_NUMBER;
        return;
    }
    if (c == '\'' || c == '`' || c == '"') {
        a_adv(l);
        for (;;) {
            if (l->i >= l->n) {
                t->kind = A_BAD;
                snprintf(t->text, sizeof(t->text), "unterminated %s",
                         c == '\'' ? "string literal" : "quoted name");
                return;
            }
            char d = l->s[l->i];
            if (d == '\\' && l->i + 1 < l->n) {
                a_adv(l);
                d = l->s[l->i];
                d = d == 'n' ? '\n' : d == 't' ? '\t' : d;
            } else if (d == c) {
                if (l->i + 1 < l->n && l->s[l->i + 1] == c) {
                    a_adv(l);
                } else {
                    a_adv(l);
                    break;
                }
            }
            if (o + 1 < sizeof(t->text))
                t->text[o++] = d;
            a_adv(l);
        }
        t->text[o] = 0;
        t->kind = c == '\'' ? A_STRING : A_QWORD;
        return;
    }
    t->text[0] = c;
    t->text[1] = 0;
    t->kind = A_PUNCT;
    a_adv(l);
}

/* Copies src into dst (cap bytes); false when it does not fit. */
static bool copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        return false;
    memcpy(dst, src, n + 1);
    return true;
}

static bool kw(const a_lex *l, const char *w)
{
    return l->cur.kind == A_WORD && strcasecmp(l->cur.text, w) == 0;
}

static bool accept(a_lex *l, const char *w)
{
    if (!kw(l, w))
        return false;
    a_next(l);
    return true;
}

static bool punct(const a_lex *l, char c)
{
    return l->cur.kind == A_PUNCT && l->cur.text[0] == c;
}

static int fail(a_lex *l, char *err, size_t errlen, const char *what)
{
    if (l->cur.kind == A_BAD)
        snprintf(err, errlen, "line %d, column %d: %s", l->cur.line, l->cur.col, l->cur.text);
    else
        snprintf(err, errlen, "line %d, column %d: expected %s, found %s%s%s", l->cur.line,
                 l->cur.col, what, l->cur.kind == A_EOF ? "the end of the query" : "'", l->cur.text,
                 l->cur.kind == A_EOF ? "" : "'");
    return -EINVAL;
}

/* A name (a word or a quoted name) into out. */
static bool name(a_lex *l, char *out, size_t cap)
{
    if ((l->cur.kind != A_WORD && l->cur.kind != A_QWORD) || !copy(out, cap, l->cur.text))
        return false;
    a_next(l);
    return true;
}

/* [db.]name */
static bool qualified(a_lex *l, sql_admin *a)
{
    char first[128];
    if (!name(l, first, sizeof(first)))
        return false;
    if (punct(l, '.')) {
        a_next(l);
        copy(a->db, sizeof(a->db), first);
        return name(l, a->name, sizeof(a->name));
    }
    return copy(a->name, sizeof(a->name), first);
}

/* [FORMAT name] [;] then the end. */
static int tail(a_lex *l, sql_admin *a, char *err, size_t errlen)
{
    if (accept(l, "FORMAT")) {
        if (!name(l, a->format, sizeof(a->format)))
            return fail(l, err, errlen, "a format name");
    }
    while (punct(l, ';'))
        a_next(l);
    if (l->cur.kind != A_EOF)
        return fail(l, err, errlen, "the end of the query");
    return 1;
}

int sql_admin_parse(const char *text, size_t len, sql_admin *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof(*a));
    a_lex l = {.s = text, .n = len, .line = 1, .col = 1};
    a_next(&l);
    if (accept(&l, "SHOW")) {
        if (accept(&l, "DATABASES")) {
            a->kind = SQL_ADMIN_SHOW_DATABASES;
        } else if (accept(&l, "TABLES")) {
            a->kind = SQL_ADMIN_SHOW_TABLES;
            if (accept(&l, "FROM") || accept(&l, "IN")) {
                if (!name(&l, a->db, sizeof(a->db)))
                    return fail(&l, err, errlen, "a database name");
            }
        } else if (accept(&l, "PROCESSLIST")) {
            a->kind = SQL_ADMIN_SHOW_PROCESSLIST;
            return tail(&l, a, err, errlen);
        } else {
            return 0; /* SHOW CREATE TABLE and the rest: not this parser's */
        }
        if (accept(&l, "LIKE") || accept(&l, "ILIKE")) {
            if (l.cur.kind != A_STRING)
                return fail(&l, err, errlen, "a pattern string after LIKE");
            if (!copy(a->like, sizeof(a->like), l.cur.text))
                return fail(&l, err, errlen, "a shorter pattern");
            a->has_like = true;
            a_next(&l);
        }
        return tail(&l, a, err, errlen);
    }
    if (accept(&l, "EXISTS")) {
        a->kind = SQL_ADMIN_EXISTS;
        accept(&l, "TEMPORARY");
        if (accept(&l, "DATABASE")) {
            a->exists_database = true;
            if (!name(&l, a->name, sizeof(a->name)))
                return fail(&l, err, errlen, "a database name");
            return tail(&l, a, err, errlen);
        }
        if (!accept(&l, "TABLE"))
            accept(&l, "VIEW");
        if (!qualified(&l, a))
            return fail(&l, err, errlen, "a table name");
        return tail(&l, a, err, errlen);
    }
    if (accept(&l, "USE")) {
        a->kind = SQL_ADMIN_USE;
        if (!name(&l, a->name, sizeof(a->name)))
            return fail(&l, err, errlen, "a database name");
        return tail(&l, a, err, errlen);
    }
    if (accept(&l, "SET")) {
        a->kind = SQL_ADMIN_SET;
        do {
            if (a->n_sets >= SQL_ADMIN_MAX_SETS)
                return fail(&l, err, errlen, "at most 32 settings in one SET");
            if (!name(&l, a->sets[a->n_sets].name, sizeof(a->sets[0].name)))
                return fail(&l, err, errlen, "a setting name");
            if (!punct(&l, '='))
                return fail(&l, err, errlen, "'='");
            a_next(&l);
            char *v = a->sets[a->n_sets].value;
            size_t vc = sizeof(a->sets[0].value);
            if (punct(&l, '-')) {
                a_next(&l);
                if (l.cur.kind != A_NUMBER)
                    return fail(&l, err, errlen, "a number");
                v[0] = '-';
                if (!copy(v + 1, vc - 1, l.cur.text))
                    return fail(&l, err, errlen, "a shorter value");
            } else if (l.cur.kind == A_NUMBER || l.cur.kind == A_STRING || l.cur.kind == A_WORD) {
                if (!copy(v, vc, l.cur.text))
                    return fail(&l, err, errlen, "a shorter value");
                if (l.cur.kind == A_WORD && strcasecmp(v, "true") != 0 &&
                    strcasecmp(v, "false") != 0)
                    return fail(&l, err, errlen, "a value (a number, a string, true or false)");
            } else {
                return fail(&l, err, errlen, "a value");
            }
            a_next(&l);
            a->n_sets++;
        } while (punct(&l, ',') && (a_next(&l), true));
        return tail(&l, a, err, errlen);
    }
    if (accept(&l, "KILL")) {
        a->kind = SQL_ADMIN_KILL_QUERY;
        if (!accept(&l, "QUERY"))
            return fail(&l, err, errlen, "QUERY (KILL QUERY WHERE query_id = '...')");
        if (!accept(&l, "WHERE"))
            return fail(&l, err, errlen, "WHERE query_id = '...'");
        if (!accept(&l, "query_id"))
            return fail(&l, err, errlen, "query_id (KILL QUERY WHERE query_id = '...')");
        if (!punct(&l, '='))
            return fail(&l, err, errlen, "'='");
        a_next(&l);
        if (l.cur.kind != A_STRING)
            return fail(&l, err, errlen, "the query id as a string");
        if (!copy(a->query_id, sizeof(a->query_id), l.cur.text))
            return fail(&l, err, errlen, "a query id of at most 127 bytes");
        a_next(&l);
        if (accept(&l, "SYNC"))
            a->sync = true;
        else
            accept(&l, "ASYNC");
        return tail(&l, a, err, errlen);
    }
    if (accept(&l, "SYSTEM")) {
        a->kind = SQL_ADMIN_SYSTEM;
        size_t o = 0;
        while (l.cur.kind == A_WORD && o + 1 < sizeof(a->system)) {
            int k =
                snprintf(a->system + o, sizeof(a->system) - o, "%s%s", o ? " " : "", l.cur.text);
            o += (size_t)k;
            a_next(&l);
        }
        for (char *p = a->system; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        if (!o)
            return fail(&l, err, errlen, "a SYSTEM command such as DROP PAGE CACHE");
        return tail(&l, a, err, errlen);
    }
    return 0;
}
