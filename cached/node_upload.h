/* SPDX-License-Identifier: Apache-2.0
 *
 * node_upload.h: one object streamed into S3, as a write-through PUT needs
 * it: a single PUT when the object fits one part (--part-size), else a
 * multipart upload with parts sent as they fill, at most four in flight (the
 * writer is asked to pause beyond), the parts that fill before S3 has given
 * the upload's id queued until it does. A failed or abandoned multipart
 * upload is aborted at S3. Knows nothing of requests or blocks: the request
 * lifecycle (node_req.c) feeds it and places the blocks once S3 has the
 * object.
 *
 * Thread-safety: an upload belongs to the thread of the S3 client it writes
 * with (a worker's); every call and callback runs there.
 */
#ifndef RINGCACHE_NODE_UPLOAD_H
#define RINGCACHE_NODE_UPLOAD_H

#include "s3.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct node_upload node_upload;

/* S3 has the object (err->code 0, etag its ETag) or the upload failed
 * (err->code -errno with S3's sentence, or -ENOMEM, -EIO). Called once. */
typedef void (*node_upload_done_fn)(void *arg, const s3_error *err, const char *etag);
/* Stop (true) or resume (false) feeding data: S3 has parts in flight. */
typedef void (*node_upload_pause_fn)(void *arg, bool pause);

/* Starts the upload of size bytes to bucket/key (strings copied) through s3
 * (borrowed; outlives the upload). cond (copied; NULL: none) is the write's
 * condition, sent with the PUT or the CompleteMultipartUpload (s3.h: a
 * failed one is -EEXIST or -ESTALE, S3's 412). pause may be NULL. Returns 0;
 * -EFBIG when size needs more than 10,000 parts of part_size; -EINVAL for an
 * If-Match ETag too long; -ENOMEM; -EIO when S3 cannot be asked; each with
 * one sentence in err. Neither callback runs on error. */
int node_upload_start(node_upload **out, s3_client *s3, const char *bucket, const char *key,
                      uint64_t size, uint64_t part_size, const s3_write_cond *cond,
                      node_upload_pause_fn pause, node_upload_done_fn done, void *arg, char *err,
                      size_t errlen);

/* The next len bytes of the object, last on its final piece (the caller has
 * checked they add up to size). A failure is told through done, which may
 * run inside this call. After done, the upload frees itself once S3's calls
 * have ended: the caller forgets it. */
void node_upload_write(node_upload *u, const uint8_t *data, size_t len, bool last);

/* The caller gives the upload up before done: no callback runs from now, a
 * multipart upload is aborted at S3, and the upload frees itself once S3's
 * calls have ended. */
void node_upload_abort(node_upload *u);

#endif /* RINGCACHE_NODE_UPLOAD_H */
