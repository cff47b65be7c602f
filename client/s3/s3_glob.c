/* SPDX-License-Identifier: Apache-2.0
 *
 * s3_glob.c: key globs with the meanings ClickHouse's s3() table function
 * gives them, compiled once and matched against many keys of a listing.
 *
 *   *        any run of characters except '/' (possibly empty)
 *   **       any run of characters, '/' included (three or more '*' = '**')
 *   ?        exactly one character except '/' (one UTF-8 sequence)
 *   {a,b,c}  one of the alternatives; each may hold *, ** and ?, not braces;
 *            empty alternatives are allowed ("{,.gz}"), "{}" is an error
 *   {N..M}   a decimal integer from N to M inclusive; when N or M is written
 *            with a leading zero ("{001..120}") every number is written with
 *            max(len N, len M) digits, otherwise without leading zeros.
 *            N > M is the same set as M..N (ClickHouse swaps them too).
 *   {x}      a single alternative (a literal), as ClickHouse reads it
 *   }        alone, a literal '}'
 * There is no escape character (ClickHouse has none either); an unclosed
 * '{', nested braces, or a bad range ("{1..}", "{a..b}") are -EINVAL.
 *
 * Matching is not backtracking: the compiled pattern is a sequence of tokens
 * and the matcher carries the set of key positions reachable after each token
 * (a row of L+1 flags), so its cost is O(tokens x key length), whatever the
 * pattern ("*a*a*a*a*b" included). Alternatives apply their own short token
 * sequences to the same row and OR the results.
 */
#include "s3_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GLOB_PATTERN_MAX  4096
#define GLOB_ALTS_MAX     4096
#define GLOB_RANGE_DIGITS 18   /* fits in uint64_t with room */
#define GLOB_STACK_KEY    1024 /* S3 keys are at most 1024 bytes */

enum tok_kind { T_LIT, T_QMARK, T_STAR, T_DSTAR, T_ALT, T_RANGE };

typedef struct tok {
    enum tok_kind kind;
    size_t off, len; /* T_LIT: bytes in lits; T_ALT: alternatives in alts */
    uint64_t lo, hi; /* T_RANGE */
    int width;       /* T_RANGE: digits when zero-padded, else 0 */
} tok;

typedef struct alt {
    size_t first, n; /* tokens in sub[] */
} alt;

typedef struct tokv {
    tok *v;
    size_t n, cap;
} tokv;

struct s3_glob {
    tokv main; /* the pattern */
    tokv sub;  /* the alternatives' tokens (never T_ALT or T_RANGE) */
    alt *alts;
    size_t n_alts, cap_alts;
    char *lits; /* literal bytes, referenced by T_LIT */
    size_t n_lits;
    char *prefix;
    bool wild;
};

static int push_tok(tokv *tv, tok t)
{
    if (tv->n == tv->cap) {
        size_t cap = tv->cap ? tv->cap * 2 : 16;
        tok *v = realloc(tv->v, cap * sizeof *v);
        if (v == NULL)
            return -ENOMEM;
        tv->v = v;
        tv->cap = cap;
    }
    tv->v[tv->n++] = t;
    return 0;
}

/* Append one literal byte, merged into a trailing T_LIT of the same run (tokens
 * from `floor` on: the literals of two alternatives must stay apart). */
static int push_lit(s3_glob *g, tokv *tv, size_t floor, char c)
{
    g->lits[g->n_lits] = c;
    if (tv->n > floor && tv->v[tv->n - 1].kind == T_LIT &&
        tv->v[tv->n - 1].off + tv->v[tv->n - 1].len == g->n_lits) {
        tv->v[tv->n - 1].len++;
        g->n_lits++;
        return 0;
    }
    tok t = {.kind = T_LIT, .off = g->n_lits, .len = 1};
    g->n_lits++;
    return push_tok(tv, t);
}

/* Tokens of p[0..n) without braces: literals, ?, * and **. */
static int compile_simple(s3_glob *g, tokv *tv, const char *p, size_t n)
{
    size_t floor = tv->n;
    for (size_t i = 0; i < n;) {
        int rc;
        if (p[i] == '*') {
            size_t j = i;
            while (j < n && p[j] == '*')
                j++;
            tok t = {.kind = j - i >= 2 ? T_DSTAR : T_STAR};
            rc = push_tok(tv, t);
            i = j;
        } else if (p[i] == '?') {
            tok t = {.kind = T_QMARK};
            rc = push_tok(tv, t);
            i++;
        } else {
            rc = push_lit(g, tv, floor, p[i]);
            i++;
        }
        if (rc < 0)
            return rc;
    }
    return 0;
}

static bool all_digits(const char *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

static uint64_t to_u64(const char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(p[i] - '0');
    return v;
}

/* The inside of a "{...}" at p[0..n). */
static int compile_brace(s3_glob *g, const char *p, size_t n)
{
    if (n == 0)
        return -EINVAL;
    const char *comma = memchr(p, ',', n);
    const char *dots = NULL;
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] == '.' && p[i + 1] == '.') {
            dots = p + i;
            break;
        }
    if (comma == NULL && dots != NULL) {
        size_t ln = (size_t)(dots - p);
        const char *r = dots + 2;
        size_t rn = n - ln - 2;
        if (!all_digits(p, ln) || !all_digits(r, rn) || ln > GLOB_RANGE_DIGITS ||
            rn > GLOB_RANGE_DIGITS)
            return -EINVAL;
        tok t = {.kind = T_RANGE, .lo = to_u64(p, ln), .hi = to_u64(r, rn)};
        if (t.lo > t.hi) {
            uint64_t x = t.lo;
            t.lo = t.hi;
            t.hi = x;
        }
        if ((ln > 1 && p[0] == '0') || (rn > 1 && r[0] == '0'))
            t.width = (int)(ln > rn ? ln : rn);
        return push_tok(&g->main, t);
    }
    /* Alternatives, split on ','. */
    tok t = {.kind = T_ALT, .off = g->n_alts, .len = 0};
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != ',')
            continue;
        if (g->n_alts >= GLOB_ALTS_MAX)
            return -EINVAL;
        if (g->n_alts == g->cap_alts) {
            size_t cap = g->cap_alts ? g->cap_alts * 2 : 8;
            alt *a = realloc(g->alts, cap * sizeof *a);
            if (a == NULL)
                return -ENOMEM;
            g->alts = a;
            g->cap_alts = cap;
        }
        size_t first = g->sub.n;
        int rc = compile_simple(g, &g->sub, p + start, i - start);
        if (rc < 0)
            return rc;
        g->alts[g->n_alts].first = first;
        g->alts[g->n_alts].n = g->sub.n - first;
        g->n_alts++;
        t.len++;
        start = i + 1;
    }
    return push_tok(&g->main, t);
}

void s3_glob_destroy(s3_glob **gp)
{
    if (gp == NULL || *gp == NULL)
        return;
    s3_glob *g = *gp;
    free(g->main.v);
    free(g->sub.v);
    free(g->alts);
    free(g->lits);
    free(g->prefix);
    free(g);
    *gp = NULL;
}

int s3_glob_create(s3_glob **out, const char *pattern)
{
    if (out == NULL)
        return -EINVAL;
    *out = NULL;
    if (pattern == NULL)
        return -EINVAL;
    size_t n = strlen(pattern);
    if (n > GLOB_PATTERN_MAX)
        return -EINVAL;
    s3_glob *g = calloc(1, sizeof *g);
    if (g == NULL)
        return -ENOMEM;
    int rc = -ENOMEM;
    g->lits = malloc(n + 1);
    size_t plen = strcspn(pattern, "*?{");
    g->prefix = malloc(plen + 1);
    if (g->lits == NULL || g->prefix == NULL)
        goto fail;
    memcpy(g->prefix, pattern, plen);
    g->prefix[plen] = '\0';
    g->wild = plen < n;

    for (size_t i = 0; i < n;) {
        if (pattern[i] != '{') {
            size_t j = i + strcspn(pattern + i, "{");
            if ((rc = compile_simple(g, &g->main, pattern + i, j - i)) < 0)
                goto fail;
            i = j;
            continue;
        }
        size_t close = i + 1 + strcspn(pattern + i + 1, "{}");
        if (pattern[close] != '}') { /* unclosed, or a '{' inside: nested */
            rc = -EINVAL;
            goto fail;
        }
        if ((rc = compile_brace(g, pattern + i + 1, close - i - 1)) < 0)
            goto fail;
        i = close + 1;
    }
    *out = g;
    return 0;
fail:
    s3_glob_destroy(&g);
    return rc;
}

const char *s3_glob_prefix(const s3_glob *g)
{
    return g ? g->prefix : "";
}

bool s3_glob_has_wildcards(const s3_glob *g)
{
    return g ? g->wild : false;
}

/* ---- matching ----------------------------------------------------------- */

/* Bytes in the UTF-8 sequence at k[0..left); 1 for anything not valid. */
static size_t utf8_len(const unsigned char *k, size_t left)
{
    size_t n = k[0] < 0x80             ? 1
               : (k[0] & 0xE0) == 0xC0 ? 2
               : (k[0] & 0xF0) == 0xE0 ? 3
               : (k[0] & 0xF8) == 0xF0 ? 4
                                       : 1;
    if (n > left)
        return 1;
    for (size_t i = 1; i < n; i++)
        if ((k[i] & 0xC0) != 0x80)
            return 1;
    return n;
}

/* nxt = the positions reachable from the positions in cur by matching t.
 * Rows have L+1 entries. Returns whether any is set. */
static bool step(const s3_glob *g, const tok *t, const unsigned char *k, size_t L,
                 const unsigned char *cur, unsigned char *nxt)
{
    bool any = false;
    memset(nxt, 0, L + 1);
    switch (t->kind) {
    case T_LIT: {
        const char *s = g->lits + t->off;
        if (t->len > L)
            break;
        for (size_t i = 0; i + t->len <= L; i++)
            if (cur[i] && memcmp(k + i, s, t->len) == 0)
                nxt[i + t->len] = 1, any = true;
        break;
    }
    case T_QMARK:
        for (size_t i = 0; i < L; i++)
            if (cur[i] && k[i] != '/')
                nxt[i + utf8_len(k + i, L - i)] = 1, any = true;
        break;
    case T_STAR: {
        bool on = false;
        for (size_t i = 0; i <= L; i++) {
            on = on || cur[i];
            if (on)
                nxt[i] = 1, any = true;
            if (i < L && k[i] == '/')
                on = false;
        }
        break;
    }
    case T_DSTAR: {
        bool on = false;
        for (size_t i = 0; i <= L; i++) {
            on = on || cur[i];
            if (on)
                nxt[i] = 1, any = true;
        }
        break;
    }
    case T_RANGE:
        for (size_t i = 0; i < L; i++) {
            if (!cur[i] || k[i] < '0' || k[i] > '9')
                continue;
            uint64_t v = 0;
            for (size_t l = 1; i + l <= L && l <= GLOB_RANGE_DIGITS + 1; l++) {
                unsigned char c = k[i + l - 1];
                if (c < '0' || c > '9')
                    break;
                v = v * 10 + (uint64_t)(c - '0');
                bool form = t->width > 0 ? l == (size_t)t->width : (l == 1 || k[i] != '0');
                if (form && v >= t->lo && v <= t->hi)
                    nxt[i + l] = 1, any = true;
            }
        }
        break;
    case T_ALT: break; /* handled by run() */
    }
    return any;
}

typedef struct rows {
    unsigned char *a, *b, *acc, *sa, *sb;
} rows;

/* Apply tokens v[0..n) to the row in *cur (which it may swap with *spare);
 * returns whether any position is still reachable. */
static bool run(const s3_glob *g, const tok *v, size_t n, const unsigned char *k, size_t L,
                unsigned char **cur, unsigned char **spare, rows *r)
{
    for (size_t ti = 0; ti < n; ti++) {
        const tok *t = &v[ti];
        bool any;
        if (t->kind == T_ALT) {
            memset(r->acc, 0, L + 1);
            any = false;
            for (size_t ai = 0; ai < t->len; ai++) {
                const alt *a = &g->alts[t->off + ai];
                unsigned char *sc = r->sa, *ss = r->sb;
                memcpy(sc, *cur, L + 1);
                /* an empty alternative has no tokens (and sub.v may be NULL) */
                const tok *sub = a->n > 0 ? g->sub.v + a->first : NULL;
                if (!run(g, sub, a->n, k, L, &sc, &ss, NULL))
                    continue;
                for (size_t i = 0; i <= L; i++)
                    if (sc[i])
                        r->acc[i] = 1, any = true;
            }
            memcpy(*spare, r->acc, L + 1);
        } else {
            any = step(g, t, k, L, *cur, *spare);
        }
        unsigned char *x = *cur;
        *cur = *spare;
        *spare = x;
        if (!any)
            return false;
    }
    return true;
}

bool s3_glob_match(const s3_glob *g, const char *key)
{
    if (g == NULL || key == NULL)
        return false;
    size_t L = strlen(key);
    unsigned char stack[5][GLOB_STACK_KEY + 1];
    unsigned char *heap = NULL;
    rows r;
    if (L <= GLOB_STACK_KEY) {
        r = (rows){stack[0], stack[1], stack[2], stack[3], stack[4]};
    } else {
        heap = malloc(5 * (L + 1));
        if (heap == NULL)
            return false;
        r = (rows){heap, heap + (L + 1), heap + 2 * (L + 1), heap + 3 * (L + 1),
                   heap + 4 * (L + 1)};
    }
    memset(r.a, 0, L + 1);
    r.a[0] = 1;
    unsigned char *cur = r.a, *spare = r.b;
    bool ok =
        run(g, g->main.v, g->main.n, (const unsigned char *)key, L, &cur, &spare, &r) && cur[L];
    free(heap);
    return ok;
}
