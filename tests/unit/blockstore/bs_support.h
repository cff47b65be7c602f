/* SPDX-License-Identifier: Apache-2.0
 *
 * Support for the block store tests and benchmark: the I/O mode from the
 * command line (--io=threads|uring), stores in temp folders, blocking wrappers
 * that run the worker's loop until a read or write completes (and record any
 * callback that ran inside its submitting call), block identities, and block
 * contents derived from the identity alone, so any process can check any
 * block it finds without a record of what was written.
 */
#ifndef RINGCACHE_BS_SUPPORT_H
#define RINGCACHE_BS_SUPPORT_H

#include "blockstore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

/* Parses and removes --io=MODE from argv; exits 77 (skip, says why) if
 * io_uring is asked for and cannot be set up here. */
bs_io_mode bst_io_mode(int *argc, char **argv);
extern bs_io_mode bst_mode;

/* A fresh folder under $RINGCACHE_TEST_TMP or /tmp, removed by bst_rmdir. */
void bst_mkdir(char *out, size_t len, const char *name);
void bst_rmdir(const char *dir);

/* Default small config: 64 KiB blocks, 256 KiB regions, nregions regions. */
bs_config bst_config(const char *dir, unsigned nregions);

/* Identity with its strings kept in the struct. */
typedef struct bst_id {
    char key[64];
    char version[32];
    bkey_id id;
} bst_id;
void bst_id_init(bst_id *b, const char *bucket, unsigned object, const char *version,
                 uint64_t object_size, uint64_t index);

/* Fills buf with the block's bytes (len bytes from offset off in the block). */
void bst_fill(const bkey_id *id, uint64_t off, uint8_t *buf, size_t len);
/* True when buf holds those bytes. */
bool bst_check(const bkey_id *id, uint64_t off, const uint8_t *buf, size_t len);

/* Blocking wrappers: submit, then run base until the callback ran. Return the
 * callback's rc (or the submit error). bst_read copies a hit into out. */
int bst_write(bs_worker *w, struct event_base *base, const bkey_id *id, const void *data,
              size_t len);
int bst_write_block(bs_worker *w, struct event_base *base, const bkey_id *id, uint32_t bsize);
int bst_read(bs_worker *w, struct event_base *base, const bkey_id *id, uint64_t off, uint64_t len,
             uint8_t *out);

/* Callbacks that ran inside their submitting call (must stay 0). */
extern unsigned bst_sync_callbacks;

/* Log sink for tests: errors and warnings to stderr. */
void bst_log(void *ctx, int level, const char *msg);

#endif
