/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_sql.c: arbitrary bytes into the SQL parser; every statement that
 * parses is also named (sql_node_name), cloned and compared with its clone,
 * and bound against a small schema, so the binder's type rules and constant
 * folding see hostile trees too (and those of every subquery, WITH, JOIN
 * side and UNION ALL branch inside); a SELECT's text (EXPLAIN SYNTAX) must
 * parse again to the same text; a CREATE TABLE is turned into a table
 * definition whose normalised statement must parse again. A failed parse must leave a message that
 * starts with "line ". Real checks, not assert(): NDEBUG removes those.
 */
#include "eng_plan.h"
#include "eng_tdef.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static eng_schema schema;

static void init_schema(void)
{
    static const char *names[] = {"a", "s", "d", "f", "t"};
    static const ex_type types[] = {{.kind = EX_INT, .bits = 64, .nullable = true},
                                    {.kind = EX_STRING},
                                    {.kind = EX_DATE, .bits = 32},
                                    {.kind = EX_FLOAT, .bits = 64},
                                    {.kind = EX_DATETIME, .scale = 6, .nullable = true}};
    schema.cols = calloc(5, sizeof(eng_col));
    if (!schema.cols)
        abort();
    for (int i = 0; i < 5; i++) {
        schema.cols[i].name = (char *)names[i];
        schema.cols[i].t = types[i];
    }
    schema.n = 5;
}

/* Names, clones and compares every select item, and binds every SELECT, of
 * st and the statements inside it (subqueries in FROM, WITH, JOIN's right
 * sides, UNION ALL branches, IN (SELECT ...)). */
static void check_items(const sql_stmt *st, int depth);

static void check_node(const sql_node *n, int depth)
{
    if (!n || depth > 400)
        return;
    if (n->kind == SQL_SUBQUERY) {
        if (!n->sub)
            abort();
        check_items(n->sub, depth + 1);
    }
    for (int i = 0; i < n->nargs; i++)
        check_node(n->args[i], depth + 1);
}

static void check_items(const sql_stmt *st, int depth)
{
    if (!st || depth > 400)
        return;
    for (int k = 0; k < st->n_items; k++) {
        char name[256];
        sql_node_name(st->items[k].expr, name, sizeof(name));
        sql_node *c = sql_node_clone(st->items[k].expr);
        if (c && !sql_node_equal(c, st->items[k].expr))
            abort();
        sql_node_free(c); /* a clone borrows its subqueries: the original keeps them */
        check_node(st->items[k].expr, depth + 1);
    }
    check_node(st->where, depth + 1);
    if (st->kind == SQL_SELECT) {
        eng_mem mem = {0};
        eng_plan p;
        char berr[512];
        if (eng_bind(&mem, st, &schema, &p, berr, sizeof(berr)) == 0)
            eng_plan_free(&mem, &p);
        if (atomic_load(&mem.cur) != 0)
            abort(); /* the binder gives back every tracked byte */
    }
    if (st->kind == SQL_SELECT && depth == 0) {
        /* EXPLAIN SYNTAX's text must parse again, to the same text */
        char *text;
        if (sql_stmt_text(st, false, &text) >= 0) {
            sql_stmt *again;
            char perr[SQL_MSG_MAX];
            if (sql_parse(text, strlen(text), &again, perr, sizeof(perr)) != 0)
                abort();
            char *text2;
            if (sql_stmt_text(again, false, &text2) >= 0) {
                if (strcmp(text, text2) != 0)
                    abort();
                free(text2);
            }
            sql_stmt_destroy(&again);
            free(text);
        }
    }
    check_items(st->from_sub, depth + 1);
    for (int i = 0; i < st->n_with; i++) {
        check_items(st->with[i].sub, depth + 1);
        check_node(st->with[i].expr, depth + 1);
    }
    for (int i = 0; i < st->n_joins; i++) {
        if (!st->joins[i].right)
            abort();
        check_items(st->joins[i].right, depth + 1);
        check_node(st->joins[i].on, depth + 1);
    }
    check_items(st->union_all, depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!schema.n)
        init_schema();
    sql_stmt **st;
    char err[SQL_MSG_MAX] = "";
    int n = sql_parse_script((const char *)data, size, &st, err, sizeof(err));
    if (n < 0) {
        if (n == -EINVAL && strncmp(err, "line ", 5) != 0)
            abort(); /* every syntax error names its place */
        return 0;
    }
    for (int i = 0; i < n; i++) {
        check_items(st[i], 0);
        if (st[i]->kind == SQL_CREATE_TABLE) {
            /* a table's definition: also what the log's CREATE statement goes through */
            eng_tdef def;
            char terr[512];
            if (eng_tdef_from_create(st[i], "default", &def, terr, sizeof(terr)) == 0) {
                if (!def.schema.ddl)
                    abort();
                sql_stmt *again;
                if (sql_parse(def.schema.ddl, strlen(def.schema.ddl), &again, terr, sizeof(terr)) !=
                    0)
                    abort(); /* the normalised statement must read back */
                sql_stmt_destroy(&again);
                eng_tdef_free(&def);
            }
        }
    }
    sql_script_free(&st, n);
    return 0;
}
