/* SPDX-License-Identifier: Apache-2.0
 *
 * Self-tests of the harness's process handling (no S3 server needed): a process
 * that never writes its port file fails within the deadline and says so; one
 * that exits early is reported with its log; stop returns the real exit status;
 * and after h_env_destroy, or after a test that exits or aborts without
 * destroying, no child (nor grandchild in its group) and no folder remain.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

/* Exists and is not a zombie. */
static int alive_now(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    return !(rp != NULL && rp[1] == ' ' && rp[2] == 'Z');
}

/* Still alive after up to 3 s? (SIGKILL is delivered asynchronously.) */
static int pid_alive(pid_t pid)
{
    for (int i = 0; i < 300; i++) {
        if (!alive_now(pid))
            return 0;
        usleep(10 * 1000);
    }
    return 1;
}

static int dir_exists(const char *dir)
{
    struct stat st;
    return stat(dir, &st) == 0;
}

/* Reads a pid written by a child into a file in the env folder (waits up to 5 s). */
static pid_t read_pid(const h_env *env, const char *name)
{
    char path[4096];
    assert_int_equal(h_env_path(env, path, sizeof(path), name), 0);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "r");
        if (f != NULL) {
            int pid = 0;
            int ok = fscanf(f, "%d", &pid);
            fclose(f);
            if (ok == 1 && pid > 0)
                return (pid_t)pid;
        }
        usleep(10 * 1000);
    }
    fail_msg("no pid in %s", path);
    return -1;
}

/* Runs fn with stderr redirected to a file; returns what was written (malloc'd). */
static char *capture_stderr(int (*fn)(void *), void *arg, int *rc)
{
    char tmpl[] = "/tmp/h_stderr.XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    unlink(tmpl);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    *rc = fn(arg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    char *out = calloc(1, (size_t)size + 1);
    assert_non_null(out);
    assert_int_equal(pread(fd, out, (size_t)size, 0), size);
    close(fd);
    fputs(out, stderr); /* still show it in the test log */
    return out;
}

static void test_no_port_file_times_out(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_no_port"), 0);
    char *const argv[] = {"sh", "-c", "echo $$ > pid; echo waiting-forever; exec sleep 30", NULL};
    h_proc *p = (h_proc *)1;
    int64_t t0 = h_now_ms();
    int rc = h_proc_start(env, &p, "silent", argv, NULL, "silent.port", 500);
    int64_t elapsed = h_now_ms() - t0;
    assert_int_equal(rc, -ETIMEDOUT);
    assert_null(p);
    assert_true(elapsed >= 500);
    assert_non_null(strstr(h_last_error(), "wrote no port"));
    assert_non_null(strstr(h_last_error(), "silent.port"));
    /* The failed process was killed, not left behind. */
    pid_t pid = read_pid(env, "pid");
    assert_false(pid_alive(pid));
    h_env_destroy(&env);
    assert_null(env);
}

static void test_port_without_listener_times_out(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_no_listener"), 0);
    /* Port 1 on loopback: nothing listens there. */
    char *const argv[] = {"sh", "-c", "echo 1 > nolisten.port; exec sleep 30", NULL};
    h_proc *p;
    assert_int_equal(h_proc_start(env, &p, "nolisten", argv, NULL, "nolisten.port", 400),
                     -ETIMEDOUT);
    assert_non_null(strstr(h_last_error(), "refused connections"));
    h_env_destroy(&env);
}

typedef struct early_ctx {
    h_env *env;
} early_ctx;

static int start_early_exit(void *arg)
{
    early_ctx *c = arg;
    char *const argv[] = {"sh", "-c", "echo boom-marker-1234 >&2; exit 3", NULL};
    h_proc *p;
    return h_proc_start(c->env, &p, "early", argv, NULL, "early.port", 10000);
}

static void test_early_exit_is_reported(void **state)
{
    (void)state;
    early_ctx c;
    assert_int_equal(h_env_create(&c.env, "h_early"), 0);
    int rc;
    int64_t t0 = h_now_ms();
    char *err = capture_stderr(start_early_exit, &c, &rc);
    assert_int_equal(rc, -ECHILD);
    /* Reported at once, not after the 10 s deadline. */
    assert_true(h_now_ms() - t0 < 9000);
    assert_non_null(strstr(err, "exited with code 3 before it was ready"));
    assert_non_null(strstr(err, "boom-marker-1234")); /* the log's last lines */
    free(err);
    h_env_destroy(&c.env);
}

static void test_missing_program_is_reported(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_noprog"), 0);
    char *const argv[] = {"/nonexistent/ringcache-no-such-binary", NULL};
    h_proc *p;
    assert_int_equal(h_proc_start(env, &p, "noprog", argv, NULL, "x.port", 5000), -ECHILD);
    assert_non_null(strstr(h_last_error(), "exited with code 127"));
    h_env_destroy(&env);
}

static void test_ready_and_stop_status(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_ready"), 0);
    char py[4096];
    /* A real listener: python3 binds port 0 and writes the port file. */
    snprintf(
        py, sizeof(py),
        "import socket,signal,sys,os\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(int(os.environ['H_EXIT'])))\n"
        "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(8)\n"
        "open('ok.port.tmp','w').write('%%d\\n' %% s.getsockname()[1]); os.rename('ok.port.tmp','ok.port')\n"
        "while True: c,_=s.accept(); c.close()\n");
    char *const argv[] = {"python3", "-c", py, NULL};
    char *const env0[] = {"H_EXIT=0", NULL};
    char *const env7[] = {"H_EXIT=7", NULL};
    h_proc *a, *b;
    assert_int_equal(h_proc_start(env, &a, "clean", argv, env0, "ok.port", 10000), 0);
    assert_true(h_proc_port(a) > 0);
    int fd = h_tcp_connect(h_proc_port(a), 1000);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(h_proc_stop(a, 5000), 0);
    assert_int_equal(h_proc_stop(a, 5000), 0); /* idempotent */
    assert_int_equal(h_proc_kill(a, SIGTERM), -ESRCH);

    assert_int_equal(h_proc_start(env, &b, "dirty", argv, env7, "ok.port", 10000), 0);
    assert_int_equal(h_proc_stop(b, 5000), 7);

    char *const sleeper[] = {"sleep", "30", NULL};
    h_proc *c;
    assert_int_equal(h_proc_start(env, &c, "sleeper", sleeper, NULL, NULL, 0), 0);
    assert_int_equal(h_proc_wait(c, 50), -ETIMEDOUT);
    assert_int_equal(h_proc_stop(c, 5000), 128 + SIGTERM);
    h_env_destroy(&env);
}

static void test_destroy_removes_everything(void **state)
{
    (void)state;
    h_env *env;
    assert_int_equal(h_env_create(&env, "h_destroy"), 0);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", h_env_dir(env));
    assert_true(dir_exists(dir));
    /* Ignores SIGTERM (forces the SIGKILL path) and leaves a grandchild in its
     * process group, as node does. */
    char *const stubborn[] = {
        "sh", "-c", "trap '' TERM; echo $$ > pid1; sleep 1000 & echo $! > pid2; wait", NULL};
    char *const plain[] = {"sleep", "1000", NULL};
    h_proc *a, *b;
    assert_int_equal(h_proc_start(env, &a, "stubborn", stubborn, NULL, NULL, 0), 0);
    assert_int_equal(h_proc_start(env, &b, "plain", plain, NULL, NULL, 0), 0);
    pid_t p1 = read_pid(env, "pid1"), p2 = read_pid(env, "pid2"), p3 = h_proc_pid(b);
    assert_int_equal(p1, h_proc_pid(a));
    assert_true(alive_now(p1) && alive_now(p2) && alive_now(p3));
    h_env_destroy(&env);
    assert_null(env);
    assert_false(pid_alive(p1));
    assert_false(pid_alive(p2));
    assert_false(pid_alive(p3));
    assert_false(dir_exists(dir));
}

/* A sub-process makes an env with a child and a grandchild, reports pids and
 * folder through a pipe, then ends the way `how` says without destroying. */
static void run_abandoned(const char *how, int expect_signal, int expect_code)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t sub = fork();
    assert_true(sub >= 0);
    if (sub == 0) {
        close(fds[0]);
        /* Not cmocka's handler (it would longjmp back into a copy of the runner). */
        signal(SIGSEGV, SIG_DFL);
        h_env *env;
        if (h_env_create(&env, "h_abandoned") != 0)
            _exit(90);
        char *const argv[] = {"sh", "-c", "echo $$ > pid1; sleep 1000 & echo $! > pid2; wait",
                              NULL};
        h_proc *p;
        if (h_proc_start(env, &p, "orphan", argv, NULL, NULL, 0) != 0)
            _exit(91);
        pid_t p2 = read_pid(env, "pid2");
        char msg[4200];
        int n =
            snprintf(msg, sizeof(msg), "%d %d %s\n", (int)h_proc_pid(p), (int)p2, h_env_dir(env));
        if (write(fds[1], msg, (size_t)n) != n)
            _exit(92);
        close(fds[1]);
        if (strcmp(how, "abort") == 0)
            abort();
        if (strcmp(how, "sigterm") == 0)
            raise(SIGTERM);
        if (strcmp(how, "segv") == 0)
            raise(SIGSEGV);
        exit(5); /* atexit path */
    }
    close(fds[1]);
    char buf[4300] = {0};
    size_t got = 0;
    ssize_t n;
    while ((n = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    int st;
    assert_int_equal(waitpid(sub, &st, 0), sub);
    if (expect_signal) {
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), expect_signal);
    } else {
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), expect_code);
    }
    int p1 = 0, p2 = 0;
    char dir[4200] = "";
    assert_int_equal(sscanf(buf, "%d %d %4199s", &p1, &p2, dir), 3);
    assert_false(pid_alive(p1));
    assert_false(pid_alive(p2));
    assert_false(dir_exists(dir));
}

static void test_exit_without_destroy_cleans_up(void **state)
{
    (void)state;
    run_abandoned("exit", 0, 5);
}

static void test_abort_cleans_up(void **state)
{
    (void)state;
    run_abandoned("abort", SIGABRT, 0);
}

static void test_sigterm_cleans_up(void **state)
{
    (void)state;
    run_abandoned("sigterm", SIGTERM, 0);
}

static void test_segv_cleans_up(void **state)
{
    (void)state;
    run_abandoned("segv", SIGSEGV, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_port_file_times_out),
        cmocka_unit_test(test_port_without_listener_times_out),
        cmocka_unit_test(test_early_exit_is_reported),
        cmocka_unit_test(test_missing_program_is_reported),
        cmocka_unit_test(test_ready_and_stop_status),
        cmocka_unit_test(test_destroy_removes_everything),
        cmocka_unit_test(test_exit_without_destroy_cleans_up),
        cmocka_unit_test(test_abort_cleans_up),
        cmocka_unit_test(test_sigterm_cleans_up),
        cmocka_unit_test(test_segv_cleans_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
