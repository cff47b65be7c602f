/* SPDX-License-Identifier: Apache-2.0
 *
 * h_procinfo.c: what benchmarks read about a running process from /proc: its
 * CPU time (user + system, all threads) and its resident memory.
 */
#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double h_pid_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* fields after the command name, which may hold spaces and parentheses */
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (p)
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

double h_pgrp_cpu_s(pid_t pgid)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    double t = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *p = strrchr(buf, ')');
        int pgrp = 0;
        if (p && sscanf(p + 2, "%*c %*d %d", &pgrp) == 1 && pgrp == (int)pgid)
            t += h_pid_cpu_s((pid_t)pid);
    }
    closedir(d);
    return t;
}

long h_pid_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}
