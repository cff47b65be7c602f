/* SPDX-License-Identifier: Apache-2.0
 *
 * Test environments: a temp folder per test and the processes it started, and
 * the safety net that cleans up after a test that fails, exits early, aborts or
 * crashes: an atexit handler and signal handlers that SIGKILL every child's
 * process group and remove every folder, using only async-signal-safe calls
 * (kill, waitpid, fork + execve of /bin/rm). Also the small shared helpers:
 * locations, skips, errors, clock, loopback connect.
 * Thread-safety: none (see harness.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "h_int.h"

#define H_MAX_ENVS 32
#define H_MAX_PIDS 256

/* The registry is plain arrays so a signal handler can walk it. A slot is free
 * when its first byte / pid is 0. */
static char g_dirs[H_MAX_ENVS][PATH_MAX];
static volatile pid_t g_pids[H_MAX_PIDS];
static pid_t g_owner; /* the test process; forked children must not clean up */
static int g_installed;
static int g_keep; /* RINGCACHE_TEST_KEEP=1 */
static char g_last_error[1024];

static const int g_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV, SIGBUS};
static struct sigaction g_old[sizeof(g_signals) / sizeof(g_signals[0])];

void h__err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last_error, sizeof(g_last_error), fmt, ap);
    va_end(ap);
    fprintf(stderr, "harness: %s\n", g_last_error);
}

const char *h_last_error(void)
{
    return g_last_error;
}

int64_t h_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Async-signal-safe: kill every registered group, reap what we can, remove the
 * folders with /bin/rm. */
static void h_cleanup_async(void)
{
    for (int i = 0; i < H_MAX_PIDS; i++) {
        pid_t pid = g_pids[i];
        if (pid > 0) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
    }
    for (int i = 0; i < H_MAX_PIDS; i++) {
        pid_t pid = g_pids[i];
        if (pid > 0) {
            waitpid(pid, NULL, 0);
            g_pids[i] = 0;
        }
    }
    if (g_keep)
        return;
    for (int i = 0; i < H_MAX_ENVS; i++) {
        if (g_dirs[i][0] != '/')
            continue;
        pid_t rm = fork();
        if (rm == 0) {
            char *const argv[] = {"rm", "-rf", "--", g_dirs[i], NULL};
            char *const envp[] = {NULL};
            execve("/bin/rm", argv, envp);
            _exit(127);
        }
        if (rm > 0)
            waitpid(rm, NULL, 0);
        g_dirs[i][0] = '\0';
    }
}

static void h_on_signal(int sig)
{
    if (getpid() == g_owner)
        h_cleanup_async();
    /* Hand the signal to whoever had it before (default action, ASan's report,
     * cmocka's handler): restore it and re-raise; it is delivered when we return
     * (a real fault re-executes the faulting instruction). */
    for (size_t i = 0; i < sizeof(g_signals) / sizeof(g_signals[0]); i++) {
        if (g_signals[i] == sig)
            sigaction(sig, &g_old[i], NULL);
    }
    raise(sig);
}

static void h_on_exit(void)
{
    if (getpid() == g_owner)
        h_cleanup_async();
}

static void h_install(void)
{
    if (g_installed && g_owner != getpid()) {
        /* A forked copy of the test making its own environments: the inherited
         * entries are the parent's to clean, not ours. Handlers stay installed. */
        memset(g_dirs, 0, sizeof(g_dirs));
        for (int i = 0; i < H_MAX_PIDS; i++)
            g_pids[i] = 0;
        g_owner = getpid();
    }
    if (!g_installed) {
        g_installed = 1;
        g_owner = getpid();
        const char *keep = getenv("RINGCACHE_TEST_KEEP");
        g_keep = keep != NULL && strcmp(keep, "1") == 0;
        atexit(h_on_exit);
        /* A child that dies must not kill the test through SIGPIPE on a socket. */
        signal(SIGPIPE, SIG_IGN);
    }
    /* (Re)install on every call: test frameworks (cmocka) swap SIGSEGV/SIGBUS
     * handlers around each test and restore what they saw before it. Whatever
     * is there now is chained to after our cleanup. */
    for (size_t i = 0; i < sizeof(g_signals) / sizeof(g_signals[0]); i++) {
        struct sigaction cur;
        sigaction(g_signals[i], NULL, &cur);
        if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == h_on_signal)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = h_on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(g_signals[i], &sa, &g_old[i]);
    }
}

int h__registry_add_env(const char *dir)
{
    for (int i = 0; i < H_MAX_ENVS; i++) {
        if (g_dirs[i][0] == '\0') {
            snprintf(g_dirs[i], sizeof(g_dirs[i]), "%s", dir);
            return i;
        }
    }
    return -ENOSPC;
}

void h__registry_del_env(int slot)
{
    if (slot >= 0 && slot < H_MAX_ENVS)
        g_dirs[slot][0] = '\0';
}

void h__registry_add_pid(pid_t pid)
{
    for (int i = 0; i < H_MAX_PIDS; i++) {
        if (g_pids[i] == 0) {
            g_pids[i] = pid;
            return;
        }
    }
    /* More than H_MAX_PIDS live children: PR_SET_PDEATHSIG still covers them. */
}

void h__registry_del_pid(pid_t pid)
{
    for (int i = 0; i < H_MAX_PIDS; i++) {
        if (g_pids[i] == pid)
            g_pids[i] = 0;
    }
}

static void h_sanitize(char *dst, size_t len, const char *src)
{
    size_t n = 0;
    for (; src != NULL && *src != '\0' && n + 1 < len; src++) {
        char c = *src;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.';
        dst[n++] = ok ? c : '_';
    }
    if (n == 0)
        dst[n++] = 't';
    dst[n] = '\0';
}

int h_env_create(h_env **out, const char *test_name)
{
    *out = NULL;
    h_install();
    h_env *env = calloc(1, sizeof(*env));
    if (env == NULL)
        return -ENOMEM;
    h_sanitize(env->name, sizeof(env->name), test_name);
    const char *base = getenv("RINGCACHE_TEST_TMP");
    if (base == NULL || base[0] == '\0')
        base = "/tmp";
    if (mkdir(base, 0755) != 0 && errno != EEXIST) {
        int err = errno;
        h__err("cannot create temp base %s: %s (set RINGCACHE_TEST_TMP to a writable folder)", base,
               strerror(err));
        free(env);
        return -err;
    }
    char tmpl[PATH_MAX];
    if (snprintf(tmpl, sizeof(tmpl), "%s/%s.XXXXXX", base, env->name) >= (int)sizeof(tmpl)) {
        free(env);
        return -ENAMETOOLONG;
    }
    if (mkdtemp(tmpl) == NULL) {
        int err = errno;
        h__err(
            "cannot create a temp folder under %s: %s (set RINGCACHE_TEST_TMP to a writable folder)",
            base, strerror(err));
        free(env);
        return -err;
    }
    if (realpath(tmpl, env->dir) == NULL)
        snprintf(env->dir, sizeof(env->dir), "%s", tmpl);
    env->slot = h__registry_add_env(env->dir);
    if (env->slot < 0) {
        h__err("more than %d live test environments (destroy them with h_env_destroy)", H_MAX_ENVS);
        rmdir(env->dir);
        free(env);
        return -ENOSPC;
    }
    *out = env;
    return 0;
}

static int h_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void h_env_destroy(h_env **envp)
{
    if (envp == NULL || *envp == NULL)
        return;
    h_env *env = *envp;
    for (h_proc *p = env->procs; p != NULL; p = p->next) {
        if (!p->reaped)
            h_proc_stop(p, 5000);
        /* Helpers the process left behind in its group. */
        kill(-p->pid, SIGKILL);
    }
    h__free_services(env);
    while (env->procs != NULL) {
        h_proc *p = env->procs;
        env->procs = p->next;
        free(p);
    }
    if (!g_keep)
        nftw(env->dir, h_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    else
        fprintf(stderr, "harness: kept %s (RINGCACHE_TEST_KEEP=1)\n", env->dir);
    h__registry_del_env(env->slot);
    free(env);
    *envp = NULL;
}

const char *h_env_dir(const h_env *env)
{
    return env->dir;
}

int h_env_path(const h_env *env, char *buf, size_t len, const char *name)
{
    if ((size_t)snprintf(buf, len, "%s/%s", env->dir, name) >= len)
        return -ENAMETOOLONG;
    return 0;
}

int h_build_path(char *buf, size_t len, const char *rel)
{
    const char *dir = getenv("RINGCACHE_BUILD_DIR");
    if (dir == NULL || dir[0] == '\0') {
        h__err("RINGCACHE_BUILD_DIR is not set, cannot find %s (run the test through ctest, "
               "or export RINGCACHE_BUILD_DIR=<build folder>)",
               rel);
        return -ENOENT;
    }
    if ((size_t)snprintf(buf, len, "%s/%s", dir, rel) >= len)
        return -ENAMETOOLONG;
    if (access(buf, F_OK) != 0) {
        h__err("%s does not exist (build it: cmake --build %s)", buf, dir);
        return -ENOENT;
    }
    return 0;
}

int h_source_path(char *buf, size_t len, const char *rel)
{
    const char *dir = getenv("RINGCACHE_SOURCE_DIR");
    if (dir == NULL || dir[0] == '\0')
        dir = RINGCACHE_HARNESS_SOURCE_DIR;
    if ((size_t)snprintf(buf, len, "%s/%s", dir, rel) >= len)
        return -ENAMETOOLONG;
    if (access(buf, F_OK) != 0) {
        h__err("%s does not exist (set RINGCACHE_SOURCE_DIR to the source folder)", buf);
        return -ENOENT;
    }
    return 0;
}

_Noreturn void h_skip(const char *why)
{
    fprintf(stderr, "SKIP: %s\n", why != NULL && why[0] != '\0' ? why : "(no reason given)");
    fflush(NULL);
    exit(H_EXIT_SKIP);
}

int h_rounds(int full, int sanitized)
{
    const char *san = getenv("RINGCACHE_TEST_SANITIZE");
    const char *all = getenv("RINGCACHE_TEST_FULL");
    if (san == NULL || san[0] == '\0' || (all != NULL && strcmp(all, "1") == 0))
        return full;
    return sanitized < 1 ? 1 : sanitized;
}

int h_tcp_connect(int port, int timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        rc = poll(&pfd, 1, timeout_ms);
        if (rc == 0) {
            close(fd);
            return -ETIMEDOUT;
        }
        int err = 0;
        socklen_t elen = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
        if (err != 0) {
            close(fd);
            return -err;
        }
    } else if (rc != 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}
