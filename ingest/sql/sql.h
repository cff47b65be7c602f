/* SPDX-License-Identifier: Apache-2.0
 *
 * sql.h: the SQL front end of the engine: a lexer and a recursive-descent
 * parser for a ClickHouse-flavoured subset ([EXPLAIN [SYNTAX]] [WITH ...]
 * SELECT ... [FROM s3()/file()/numbers() | [db.]table | (SELECT ...)] [[ANY|
 * ALL] [INNER|LEFT|RIGHT|FULL|CROSS] JOIN ... ON/USING]... WHERE ... GROUP BY
 * ... HAVING ... ORDER BY ... LIMIT ... [UNION ALL SELECT ...] SETTINGS ...
 * FORMAT ..., with IN (SELECT ...), scalar subqueries and f(...) OVER (...)
 * in expressions; DESCRIBE, and the table statements: CREATE TABLE, DROP
 * TABLE, TRUNCATE TABLE, OPTIMIZE TABLE, INSERT INTO (SELECT, VALUES, FORMAT
 * with the data after it), SHOW TABLES), producing an abstract
 * syntax tree.
 * Names are not resolved here (eng_bind.c does that against a schema); the
 * parser only knows the grammar, so it can be fuzzed on its own.
 *
 * Every node carries the line and column (1-based, in bytes) where it starts,
 * so a later error ("unknown column") can point at the place in the SQL.
 * A parse error is a sentence "line L, column C: ..." in the caller's buffer.
 *
 * Thread-safety: the parser has no global state; any number of threads may
 * parse at once. A parsed sql_stmt is immutable by convention and may be read
 * from any thread.
 *
 * Ownership: sql_parse_script() returns statements the caller frees with
 * sql_stmt_destroy(); every string and child node inside belongs to its
 * statement.
 */
#ifndef RINGCACHE_SQL_H
#define RINGCACHE_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQL_MSG_MAX 512

typedef enum sql_kind {
    SQL_NULL = 1, /* NULL literal */
    SQL_INT,      /* integer literal: u (magnitude fits uint64); i when <= INT64_MAX */
    SQL_FLOAT,    /* d */
    SQL_STRING,   /* s (unescaped, may hold NUL: slen) */
    SQL_BOOL,     /* true/false: i */
    SQL_COLUMN,   /* s: name */
    SQL_STAR,     /* * (in count(*) or SELECT *) */
    SQL_FUNC,     /* s: name as written; args */
    SQL_UNARY,    /* op: SQL_OP_NEG / SQL_OP_NOT; args[0] */
    SQL_BINARY,   /* op; args[0], args[1] */
    SQL_IN,       /* args[0] IN (args[1..]); negated */
    SQL_LIKE,     /* args[0] LIKE args[1]; negated, op SQL_OP_LIKE/ILIKE */
    SQL_IS_NULL,  /* args[0] IS [NOT] NULL; negated */
    SQL_CASE,     /* args: [operand] (when, then)* [else]; has_operand, has_else */
    SQL_CAST,     /* args[0]; s: type name as written */
    SQL_BETWEEN,  /* args[0] [NOT] BETWEEN args[1] AND args[2] */
    SQL_SUBQUERY, /* sub: (SELECT ...) as a scalar, or the list of IN (SELECT ...) */
    SQL_COLUMNS,  /* COLUMNS('regex') in the SELECT list: s the regex */
    SQL_ARRAY,    /* [a, b, ...]: args */
} sql_kind;

typedef enum sql_op {
    SQL_OP_NONE = 0,
    SQL_OP_ADD,
    SQL_OP_SUB,
    SQL_OP_MUL,
    SQL_OP_DIV,
    SQL_OP_MOD,
    SQL_OP_EQ,
    SQL_OP_NE,
    SQL_OP_LT,
    SQL_OP_LE,
    SQL_OP_GT,
    SQL_OP_GE,
    SQL_OP_AND,
    SQL_OP_OR,
    SQL_OP_NOT,
    SQL_OP_NEG,
    SQL_OP_CONCAT,
    SQL_OP_LIKE,
    SQL_OP_ILIKE,
} sql_op;

typedef struct sql_node sql_node;
struct sql_window;
struct sql_node {
    sql_kind kind;
    sql_op op;
    int line, col;
    bool negated, has_operand, has_else;
    int64_t i;
    uint64_t u;
    double d;
    char *s;
    size_t slen;
    sql_node **args;
    int nargs;
    char *qual;             /* SQL_COLUMN t.x: the qualifier t (s is x), else NULL */
    struct sql_stmt *sub;   /* SQL_SUBQUERY: the query */
    bool sub_borrowed;      /* a clone's: sub belongs to the original node */
    struct sql_window *win; /* SQL_FUNC f(...) OVER (...): the window, else NULL */
    bool win_borrowed;      /* a clone's: win belongs to the original node */
    /* SQL_FUNC of a parametric aggregate, f(params)(args): the parameters */
    sql_node **params;
    int nparams;
};

typedef struct sql_select_item sql_select_item;
struct sql_select_item {
    sql_node *expr;
    char *alias; /* NULL when none */
    /* * or COLUMNS('re') EXCEPT (a, b) REPLACE (expr AS c, ...) */
    char **except;
    int n_except;
    sql_select_item *replace; /* expr and alias (the column it replaces) */
    int n_replace;
    /* set by the engine on a JOIN's right side ("SELECT * FROM item") for the
     * time it runs: * expands only the columns named in keep (the names the
     * outer query uses), at least one; borrowed, never freed here */
    bool keep_set;
    const char *const *keep;
    int n_keep;
};

typedef struct sql_order_item {
    sql_node *expr;
    bool desc;
    int nulls; /* 0 default (last), 1 first, 2 last */
} sql_order_item;

/* A window frame's bound: ROWS BETWEEN <start> AND <end>. */
typedef enum sql_frame_bound {
    SQL_FB_UNBOUNDED_PRECEDING = 1,
    SQL_FB_PRECEDING,
    SQL_FB_CURRENT,
    SQL_FB_FOLLOWING,
    SQL_FB_UNBOUNDED_FOLLOWING,
} sql_frame_bound;

/* OVER ([PARTITION BY ...] [ORDER BY ...] [ROWS BETWEEN ... AND ...]). Without
 * a frame ClickHouse's default holds: with ORDER BY, from the partition's
 * start to the current row's last peer; without, the whole partition. */
typedef struct sql_window {
    sql_node **partition;
    int n_partition;
    struct sql_order_item *order;
    int n_order;
    bool has_frame;
    sql_frame_bound start, end;
    int64_t start_n, end_n; /* n PRECEDING / n FOLLOWING */
    int line, col;          /* OVER */
} sql_window;

typedef struct sql_setting {
    char *name;
    sql_node *value; /* a literal */
    int line, col;
} sql_setting;

typedef enum sql_stmt_kind {
    SQL_SELECT = 1,
    SQL_DESCRIBE,
    SQL_CREATE_TABLE,   /* table, create */
    SQL_DROP_TABLE,     /* table, if_exists */
    SQL_TRUNCATE_TABLE, /* table, if_exists */
    SQL_OPTIMIZE_TABLE, /* table, optimize_final */
    SQL_INSERT,         /* table, insert */
    SQL_SHOW_TABLES,    /* table_db (FROM db) or NULL, like (LIKE 'pattern') or NULL */
} sql_stmt_kind;

/* One column of CREATE TABLE. type is the type as written, normalised
 * ("Nullable(Int32)", "DateTime64(3, 'UTC')"); codec is what CODEC(...)
 * holds ("ZSTD(3)", "LZ4"), or NULL. */
typedef struct sql_column_def {
    char *name;
    char *type;
    char *codec;
    char *default_text; /* DEFAULT <expr>: the expression as written, or NULL */
    int line, col;
} sql_column_def;

/* CREATE TABLE's definition. Keys are column names (ORDER BY x, ORDER BY
 * (a, b), ORDER BY tuple()); has_order_by / has_primary_key say whether the
 * clause was there. partition_by is the expression, partition_text its text. */
typedef struct sql_table_def {
    sql_column_def *cols;
    int n_cols;
    char *engine;     /* "MergeTree", "ReplacingMergeTree", ... as written */
    char *engine_arg; /* ReplacingMergeTree(ver): "ver"; NULL when none */
    int engine_line, engine_col;
    char **order_by;
    int n_order_by;
    bool has_order_by;
    char **primary_key;
    int n_primary_key;
    bool has_primary_key;
    sql_node *partition_by;
    char *partition_text;
    sql_setting *settings; /* the table's SETTINGS */
    int n_settings;
    struct sql_stmt *as_select; /* CREATE TABLE ... AS SELECT, or NULL */
} sql_table_def;

/* INSERT INTO t [(cols)] SELECT ... | VALUES (...), ... | FORMAT F <data>. */
typedef struct sql_insert {
    char **cols; /* the column list, or NULL (every column) */
    int n_cols;
    struct sql_stmt *select; /* INSERT ... SELECT (its SETTINGS apply to both) */
    sql_node **values;       /* VALUES: n_rows x width expressions, row-major */
    int n_rows, width;
    char *format; /* INSERT ... FORMAT name */
    char *data;   /* the bytes after the format name (one blank or
                                   newline skipped), to the end of the text; may
                                   be empty: then the data comes from elsewhere */
    size_t data_len;
} sql_insert;

/* WITH name AS (SELECT ...) (a common table expression: sub) or ClickHouse's
 * WITH expr AS name (expr, which the name stands for in the query). */
typedef struct sql_with {
    char *name;
    struct sql_stmt *sub;
    sql_node *expr;
    int line, col;
} sql_with;

typedef enum sql_join_kind {
    SQL_JOIN_INNER = 1,
    SQL_JOIN_LEFT,
    SQL_JOIN_RIGHT,
    SQL_JOIN_FULL,
    SQL_JOIN_CROSS,
} sql_join_kind;

/* One JOIN of FROM: right is "SELECT * FROM <the right side>" (a table, a
 * table function or a subquery, with its alias in right->from_alias); on is
 * the ON condition, or using[] the USING columns (neither: CROSS JOIN). */
typedef struct sql_join {
    sql_join_kind kind;
    bool any; /* ANY strictness (else ALL) */
    struct sql_stmt *right;
    sql_node *on;
    char **using;
    int n_using;
    int line, col;
} sql_join;

typedef enum sql_explain_kind {
    SQL_EXPLAIN_NONE = 0,
    SQL_EXPLAIN_PLAN,
    SQL_EXPLAIN_SYNTAX,
} sql_explain_kind;

typedef struct sql_stmt {
    sql_stmt_kind kind;
    bool distinct; /* SELECT DISTINCT */
    sql_select_item *items;
    int n_items;
    /* FROM: a table function (s3 / file) with literal arguments, or a table
     * [db.]name (from_fn NULL); neither: a SELECT without FROM, which reads
     * the one row of system.one as ClickHouse's does */
    char *from_fn;
    sql_node **from_args;
    int n_from_args;
    int from_line, from_col;
    /* FROM a table (from_fn NULL), and the table of the table statements:
     * [table_db.]table, FROM t FINAL */
    char *table_db;
    char *table;
    bool final;
    int table_line, table_col;
    bool if_exists, if_not_exists;
    bool optimize_final;   /* OPTIMIZE TABLE t FINAL */
    char *like;            /* SHOW TABLES LIKE */
    sql_table_def *create; /* SQL_CREATE_TABLE */
    sql_insert *insert;    /* SQL_INSERT */
    sql_node *where;       /* NULL when absent */
    sql_node **group_by;
    int n_group_by;
    sql_node *having;
    sql_order_item *order_by;
    int n_order_by;
    bool has_limit;
    int64_t limit, offset;
    /* LIMIT [m,] n BY exprs (before the LIMIT above, which may follow it) */
    sql_node **limit_by;
    int n_limit_by;
    int64_t limit_by_n, limit_by_offset;
    sql_setting *settings;
    int n_settings;
    char *format;         /* FORMAT name, NULL when absent */
    char *outfile;        /* INTO OUTFILE 'path', NULL when absent */
    uint8_t outfile_mode; /* SQL_OUTFILE_* */
    bool outfile_stdout;  /* ... AND STDOUT */
    int outfile_line, outfile_col;
    int line, col; /* where the statement starts */
    /* composition */
    struct sql_stmt *from_sub; /* FROM (SELECT ...) */
    char *from_alias;          /* FROM's [AS] alias, NULL when none */
    sql_with *with;            /* WITH ... (in the order written) */
    int n_with;
    sql_join *joins; /* FROM a JOIN b ... JOIN c: left to right */
    int n_joins;
    /* [LEFT] ARRAY JOIN expr [AS alias]: one row per element of expr */
    sql_node *array_join;
    char *array_join_alias; /* NULL: the element takes expr's column name */
    bool array_join_left;   /* LEFT: an empty array gives one row of defaults */
    int array_join_line, array_join_col;
    struct sql_stmt *union_all; /* the next SELECT of UNION ALL (its SETTINGS and
                                   FORMAT are the head's) */
    sql_explain_kind explain;   /* EXPLAIN [PLAN] / EXPLAIN SYNTAX */
    int explain_line, explain_col;
} sql_stmt;

enum { SQL_OUTFILE_NEW = 0, SQL_OUTFILE_APPEND, SQL_OUTFILE_TRUNCATE };

/* Parses the statements of `text` (len bytes, need not be NUL-terminated),
 * separated by ';' (empty statements are skipped). Returns the number of
 * statements (>= 0) with *out an array of them, or -EINVAL with "line L,
 * column C: ..." in err (*out NULL), or -ENOMEM. Free with sql_script_free. */
int sql_parse_script(const char *text, size_t len, sql_stmt ***out, char *err, size_t errlen);
void sql_script_free(sql_stmt ***stmts, int n);

/* Parses exactly one statement (a trailing ';' is allowed). 0 or -EINVAL/-ENOMEM. */
int sql_parse(const char *text, size_t len, sql_stmt **out, char *err, size_t errlen);
void sql_stmt_destroy(sql_stmt **s);
void sql_node_free(sql_node *n);

/* Writes the ClickHouse-style name of an expression ("count()", "sum(Score)",
 * "plus(a, 1)", "'x'") into buf (truncated with "..." if longer). Returns the
 * full length it wanted. */
size_t sql_node_name(const sql_node *n, char *buf, size_t cap);

/* A SELECT (with its WITH, subqueries, joins, UNION ALL and SETTINGS) as SQL
 * text that parses back to the same statement: expressions in infix form,
 * fully parenthesised, names backquoted where needed; pretty: each clause on
 * a line of its own (EXPLAIN SYNTAX). Returns the length with *out malloc'ed,
 * -EINVAL for another statement, or -ENOMEM. */
int sql_stmt_text(const sql_stmt *s, bool pretty, char **out);

/* A growable SQL text: appends keep p NUL-terminated; an allocation that fails
 * sets oom and makes every later append a no-op (check it once at the end).
 * Start from {0}; the caller frees p. One per thread. */
typedef struct sql_text {
    char *p;
    size_t len, cap;
    bool oom;
} sql_text;
void sql_text_put(sql_text *b, const char *s, size_t n);
void sql_text_str(sql_text *b, const char *s);
/* s[0..n) as a quoted SQL string: quotes and backslashes escaped, NUL as \0. */
void sql_text_quoted(sql_text *b, const char *s, size_t n);

/* Deep copy. NULL on -ENOMEM. */
sql_node *sql_node_clone(const sql_node *n);

/* Whether two expressions are the same tree (names compared exactly). */
bool sql_node_equal(const sql_node *a, const sql_node *b);

#endif /* RINGCACHE_SQL_H */
