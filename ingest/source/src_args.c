/* SPDX-License-Identifier: Apache-2.0
 *
 * src_args.c: the arguments file() and s3() share after the path (and s3()'s
 * credentials), as ClickHouse orders them: [format [, structure [,
 * compression]]], each a string; 'auto' as the format or the compression
 * means "from the name". And the structure argument itself: "name Type,
 * name Type, ..." (names plain or `quoted`, types as CAST takes them).
 */
#include "src_int.h"

#include "eng_plan.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int src__tail_args(const eng_tf_call *c, int first, src_fargs *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char **slot[3] = {&out->format, &out->structure, &out->compression};
    if (c->n_args - first > 3) {
        snprintf(err, errlen,
                 "line %d, column %d: %s() takes at most a format, a structure "
                 "and a compression after the %s",
                 c->line, c->col, c->name, first > 1 ? "credentials" : "path");
        return -EINVAL;
    }
    for (int k = first; k < c->n_args; k++) {
        const sql_node *a = c->args[k];
        if (a->kind != SQL_STRING) {
            static const char *what[3] = {"format", "structure", "compression"};
            snprintf(err, errlen,
                     "line %d, column %d: the %s of %s() must be a string, as in "
                     "%s('...', 'CSV', 'a Int64, b String', 'gzip')",
                     a->line, a->col, what[k - first], c->name, c->name);
            return -EINVAL;
        }
        *slot[k - first] = a->s;
    }
    if (out->format && strcasecmp(out->format, "auto") == 0)
        out->format = NULL;
    if (out->compression && strcasecmp(out->compression, "auto") == 0)
        out->compression = NULL;
    return 0;
}

/* One name: `quoted` (doubled backquotes inside), "quoted", or a word. */
static const char *struct_name(const char *p, char *name, size_t cap)
{
    size_t n = 0;
    if (*p == '`' || *p == '"') {
        char q = *p++;
        for (; *p; p++) {
            if (*p == q) {
                if (p[1] != q)
                    break;
                p++;
            }
            if (n + 1 < cap)
                name[n++] = *p;
        }
        if (*p != q)
            return NULL;
        p++;
    } else {
        while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == '.'))
            if (n + 1 < cap)
                name[n++] = *p++;
            else
                p++;
    }
    name[n] = 0;
    return n ? p : NULL;
}

int src__structure_parse(const char *text, eng_schema *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->given = true;
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p && out->n)
            break;
        char name[256], type[256];
        const char *q = struct_name(p, name, sizeof(name));
        if (!q || !isspace((unsigned char)*q)) {
            snprintf(err, errlen,
                     "cannot read the structure '%.200s' at '%.40s': write "
                     "'name Type, name Type', as in 'id UInt64, price Decimal(12, 2)'",
                     text, p);
            goto fail;
        }
        p = q;
        while (isspace((unsigned char)*p))
            p++;
        /* the type: up to the next comma outside parentheses */
        size_t n = 0;
        int depth = 0;
        for (; *p && !(depth == 0 && *p == ','); p++) {
            depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
            if (n + 1 < sizeof(type))
                type[n++] = *p;
        }
        while (n && isspace((unsigned char)type[n - 1]))
            n--;
        type[n] = 0;
        ex_type t;
        if (!n || eng_parse_type(type, &t) < 0) {
            snprintf(err, errlen,
                     "unknown type '%.100s' of column '%.100s' in the structure "
                     "argument (use the types of CAST: Int64, UInt32, Float64, String, Date, "
                     "DateTime, DateTime64(3), Decimal(P, S), Bool, Nullable(T))",
                     type, name);
            goto fail;
        }
        for (int i = 0; i < out->n; i++)
            if (strcmp(out->cols[i].name, name) == 0) {
                snprintf(err, errlen, "column '%.100s' is named twice in the structure argument",
                         name);
                goto fail;
            }
        eng_col *nc = realloc(out->cols, sizeof(eng_col) * (size_t)(out->n + 1));
        if (!nc)
            goto oom;
        out->cols = nc;
        memset(&nc[out->n], 0, sizeof(eng_col));
        if (!(nc[out->n].name = strdup(name)))
            goto oom;
        nc[out->n].t = t;
        out->n++;
        if (*p == ',')
            p++;
        else if (*p)
            break;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    eng_schema_free(out);
    return -ENOMEM;
fail:
    eng_schema_free(out);
    return -EINVAL;
}
