/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_ndjson.c: arbitrary bytes as JSONEachRow (NDJSON) lines: infer the
 * schema, then parse every column in small batches. Errors must be -EBADMSG with a sentence naming
 * the file, never a crash, and every tracked byte must be given back.
 */
#include "text_fuzz.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    text_fuzz_one(TX_JSON_EACH_ROW, "fuzz.ndjson", (const char *)data, size);
    return 0;
}
