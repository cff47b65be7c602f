/* SPDX-License-Identifier: Apache-2.0
 *
 * eng_tdef.h: a MergeTree table's definition as the engine sees it
 * (eng_tdef.c): CREATE TABLE's columns with their declared ClickHouse types
 * (the storage types of table.h plus what only the declaration says: Date
 * or Date32, FixedString(N), LowCardinality), the engine, keys, partition
 * expression and table settings; and the settings of an INSERT.
 *
 * The definition is kept in the table's log as the normalised CREATE
 * statement (tb_schema.ddl), so any process reads back exactly what was
 * declared: eng_tdef_from_schema parses it again.
 *
 * Thread-safety: pure functions; a filled eng_tdef is read-only by convention.
 */
#ifndef RINGCACHE_ENG_TDEF_H
#define RINGCACHE_ENG_TDEF_H

#include "eng_plan.h"
#include "sql.h"
#include "table.h"

#include <stdbool.h>
#include <stdint.h>

/* Table settings (CREATE TABLE ... SETTINGS), with ClickHouse's defaults. */
typedef struct eng_table_settings {
    uint32_t index_granularity;                       /* 8192 */
    uint64_t parts_to_delay_insert;                   /* 1000 */
    uint64_t parts_to_throw_insert;                   /* 3000 */
    uint64_t max_delay_to_insert;                     /* 1 (seconds) */
    uint64_t old_parts_lifetime;                      /* 480 (seconds) */
    uint64_t max_parts_to_merge_at_once;              /* 100 */
    uint64_t max_bytes_to_merge_at_max_space_in_pool; /* 150 GiB */
    uint64_t replicated_deduplication_window;         /* 10000 */
    uint64_t replicated_deduplication_window_seconds; /* 3600 */
} eng_table_settings;

typedef struct eng_tdef {
    tb_schema schema;   /* owned; schema.ddl is the normalised CREATE */
    char **types;       /* per column: the declared type ("LowCardinality(String)") */
    uint32_t *fixed;    /* per column: N of FixedString(N), else 0 */
    bool *date16;       /* per column: Date (1970-01-01 .. 2149-06-06), not Date32 */
    char **codecs;      /* per column: the CODEC(...) text, or NULL */
    char **defaults;    /* per column: the DEFAULT expression's text, or NULL */
    uint32_t n_primary; /* PRIMARY KEY: a prefix of ORDER BY */
    eng_table_settings set;
} eng_tdef;

/* A sorting key expression's value is a stored column named ENG_KEY_COLUMN<k>
 * after the declared ones, with the expression as its DEFAULT: hidden from
 * SELECT *, DESCRIBE, system.columns and INSERT's columns. */
#define ENG_KEY_COLUMN "__key_expr_"
bool eng_tdef_hidden(const char *name);

/* The definition of CREATE TABLE db.name (stmt->create). Checks the types,
 * codecs, engine, keys (columns of the table, not Nullable) and settings.
 * 0 or -EINVAL with "line L, column C: ..." in err. */
int eng_tdef_from_create(const sql_stmt *stmt, const char *db, eng_tdef *out, char *err,
                         size_t errlen);

/* The definition of a table read from its log (its ddl parsed again; without
 * one, the storage types stand for the declared ones). 0, -EBADMSG or
 * -ENOMEM. */
int eng_tdef_from_schema(const tb_schema *s, eng_tdef *out, char *err, size_t errlen);
void eng_tdef_free(eng_tdef *d);

/* A declared type: the storage type, nullability and FixedString's N.
 * 0 or -EINVAL with a sentence saying what is supported. */
int eng_decl_type(const char *type, cb_typeinfo *info, bool *nullable, uint32_t *fixed,
                  bool *date16, char *err, size_t errlen);

/* The settings of an INSERT (query SETTINGS over the table's). */
typedef struct eng_insert_settings {
    int max_insert_threads;                                 /* 0 or 1: one pipeline */
    uint64_t min_insert_block_size_rows;                    /* 1048449; 0: off */
    uint64_t min_insert_block_size_bytes;                   /* 268435456; 0: off */
    bool insert_deduplicate;                                /* 1 */
    char insert_deduplication_token[256];                   /* "" */
    bool optimize_on_insert;                                /* 1 */
    uint64_t max_insert_delayed_streams_for_parallel_write; /* 0: as many as pipelines */
    uint64_t parts_to_delay_insert;                         /* the table's */
    uint64_t parts_to_throw_insert;                         /* the table's */
    uint64_t max_delay_to_insert;                           /* the table's */
} eng_insert_settings;

/* Whether name is an INSERT setting (eng_settings_apply leaves those). */
bool eng_insert_setting_known(const char *name);
/* Defaults from the table, then the statement's SETTINGS (insert settings
 * only). 0 or -EINVAL with the setting's place. */
int eng_insert_settings_apply(const sql_stmt *st, const eng_table_settings *ts,
                              eng_insert_settings *out, char *err, size_t errlen);

#endif /* RINGCACHE_ENG_TDEF_H */
