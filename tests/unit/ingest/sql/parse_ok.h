/* SPDX-License-Identifier: Apache-2.0
 *
 * parse_ok.h: for the engine's unit tests (after <cmocka.h>): parses one
 * statement that must parse, printing the error when it does not.
 * Single-threaded, as the tests are.
 */
#ifndef RINGCACHE_TEST_PARSE_OK_H
#define RINGCACHE_TEST_PARSE_OK_H

#include "sql.h"

#include <stdio.h>
#include <string.h>

static inline sql_stmt *parse_ok(const char *sql)
{
    sql_stmt *s;
    char err[SQL_MSG_MAX];
    int rc = sql_parse(sql, strlen(sql), &s, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", sql, err);
    assert_int_equal(rc, 0);
    return s;
}

#endif /* RINGCACHE_TEST_PARSE_OK_H */
