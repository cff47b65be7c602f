/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_params.c: URL parameters and {name:Type} query parameters
 * (srv_params.h). A query parameter's value is the text ClickHouse's HTTP
 * interface defines for it (TSV-escaped: \t \n \\ \' and \N for NULL, strings
 * not quoted); it becomes a literal the parser reads back as exactly that
 * value: a quoted string with every quote and backslash escaped, a checked
 * number in a CAST to the type, a back-quoted identifier.
 */
#include "srv_params.h"

#include "eng_error.h"
#include "eng_text.h"
#include "sql.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- URL parameters -------------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes s[0..n) into a new string; NULL with *bad set on a bad escape. */
static char *decode(const char *s, size_t n, bool *bad)
{
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            int a = i + 1 < n ? hexval((unsigned char)s[i + 1]) : -1;
            int b = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
            if (a < 0 || b < 0 || (a == 0 && b == 0)) {
                *bad = true;
                free(o);
                return NULL;
            }
            c = (char)(a * 16 + b);
            i += 2;
        } else if (c == '\0') {
            *bad = true;
            free(o);
            return NULL;
        }
        o[k++] = c;
    }
    o[k] = 0;
    return o;
}

void srv_params_free(srv_params *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->kv[i].name);
        free(p->kv[i].value);
    }
    free(p->kv);
    p->kv = NULL;
    p->n = p->cap = 0;
}

int srv_params_parse(srv_params *p, const char *q, size_t len, char *err, size_t errlen)
{
    memset(p, 0, sizeof(*p));
    size_t i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && q[j] != '&')
            j++;
        size_t eq = i;
        while (eq < j && q[eq] != '=')
            eq++;
        if (eq > i) {
            if (p->n >= SRV_PARAMS_MAX) {
                snprintf(err, errlen, "the URL has more than %d parameters", SRV_PARAMS_MAX);
                return -EINVAL;
            }
            bool bad = false;
            char *name = decode(q + i, eq - i, &bad);
            char *value = name ? decode(q + eq + (eq < j), j - eq - (eq < j), &bad) : NULL;
            if (!name || !value) {
                free(name);
                free(value);
                if (bad) {
                    snprintf(err, errlen,
                             "the URL parameter '%.*s' has a bad %%-escape or a NUL byte: "
                             "encode it as application/x-www-form-urlencoded",
                             (int)(eq - i > 64 ? 64 : eq - i), q + i);
                    return -EINVAL;
                }
                snprintf(err, errlen, "out of memory reading the URL");
                return -ENOMEM;
            }
            if (p->n == p->cap) {
                int cap = p->cap ? p->cap * 2 : 16;
                srv_kv *kv = realloc(p->kv, sizeof(srv_kv) * (size_t)cap);
                if (!kv) {
                    free(name);
                    free(value);
                    snprintf(err, errlen, "out of memory reading the URL");
                    return -ENOMEM;
                }
                p->kv = kv;
                p->cap = cap;
            }
            p->kv[p->n++] = (srv_kv){name, value};
        }
        i = j + 1;
    }
    return 0;
}

const char *srv_params_first(const srv_params *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->kv[i].name, name) == 0)
            return p->kv[i].value;
    return NULL;
}

const char *srv_params_last(const srv_params *p, const char *name)
{
    for (int i = p->n - 1; i >= 0; i--)
        if (strcmp(p->kv[i].name, name) == 0)
            return p->kv[i].value;
    return NULL;
}

bool srv_param_is_reserved(const char *name)
{
    static const char *const own[] = {
        "query",
        "database",
        "default_format",
        "user",
        "password",
        "quota_key",
        "query_id",
        "session_id",
        "session_timeout",
        "session_check",
        "close_session",
        "compress",
        "decompress",
        "buffer_size",
        "wait_end_of_query",
        "stacktrace",
        "client_protocol_version",
        "role",
    };
    if (strncmp(name, "param_", 6) == 0)
        return true;
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        if (strcmp(name, own[i]) == 0)
            return true;
    return false;
}

/* ---- query parameters -------------------------------------------------------------- */

/* The value's text with its TSV escapes undone (\t \n \r \0 \\ \' \b \f). */
static char *unescape(const char *v, size_t *len)
{
    size_t n = strlen(v);
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '\\' && i + 1 < n) {
            char e = v[++i];
            switch (e) {
            case 't': c = '\t'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case '0': c = '\0'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            default: c = e; break;
            }
        }
        o[k++] = c;
    }
    o[k] = 0;
    *len = k;
    return o;
}

static bool is_ident_start(int c)
{
    return isalpha(c) || c == '_';
}

/* Integer type: its bits and signedness; false when t is not one. */
static bool int_type(const char *t, int *bits, bool *is_signed)
{
    static const struct {
        const char *n;
        int bits;
        bool s;
    } tab[] = {
        {"UInt8", 8, false}, {"UInt16", 16, false}, {"UInt32", 32, false}, {"UInt64", 64, false},
        {"Int8", 8, true},   {"Int16", 16, true},   {"Int32", 32, true},   {"Int64", 64, true},
    };
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strcmp(t, tab[i].n) == 0) {
            *bits = tab[i].bits;
            *is_signed = tab[i].s;
            return true;
        }
    return false;
}

/* Whether v is a whole integer of that type. */
static bool int_ok(const char *v, int bits, bool is_signed)
{
    const char *p = v;
    bool neg = false;
    if (*p == '-' || *p == '+') {
        neg = *p == '-';
        p++;
    }
    if (!*p)
        return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    if (strlen(p) > 20)
        return false;
    errno = 0;
    unsigned long long u = strtoull(p, NULL, 10);
    if (errno)
        return false;
    if (!is_signed) {
        if (neg && u != 0)
            return false;
        return bits == 64 || u <= (1ull << bits) - 1;
    }
    unsigned long long lim = bits == 64 ? (1ull << 63) : (1ull << (bits - 1));
    return neg ? u <= lim : u < lim;
}

/* One {name:Type} -> the literal. 0 or a code with a sentence. */
static int substitute_one(sql_text *b, const char *name, const char *type, const srv_params *p,
                          char *err, size_t errlen)
{
    char key[160];
    snprintf(key, sizeof(key), "param_%s", name);
    const char *v = srv_params_first(p, key);
    if (!v) {
        snprintf(err, errlen,
                 "Substitution `%s` is not set: give its value as the URL parameter %s", name, key);
        return ENG_E_UNKNOWN_QUERY_PARAMETER;
    }
    char t[128];
    snprintf(t, sizeof(t), "%s", type);
    bool nullable = false;
    size_t tl = strlen(t);
    if (strncmp(t, "Nullable(", 9) == 0 && tl > 10 && t[tl - 1] == ')') {
        memmove(t, t + 9, tl - 10);
        t[tl - 10] = 0;
        nullable = true;
    }
    if (strcmp(v, "\\N") == 0) {
        if (!nullable) {
            snprintf(err, errlen,
                     "Value \\N cannot be parsed as %s for query parameter '%s': NULL needs a "
                     "Nullable type",
                     type, name);
            return ENG_E_BAD_QUERY_PARAMETER;
        }
        sql_text_str(b, "NULL");
        return 0;
    }
    size_t n;
    char *u = unescape(v, &n);
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return ENG_E_MEMORY_LIMIT_EXCEEDED;
    }
    int rc = 0, bits;
    bool sgn;
    char *end = NULL;
    if (strcmp(t, "Identifier") == 0) {
        sql_text_put(b, "`", 1);
        for (size_t i = 0; i < n; i++) {
            if (u[i] == '`')
                sql_text_put(b, "`", 1);
            if (u[i] == '\0') {
                rc = ENG_E_BAD_QUERY_PARAMETER;
                break;
            }
            sql_text_put(b, &u[i], 1);
        }
        sql_text_put(b, "`", 1);
    } else if (strcmp(t, "String") == 0 || strncmp(t, "FixedString(", 12) == 0 ||
               strcmp(t, "UUID") == 0 || strcmp(t, "IPv4") == 0 || strcmp(t, "IPv6") == 0 ||
               strncmp(t, "LowCardinality(", 15) == 0) {
        sql_text_quoted(b, u, n);
    } else if (int_type(t, &bits, &sgn)) {
        if (!int_ok(u, bits, sgn) || strlen(u) != n)
            rc = ENG_E_BAD_QUERY_PARAMETER;
        else {
            sql_text_str(b, "CAST(");
            sql_text_str(b, u);
            sql_text_str(b, " AS ");
            sql_text_str(b, t);
            sql_text_str(b, ")");
        }
    } else if (strcmp(t, "Float32") == 0 || strcmp(t, "Float64") == 0) {
        double d = strtod(u, &end);
        if (!n || *end || strlen(u) != n || !isfinite(d))
            rc = ENG_E_BAD_QUERY_PARAMETER;
        else {
            char num[40];
            snprintf(num, sizeof(num), "%.17g", d);
            sql_text_str(b, "CAST(");
            sql_text_str(b, num);
            sql_text_str(b, " AS ");
            sql_text_str(b, t); /* Float32 or Float64 */
            sql_text_str(b, ")");
        }
    } else if (strcmp(t, "Bool") == 0 || strcmp(t, "Boolean") == 0) {
        if (strcmp(u, "1") == 0 || strcmp(u, "true") == 0)
            sql_text_str(b, "true");
        else if (strcmp(u, "0") == 0 || strcmp(u, "false") == 0)
            sql_text_str(b, "false");
        else
            rc = ENG_E_BAD_QUERY_PARAMETER;
    } else if (strcmp(t, "Date") == 0 || strcmp(t, "Date32") == 0 || strcmp(t, "DateTime") == 0 ||
               strncmp(t, "DateTime64(", 11) == 0 || strncmp(t, "DateTime(", 9) == 0) {
        bool digits = n > 0;
        for (size_t i = 0; i < n; i++)
            digits &= isdigit((unsigned char)u[i]) != 0;
        bool ok = n > 0 && n < 64;
        for (size_t i = 0; ok && i < n; i++)
            ok = isdigit((unsigned char)u[i]) || strchr("-: .T", u[i]);
        if (!ok)
            rc = ENG_E_BAD_QUERY_PARAMETER;
        else {
            sql_text_str(b, "CAST(");
            if (digits)
                sql_text_str(b, u); /* a unix timestamp */
            else
                sql_text_quoted(b, u, n);
            sql_text_str(b, " AS ");
            sql_text_str(b, strncmp(t, "DateTime(", 9) == 0 ? "DateTime" : t);
            sql_text_str(b, ")");
        }
    } else {
        snprintf(err, errlen,
                 "query parameter '%s' has the type %s, which is not supported here: use "
                 "String, Identifier, an integer or float type, Bool, Date or DateTime",
                 name, type);
        free(u);
        return ENG_E_BAD_QUERY_PARAMETER;
    }
    if (rc)
        snprintf(err, errlen, "Value %.64s cannot be parsed as %s for query parameter '%s'", v,
                 type, name);
    free(u);
    return rc;
}

int srv_params_substitute(const char *sql, size_t len, const srv_params *p, char **out,
                          size_t *outlen, char *err, size_t errlen)
{
    sql_text b = {0};
    *out = NULL;
    *outlen = 0;
    size_t i = 0, copied = 0;
    int rc = 0;
    while (i < len && !rc) {
        char c = sql[i];
        if (c == '\'' || c == '"' || c == '`') {
            size_t j = i + 1;
            while (j < len && sql[j] != c) {
                if (sql[j] == '\\' && j + 1 < len)
                    j++;
                j++;
            }
            i = j + 1;
            continue;
        }
        if (c == '-' && i + 1 < len && sql[i + 1] == '-') {
            while (i < len && sql[i] != '\n')
                i++;
            continue;
        }
        if (c == '/' && i + 1 < len && sql[i + 1] == '*') {
            i += 2;
            while (i + 1 < len && !(sql[i] == '*' && sql[i + 1] == '/'))
                i++;
            i += 2;
            continue;
        }
        if (c != '{') {
            i++;
            continue;
        }
        /* {name:Type}: name an identifier, Type up to the matching '}' */
        size_t j = i + 1;
        while (j < len && sql[j] == ' ')
            j++;
        size_t ns = j;
        if (j >= len || !is_ident_start((unsigned char)sql[j])) {
            i++;
            continue;
        }
        while (j < len && (isalnum((unsigned char)sql[j]) || sql[j] == '_'))
            j++;
        size_t ne = j;
        while (j < len && sql[j] == ' ')
            j++;
        if (j >= len || sql[j] != ':') {
            i++;
            continue;
        }
        j++;
        size_t ts = j;
        int depth = 0;
        while (j < len && (sql[j] != '}' || depth > 0)) {
            if (sql[j] == '(')
                depth++;
            else if (sql[j] == ')')
                depth--;
            j++;
        }
        if (j >= len || ne - ns >= 128 || j - ts >= 120) {
            i++;
            continue;
        }
        size_t te = j;
        while (te > ts && sql[te - 1] == ' ')
            te--;
        while (ts < te && sql[ts] == ' ')
            ts++;
        char name[128], type[128];
        memcpy(name, sql + ns, ne - ns);
        name[ne - ns] = 0;
        memcpy(type, sql + ts, te - ts);
        type[te - ts] = 0;
        sql_text_put(&b, sql + copied, i - copied);
        rc = substitute_one(&b, name, type, p, err, errlen);
        i = j + 1;
        copied = i;
    }
    if (!rc && copied < len)
        sql_text_put(&b, sql + copied, len - copied);
    if (!rc && !b.p)
        sql_text_put(&b, "", 0);
    if (!rc && b.oom) {
        snprintf(err, errlen, "out of memory substituting the query parameters");
        rc = ENG_E_MEMORY_LIMIT_EXCEEDED;
    }
    if (rc) {
        free(b.p);
        return rc;
    }
    *out = b.p;
    *outlen = b.len;
    return 0;
}

/* ---- the secrets in a query's text --------------------------------------------------- */

typedef struct arg_span {
    size_t b, e; /* [b, e) of the argument, literal quotes included */
    bool str;
} arg_span;

/* The end of the string literal starting at t[i] (a quote). */
static size_t literal_end(const char *t, size_t n, size_t i)
{
    char qc = t[i++];
    while (i < n) {
        if (t[i] == '\\' && i + 1 < n) {
            i += 2;
        } else if (t[i] == qc) {
            if (i + 1 < n && t[i + 1] == qc)
                i += 2;
            else
                return i + 1;
        } else {
            i++;
        }
    }
    return n;
}

/* A string argument that names a format ('Parquet', 'auto', ...). */
static bool format_arg(const char *t, const arg_span *a)
{
    char v[64];
    size_t len = a->e - a->b;
    if (!a->str || len < 2 || len - 2 >= sizeof(v))
        return false;
    memcpy(v, t + a->b + 1, len - 2);
    v[len - 2] = 0;
    return strcasecmp(v, "auto") == 0 || tx_format_of_arg(v) >= 0;
}

/* Splits the arguments of the call whose '(' is at t[i]; returns their count
 * (at most cap) and *end just past the ')'. */
static int split_args(const char *t, size_t n, size_t i, arg_span *a, int cap, size_t *end)
{
    int k = 0, depth = 0;
    size_t b = ++i;
    while (i < n) {
        char ch = t[i];
        if (ch == '\'' || ch == '"' || ch == '`') {
            i = literal_end(t, n, i);
            continue;
        }
        if (ch == '(') {
            depth++;
        } else if (ch == ')' && depth > 0) {
            depth--;
        } else if ((ch == ',' || ch == ')') && depth == 0) {
            size_t s = b, e = i;
            while (s < e && isspace((unsigned char)t[s]))
                s++;
            while (e > s && isspace((unsigned char)t[e - 1]))
                e--;
            if (k < cap)
                a[k++] = (arg_span){s, e, s < e && t[s] == '\'' && literal_end(t, n, s) == e};
            if (ch == ')') {
                *end = i + 1;
                return k;
            }
            b = i + 1;
        }
        i++;
    }
    /* unterminated (a query that will not parse is logged too): the last one */
    size_t s = b, e = n;
    while (s < e && isspace((unsigned char)t[s]))
        s++;
    while (e > s && isspace((unsigned char)t[e - 1]))
        e--;
    if (s < e && k < cap)
        a[k++] = (arg_span){s, e, t[s] == '\'' && literal_end(t, n, s) == e};
    *end = n;
    return k;
}

char *srv_mask_secrets(const char *t, size_t n)
{
    /* each hidden argument is at least '' and a comma: at most 4 times n */
    char *out = malloc(4 * n + 16);
    if (!out)
        return NULL;
    size_t o = 0, i = 0;
    while (i < n) {
        char ch = t[i];
        if (ch == '\'' || ch == '"' || ch == '`') {
            size_t e = literal_end(t, n, i);
            memcpy(out + o, t + i, e - i);
            o += e - i;
            i = e;
            continue;
        }
        bool word_start = i == 0 || !(isalnum((unsigned char)t[i - 1]) || t[i - 1] == '_');
        size_t w = 0;
        if (word_start && i + 2 <= n && strncasecmp(t + i, "s3", 2) == 0)
            w = i + 9 <= n && strncasecmp(t + i, "s3Cluster", 9) == 0 ? 9 : 2;
        size_t p = i + w;
        while (w && p < n && isspace((unsigned char)t[p]))
            p++;
        if (!w || p >= n || t[p] != '(' ||
            (p == i + w && i + w < n && (isalnum((unsigned char)t[i + w]) || t[i + w] == '_'))) {
            out[o++] = ch;
            i++;
            continue;
        }
        arg_span a[9];
        size_t end;
        int k = split_args(t, n, p, a, 9, &end);
        int u = w == 9 ? 1 : 0; /* s3Cluster: the cluster's name first */
        int hide_from = -1, hide_to = -1;
        if (k - u >= 3 && a[u].str && a[u + 1].str && a[u + 2].str && !format_arg(t, &a[u + 1])) {
            hide_from = hide_to = u + 2;
            if (k - u >= 4 && a[u + 3].str && (k - u == 7 || !format_arg(t, &a[u + 3])))
                hide_to = u + 3;
        }
        size_t at = i;
        for (int j = hide_from; j >= 0 && j <= hide_to; j++) {
            memcpy(out + o, t + at, a[j].b - at);
            o += a[j].b - at;
            memcpy(out + o, "'[HIDDEN]'", 10);
            o += 10;
            at = a[j].e;
        }
        memcpy(out + o, t + at, end - at);
        o += end - at;
        i = end;
    }
    out[o] = 0;
    return out;
}
