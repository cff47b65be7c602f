/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_csv.c: arbitrary bytes as CSV, CSVWithNames, TSV and TSVWithNames
 * (the first byte picks the format): infer the schema, then parse every
 * column in small batches. Errors must be -EBADMSG with a sentence naming
 * the file, never a crash, and every tracked byte must be given back.
 */
#include "text_fuzz.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const tx_format fmts[] = {TX_CSV, TX_CSV_NAMES, TX_TSV, TX_TSV_NAMES};
    text_fuzz_one(fmts[data[0] & 3], "fuzz.csv", (const char *)data + 1, size - 1);
    return 0;
}
