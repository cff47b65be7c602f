/* SPDX-License-Identifier: Apache-2.0
 *
 * tenants.c: the tenants file of tenants.h. A line parser shared by section
 * headers and `key = value` lines, a check of each tenant when its section
 * ends, and lookups. Tokens never stay in memory in clear: the parser hashes
 * each one into the tenant and wipes its line buffer, so neither a message nor
 * a core dump of a running node gives one away.
 */
#include "tenants.h"
#include "config.h"
#include "errf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

/* What the S3 client's config can hold (client/s3/s3.h), so nothing is cut. */
#define TEN_ACCESS_KEY_MAX    127
#define TEN_SECRET_KEY_MAX    127
#define TEN_SESSION_TOKEN_MAX 4095
#define TEN_NAME_MAX          64
#define TEN_BUCKET_MAX        255

typedef struct ten_prefix {
    char *bucket;
    size_t blen;
    char *prefix;
    size_t plen;
} ten_prefix;

struct ten_tenant {
    char *name;
    unsigned line; /* of the [tenant NAME] header */
    unsigned char digest[SHA256_DIGEST_LENGTH];
    unsigned token_line, allow_line, ak_line, sk_line, st_line, s3k_line, s3s_line, public_line;
    ten_prefix *allow;
    size_t n_allow, cap_allow;
    char *access_key, *secret_key, *session_token;
    char *s3api_key, *s3api_secret; /* the S3 API's access key id and secret */
    bool is_public;                 /* anonymous S3 API requests are this tenant's */
};

struct ten_set {
    ten_tenant *t;
    size_t n, cap;
};

static void free_secret(char **s)
{
    if (*s != NULL) {
        OPENSSL_cleanse(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

static void tenant_deinit(ten_tenant *t)
{
    free(t->name);
    for (size_t i = 0; i < t->n_allow; i++) {
        free(t->allow[i].bucket);
        free(t->allow[i].prefix);
    }
    free(t->allow);
    free_secret(&t->access_key);
    free_secret(&t->secret_key);
    free_secret(&t->session_token);
    free_secret(&t->s3api_key);
    free_secret(&t->s3api_secret);
    OPENSSL_cleanse(t->digest, sizeof t->digest);
}

void ten_destroy(ten_set **tp)
{
    if (tp == NULL || *tp == NULL)
        return;
    ten_set *s = *tp;
    for (size_t i = 0; i < s->n; i++)
        tenant_deinit(&s->t[i]);
    free(s->t);
    free(s);
    *tp = NULL;
}

/* ---- lines -------------------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

enum line_kind { L_BLANK, L_SECTION, L_KV, L_ERR };

/* Splits a writable, NUL-terminated line in place. L_SECTION: *key is the
 * text between the brackets, trimmed. L_KV: *key and *val. L_ERR: why. */
static enum line_kind split_line(char *line, char **key, char **val, char *why, size_t whylen)
{
    char *p = line;
    while (is_space(*p))
        p++;
    if (*p == '\0' || *p == '#')
        return L_BLANK;
    if (*p == '[') {
        char *close = strchr(p, ']');
        if (close == NULL) {
            snprintf(why, whylen, "a section header without its closing ']' (write [tenant NAME])");
            return L_ERR;
        }
        char *q = close + 1;
        while (is_space(*q))
            q++;
        if (*q != '\0' && *q != '#') {
            snprintf(why, whylen, "text after the section header (start a comment with #)");
            return L_ERR;
        }
        char *s = p + 1;
        while (is_space(*s))
            s++;
        char *e = close;
        while (e > s && is_space(e[-1]))
            e--;
        *e = '\0';
        *key = s;
        return L_SECTION;
    }
    int rc = cfg_split_line(p, "a [tenant NAME] header", key, val, why, whylen);
    return rc < 0 ? L_ERR : rc == 0 ? L_BLANK : L_KV;
}

/* printable ASCII without spaces: tokens and credentials */
static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
            return false;
    return true;
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

/* ---- the parser --------------------------------------------------------- */

typedef struct parser {
    ten_set *set;
    ten_tenant *cur; /* the open section, or NULL */
    const char *src;
    unsigned line;
    char *err;
    size_t errlen;
} parser;

static int add_allow(parser *p, const char *entry, size_t len)
{
    ten_tenant *t = p->cur;
    if (len < 5 || memcmp(entry, "s3://", 5) != 0) {
        errf_set(p->err, p->errlen,
                 "%s:%u: allow entry '%.*s' of tenant %s must start with s3:// "
                 "(for example s3://bucket/prefix/)",
                 p->src, p->line, (int)(len > 80 ? 80 : len), entry, t->name);
        return -EINVAL;
    }
    const char *b = entry + 5;
    const char *end = entry + len;
    const char *slash = memchr(b, '/', (size_t)(end - b));
    size_t blen = (size_t)((slash ? slash : end) - b);
    bool ok = blen > 0 && blen <= TEN_BUCKET_MAX;
    for (size_t i = 0; ok && i < blen; i++)
        ok = name_char(b[i]);
    if (!ok) {
        errf_set(p->err, p->errlen,
                 "%s:%u: allow entry '%.*s' of tenant %s has no valid bucket "
                 "name (write s3://bucket/ or s3://bucket/prefix/)",
                 p->src, p->line, (int)(len > 80 ? 80 : len), entry, t->name);
        return -EINVAL;
    }
    const char *pre = slash ? slash + 1 : end;
    size_t plen = (size_t)(end - pre);
    for (size_t i = 0; i < t->n_allow; i++)
        if (t->allow[i].blen == blen && memcmp(t->allow[i].bucket, b, blen) == 0 &&
            t->allow[i].plen == plen && memcmp(t->allow[i].prefix, pre, plen) == 0)
            return 0; /* listed twice: harmless */
    if (t->n_allow == t->cap_allow) {
        size_t cap = t->cap_allow ? t->cap_allow * 2 : 4;
        ten_prefix *na = realloc(t->allow, cap * sizeof *na);
        if (na == NULL)
            return -ENOMEM;
        t->allow = na;
        t->cap_allow = cap;
    }
    ten_prefix *a = &t->allow[t->n_allow];
    a->bucket = strndup(b, blen);
    a->prefix = strndup(pre, plen);
    if (a->bucket == NULL || a->prefix == NULL) {
        free(a->bucket);
        free(a->prefix);
        return -ENOMEM;
    }
    a->blen = blen;
    a->plen = plen;
    t->n_allow++;
    return 0;
}

static int parse_allow(parser *p, const char *v)
{
    const char *s = v;
    size_t added = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == ',')
            s++;
        const char *e = s;
        while (*e && *e != ' ' && *e != '\t' && *e != ',')
            e++;
        if (e > s) {
            int rc = add_allow(p, s, (size_t)(e - s));
            if (rc != 0)
                return rc;
            added++;
        }
        s = e;
    }
    if (added == 0) {
        errf_set(p->err, p->errlen,
                 "%s:%u: allow of tenant %s is empty (list s3://bucket/prefix/ "
                 "entries, separated by spaces or commas)",
                 p->src, p->line, p->cur->name);
        return -EINVAL;
    }
    return 0;
}

static int set_secret(parser *p, char **dst, unsigned *line, const char *key, const char *v,
                      size_t max)
{
    ten_tenant *t = p->cur;
    if (*dst != NULL) {
        errf_set(p->err, p->errlen, "%s:%u: %s of tenant %s is already set on line %u; keep one",
                 p->src, p->line, key, t->name, *line);
        return -EINVAL;
    }
    size_t len = strlen(v);
    if (len == 0 || len > max || !printable(v)) {
        errf_set(p->err, p->errlen,
                 "%s:%u: %s of tenant %s must be 1 to %zu printable characters "
                 "without spaces",
                 p->src, p->line, key, t->name, max);
        return -EINVAL;
    }
    *dst = strdup(v);
    if (*dst == NULL)
        return -ENOMEM;
    *line = p->line;
    return 0;
}

static int key_value(parser *p, const char *key, char *v)
{
    ten_tenant *t = p->cur;
    if (t == NULL) {
        errf_set(p->err, p->errlen,
                 "%s:%u: `%.40s` is outside a tenant section; start one with "
                 "[tenant NAME]",
                 p->src, p->line, key);
        return -EINVAL;
    }
    if (strcmp(key, "token") == 0) {
        if (t->token_line != 0) {
            errf_set(p->err, p->errlen,
                     "%s:%u: the token of tenant %s is already set on line %u; "
                     "keep one",
                     p->src, p->line, t->name, t->token_line);
            return -EINVAL;
        }
        size_t len = strlen(v);
        if (!printable(v)) {
            errf_set(p->err, p->errlen,
                     "%s:%u: the token of tenant %s contains a space or a "
                     "control character; use printable characters only",
                     p->src, p->line, t->name);
            return -EINVAL;
        }
        if (len < TEN_TOKEN_MIN || len > TEN_TOKEN_MAX) {
            errf_set(p->err, p->errlen,
                     "%s:%u: the token of tenant %s is %zu characters long; use "
                     "%d to %d (for example the output of `openssl rand -hex 16`)",
                     p->src, p->line, t->name, len, TEN_TOKEN_MIN, TEN_TOKEN_MAX);
            return -EINVAL;
        }
        SHA256((const unsigned char *)v, len, t->digest);
        OPENSSL_cleanse(v, len);
        t->token_line = p->line;
        return 0;
    }
    if (strcmp(key, "allow") == 0) {
        if (t->allow_line == 0)
            t->allow_line = p->line;
        return parse_allow(p, v);
    }
    if (strcmp(key, "aws_access_key_id") == 0)
        return set_secret(p, &t->access_key, &t->ak_line, key, v, TEN_ACCESS_KEY_MAX);
    if (strcmp(key, "aws_secret_access_key") == 0) {
        int rc = set_secret(p, &t->secret_key, &t->sk_line, key, v, TEN_SECRET_KEY_MAX);
        OPENSSL_cleanse(v, strlen(v));
        return rc;
    }
    if (strcmp(key, "aws_session_token") == 0) {
        int rc = set_secret(p, &t->session_token, &t->st_line, key, v, TEN_SESSION_TOKEN_MAX);
        OPENSSL_cleanse(v, strlen(v));
        return rc;
    }
    if (strcmp(key, "s3api_access_key_id") == 0)
        return set_secret(p, &t->s3api_key, &t->s3k_line, key, v, TEN_ACCESS_KEY_MAX);
    if (strcmp(key, "s3api_secret_access_key") == 0) {
        int rc = set_secret(p, &t->s3api_secret, &t->s3s_line, key, v, TEN_SECRET_KEY_MAX);
        OPENSSL_cleanse(v, strlen(v));
        return rc;
    }
    if (strcmp(key, "public") == 0) {
        if (t->public_line != 0) {
            errf_set(p->err, p->errlen,
                     "%s:%u: public of tenant %s is already set on line %u; "
                     "keep one",
                     p->src, p->line, t->name, t->public_line);
            return -EINVAL;
        }
        if (strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 || strcmp(v, "on") == 0) {
            t->is_public = true;
        } else if (strcmp(v, "false") == 0 || strcmp(v, "no") == 0 || strcmp(v, "off") == 0) {
            t->is_public = false;
        } else {
            errf_set(p->err, p->errlen,
                     "%s:%u: public of tenant %s must be true or false, not "
                     "'%.40s'",
                     p->src, p->line, t->name, v);
            return -EINVAL;
        }
        t->public_line = p->line;
        return 0;
    }
    static const char *const known[] = {"token",
                                        "allow",
                                        "aws_access_key_id",
                                        "aws_secret_access_key",
                                        "aws_session_token",
                                        "s3api_access_key_id",
                                        "s3api_secret_access_key",
                                        "public"};
    /* a near miss (one edit, or '-' for '_') gets a suggestion */
    const char *hint = NULL;
    for (size_t i = 0; i < sizeof known / sizeof known[0] && hint == NULL; i++) {
        const char *a = key, *b = known[i];
        size_t la = strlen(a), lb = strlen(b), diff = 0;
        if (la == lb) {
            for (size_t k = 0; k < la; k++)
                diff += a[k] != b[k] && !(a[k] == '-' && b[k] == '_');
            if (diff <= 1)
                hint = b;
        } else if (la + 1 == lb || lb + 1 == la) {
            const char *lo = la < lb ? a : b, *hi = la < lb ? b : a;
            size_t i1 = 0, i2 = 0, skips = 0;
            while (hi[i2] && skips <= 1) {
                if (lo[i1] == hi[i2]) {
                    i1++;
                    i2++;
                } else {
                    skips++;
                    i2++;
                }
            }
            if (skips <= 1 && lo[i1] == '\0')
                hint = b;
        }
    }
    errf_set(
        p->err, p->errlen, "%s:%u: unknown key '%.40s' in tenant %s (%s%s%s)", p->src, p->line, key,
        t->name,
        hint ? "did you mean '"
             : "known keys: token, allow, "
               "aws_access_key_id, aws_secret_access_key, aws_session_token, s3api_access_key_id, "
               "s3api_secret_access_key, public",
        hint ? hint : "", hint ? "'?" : "");
    return -EINVAL;
}

/* A section is complete: check what a tenant must have. */
static int close_section(parser *p)
{
    ten_tenant *t = p->cur;
    if (t == NULL)
        return 0;
    p->cur = NULL;
    const char *src = p->src;
    if (t->token_line == 0 && t->s3api_key == NULL && !t->is_public) {
        errf_set(p->err, p->errlen,
                 "%s:%u: tenant %s has no token; add `token = ...` (%d characters "
                 "or more), or S3 API keys (s3api_access_key_id and s3api_secret_access_key)",
                 src, t->line, t->name, TEN_TOKEN_MIN);
        return -EINVAL;
    }
    if (t->n_allow == 0) {
        errf_set(p->err, p->errlen,
                 "%s:%u: tenant %s has no allow line, so it could read nothing; "
                 "add `allow = s3://bucket/prefix/`",
                 src, t->line, t->name);
        return -EINVAL;
    }
    if ((t->access_key == NULL) != (t->secret_key == NULL)) {
        errf_set(p->err, p->errlen, "%s:%u: tenant %s sets %s but not %s; set both or neither", src,
                 t->access_key ? t->ak_line : t->sk_line, t->name,
                 t->access_key ? "aws_access_key_id" : "aws_secret_access_key",
                 t->access_key ? "aws_secret_access_key" : "aws_access_key_id");
        return -EINVAL;
    }
    if (t->session_token != NULL && t->access_key == NULL) {
        errf_set(p->err, p->errlen,
                 "%s:%u: tenant %s sets aws_session_token without "
                 "aws_access_key_id and aws_secret_access_key; set all three or drop it",
                 src, t->st_line, t->name);
        return -EINVAL;
    }
    if ((t->s3api_key == NULL) != (t->s3api_secret == NULL)) {
        errf_set(p->err, p->errlen, "%s:%u: tenant %s sets %s but not %s; set both or neither", src,
                 t->s3api_key ? t->s3k_line : t->s3s_line, t->name,
                 t->s3api_key ? "s3api_access_key_id" : "s3api_secret_access_key",
                 t->s3api_key ? "s3api_secret_access_key" : "s3api_access_key_id");
        return -EINVAL;
    }
    for (size_t i = 0; i + 1 < p->set->n; i++) {
        const ten_tenant *o = &p->set->t[i];
        if (t->s3api_key && o->s3api_key && strcmp(o->s3api_key, t->s3api_key) == 0) {
            errf_set(p->err, p->errlen,
                     "%s:%u: tenant %s has the same s3api_access_key_id as "
                     "tenant %s (line %u); give every tenant its own",
                     src, t->s3k_line, t->name, o->name, o->s3k_line);
            return -EINVAL;
        }
        if (t->token_line == 0 || o->token_line == 0)
            continue; /* a tenant of the S3 API only has no token to compare */
        if (CRYPTO_memcmp(o->digest, t->digest, sizeof t->digest) == 0) {
            errf_set(p->err, p->errlen,
                     "%s:%u: tenant %s has the same token as tenant %s (line "
                     "%u); give every tenant its own token",
                     src, t->token_line, t->name, o->name, o->token_line);
            return -EINVAL;
        }
    }
    return 0;
}

static int open_section(parser *p, const char *hdr)
{
    int rc = close_section(p);
    if (rc != 0)
        return rc;
    if (strncmp(hdr, "tenant", 6) != 0 || !is_space(hdr[6])) {
        errf_set(p->err, p->errlen, "%s:%u: unknown section [%.40s]; sections are [tenant NAME]",
                 p->src, p->line, hdr);
        return -EINVAL;
    }
    const char *name = hdr + 7;
    while (is_space(*name))
        name++;
    size_t len = strlen(name);
    bool ok = len > 0 && len <= TEN_NAME_MAX;
    for (size_t i = 0; ok && i < len; i++)
        ok = name_char(name[i]);
    if (!ok) {
        errf_set(p->err, p->errlen,
                 "%s:%u: tenant name '%.40s' is not 1 to %d letters, digits, "
                 "'.', '_' or '-'",
                 p->src, p->line, name, TEN_NAME_MAX);
        return -EINVAL;
    }
    ten_set *s = p->set;
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->t[i].name, name) == 0) {
            errf_set(p->err, p->errlen,
                     "%s:%u: tenant %s is already defined on line %u; merge the "
                     "two sections or rename one",
                     p->src, p->line, name, s->t[i].line);
            return -EINVAL;
        }
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        ten_tenant *nt = realloc(s->t, cap * sizeof *nt);
        if (nt == NULL)
            return -ENOMEM;
        s->t = nt;
        s->cap = cap;
    }
    ten_tenant *t = &s->t[s->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (t->name == NULL)
        return -ENOMEM;
    t->line = p->line;
    s->n++;
    p->cur = t;
    return 0;
}

int ten_parse(ten_set **out, const char *text, size_t len, const char *source, char *err,
              size_t errlen)
{
    *out = NULL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    const char *src = source != NULL ? source : "tenants file";
    ten_set *s = calloc(1, sizeof *s);
    char *buf = malloc(len + 1);
    if (s == NULL || buf == NULL) {
        free(s);
        free(buf);
        errf_set(err, errlen, "out of memory reading %s", src);
        return -ENOMEM;
    }
    parser p = {s, NULL, src, 0, err, errlen};
    int rc = 0;
    size_t pos = 0;
    char why[160];
    while (rc == 0) {
        size_t start = pos;
        int got = cfg_next_line(text, len, &pos, &p.line, buf, src, err, errlen);
        if (got <= 0) {
            rc = got;
            break;
        }
        char *key = NULL, *val = NULL;
        switch (split_line(buf, &key, &val, why, sizeof why)) {
        case L_BLANK: break;
        case L_ERR:
            errf_set(err, errlen, "%s:%u: %s", src, p.line, why);
            rc = -EINVAL;
            break;
        case L_SECTION: rc = open_section(&p, key); break;
        case L_KV: rc = key_value(&p, key, val); break;
        }
        OPENSSL_cleanse(buf, pos - start < len + 1 ? pos - start : len + 1); /* the line */
    }
    if (rc == 0)
        rc = close_section(&p);
    if (rc == 0 && s->n == 0) {
        errf_set(err, errlen,
                 "%s defines no tenant; add a [tenant NAME] section with a token and "
                 "an allow line",
                 src);
        rc = -EINVAL;
    }
    free(buf);
    if (rc == -ENOMEM)
        errf_set(err, errlen, "out of memory reading %s", src);
    if (rc != 0) {
        ten_destroy(&s);
        return rc;
    }
    *out = s;
    return 0;
}

int ten_load(ten_set **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    char *buf = NULL;
    size_t n = 0;
    int rc = cfg_read_file(path, TEN_MAX_FILE, "tenants file", "--tenants", &buf, &n, err, errlen);
    if (rc != 0)
        return rc;
    size_t sl = strlen(path) + sizeof "tenants file ";
    char *source = malloc(sl);
    if (source == NULL) {
        errf_set(err, errlen, "out of memory reading tenants file %s", path);
        rc = -ENOMEM;
    } else {
        snprintf(source, sl, "tenants file %s", path);
        rc = ten_parse(out, buf, n, source, err, errlen);
        free(source);
    }
    OPENSSL_cleanse(buf, n);
    free(buf);
    return rc;
}

/* ---- lookups ------------------------------------------------------------ */

const ten_tenant *ten_find(const ten_set *s, const char *token, size_t len)
{
    if (s == NULL || token == NULL || len == 0 || len > TEN_TOKEN_MAX)
        return NULL;
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, len, d);
    const ten_tenant *found = NULL;
    /* every digest is compared, whichever matches */
    for (size_t i = 0; i < s->n; i++) {
        int diff = CRYPTO_memcmp(s->t[i].digest, d, sizeof d);
        found = diff == 0 ? &s->t[i] : found;
    }
    OPENSSL_cleanse(d, sizeof d);
    return found;
}

bool ten_token_equal(const char *want, size_t wlen, const char *token, size_t len)
{
    if (want == NULL || wlen == 0 || (token == NULL && len > 0))
        return false;
    unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)want, wlen, a);
    SHA256((const unsigned char *)(token ? token : ""), len, b);
    bool eq = CRYPTO_memcmp(a, b, sizeof a) == 0;
    OPENSSL_cleanse(a, sizeof a);
    OPENSSL_cleanse(b, sizeof b);
    return eq;
}

static bool v6_is_loopback(const struct in6_addr *a)
{
    static const uint8_t one[16] = {[15] = 1};
    static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
    return memcmp(a->s6_addr, one, 16) == 0 ||
           (memcmp(a->s6_addr, mapped, 12) == 0 && a->s6_addr[12] == 127);
}

bool ten_addr_is_loopback(const struct sockaddr *sa)
{
    if (sa == NULL)
        return false;
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr) >> 24) ==
               127;
    if (sa->sa_family == AF_INET6)
        return v6_is_loopback(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
    return false;
}

bool ten_addr_text_is_loopback(const char *ip)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (ip == NULL)
        return false;
    if (inet_pton(AF_INET, ip, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, ip, &a6) == 1 && v6_is_loopback(&a6);
}

bool ten_allows(const ten_tenant *t, const char *bucket, size_t blen, const char *key, size_t klen)
{
    if (t == NULL || bucket == NULL || (key == NULL && klen > 0))
        return false;
    for (size_t i = 0; i < t->n_allow; i++) {
        const ten_prefix *a = &t->allow[i];
        if (a->blen == blen && memcmp(a->bucket, bucket, blen) == 0 && klen >= a->plen &&
            (a->plen == 0 || memcmp(a->prefix, key, a->plen) == 0))
            return true;
    }
    return false;
}

const char *ten_name(const ten_tenant *t)
{
    return t->name;
}

const char *ten_access_key(const ten_tenant *t)
{
    return t->access_key;
}

const char *ten_secret_key(const ten_tenant *t)
{
    return t->secret_key;
}

const char *ten_session_token(const ten_tenant *t)
{
    return t->session_token;
}

const char *ten_s3api_secret(const ten_tenant *t)
{
    return t->s3api_secret;
}

bool ten_public(const ten_tenant *t)
{
    return t->is_public;
}

const ten_tenant *ten_find_s3api_key(const ten_set *s, const char *access_key)
{
    if (s == NULL || access_key == NULL)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (s->t[i].s3api_key && strcmp(s->t[i].s3api_key, access_key) == 0)
            return &s->t[i];
    return NULL;
}

const ten_tenant *ten_find_name(const ten_set *s, const char *name, size_t len)
{
    for (size_t i = 0; s != NULL && i < s->n; i++)
        if (strlen(s->t[i].name) == len && memcmp(s->t[i].name, name, len) == 0)
            return &s->t[i];
    return NULL;
}

bool ten_allows_bucket(const ten_tenant *t, const char *bucket, size_t blen)
{
    for (size_t i = 0; t != NULL && i < t->n_allow; i++)
        if (t->allow[i].blen == blen && memcmp(t->allow[i].bucket, bucket, blen) == 0)
            return true;
    return false;
}

size_t ten_bucket_count(const ten_tenant *t)
{
    return t != NULL ? t->n_allow : 0;
}

const char *ten_bucket_at(const ten_tenant *t, size_t i)
{
    return t != NULL && i < t->n_allow ? t->allow[i].bucket : NULL;
}

size_t ten_count(const ten_set *s)
{
    return s != NULL ? s->n : 0;
}

const ten_tenant *ten_at(const ten_set *s, size_t i)
{
    return s != NULL && i < s->n ? &s->t[i] : NULL;
}
