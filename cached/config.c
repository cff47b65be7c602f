/* SPDX-License-Identifier: Apache-2.0
 *
 * config.c: the table-driven option loader of config.h. One parser per value
 * type is shared by the file, the flags and the defaults, so the three cannot
 * disagree; one formatter per type writes values back in a form the parser
 * reads to the same bytes (cfg_format -> cfg_load_text is a round trip).
 * Messages never echo the value of a secret option.
 */
#include "config.h"

#include "bytesize.h"
#include "errf.h"
#include "readfile.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CFG_MAX_FILE (1u << 20)
#define CFG_WHY      512

/* ---- the table ---------------------------------------------------------- */

static int find_opt(const cfg_opt *opts, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

/* Edit distance, for "did you mean": names are short, so a row on the stack. */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    enum { CAP = 64 };
    if (la >= CAP)
        la = CAP - 1;
    if (lb >= CAP)
        lb = CAP - 1;
    size_t row[CAP];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            /* '_' and '-' are near-synonyms: data_dir means data-dir */
            char ca = a[i - 1] == '_' ? '-' : (char)tolower((unsigned char)a[i - 1]);
            char cb = b[j - 1];
            size_t best = diag + (ca == cb ? 0 : 1);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static const char *suggest(const cfg_opt *opts, size_t n, const char *name, size_t len)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(name, len, opts[i].name, strlen(opts[i].name));
        if (d < best_d) {
            best_d = d;
            best = opts[i].name;
        }
    }
    size_t limit = len / 3 > 2 ? len / 3 : 2;
    return best_d <= limit ? best : NULL;
}

static int check_table(const cfg_opt *opts, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const cfg_opt *o = &opts[i];
        const char *bad = NULL;
        if (o->name == NULL || o->name[0] == '\0')
            bad = "has no name";
        else if (strcmp(o->name, "config") == 0 || strcmp(o->name, "help") == 0)
            bad = "uses a reserved name";
        else if (o->type == CFG_STR && o->size == 0)
            bad = "is a string with a zero-sized buffer";
        else if ((o->type == CFG_INT || o->type == CFG_SIZE || o->type == CFG_MS) &&
                 o->size != sizeof(int64_t))
            bad = "is numeric but its field is not an int64_t";
        else if (o->type == CFG_BOOL && o->size != sizeof(bool))
            bad = "is a boolean but its field is not a bool";
        else if (o->type > CFG_MS)
            bad = "has an unknown type";
        else if (find_opt(opts, i, o->name, strlen(o->name)) >= 0)
            bad = "appears twice";
        if (bad != NULL) {
            errf_set(err, errlen, "option table entry %zu (%s) %s; fix the table in the source", i,
                     o->name != NULL ? o->name : "?", bad);
            return -EINVAL;
        }
    }
    return 0;
}

/* ---- values ------------------------------------------------------------- */

typedef struct unit {
    const char *name;
    int64_t mult;
} unit;

static const unit ms_units[] = {
    {"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
};

/* digits + unit, no sign; -EINVAL if malformed, -ERANGE on overflow. */
static int parse_scaled(const char *v, const unit *units, size_t nunits, int64_t *out)
{
    const char *p = v;
    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    int64_t num = 0;
    bool overflow = false;
    for (; isdigit((unsigned char)*p); p++) {
        int d = *p - '0';
        if (num > (INT64_MAX - d) / 10)
            overflow = true;
        else
            num = num * 10 + d;
    }
    for (size_t i = 0; i < nunits; i++) {
        if (strcasecmp(p, units[i].name) == 0) {
            if (overflow || (num != 0 && units[i].mult > INT64_MAX / num))
                return -ERANGE;
            *out = num * units[i].mult;
            return 0;
        }
    }
    return -EINVAL;
}

static int parse_int(const char *v, int64_t *out)
{
    const char *p = v;
    if (*p == '+' || *p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    errno = 0;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (*end != '\0')
        return -EINVAL;
    if (errno == ERANGE)
        return -ERANGE;
    *out = x;
    return 0;
}

static int parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -EINVAL;
}

static void fmt_scaled(int64_t v, const unit *units, const char *const *names, size_t n, char *buf,
                       size_t cap)
{
    /* units[] and names[] go from the largest unit down */
    for (size_t i = 0; i < n; i++) {
        if (v != 0 && v % units[i].mult == 0) {
            snprintf(buf, cap, "%" PRId64 "%s", v / units[i].mult, names[i]);
            return;
        }
    }
    snprintf(buf, cap, "%" PRId64, v);
}

static void fmt_size(int64_t v, char *buf, size_t cap)
{
    if (v < 0)
        snprintf(buf, cap, "%" PRId64, v); /* only a table's min can be */
    else
        bytesize_format((uint64_t)v, buf, cap);
}

static void fmt_ms(int64_t v, char *buf, size_t cap)
{
    static const unit u[] = {{"", 3600000}, {"", 60000}, {"", 1000}, {"", 1}};
    static const char *const names[] = {"h", "m", "s", "ms"};
    if (v == 0) {
        snprintf(buf, cap, "0ms");
        return;
    }
    fmt_scaled(v, u, names, 4, buf, cap);
}

static void fmt_num(const cfg_opt *o, int64_t v, char *buf, size_t cap)
{
    if (o->type == CFG_SIZE)
        fmt_size(v, buf, cap);
    else if (o->type == CFG_MS)
        fmt_ms(v, buf, cap);
    else
        snprintf(buf, cap, "%" PRId64, v);
}

/* Parses v for option o and stores it into conf. On error writes the reason
 * (without the option's name) into why. */
static int apply_value(const cfg_opt *o, const char *v, void *conf, char *why, size_t whylen)
{
    char shown[80];
    if (o->secret)
        snprintf(shown, sizeof shown, "the value");
    else
        snprintf(shown, sizeof shown, "'%.64s%s'", v, strlen(v) > 64 ? "..." : "");
    char *field = (char *)conf + o->offset;

    if (o->type == CFG_STR) {
        size_t len = strlen(v);
        if (len >= o->size) {
            snprintf(why, whylen, "the value is %zu bytes long, more than the %zu allowed", len,
                     o->size - 1);
            return -EINVAL;
        }
        memcpy(field, v, len + 1);
        return 0;
    }
    if (o->type == CFG_BOOL) {
        bool b;
        if (parse_bool(v, &b) != 0) {
            snprintf(why, whylen, "%s is not a boolean (use true or false)", shown);
            return -EINVAL;
        }
        memcpy(field, &b, sizeof b);
        return 0;
    }

    int64_t x = 0;
    int rc;
    const char *what;
    if (o->type == CFG_INT) {
        rc = parse_int(v, &x);
        what = "is not an integer";
    } else if (o->type == CFG_SIZE) {
        uint64_t u = 0;
        rc = bytesize_parse(v, &u, why, whylen);
        if (rc == -EINVAL && o->secret)
            snprintf(why, whylen, "the value is not a size (use 64KiB, 1MiB, 2GiB)");
        if (rc == -EINVAL)
            return rc; /* the sentence names the value and the fix */
        x = (int64_t)u;
        what = "";
    } else {
        rc = parse_scaled(v, ms_units, sizeof ms_units / sizeof ms_units[0], &x);
        what = "is not a duration (use 500ms, 2s, 1m or 1h)";
    }
    if (rc == -EINVAL) {
        snprintf(why, whylen, "%s %s", shown, what);
        return -EINVAL;
    }
    if (rc == -ERANGE || (o->max > o->min && (x < o->min || x > o->max))) {
        char lo[32], hi[32];
        fmt_num(o, o->min, lo, sizeof lo);
        fmt_num(o, o->max, hi, sizeof hi);
        if (o->max > o->min)
            snprintf(why, whylen, "%s is out of range (use %s to %s)", shown, lo, hi);
        else
            snprintf(why, whylen, "%s is too large", shown);
        return -EINVAL;
    }
    memcpy(field, &x, sizeof x);
    return 0;
}

static bool value_is_set(const cfg_opt *o, const void *conf)
{
    return o->type != CFG_STR || ((const char *)conf + o->offset)[0] != '\0';
}

/* ---- the file grammar --------------------------------------------------- */

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

int cfg_next_line(const char *text, size_t len, size_t *pos, unsigned *lineno, char *buf,
                  const char *source, char *err, size_t errlen)
{
    if (*pos >= len)
        return 0;
    ++*lineno;
    size_t end = *pos;
    while (end < len && text[end] != '\n')
        end++;
    size_t ll = end - *pos;
    if (memchr(text + *pos, '\0', ll) != NULL) {
        errf_set(err, errlen, "%s:%u: the line contains a NUL byte (is this a text file?)", source,
                 *lineno);
        return -EINVAL;
    }
    memcpy(buf, text + *pos, ll);
    if (ll > 0 && buf[ll - 1] == '\r')
        ll--;
    buf[ll] = '\0';
    *pos = end + 1;
    return 1;
}

int cfg_split_line(char *line, const char *or_else, char **key, char **val, char *why,
                   size_t whylen)
{
    char *p = line;
    while (is_space(*p))
        p++;
    if (*p == '\0' || *p == '#')
        return 0;
    char *k = p;
    while (*p != '\0' && *p != '=' && !is_space(*p))
        p++;
    char *kend = p;
    while (is_space(*p))
        p++;
    if (*p != '=' || kend == k) {
        snprintf(why, whylen, "expected `key = value`%s%s", or_else ? " or " : "",
                 or_else ? or_else : "");
        return -EINVAL;
    }
    *kend = '\0';
    p++;
    while (is_space(*p))
        p++;
    if (*p == '"') {
        char *out = p;
        char *q = p + 1;
        char *v = out;
        for (;;) {
            if (*q == '\0') {
                snprintf(why, whylen, "the quoted value has no closing quote");
                return -EINVAL;
            }
            if (*q == '"')
                break;
            if (*q == '\\') {
                q++;
                switch (*q) {
                case '"': *out++ = '"'; break;
                case '\\': *out++ = '\\'; break;
                case 'n': *out++ = '\n'; break;
                case 't': *out++ = '\t'; break;
                case 'r': *out++ = '\r'; break;
                default:
                    snprintf(why, whylen,
                             "unknown escape in a quoted value (use \\\" \\\\ \\n \\t or \\r)");
                    return -EINVAL;
                }
                q++;
                continue;
            }
            *out++ = *q++;
        }
        q++;
        while (is_space(*q))
            q++;
        if (*q != '\0' && *q != '#') {
            snprintf(why, whylen, "text after the closing quote (start a comment with #)");
            return -EINVAL;
        }
        *out = '\0';
        *key = k;
        *val = v;
        return 1;
    }
    char *v = p;
    char *end = p;
    for (; *p != '\0'; p++) {
        if (*p == '#' && (p == v || is_space(p[-1])))
            break;
        if (!is_space(*p))
            end = p + 1;
    }
    *end = '\0';
    *key = k;
    *val = v;
    return 1;
}

static int load_text(const cfg_opt *opts, size_t n, void *conf, const char *text, size_t len,
                     const char *source, bool *set, char *err, size_t errlen)
{
    char *buf = malloc(len + 1);
    unsigned *line_of = calloc(n ? n : 1, sizeof *line_of);
    if (buf == NULL || line_of == NULL) {
        free(buf);
        free(line_of);
        errf_set(err, errlen, "out of memory reading %s", source);
        return -ENOMEM;
    }
    int rc = 0;
    unsigned lineno = 0;
    size_t pos = 0;
    char why[CFG_WHY];
    while (rc == 0) {
        int got = cfg_next_line(text, len, &pos, &lineno, buf, source, err, errlen);
        if (got <= 0) {
            rc = got;
            break;
        }
        char *key, *val;
        int s = cfg_split_line(buf, NULL, &key, &val, why, sizeof why);
        if (s < 0) {
            errf_set(err, errlen, "%s:%u: %s", source, lineno, why);
            rc = -EINVAL;
            break;
        }
        if (s == 0)
            continue;
        int i = find_opt(opts, n, key, strlen(key));
        if (i < 0) {
            if (strcmp(key, "config") == 0) {
                errf_set(err, errlen,
                         "%s:%u: `config` cannot be set inside a config file (pass --config once)",
                         source, lineno);
            } else {
                const char *s2 = suggest(opts, n, key, strlen(key));
                errf_set(err, errlen, "%s:%u: unknown key '%.64s'%s%s%s", source, lineno, key,
                         s2 ? " (did you mean '" : " (see --help for the known keys)", s2 ? s2 : "",
                         s2 ? "'?)" : "");
            }
            rc = -EINVAL;
            break;
        }
        if (line_of[i] != 0) {
            errf_set(err, errlen, "%s:%u: key '%s' is already set on line %u; keep one of the two",
                     source, lineno, key, line_of[i]);
            rc = -EINVAL;
            break;
        }
        line_of[i] = lineno;
        if (apply_value(&opts[i], val, conf, why, sizeof why) != 0) {
            errf_set(err, errlen, "%s:%u: %s: %s", source, lineno, opts[i].name, why);
            rc = -EINVAL;
            break;
        }
        if (set != NULL)
            set[i] = true;
    }
    free(buf);
    free(line_of);
    return rc;
}

int cfg_load_text(const cfg_opt *opts, size_t n, void *conf, const char *text, size_t len,
                  const char *source, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    int rc = check_table(opts, n, err, errlen);
    if (rc != 0)
        return rc;
    return load_text(opts, n, conf, text, len, source ? source : "config", NULL, err, errlen);
}

int cfg_read_file(const char *path, size_t max, const char *what, const char *flag, char **out,
                  size_t *len, char *err, size_t errlen)
{
    char fix[160];
    snprintf(fix, sizeof fix, "fix the path given to %s", flag);
    return readfile_all(path, max, what, fix, out, len, err, errlen);
}

int cfg_write_port_file(const char *path, int port, const char *what, const char *flag, char *err,
                        size_t errlen)
{
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (tmp == NULL) {
        errf_set(err, errlen, "out of memory writing the %s", what);
        return -ENOMEM;
    }
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    int rc = 0;
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        rc = -errno;
    } else {
        if (fprintf(f, "%d\n", port) < 0)
            rc = -EIO;
        if (fclose(f) != 0 && rc == 0)
            rc = -errno;
        if (rc == 0 && rename(tmp, path) != 0)
            rc = -errno;
        if (rc != 0)
            unlink(tmp);
    }
    if (rc != 0)
        errf_set(err, errlen, "cannot write the %s %s: %s (set %s to a path in a writable folder)",
                 what, path, strerror(-rc), flag);
    free(tmp);
    return rc;
}

/* ---- flags -------------------------------------------------------------- */

enum tok_kind { TOK_HELP, TOK_CONFIG, TOK_OPT, TOK_ERR };

typedef struct tok {
    enum tok_kind kind;
    int opt;           /* TOK_OPT: index in the table */
    const char *value; /* TOK_CONFIG, TOK_OPT */
    char flag[80];     /* how the user spelled the flag, for messages */
} tok;

/* Reads the flag at argv[*i] (and its value), advancing *i past what it used. */
static void next_flag(const cfg_opt *opts, size_t n, int argc, char **argv, int *i, tok *t,
                      char *why, size_t whylen)
{
    const char *a = argv[*i];
    (*i)++;
    t->opt = -1;
    t->value = NULL;
    snprintf(t->flag, sizeof t->flag, "%.64s", a);
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        t->kind = TOK_HELP;
        return;
    }
    t->kind = TOK_ERR;
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0' || a[2] == '=') {
        if (a[0] == '-' && a[1] != '\0')
            snprintf(why, whylen,
                     "unknown option %.64s (options are long: --name value; see --help)", a);
        else
            snprintf(
                why, whylen,
                "unexpected argument '%.64s' (every setting is a --name value pair; see --help)",
                a);
        return;
    }
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    snprintf(t->flag, sizeof t->flag, "--%.*s", (int)(nlen > 64 ? 64 : nlen), name);

    bool negated = false;
    int o = find_opt(opts, n, name, nlen);
    if (o < 0 && nlen > 3 && strncmp(name, "no-", 3) == 0) {
        int b = find_opt(opts, n, name + 3, nlen - 3);
        if (b >= 0 && opts[b].type == CFG_BOOL) {
            o = b;
            negated = true;
        }
    }
    bool is_config = o < 0 && nlen == 6 && strncmp(name, "config", 6) == 0;
    if (o < 0 && !is_config) {
        const char *s = suggest(opts, n, name, nlen);
        snprintf(why, whylen, "unknown option --%.*s%s%s%s", (int)(nlen > 64 ? 64 : nlen), name,
                 s ? " (did you mean --" : " (see --help)", s ? s : "", s ? "?)" : "");
        return;
    }
    if (negated) {
        if (eq != NULL) {
            snprintf(why, whylen, "%s takes no value (use --%s=VALUE instead)", t->flag,
                     opts[o].name);
            return;
        }
        t->kind = TOK_OPT;
        t->opt = o;
        t->value = "false";
        return;
    }
    const char *v = NULL;
    if (eq != NULL) {
        v = eq + 1;
    } else if (!is_config && opts[o].type == CFG_BOOL) {
        bool dummy;
        if (*i < argc && parse_bool(argv[*i], &dummy) == 0)
            v = argv[(*i)++];
        else
            v = "true";
    } else {
        if (*i >= argc || strncmp(argv[*i], "--", 2) == 0) {
            snprintf(why, whylen, "%s needs a value (%s VALUE or %s=VALUE)", t->flag, t->flag,
                     t->flag);
            return;
        }
        v = argv[(*i)++];
    }
    t->kind = is_config ? TOK_CONFIG : TOK_OPT;
    t->opt = o;
    t->value = v;
}

static int apply_default(const cfg_opt *o, void *conf, char *err, size_t errlen)
{
    char *field = (char *)conf + o->offset;
    if (o->def == NULL) {
        if (o->type == CFG_STR) {
            field[0] = '\0';
        } else if (o->type == CFG_BOOL) {
            bool f = false;
            memcpy(field, &f, sizeof f);
        } else {
            int64_t z = 0;
            memcpy(field, &z, sizeof z);
        }
        return 0;
    }
    char why[CFG_WHY];
    if (apply_value(o, o->def, conf, why, sizeof why) != 0) {
        errf_set(err, errlen,
                 "the default of option %s is invalid: %s; fix the table in the source", o->name,
                 why);
        return -EINVAL;
    }
    return 0;
}

int cfg_load(const cfg_opt *opts, size_t n, void *conf, int argc, char **argv, char *err,
             size_t errlen)
{
    char dummy[1];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    int rc = check_table(opts, n, err, errlen);
    if (rc != 0)
        return rc;

    char why[CFG_WHY];
    tok t;
    /* First pass: --help wins over everything, and --config is read before
     * any flag is applied. Errors wait for the second pass. */
    const char *config = NULL;
    for (int i = 1; i < argc;) {
        next_flag(opts, n, argc, argv, &i, &t, why, sizeof why);
        if (t.kind == TOK_HELP)
            return 1;
        if (t.kind == TOK_CONFIG && config == NULL)
            config = t.value;
    }

    bool *set = calloc(n ? n : 1, sizeof *set);
    if (set == NULL) {
        errf_set(err, errlen, "out of memory loading the configuration");
        return -ENOMEM;
    }
    for (size_t k = 0; k < n && rc == 0; k++) {
        rc = apply_default(&opts[k], conf, err, errlen);
        set[k] = opts[k].def != NULL;
    }

    if (rc == 0 && config != NULL) {
        if (config[0] == '\0') {
            errf_set(err, errlen, "--config is empty; give the path of a config file");
            rc = -EINVAL;
        } else {
            char *text = NULL;
            size_t len = 0;
            rc = cfg_read_file(config, CFG_MAX_FILE, "config file", "--config", &text, &len, err,
                               errlen);
            if (rc == 0) {
                size_t sl = strlen(config) + sizeof "config file ";
                char *source = malloc(sl);
                if (source == NULL) {
                    errf_set(err, errlen, "out of memory loading the configuration");
                    rc = -ENOMEM;
                } else {
                    snprintf(source, sl, "config file %s", config);
                    rc = load_text(opts, n, conf, text, len, source, set, err, errlen);
                    free(source);
                }
                free(text);
            }
        }
    }

    bool seen_config = false;
    for (int i = 1; i < argc && rc == 0;) {
        next_flag(opts, n, argc, argv, &i, &t, why, sizeof why);
        switch (t.kind) {
        case TOK_HELP: break;
        case TOK_ERR:
            errf_set(err, errlen, "%s", why);
            rc = -EINVAL;
            break;
        case TOK_CONFIG:
            if (seen_config) {
                errf_set(err, errlen, "--config is given twice; give one config file");
                rc = -EINVAL;
            }
            seen_config = true;
            break;
        case TOK_OPT:
            if (apply_value(&opts[t.opt], t.value, conf, why, sizeof why) != 0) {
                errf_set(err, errlen, "%s: %s", t.flag, why);
                rc = -EINVAL;
            } else {
                set[t.opt] = true;
            }
            break;
        }
    }

    for (size_t k = 0; k < n && rc == 0; k++) {
        if (opts[k].required && (!set[k] || !value_is_set(&opts[k], conf))) {
            errf_set(err, errlen, "%s is required: set --%s or `%s = ...` in the --config file",
                     opts[k].name, opts[k].name, opts[k].name);
            rc = -EINVAL;
        }
    }
    free(set);
    return rc;
}

/* ---- help and the effective config -------------------------------------- */

static const char *type_word(cfg_type t)
{
    switch (t) {
    case CFG_STR: return "TEXT";
    case CFG_INT: return "N";
    case CFG_SIZE: return "SIZE";
    case CFG_MS: return "DURATION";
    case CFG_BOOL: return "";
    }
    return "";
}

void cfg_help(const cfg_opt *opts, size_t n, const char *usage_line, FILE *f)
{
    enum { COL = 30 };
    fprintf(f, "Usage: %s\n\n", usage_line ? usage_line : "[options]");
    fprintf(f, "Options (each --name VALUE is also a `name = value` line of the --config file;\n"
               "sizes take k/MiB/G, durations ms/s/m/h):\n");
    for (size_t i = 0; i < n; i++) {
        const cfg_opt *o = &opts[i];
        char left[128];
        if (o->type == CFG_BOOL)
            snprintf(left, sizeof left, "  --[no-]%s", o->name);
        else
            snprintf(left, sizeof left, "  --%s %s", o->name, type_word(o->type));
        if (strlen(left) + 2 > COL)
            fprintf(f, "%s\n%*s", left, COL, "");
        else
            fprintf(f, "%-*s", COL, left);
        fprintf(f, "%s", o->help ? o->help : "");
        if (o->secret)
            fprintf(f, " (secret)");
        if (o->required)
            fprintf(f, " (required)");
        else if (o->def != NULL && o->def[0] != '\0' && !o->secret)
            fprintf(f, " (default: %s)", o->def);
        if (o->max > o->min && o->type != CFG_STR && o->type != CFG_BOOL) {
            char lo[32], hi[32];
            fmt_num(o, o->min, lo, sizeof lo);
            fmt_num(o, o->max, hi, sizeof hi);
            fprintf(f, " [%s..%s]", lo, hi);
        }
        fputc('\n', f);
    }
    fprintf(f, "%-*s%s\n", COL, "  --config FILE",
            "read options from FILE first; flags override it");
    fprintf(f, "%-*s%s\n", COL, "  -h, --help", "print this help and exit");
}

typedef struct wbuf {
    char *p;
    size_t cap, len;
    bool overflow;
} wbuf;

static void wput(wbuf *w, const char *s, size_t n)
{
    if (w->overflow || w->len + n + 1 > w->cap) {
        w->overflow = true;
        return;
    }
    memcpy(w->p + w->len, s, n);
    w->len += n;
    w->p[w->len] = '\0';
}

static bool needs_quotes(const char *s)
{
    size_t n = strlen(s);
    if (n > 0 && (is_space(s[0]) || is_space(s[n - 1])))
        return true;
    for (; *s; s++)
        if (*s == '#' || *s == '"' || *s == '\\' || *s == '\n' || *s == '\r' || *s == '\t')
            return true;
    return false;
}

int cfg_format(const cfg_opt *opts, size_t n, const void *conf, char *buf, size_t cap)
{
    wbuf w = {buf, cap, 0, cap == 0};
    if (cap > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const cfg_opt *o = &opts[i];
        const char *field = (const char *)conf + o->offset;
        wput(&w, o->name, strlen(o->name));
        wput(&w, " = ", 3);
        if (o->secret && value_is_set(o, conf)) {
            wput(&w, "<redacted>", 10);
        } else if (o->type == CFG_STR) {
            const char *nul = memchr(field, '\0', o->size);
            size_t flen = nul != NULL ? (size_t)(nul - field) : o->size;
            if (!needs_quotes(field)) {
                wput(&w, field, flen);
            } else {
                wput(&w, "\"", 1);
                for (size_t k = 0; k < flen; k++) {
                    char c = field[k];
                    const char *esc = c == '"'    ? "\\\""
                                      : c == '\\' ? "\\\\"
                                      : c == '\n' ? "\\n"
                                      : c == '\t' ? "\\t"
                                      : c == '\r' ? "\\r"
                                                  : NULL;
                    if (esc != NULL)
                        wput(&w, esc, 2);
                    else
                        wput(&w, &c, 1);
                }
                wput(&w, "\"", 1);
            }
        } else if (o->type == CFG_BOOL) {
            bool b;
            memcpy(&b, field, sizeof b);
            wput(&w, b ? "true" : "false", b ? 4 : 5);
        } else {
            int64_t x;
            memcpy(&x, field, sizeof x);
            char num[32];
            fmt_num(o, x, num, sizeof num);
            wput(&w, num, strlen(num));
        }
        wput(&w, "\n", 1);
    }
    if (w.overflow)
        return -ENOSPC;
    return (int)w.len;
}

int cfg_read_secret_line(const char *path, const char *what, const char *flag, char *out,
                         size_t cap, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int rc = cfg_read_file(path, 64u << 10, what, flag, &text, &len, err, errlen);
    if (rc < 0)
        return rc;
    size_t line = strcspn(text, "\r\n");
    rc = -EINVAL;
    if (line == 0) {
        errf_set(err, errlen, "the %s %s %s (write it on its first line)", what, path,
                 len ? "has an empty first line" : "is empty");
    } else if (line >= cap) {
        errf_set(err, errlen,
                 "the first line of the %s %s is longer than %zu bytes (it is one line of at "
                 "most that)",
                 what, path, cap - 1);
    } else {
        memcpy(out, text, line);
        out[line] = '\0';
        rc = 0;
    }
    explicit_bzero(text, len);
    free(text);
    return rc;
}
