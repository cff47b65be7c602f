/* SPDX-License-Identifier: Apache-2.0
 *
 * config.h: one table of options drives the config file, the command-line
 * flags, --help and the effective config that /config prints (the shape of
 * Redis' static_configs[]). Each module of the daemon declares its options as a
 * cfg_opt array pointing into a caller-owned struct (offsetof); the binary
 * concatenates the tables it composes and calls cfg_load() once.
 *
 * Owns nothing: every function works on the caller's table, struct, buffers
 * and files (cfg_read_file's buffer is the caller's to free).
 *
 * Thread-safety: every function works only on the caller's table, struct and
 * buffers and keeps no state: any thread, as long as no other thread writes the
 * same conf struct at the same time. A loaded conf struct is plain data and may
 * be read from any number of threads.
 *
 * Grammar, shared by the file and the flags (`--block-size 1MiB` is the same as
 * the file line `block-size = 1MiB`):
 *
 *   file line  := blank | comment | key '=' value [comment]
 *   comment    := '#' ... end of line   ('#' at the start of a line, or after
 *                                        whitespace; "a#b" is a value)
 *   value      := bare | '"' quoted '"' (bare: trimmed of surrounding spaces;
 *                                        quoted: \" \\ \n \t escapes, for values
 *                                        with '#', quotes or edge spaces)
 *   flags      := --key VALUE | --key=VALUE | --key (BOOL: true) | --no-key
 *                 (BOOL: false) | --key true|false (BOOL) | --config FILE |
 *                 --config=FILE | --help | -h
 *
 * Values by type:
 *   CFG_STR   any text up to size-1 bytes
 *   CFG_INT   decimal integer, optional sign
 *   CFG_SIZE  bytes with an optional unit, as base/bytesize.h reads them:
 *             b, k/ki/kb/kib, m/.../mib, g/.../gib, t/.../tib, case-insensitive,
 *             every unit a power of 1024 (KB is KiB here, not 1000 as in
 *             ClickHouse or Kubernetes): "64k" = 65536, "1MiB" = "1m" =
 *             1048576, "2G" = 2147483648
 *   CFG_MS    integer with an optional unit ms, s, m, h (bare = ms):
 *             "500ms", "2s", "1m" -> 500, 2000, 60000
 *   CFG_BOOL  true/false, yes/no, on/off, 1/0 (case-insensitive)
 * Numeric values are checked against [min, max] when max > min.
 *
 * Precedence: defaults, then the --config file, then the flags in order (a
 * later flag overrides an earlier one; a key set twice in the file is an
 * error). The names "config" and "help" are reserved.
 */
#ifndef RINGCACHE_CONFIG_H
#define RINGCACHE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum cfg_type {
    CFG_STR,
    CFG_INT,
    CFG_SIZE, /* "1MiB", "64k", "2G" -> bytes */
    CFG_BOOL,
    CFG_MS, /* "500ms", "2s", "1m" -> milliseconds */
} cfg_type;

typedef struct cfg_opt {
    const char *name; /* "data-dir": the file key and the flag --data-dir;
                           [a-z0-9-], not "config" nor "help" */
    cfg_type type;
    const char *def;  /* default, as text in the grammar above; NULL: empty
                           string / 0 / false, and not "set" for .required */
    const char *help; /* one line, no trailing period needed */
    size_t offset;    /* offsetof(conf struct, field): char[] for STR,
                           int64_t for INT/SIZE/MS, bool for BOOL */
    size_t size;      /* sizeof the field (the STR buffer size, >= 1) */
    int64_t min, max; /* inclusive numeric range, checked when max > min */
    bool secret;      /* printed as "<redacted>" by cfg_format, never echoed
                           in an error message */
    bool required;    /* must be set (non-empty for STR) by the file or a flag,
                           or have a default */
} cfg_opt;

/* Loads the effective config into the caller-owned struct `conf`: every field
 * named by the table gets its default, then the values of the file named by
 * --config (if given), then the flags. argv[0] is the program name and is
 * skipped; argv is only read. A word that is not an option is an error naming
 * it.
 *
 * Returns 0 on success, 1 when --help or -h was given (nothing else is checked;
 * the caller prints cfg_help() and exits 0), or a negative errno with one
 * sentence in err naming the option (and the file:line for a file) and the fix:
 * -EINVAL for a bad key, value or word, the errno of opening/reading the config
 * file (e.g. -ENOENT, -EACCES), -EFBIG for a file over 1 MiB, -ENOMEM. On error
 * `conf` may be partly written. err may be NULL. */
int cfg_load(const cfg_opt *opts, size_t n, void *conf, int argc, char **argv, char *err,
             size_t errlen);

/* Applies `key = value` lines of `text` (len bytes, NUL bytes are an error) on
 * top of what `conf` already holds: no defaults, no required check. `source`
 * names the text in messages ("config file /etc/ringcached.conf"). This is the
 * file half of cfg_load(); tests and the fuzz target call it directly.
 * Returns 0 or -EINVAL / -ENOMEM with a sentence in err. */
int cfg_load_text(const cfg_opt *opts, size_t n, void *conf, const char *text, size_t len,
                  const char *source, char *err, size_t errlen);

/* The next line of text[0..len) from *pos into buf (len + 1 bytes: a line
 * is never cut), without its "\n" or "\r\n"; *pos and *lineno advance.
 * Returns 1, 0 at the end, or -EINVAL for a line with a NUL byte, with
 * "source:line: ..." in err. */
int cfg_next_line(const char *text, size_t len, size_t *pos, unsigned *lineno, char *buf,
                  const char *source, char *err, size_t errlen);

/* Splits one line of a file in the grammar above (NUL-terminated, no newline,
 * writable) into key and value, in place: 1 for a key/value line, 0 for a
 * blank or comment line, -EINVAL with the reason in why. or_else names what
 * else a line may be in the caller's format ("a [tenant NAME] header"), for
 * the sentence of a line that is not `key = value`; NULL: nothing else. For
 * the formats built on this grammar (the tenants file). */
int cfg_split_line(char *line, const char *or_else, char **key, char **val, char *why,
                   size_t whylen);

/* Prints "Usage: <usage_line>", then every option (flag, value type, help,
 * default, range, required), then --config and --help, to f. */
void cfg_help(const cfg_opt *opts, size_t n, const char *usage_line, FILE *f);

/* Writes the effective config as "key = value\n" lines in table order, in the
 * grammar above (cfg_load_text() reads it back to the same values; sizes and
 * durations in the largest exact unit), secrets as "<redacted>" (an unset
 * secret prints as empty). Always NUL-terminates when cap > 0. Returns the
 * length written (without the NUL), or -ENOSPC when buf is too small. */
int cfg_format(const cfg_opt *opts, size_t n, const void *conf, char *buf, size_t cap);

/* The files options name. `what` names the file in sentences ("tenants
 * file"), `flag` the option that gives its path ("--tenants").
 *
 * cfg_read_file: reads the whole file into a malloc'd, NUL-terminated buffer
 * (*len excludes the NUL; the caller frees it, wiping it first if it holds
 * secrets). Returns 0, or a negative errno with a sentence in err: the errno
 * of opening or reading, -EFBIG over max bytes, -ENOMEM.
 *
 * cfg_write_port_file: writes "PORT\n" to path atomically (a temporary file
 * beside it, then rename), for scripts and tests that start a daemon on port
 * 0. Returns 0 or a negative errno with a sentence in err. */
int cfg_read_file(const char *path, size_t max, const char *what, const char *flag, char **out,
                  size_t *len, char *err, size_t errlen);

/* A secret kept on the first line of a file (a mounted Secret ends it with a
 * newline or not): copies that line into out (cap bytes with the NUL) and
 * wipes what was read. 0, or a negative errno with a sentence in err naming
 * the file and the fix: unreadable, empty first line, longer than cap - 1. */
int cfg_read_secret_line(const char *path, const char *what, const char *flag, char *out,
                         size_t cap, char *err, size_t errlen);
int cfg_write_port_file(const char *path, int port, const char *what, const char *flag, char *err,
                        size_t errlen);

#endif /* RINGCACHE_CONFIG_H */
