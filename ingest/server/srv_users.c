/* SPDX-License-Identifier: Apache-2.0
 *
 * srv_users.c: who may query the server (--users FILE) and with which
 * settings profile:
 *
 *   # one section per user
 *   [user alice]
 *   password_sha256_hex = 2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b
 *   networks = 10.0.0.0/8, 127.0.0.1, ::1   # where alice may connect from (default: anywhere)
 *   readonly = 1                             # the profile: 0, 1 or 2
 *   max_memory_usage = 10GiB                 # per query
 *   max_execution_time = 60                  # seconds
 *   database = default                       # the default database
 *
 * A user without password_sha256_hex has no password. Without a users file
 * there is one user, `default`, with no password, who may connect from this
 * host only (127.0.0.0/8 and ::1): a server that listens on other addresses
 * needs a users file to serve them. The grammar is the config file's
 * (config.h), one section per user; section names are [A-Za-z0-9._-]{1,63}.
 *
 * Passwords are kept only as SHA-256 digests and compared in constant time;
 * no message contains a password.
 *
 * Thread-safety: a srv_users is immutable once loaded: any number of threads
 * may authenticate at once.
 */
#include "srv_int.h"

#include "config.h"
#include "readfile.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define USERS_MAX_FILE (4u << 20)

struct srv_users {
    srv_user *u;
    int n;
};

/* What one section's lines fill (cfg_load_text's table). */
typedef struct user_conf {
    char password_sha256_hex[80];
    char networks[2048];
    int64_t readonly;
    int64_t max_memory_usage;
    int64_t max_execution_time;
    char database[128];
} user_conf;

#define U(f) offsetof(user_conf, f), sizeof(((user_conf *)0)->f)
static const cfg_opt user_opts[] = {
    {"password_sha256_hex", CFG_STR, NULL, "SHA-256 of the password, 64 hex digits",
     U(password_sha256_hex), 0, 0, true, false},
    {"networks", CFG_STR, NULL, "addresses and networks the user may connect from", U(networks), 0,
     0, false, false},
    {"readonly", CFG_INT, NULL, "0, 1 or 2", U(readonly), 0, 2, false, false},
    {"max_memory_usage", CFG_SIZE, NULL, "bytes per query", U(max_memory_usage), 0, INT64_MAX,
     false, false},
    {"max_execution_time", CFG_INT, NULL, "seconds per query", U(max_execution_time), 0,
     86400 * 365, false, false},
    {"database", CFG_STR, NULL, "the default database", U(database), 0, 0, false, false},
};

int srv_net_parse(const char *text, srv_net *out)
{
    char buf[80];
    memset(out, 0, sizeof(*out));
    if (strcmp(text, "any") == 0) {
        out->family = AF_INET6;
        out->prefix = -1; /* everything, v4 and v6 */
        return 0;
    }
    if (strlen(text) >= sizeof(buf))
        return -EINVAL;
    snprintf(buf, sizeof(buf), "%s", text);
    int prefix = -1;
    char *slash = strchr(buf, '/');
    if (slash) {
        *slash = 0;
        char *end;
        long p = strtol(slash + 1, &end, 10);
        if (!slash[1] || *end || p < 0 || p > 128)
            return -EINVAL;
        prefix = (int)p;
    }
    if (inet_pton(AF_INET, buf, out->addr) == 1) {
        out->family = AF_INET;
        if (prefix > 32)
            return -EINVAL;
        out->prefix = prefix < 0 ? 32 : prefix;
        return 0;
    }
    if (inet_pton(AF_INET6, buf, out->addr) == 1) {
        out->family = AF_INET6;
        out->prefix = prefix < 0 ? 128 : prefix;
        return 0;
    }
    return -EINVAL;
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, int bits)
{
    int full = bits / 8, rest = bits % 8;
    if (memcmp(a, b, (size_t)full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (b[full] & mask);
}

bool srv_net_contains(const srv_net *n, const struct sockaddr *sa)
{
    if (n->prefix < 0)
        return true;
    uint8_t v4[4], v6[16];
    bool is4 = false;
    if (sa->sa_family == AF_INET) {
        memcpy(v4, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        is4 = true;
    } else if (sa->sa_family == AF_INET6) {
        memcpy(v6, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(v6, mapped, 12) == 0) {
            memcpy(v4, v6 + 12, 4);
            is4 = true;
        }
    } else {
        return false;
    }
    if (n->family == AF_INET)
        return is4 && prefix_match(n->addr, v4, n->prefix);
    return !is4 && prefix_match(n->addr, v6, n->prefix);
}

/* "10.0.0.0/8, ::1 127.0.0.1" -> networks. 0 or -EINVAL with the bad word. */
static int parse_networks(const char *text, srv_user *u, char *bad, size_t badlen)
{
    char buf[2048];
    snprintf(buf, sizeof(buf), "%s", text);
    for (char *save = NULL, *w = strtok_r(buf, ", \t", &save); w;
         w = strtok_r(NULL, ", \t", &save)) {
        srv_net n;
        if (srv_net_parse(w, &n) < 0) {
            snprintf(bad, badlen, "%s", w);
            return -EINVAL;
        }
        srv_net *a = realloc(u->nets, sizeof(srv_net) * (size_t)(u->n_nets + 1));
        if (!a)
            return -ENOMEM;
        u->nets = a;
        u->nets[u->n_nets++] = n;
    }
    return 0;
}

static int add_default(srv_users *us)
{
    srv_user *u = &us->u[us->n++];
    memset(u, 0, sizeof(*u));
    snprintf(u->name, sizeof(u->name), "default");
    u->readonly = -1;
    u->max_memory_usage = -1;
    u->max_execution_time = -1;
    char bad[8];
    return parse_networks("127.0.0.0/8 ::1", u, bad, sizeof(bad));
}

void srv_users_destroy(srv_users **pu)
{
    if (!pu || !*pu)
        return;
    srv_users *us = *pu;
    for (int i = 0; i < us->n; i++) {
        free(us->u[i].nets);
        OPENSSL_cleanse(us->u[i].sha256, sizeof(us->u[i].sha256));
    }
    free(us->u);
    free(us);
    *pu = NULL;
}

static int hex_digest(const char *hex, uint8_t out[32])
{
    if (strlen(hex) != 64)
        return -EINVAL;
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (!isxdigit((unsigned char)hex[2 * i]) || !isxdigit((unsigned char)hex[2 * i + 1]) ||
            sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -EINVAL;
        out[i] = (uint8_t)v;
    }
    return 0;
}

static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
            return false;
    return true;
}

int srv_users_parse(srv_users **out, const char *text, size_t len, const char *source, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (memchr(text, 0, len)) {
        snprintf(err, errlen, "%s holds a NUL byte: it must be a text file", source);
        return -EINVAL;
    }
    srv_users *us = calloc(1, sizeof(*us));
    /* at most one user per line */
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    if (!us || !(us->u = calloc(lines + 1, sizeof(srv_user)))) {
        free(us);
        snprintf(err, errlen, "out of memory reading %s", source);
        return -ENOMEM;
    }
    /* a copy in which the lines of other sections are blanked, so that the
     * config parser's line numbers are the file's */
    char *masked = malloc(len + 1);
    if (!masked) {
        srv_users_destroy(&us);
        snprintf(err, errlen, "out of memory reading %s", source);
        return -ENOMEM;
    }
    int rc = 0;
    size_t pos = 0;
    int line = 0;
    /* sections: find each "[user NAME]" header */
    size_t sec_start = 0;
    srv_user *cur = NULL;
    int cur_line = 0;
    for (;;) {
        bool at_end = pos >= len;
        size_t eol = pos;
        while (eol < len && text[eol] != '\n')
            eol++;
        const char *l = text + pos;
        size_t ll = eol - pos;
        while (ll && (l[0] == ' ' || l[0] == '\t')) {
            l++;
            ll--;
        }
        while (ll && (l[ll - 1] == ' ' || l[ll - 1] == '\t' || l[ll - 1] == '\r'))
            ll--;
        bool header = !at_end && ll && l[0] == '[';
        if ((header || at_end) && cur) {
            /* the finished section: its lines through the config parser */
            memset(masked, ' ', len);
            masked[len] = 0;
            for (size_t i = 0; i < len; i++)
                if (text[i] == '\n')
                    masked[i] = '\n';
            memcpy(masked + sec_start, text + sec_start, pos - sec_start);
            user_conf uc = {.readonly = -1, .max_memory_usage = -1, .max_execution_time = -1};
            char src[1200];
            snprintf(src, sizeof(src), "%s (user %s)", source, cur->name);
            rc = cfg_load_text(user_opts, sizeof(user_opts) / sizeof(user_opts[0]), &uc, masked,
                               len, src, err, errlen);
            if (rc < 0)
                break;
            cur->readonly = (int)uc.readonly;
            cur->max_memory_usage = uc.max_memory_usage;
            cur->max_execution_time = (double)uc.max_execution_time;
            snprintf(cur->database, sizeof(cur->database), "%s", uc.database);
            if (uc.password_sha256_hex[0]) {
                if (hex_digest(uc.password_sha256_hex, cur->sha256) < 0) {
                    snprintf(err, errlen,
                             "%s:%d: password_sha256_hex of user %s must be 64 hex digits (the "
                             "output of: printf %%s PASSWORD | sha256sum)",
                             source, cur_line, cur->name);
                    rc = -EINVAL;
                    break;
                }
                cur->has_password = true;
            }
            char bad[128] = "";
            if (uc.networks[0]) {
                rc = parse_networks(uc.networks, cur, bad, sizeof(bad));
                if (rc == -EINVAL)
                    snprintf(err, errlen,
                             "%s: user %s: '%s' in networks is not an address or a network "
                             "(write 10.0.0.0/8, 127.0.0.1, ::1 or any)",
                             source, cur->name, bad);
                if (rc < 0)
                    break;
            } else {
                parse_networks("any", cur, bad, sizeof(bad));
            }
            cur = NULL;
        }
        if (at_end)
            break;
        line++;
        if (header) {
            const char *nm = l + 1;
            size_t nl = ll >= 2 && l[ll - 1] == ']' ? ll - 2 : 0;
            if (nl < 6 || strncmp(nm, "user ", 5) != 0 || !valid_name(nm + 5, nl - 5)) {
                snprintf(err, errlen,
                         "%s:%d: a section is [user NAME], NAME of letters, digits, '.', '_' "
                         "and '-' (at most 63)",
                         source, line);
                rc = -EINVAL;
                break;
            }
            for (int i = 0; i < us->n; i++)
                if (strlen(us->u[i].name) == nl - 5 &&
                    strncmp(us->u[i].name, nm + 5, nl - 5) == 0) {
                    snprintf(err, errlen, "%s:%d: user %.*s is defined twice", source, line,
                             (int)(nl - 5), nm + 5);
                    rc = -EINVAL;
                }
            if (rc)
                break;
            cur = &us->u[us->n++];
            snprintf(cur->name, sizeof(cur->name), "%.*s", (int)(nl - 5), nm + 5);
            cur_line = line;
            sec_start = eol < len ? eol + 1 : len;
        } else if (!cur && ll && l[0] != '#') {
            snprintf(err, errlen, "%s:%d: a setting outside a [user NAME] section", source, line);
            rc = -EINVAL;
            break;
        }
        pos = eol < len ? eol + 1 : len;
        if (eol >= len)
            pos = len;
        if (pos >= len && !cur)
            break;
    }
    free(masked);
    if (rc == 0 && us->n == 0) {
        snprintf(err, errlen, "%s defines no user: add a [user NAME] section", source);
        rc = -EINVAL;
    }
    if (rc < 0) {
        srv_users_destroy(&us);
        return rc;
    }
    *out = us;
    return 0;
}

int srv_users_load(srv_users **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    if (!path || !path[0]) {
        srv_users *us = calloc(1, sizeof(*us));
        if (us && !(us->u = calloc(1, sizeof(srv_user)))) {
            free(us);
            us = NULL;
        }
        if (!us || add_default(us) < 0) {
            srv_users_destroy(&us);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        *out = us;
        return 0;
    }
    char *buf = NULL;
    size_t n = 0;
    int rc =
        readfile_all(path, USERS_MAX_FILE, "users file", "check --users", &buf, &n, err, errlen);
    if (rc < 0)
        return rc;
    char src[1100];
    snprintf(src, sizeof(src), "users file %s", path);
    rc = srv_users_parse(out, buf, n, src, err, errlen);
    OPENSSL_cleanse(buf, n);
    free(buf);
    return rc;
}

static const char *addr_text(const struct sockaddr *sa, char *buf, size_t cap)
{
    buf[0] = 0;
    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)cap);
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)cap);
    return buf;
}

int srv_users_auth(const srv_users *us, const char *name, const char *password,
                   bool credentials_given, const struct sockaddr *peer, const srv_user **out,
                   char *err, size_t errlen)
{
    *out = NULL;
    if (!name || !name[0])
        name = "default";
    const srv_user *u = NULL;
    for (int i = 0; i < us->n; i++)
        if (strcmp(us->u[i].name, name) == 0)
            u = &us->u[i];
    uint8_t md[32] = {0};
    unsigned int ml = 0;
    const char *pw = password ? password : "";
    EVP_Digest(pw, strlen(pw), md, &ml, EVP_sha256(), NULL);
    bool ok = u && (u->has_password ? CRYPTO_memcmp(md, u->sha256, 32) == 0 : !pw[0]);
    OPENSSL_cleanse(md, sizeof(md));
    if (u && u->has_password && !credentials_given) {
        snprintf(err, errlen,
                 "%.63s: password is required: send it with Basic authentication, "
                 "X-ClickHouse-Key or the password parameter",
                 name);
        return ENG_E_REQUIRED_PASSWORD;
    }
    if (!ok) {
        snprintf(err, errlen,
                 "%.63s: Authentication failed: password is incorrect, or there is no user with "
                 "such name",
                 name);
        return ENG_E_AUTHENTICATION_FAILED;
    }
    bool allowed = false;
    for (int i = 0; i < u->n_nets && !allowed; i++)
        allowed = peer && srv_net_contains(&u->nets[i], peer);
    if (!allowed) {
        char a[64];
        snprintf(err, errlen,
                 "%.63s: Authentication failed: the user may not connect from %s (its networks; "
                 "without a users file, the default user serves this host only)",
                 name, addr_text(peer, a, sizeof(a)));
        return ENG_E_AUTHENTICATION_FAILED;
    }
    *out = u;
    return 0;
}

void srv_user_profile(const srv_user *u, srv_qset *q)
{
    if (u->readonly >= 0)
        q->readonly = (uint64_t)u->readonly;
    if (u->max_memory_usage >= 0)
        q->eng.max_memory_usage = u->max_memory_usage;
    if (u->max_execution_time >= 0)
        q->max_execution_time = u->max_execution_time;
}
