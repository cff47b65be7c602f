/* SPDX-License-Identifier: Apache-2.0
 *
 * readfile.h: the one way a module reads a whole small file (a config file,
 * a tenants or users file, a member list, a secret), with the sentences that
 * name the file and the fix when it cannot.
 *
 * Thread-safe: no state; the buffer it returns is the caller's.
 */
#ifndef RINGCACHE_READFILE_H
#define RINGCACHE_READFILE_H

#include <stddef.h>

/* Reads the file at path, at most max bytes (max < SIZE_MAX), into one
 * malloc'd buffer, NUL-terminated, that *out receives (the caller frees it);
 * *len is the bytes read, without the NUL. The bytes are in no other buffer,
 * so a caller holding secrets wipes that one before freeing it.
 *
 * Returns 0, or a negative errno with a sentence in err (err may be NULL):
 * the errno of opening or reading, -EFBIG over max bytes, -ENOMEM. `what`
 * names the file in the sentence ("config file") and `fix` says what to do
 * about a path that cannot be opened or read ("fix the path given to
 * --config"). *out and *len are untouched on failure. */
int readfile_all(const char *path, size_t max, const char *what, const char *fix, char **out,
                 size_t *len, char *err, size_t errlen);

#endif
