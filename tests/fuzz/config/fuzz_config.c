/* SPDX-License-Identifier: Apache-2.0
 *
 * Fuzzes the option loader (cached/config.h) with config file text and with
 * the same bytes cut into command-line words: any input gives 0 (or 1 for
 * --help) or -EINVAL with a message; whatever loads, cfg_format() writes back
 * as text that loads to the same values (the secret excepted: it must come out
 * redacted), and a secret's value never shows in a message.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct conf {
    char dir[32];
    char secret[24];
    int64_t port, size, ms, any;
    bool flag;
} conf;

#define F(field) offsetof(conf, field), sizeof(((conf *)0)->field)
static const cfg_opt opts[] = {
    {"data-dir", CFG_STR, "/var/x", "a folder", F(dir), 0, 0, false, false},
    {"secret", CFG_STR, NULL, "a secret", F(secret), 0, 0, true, false},
    {"port", CFG_INT, "7070", "a port", F(port), 0, 65535, false, false},
    {"block-size", CFG_SIZE, "1MiB", "a size", F(size), 4096, 1LL << 40, false, false},
    {"deadline", CFG_MS, "2s", "a duration", F(ms), 0, 86400000, false, false},
    {"offset", CFG_INT, "0", "any int64", F(any), 0, 0, false, false},
    {"tls", CFG_BOOL, "false", "a switch", F(flag), 0, 0, false, false},
};
#define N (sizeof opts / sizeof opts[0])

static void defaults(conf *c)
{
    char *argv[] = {"fuzz"};
    memset(c, 0, sizeof *c);
    if (cfg_load(opts, N, c, 1, argv, NULL, 0) != 0)
        abort();
}

static void check_roundtrip(const conf *a)
{
    static char buf[4096];
    int n = cfg_format(opts, N, a, buf, sizeof buf);
    if (n < 0 || (size_t)n != strlen(buf))
        abort();
    if (a->secret[0] != '\0' && strstr(buf, "secret = <redacted>\n") == NULL)
        abort();
    conf b;
    defaults(&b);
    char err[256];
    /* the redacted secret reads back as the text "<redacted>" */
    if (cfg_load_text(opts, N, &b, buf, (size_t)n, "formatted", err, sizeof err) != 0)
        abort();
    if (strcmp(a->dir, b.dir) != 0 || a->port != b.port || a->size != b.size || a->ms != b.ms ||
        a->any != b.any || a->flag != b.flag)
        abort();
}

static void check_error(int rc, const char *err, const conf *c)
{
    if (rc != -EINVAL && rc != -ENOMEM)
        abort();
    if (err[0] == '\0')
        abort();
    (void)c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    conf c;

    /* 1: as a config file */
    defaults(&c);
    int rc = cfg_load_text(opts, N, &c, (const char *)data, size, "fuzz", err, sizeof err);
    if (rc == 0)
        check_roundtrip(&c);
    else
        check_error(rc, err, &c);

    /* 2: as command-line words, one per line (never --config: no file I/O) */
    char *copy = malloc(size + 1);
    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    char *argv[65] = {"fuzz"};
    int argc = 1;
    for (char *save = NULL, *w = strtok_r(copy, "\n", &save); w != NULL && argc < 64;
         w = strtok_r(NULL, "\n", &save))
        if (strncmp(w, "--config", 8) != 0)
            argv[argc++] = w;
    argv[argc] = NULL;
    err[0] = '\0';
    rc = cfg_load(opts, N, &c, argc, argv, err, sizeof err);
    if (rc == 0)
        check_roundtrip(&c);
    else if (rc != 1)
        check_error(rc, err, &c);
    /* a secret given as a flag value never shows in a message: give each
     * --secret a marker no other word contains, load again, look for it */
    static const char marker[] = "\x01\x02secret-marker\x02\x01";
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--secret") != 0)
            continue;
        bool clash = false;
        for (int k = 1; k < argc; k++)
            if (strstr(argv[k], "secret-marker") != NULL)
                clash = true;
        if (clash)
            continue;
        char *argv2[65];
        memcpy(argv2, argv, sizeof(argv2));
        argv2[i + 1] = (char *)marker;
        conf c2;
        char err2[256] = "";
        if (cfg_load(opts, N, &c2, argc, argv2, err2, sizeof err2) < 0 &&
            strstr(err2, "secret-marker") != NULL)
            abort();
    }
    free(copy);
    return 0;
}
