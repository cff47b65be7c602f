/* SPDX-License-Identifier: Apache-2.0
 *
 * sql.c: lexer and recursive-descent parser of the engine's SQL subset (see
 * sql.h). Precedence follows ClickHouse, loosest first:
 *
 *   OR < AND < NOT < comparison (= != <> < <= > >= [NOT] LIKE/ILIKE/IN/BETWEEN,
 *   IS [NOT] NULL) < || < + - < * / % < unary - < :: < primary
 *
 * The lexer works on a byte buffer with an explicit length (the fuzzer hands
 * it arbitrary bytes); recursion depth is bounded so hostile input cannot
 * blow the stack.
 */
#include "sql.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SQL_MAX_DEPTH 200

typedef enum tok_kind {
    T_EOF = 0,
    T_IDENT,
    T_QIDENT,
    T_INT,
    T_FLOAT,
    T_STRING,
    T_OP,
    T_ERR,
} tok_kind;

typedef struct tok {
    tok_kind kind;
    const char *p; /* start in the text */
    size_t len;
    int line, col;
} tok;

typedef struct parser {
    const char *text;
    size_t len, pos;
    int line, col; /* of pos */
    tok cur;
    char *err;
    size_t errlen;
    int depth;
    int rc; /* first error */
} parser;

/* ---- lexer ---------------------------------------------------------------- */

static void adv(parser *ps, size_t n)
{
    for (size_t i = 0; i < n && ps->pos < ps->len; i++) {
        if (ps->text[ps->pos] == '\n') {
            ps->line++;
            ps->col = 1;
        } else {
            ps->col++;
        }
        ps->pos++;
    }
}

static int peekc(const parser *ps, size_t k)
{
    return ps->pos + k < ps->len ? (unsigned char)ps->text[ps->pos + k] : -1;
}

static void fail(parser *ps, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(parser *ps, int line, int col, const char *fmt, ...)
{
    if (ps->rc)
        return;
    ps->rc = -EINVAL;
    if (!ps->err || !ps->errlen)
        return;
    int k = snprintf(ps->err, ps->errlen, "line %d, column %d: ", line, col);
    if (k < 0 || (size_t)k >= ps->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err + k, ps->errlen - (size_t)k, fmt, ap);
    va_end(ap);
}

static void next(parser *ps)
{
    for (;;) {
        int c = peekc(ps, 0);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            adv(ps, 1);
        } else if (c == '-' && peekc(ps, 1) == '-') {
            while (ps->pos < ps->len && ps->text[ps->pos] != '\n')
                adv(ps, 1);
        } else if (c == '/' && peekc(ps, 1) == '*') {
            int l = ps->line, co = ps->col;
            adv(ps, 2);
            while (ps->pos < ps->len && !(peekc(ps, 0) == '*' && peekc(ps, 1) == '/'))
                adv(ps, 1);
            if (ps->pos >= ps->len) {
                fail(ps, l, co, "unterminated comment: close it with */");
                ps->cur = (tok){T_ERR, ps->text + ps->pos, 0, l, co};
                return;
            }
            adv(ps, 2);
        } else {
            break;
        }
    }
    tok t = {T_EOF, ps->text + ps->pos, 0, ps->line, ps->col};
    size_t start = ps->pos;
    int c = peekc(ps, 0);
    if (c < 0) {
        ps->cur = t;
        return;
    }
    if (isalpha(c) || c == '_') {
        while (peekc(ps, 0) >= 0 && (isalnum(peekc(ps, 0)) || peekc(ps, 0) == '_'))
            adv(ps, 1);
        t.kind = T_IDENT;
    } else if (isdigit(c) || (c == '.' && peekc(ps, 1) >= 0 && isdigit(peekc(ps, 1)))) {
        t.kind = T_INT;
        if (c == '0' && (peekc(ps, 1) == 'x' || peekc(ps, 1) == 'X')) {
            adv(ps, 2);
            while (peekc(ps, 0) >= 0 && isxdigit(peekc(ps, 0)))
                adv(ps, 1);
        } else {
            while (peekc(ps, 0) >= 0 && isdigit(peekc(ps, 0)))
                adv(ps, 1);
            if (peekc(ps, 0) == '.') {
                t.kind = T_FLOAT;
                adv(ps, 1);
                while (peekc(ps, 0) >= 0 && isdigit(peekc(ps, 0)))
                    adv(ps, 1);
            }
            if (peekc(ps, 0) == 'e' || peekc(ps, 0) == 'E') {
                int k = 1;
                if (peekc(ps, 1) == '+' || peekc(ps, 1) == '-')
                    k = 2;
                if (peekc(ps, (size_t)k) >= 0 && isdigit(peekc(ps, (size_t)k))) {
                    t.kind = T_FLOAT;
                    adv(ps, (size_t)k);
                    while (peekc(ps, 0) >= 0 && isdigit(peekc(ps, 0)))
                        adv(ps, 1);
                }
            }
        }
        if (peekc(ps, 0) >= 0 && (isalpha(peekc(ps, 0)) || peekc(ps, 0) == '_')) {
            fail(ps, t.line, t.col, "malformed number '%.*s%c'", (int)(ps->pos - start),
                 ps->text + start, peekc(ps, 0));
            t.kind = T_ERR;
        }
    } else if (c == '\'' || c == '`' || c == '"') {
        adv(ps, 1);
        for (;;) {
            int d = peekc(ps, 0);
            if (d < 0) {
                fail(ps, t.line, t.col, "unterminated %s: close it with %c",
                     c == '\'' ? "string literal" : "quoted identifier", c);
                t.kind = T_ERR;
                break;
            }
            if (d == '\\' && peekc(ps, 1) >= 0) {
                adv(ps, 2);
                continue;
            }
            if (d == c) {
                if (peekc(ps, 1) == c) {
                    adv(ps, 2);
                    continue;
                }
                adv(ps, 1);
                t.kind = c == '\'' ? T_STRING : T_QIDENT;
                break;
            }
            adv(ps, 1);
        }
    } else {
        static const char *ops2[] = {"<=", ">=", "!=", "<>", "==", "||", "::"};
        t.kind = T_OP;
        size_t n = 1;
        for (size_t i = 0; i < sizeof(ops2) / sizeof(ops2[0]); i++)
            if (c == ops2[i][0] && peekc(ps, 1) == ops2[i][1])
                n = 2;
        if (n == 1 && (c == 0 || !strchr("+-*/%=<>(),.;[]", c))) { /* strchr finds the NUL too */
            if (c >= 0x20 && c < 0x7f)
                fail(ps, t.line, t.col, "unexpected character '%c'", c);
            else
                fail(ps, t.line, t.col, "unexpected byte 0x%02x", c);
            t.kind = T_ERR;
        }
        adv(ps, n);
    }
    t.len = ps->pos - start;
    ps->cur = t;
}

static bool is_kw(const tok *t, const char *kw)
{
    return t->kind == T_IDENT && strlen(kw) == t->len && strncasecmp(t->p, kw, t->len) == 0;
}

static bool is_op(const tok *t, const char *op)
{
    return t->kind == T_OP && strlen(op) == t->len && memcmp(t->p, op, t->len) == 0;
}

static bool accept_kw(parser *ps, const char *kw)
{
    if (!is_kw(&ps->cur, kw))
        return false;
    next(ps);
    return true;
}

static bool accept_op(parser *ps, const char *op)
{
    if (!is_op(&ps->cur, op))
        return false;
    next(ps);
    return true;
}

static void fail_expected(parser *ps, const char *what)
{
    if (ps->cur.kind == T_EOF)
        fail(ps, ps->cur.line, ps->cur.col, "expected %s, found the end of the query", what);
    else
        fail(ps, ps->cur.line, ps->cur.col, "expected %s, found '%.*s'", what,
             (int)(ps->cur.len > 40 ? 40 : ps->cur.len), ps->cur.p);
}

static bool expect_op(parser *ps, const char *op)
{
    if (accept_op(ps, op))
        return true;
    char w[8];
    snprintf(w, sizeof(w), "'%s'", op);
    fail_expected(ps, w);
    return false;
}

static bool expect_kw(parser *ps, const char *kw)
{
    if (accept_kw(ps, kw))
        return true;
    fail_expected(ps, kw);
    return false;
}

/* Unquotes a string or quoted identifier token (\-escapes, doubled quotes). */
static char *unquote(const tok *t, size_t *outlen)
{
    char q = t->p[0];
    char *s = malloc(t->len + 1);
    if (!s)
        return NULL;
    size_t o = 0;
    for (size_t i = 1; i + 1 < t->len; i++) {
        char c = t->p[i];
        if (c == '\\' && i + 2 < t->len) {
            char e = t->p[++i];
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case '0': c = '\0'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'a': c = '\a'; break;
            case 'v': c = '\v'; break;
            default: c = e; break;
            }
        } else if (c == q && i + 2 < t->len && t->p[i + 1] == q) {
            i++;
        }
        s[o++] = c;
    }
    s[o] = 0;
    if (outlen)
        *outlen = o;
    return s;
}

static char *tokdup(const tok *t)
{
    if (t->kind == T_QIDENT)
        return unquote(t, NULL);
    return strndup(t->p, t->len);
}

/* ---- nodes ---------------------------------------------------------------- */

static sql_node *node_new(parser *ps, sql_kind k, int line, int col)
{
    sql_node *n = calloc(1, sizeof(*n));
    if (!n) {
        if (!ps->rc) {
            ps->rc = -ENOMEM;
            if (ps->err && ps->errlen)
                snprintf(ps->err, ps->errlen, "out of memory while parsing the query");
        }
        return NULL;
    }
    n->kind = k;
    n->line = line;
    n->col = col;
    return n;
}

static bool node_push(parser *ps, sql_node *n, sql_node *child)
{
    if (!child)
        return false;
    sql_node **a = realloc(n->args, sizeof(*a) * (size_t)(n->nargs + 1));
    if (!a) {
        sql_node_free(child);
        if (!ps->rc)
            ps->rc = -ENOMEM;
        return false;
    }
    n->args = a;
    n->args[n->nargs++] = child;
    return true;
}

static void window_free(sql_window *w);

void sql_node_free(sql_node *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->nargs; i++)
        sql_node_free(n->args[i]);
    free(n->args);
    for (int i = 0; i < n->nparams; i++)
        sql_node_free(n->params[i]);
    free(n->params);
    free(n->s);
    free(n->qual);
    if (!n->sub_borrowed)
        sql_stmt_destroy(&n->sub);
    if (!n->win_borrowed)
        window_free(n->win);
    free(n);
}

sql_node *sql_node_clone(const sql_node *n)
{
    if (!n)
        return NULL;
    sql_node *c = malloc(sizeof(*c));
    if (!c)
        return NULL;
    *c = *n;
    c->s = NULL;
    c->args = NULL;
    c->nargs = 0;
    c->sub_borrowed = n->sub != NULL; /* the original keeps the subquery */
    c->win_borrowed = n->win != NULL; /* and the window */
    c->qual = NULL;
    c->params = NULL;
    c->nparams = 0;
    if (n->qual && !(c->qual = strdup(n->qual))) {
        free(c);
        return NULL;
    }
    if (n->nparams) {
        if (!(c->params = calloc((size_t)n->nparams, sizeof(*c->params)))) {
            sql_node_free(c);
            return NULL;
        }
        for (int i = 0; i < n->nparams; i++) {
            c->params[i] = sql_node_clone(n->params[i]);
            c->nparams = i + 1;
            if (!c->params[i]) {
                sql_node_free(c);
                return NULL;
            }
        }
    }
    if (n->s) {
        c->s = malloc(n->slen + 1);
        if (!c->s) {
            sql_node_free(c);
            return NULL;
        }
        memcpy(c->s, n->s, n->slen + 1);
    }
    if (n->nargs) {
        c->args = calloc((size_t)n->nargs, sizeof(*c->args));
        if (!c->args) {
            sql_node_free(c);
            return NULL;
        }
        for (int i = 0; i < n->nargs; i++) {
            c->args[i] = sql_node_clone(n->args[i]);
            c->nargs = i + 1;
            if (!c->args[i]) {
                sql_node_free(c);
                return NULL;
            }
        }
    }
    return c;
}

bool sql_node_equal(const sql_node *a, const sql_node *b)
{
    if (!a || !b)
        return a == b;
    if (a->kind != b->kind || a->op != b->op || a->nargs != b->nargs || a->nparams != b->nparams ||
        a->negated != b->negated || a->has_operand != b->has_operand || a->has_else != b->has_else)
        return false;
    switch (a->kind) {
    case SQL_INT:
        if (a->u != b->u)
            return false;
        break;
    case SQL_FLOAT:
        if (a->d != b->d)
            return false;
        break;
    case SQL_BOOL:
        if (a->i != b->i)
            return false;
        break;
    case SQL_FUNC:
        if (strcasecmp(a->s, b->s) != 0 || a->win != b->win)
            return false;
        break;
    case SQL_STRING:
    case SQL_COLUMN:
    case SQL_CAST:
    case SQL_COLUMNS:
        if (a->slen != b->slen || memcmp(a->s, b->s, a->slen) != 0)
            return false;
        break;
    default: break;
    }
    if (a->kind == SQL_COLUMN && (!a->qual != !b->qual || (a->qual && strcmp(a->qual, b->qual))))
        return false;
    switch (a->kind) {
    case SQL_SUBQUERY:
        if (a->sub != b->sub)
            return false;
        break;
    default: break;
    }
    for (int i = 0; i < a->nargs; i++)
        if (!sql_node_equal(a->args[i], b->args[i]))
            return false;
    for (int i = 0; i < a->nparams; i++)
        if (!sql_node_equal(a->params[i], b->params[i]))
            return false;
    return true;
}

/* ---- expressions ---------------------------------------------------------- */

static sql_node *parse_expr(parser *ps);
static bool is_clause_kw(const tok *t);
static bool starts_query(const tok *t);
static sql_node *parse_subquery_node(parser *ps, const tok *open);
static bool parse_over(parser *ps, sql_node *fn);

/* The argument list of a call after its '(' (already consumed), to the ')':
 * f(DISTINCT x) becomes fDistinct(x) (count(DISTINCT x) is uniqExact(x), as
 * ClickHouse runs it); a second list, f(params)(args), makes the first the
 * parameters of a parametric aggregate. */
static bool parse_call(parser *ps, sql_node *n)
{
    int line = ps->cur.line, col = ps->cur.col;
    if (accept_kw(ps, "DISTINCT")) {
        if (is_op(&ps->cur, ")")) {
            fail(ps, line, col, "%s(DISTINCT) needs an argument, as in %s(DISTINCT x)", n->s, n->s);
            return false;
        }
        char name[96];
        if (strcasecmp(n->s, "count") == 0)
            snprintf(name, sizeof(name), "uniqExact");
        else
            snprintf(name, sizeof(name), "%.80sDistinct", n->s);
        char *c = strdup(name);
        if (!c) {
            ps->rc = -ENOMEM;
            return false;
        }
        free(n->s);
        n->s = c;
        n->slen = strlen(c);
    }
    if (!accept_op(ps, ")")) {
        do {
            if (!node_push(ps, n, parse_expr(ps)))
                return false;
        } while (accept_op(ps, ","));
        if (!expect_op(ps, ")"))
            return false;
    }
    if (!is_op(&ps->cur, "("))
        return true;
    next(ps);
    n->params = n->args;
    n->nparams = n->nargs;
    n->args = NULL;
    n->nargs = 0;
    if (accept_kw(ps, "DISTINCT")) {
        fail(ps, line, col,
             "DISTINCT in the arguments of the parametric %s is not supported: "
             "use %sDistinct(params)(args)",
             n->s, n->s);
        return false;
    }
    if (!is_op(&ps->cur, ")")) {
        do {
            if (!node_push(ps, n, parse_expr(ps)))
                return false;
        } while (accept_op(ps, ","));
    }
    if (!expect_op(ps, ")"))
        return false;
    if (is_op(&ps->cur, "(")) {
        fail(ps, ps->cur.line, ps->cur.col, "%s has two lists of parameters: write f(params)(args)",
             n->s);
        return false;
    }
    return true;
}

/* [a, b, ...] after the '[' token (not consumed yet). */
static sql_node *parse_array(parser *ps)
{
    sql_node *n = node_new(ps, SQL_ARRAY, ps->cur.line, ps->cur.col);
    if (!n)
        return NULL;
    next(ps);
    if (accept_op(ps, "]"))
        return n;
    do {
        if (!node_push(ps, n, parse_expr(ps))) {
            sql_node_free(n);
            return NULL;
        }
    } while (accept_op(ps, ","));
    if (!expect_op(ps, "]")) {
        sql_node_free(n);
        return NULL;
    }
    return n;
}

/* COLUMNS('regex'): the columns whose names match, in the SELECT list. A
 * column named columns stays a column. */
static sql_node *parse_columns_matcher(parser *ps)
{
    tok t = ps->cur;
    next(ps);
    if (!is_op(&ps->cur, "(")) {
        sql_node *n = node_new(ps, SQL_COLUMN, t.line, t.col);
        if (n && !(n->s = tokdup(&t))) {
            sql_node_free(n);
            ps->rc = -ENOMEM;
            return NULL;
        }
        if (n)
            n->slen = strlen(n->s);
        return n;
    }
    next(ps);
    if (ps->cur.kind != T_STRING) {
        fail_expected(ps, "a regular expression as a string in COLUMNS('regex')");
        return NULL;
    }
    sql_node *n = node_new(ps, SQL_COLUMNS, t.line, t.col);
    if (!n)
        return NULL;
    if (!(n->s = unquote(&ps->cur, &n->slen))) {
        sql_node_free(n);
        ps->rc = -ENOMEM;
        return NULL;
    }
    next(ps);
    if (!expect_op(ps, ")")) {
        sql_node_free(n);
        return NULL;
    }
    return n;
}

static sql_node *parse_unary(parser *ps);

/* INTERVAL n UNIT as toIntervalUnit(n); NULL without an error when INTERVAL
 * is not followed by an amount (then it is a column's name). */
static sql_node *parse_interval(parser *ps)
{
    tok t = ps->cur;
    parser save = *ps;
    next(ps);
    if (ps->cur.kind != T_INT && ps->cur.kind != T_FLOAT && !is_op(&ps->cur, "(") &&
        !is_op(&ps->cur, "-") && ps->cur.kind != T_IDENT) {
        *ps = save;
        return NULL;
    }
    if (ps->cur.kind == T_IDENT && !is_op(&ps->cur, "(")) {
        /* INTERVAL x DAY with a column x: x then a unit name */
        parser look = *ps;
        next(&look);
        if (look.cur.kind != T_IDENT) {
            *ps = save;
            return NULL;
        }
    }
    sql_node *amount = parse_unary(ps);
    if (!amount)
        return NULL;
    static const char *const units[] = {"SECOND", "MINUTE", "HOUR",    "DAY",
                                        "WEEK",   "MONTH",  "QUARTER", "YEAR"};
    static const char *const names[] = {"Second", "Minute", "Hour",    "Day",
                                        "Week",   "Month",  "Quarter", "Year"};
    int u = -1;
    for (int i = 0; i < 8 && u < 0; i++) {
        size_t ul = strlen(units[i]);
        if (ps->cur.kind == T_IDENT && (ps->cur.len == ul || ps->cur.len == ul + 1) &&
            strncasecmp(ps->cur.p, units[i], ul) == 0 &&
            (ps->cur.len == ul || ps->cur.p[ul] == 's' || ps->cur.p[ul] == 'S'))
            u = i;
    }
    if (u < 0) {
        sql_node_free(amount);
        fail_expected(ps, "a unit after INTERVAL n (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, "
                          "QUARTER or YEAR)");
        return NULL;
    }
    next(ps);
    sql_node *n = node_new(ps, SQL_FUNC, t.line, t.col);
    char name[32];
    snprintf(name, sizeof(name), "toInterval%s", names[u]);
    if (!n || !(n->s = strdup(name))) {
        sql_node_free(n);
        sql_node_free(amount);
        ps->rc = -ENOMEM;
        return NULL;
    }
    n->slen = strlen(n->s);
    if (!node_push(ps, n, amount)) {
        sql_node_free(n);
        return NULL;
    }
    return n;
}

static sql_node *parse_primary(parser *ps)
{
    tok t = ps->cur;
    if (ps->rc)
        return NULL;
    if (is_clause_kw(&t)) {
        fail_expected(ps, "an expression");
        return NULL;
    }
    if (t.kind == T_INT || t.kind == T_FLOAT) {
        next(ps);
        char buf[128];
        if (t.len >= sizeof(buf)) {
            fail(ps, t.line, t.col, "number '%.20s...' is too long", t.p);
            return NULL;
        }
        memcpy(buf, t.p, t.len);
        buf[t.len] = 0;
        if (t.kind == T_INT) {
            errno = 0;
            char *end;
            unsigned long long v = strtoull(buf, &end, 0);
            if (errno == ERANGE) {
                sql_node *n = node_new(ps, SQL_FLOAT, t.line, t.col);
                if (n)
                    n->d = strtod(buf, NULL);
                return n;
            }
            sql_node *n = node_new(ps, SQL_INT, t.line, t.col);
            if (n) {
                n->u = v;
                n->i = (int64_t)v;
            }
            return n;
        }
        sql_node *n = node_new(ps, SQL_FLOAT, t.line, t.col);
        if (n)
            n->d = strtod(buf, NULL);
        return n;
    }
    if (t.kind == T_STRING) {
        next(ps);
        sql_node *n = node_new(ps, SQL_STRING, t.line, t.col);
        if (n && !(n->s = unquote(&t, &n->slen))) {
            sql_node_free(n);
            ps->rc = -ENOMEM;
            return NULL;
        }
        return n;
    }
    if (is_op(&t, "(")) {
        next(ps);
        if (starts_query(&ps->cur))
            return parse_subquery_node(ps, &t);
        sql_node *e = parse_expr(ps);
        if (!e)
            return NULL;
        if (!expect_op(ps, ")")) {
            sql_node_free(e);
            return NULL;
        }
        return e;
    }
    if (is_op(&t, "*")) {
        next(ps);
        return node_new(ps, SQL_STAR, t.line, t.col);
    }
    if (is_op(&t, "["))
        return parse_array(ps);
    if (is_kw(&t, "COLUMNS"))
        return parse_columns_matcher(ps);
    if (is_kw(&t, "INTERVAL")) {
        sql_node *iv = parse_interval(ps);
        if (iv || ps->rc)
            return iv;
    }
    if (t.kind == T_IDENT && (is_kw(&t, "NULL"))) {
        next(ps);
        return node_new(ps, SQL_NULL, t.line, t.col);
    }
    if (t.kind == T_IDENT && (is_kw(&t, "TRUE") || is_kw(&t, "FALSE"))) {
        next(ps);
        sql_node *n = node_new(ps, SQL_BOOL, t.line, t.col);
        if (n)
            n->i = is_kw(&t, "TRUE");
        return n;
    }
    if (is_kw(&t, "CASE")) {
        next(ps);
        sql_node *n = node_new(ps, SQL_CASE, t.line, t.col);
        if (!n)
            return NULL;
        if (!is_kw(&ps->cur, "WHEN")) {
            n->has_operand = true;
            if (!node_push(ps, n, parse_expr(ps)))
                goto case_fail;
        }
        int whens = 0;
        while (accept_kw(ps, "WHEN")) {
            if (!node_push(ps, n, parse_expr(ps)) || !expect_kw(ps, "THEN") ||
                !node_push(ps, n, parse_expr(ps)))
                goto case_fail;
            whens++;
        }
        if (!whens) {
            fail_expected(ps, "WHEN");
            goto case_fail;
        }
        if (accept_kw(ps, "ELSE")) {
            n->has_else = true;
            if (!node_push(ps, n, parse_expr(ps)))
                goto case_fail;
        }
        if (!expect_kw(ps, "END"))
            goto case_fail;
        return n;
    case_fail:
        sql_node_free(n);
        return NULL;
    }
    if (is_kw(&t, "CAST")) {
        tok save = t;
        next(ps);
        if (is_op(&ps->cur, "(")) {
            next(ps);
            sql_node *n = node_new(ps, SQL_CAST, save.line, save.col);
            if (!n || !node_push(ps, n, parse_expr(ps))) {
                sql_node_free(n);
                return NULL;
            }
            if (accept_kw(ps, "AS")) {
                /* a type: Name or Name(args) */
                if (ps->cur.kind != T_IDENT) {
                    fail_expected(ps, "a type name");
                    sql_node_free(n);
                    return NULL;
                }
                const char *start = ps->cur.p;
                next(ps);
                if (accept_op(ps, "(")) {
                    int d = 1;
                    while (d > 0 && ps->cur.kind != T_EOF && !ps->rc) {
                        if (is_op(&ps->cur, "("))
                            d++;
                        if (is_op(&ps->cur, ")"))
                            d--;
                        next(ps);
                    }
                }
                const char *end = ps->cur.p;
                while (end > start && isspace((unsigned char)end[-1]))
                    end--;
                n->s = strndup(start, (size_t)(end - start));
                n->slen = n->s ? strlen(n->s) : 0;
            } else if (accept_op(ps, ",")) {
                if (ps->cur.kind != T_STRING) {
                    fail_expected(ps, "a type name as a string");
                    sql_node_free(n);
                    return NULL;
                }
                n->s = unquote(&ps->cur, &n->slen);
                next(ps);
            } else {
                fail_expected(ps, "AS or ','");
                sql_node_free(n);
                return NULL;
            }
            if (!n->s || !expect_op(ps, ")")) {
                sql_node_free(n);
                return NULL;
            }
            return n;
        }
        /* a column named cast */
        sql_node *n = node_new(ps, SQL_COLUMN, save.line, save.col);
        if (n && !(n->s = tokdup(&save))) {
            sql_node_free(n);
            return NULL;
        }
        if (n)
            n->slen = strlen(n->s);
        return n;
    }
    if (t.kind == T_IDENT || t.kind == T_QIDENT) {
        next(ps);
        if (t.kind == T_IDENT && is_op(&ps->cur, "(")) {
            next(ps);
            sql_node *n = node_new(ps, SQL_FUNC, t.line, t.col);
            if (!n || !(n->s = tokdup(&t))) {
                sql_node_free(n);
                return NULL;
            }
            n->slen = strlen(n->s);
            if (!parse_call(ps, n)) {
                sql_node_free(n);
                return NULL;
            }
            if (is_kw(&ps->cur, "OVER") && !parse_over(ps, n)) {
                sql_node_free(n);
                return NULL;
            }
            return n;
        }
        sql_node *n = node_new(ps, SQL_COLUMN, t.line, t.col);
        if (!n || !(n->s = tokdup(&t))) {
            sql_node_free(n);
            return NULL;
        }
        n->slen = strlen(n->s);
        if (accept_op(ps, ".")) {
            /* table.column: the column, qualified */
            if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
                fail_expected(ps, "a column name after '.'");
                sql_node_free(n);
                return NULL;
            }
            n->qual = n->s;
            n->s = tokdup(&ps->cur);
            n->slen = n->s ? strlen(n->s) : 0;
            next(ps);
        }
        return n;
    }
    if (t.kind == T_ERR)
        return NULL;
    fail_expected(ps, "an expression");
    return NULL;
}

static sql_node *parse_cast_postfix(parser *ps)
{
    sql_node *e = parse_primary(ps);
    while (e && (is_op(&ps->cur, "::") || is_op(&ps->cur, "["))) {
        tok t = ps->cur;
        next(ps);
        if (is_op(&t, "[")) {
            /* arr[i]: arrayElement(arr, i) */
            sql_node *f = node_new(ps, SQL_FUNC, t.line, t.col);
            if (!f || !(f->s = strdup("arrayElement"))) {
                if (f)
                    ps->rc = -ENOMEM;
                sql_node_free(f);
                sql_node_free(e);
                return NULL;
            }
            f->slen = strlen(f->s);
            if (!node_push(ps, f, e) || !node_push(ps, f, parse_expr(ps)) ||
                !expect_op(ps, "]")) {
                sql_node_free(f);
                return NULL;
            }
            e = f;
            continue;
        }
        if (ps->cur.kind != T_IDENT) {
            fail_expected(ps, "a type name after '::'");
            sql_node_free(e);
            return NULL;
        }
        const char *start = ps->cur.p;
        next(ps);
        if (accept_op(ps, "(")) {
            int d = 1;
            while (d > 0 && ps->cur.kind != T_EOF && !ps->rc) {
                if (is_op(&ps->cur, "("))
                    d++;
                if (is_op(&ps->cur, ")"))
                    d--;
                next(ps);
            }
        }
        const char *end = ps->cur.p;
        while (end > start && isspace((unsigned char)end[-1]))
            end--;
        sql_node *c = node_new(ps, SQL_CAST, t.line, t.col);
        if (!c) {
            sql_node_free(e);
            return NULL;
        }
        c->s = strndup(start, (size_t)(end - start));
        c->slen = c->s ? strlen(c->s) : 0;
        if (!c->s || !node_push(ps, c, e)) {
            sql_node_free(c);
            return NULL;
        }
        e = c;
    }
    return e;
}

static sql_node *mk_binary(parser *ps, sql_op op, sql_node *l, sql_node *r, int line, int col)
{
    if (!l || !r) {
        sql_node_free(l);
        sql_node_free(r);
        return NULL;
    }
    sql_node *n = node_new(ps, SQL_BINARY, line, col);
    if (!n) {
        sql_node_free(l);
        sql_node_free(r);
        return NULL;
    }
    n->op = op;
    n->args = malloc(2 * sizeof(*n->args));
    if (!n->args) {
        sql_node_free(l);
        sql_node_free(r);
        free(n);
        return NULL;
    }
    n->args[0] = l;
    n->args[1] = r;
    n->nargs = 2;
    return n;
}

static sql_node *parse_unary(parser *ps)
{
    if (++ps->depth > SQL_MAX_DEPTH) {
        fail(ps, ps->cur.line, ps->cur.col, "expression nested too deeply (more than %d levels)",
             SQL_MAX_DEPTH);
        return NULL;
    }
    sql_node *r;
    if (is_op(&ps->cur, "-") || is_op(&ps->cur, "+")) {
        tok t = ps->cur;
        next(ps);
        sql_node *e = parse_unary(ps);
        if (!e || is_op(&t, "+")) {
            r = e;
        } else if (e->kind == SQL_INT && e->u <= (uint64_t)INT64_MAX + 1) {
            e->i = (int64_t)(0 - e->u);
            e->u = (uint64_t)e->i;
            e->negated = true; /* a negative literal */
            e->line = t.line;
            e->col = t.col;
            r = e;
        } else if (e->kind == SQL_FLOAT) {
            e->d = -e->d;
            e->line = t.line;
            e->col = t.col;
            r = e;
        } else {
            r = node_new(ps, SQL_UNARY, t.line, t.col);
            if (r) {
                r->op = SQL_OP_NEG;
                if (!node_push(ps, r, e)) {
                    sql_node_free(r);
                    r = NULL;
                }
            } else {
                sql_node_free(e);
            }
        }
    } else {
        r = parse_cast_postfix(ps);
    }
    ps->depth--;
    return r;
}

static sql_node *parse_mul(parser *ps)
{
    sql_node *l = parse_unary(ps);
    for (;;) {
        sql_op op;
        if (is_op(&ps->cur, "*"))
            op = SQL_OP_MUL;
        else if (is_op(&ps->cur, "/"))
            op = SQL_OP_DIV;
        else if (is_op(&ps->cur, "%"))
            op = SQL_OP_MOD;
        else
            return l;
        if (!l)
            return NULL;
        tok t = ps->cur;
        next(ps);
        l = mk_binary(ps, op, l, parse_unary(ps), t.line, t.col);
    }
}

static sql_node *parse_add(parser *ps)
{
    sql_node *l = parse_mul(ps);
    for (;;) {
        sql_op op;
        if (is_op(&ps->cur, "+"))
            op = SQL_OP_ADD;
        else if (is_op(&ps->cur, "-"))
            op = SQL_OP_SUB;
        else
            return l;
        if (!l)
            return NULL;
        tok t = ps->cur;
        next(ps);
        l = mk_binary(ps, op, l, parse_mul(ps), t.line, t.col);
    }
}

static sql_node *parse_concat(parser *ps)
{
    sql_node *l = parse_add(ps);
    while (l && is_op(&ps->cur, "||")) {
        tok t = ps->cur;
        next(ps);
        l = mk_binary(ps, SQL_OP_CONCAT, l, parse_add(ps), t.line, t.col);
    }
    return l;
}

/* The list of IN: (a, b, ...), [a, b, ...] or (SELECT ...) (a subquery node,
 * placed at the IN keyword at). */
static bool parse_in_list(parser *ps, sql_node *n, const tok *at)
{
    const char *close = ")";
    if (accept_op(ps, "["))
        close = "]";
    else if (!expect_op(ps, "("))
        return false;
    else if (starts_query(&ps->cur))
        return node_push(ps, n, parse_subquery_node(ps, at));
    if (!is_op(&ps->cur, close)) {
        do {
            if (!node_push(ps, n, parse_expr(ps)))
                return false;
        } while (accept_op(ps, ","));
    }
    return expect_op(ps, close);
}

static sql_node *parse_cmp(parser *ps)
{
    sql_node *l = parse_concat(ps);
    while (l && !ps->rc) {
        tok t = ps->cur;
        static const struct {
            const char *s;
            sql_op op;
        } cmps[] = {
            {"=", SQL_OP_EQ}, {"==", SQL_OP_EQ}, {"!=", SQL_OP_NE}, {"<>", SQL_OP_NE},
            {"<", SQL_OP_LT}, {"<=", SQL_OP_LE}, {">", SQL_OP_GT},  {">=", SQL_OP_GE},
        };
        sql_op op = SQL_OP_NONE;
        for (size_t i = 0; i < sizeof(cmps) / sizeof(cmps[0]); i++)
            if (is_op(&t, cmps[i].s))
                op = cmps[i].op;
        if (op) {
            next(ps);
            l = mk_binary(ps, op, l, parse_concat(ps), t.line, t.col);
            continue;
        }
        if (is_kw(&t, "IS")) {
            next(ps);
            sql_node *n = node_new(ps, SQL_IS_NULL, t.line, t.col);
            if (!n) {
                sql_node_free(l);
                return NULL;
            }
            n->negated = accept_kw(ps, "NOT");
            if (!expect_kw(ps, "NULL") || !node_push(ps, n, l)) {
                if (n->nargs == 0)
                    sql_node_free(l);
                sql_node_free(n);
                return NULL;
            }
            l = n;
            continue;
        }
        bool neg = false;
        if (is_kw(&t, "NOT")) {
            /* NOT LIKE / NOT ILIKE / NOT IN / NOT BETWEEN */
            parser save = *ps;
            next(ps);
            if (!is_kw(&ps->cur, "LIKE") && !is_kw(&ps->cur, "ILIKE") && !is_kw(&ps->cur, "IN") &&
                !is_kw(&ps->cur, "BETWEEN")) {
                *ps = save;
                return l;
            }
            neg = true;
        }
        tok k = ps->cur;
        if (is_kw(&k, "LIKE") || is_kw(&k, "ILIKE")) {
            next(ps);
            sql_node *n = node_new(ps, SQL_LIKE, t.line, t.col);
            if (!n) {
                sql_node_free(l);
                return NULL;
            }
            n->negated = neg;
            n->op = is_kw(&k, "LIKE") ? SQL_OP_LIKE : SQL_OP_ILIKE;
            node_push(ps, n, l);
            if (!node_push(ps, n, parse_concat(ps))) {
                sql_node_free(n);
                return NULL;
            }
            l = n;
            continue;
        }
        if (is_kw(&k, "IN")) {
            next(ps);
            sql_node *n = node_new(ps, SQL_IN, t.line, t.col);
            if (!n) {
                sql_node_free(l);
                return NULL;
            }
            n->negated = neg;
            node_push(ps, n, l);
            if (!parse_in_list(ps, n, &k)) {
                sql_node_free(n);
                return NULL;
            }
            l = n;
            continue;
        }
        if (is_kw(&k, "BETWEEN")) {
            next(ps);
            sql_node *n = node_new(ps, SQL_BETWEEN, t.line, t.col);
            if (!n) {
                sql_node_free(l);
                return NULL;
            }
            n->negated = neg;
            node_push(ps, n, l);
            if (!node_push(ps, n, parse_concat(ps)) || !expect_kw(ps, "AND") ||
                !node_push(ps, n, parse_concat(ps))) {
                sql_node_free(n);
                return NULL;
            }
            l = n;
            continue;
        }
        return l;
    }
    return l;
}

static sql_node *parse_not(parser *ps)
{
    if (is_kw(&ps->cur, "NOT")) {
        if (++ps->depth > SQL_MAX_DEPTH) {
            fail(ps, ps->cur.line, ps->cur.col,
                 "expression nested too deeply (more than %d levels)", SQL_MAX_DEPTH);
            return NULL;
        }
        tok t = ps->cur;
        next(ps);
        sql_node *e = parse_not(ps);
        ps->depth--;
        if (!e)
            return NULL;
        sql_node *n = node_new(ps, SQL_UNARY, t.line, t.col);
        if (!n) {
            sql_node_free(e);
            return NULL;
        }
        n->op = SQL_OP_NOT;
        node_push(ps, n, e);
        return n;
    }
    return parse_cmp(ps);
}

static sql_node *parse_and(parser *ps)
{
    sql_node *l = parse_not(ps);
    while (l && is_kw(&ps->cur, "AND")) {
        tok t = ps->cur;
        next(ps);
        l = mk_binary(ps, SQL_OP_AND, l, parse_not(ps), t.line, t.col);
    }
    return l;
}

static sql_node *parse_expr(parser *ps)
{
    if (ps->rc)
        return NULL;
    if (++ps->depth > SQL_MAX_DEPTH) {
        fail(ps, ps->cur.line, ps->cur.col, "expression nested too deeply (more than %d levels)",
             SQL_MAX_DEPTH);
        return NULL;
    }
    sql_node *l = parse_and(ps);
    while (l && is_kw(&ps->cur, "OR")) {
        tok t = ps->cur;
        next(ps);
        l = mk_binary(ps, SQL_OP_OR, l, parse_and(ps), t.line, t.col);
    }
    ps->depth--;
    if (!l && !ps->rc)
        fail_expected(ps, "an expression");
    return l;
}

/* ---- statements ----------------------------------------------------------- */

static void table_stmt_free(sql_stmt *s);
static void compose_free(sql_stmt *s);

static void select_item_clear(sql_select_item *it)
{
    sql_node_free(it->expr);
    free(it->alias);
    for (int i = 0; i < it->n_except; i++)
        free(it->except[i]);
    free(it->except);
    for (int i = 0; i < it->n_replace; i++)
        select_item_clear(&it->replace[i]);
    free(it->replace);
}

void sql_stmt_destroy(sql_stmt **sp)
{
    if (!sp || !*sp)
        return;
    sql_stmt *s = *sp;
    for (int i = 0; i < s->n_items; i++)
        select_item_clear(&s->items[i]);
    free(s->items);
    free(s->from_fn);
    for (int i = 0; i < s->n_from_args; i++)
        sql_node_free(s->from_args[i]);
    free(s->from_args);
    sql_node_free(s->where);
    for (int i = 0; i < s->n_group_by; i++)
        sql_node_free(s->group_by[i]);
    free(s->group_by);
    sql_node_free(s->having);
    for (int i = 0; i < s->n_limit_by; i++)
        sql_node_free(s->limit_by[i]);
    free(s->limit_by);
    for (int i = 0; i < s->n_order_by; i++)
        sql_node_free(s->order_by[i].expr);
    free(s->order_by);
    for (int i = 0; i < s->n_settings; i++) {
        free(s->settings[i].name);
        sql_node_free(s->settings[i].value);
    }
    free(s->settings);
    free(s->format);
    free(s->outfile);
    table_stmt_free(s);
    compose_free(s);
    free(s);
    *sp = NULL;
}

static bool grow(parser *ps, void **arr, int n, size_t size)
{
    void *a = realloc(*arr, size * (size_t)(n + 1));
    if (!a) {
        if (!ps->rc)
            ps->rc = -ENOMEM;
        return false;
    }
    *arr = a;
    return true;
}

static bool is_clause_kw(const tok *t)
{
    static const char *kws[] = {"FROM",   "WHERE",  "GROUP", "HAVING", "ORDER", "LIMIT", "SETTINGS",
                                "FORMAT", "OFFSET", "UNION", "ASC",    "DESC",  "INTO"};
    for (size_t i = 0; i < sizeof(kws) / sizeof(kws[0]); i++)
        if (is_kw(t, kws[i]))
            return true;
    return false;
}

static bool parse_table_ref(parser *ps, sql_stmt *s, const tok *first);
static sql_stmt *parse_table_stmt(parser *ps, sql_stmt *s);
static bool parse_from_subquery(parser *ps, sql_stmt *s);
static bool parse_from_alias(parser *ps, sql_stmt *s);
static bool parse_with(parser *ps, sql_stmt *s);
static bool parse_joins(parser *ps, sql_stmt *s);
static bool parse_union(parser *ps, sql_stmt *s);
static bool parse_settings(parser *ps, sql_setting **out, int *n);
static bool parse_into_outfile(parser *ps, sql_stmt *s);

static bool parse_from(parser *ps, sql_stmt *s)
{
    if (is_op(&ps->cur, "("))
        return parse_from_subquery(ps, s);
    if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
        fail_expected(ps, "a table or a table function such as "
                          "s3('s3://bucket/*.parquet') or file('data/*.csv')");
        return false;
    }
    tok t = ps->cur;
    next(ps);
    if (!is_op(&ps->cur, "("))
        return parse_table_ref(ps, s, &t);
    next(ps);
    s->from_fn = strndup(t.p, t.len);
    s->from_line = t.line;
    s->from_col = t.col;
    if (!s->from_fn) {
        ps->rc = -ENOMEM;
        return false;
    }
    if (!is_op(&ps->cur, ")")) {
        do {
            sql_node *a = parse_expr(ps);
            if (!a || !grow(ps, (void **)&s->from_args, s->n_from_args, sizeof(sql_node *))) {
                sql_node_free(a);
                return false;
            }
            s->from_args[s->n_from_args++] = a;
        } while (accept_op(ps, ","));
    }
    if (!expect_op(ps, ")"))
        return false;
    return parse_from_alias(ps, s);
}

static bool parse_int_literal(parser *ps, int64_t *out, const char *what)
{
    if (ps->cur.kind != T_INT) {
        fail_expected(ps, what);
        return false;
    }
    char buf[64];
    size_t n = ps->cur.len < sizeof(buf) - 1 ? ps->cur.len : sizeof(buf) - 1;
    memcpy(buf, ps->cur.p, n);
    buf[n] = 0;
    errno = 0;
    unsigned long long v = strtoull(buf, NULL, 0);
    if (errno || v > (unsigned long long)INT64_MAX) {
        fail(ps, ps->cur.line, ps->cur.col, "%s %s is too large", what, buf);
        return false;
    }
    *out = (int64_t)v;
    next(ps);
    return true;
}

static bool parse_explain(parser *ps, sql_stmt *s);

/* LIMIT [m,] n [OFFSET m] BY exprs, when the LIMIT at the cursor has a BY;
 * otherwise nothing is consumed. */
static bool parse_limit_by(parser *ps, sql_stmt *s)
{
    parser save = *ps;
    next(ps);
    int64_t a, b = -1;
    bool by = false;
    if (ps->cur.kind == T_INT && parse_int_literal(ps, &a, "a row count after LIMIT")) {
        if (accept_op(ps, ",")) {
            if (ps->cur.kind == T_INT && parse_int_literal(ps, &b, "a row count after LIMIT m,"))
                by = is_kw(&ps->cur, "BY");
        } else if (accept_kw(ps, "OFFSET")) {
            if (ps->cur.kind == T_INT && parse_int_literal(ps, &b, "a row count after OFFSET")) {
                int64_t t = a;
                a = b;
                b = t; /* a: the offset, b: the count */
                by = is_kw(&ps->cur, "BY");
            }
        } else {
            by = is_kw(&ps->cur, "BY");
        }
    }
    if (!by || ps->rc) {
        *ps = save;
        return true;
    }
    next(ps);
    s->limit_by_n = b < 0 ? a : b;
    s->limit_by_offset = b < 0 ? 0 : a;
    do {
        if (!grow(ps, (void **)&s->limit_by, s->n_limit_by, sizeof(sql_node *)))
            return false;
        sql_node *e = parse_expr(ps);
        if (!e)
            return false;
        s->limit_by[s->n_limit_by++] = e;
    } while (accept_op(ps, ","));
    return true;
}

/* After * or COLUMNS('re'): EXCEPT [(] a, b [)] and REPLACE [(] expr AS c, ... [)],
 * in any order. */
static bool parse_star_modifiers(parser *ps, sql_select_item *it)
{
    for (;;) {
        if (accept_kw(ps, "EXCEPT")) {
            bool paren = accept_op(ps, "(");
            do {
                if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
                    fail_expected(ps, "a column name after EXCEPT");
                    return false;
                }
                if (!grow(ps, (void **)&it->except, it->n_except, sizeof(char *)))
                    return false;
                if (!(it->except[it->n_except] = tokdup(&ps->cur))) {
                    ps->rc = -ENOMEM;
                    return false;
                }
                it->n_except++;
                next(ps);
            } while (paren && accept_op(ps, ","));
            if (paren && !expect_op(ps, ")"))
                return false;
        } else if (accept_kw(ps, "REPLACE")) {
            bool paren = accept_op(ps, "(");
            do {
                if (!grow(ps, (void **)&it->replace, it->n_replace, sizeof(sql_select_item)))
                    return false;
                sql_select_item *r = &it->replace[it->n_replace];
                memset(r, 0, sizeof(*r));
                it->n_replace++;
                if (!(r->expr = parse_expr(ps)) || !expect_kw(ps, "AS"))
                    return false;
                if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
                    fail_expected(ps, "the name of the column REPLACE replaces");
                    return false;
                }
                if (!(r->alias = tokdup(&ps->cur))) {
                    ps->rc = -ENOMEM;
                    return false;
                }
                next(ps);
            } while (paren && accept_op(ps, ","));
            if (paren && !expect_op(ps, ")"))
                return false;
        } else {
            return true;
        }
    }
}

static sql_stmt *parse_stmt(parser *ps)
{
    sql_stmt *s = calloc(1, sizeof(*s));
    if (!s) {
        ps->rc = -ENOMEM;
        return NULL;
    }
    s->line = ps->cur.line;
    s->col = ps->cur.col;
    if (is_kw(&ps->cur, "CREATE") || is_kw(&ps->cur, "DROP") || is_kw(&ps->cur, "TRUNCATE") ||
        is_kw(&ps->cur, "OPTIMIZE") || is_kw(&ps->cur, "INSERT") || is_kw(&ps->cur, "SHOW"))
        return parse_table_stmt(ps, s);
    if (accept_kw(ps, "DESCRIBE") || accept_kw(ps, "DESC")) {
        s->kind = SQL_DESCRIBE;
        accept_kw(ps, "TABLE");
        if (!parse_from(ps, s))
            goto fail;
        goto tail;
    }
    if (is_kw(&ps->cur, "EXPLAIN") && !parse_explain(ps, s))
        goto fail;
    if (is_kw(&ps->cur, "WITH") && !parse_with(ps, s))
        goto fail;
    if (!accept_kw(ps, "SELECT")) {
        fail_expected(ps, "SELECT, INSERT, CREATE TABLE, DESCRIBE or another statement");
        goto fail;
    }
    s->kind = SQL_SELECT;
    if (accept_kw(ps, "DISTINCT"))
        s->distinct = true;
    else
        accept_kw(ps, "ALL");
    do {
        if (!grow(ps, (void **)&s->items, s->n_items, sizeof(sql_select_item)))
            goto fail;
        sql_select_item *it = &s->items[s->n_items];
        memset(it, 0, sizeof(*it));
        it->expr = parse_expr(ps);
        if (!it->expr)
            goto fail;
        s->n_items++;
        if ((it->expr->kind == SQL_STAR || it->expr->kind == SQL_COLUMNS) &&
            !parse_star_modifiers(ps, it))
            goto fail;
        if (accept_kw(ps, "AS")) {
            if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
                fail_expected(ps, "an alias after AS");
                goto fail;
            }
            it->alias = tokdup(&ps->cur);
            next(ps);
        } else if ((ps->cur.kind == T_IDENT && !is_clause_kw(&ps->cur)) ||
                   ps->cur.kind == T_QIDENT) {
            it->alias = tokdup(&ps->cur);
            next(ps);
        }
    } while (accept_op(ps, ","));
    /* without FROM: ClickHouse's system.one, one row */
    if (accept_kw(ps, "FROM") && (!parse_from(ps, s) || !parse_joins(ps, s)))
        goto fail;
    if (accept_kw(ps, "WHERE") && !(s->where = parse_expr(ps)))
        goto fail;
    if (accept_kw(ps, "GROUP")) {
        if (!expect_kw(ps, "BY"))
            goto fail;
        do {
            if (!grow(ps, (void **)&s->group_by, s->n_group_by, sizeof(sql_node *)))
                goto fail;
            sql_node *e = parse_expr(ps);
            if (!e)
                goto fail;
            s->group_by[s->n_group_by++] = e;
        } while (accept_op(ps, ","));
    }
    if (accept_kw(ps, "HAVING") && !(s->having = parse_expr(ps)))
        goto fail;
    if (accept_kw(ps, "ORDER")) {
        if (!expect_kw(ps, "BY"))
            goto fail;
        do {
            if (!grow(ps, (void **)&s->order_by, s->n_order_by, sizeof(sql_order_item)))
                goto fail;
            sql_order_item *o = &s->order_by[s->n_order_by];
            memset(o, 0, sizeof(*o));
            o->expr = parse_expr(ps);
            if (!o->expr)
                goto fail;
            s->n_order_by++;
            if (accept_kw(ps, "DESC") || accept_kw(ps, "DESCENDING"))
                o->desc = true;
            else if (!accept_kw(ps, "ASC"))
                accept_kw(ps, "ASCENDING");
            if (accept_kw(ps, "NULLS")) {
                if (accept_kw(ps, "FIRST"))
                    o->nulls = 1;
                else if (accept_kw(ps, "LAST"))
                    o->nulls = 2;
                else {
                    fail_expected(ps, "FIRST or LAST after NULLS");
                    goto fail;
                }
            }
        } while (accept_op(ps, ","));
    }
    if (is_kw(&ps->cur, "LIMIT") && !parse_limit_by(ps, s))
        goto fail;
    if (accept_kw(ps, "LIMIT")) {
        s->has_limit = true;
        int64_t a;
        if (!parse_int_literal(ps, &a, "a row count after LIMIT"))
            goto fail;
        s->limit = a;
        if (accept_op(ps, ",")) {
            /* LIMIT offset, count */
            s->offset = a;
            if (!parse_int_literal(ps, &s->limit, "a row count after LIMIT m,"))
                goto fail;
        } else if (accept_kw(ps, "OFFSET")) {
            if (!parse_int_literal(ps, &s->offset, "a row count after OFFSET"))
                goto fail;
        }
    } else if (accept_kw(ps, "OFFSET")) {
        if (!parse_int_literal(ps, &s->offset, "a row count after OFFSET"))
            goto fail;
        accept_kw(ps, "ROWS");
        s->limit = INT64_MAX;
        s->has_limit = true;
    }
    if (is_kw(&ps->cur, "UNION") && !parse_union(ps, s))
        goto fail;
tail:
    if (!parse_into_outfile(ps, s))
        goto fail;
    if (accept_kw(ps, "SETTINGS") && !parse_settings(ps, &s->settings, &s->n_settings))
        goto fail;
    if (!s->outfile && !parse_into_outfile(ps, s))
        goto fail;
    if (accept_kw(ps, "FORMAT")) {
        if (ps->cur.kind != T_IDENT) {
            fail_expected(ps, "a format name");
            goto fail;
        }
        s->format = tokdup(&ps->cur);
        next(ps);
        /* ClickHouse also takes SETTINGS after FORMAT ("FORMAT Null SETTINGS
         * max_threads = 1"): both lists apply */
        if (accept_kw(ps, "SETTINGS") && !parse_settings(ps, &s->settings, &s->n_settings))
            goto fail;
    }
    if (ps->rc)
        goto fail;
    return s;
fail:
    sql_stmt_destroy(&s);
    return NULL;
}

void sql_script_free(sql_stmt ***stmts, int n)
{
    if (!stmts || !*stmts)
        return;
    for (int i = 0; i < n; i++)
        sql_stmt_destroy(&(*stmts)[i]);
    free(*stmts);
    *stmts = NULL;
}

int sql_parse_script(const char *text, size_t len, sql_stmt ***out, char *err, size_t errlen)
{
    parser ps = {.text = text, .len = len, .line = 1, .col = 1, .err = err, .errlen = errlen};
    *out = NULL;
    if (err && errlen)
        err[0] = 0;
    sql_stmt **arr = NULL;
    int n = 0;
    next(&ps);
    for (;;) {
        while (accept_op(&ps, ";"))
            ;
        if (ps.rc)
            break;
        if (ps.cur.kind == T_EOF)
            break;
        sql_stmt *s = parse_stmt(&ps);
        if (!s)
            break;
        sql_stmt **a = realloc(arr, sizeof(*a) * (size_t)(n + 1));
        if (!a) {
            sql_stmt_destroy(&s);
            ps.rc = -ENOMEM;
            break;
        }
        arr = a;
        arr[n++] = s;
        if (ps.cur.kind == T_EOF)
            break;
        if (!is_op(&ps.cur, ";")) {
            fail_expected(&ps, "';' or the end of the query");
            break;
        }
    }
    if (ps.rc) {
        if (ps.rc == -ENOMEM && err && errlen && !err[0])
            snprintf(err, errlen, "out of memory while parsing the query");
        sql_script_free(&arr, n);
        return ps.rc;
    }
    *out = arr;
    return n;
}

int sql_parse(const char *text, size_t len, sql_stmt **out, char *err, size_t errlen)
{
    sql_stmt **arr;
    *out = NULL;
    int n = sql_parse_script(text, len, &arr, err, errlen);
    if (n < 0)
        return n;
    if (n != 1) {
        if (err && errlen)
            snprintf(err, errlen,
                     n == 0 ? "line 1, column 1: the query is empty"
                            : "line 1, column 1: expected one statement, found %d",
                     n);
        sql_script_free(&arr, n);
        return -EINVAL;
    }
    *out = arr[0];
    free(arr);
    return 0;
}

/* ---- names ---------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t cap, len;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++, b->len++)
        if (b->len + 1 < b->cap)
            b->p[b->len] = s[i];
}

static void sb_str(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static const char *op_fn(sql_op op)
{
    switch (op) {
    case SQL_OP_ADD: return "plus";
    case SQL_OP_SUB: return "minus";
    case SQL_OP_MUL: return "multiply";
    case SQL_OP_DIV: return "divide";
    case SQL_OP_MOD: return "modulo";
    case SQL_OP_EQ: return "equals";
    case SQL_OP_NE: return "notEquals";
    case SQL_OP_LT: return "less";
    case SQL_OP_LE: return "lessOrEquals";
    case SQL_OP_GT: return "greater";
    case SQL_OP_GE: return "greaterOrEquals";
    case SQL_OP_AND: return "and";
    case SQL_OP_OR: return "or";
    case SQL_OP_NOT: return "not";
    case SQL_OP_NEG: return "negate";
    case SQL_OP_CONCAT: return "concat";
    case SQL_OP_LIKE: return "like";
    case SQL_OP_ILIKE: return "ilike";
    default: return "?";
    }
}

static void name_rec(const sql_node *n, sbuf *b, int depth)
{
    char tmp[64];
    if (depth > SQL_MAX_DEPTH + 8) {
        sb_str(b, "...");
        return;
    }
    switch (n->kind) {
    case SQL_NULL: sb_str(b, "NULL"); return;
    case SQL_BOOL: sb_str(b, n->i ? "true" : "false"); return;
    case SQL_INT:
        if (n->negated)
            snprintf(tmp, sizeof(tmp), "%lld", (long long)n->i);
        else
            snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)n->u);
        sb_str(b, tmp);
        return;
    case SQL_FLOAT:
        snprintf(tmp, sizeof(tmp), "%.17g", n->d);
        for (int p = 15; p <= 17; p++) {
            snprintf(tmp, sizeof(tmp), "%.*g", p, n->d);
            if (strtod(tmp, NULL) == n->d)
                break;
        }
        sb_str(b, tmp);
        return;
    case SQL_STRING:
        sb_str(b, "'");
        for (size_t i = 0; i < n->slen; i++) {
            char c = n->s[i];
            if (c == '\'' || c == '\\')
                sb_put(b, "\\", 1);
            sb_put(b, &c, 1);
        }
        sb_str(b, "'");
        return;
    case SQL_COLUMN: sb_put(b, n->s, n->slen); return;
    case SQL_STAR: sb_str(b, "*"); return;
    case SQL_COLUMNS:
        sb_str(b, "COLUMNS('");
        sb_put(b, n->s, n->slen);
        sb_str(b, "')");
        return;
    case SQL_ARRAY:
        sb_str(b, "[");
        for (int i = 0; i < n->nargs; i++) {
            if (i)
                sb_str(b, ", ");
            name_rec(n->args[i], b, depth + 1);
        }
        sb_str(b, "]");
        return;
    case SQL_FUNC:
        sb_put(b, n->s, n->slen);
        if (n->nparams) {
            sb_str(b, "(");
            for (int i = 0; i < n->nparams; i++) {
                if (i)
                    sb_str(b, ", ");
                name_rec(n->params[i], b, depth + 1);
            }
            sb_str(b, ")");
        }
        if (n->win) {
            sb_str(b, "(");
            for (int i = 0; i < n->nargs; i++) {
                if (i)
                    sb_str(b, ", ");
                name_rec(n->args[i], b, depth + 1);
            }
            sb_str(b, ") OVER (");
            const sql_window *w = n->win;
            if (w->n_partition)
                sb_str(b, "PARTITION BY ");
            for (int i = 0; i < w->n_partition; i++) {
                if (i)
                    sb_str(b, ", ");
                name_rec(w->partition[i], b, depth + 1);
            }
            if (w->n_order)
                sb_str(b, w->n_partition ? " ORDER BY " : "ORDER BY ");
            for (int i = 0; i < w->n_order; i++) {
                if (i)
                    sb_str(b, ", ");
                name_rec(w->order[i].expr, b, depth + 1);
                sb_str(b, w->order[i].desc ? " DESC" : " ASC");
            }
            sb_str(b, ")");
            return;
        }
        break;
    case SQL_UNARY:
    case SQL_BINARY: sb_str(b, op_fn(n->op)); break;
    case SQL_IN: sb_str(b, n->negated ? "notIn" : "in"); break;
    case SQL_LIKE:
        sb_str(b, n->op == SQL_OP_LIKE ? (n->negated ? "notLike" : "like")
                                       : (n->negated ? "notILike" : "ilike"));
        break;
    case SQL_IS_NULL: sb_str(b, n->negated ? "isNotNull" : "isNull"); break;
    case SQL_CASE: sb_str(b, n->has_operand ? "caseWithExpression" : "multiIf"); break;
    case SQL_CAST:
        sb_str(b, "CAST(");
        name_rec(n->args[0], b, depth + 1);
        sb_str(b, ", '");
        sb_put(b, n->s, n->slen);
        sb_str(b, "')");
        return;
    case SQL_BETWEEN: sb_str(b, n->negated ? "notBetween" : "between"); break;
    case SQL_SUBQUERY: sb_str(b, "_subquery"); return;
    }
    sb_str(b, "(");
    if (n->kind == SQL_IN) {
        name_rec(n->args[0], b, depth + 1);
        sb_str(b, ", (");
        for (int i = 1; i < n->nargs; i++) {
            if (i > 1)
                sb_str(b, ", ");
            name_rec(n->args[i], b, depth + 1);
        }
        sb_str(b, "))");
        return;
    }
    for (int i = 0; i < n->nargs; i++) {
        if (i)
            sb_str(b, ", ");
        name_rec(n->args[i], b, depth + 1);
    }
    sb_str(b, ")");
}

size_t sql_node_name(const sql_node *n, char *buf, size_t cap)
{
    sbuf b = {buf, cap, 0};
    name_rec(n, &b, 0);
    if (cap) {
        if (b.len < cap) {
            buf[b.len] = 0;
        } else {
            buf[cap - 1] = 0;
            if (cap > 4)
                memcpy(buf + cap - 4, "...", 3);
        }
    }
    return b.len;
}

/* ---- table statements ------------------------------------------------------ */

/* [db.]name after the first token (already consumed). */
static bool table_name_from(parser *ps, const tok *first, char **db, char **name, int *line,
                            int *col)
{
    *line = first->line;
    *col = first->col;
    char *a = tokdup(first);
    if (!a) {
        ps->rc = -ENOMEM;
        return false;
    }
    if (accept_op(ps, ".")) {
        if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
            free(a);
            fail_expected(ps, "a table name after '.'");
            return false;
        }
        *db = a;
        *name = tokdup(&ps->cur);
        next(ps);
    } else {
        *name = a;
    }
    if (!*name) {
        ps->rc = -ENOMEM;
        return false;
    }
    return true;
}

static bool table_name(parser *ps, sql_stmt *s)
{
    if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
        fail_expected(ps, "a table name");
        return false;
    }
    tok t = ps->cur;
    next(ps);
    return table_name_from(ps, &t, &s->table_db, &s->table, &s->table_line, &s->table_col);
}

/* FROM [db.]t [FINAL] [[AS] alias] */
static bool parse_table_ref(parser *ps, sql_stmt *s, const tok *first)
{
    if (!table_name_from(ps, first, &s->table_db, &s->table, &s->table_line, &s->table_col))
        return false;
    if (accept_kw(ps, "FINAL"))
        s->final = true;
    if (!parse_from_alias(ps, s))
        return false;
    if (s->from_alias && accept_kw(ps, "FINAL"))
        s->final = true;
    return true;
}

/* [INTO OUTFILE 'path' [AND STDOUT] [APPEND | TRUNCATE]] (ClickHouse's
 * order; COMPRESSION is refused by name). True when absent or parsed. */
static bool parse_into_outfile(parser *ps, sql_stmt *s)
{
    if (!is_kw(&ps->cur, "INTO"))
        return true;
    int line = ps->cur.line, col = ps->cur.col;
    next(ps);
    if (!accept_kw(ps, "OUTFILE")) {
        fail_expected(ps, "OUTFILE after INTO");
        return false;
    }
    if (ps->cur.kind != T_STRING) {
        fail_expected(ps, "the file name as a string after INTO OUTFILE");
        return false;
    }
    if (!(s->outfile = unquote(&ps->cur, NULL))) {
        ps->rc = -ENOMEM;
        return false;
    }
    s->outfile_line = line;
    s->outfile_col = col;
    next(ps);
    if (accept_kw(ps, "AND")) {
        if (!accept_kw(ps, "STDOUT")) {
            fail_expected(ps, "STDOUT after INTO OUTFILE '...' AND");
            return false;
        }
        s->outfile_stdout = true;
    }
    if (accept_kw(ps, "APPEND"))
        s->outfile_mode = SQL_OUTFILE_APPEND;
    else if (accept_kw(ps, "TRUNCATE"))
        s->outfile_mode = SQL_OUTFILE_TRUNCATE;
    if (is_kw(&ps->cur, "COMPRESSION")) {
        fail(ps, ps->cur.line, ps->cur.col,
             "INTO OUTFILE ... COMPRESSION is not supported: "
             "write the file plain and compress it afterwards");
        return false;
    }
    return true;
}

static bool parse_settings(parser *ps, sql_setting **out, int *n)
{
    do {
        if (ps->cur.kind != T_IDENT) {
            fail_expected(ps, "a setting name");
            return false;
        }
        if (!grow(ps, (void **)out, *n, sizeof(sql_setting)))
            return false;
        sql_setting *st = &(*out)[*n];
        memset(st, 0, sizeof(*st));
        st->line = ps->cur.line;
        st->col = ps->cur.col;
        st->name = tokdup(&ps->cur);
        (*n)++;
        if (!st->name) {
            ps->rc = -ENOMEM;
            return false;
        }
        next(ps);
        if (!expect_op(ps, "="))
            return false;
        st->value = parse_unary(ps);
        if (!st->value)
            return false;
    } while (accept_op(ps, ","));
    return true;
}

/* The text of a type or a codec as written, tokens joined ("Decimal(10, 2)"),
 * up to the matching ')' of an opening one. */
static char *type_text(parser *ps, const char *what)
{
    if (ps->cur.kind != T_IDENT) {
        fail_expected(ps, what);
        return NULL;
    }
    char buf[256];
    sbuf b = {buf, sizeof(buf), 0};
    int line = ps->cur.line, col = ps->cur.col;
    sb_put(&b, ps->cur.p, ps->cur.len);
    next(ps);
    if (is_op(&ps->cur, "(")) {
        int d = 0;
        do {
            if (ps->cur.kind == T_EOF || ps->rc) {
                fail_expected(ps, "')'");
                return NULL;
            }
            if (is_op(&ps->cur, "("))
                d++;
            else if (is_op(&ps->cur, ")"))
                d--;
            sb_put(&b, ps->cur.p, ps->cur.len);
            if (is_op(&ps->cur, ","))
                sb_put(&b, " ", 1);
            next(ps);
        } while (d > 0);
    }
    if (b.len + 1 >= b.cap) {
        fail(ps, line, col, "%s is longer than %zu bytes", what, b.cap - 2);
        return NULL;
    }
    buf[b.len] = 0;
    char *r = strdup(buf);
    if (!r)
        ps->rc = -ENOMEM;
    return r;
}

/* A key list: x | (a, b, ...) | tuple(); each element a column name or an
 * expression over columns (kept as its text, e.g. "toDate(d)"). */
static bool key_list(parser *ps, char ***out, int *n, const char *clause)
{
    (void)clause;
    bool paren = false;
    if (is_kw(&ps->cur, "tuple")) {
        next(ps);
        if (!expect_op(ps, "("))
            return false;
        paren = true;
    } else if (accept_op(ps, "(")) {
        paren = true;
    }
    if (paren && accept_op(ps, ")"))
        return true;
    do {
        const char *start = ps->cur.p;
        sql_node *e = parse_expr(ps);
        if (!e)
            return false;
        if (!grow(ps, (void **)out, *n, sizeof(char *))) {
            sql_node_free(e);
            return false;
        }
        if (e->kind == SQL_COLUMN && !e->qual) {
            (*out)[*n] = strdup(e->s);
        } else {
            const char *end = ps->cur.kind == T_EOF ? ps->text + ps->len : ps->cur.p;
            while (end > start && isspace((unsigned char)end[-1]))
                end--;
            (*out)[*n] = strndup(start, (size_t)(end - start));
        }
        sql_node_free(e);
        if (!(*out)[*n]) {
            ps->rc = -ENOMEM;
            return false;
        }
        (*n)++;
    } while (paren && accept_op(ps, ","));
    return !paren || expect_op(ps, ")");
}

static bool column_def(parser *ps, sql_table_def *d)
{
    if (!grow(ps, (void **)&d->cols, d->n_cols, sizeof(sql_column_def)))
        return false;
    sql_column_def *c = &d->cols[d->n_cols];
    memset(c, 0, sizeof(*c));
    d->n_cols++;
    c->line = ps->cur.line;
    c->col = ps->cur.col;
    if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
        fail_expected(ps, "a column name");
        return false;
    }
    if (!(c->name = tokdup(&ps->cur))) {
        ps->rc = -ENOMEM;
        return false;
    }
    next(ps);
    if (is_kw(&ps->cur, "DEFAULT") || is_kw(&ps->cur, "MATERIALIZED") || is_kw(&ps->cur, "ALIAS") ||
        is_kw(&ps->cur, "EPHEMERAL")) {
        fail(ps, ps->cur.line, ps->cur.col,
             "column %s needs its type before %.*s, as in %s UInt32 DEFAULT 0", c->name,
             (int)ps->cur.len, ps->cur.p, c->name);
        return false;
    }
    if (!(c->type = type_text(ps, "a column type")))
        return false;
    for (;;) {
        if (accept_kw(ps, "CODEC")) {
            if (!expect_op(ps, "("))
                return false;
            char buf[256];
            sbuf b = {buf, sizeof(buf), 0};
            int d2 = 1;
            while (!ps->rc && ps->cur.kind != T_EOF) {
                if (is_op(&ps->cur, "("))
                    d2++;
                else if (is_op(&ps->cur, ")") && --d2 == 0)
                    break;
                sb_put(&b, ps->cur.p, ps->cur.len);
                if (is_op(&ps->cur, ","))
                    sb_put(&b, " ", 1);
                next(ps);
            }
            if (b.len + 1 >= b.cap) {
                fail(ps, c->line, c->col, "the CODEC of column %s is too long", c->name);
                return false;
            }
            buf[b.len] = 0;
            free(c->codec);
            if (!(c->codec = strdup(buf))) {
                ps->rc = -ENOMEM;
                return false;
            }
            if (!expect_op(ps, ")"))
                return false;
        } else if (accept_kw(ps, "COMMENT")) {
            if (ps->cur.kind != T_STRING) {
                fail_expected(ps, "a comment as a string");
                return false;
            }
            next(ps);
        } else if (is_kw(&ps->cur, "DEFAULT")) {
            int line = ps->cur.line, col = ps->cur.col;
            next(ps);
            const char *start = ps->cur.p;
            sql_node *e = parse_expr(ps);
            if (!e)
                return false;
            sql_node_free(e);
            const char *end = ps->cur.kind == T_EOF ? ps->text + ps->len : ps->cur.p;
            while (end > start && isspace((unsigned char)end[-1]))
                end--;
            if (c->default_text) {
                fail(ps, line, col, "column %s has two DEFAULT expressions", c->name);
                return false;
            }
            if (!(c->default_text = strndup(start, (size_t)(end - start)))) {
                ps->rc = -ENOMEM;
                return false;
            }
        } else if (is_kw(&ps->cur, "MATERIALIZED") || is_kw(&ps->cur, "ALIAS") ||
                   is_kw(&ps->cur, "EPHEMERAL") || is_kw(&ps->cur, "TTL")) {
            fail(ps, ps->cur.line, ps->cur.col,
                 "column %.*s expressions are not supported: declare the column with its type, "
                 "with DEFAULT expr to fill it when an INSERT leaves it out",
                 (int)ps->cur.len, ps->cur.p);
            return false;
        } else {
            return true;
        }
    }
}

static bool create_clauses(parser *ps, sql_table_def *d)
{
    for (;;) {
        if (accept_kw(ps, "ORDER")) {
            if (!expect_kw(ps, "BY") || !key_list(ps, &d->order_by, &d->n_order_by, "ORDER BY"))
                return false;
            d->has_order_by = true;
        } else if (accept_kw(ps, "PRIMARY")) {
            if (!expect_kw(ps, "KEY") ||
                !key_list(ps, &d->primary_key, &d->n_primary_key, "PRIMARY KEY"))
                return false;
            d->has_primary_key = true;
        } else if (accept_kw(ps, "PARTITION")) {
            if (!expect_kw(ps, "BY"))
                return false;
            const char *start = ps->cur.p;
            sql_node_free(d->partition_by);
            if (!(d->partition_by = parse_expr(ps)))
                return false;
            const char *end = ps->cur.kind == T_EOF ? ps->text + ps->len : ps->cur.p;
            while (end > start && isspace((unsigned char)end[-1]))
                end--;
            free(d->partition_text);
            if (!(d->partition_text = strndup(start, (size_t)(end - start)))) {
                ps->rc = -ENOMEM;
                return false;
            }
        } else if (accept_kw(ps, "SETTINGS")) {
            if (!parse_settings(ps, &d->settings, &d->n_settings))
                return false;
        } else if (is_kw(&ps->cur, "SAMPLE") || is_kw(&ps->cur, "TTL")) {
            fail(ps, ps->cur.line, ps->cur.col, "%.*s in CREATE TABLE is not supported",
                 (int)ps->cur.len, ps->cur.p);
            return false;
        } else if (accept_kw(ps, "COMMENT")) {
            if (ps->cur.kind != T_STRING) {
                fail_expected(ps, "a comment as a string");
                return false;
            }
            next(ps);
        } else {
            return true;
        }
    }
}

static bool parse_create(parser *ps, sql_stmt *s)
{
    s->kind = SQL_CREATE_TABLE;
    if (!expect_kw(ps, "TABLE"))
        return false;
    if (accept_kw(ps, "IF")) {
        if (!expect_kw(ps, "NOT") || !expect_kw(ps, "EXISTS"))
            return false;
        s->if_not_exists = true;
    }
    if (!table_name(ps, s))
        return false;
    sql_table_def *d = s->create = calloc(1, sizeof(*d));
    if (!d) {
        ps->rc = -ENOMEM;
        return false;
    }
    if (accept_op(ps, "(")) {
        do {
            if (is_kw(&ps->cur, "INDEX") || is_kw(&ps->cur, "PROJECTION") ||
                is_kw(&ps->cur, "CONSTRAINT")) {
                fail(ps, ps->cur.line, ps->cur.col, "%.*s in CREATE TABLE is not supported",
                     (int)ps->cur.len, ps->cur.p);
                return false;
            }
            if (!column_def(ps, d))
                return false;
        } while (accept_op(ps, ","));
        if (!expect_op(ps, ")"))
            return false;
    }
    d->engine_line = ps->cur.line;
    d->engine_col = ps->cur.col;
    if (!expect_kw(ps, "ENGINE") || !expect_op(ps, "="))
        return false;
    if (ps->cur.kind != T_IDENT) {
        fail_expected(ps, "an engine name such as MergeTree");
        return false;
    }
    if (!(d->engine = tokdup(&ps->cur))) {
        ps->rc = -ENOMEM;
        return false;
    }
    next(ps);
    if (accept_op(ps, "(")) {
        if (ps->cur.kind == T_IDENT || ps->cur.kind == T_QIDENT) {
            if (!(d->engine_arg = tokdup(&ps->cur))) {
                ps->rc = -ENOMEM;
                return false;
            }
            next(ps);
        }
        if (!expect_op(ps, ")"))
            return false;
    }
    if (!create_clauses(ps, d))
        return false;
    if (accept_kw(ps, "AS")) {
        if (!is_kw(&ps->cur, "SELECT")) {
            fail_expected(ps, "SELECT after AS");
            return false;
        }
        if (!(d->as_select = parse_stmt(ps)))
            return false;
    }
    return true;
}

static bool parse_insert(parser *ps, sql_stmt *s)
{
    s->kind = SQL_INSERT;
    if (!expect_kw(ps, "INTO"))
        return false;
    accept_kw(ps, "TABLE");
    if (!table_name(ps, s))
        return false;
    sql_insert *in = s->insert = calloc(1, sizeof(*in));
    if (!in) {
        ps->rc = -ENOMEM;
        return false;
    }
    if (accept_op(ps, "(")) {
        do {
            if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
                fail_expected(ps, "a column name");
                return false;
            }
            if (!grow(ps, (void **)&in->cols, in->n_cols, sizeof(char *)))
                return false;
            if (!(in->cols[in->n_cols] = tokdup(&ps->cur))) {
                ps->rc = -ENOMEM;
                return false;
            }
            in->n_cols++;
            next(ps);
        } while (accept_op(ps, ","));
        if (!expect_op(ps, ")"))
            return false;
    }
    if (accept_kw(ps, "SETTINGS") && !parse_settings(ps, &s->settings, &s->n_settings))
        return false;
    if (is_kw(&ps->cur, "SELECT")) {
        if (!(in->select = parse_stmt(ps)))
            return false;
        return true;
    }
    if (accept_kw(ps, "VALUES")) {
        int width = -1;
        do {
            int row_line = ps->cur.line, row_col = ps->cur.col;
            if (!expect_op(ps, "("))
                return false;
            int base = in->n_rows * (width < 0 ? 0 : width), w = 0;
            bool row_ok = true;
            if (!is_op(&ps->cur, ")")) {
                do {
                    sql_node *e = parse_expr(ps);
                    if (!e || !grow(ps, (void **)&in->values, base + w, sizeof(sql_node *))) {
                        sql_node_free(e);
                        row_ok = false;
                        break;
                    }
                    in->values[base + w++] = e;
                } while (accept_op(ps, ","));
            }
            if (row_ok && !expect_op(ps, ")"))
                row_ok = false;
            if (row_ok && width >= 0 && w != width) {
                fail(ps, row_line, row_col, "row %d of VALUES has %d values, the first row %d",
                     in->n_rows + 1, w, width);
                row_ok = false;
            }
            if (!row_ok) { /* the values of the rows before stay counted */
                for (int k = 0; k < w; k++)
                    sql_node_free(in->values[base + k]);
                return false;
            }
            if (width < 0)
                width = w;
            in->width = width;
            in->n_rows++;
        } while (accept_op(ps, ","));
        if (width == 0) {
            fail(ps, s->table_line, s->table_col, "VALUES needs at least one value per row");
            return false;
        }
        return true;
    }
    if (accept_kw(ps, "FORMAT")) {
        if (ps->cur.kind != T_IDENT) {
            fail_expected(ps, "a format name");
            return false;
        }
        if (!(in->format = tokdup(&ps->cur))) {
            ps->rc = -ENOMEM;
            return false;
        }
        /* the data: the rest of the text, after blanks and one line break */
        size_t at = (size_t)(ps->cur.p - ps->text) + ps->cur.len;
        while (at < ps->len && (ps->text[at] == ' ' || ps->text[at] == '\t'))
            at++;
        if (at < ps->len && ps->text[at] == '\r')
            at++;
        if (at < ps->len && ps->text[at] == '\n')
            at++;
        in->data_len = ps->len - at;
        if (!(in->data = malloc(in->data_len + 1))) {
            ps->rc = -ENOMEM;
            return false;
        }
        memcpy(in->data, ps->text + at, in->data_len);
        in->data[in->data_len] = 0;
        ps->pos = ps->len;
        next(ps);
        return true;
    }
    fail_expected(ps, "SELECT, VALUES or FORMAT");
    return false;
}

/* CREATE TABLE, DROP TABLE, TRUNCATE TABLE, OPTIMIZE TABLE, INSERT INTO, SHOW
 * TABLES; statements other than INSERT ... SELECT may end in SETTINGS and
 * FORMAT like a SELECT. */
static sql_stmt *parse_table_stmt(parser *ps, sql_stmt *s)
{
    bool ok;
    bool tail = true;
    if (accept_kw(ps, "CREATE")) {
        ok = parse_create(ps, s);
        tail = ok && !s->create->as_select;
    } else if (accept_kw(ps, "DROP")) {
        s->kind = SQL_DROP_TABLE;
        ok = expect_kw(ps, "TABLE");
        if (ok && accept_kw(ps, "IF")) {
            ok = expect_kw(ps, "EXISTS");
            s->if_exists = true;
        }
        ok = ok && table_name(ps, s);
        if (ok)
            accept_kw(ps, "SYNC");
    } else if (accept_kw(ps, "TRUNCATE")) {
        s->kind = SQL_TRUNCATE_TABLE;
        accept_kw(ps, "TABLE");
        ok = true;
        if (accept_kw(ps, "IF")) {
            ok = expect_kw(ps, "EXISTS");
            s->if_exists = true;
        }
        ok = ok && table_name(ps, s);
    } else if (accept_kw(ps, "OPTIMIZE")) {
        s->kind = SQL_OPTIMIZE_TABLE;
        ok = expect_kw(ps, "TABLE") && table_name(ps, s);
        if (ok && accept_kw(ps, "FINAL"))
            s->optimize_final = true;
        if (ok && (is_kw(&ps->cur, "DEDUPLICATE") || is_kw(&ps->cur, "PARTITION"))) {
            fail(ps, ps->cur.line, ps->cur.col, "OPTIMIZE TABLE ... %.*s is not supported",
                 (int)ps->cur.len, ps->cur.p);
            ok = false;
        }
    } else if (accept_kw(ps, "INSERT")) {
        ok = parse_insert(ps, s);
        tail = false;
    } else {
        next(ps); /* SHOW */
        s->kind = SQL_SHOW_TABLES;
        ok = expect_kw(ps, "TABLES");
        if (ok && (accept_kw(ps, "FROM") || accept_kw(ps, "IN"))) {
            if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
                fail_expected(ps, "a database name");
                ok = false;
            } else if (!(s->table_db = tokdup(&ps->cur))) {
                ps->rc = -ENOMEM;
                ok = false;
            } else {
                next(ps);
            }
        }
        if (ok && accept_kw(ps, "LIKE")) {
            if (ps->cur.kind != T_STRING) {
                fail_expected(ps, "a pattern as a string");
                ok = false;
            } else if (!(s->like = unquote(&ps->cur, NULL))) {
                ps->rc = -ENOMEM;
                ok = false;
            } else {
                next(ps);
            }
        }
    }
    if (ok && tail && accept_kw(ps, "SETTINGS"))
        ok = parse_settings(ps, &s->settings, &s->n_settings);
    if (ok && tail && accept_kw(ps, "FORMAT")) {
        if (ps->cur.kind != T_IDENT) {
            fail_expected(ps, "a format name");
            ok = false;
        } else if (!(s->format = tokdup(&ps->cur))) {
            ps->rc = -ENOMEM;
            ok = false;
        } else {
            next(ps);
        }
    }
    if (!ok || ps->rc) {
        if (!ps->rc)
            ps->rc = -EINVAL;
        sql_stmt_destroy(&s);
        return NULL;
    }
    return s;
}

static void table_stmt_free(sql_stmt *s)
{
    free(s->table_db);
    free(s->table);
    free(s->like);
    sql_table_def *d = s->create;
    if (d) {
        for (int i = 0; i < d->n_cols; i++) {
            free(d->cols[i].name);
            free(d->cols[i].type);
            free(d->cols[i].codec);
            free(d->cols[i].default_text);
        }
        free(d->cols);
        free(d->engine);
        free(d->engine_arg);
        for (int i = 0; i < d->n_order_by; i++)
            free(d->order_by[i]);
        free(d->order_by);
        for (int i = 0; i < d->n_primary_key; i++)
            free(d->primary_key[i]);
        free(d->primary_key);
        sql_node_free(d->partition_by);
        free(d->partition_text);
        for (int i = 0; i < d->n_settings; i++) {
            free(d->settings[i].name);
            sql_node_free(d->settings[i].value);
        }
        free(d->settings);
        sql_stmt_destroy(&d->as_select);
        free(d);
    }
    sql_insert *in = s->insert;
    if (in) {
        for (int i = 0; i < in->n_cols; i++)
            free(in->cols[i]);
        free(in->cols);
        sql_stmt_destroy(&in->select);
        for (int i = 0; i < in->n_rows * in->width; i++)
            sql_node_free(in->values[i]);
        free(in->values);
        free(in->format);
        free(in->data);
        free(in);
    }
}

/* ---- composition: subqueries, WITH, JOIN, UNION ALL, EXPLAIN ---------------- */

/* Whether t begins a query inside parentheses: (SELECT ...) or (WITH ...). */
static bool starts_query(const tok *t)
{
    return is_kw(t, "SELECT") || is_kw(t, "WITH");
}

/* Words that end a FROM item where an alias could stand. */
static bool is_join_kw(const tok *t)
{
    static const char *kws[] = {"JOIN",   "INNER", "LEFT",  "RIGHT",  "FULL",    "CROSS",   "ANY",
                                "ALL",    "ON",    "USING", "OUTER",  "SEMI",    "ANTI",    "ASOF",
                                "GLOBAL", "ARRAY", "PASTE", "WINDOW", "QUALIFY", "PREWHERE"};
    for (size_t i = 0; i < sizeof(kws) / sizeof(kws[0]); i++)
        if (is_kw(t, kws[i]))
            return true;
    return false;
}

/* A SELECT in parentheses, the '(' read: WITH ... SELECT ... [UNION ALL ...]
 * up to the ')', which it reads. NULL on error. */
static sql_stmt *parse_subquery(parser *ps)
{
    if (++ps->depth > SQL_MAX_DEPTH) {
        fail(ps, ps->cur.line, ps->cur.col, "subqueries nested too deeply (more than %d levels)",
             SQL_MAX_DEPTH);
        return NULL;
    }
    sql_stmt *sub = parse_stmt(ps);
    ps->depth--;
    if (!sub)
        return NULL;
    if (sub->format) {
        fail(ps, sub->line, sub->col, "a subquery cannot have FORMAT: give it to the outer query");
        sql_stmt_destroy(&sub);
        return NULL;
    }
    if (!expect_op(ps, ")")) {
        sql_stmt_destroy(&sub);
        return NULL;
    }
    return sub;
}

/* (SELECT ...) in an expression, its '(' at open already read. */
static sql_node *parse_subquery_node(parser *ps, const tok *open)
{
    sql_node *n = node_new(ps, SQL_SUBQUERY, open->line, open->col);
    if (!n)
        return NULL;
    n->sub = parse_subquery(ps);
    if (!n->sub) {
        sql_node_free(n);
        return NULL;
    }
    return n;
}

/* An optional alias after FROM's item: AS x, or a bare name that is not a
 * keyword of a clause or of JOIN; kept in s->from_alias. */
static bool parse_from_alias(parser *ps, sql_stmt *s)
{
    bool as = accept_kw(ps, "AS");
    if (!as && !(ps->cur.kind == T_IDENT && !is_clause_kw(&ps->cur) && !is_join_kw(&ps->cur)) &&
        ps->cur.kind != T_QIDENT)
        return true;
    if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
        fail_expected(ps, "an alias");
        return false;
    }
    free(s->from_alias);
    if (!(s->from_alias = tokdup(&ps->cur))) {
        ps->rc = -ENOMEM;
        return false;
    }
    next(ps);
    return true;
}

/* FROM (SELECT ...) [[AS] alias] */
static bool parse_from_subquery(parser *ps, sql_stmt *s)
{
    s->from_line = ps->cur.line;
    s->from_col = ps->cur.col;
    next(ps);
    if (!starts_query(&ps->cur)) {
        fail_expected(ps, "SELECT or WITH after '(' in FROM");
        return false;
    }
    if (!(s->from_sub = parse_subquery(ps)))
        return false;
    return parse_from_alias(ps, s);
}

/* WITH item, ...: name AS (SELECT ...) or expr AS name. */
static bool parse_with(parser *ps, sql_stmt *s)
{
    next(ps); /* WITH */
    do {
        if (!grow(ps, (void **)&s->with, s->n_with, sizeof(sql_with)))
            return false;
        sql_with *w = &s->with[s->n_with];
        memset(w, 0, sizeof(*w));
        w->line = ps->cur.line;
        w->col = ps->cur.col;
        s->n_with++;
        if (ps->cur.kind == T_IDENT || ps->cur.kind == T_QIDENT) {
            parser save = *ps;
            tok name = ps->cur;
            next(ps);
            if (accept_kw(ps, "AS") && is_op(&ps->cur, "(")) {
                next(ps);
                if (starts_query(&ps->cur)) {
                    if (!(w->name = tokdup(&name))) {
                        ps->rc = -ENOMEM;
                        return false;
                    }
                    if (!(w->sub = parse_subquery(ps)))
                        return false;
                    continue;
                }
            }
            *ps = save;
        }
        if (!(w->expr = parse_expr(ps)))
            return false;
        if (!accept_kw(ps, "AS")) {
            fail_expected(ps, "AS and a name after WITH's expression");
            return false;
        }
        if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
            fail_expected(ps, "a name after AS");
            return false;
        }
        if (!(w->name = tokdup(&ps->cur))) {
            ps->rc = -ENOMEM;
            return false;
        }
        next(ps);
    } while (accept_op(ps, ","));
    if (!is_kw(&ps->cur, "SELECT")) {
        fail_expected(ps, "SELECT after WITH");
        return false;
    }
    return true;
}

/* The right side of a JOIN as "SELECT * FROM <item>". */
static sql_stmt *join_right(parser *ps)
{
    sql_stmt *r = calloc(1, sizeof(*r));
    if (!r || !(r->items = calloc(1, sizeof(sql_select_item)))) {
        free(r);
        ps->rc = -ENOMEM;
        return NULL;
    }
    r->kind = SQL_SELECT;
    r->line = ps->cur.line;
    r->col = ps->cur.col;
    r->n_items = 1;
    if (!(r->items[0].expr = node_new(ps, SQL_STAR, r->line, r->col)) || !parse_from(ps, r)) {
        sql_stmt_destroy(&r);
        return NULL;
    }
    return r;
}

/* USING a | USING (a, b, ...) */
static bool parse_using(parser *ps, sql_join *j)
{
    bool paren = accept_op(ps, "(");
    do {
        if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
            fail_expected(ps, "a column name in USING");
            return false;
        }
        if (!grow(ps, (void **)&j->using, j->n_using, sizeof(char *)))
            return false;
        if (!(j->using[j->n_using] = tokdup(&ps->cur))) {
            ps->rc = -ENOMEM;
            return false;
        }
        j->n_using++;
        next(ps);
    } while (paren && accept_op(ps, ","));
    return !paren || expect_op(ps, ")");
}

/* [LEFT] ARRAY JOIN expr [AS alias], at ARRAY. */
static bool parse_array_join(parser *ps, sql_stmt *s, bool left, const tok *start)
{
    next(ps); /* ARRAY */
    if (!expect_kw(ps, "JOIN"))
        return false;
    if (s->array_join) {
        fail(ps, start->line, start->col,
             "more than one ARRAY JOIN is not supported: join one array per query level");
        return false;
    }
    s->array_join_line = start->line;
    s->array_join_col = start->col;
    s->array_join_left = left;
    if (!(s->array_join = parse_expr(ps)))
        return false;
    if (accept_kw(ps, "AS")) {
        if (ps->cur.kind != T_IDENT && ps->cur.kind != T_QIDENT) {
            fail_expected(ps, "an alias after AS");
            return false;
        }
        if (!(s->array_join_alias = tokdup(&ps->cur))) {
            ps->rc = -ENOMEM;
            return false;
        }
        next(ps);
    }
    if (is_op(&ps->cur, ",")) {
        fail(ps, ps->cur.line, ps->cur.col,
             "ARRAY JOIN of several arrays is not supported: join one array per query level");
        return false;
    }
    return true;
}

/* One JOIN: [ALL|ANY] [INNER|LEFT|RIGHT|FULL] [OUTER] JOIN item ON e | USING
 * (..); CROSS JOIN item; ', item' (a cross join). false: none or an error. */
static bool parse_join(parser *ps, sql_stmt *s)
{
    tok t = ps->cur;
    sql_join j = {.kind = SQL_JOIN_INNER, .line = t.line, .col = t.col};
    bool cross = false;
    if (accept_op(ps, ",")) {
        cross = true;
    } else {
        for (int pass = 0; pass < 2; pass++) {
            if (is_kw(&ps->cur, "ARRAY") && !j.any &&
                (pass == 0 || j.kind == SQL_JOIN_LEFT || j.kind == SQL_JOIN_INNER))
                return parse_array_join(ps, s, pass == 1 && j.kind == SQL_JOIN_LEFT, &t);
            if (accept_kw(ps, "ANY"))
                j.any = true;
            else if (!accept_kw(ps, "ALL")) {
                const char *un[] = {"SEMI", "ANTI", "ASOF", "GLOBAL", "ARRAY", "PASTE"};
                for (size_t i = 0; i < sizeof(un) / sizeof(un[0]); i++)
                    if (is_kw(&ps->cur, un[i])) {
                        fail(ps, ps->cur.line, ps->cur.col,
                             "%s JOIN is not supported: write [ANY|ALL] [INNER|LEFT|RIGHT|FULL] "
                             "JOIN or CROSS JOIN",
                             un[i]);
                        return false;
                    }
            }
            if (pass == 1)
                break;
            if (accept_kw(ps, "INNER"))
                j.kind = SQL_JOIN_INNER;
            else if (accept_kw(ps, "LEFT"))
                j.kind = SQL_JOIN_LEFT;
            else if (accept_kw(ps, "RIGHT"))
                j.kind = SQL_JOIN_RIGHT;
            else if (accept_kw(ps, "FULL"))
                j.kind = SQL_JOIN_FULL;
            else if (accept_kw(ps, "CROSS"))
                cross = true;
        }
        if (!cross && j.kind != SQL_JOIN_INNER)
            accept_kw(ps, "OUTER");
        if (!expect_kw(ps, "JOIN"))
            return false;
    }
    if (cross)
        j.kind = SQL_JOIN_CROSS;
    if (cross && j.any) {
        fail(ps, t.line, t.col, "ANY CROSS JOIN is not supported: a cross join pairs every row");
        return false;
    }
    if (!grow(ps, (void **)&s->joins, s->n_joins, sizeof(sql_join)))
        return false;
    sql_join *jp = &s->joins[s->n_joins++];
    *jp = j;
    if (!(jp->right = join_right(ps)))
        return false;
    if (cross)
        return true;
    if (accept_kw(ps, "ON"))
        return (jp->on = parse_expr(ps)) != NULL;
    if (accept_kw(ps, "USING"))
        return parse_using(ps, jp);
    fail_expected(ps, "ON or USING after the joined table");
    return false;
}

static bool parse_joins(parser *ps, sql_stmt *s)
{
    while (!ps->rc && (is_op(&ps->cur, ",") || is_join_kw(&ps->cur)) && !is_kw(&ps->cur, "ON") &&
           !is_kw(&ps->cur, "USING")) {
        if (s->n_joins >= 64) {
            fail(ps, ps->cur.line, ps->cur.col, "more than 64 joins in one FROM");
            return false;
        }
        if (!parse_join(ps, s))
            return false;
    }
    return !ps->rc;
}

/* UNION ALL SELECT ... (chained): the SETTINGS and FORMAT after the last
 * SELECT are the whole query's, so they move to the head. */
static bool parse_union(parser *ps, sql_stmt *s)
{
    tok t = ps->cur;
    next(ps); /* UNION */
    if (accept_kw(ps, "DISTINCT")) {
        fail(ps, t.line, t.col,
             "UNION DISTINCT is not supported: write UNION ALL and GROUP BY "
             "the columns of the outer query");
        return false;
    }
    if (!accept_kw(ps, "ALL")) {
        fail(ps, t.line, t.col,
             "write UNION ALL (UNION alone is ambiguous, as ClickHouse's "
             "union_default_mode leaves it)");
        return false;
    }
    if (!is_kw(&ps->cur, "SELECT") && !is_kw(&ps->cur, "WITH")) {
        fail_expected(ps, "SELECT after UNION ALL");
        return false;
    }
    if (++ps->depth > SQL_MAX_DEPTH) {
        fail(ps, t.line, t.col, "more than %d SELECTs in one UNION ALL", SQL_MAX_DEPTH);
        return false;
    }
    s->union_all = parse_stmt(ps);
    ps->depth--;
    if (!s->union_all)
        return false;
    sql_stmt *u = s->union_all;
    if (u->explain) {
        fail(ps, u->line, u->col, "EXPLAIN can only begin the query");
        return false;
    }
    s->settings = u->settings;
    s->n_settings = u->n_settings;
    s->format = u->format;
    u->settings = NULL;
    u->n_settings = 0;
    u->format = NULL;
    return true;
}

/* EXPLAIN [PLAN | SYNTAX] before a SELECT. */
static bool parse_explain(parser *ps, sql_stmt *s)
{
    s->explain_line = ps->cur.line;
    s->explain_col = ps->cur.col;
    next(ps);
    s->explain = SQL_EXPLAIN_PLAN;
    if (accept_kw(ps, "SYNTAX"))
        s->explain = SQL_EXPLAIN_SYNTAX;
    else if (!accept_kw(ps, "PLAN")) {
        static const char *un[] = {"PIPELINE", "AST", "ESTIMATE", "TABLE", "QUERY", "CURRENT"};
        for (size_t i = 0; i < sizeof(un) / sizeof(un[0]); i++)
            if (is_kw(&ps->cur, un[i])) {
                fail(ps, ps->cur.line, ps->cur.col,
                     "EXPLAIN %s is not supported: use EXPLAIN (the plan) or EXPLAIN SYNTAX",
                     un[i]);
                return false;
            }
    }
    if (!is_kw(&ps->cur, "SELECT") && !is_kw(&ps->cur, "WITH")) {
        fail_expected(ps, "SELECT or WITH after EXPLAIN");
        return false;
    }
    return true;
}

static void compose_free(sql_stmt *s)
{
    sql_stmt_destroy(&s->from_sub);
    free(s->from_alias);
    sql_node_free(s->array_join);
    free(s->array_join_alias);
    for (int i = 0; i < s->n_with; i++) {
        free(s->with[i].name);
        sql_stmt_destroy(&s->with[i].sub);
        sql_node_free(s->with[i].expr);
    }
    free(s->with);
    for (int i = 0; i < s->n_joins; i++) {
        sql_stmt_destroy(&s->joins[i].right);
        sql_node_free(s->joins[i].on);
        for (int k = 0; k < s->joins[i].n_using; k++)
            free(s->joins[i].using[k]);
        free(s->joins[i].using);
    }
    free(s->joins);
    sql_stmt_destroy(&s->union_all);
}

/* ---- window functions: f(...) OVER (...) ------------------------------------- */

static void window_free(sql_window *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->n_partition; i++)
        sql_node_free(w->partition[i]);
    free(w->partition);
    for (int i = 0; i < w->n_order; i++)
        sql_node_free(w->order[i].expr);
    free(w->order);
    free(w);
}

/* UNBOUNDED PRECEDING | n PRECEDING | CURRENT ROW | n FOLLOWING | UNBOUNDED FOLLOWING */
static bool frame_bound(parser *ps, sql_frame_bound *b, int64_t *n)
{
    if (accept_kw(ps, "UNBOUNDED")) {
        if (accept_kw(ps, "PRECEDING"))
            *b = SQL_FB_UNBOUNDED_PRECEDING;
        else if (accept_kw(ps, "FOLLOWING"))
            *b = SQL_FB_UNBOUNDED_FOLLOWING;
        else {
            fail_expected(ps, "PRECEDING or FOLLOWING after UNBOUNDED");
            return false;
        }
        return true;
    }
    if (accept_kw(ps, "CURRENT")) {
        *b = SQL_FB_CURRENT;
        return expect_kw(ps, "ROW");
    }
    if (!parse_int_literal(ps, n, "a row count, CURRENT ROW or UNBOUNDED in the frame"))
        return false;
    if (accept_kw(ps, "PRECEDING"))
        *b = SQL_FB_PRECEDING;
    else if (accept_kw(ps, "FOLLOWING"))
        *b = SQL_FB_FOLLOWING;
    else {
        fail_expected(ps, "PRECEDING or FOLLOWING after the row count");
        return false;
    }
    return true;
}

static bool window_order(parser *ps, sql_window *w)
{
    do {
        if (!grow(ps, (void **)&w->order, w->n_order, sizeof(sql_order_item)))
            return false;
        sql_order_item *o = &w->order[w->n_order];
        memset(o, 0, sizeof(*o));
        if (!(o->expr = parse_expr(ps)))
            return false;
        w->n_order++;
        if (accept_kw(ps, "DESC") || accept_kw(ps, "DESCENDING"))
            o->desc = true;
        else if (!accept_kw(ps, "ASC"))
            accept_kw(ps, "ASCENDING");
        if (accept_kw(ps, "NULLS")) {
            if (accept_kw(ps, "FIRST"))
                o->nulls = 1;
            else if (accept_kw(ps, "LAST"))
                o->nulls = 2;
            else {
                fail_expected(ps, "FIRST or LAST after NULLS");
                return false;
            }
        }
    } while (accept_op(ps, ","));
    return true;
}

/* OVER (...) after fn's arguments. */
static bool parse_over(parser *ps, sql_node *fn)
{
    tok over = ps->cur;
    next(ps);
    if (!is_op(&ps->cur, "(")) {
        fail(ps, ps->cur.line, ps->cur.col,
             "named windows (OVER name, WINDOW ...) are not supported: write the window in "
             "parentheses, OVER (PARTITION BY ... ORDER BY ...)");
        return false;
    }
    next(ps);
    sql_window *w = calloc(1, sizeof(*w));
    if (!w) {
        ps->rc = -ENOMEM;
        return false;
    }
    fn->win = w;
    w->line = over.line;
    w->col = over.col;
    if (accept_kw(ps, "PARTITION")) {
        if (!expect_kw(ps, "BY"))
            return false;
        do {
            if (!grow(ps, (void **)&w->partition, w->n_partition, sizeof(sql_node *)))
                return false;
            sql_node *e = parse_expr(ps);
            if (!e)
                return false;
            w->partition[w->n_partition++] = e;
        } while (accept_op(ps, ","));
    }
    if (accept_kw(ps, "ORDER")) {
        if (!expect_kw(ps, "BY") || !window_order(ps, w))
            return false;
    }
    if (is_kw(&ps->cur, "RANGE") || is_kw(&ps->cur, "GROUPS")) {
        fail(ps, ps->cur.line, ps->cur.col,
             "window frames with %s are not supported: use ROWS BETWEEN ... AND ...",
             is_kw(&ps->cur, "RANGE") ? "RANGE" : "GROUPS");
        return false;
    }
    if (accept_kw(ps, "ROWS")) {
        w->has_frame = true;
        w->end = SQL_FB_CURRENT;
        if (accept_kw(ps, "BETWEEN")) {
            if (!frame_bound(ps, &w->start, &w->start_n) || !expect_kw(ps, "AND") ||
                !frame_bound(ps, &w->end, &w->end_n))
                return false;
        } else if (!frame_bound(ps, &w->start, &w->start_n)) {
            return false;
        }
        if (w->start == SQL_FB_UNBOUNDED_FOLLOWING || w->end == SQL_FB_UNBOUNDED_PRECEDING ||
            (w->start == SQL_FB_CURRENT && w->end == SQL_FB_PRECEDING) ||
            (w->start == SQL_FB_FOLLOWING &&
             (w->end == SQL_FB_PRECEDING || w->end == SQL_FB_CURRENT))) {
            fail(ps, over.line, over.col, "the window frame ends before it starts");
            return false;
        }
    }
    return expect_op(ps, ")");
}

/* ---- a statement as SQL text (EXPLAIN SYNTAX) -------------------------------- */

void sql_text_put(sql_text *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void sql_text_str(sql_text *b, const char *s)
{
    sql_text_put(b, s, strlen(s));
}

/* A name, backquoted unless it is a plain word that is no keyword. */
static void db_ident(sql_text *b, const char *s)
{
    static const char *kws[] = {
        "SELECT",   "FROM",    "WHERE", "GROUP",  "HAVING",     "ORDER",     "LIMIT",    "SETTINGS",
        "FORMAT",   "OFFSET",  "UNION", "ASC",    "DESC",       "JOIN",      "INNER",    "LEFT",
        "RIGHT",    "FULL",    "CROSS", "ANY",    "ALL",        "ON",        "USING",    "OUTER",
        "SEMI",     "ANTI",    "ASOF",  "GLOBAL", "ARRAY",      "PASTE",     "WINDOW",   "QUALIFY",
        "PREWHERE", "AND",     "OR",    "NOT",    "IN",         "IS",        "NULL",     "LIKE",
        "ILIKE",    "BETWEEN", "CASE",  "WHEN",   "THEN",       "ELSE",      "END",      "AS",
        "TRUE",     "FALSE",   "CAST",  "OVER",   "WITH",       "DISTINCT",  "EXPLAIN",  "FINAL",
        "BY",       "NULLS",   "ROWS",  "RANGE",  "DESCENDING", "ASCENDING", "INTERVAL", "FIRST",
        "LAST"};
    bool plain = s[0] && (isalpha((unsigned char)s[0]) || s[0] == '_');
    for (const char *c = s; plain && *c; c++)
        plain = isalnum((unsigned char)*c) || *c == '_';
    for (size_t i = 0; plain && i < sizeof(kws) / sizeof(kws[0]); i++)
        if (strcasecmp(s, kws[i]) == 0)
            plain = false;
    if (plain) {
        sql_text_str(b, s);
        return;
    }
    sql_text_str(b, "`");
    for (const char *c = s; *c; c++) {
        if (*c == '`' || *c == '\\')
            sql_text_put(b, "\\", 1);
        sql_text_put(b, c, 1);
    }
    sql_text_str(b, "`");
}

void sql_text_quoted(sql_text *b, const char *s, size_t n)
{
    sql_text_str(b, "'");
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\'' || c == '\\')
            sql_text_put(b, "\\", 1);
        if (c == 0)
            sql_text_str(b, "\\0");
        else
            sql_text_put(b, &c, 1);
    }
    sql_text_str(b, "'");
}

static void stmt_text(sql_text *b, const sql_stmt *s, bool pretty, int depth);

static const char *op_sql(sql_op op)
{
    switch (op) {
    case SQL_OP_ADD: return " + ";
    case SQL_OP_SUB: return " - ";
    case SQL_OP_MUL: return " * ";
    case SQL_OP_DIV: return " / ";
    case SQL_OP_MOD: return " % ";
    case SQL_OP_EQ: return " = ";
    case SQL_OP_NE: return " != ";
    case SQL_OP_LT: return " < ";
    case SQL_OP_LE: return " <= ";
    case SQL_OP_GT: return " > ";
    case SQL_OP_GE: return " >= ";
    case SQL_OP_AND: return " AND ";
    case SQL_OP_OR: return " OR ";
    case SQL_OP_CONCAT: return " || ";
    default: return " ? ";
    }
}

static void order_text(sql_text *b, const sql_order_item *o, int n, int depth);

static void expr_text(sql_text *b, const sql_node *n, int depth)
{
    char tmp[64];
    if (depth > SQL_MAX_DEPTH * 4) {
        b->oom = true; /* deeper than the parser makes */
        return;
    }
    switch (n->kind) {
    case SQL_NULL: sql_text_str(b, "NULL"); return;
    case SQL_BOOL: sql_text_str(b, n->i ? "true" : "false"); return;
    case SQL_INT:
        if (n->negated)
            snprintf(tmp, sizeof(tmp), "%lld", (long long)n->i);
        else
            snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)n->u);
        sql_text_str(b, tmp);
        return;
    case SQL_FLOAT:
        if (isinf(n->d))
            snprintf(tmp, sizeof(tmp), "%s", n->d > 0 ? "1e999" : "-1e999");
        else if (isnan(n->d))
            snprintf(tmp, sizeof(tmp), "(0 / 0)");
        else {
            for (int p = 15; p <= 17; p++) {
                snprintf(tmp, sizeof(tmp), "%.*g", p, n->d);
                if (strtod(tmp, NULL) == n->d)
                    break;
            }
            if (!strpbrk(tmp, ".eEn"))
                strcat(tmp, ".0");
        }
        sql_text_str(b, tmp);
        return;
    case SQL_STRING: sql_text_quoted(b, n->s, n->slen); return;
    case SQL_COLUMN:
        if (n->qual) {
            db_ident(b, n->qual);
            sql_text_str(b, ".");
        }
        db_ident(b, n->s);
        return;
    case SQL_STAR: sql_text_str(b, "*"); return;
    case SQL_COLUMNS:
        sql_text_str(b, "COLUMNS(");
        sql_text_quoted(b, n->s, n->slen);
        sql_text_str(b, ")");
        return;
    case SQL_ARRAY:
        sql_text_str(b, "[");
        for (int i = 0; i < n->nargs; i++) {
            if (i)
                sql_text_str(b, ", ");
            expr_text(b, n->args[i], depth + 1);
        }
        sql_text_str(b, "]");
        return;
    case SQL_FUNC:
        sql_text_str(b, n->s);
        if (n->nparams) {
            sql_text_str(b, "(");
            for (int i = 0; i < n->nparams; i++) {
                if (i)
                    sql_text_str(b, ", ");
                expr_text(b, n->params[i], depth + 1);
            }
            sql_text_str(b, ")");
        }
        sql_text_str(b, "(");
        for (int i = 0; i < n->nargs; i++) {
            if (i)
                sql_text_str(b, ", ");
            expr_text(b, n->args[i], depth + 1);
        }
        sql_text_str(b, ")");
        if (n->win) {
            const sql_window *w = n->win;
            sql_text_str(b, " OVER (");
            if (w->n_partition)
                sql_text_str(b, "PARTITION BY ");
            for (int i = 0; i < w->n_partition; i++) {
                if (i)
                    sql_text_str(b, ", ");
                expr_text(b, w->partition[i], depth + 1);
            }
            if (w->n_order) {
                sql_text_str(b, w->n_partition ? " ORDER BY " : "ORDER BY ");
                order_text(b, w->order, w->n_order, depth + 1);
            }
            if (w->has_frame) {
                static const char *fb[] = {"",          "UNBOUNDED PRECEDING",
                                           "PRECEDING", "CURRENT ROW",
                                           "FOLLOWING", "UNBOUNDED FOLLOWING"};
                sql_text_str(b, w->n_partition || w->n_order ? " ROWS BETWEEN " : "ROWS BETWEEN ");
                for (int e = 0; e < 2; e++) {
                    sql_frame_bound f = e ? w->end : w->start;
                    if (f == SQL_FB_PRECEDING || f == SQL_FB_FOLLOWING) {
                        snprintf(tmp, sizeof(tmp), "%lld ", (long long)(e ? w->end_n : w->start_n));
                        sql_text_str(b, tmp);
                    }
                    sql_text_str(b, fb[f]);
                    if (!e)
                        sql_text_str(b, " AND ");
                }
            }
            sql_text_str(b, ")");
        }
        return;
    case SQL_UNARY:
        sql_text_str(b, n->op == SQL_OP_NOT ? "NOT (" : "-(");
        expr_text(b, n->args[0], depth + 1);
        sql_text_str(b, ")");
        return;
    case SQL_BINARY:
        sql_text_str(b, "(");
        expr_text(b, n->args[0], depth + 1);
        sql_text_str(b, op_sql(n->op));
        expr_text(b, n->args[1], depth + 1);
        sql_text_str(b, ")");
        return;
    case SQL_IN:
        sql_text_str(b, "(");
        expr_text(b, n->args[0], depth + 1);
        sql_text_str(b, n->negated ? " NOT IN " : " IN ");
        if (n->nargs == 2 && n->args[1]->kind == SQL_SUBQUERY) {
            expr_text(b, n->args[1], depth + 1);
        } else {
            sql_text_str(b, "(");
            for (int i = 1; i < n->nargs; i++) {
                if (i > 1)
                    sql_text_str(b, ", ");
                expr_text(b, n->args[i], depth + 1);
            }
            sql_text_str(b, ")");
        }
        sql_text_str(b, ")");
        return;
    case SQL_LIKE:
        sql_text_str(b, "(");
        expr_text(b, n->args[0], depth + 1);
        sql_text_str(b, n->negated ? " NOT" : "");
        sql_text_str(b, n->op == SQL_OP_LIKE ? " LIKE " : " ILIKE ");
        expr_text(b, n->args[1], depth + 1);
        sql_text_str(b, ")");
        return;
    case SQL_IS_NULL:
        sql_text_str(b, "(");
        expr_text(b, n->args[0], depth + 1);
        sql_text_str(b, n->negated ? " IS NOT NULL)" : " IS NULL)");
        return;
    case SQL_CASE: {
        sql_text_str(b, "CASE");
        int i = 0;
        if (n->has_operand) {
            sql_text_str(b, " ");
            expr_text(b, n->args[i++], depth + 1);
        }
        int end = n->nargs - (n->has_else ? 1 : 0);
        for (; i + 1 < end; i += 2) {
            sql_text_str(b, " WHEN ");
            expr_text(b, n->args[i], depth + 1);
            sql_text_str(b, " THEN ");
            expr_text(b, n->args[i + 1], depth + 1);
        }
        if (n->has_else) {
            sql_text_str(b, " ELSE ");
            expr_text(b, n->args[n->nargs - 1], depth + 1);
        }
        sql_text_str(b, " END");
        return;
    }
    case SQL_CAST:
        sql_text_str(b, "CAST(");
        expr_text(b, n->args[0], depth + 1);
        sql_text_str(b, ", ");
        sql_text_quoted(b, n->s, n->slen);
        sql_text_str(b, ")");
        return;
    case SQL_BETWEEN:
        sql_text_str(b, "(");
        expr_text(b, n->args[0], depth + 1);
        sql_text_str(b, n->negated ? " NOT BETWEEN " : " BETWEEN ");
        expr_text(b, n->args[1], depth + 1);
        sql_text_str(b, " AND ");
        expr_text(b, n->args[2], depth + 1);
        sql_text_str(b, ")");
        return;
    case SQL_SUBQUERY:
        sql_text_str(b, "(");
        stmt_text(b, n->sub, false, depth + 1);
        sql_text_str(b, ")");
        return;
    }
}

static void order_text(sql_text *b, const sql_order_item *o, int n, int depth)
{
    for (int i = 0; i < n; i++) {
        if (i)
            sql_text_str(b, ", ");
        expr_text(b, o[i].expr, depth);
        sql_text_str(b, o[i].desc ? " DESC" : " ASC");
        if (o[i].nulls)
            sql_text_str(b, o[i].nulls == 1 ? " NULLS FIRST" : " NULLS LAST");
    }
}

/* FROM's item (also a JOIN's right side). */
static void from_text(sql_text *b, const sql_stmt *s, int depth)
{
    if (s->from_sub) {
        sql_text_str(b, "(");
        stmt_text(b, s->from_sub, false, depth + 1);
        sql_text_str(b, ")");
    } else if (s->from_fn) {
        sql_text_str(b, s->from_fn);
        sql_text_str(b, "(");
        for (int i = 0; i < s->n_from_args; i++) {
            if (i)
                sql_text_str(b, ", ");
            expr_text(b, s->from_args[i], depth + 1);
        }
        sql_text_str(b, ")");
    } else if (s->table) {
        if (s->table_db) {
            db_ident(b, s->table_db);
            sql_text_str(b, ".");
        }
        db_ident(b, s->table);
        if (s->final)
            sql_text_str(b, " FINAL");
    }
    if (s->from_alias) {
        sql_text_str(b, " AS ");
        db_ident(b, s->from_alias);
    }
}

static void stmt_text(sql_text *b, const sql_stmt *s, bool pretty, int depth)
{
    const char *nl = pretty ? "\n" : " ";
    if (depth > SQL_MAX_DEPTH * 2) {
        b->oom = true;
        return;
    }
    if (s->n_with) {
        sql_text_str(b, "WITH ");
        for (int i = 0; i < s->n_with; i++) {
            const sql_with *w = &s->with[i];
            if (i)
                sql_text_str(b, ", ");
            if (w->sub) {
                db_ident(b, w->name);
                sql_text_str(b, " AS (");
                stmt_text(b, w->sub, false, depth + 1);
                sql_text_str(b, ")");
            } else {
                expr_text(b, w->expr, depth + 1);
                sql_text_str(b, " AS ");
                db_ident(b, w->name);
            }
        }
        sql_text_str(b, nl);
    }
    sql_text_str(b, s->distinct ? "SELECT DISTINCT " : "SELECT ");
    for (int i = 0; i < s->n_items; i++) {
        const sql_select_item *it = &s->items[i];
        if (i)
            sql_text_str(b, ", ");
        expr_text(b, it->expr, depth + 1);
        if (it->n_except) {
            sql_text_str(b, " EXCEPT (");
            for (int k = 0; k < it->n_except; k++) {
                if (k)
                    sql_text_str(b, ", ");
                db_ident(b, it->except[k]);
            }
            sql_text_str(b, ")");
        }
        if (it->n_replace) {
            sql_text_str(b, " REPLACE (");
            for (int k = 0; k < it->n_replace; k++) {
                if (k)
                    sql_text_str(b, ", ");
                expr_text(b, it->replace[k].expr, depth + 1);
                sql_text_str(b, " AS ");
                db_ident(b, it->replace[k].alias);
            }
            sql_text_str(b, ")");
        }
        if (s->items[i].alias) {
            sql_text_str(b, " AS ");
            db_ident(b, s->items[i].alias);
        }
    }
    if (s->from_sub || s->from_fn || s->table) {
        sql_text_str(b, nl);
        sql_text_str(b, "FROM ");
        from_text(b, s, depth);
    }
    for (int i = 0; i < s->n_joins; i++) {
        const sql_join *j = &s->joins[i];
        static const char *kinds[] = {"", "INNER", "LEFT", "RIGHT", "FULL", "CROSS"};
        sql_text_str(b, nl);
        if (j->any)
            sql_text_str(b, "ANY ");
        sql_text_str(b, kinds[j->kind]);
        sql_text_str(b, " JOIN ");
        from_text(b, j->right, depth);
        if (j->on) {
            sql_text_str(b, " ON ");
            expr_text(b, j->on, depth + 1);
        } else if (j->n_using) {
            sql_text_str(b, " USING (");
            for (int k = 0; k < j->n_using; k++) {
                if (k)
                    sql_text_str(b, ", ");
                db_ident(b, j->using[k]);
            }
            sql_text_str(b, ")");
        }
    }
    if (s->array_join) {
        sql_text_str(b, nl);
        sql_text_str(b, s->array_join_left ? "LEFT ARRAY JOIN " : "ARRAY JOIN ");
        expr_text(b, s->array_join, depth + 1);
        if (s->array_join_alias) {
            sql_text_str(b, " AS ");
            db_ident(b, s->array_join_alias);
        }
    }
    if (s->where) {
        sql_text_str(b, nl);
        sql_text_str(b, "WHERE ");
        expr_text(b, s->where, depth + 1);
    }
    if (s->n_group_by) {
        sql_text_str(b, nl);
        sql_text_str(b, "GROUP BY ");
        for (int i = 0; i < s->n_group_by; i++) {
            if (i)
                sql_text_str(b, ", ");
            expr_text(b, s->group_by[i], depth + 1);
        }
    }
    if (s->having) {
        sql_text_str(b, nl);
        sql_text_str(b, "HAVING ");
        expr_text(b, s->having, depth + 1);
    }
    if (s->n_order_by) {
        sql_text_str(b, nl);
        sql_text_str(b, "ORDER BY ");
        order_text(b, s->order_by, s->n_order_by, depth + 1);
    }
    if (s->n_limit_by) {
        char tmp[96];
        sql_text_str(b, nl);
        snprintf(tmp, sizeof(tmp), "LIMIT %lld OFFSET %lld BY ", (long long)s->limit_by_n,
                 (long long)s->limit_by_offset);
        sql_text_str(b, tmp);
        for (int i = 0; i < s->n_limit_by; i++) {
            if (i)
                sql_text_str(b, ", ");
            expr_text(b, s->limit_by[i], depth + 1);
        }
    }
    if (s->has_limit) {
        char tmp[64];
        sql_text_str(b, nl);
        if (s->limit == INT64_MAX)
            snprintf(tmp, sizeof(tmp), "OFFSET %lld", (long long)s->offset);
        else if (s->offset)
            snprintf(tmp, sizeof(tmp), "LIMIT %lld OFFSET %lld", (long long)s->limit,
                     (long long)s->offset);
        else
            snprintf(tmp, sizeof(tmp), "LIMIT %lld", (long long)s->limit);
        sql_text_str(b, tmp);
    }
    if (s->union_all) {
        sql_text_str(b, nl);
        sql_text_str(b, "UNION ALL");
        sql_text_str(b, nl);
        stmt_text(b, s->union_all, pretty, depth + 1);
    }
    if (s->n_settings) {
        sql_text_str(b, nl);
        sql_text_str(b, "SETTINGS ");
        for (int i = 0; i < s->n_settings; i++) {
            if (i)
                sql_text_str(b, ", ");
            db_ident(b, s->settings[i].name);
            sql_text_str(b, " = ");
            expr_text(b, s->settings[i].value, depth + 1);
        }
    }
}

int sql_stmt_text(const sql_stmt *s, bool pretty, char **out)
{
    sql_text b = {0};
    *out = NULL;
    if (s->kind != SQL_SELECT)
        return -EINVAL;
    stmt_text(&b, s, pretty, 0);
    if (b.oom || !b.p) {
        free(b.p);
        return -ENOMEM;
    }
    *out = b.p;
    return (int)(b.len > INT32_MAX ? INT32_MAX : b.len);
}
