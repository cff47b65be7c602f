/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_error.c: ClickHouse's error names (eng_error.h) and the classification
 * of a failed statement: each stage has one kind of failure by default, and
 * the engine's sentences start with the words that name the others
 * ("unknown column", "unknown function", "illegal type", ...), after the SQL
 * place ("line L, column C: ") when there is one.
 */
#include "eng_error.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

static const struct {
    int code;
    const char *name;
} names[] = {
    {ENG_E_CANNOT_PARSE_TEXT, "CANNOT_PARSE_TEXT"},
    {ENG_E_CANNOT_WRITE_TO_OSTREAM, "CANNOT_WRITE_TO_OSTREAM"},
    {ENG_E_CANNOT_PARSE_INPUT_ASSERTION_FAILED, "CANNOT_PARSE_INPUT_ASSERTION_FAILED"},
    {ENG_E_CANNOT_READ_ALL_DATA, "CANNOT_READ_ALL_DATA"},
    {ENG_E_BAD_ARGUMENTS, "BAD_ARGUMENTS"},
    {ENG_E_NUMBER_OF_ARGUMENTS_DOESNT_MATCH, "NUMBER_OF_ARGUMENTS_DOESNT_MATCH"},
    {ENG_E_ILLEGAL_TYPE_OF_ARGUMENT, "ILLEGAL_TYPE_OF_ARGUMENT"},
    {ENG_E_UNKNOWN_FUNCTION, "UNKNOWN_FUNCTION"},
    {ENG_E_UNKNOWN_IDENTIFIER, "UNKNOWN_IDENTIFIER"},
    {ENG_E_NOT_IMPLEMENTED, "NOT_IMPLEMENTED"},
    {ENG_E_LOGICAL_ERROR, "LOGICAL_ERROR"},
    {ENG_E_UNKNOWN_TYPE, "UNKNOWN_TYPE"},
    {ENG_E_TYPE_MISMATCH, "TYPE_MISMATCH"},
    {ENG_E_TABLE_ALREADY_EXISTS, "TABLE_ALREADY_EXISTS"},
    {ENG_E_UNKNOWN_TABLE, "UNKNOWN_TABLE"},
    {ENG_E_SYNTAX_ERROR, "SYNTAX_ERROR"},
    {ENG_E_UNKNOWN_FORMAT, "UNKNOWN_FORMAT"},
    {ENG_E_CANNOT_OPEN_FILE, "CANNOT_OPEN_FILE"},
    {ENG_E_UNKNOWN_DATABASE, "UNKNOWN_DATABASE"},
    {ENG_E_UNKNOWN_COMPRESSION_METHOD, "UNKNOWN_COMPRESSION_METHOD"},
    {ENG_E_FILE_DOESNT_EXIST, "FILE_DOESNT_EXIST"},
    {ENG_E_NO_DATA_TO_INSERT, "NO_DATA_TO_INSERT"},
    {ENG_E_UNKNOWN_SETTING, "UNKNOWN_SETTING"},
    {ENG_E_INCORRECT_DATA, "INCORRECT_DATA"},
    {ENG_E_TIMEOUT_EXCEEDED, "TIMEOUT_EXCEEDED"},
    {ENG_E_READONLY, "READONLY"},
    {ENG_E_ILLEGAL_AGGREGATION, "ILLEGAL_AGGREGATION"},
    {ENG_E_UNKNOWN_USER, "UNKNOWN_USER"},
    {ENG_E_WRONG_PASSWORD, "WRONG_PASSWORD"},
    {ENG_E_REQUIRED_PASSWORD, "REQUIRED_PASSWORD"},
    {ENG_E_IP_ADDRESS_NOT_ALLOWED, "IP_ADDRESS_NOT_ALLOWED"},
    {ENG_E_TOO_MANY_SIMULTANEOUS_QUERIES, "TOO_MANY_SIMULTANEOUS_QUERIES"},
    {ENG_E_SOCKET_TIMEOUT, "SOCKET_TIMEOUT"},
    {ENG_E_NETWORK_ERROR, "NETWORK_ERROR"},
    {ENG_E_NOT_AN_AGGREGATE, "NOT_AN_AGGREGATE"},
    {ENG_E_QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING, "QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING"},
    {ENG_E_QUERY_IS_TOO_LARGE, "QUERY_IS_TOO_LARGE"},
    {ENG_E_MEMORY_LIMIT_EXCEEDED, "MEMORY_LIMIT_EXCEEDED"},
    {ENG_E_SESSION_NOT_FOUND, "SESSION_NOT_FOUND"},
    {ENG_E_SESSION_IS_LOCKED, "SESSION_IS_LOCKED"},
    {ENG_E_INVALID_SESSION_TIMEOUT, "INVALID_SESSION_TIMEOUT"},
    {ENG_E_HTTP_LENGTH_REQUIRED, "HTTP_LENGTH_REQUIRED"},
    {ENG_E_NO_COMMON_TYPE, "NO_COMMON_TYPE"},
    {ENG_E_QUERY_WAS_CANCELLED, "QUERY_WAS_CANCELLED"},
    {ENG_E_UNKNOWN_QUERY_PARAMETER, "UNKNOWN_QUERY_PARAMETER"},
    {ENG_E_BAD_QUERY_PARAMETER, "BAD_QUERY_PARAMETER"},
    {ENG_E_INVALID_SETTING_VALUE, "INVALID_SETTING_VALUE"},
    {ENG_E_READONLY_SETTING, "READONLY_SETTING"},
    {ENG_E_ACCESS_DENIED, "ACCESS_DENIED"},
    {ENG_E_S3_ERROR, "S3_ERROR"},
    {ENG_E_AUTHENTICATION_FAILED, "AUTHENTICATION_FAILED"},
    {ENG_E_STD_EXCEPTION, "STD_EXCEPTION"},
};

const char *eng_error_name(int code)
{
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].code == code)
            return names[i].name;
    return "UNKNOWN_EXCEPTION";
}

/* The sentence after "line L, column C: ". */
static const char *what(const char *msg)
{
    if (!msg)
        return "";
    if (strncmp(msg, "line ", 5) == 0) {
        const char *p = strstr(msg, ": ");
        if (p)
            return p + 2;
    }
    return msg;
}

static bool starts(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* Failures any stage may have. */
static int by_errno(int rc)
{
    switch (rc) {
    case -ECANCELED: return ENG_E_QUERY_WAS_CANCELLED;
    case -ETIMEDOUT: return ENG_E_TIMEOUT_EXCEEDED;
    case -EPIPE:
    case -ECONNRESET: return ENG_E_CANNOT_WRITE_TO_OSTREAM;
    case -ENOTSUP: return ENG_E_NOT_IMPLEMENTED;
    default: return 0;
    }
}

int eng_error_classify(eng_stage stage, int rc, const char *msg)
{
    const char *w = what(msg);
    if (rc == -ENOMEM)
        return ENG_E_MEMORY_LIMIT_EXCEEDED;
    int c = by_errno(rc);
    if (c)
        return c;
    switch (stage) {
    case ENG_STAGE_PARSE: return ENG_E_SYNTAX_ERROR;
    case ENG_STAGE_SETTINGS:
        if (starts(w, "unknown setting"))
            return ENG_E_UNKNOWN_SETTING;
        if (starts(w, "unknown output format") || starts(w, "unknown format"))
            return ENG_E_UNKNOWN_FORMAT;
        return ENG_E_INVALID_SETTING_VALUE;
    case ENG_STAGE_SOURCE:
        if (starts(w, "unknown table function"))
            return ENG_E_UNKNOWN_FUNCTION;
        if (starts(w, "table ") && strstr(w, "does not exist"))
            return ENG_E_UNKNOWN_TABLE;
        if (starts(w, "database ") && strstr(w, "does not exist"))
            return ENG_E_UNKNOWN_DATABASE;
        if (rc == -ENOENT)
            return ENG_E_FILE_DOESNT_EXIST;
        if (rc == -EBADMSG)
            return ENG_E_INCORRECT_DATA;
        if (rc == -EINVAL)
            return ENG_E_BAD_ARGUMENTS;
        return ENG_E_S3_ERROR;
    case ENG_STAGE_BIND:
        if (starts(w, "unknown column"))
            return ENG_E_UNKNOWN_IDENTIFIER;
        if (starts(w, "unknown function"))
            return ENG_E_UNKNOWN_FUNCTION;
        if (starts(w, "unknown type"))
            return ENG_E_UNKNOWN_TYPE;
        if (starts(w, "unknown unit"))
            return ENG_E_BAD_ARGUMENTS;
        if (strstr(w, "takes ") && strstr(w, "argument"))
            return ENG_E_NUMBER_OF_ARGUMENTS_DOESNT_MATCH;
        if (starts(w, "there is no supertype"))
            return ENG_E_NO_COMMON_TYPE;
        if (starts(w, "illegal type") || starts(w, "cannot compare") || starts(w, "cannot cast"))
            return ENG_E_ILLEGAL_TYPE_OF_ARGUMENT;
        if (starts(w, "column ") && strstr(w, "not under an aggregate function"))
            return ENG_E_NOT_AN_AGGREGATE;
        if (starts(w, "aggregate function"))
            return ENG_E_ILLEGAL_AGGREGATION;
        if (starts(w, "unsupported"))
            return ENG_E_NOT_IMPLEMENTED;
        return ENG_E_BAD_ARGUMENTS;
    case ENG_STAGE_EXEC:
        if (rc == -EBADMSG)
            return ENG_E_CANNOT_PARSE_TEXT;
        if (rc == -EINVAL)
            return ENG_E_BAD_ARGUMENTS;
        if (rc == -ENOENT)
            return ENG_E_FILE_DOESNT_EXIST;
        if (rc == -EIO && starts(w, "cannot write the result"))
            return ENG_E_CANNOT_WRITE_TO_OSTREAM;
        if (rc == -EIO || rc == -EHOSTDOWN || rc == -EREMOTEIO || rc == -EACCES || rc == -ESTALE)
            return ENG_E_S3_ERROR;
        return ENG_E_STD_EXCEPTION;
    }
    return ENG_E_STD_EXCEPTION;
}
