/* SPDX-License-Identifier: Apache-2.0
 *
 * sql_admin.h: the statements a server answers from its own state
 * (sql_admin.c), parsed apart from the SELECT grammar:
 *
 *   SHOW DATABASES [LIKE 'p'] [FORMAT f]
 *   SHOW TABLES [FROM db] [LIKE 'p'] [FORMAT f]
 *   SHOW PROCESSLIST [FORMAT f]
 *   EXISTS [TEMPORARY] [TABLE | VIEW] [db.]name [FORMAT f]
 *   EXISTS DATABASE name [FORMAT f]
 *   USE db
 *   SET name = value [, name = value ...]
 *   KILL QUERY WHERE query_id = 'id' [SYNC | ASYNC] [FORMAT f]
 *   SYSTEM word ...  (DROP PAGE CACHE, FLUSH LOGS, ...: the words, upper-cased)
 *
 * A trailing ';' is allowed; comments as in SQL.
 *
 * Thread-safety: reentrant, no globals.
 */
#ifndef RINGCACHE_SQL_ADMIN_H
#define RINGCACHE_SQL_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

typedef enum sql_admin_kind {
    SQL_ADMIN_NONE = 0,
    SQL_ADMIN_SHOW_DATABASES,
    SQL_ADMIN_SHOW_TABLES,
    SQL_ADMIN_SHOW_PROCESSLIST,
    SQL_ADMIN_EXISTS,
    SQL_ADMIN_USE,
    SQL_ADMIN_SET,
    SQL_ADMIN_KILL_QUERY,
    SQL_ADMIN_SYSTEM,
} sql_admin_kind;

#define SQL_ADMIN_MAX_SETS 32

typedef struct sql_admin {
    sql_admin_kind kind;
    char db[128];         /* SHOW TABLES FROM db; EXISTS db.name */
    char name[128];       /* EXISTS, USE */
    bool exists_database; /* EXISTS DATABASE */
    char like[256];
    bool has_like;
    char format[64]; /* FORMAT f, "" when absent */
    struct {
        char name[64];
        char value[256]; /* as written, strings unquoted */
    } sets[SQL_ADMIN_MAX_SETS];
    int n_sets;
    char query_id[128]; /* KILL QUERY */
    bool sync;
    char system[128]; /* SYSTEM's words: "DROP PAGE CACHE" */
} sql_admin;

/* 1 when text is one of the statements above (*a filled), 0 when it is not
 * (it is for sql_parse_script), -EINVAL when it starts as one of them but
 * does not parse ("line L, column C: expected ..." in err). */
int sql_admin_parse(const char *text, size_t len, sql_admin *a, char *err, size_t errlen);

#endif /* RINGCACHE_SQL_ADMIN_H */
