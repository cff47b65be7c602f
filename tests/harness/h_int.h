/* SPDX-License-Identifier: Apache-2.0
 *
 * Internals shared by the harness's files: the structs behind the opaque handles,
 * the process-global registry the signal handlers read, and the error helper.
 * Thread-safety: none (see harness.h).
 */
#ifndef RINGCACHE_TESTS_HARNESS_INT_H
#define RINGCACHE_TESTS_HARNESS_INT_H

#include <limits.h>
#include <sys/types.h>

#include "harness.h"

struct h_proc {
    h_env *env;
    h_proc *next;
    char name[64];
    pid_t pid;  /* also the process-group id */
    int reaped; /* waitpid collected it; status is valid */
    int status; /* h_proc_stop's encoding: code, or 128 + signal */
    int port;
    char log_path[PATH_MAX];
};

struct h_env {
    char name[64];
    char dir[PATH_MAX];
    h_proc *procs; /* newest first */
    h_s3 *s3s;
    h_s3model *models;
    int slot; /* index in the registry */
};

/* Registry read by the atexit and signal handlers. */
int h__registry_add_env(const char *dir);
void h__registry_del_env(int slot);
void h__registry_add_pid(pid_t pid);
void h__registry_del_pid(pid_t pid);

/* Prints "harness: <msg>" to stderr and keeps it for h_last_error(). */
void h__err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads the first integer in a port file: the port (1..65535), or -ENOENT /
 * -EAGAIN (empty or not a port yet). */
int h__read_port_file(const char *path);

/* Stops and frees everything env owns that is not a process (s3 and model handles). */
void h__free_services(h_env *env);

#endif /* RINGCACHE_TESTS_HARNESS_INT_H */
