/* SPDX-License-Identifier: Apache-2.0
 *
 * cli_common.c: option parsing, sizes, S3 options and the progress bar shared by
 * the `ringcache` subcommands (see cli.h).
 */
#include "cli.h"

#include "bytesize.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ringcache: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_size_opt(const char *name, const char *v, uint64_t *out)
{
    char err[256];
    if (bytesize_parse(v, out, err, sizeof(err)) < 0) {
        cli_error("--%s: %s", name, err);
        return -1;
    }
    return 0;
}

int cli_opt(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    if (strncmp(a, "--", 2) != 0)
        return 0;
    size_t n = strlen(name);
    if (strncmp(a + 2, name, n) != 0)
        return 0;
    if (a[2 + n] == '=') {
        *value = a + 3 + n;
        return 1;
    }
    if (a[2 + n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        cli_error("--%s needs a value", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

int cli_s3_env(cli_s3_opts *o, const char *profile)
{
    char err[512];
    s3_config_init(&o->cfg);
    if (profile && setenv("AWS_PROFILE", profile, 1) != 0) {
        cli_error("cannot set the profile %s", profile);
        return CLI_USAGE;
    }
    o->profile = profile;
    if (s3_config_from_env(&o->cfg, err, sizeof(err)) < 0) {
        /* the S3 config's sentence names AWS_PROFILE, which --profile set */
        char *from = profile ? strstr(err, " (from AWS_PROFILE)") : NULL;
        char *fix = from ? strstr(from, " or unset AWS_PROFILE") : NULL;
        if (fix) {
            *from = 0;
            *fix = 0;
            cli_error("%s (from --profile)%s or pass another --profile", err,
                      from + strlen(" (from AWS_PROFILE)"));
        } else {
            cli_error("%s", err);
        }
        return CLI_USAGE;
    }
    return 0;
}

static int cli_int(const char *name, const char *v, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*v == '\0' || *end || n < 0 || n > 1000000000) {
        cli_error("--%s takes a whole number, not '%s'", name, v);
        return -1;
    }
    *out = (int)n;
    return 1;
}

int cli_s3_opt(cli_s3_opts *o, int argc, char **argv, int *i)
{
    const char *v;
    int r;
    s3_config *c = &o->cfg;
    if ((r = cli_opt(argc, argv, i, "endpoint", &v)) != 0) {
        if (r < 0)
            return -1;
        if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
            cli_error("--endpoint wants a URL such as http://127.0.0.1:9000, not '%s'", v);
            return -1;
        }
        snprintf(c->endpoint, sizeof(c->endpoint), "%s", v);
        c->path_style = true;
        return 1;
    }
    if ((r = cli_opt(argc, argv, i, "region", &v)) != 0) {
        if (r > 0)
            snprintf(c->region, sizeof(c->region), "%s", v);
        return r;
    }
    if ((r = cli_opt(argc, argv, i, "ca-bundle", &v)) != 0) {
        if (r > 0)
            snprintf(c->ca_bundle, sizeof(c->ca_bundle), "%s", v);
        return r;
    }
    if ((r = cli_opt(argc, argv, i, "connect-timeout", &v)) != 0)
        return r < 0 ? -1 : cli_int("connect-timeout", v, &c->connect_timeout_ms);
    if ((r = cli_opt(argc, argv, i, "timeout", &v)) != 0)
        return r < 0 ? -1 : cli_int("timeout", v, &c->request_timeout_ms);
    if ((r = cli_opt(argc, argv, i, "attempts", &v)) != 0) {
        if (r < 0 || cli_int("attempts", v, &c->max_attempts) < 0)
            return -1;
        if (c->max_attempts < 1)
            c->max_attempts = 1;
        return 1;
    }
    if (strcmp(argv[*i], "--no-sign-request") == 0) {
        c->anonymous = true;
        return 1;
    }
    if (strcmp(argv[*i], "--virtual-host") == 0) {
        c->path_style = false;
        return 1;
    }
    return 0;
}

static int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_progress_init(cli_progress *p, const char *label, uint64_t total)
{
    p->on = isatty(STDERR_FILENO) && total > 4ull * 1024 * 1024;
    p->label = label;
    p->start_ms = p->last_ms = cli_now_ms();
}

void cli_progress_update(uint64_t done, uint64_t total, void *arg)
{
    cli_progress *p = arg;
    if (!p || !p->on)
        return;
    int64_t now = cli_now_ms();
    if (now - p->last_ms < 100 && done < total)
        return;
    p->last_ms = now;
    double secs = (double)(now - p->start_ms) / 1000.0;
    double mib = (double)done / 1048576.0;
    int width = 30, fill = total ? (int)((double)done * width / (double)total) : 0;
    char bar[32];
    for (int k = 0; k < width; k++)
        bar[k] = k < fill ? '#' : ' ';
    bar[width] = '\0';
    fprintf(stderr, "\r%s [%s] %3d%% %8.1f / %.1f MiB  %7.1f MiB/s", p->label, bar,
            total ? (int)(100.0 * (double)done / (double)total) : 0, mib, (double)total / 1048576.0,
            secs > 0 ? mib / secs : 0.0);
    fflush(stderr);
}

void cli_progress_end(cli_progress *p)
{
    if (p->on)
        fputc('\n', stderr);
}
