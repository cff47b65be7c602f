/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_error.h: ClickHouse's error codes, the numbers and names its clients
 * understand ("Code: 62. DB::Exception: ... (SYNTAX_ERROR)"): the ones the
 * engine reports for a failed statement (eng_result.code) and the ones a
 * server raises itself (authentication, limits, sessions). The numbers are
 * ClickHouse's (src/Common/ErrorCodes.cpp), which never change.
 *
 * Thread-safety: pure functions over constant tables.
 */
#ifndef RINGCACHE_ENG_ERROR_H
#define RINGCACHE_ENG_ERROR_H

enum {
    ENG_E_CANNOT_PARSE_TEXT = 6,
    ENG_E_CANNOT_WRITE_TO_OSTREAM = 24,
    ENG_E_CANNOT_PARSE_INPUT_ASSERTION_FAILED = 27,
    ENG_E_CANNOT_READ_ALL_DATA = 33,
    ENG_E_BAD_ARGUMENTS = 36,
    ENG_E_NUMBER_OF_ARGUMENTS_DOESNT_MATCH = 42,
    ENG_E_ILLEGAL_TYPE_OF_ARGUMENT = 43,
    ENG_E_UNKNOWN_FUNCTION = 46,
    ENG_E_UNKNOWN_IDENTIFIER = 47,
    ENG_E_NOT_IMPLEMENTED = 48,
    ENG_E_LOGICAL_ERROR = 49,
    ENG_E_UNKNOWN_TYPE = 50,
    ENG_E_TYPE_MISMATCH = 53,
    ENG_E_TABLE_ALREADY_EXISTS = 57,
    ENG_E_UNKNOWN_TABLE = 60,
    ENG_E_SYNTAX_ERROR = 62,
    ENG_E_UNKNOWN_FORMAT = 73,
    ENG_E_CANNOT_OPEN_FILE = 76,
    ENG_E_UNKNOWN_DATABASE = 81,
    ENG_E_UNKNOWN_COMPRESSION_METHOD = 89,
    ENG_E_FILE_DOESNT_EXIST = 107,
    ENG_E_NO_DATA_TO_INSERT = 108,
    ENG_E_UNKNOWN_SETTING = 115,
    ENG_E_INCORRECT_DATA = 117,
    ENG_E_TIMEOUT_EXCEEDED = 159,
    ENG_E_READONLY = 164,
    ENG_E_ILLEGAL_AGGREGATION = 184,
    ENG_E_UNKNOWN_USER = 192,
    ENG_E_WRONG_PASSWORD = 193,
    ENG_E_REQUIRED_PASSWORD = 194,
    ENG_E_IP_ADDRESS_NOT_ALLOWED = 195,
    ENG_E_TOO_MANY_SIMULTANEOUS_QUERIES = 202,
    ENG_E_SOCKET_TIMEOUT = 209,
    ENG_E_NETWORK_ERROR = 210,
    ENG_E_NOT_AN_AGGREGATE = 215,
    ENG_E_QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING = 216,
    ENG_E_QUERY_IS_TOO_LARGE = 229,
    ENG_E_MEMORY_LIMIT_EXCEEDED = 241,
    ENG_E_SESSION_NOT_FOUND = 372,
    ENG_E_SESSION_IS_LOCKED = 373,
    ENG_E_INVALID_SESSION_TIMEOUT = 374,
    ENG_E_HTTP_LENGTH_REQUIRED = 381,
    ENG_E_NO_COMMON_TYPE = 386,
    ENG_E_QUERY_WAS_CANCELLED = 394,
    ENG_E_UNKNOWN_QUERY_PARAMETER = 456,
    ENG_E_BAD_QUERY_PARAMETER = 457,
    ENG_E_INVALID_SETTING_VALUE = 471,
    ENG_E_READONLY_SETTING = 472,
    ENG_E_ACCESS_DENIED = 497,
    ENG_E_S3_ERROR = 499,
    ENG_E_AUTHENTICATION_FAILED = 516,
    ENG_E_STD_EXCEPTION = 1001,
};

/* The name of a code ("SYNTAX_ERROR"), or "UNKNOWN_EXCEPTION" for a code
 * outside the table. */
const char *eng_error_name(int code);

/* Where a statement failed, for eng_error_classify. */
typedef enum eng_stage {
    ENG_STAGE_PARSE = 1, /* the SQL text */
    ENG_STAGE_SETTINGS,  /* SETTINGS and FORMAT */
    ENG_STAGE_SOURCE,    /* FROM: opening the table function or table */
    ENG_STAGE_BIND,      /* names and types */
    ENG_STAGE_EXEC,      /* reading, computing, writing the result */
} eng_stage;

/* The ClickHouse code of a failure: the stage, the -errno and the engine's
 * sentence (which says what kind of mistake it was: "unknown column ...",
 * "unknown function ...", "illegal type ..."). */
int eng_error_classify(eng_stage stage, int rc, const char *msg);

#endif /* RINGCACHE_ENG_ERROR_H */
