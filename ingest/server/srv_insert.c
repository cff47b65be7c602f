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
 * The table is the tables provider's (srv_tables.insert_open: its columns
 * and the sink that writes them; without a provider every table is
 * UNKNOWN_TABLE). The body is decoded as it arrives, in blocks of whole
 * lines, into the table's columns: JSONEachRow (keys by name),
 * JSONCompactEachRow (arrays by position, as the JS client sends by
 * default), CSV and TabSeparated (by position), CSVWithNames and
 * TabSeparatedWithNames (by the header's names), and Parquet (the whole body,
 * then its columns by name). INSERT ... SELECT is the engine's.
 */
#include "srv_int.h"

#include "eng_text.h"
#include "parquet.h"

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
        skip_blank(&l);
        *data_off = l.i;
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

/* ---- decoding ------------------------------------------------------------------------------ */

typedef enum ins_fmt { IF_JSON = 1, IF_JSON_COMPACT, IF_CSV, IF_CSV_NAMES, IF_TSV, IF_TSV_NAMES,
                       IF_PARQUET, IF_VALUES } ins_fmt;

static int ins_format(const char *name)
{
    static const struct { const char *n; ins_fmt f; } t[] = {
        {"JSONEachRow", IF_JSON}, {"JSONLines", IF_JSON}, {"NDJSON", IF_JSON},
        {"JSONCompactEachRow", IF_JSON_COMPACT}, {"CSV", IF_CSV},
        {"CSVWithNames", IF_CSV_NAMES}, {"TabSeparated", IF_TSV}, {"TSV", IF_TSV},
        {"TabSeparatedWithNames", IF_TSV_NAMES}, {"TSVWithNames", IF_TSV_NAMES},
        {"Parquet", IF_PARQUET}, {"Values", IF_VALUES},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcasecmp(name, t[i].n) == 0)
            return t[i].f;
    return -1;
}

typedef struct decoder {
    const eng_schema *schema;     /* the table's columns, as the sink takes them */
    eng_schema pos_schema;        /* the same named c1, c2, ... (positional formats) */
    int *want;
    eng_sink *sink;
    uint64_t rows, bytes;
    char *err;
    size_t errlen;
    int code;                     /* the first failure */
} decoder;

static int batch_to_sink(ex_vec *cols, int ncols, uint32_t nrows, void *arg)
{
    decoder *d = arg;
    eng_block b = {cols, ncols, nrows};
    int rc = d->sink->ops->write(d->sink, &b, d->err, d->errlen);
    for (int k = 0; k < ncols; k++)
        ex_vec_clear(NULL, &cols[k]);
    if (rc < 0) {
        d->code = ENG_E_STD_EXCEPTION;
        return rc;
    }
    d->rows += nrows;
    return 0;
}

/* JSONCompactEachRow line -> a JSONEachRow object with the table's names. */
static int compact_to_object(const decoder *d, const char *p, size_t n, FILE *out)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)p[i]))
        i++;
    if (i == n)
        return 0;
    if (p[i] != '[')
        return -EBADMSG;
    i++;
    fputc('{', out);
    int k = 0;
    for (;;) {
        while (i < n && isspace((unsigned char)p[i]))
            i++;
        if (i < n && p[i] == ']' && k == 0)
            break;
        size_t start = i;
        int depth = 0;
        bool str = false;
        for (; i < n; i++) {
            char c = p[i];
            if (str) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    str = false;
                continue;
            }
            if (c == '"')
                str = true;
            else if (c == '[' || c == '{')
                depth++;
            else if (c == ']' || c == '}') {
                if (depth == 0)
                    break;
                depth--;
            } else if (c == ',' && depth == 0)
                break;
        }
        if (i >= n)
            return -EBADMSG;
        if (k >= d->schema->n)
            return -E2BIG;
        fprintf(out, "%s\"", k ? "," : "");
        for (const char *c = d->schema->cols[k].name; *c; c++) {
            if (*c == '"' || *c == '\\')
                fputc('\\', out);
            fputc(*c, out);
        }
        fputs("\":", out);
        fwrite(p + start, 1, i - start, out);
        k++;
        if (p[i] == ']')
            break;
        i++;
    }
    i++;
    while (i < n && isspace((unsigned char)p[i]))
        i++;
    if (i != n)
        return -EBADMSG;
    if (k != d->schema->n)
        return -ERANGE;
    fputs("}\n", out);
    return 0;
}

/* Parses whole lines text[0..len) (the header first when hdr). */
static int decode_lines(decoder *d, ins_fmt f, const char *hdr, size_t hl, const char *text,
                        size_t len)
{
    char *buf = NULL;
    size_t bl = 0;
    const char *t = text;
    size_t tl = len;
    if (f == IF_JSON_COMPACT) {
        FILE *o = open_memstream(&buf, &bl);
        if (!o)
            return -ENOMEM;
        size_t i = 0, line = 0;
        int rc = 0;
        while (i < len && rc == 0) {
            size_t e = i;
            while (e < len && text[e] != '\n')
                e++;
            line++;
            rc = compact_to_object(d, text + i, e - i, o);
            if (rc < 0) {
                snprintf(d->err, d->errlen,
                         rc == -ERANGE || rc == -E2BIG
                             ? "Cannot parse input: row %zu of the JSONCompactEachRow data has "
                               "%s values than the table has columns (%d)"
                             : "Cannot parse input: row %zu of the JSONCompactEachRow data is "
                               "not a JSON array%s (%d columns)",
                         line, rc == -E2BIG ? "more" : rc == -ERANGE ? "fewer" : "",
                         d->schema->n);
            }
            i = e + 1;
        }
        fclose(o);
        if (rc < 0) {
            free(buf);
            d->code = ENG_E_CANNOT_PARSE_INPUT_ASSERTION_FAILED;
            return rc;
        }
        t = buf;
        tl = bl;
        f = IF_JSON;
    } else if (hdr) {
        buf = malloc(hl + len + 1);
        if (!buf)
            return -ENOMEM;
        memcpy(buf, hdr, hl);
        memcpy(buf + hl, text, len);
        t = buf;
        tl = hl + len;
    }
    tx_format tf = f == IF_JSON ? TX_JSON_EACH_ROW : f == IF_CSV ? TX_CSV
                 : f == IF_CSV_NAMES ? TX_CSV_NAMES : f == IF_TSV ? TX_TSV : TX_TSV_NAMES;
    const eng_schema *sc = f == IF_CSV || f == IF_TSV ? &d->pos_schema : d->schema;
    char e[ENG_MSG_MAX];
    int rc = tx_parse(NULL, tf, "the INSERT's data", t, tl, sc, d->want, d->schema->n, 65536,
                      batch_to_sink, d, e, sizeof(e));
    free(buf);
    if (rc < 0 && !d->code) {
        snprintf(d->err, d->errlen, "Cannot parse input: %s", e);
        d->code = rc == -ENOMEM ? ENG_E_MEMORY_LIMIT_EXCEEDED : ENG_E_CANNOT_PARSE_TEXT;
    }
    return rc;
}

/* Where the last whole record of buf[0..n) ends (after its '\n'): CSV
 * counts quotes, so a quoted line feed is not an end. */
static size_t last_record_end(const char *buf, size_t n, bool csv)
{
    size_t end = 0;
    bool q = false;
    for (size_t i = 0; i < n; i++) {
        if (csv && buf[i] == '"')
            q = !q;
        else if (buf[i] == '\n' && !q)
            end = i + 1;
    }
    return end;
}

/* ---- Parquet from memory ------------------------------------------------------------------ */

typedef struct mem_src {
    const uint8_t *p;
    size_t n;
} mem_src;

static int mem_read(void *impl, const rs_range *r, size_t n, char *err, size_t errlen)
{
    mem_src *m = impl;
    for (size_t i = 0; i < n; i++) {
        if (r[i].offset + r[i].length > m->n) {
            snprintf(err, errlen, "a range past the end of the data");
            return -ERANGE;
        }
        memcpy(r[i].buf, m->p + r[i].offset, r[i].length);
    }
    return 0;
}

static void mem_destroy(void *impl)
{
    free(impl);
}

static int decode_parquet(decoder *d, const uint8_t *p, size_t n)
{
    mem_src *m = malloc(sizeof(*m));
    if (!m)
        return -ENOMEM;
    *m = (mem_src){p, n};
    rs_ops ops = {mem_read, mem_destroy};
    rs_source *src;
    if (rs_source_create(&src, &ops, m, "the INSERT's Parquet data", n, NULL) < 0)
        return -ENOMEM;
    pq_file *pf = NULL;
    char e[ENG_MSG_MAX];
    int rc = pq_file_open(&pf, src, NULL, e, sizeof(e));
    int *cols = NULL;
    pq_reader *rd = NULL;
    if (rc == 0) {
        cols = calloc((size_t)d->schema->n + 1, sizeof(int));
        for (int k = 0; cols && k < d->schema->n && rc == 0; k++) {
            cols[k] = pq_file_find_column(pf, d->schema->cols[k].name);
            if (cols[k] < 0) {
                snprintf(e, sizeof(e), "column '%s' is not in the Parquet data",
                         d->schema->cols[k].name);
                rc = -EBADMSG;
            }
        }
        if (!cols)
            rc = -ENOMEM;
    }
    pq_read_opts o;
    pq_read_opts_init(&o);
    o.columns = cols;
    o.n_columns = (size_t)d->schema->n;
    o.keep_dictionary = false;
    if (rc == 0)
        rc = pq_reader_create(&rd, pf, &o, e, sizeof(e));
    ex_vec *v = rc == 0 ? calloc((size_t)d->schema->n + 1, sizeof(ex_vec)) : NULL;
    if (rc == 0 && !v)
        rc = -ENOMEM;
    cb_batch *b;
    while (rc == 0 && (rc = pq_reader_next(rd, &b)) == 1) {
        rc = 0;
        for (int k = 0; k < d->schema->n && rc == 0; k++)
            rc = ex_vec_from_column(NULL, b->cols[k], &v[k]);
        if (rc == 0)
            rc = batch_to_sink(v, d->schema->n, b->n_rows, d);
        cb_batch_destroy(&b);
    }
    if (rc < 0 && rd && pq_reader_error(rd)[0])
        snprintf(e, sizeof(e), "%s", pq_reader_error(rd));
    free(v);
    free(cols);
    pq_reader_destroy(&rd);
    pq_file_destroy(&pf);
    rs_destroy(&src);
    if (rc < 0 && !d->code) {
        snprintf(d->err, d->errlen, "Cannot read the Parquet data: %s", e);
        d->code = rc == -ENOMEM ? ENG_E_MEMORY_LIMIT_EXCEEDED : ENG_E_INCORRECT_DATA;
    }
    return rc < 0 ? rc : 0;
}

/* ---- the whole INSERT ----------------------------------------------------------------------- */

int srv_insert_decode(const char *format, const eng_schema *schema, srv_read_fn read, void *arg,
                      eng_sink *sink, uint64_t *rows, uint64_t *bytes, char *err, size_t errlen)
{
    *rows = *bytes = 0;
    int f = ins_format(format);
    if (f < 0) {
        snprintf(err, errlen, "Unknown input format %.64s (the INSERT takes JSONEachRow, "
                              "JSONCompactEachRow, CSV, CSVWithNames, TabSeparated, "
                              "TabSeparatedWithNames or Parquet)",
                 format);
        return ENG_E_UNKNOWN_FORMAT;
    }
    if (f == IF_VALUES) {
        snprintf(err, errlen, "INSERT ... VALUES is not supported: send the rows with FORMAT "
                              "JSONEachRow, CSV or TabSeparated");
        return ENG_E_NOT_IMPLEMENTED;
    }
    decoder d = {.schema = schema, .sink = sink, .err = err, .errlen = errlen};
    d.want = calloc((size_t)schema->n + 1, sizeof(int));
    d.pos_schema.cols = calloc((size_t)schema->n + 1, sizeof(eng_col));
    d.pos_schema.n = schema->n;
    char (*names)[16] = calloc((size_t)schema->n + 1, 16);
    int code = 0;
    if (!d.want || !d.pos_schema.cols || !names) {
        snprintf(err, errlen, "out of memory");
        code = ENG_E_MEMORY_LIMIT_EXCEEDED;
        goto out;
    }
    const char **nm = calloc((size_t)schema->n + 1, sizeof(char *));
    ex_type *ty = calloc((size_t)schema->n + 1, sizeof(ex_type));
    for (int k = 0; nm && ty && k < schema->n; k++) {
        d.want[k] = k;
        snprintf(names[k], 16, "c%d", k + 1);
        d.pos_schema.cols[k] = schema->cols[k];
        d.pos_schema.cols[k].name = names[k];
        nm[k] = schema->cols[k].name;
        ty[k] = schema->cols[k].t;
    }
    if (!nm || !ty || sink->ops->begin(sink, nm, ty, schema->n, err, errlen) < 0) {
        free(nm);
        free(ty);
        if (!err[0])
            snprintf(err, errlen, "out of memory");
        code = ENG_E_STD_EXCEPTION;
        goto out;
    }
    free(nm);
    free(ty);
    size_t cap = 1 << 20, have = 0;
    char *buf = malloc(cap);
    char *hdr = NULL;
    size_t hl = 0;
    bool eof = false;
    int rc = 0;
    while (buf && !eof && rc == 0) {
        if (have == cap) {
            if (f != IF_PARQUET && cap >= (256u << 20)) {
                snprintf(err, errlen, "Cannot parse input: a row of the data is longer than "
                                      "256 MiB");
                code = ENG_E_CANNOT_PARSE_INPUT_ASSERTION_FAILED;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(arg, buf + have, cap - have, err, errlen);
        if (got < 0) {
            code = got == -ECANCELED ? ENG_E_QUERY_WAS_CANCELLED
                   : got == -EFBIG   ? ENG_E_QUERY_IS_TOO_LARGE
                                     : ENG_E_CANNOT_READ_ALL_DATA;
            rc = (int)got;
            break;
        }
        *bytes += (uint64_t)got;
        have += (size_t)got;
        eof = got == 0;
        if (f == IF_PARQUET)
            continue;
        size_t end = eof ? have : last_record_end(buf, have, f == IF_CSV || f == IF_CSV_NAMES);
        if (end == 0)
            continue;
        if ((f == IF_CSV_NAMES || f == IF_TSV_NAMES) && !hdr) {
            size_t first = 0;
            while (first < end && buf[first] != '\n')
                first++;
            first = first < end ? first + 1 : end;
            if (!(hdr = malloc(first ? first : 1))) {
                rc = -ENOMEM;
                break;
            }
            memcpy(hdr, buf, first);
            hl = first;
            memmove(buf, buf + first, have - first);
            have -= first;
            end -= first;
        }
        if (end)
            rc = decode_lines(&d, (ins_fmt)f, hdr, hl, buf, end);
        memmove(buf, buf + end, have - end);
        have -= end;
    }
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        code = ENG_E_MEMORY_LIMIT_EXCEEDED;
    } else if (rc == 0 && !code && f == IF_PARQUET && have) {
        rc = decode_parquet(&d, (const uint8_t *)buf, have);
    }
    free(buf);
    free(hdr);
    if (!code && d.code)
        code = d.code;
    if (!code && rc < 0) {
        if (!err[0])
            snprintf(err, errlen, "the INSERT failed: %s", strerror(-rc));
        code = rc == -ENOMEM ? ENG_E_MEMORY_LIMIT_EXCEEDED : ENG_E_STD_EXCEPTION;
    }
    if (!code && sink->ops->end(sink, err, errlen) < 0)
        code = ENG_E_STD_EXCEPTION;
    *rows = d.rows;
out:
    free(d.want);
    free(d.pos_schema.cols);
    free(names);
    return code;
}

static ssize_t body_read(void *arg, void *buf, size_t n, char *err, size_t errlen)
{
    return srv_query_read_body(arg, buf, n, err, errlen);
}

int srv_insert_run(srv_query *q, const srv_insert_head *h, char *err, size_t errlen)
{
    srv *s = q->s;
    const char *db = h->db[0] ? h->db : q->database;
    if (strcmp(db, "system") == 0) {
        snprintf(err, errlen, "Table system.%s does not accept INSERT: it is the server's",
                 h->table);
        return ENG_E_NOT_IMPLEMENTED;
    }
    if (!srv_database_exists(s, db)) {
        snprintf(err, errlen, "Database %s does not exist", db);
        return ENG_E_UNKNOWN_DATABASE;
    }
    if (ins_format(h->format) < 0 && strcasecmp(h->format, "Values") != 0) {
        snprintf(err, errlen, "Unknown input format %.64s (the INSERT takes JSONEachRow, "
                              "JSONCompactEachRow, CSV, CSVWithNames, TabSeparated, "
                              "TabSeparatedWithNames or Parquet)",
                 h->format);
        return ENG_E_UNKNOWN_FORMAT;
    }
    if (!s->tables.insert_open) {
        snprintf(err, errlen, "Table %s.%s does not exist", db, h->table);
        return ENG_E_UNKNOWN_TABLE;
    }
    const char *cols[64];
    for (int i = 0; i < h->n_cols; i++)
        cols[i] = h->cols[i];
    eng_schema schema = {0};
    eng_sink *sink = NULL;
    int rc = s->tables.insert_open(s->tables.arg, db, h->table, cols, h->n_cols, &schema,
                                   &sink, err, errlen);
    if (rc == -ENOENT) {
        snprintf(err, errlen, "Table %s.%s does not exist", db, h->table);
        return ENG_E_UNKNOWN_TABLE;
    }
    if (rc < 0)
        return rc == -EINVAL ? ENG_E_BAD_ARGUMENTS : ENG_E_STD_EXCEPTION;
    uint64_t rows, bytes;
    int code = srv_insert_decode(h->format, &schema, body_read, q, sink, &rows, &bytes, err,
                                 errlen);
    atomic_store(&q->written_rows, rows);
    atomic_store(&q->written_bytes, bytes);
    eng_sink_destroy(&sink);
    eng_schema_free(&schema);
    return code;
}
