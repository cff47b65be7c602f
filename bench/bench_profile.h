/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_profile.h: profiling a benchmark's phases where they run, for the
 * CPU-per-GiB tables of bench/README.md.
 *
 *   RINGCACHE_BENCH_PERF=DIR   a phase wrapped in bench_perf_start/stop is
 *                              recorded by `perf record -g` (cpu-clock
 *                              samples: this VM has no hardware counters)
 *                              over the processes that do its work, into
 *                              DIR/NAME.data (perf's own output in NAME.log);
 *                              bench/profile/perf_share.sh turns one into the
 *                              table of where the CPU goes
 *   valgrind --tool=callgrind --collect-atstart=no BENCH ...
 *                              instruction counts of this process for the
 *                              phases wrapped in bench_callgrind_phase, one
 *                              dump each (callgrind_annotate FILE.N); they do
 *                              not depend on the machine's load
 *
 * Without either, the calls cost nothing. Header-only, for bench programs.
 */
#ifndef RINGCACHE_BENCH_PROFILE_H
#define RINGCACHE_BENCH_PROFILE_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BENCH_HAVE_CALLGRIND 1
#endif
#endif

/* Starts `perf record` over pids[0..n) as phase `name` when
 * RINGCACHE_BENCH_PERF names a folder: its pid (give it to bench_perf_stop),
 * or 0 when not profiling (or perf cannot start). */
static inline pid_t bench_perf_start(const char *name, const pid_t *pids, int n)
{
    const char *dir = getenv("RINGCACHE_BENCH_PERF");
    if (!dir || !dir[0] || n <= 0)
        return 0;
    char list[1024] = "", data[1024], log[1024];
    size_t off = 0;
    for (int i = 0; i < n && off < sizeof(list) - 16; i++)
        off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d", i ? "," : "", (int)pids[i]);
    snprintf(data, sizeof(data), "%s/%s.data", dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", dir, name);
    /* posix_spawn, not fork: a fork would make every page of this process
     * copy-on-write, and the phase would pay a fault per page it writes */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    char *argv[] = {"perf", "record", "-g", "-e", "cpu-clock", "-F",
                    "1999", "-p",     list, "-o", data,        NULL};
    pid_t p = 0;
    int rc = posix_spawnp(&p, "perf", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return 0;
    /* let perf attach to every process before the phase starts */
    struct timespec ts = {0, 700 * 1000000L};
    nanosleep(&ts, NULL);
    return p;
}

static inline void bench_perf_stop(pid_t perf)
{
    if (perf <= 0)
        return;
    kill(perf, SIGINT);
    int st;
    waitpid(perf, &st, 0);
}

/* The processes whose parent is `parent` (nginx's workers), into out[0..cap):
 * their count. */
static inline int bench_children(pid_t parent, pid_t *out, int cap)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && n < cap && (e = readdir(d)) != NULL) {
        char path[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t k = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[k] = '\0';
        const char *rp = strrchr(buf, ')'); /* the name may hold spaces */
        int ppid = 0;
        if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == (int)parent)
            out[n++] = (pid_t)atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return n;
}

/* Under callgrind (--collect-atstart=no): collects from here ... */
static inline void bench_callgrind_on(void)
{
#ifdef BENCH_HAVE_CALLGRIND
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
#endif
}

/* ... to here, and dumps what was collected as phase `name`. */
static inline void bench_callgrind_off(const char *name)
{
#ifdef BENCH_HAVE_CALLGRIND
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(name);
#else
    (void)name;
#endif
}

#endif /* RINGCACHE_BENCH_PROFILE_H */
