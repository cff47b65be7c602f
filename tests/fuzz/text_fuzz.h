/* SPDX-License-Identifier: Apache-2.0
 *
 * text_fuzz.h: the body the CSV/TSV and NDJSON fuzz targets share: infer the
 * schema of text (named `name` in errors), then parse every column in small
 * batches. Errors must be -EBADMSG with a sentence naming the file (or
 * -ENOMEM), never a crash, and every tracked byte must be given back; any
 * other outcome aborts.
 */
#ifndef RINGCACHE_TEXT_FUZZ_H
#define RINGCACHE_TEXT_FUZZ_H

#include "eng_text.h"

#include <stddef.h>

void text_fuzz_one(tx_format f, const char *name, const char *text, size_t len);

#endif
