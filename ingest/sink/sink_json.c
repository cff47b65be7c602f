/* SPDX-License-Identifier: Apache-2.0
 *
 * sink_json.c: the JSON formats of eng_sink.h, byte for byte as ClickHouse
 * writes them with its default settings (values by sk_json_value: 64-bit
 * integers quoted, nan/inf as null, '/' escaped).
 *
 * The row formats write one line per row as the blocks arrive:
 *
 *   JSONEachRow                {"a":1,"b":"x"}
 *   JSONStringsEachRow         {"a":"1","b":"x"}
 *   JSONCompactEachRow         [1, "x"]          (WithNames: ["a", "b"] first,
 *   JSONCompactStringsEachRow  ["1", "x"]         AndTypes: ["UInt8", "String"])
 *
 * The document formats (JSON, JSONCompact, JSONStrings) stream their rows too
 * (the document is never held whole); the layout, TABs for indentation:
 *
 *   {
 *   	"meta":
 *   	[
 *   		{
 *   			"name": "a",
 *   			"type": "UInt8"
 *   		}
 *   	],
 *
 *   	"data":
 *   	[
 *   		{                          JSONCompact:  		[1, "x"]
 *   			"a": 1
 *   		}
 *   	],
 *
 *   	"rows": 1,
 *
 *   	"statistics":
 *   	{
 *   		"elapsed": 0.000515,
 *   		"rows_read": 1,
 *   		"bytes_read": 1
 *   	}
 *   }
 */
#include "sink_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct json_sink {
    eng_sink base;
    eng_format fmt;
    sk_buf b;
    char **names;
    int n_cols;
    uint64_t rows;
    bool have_stats;
    eng_sink_stats st;
} json_sink;

static bool is_document(eng_format f)
{
    return f == ENG_FMT_JSON || f == ENG_FMT_JSON_COMPACT || f == ENG_FMT_JSON_STRINGS;
}

static bool as_strings(eng_format f)
{
    return f == ENG_FMT_JSON_STRINGS || f == ENG_FMT_JSON_STRINGS_EACH_ROW ||
           f == ENG_FMT_JSON_COMPACT_STRINGS_EACH_ROW;
}

static void str(sk_buf *f, const char *s)
{
    sk_json_str(f, (const uint8_t *)s, strlen(s));
}

/* ["a", "b"]\n */
static void compact_header(sk_buf *f, const char *const *cells, int n)
{
    sk_putc(f, '[');
    for (int k = 0; k < n; k++) {
        if (k)
            sk_puts(f, ", ");
        str(f, cells[k]);
    }
    sk_puts(f, "]\n");
}

static int json_begin(eng_sink *sk, const char *const *names, const ex_type *types, int n_cols,
                      char *err, size_t errlen)
{
    json_sink *s = (json_sink *)sk;
    if (!(s->names = sk_names_copy(names, n_cols))) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->n_cols = n_cols;
    sk_buf *f = &s->b;
    char tn[96];
    if (is_document(s->fmt)) {
        sk_puts(f, "{\n\t\"meta\":\n\t[\n");
        for (int k = 0; k < n_cols; k++) {
            sk_puts(f, k ? ",\n\t\t{\n\t\t\t\"name\": " : "\t\t{\n\t\t\t\"name\": ");
            str(f, names[k]);
            sk_puts(f, ",\n\t\t\t\"type\": ");
            sk_type_name(&types[k], tn, sizeof(tn));
            str(f, tn);
            sk_puts(f, "\n\t\t}");
        }
        sk_puts(f, "\n\t],\n\n\t\"data\":\n\t[\n");
        return 0;
    }
    if (s->fmt == ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES ||
        s->fmt == ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES_AND_TYPES)
        compact_header(f, names, n_cols);
    if (s->fmt == ENG_FMT_JSON_COMPACT_EACH_ROW_WITH_NAMES_AND_TYPES) {
        sk_putc(f, '[');
        for (int k = 0; k < n_cols; k++) {
            if (k)
                sk_puts(f, ", ");
            sk_type_name(&types[k], tn, sizeof(tn));
            str(f, tn);
        }
        sk_puts(f, "]\n");
    }
    return 0;
}

static int json_write(eng_sink *sk, const eng_block *t, char *err, size_t errlen)
{
    json_sink *s = (json_sink *)sk;
    sk_buf *f = &s->b;
    bool strs = as_strings(s->fmt);
    for (uint32_t r = 0; r < t->n_rows; r++) {
        switch (s->fmt) {
        case ENG_FMT_JSON:
        case ENG_FMT_JSON_STRINGS:
            sk_puts(f, s->rows ? ",\n\t\t{\n" : "\t\t{\n");
            for (int k = 0; k < t->n_cols; k++) {
                sk_puts(f, k ? ",\n\t\t\t" : "\t\t\t");
                str(f, s->names[k]);
                sk_puts(f, ": ");
                sk_json_value(f, &t->cols[k], r, strs);
            }
            sk_puts(f, "\n\t\t}");
            break;
        case ENG_FMT_JSON_COMPACT:
            sk_puts(f, s->rows ? ",\n\t\t[" : "\t\t[");
            for (int k = 0; k < t->n_cols; k++) {
                if (k)
                    sk_puts(f, ", ");
                sk_json_value(f, &t->cols[k], r, false);
            }
            sk_putc(f, ']');
            break;
        case ENG_FMT_JSON_EACH_ROW:
        case ENG_FMT_JSON_STRINGS_EACH_ROW:
            sk_putc(f, '{');
            for (int k = 0; k < t->n_cols; k++) {
                if (k)
                    sk_putc(f, ',');
                str(f, s->names[k]);
                sk_putc(f, ':');
                sk_json_value(f, &t->cols[k], r, strs);
            }
            sk_puts(f, "}\n");
            break;
        default: /* the JSONCompact*EachRow family */
            sk_putc(f, '[');
            for (int k = 0; k < t->n_cols; k++) {
                if (k)
                    sk_puts(f, ", ");
                sk_json_value(f, &t->cols[k], r, strs);
            }
            sk_puts(f, "]\n");
            break;
        }
        s->rows++;
    }
    int rc = sk_buf_flush(f);
    return rc < 0 ? sk_error(rc, err, errlen) : 0;
}

static void json_stats(eng_sink *sk, const eng_sink_stats *st)
{
    json_sink *s = (json_sink *)sk;
    s->st = *st;
    s->have_stats = true;
}

static int json_end(eng_sink *sk, char *err, size_t errlen)
{
    json_sink *s = (json_sink *)sk;
    sk_buf *f = &s->b;
    if (is_document(s->fmt)) {
        char line[160];
        snprintf(line, sizeof(line), "\n\t],\n\n\t\"rows\": %llu", (unsigned long long)s->rows);
        sk_puts(f, line);
        if (s->have_stats) {
            char el[64];
            ex_fmt_double(s->st.elapsed_s, el, sizeof(el));
            snprintf(line, sizeof(line),
                     ",\n\n\t\"statistics\":\n\t{\n\t\t\"elapsed\": %s,\n\t\t\"rows_read\": %llu,"
                     "\n\t\t\"bytes_read\": %llu\n\t}",
                     el, (unsigned long long)s->st.rows_read, (unsigned long long)s->st.bytes_read);
            sk_puts(f, line);
        }
        sk_puts(f, "\n}\n");
    }
    int rc = sk_buf_finish(f);
    return rc < 0 ? sk_error(rc, err, errlen) : 0;
}

static void json_destroy(eng_sink *sk)
{
    json_sink *s = (json_sink *)sk;
    sk_buf_deinit(&s->b);
    sk_names_free(s->names, s->n_cols);
    free(s);
}

static const eng_sink_ops json_ops = {json_begin, json_write, json_end, json_destroy};

int sk__json_create(eng_sink **out, eng_format fmt, const eng_writer *w)
{
    json_sink *s = calloc(1, sizeof(*s));
    if (!s || sk_buf_init(&s->b, w) < 0) {
        free(s);
        return -ENOMEM;
    }
    s->base.ops = &json_ops;
    s->base.stats = json_stats;
    s->fmt = fmt;
    *out = &s->base;
    return 0;
}
