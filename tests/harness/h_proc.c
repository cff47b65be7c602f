/* SPDX-License-Identifier: Apache-2.0
 *
 * Child processes of a test: fork/exec into their own process group with
 * PR_SET_PDEATHSIG, output to a log file in the test's folder, a ready-wait on a
 * port file plus a TCP connect (with a deadline, reporting an early exit and the
 * log's last lines), and a stop that SIGTERMs the group, waits, then SIGKILLs.
 * Thread-safety: none (see harness.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "h_int.h"

extern char **environ;

static int h_encode_status(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 255;
}

/* Reaps proc if it has exited; 1 if reaped (now or before), 0 if still running. */
static int h_try_reap(h_proc *proc, int block)
{
    if (proc->reaped)
        return 1;
    int wstatus;
    pid_t r;
    do {
        r = waitpid(proc->pid, &wstatus, block ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0)
        return 0;
    if (r < 0) {
        /* Someone else reaped it (ECHILD): it is gone, status unknown. */
        proc->status = 255;
    } else {
        proc->status = h_encode_status(wstatus);
    }
    proc->reaped = 1;
    h__registry_del_pid(proc->pid);
    return 1;
}

static void h_describe_status(char *buf, size_t len, int status)
{
    if (status > 128 && status < 128 + 65)
        snprintf(buf, len, "was killed by signal %d (%s)", status - 128, strsignal(status - 128));
    else
        snprintf(buf, len, "exited with code %d", status);
}

void h_proc_print_log_tail(const h_proc *proc, int max_lines)
{
    int fd = open(proc->log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "harness: no log at %s: %s\n", proc->log_path, strerror(errno));
        return;
    }
    static char buf[16384];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, from);
    close(fd);
    if (n <= 0) {
        fprintf(stderr, "harness: ---- %s is empty ----\n", proc->log_path);
        return;
    }
    buf[n] = '\0';
    /* Walk back max_lines newlines (ignoring a final one). */
    ssize_t i = n - 1;
    if (i >= 0 && buf[i] == '\n')
        i--;
    int lines = 0;
    for (; i >= 0; i--) {
        if (buf[i] == '\n' && ++lines == max_lines)
            break;
    }
    fprintf(stderr, "harness: ---- last lines of %s ----\n%s%s", proc->log_path, buf + i + 1,
            buf[n - 1] == '\n' ? "" : "\n");
    fprintf(stderr, "harness: ---- end of %s ----\n", proc->log_path);
}

int h__read_port_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -ENOENT;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -EAGAIN;
    buf[n] = '\0';
    /* Accept "PORT\n" and forms like memcached's "TCP INET: PORT". */
    char *p = buf;
    while (*p != '\0' && (*p < '0' || *p > '9'))
        p++;
    long port = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
        port = port * 10 + (*p - '0');
    if (digits == 0 || port < 1 || port > 65535)
        return -EAGAIN;
    return (int)port;
}

/* Builds environ + extra (extra overrides same-named variables). Caller frees the
 * array only (strings are borrowed). */
static char **h_build_envp(char *const extra[])
{
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env] != NULL)
        n_env++;
    while (extra != NULL && extra[n_extra] != NULL)
        n_extra++;
    char **envp = calloc(n_env + n_extra + 1, sizeof(char *));
    if (envp == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t klen = eq != NULL ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        int overridden = 0;
        for (size_t j = 0; j < n_extra; j++) {
            if (strncmp(extra[j], environ[i], klen) == 0 && extra[j][klen] == '=')
                overridden = 1;
        }
        if (!overridden)
            envp[k++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        envp[k++] = extra[j];
    envp[k] = NULL;
    return envp;
}

static int h_resolve(const h_env *env, char *buf, size_t len, const char *path)
{
    int n = path[0] == '/' ? snprintf(buf, len, "%s", path)
                           : snprintf(buf, len, "%s/%s", env->dir, path);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void h_proc_abort_start(h_proc *proc)
{
    kill(-proc->pid, SIGKILL);
    kill(proc->pid, SIGKILL);
    h_try_reap(proc, 1);
}

int h_proc_start(h_env *env, h_proc **out, const char *name, char *const argv[],
                 char *const envp_extra[], const char *port_file, int ready_timeout_ms)
{
    *out = NULL;
    if (ready_timeout_ms <= 0)
        ready_timeout_ms = H_READY_TIMEOUT_MS;
    h_proc *proc = calloc(1, sizeof(*proc));
    if (proc == NULL)
        return -ENOMEM;
    proc->env = env;
    snprintf(proc->name, sizeof(proc->name), "%s", name);
    if ((size_t)snprintf(proc->log_path, sizeof(proc->log_path), "%s/%s.log", env->dir, name) >=
        sizeof(proc->log_path)) {
        free(proc);
        return -ENAMETOOLONG;
    }

    char port_path[PATH_MAX] = "";
    if (port_file != NULL) {
        if (h_resolve(env, port_path, sizeof(port_path), port_file) < 0) {
            free(proc);
            return -ENAMETOOLONG;
        }
        unlink(port_path);
    }
    int log_fd = open(proc->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        int err = errno;
        h__err("cannot open log %s for %s: %s", proc->log_path, name, strerror(err));
        free(proc);
        return -err;
    }
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    char **envp = h_build_envp(envp_extra);
    if (envp == NULL || null_fd < 0) {
        close(log_fd);
        if (null_fd >= 0)
            close(null_fd);
        free(envp);
        free(proc);
        return -ENOMEM;
    }
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        h__err("cannot fork %s: %s", name, strerror(err));
        close(log_fd);
        close(null_fd);
        free(envp);
        free(proc);
        return -err;
    }
    if (pid == 0) {
        /* Child: only async-signal-safe calls until exec. */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        /* Undo the harness's signal set-up for the new program. */
        for (int s = 1; s < 32; s++) {
            if (s != SIGKILL && s != SIGSTOP)
                signal(s, SIG_DFL);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (chdir(env->dir) != 0)
            _exit(126);
        dup2(null_fd, STDIN_FILENO);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        execvpe(argv[0], argv, envp);
        static const char msg[] = "harness: exec failed (is the program built and on PATH?)\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        (void)w;
        _exit(127);
    }
    setpgid(pid, pid); /* also in the parent, so kill(-pid) works at once */
    close(log_fd);
    close(null_fd);
    free(envp);
    proc->pid = pid;
    h__registry_add_pid(pid);
    proc->next = env->procs;
    env->procs = proc;

    if (port_file == NULL) {
        *out = proc;
        return 0;
    }
    int64_t deadline = h_now_ms() + ready_timeout_ms;
    int port = -ENOENT;
    for (;;) {
        if (h_try_reap(proc, 0)) {
            char st[96];
            h_describe_status(st, sizeof(st), proc->status);
            h__err("%s (pid %d, %s) %s before it was ready (no port in %s); its log follows", name,
                   (int)pid, argv[0], st, port_path);
            h_proc_print_log_tail(proc, 30);
            return -ECHILD;
        }
        port = h__read_port_file(port_path);
        if (port > 0) {
            int fd = h_tcp_connect(port, 200);
            if (fd >= 0) {
                close(fd);
                break;
            }
        }
        if (h_now_ms() >= deadline) {
            if (port > 0)
                h__err("%s (pid %d) wrote port %d to %s but 127.0.0.1:%d refused connections "
                       "for %d ms; its log follows",
                       name, (int)pid, port, port_path, port, ready_timeout_ms);
            else
                h__err("%s (pid %d) wrote no port to %s within %d ms (does it take "
                       "--port-file?); its log follows",
                       name, (int)pid, port_path, ready_timeout_ms);
            h_proc_abort_start(proc);
            h_proc_print_log_tail(proc, 30);
            return -ETIMEDOUT;
        }
        usleep(10 * 1000);
    }
    proc->port = port;
    *out = proc;
    return 0;
}

int h_proc_port(const h_proc *proc)
{
    return proc->port;
}

pid_t h_proc_pid(const h_proc *proc)
{
    return proc->pid;
}

const char *h_proc_log_path(const h_proc *proc)
{
    return proc->log_path;
}

int h_proc_wait(h_proc *proc, int timeout_ms)
{
    if (timeout_ms < 0) {
        h_try_reap(proc, 1);
        return proc->status;
    }
    int64_t deadline = h_now_ms() + timeout_ms;
    while (!h_try_reap(proc, 0)) {
        if (h_now_ms() >= deadline)
            return -ETIMEDOUT;
        usleep(2 * 1000);
    }
    return proc->status;
}

int h_proc_stop(h_proc *proc, int timeout_ms)
{
    if (proc->reaped)
        return proc->status;
    if (timeout_ms <= 0)
        timeout_ms = 5000;
    kill(-proc->pid, SIGTERM);
    int st = h_proc_wait(proc, timeout_ms);
    if (st == -ETIMEDOUT) {
        h__err("%s (pid %d) did not exit within %d ms of SIGTERM; sending SIGKILL", proc->name,
               (int)proc->pid, timeout_ms);
        kill(-proc->pid, SIGKILL);
        kill(proc->pid, SIGKILL);
        st = h_proc_wait(proc, -1);
    }
    /* Helpers it spawned into its group (node) go with it. */
    kill(-proc->pid, SIGKILL);
    if (st != 0) {
        char desc[96];
        h_describe_status(desc, sizeof(desc), st);
        h__err("%s (pid %d) %s on stop (expected a clean exit 0 after SIGTERM)", proc->name,
               (int)proc->pid, desc);
        h_proc_print_log_tail(proc, 40);
    }
    return st;
}

int h_proc_kill(h_proc *proc, int sig)
{
    if (proc->reaped)
        return -ESRCH;
    if (kill(-proc->pid, sig) != 0)
        return -errno;
    return 0;
}

/* ---- running a program to completion ---------------------------------------- */

void h_read_text(const char *path, char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

int h_run(h_env *env, h_run_result *r, const char *const argv[], const char *const env_set[])
{
    static unsigned seq;
    char name[64], errp[1024];
    unsigned id = ++seq;
    snprintf(name, sizeof(name), "run-%u.out", id);
    h_env_path(env, r->out_path, sizeof(r->out_path), name);
    snprintf(name, sizeof(name), "run-%u.err", id);
    h_env_path(env, errp, sizeof(errp), name);
    r->status = -1;
    r->out[0] = r->err[0] = '\0';
    int o = open(r->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o < 0 || e < 0) {
        int rc = -errno;
        if (o >= 0)
            close(o);
        h__err("cannot create %s: %s", o < 0 ? r->out_path : errp, strerror(-rc));
        return rc;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int rc = -errno;
        close(o);
        close(e);
        h__err("fork for %s: %s", argv[0], strerror(-rc));
        return rc;
    }
    if (pid == 0) {
        dup2(o, 1);
        dup2(e, 2);
        setenv("HOME", h_env_dir(env), 1);
        for (size_t i = 0; env_set != NULL && env_set[i] != NULL; i++) {
            const char *eq = strchr(env_set[i], '=');
            if (eq == NULL) {
                unsetenv(env_set[i]);
            } else {
                char var[256];
                snprintf(var, sizeof(var), "%.*s", (int)(eq - env_set[i]), env_set[i]);
                setenv(var, eq + 1, 1);
            }
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(o);
    close(e);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    h_read_text(r->out_path, r->out, sizeof(r->out));
    h_read_text(errp, r->err, sizeof(r->err));
    return 0;
}
