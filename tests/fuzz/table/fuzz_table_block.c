/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_table_block.c: libFuzzer target for one block of a part: the codec
 * (none, LZ4, ZSTD) and the block decoder (null map, fixed width, plain
 * bytes, dictionary), plain and into a dictionary column. The input is a
 * 6-byte header (type, codec, encoding, nullable, rows as u16) then the
 * stored bytes; the raw size is taken from the codec's frame or guessed.
 * Seeds: tests/fuzz/corpus/table_block.
 */
#include "tp_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    cb_typeinfo info = {.type = (cb_type)(1 + data[0] % CB_BINARY)};
    if (info.type == CB_TIME || info.type == CB_TIMESTAMP)
        info.unit = CB_UNIT_US;
    if (info.type == CB_DECIMAL) {
        info.precision = data[0] & 0x80 ? 30 : 9;
        info.scale = 2;
    }
    uint8_t codec = data[1] % 3, enc = data[2] % 3;
    bool nullable = data[3] & 1;
    uint32_t rows = 1 + (uint32_t)tp__get16(data + 4) % 4096;
    uint32_t raw_len = 1 + (uint32_t)tp__get16(data + 6) * 8;
    const uint8_t *body = data + 8;
    size_t blen = size - 8;
    uint8_t *raw = malloc(raw_len);
    if (!raw)
        return 0;
    const uint8_t *use = NULL;
    size_t use_len = 0;
    if (codec == TP_CODEC_NONE) {
        use = body;
        use_len = blen;
    } else if (tp__decompress(codec, body, blen, raw, raw_len) == 0) {
        use = raw;
        use_len = raw_len;
    }
    if (use) {
        tp__colbuf out;
        tp__colbuf_init(&out, &info);
        char err[256];
        uint32_t lo = rows > 3 ? rows / 3 : 0;
        tp__block_decode(use, use_len, enc, rows, nullable, lo, rows, &out, err, sizeof(err));
        tp__colbuf_deinit(&out);
        if (!cb_type_width(&info)) {
            cb_column *c = NULL;
            if (tp__block_decode_dict(use, use_len, rows, nullable, &info, "f", lo, rows, &c, err,
                                      sizeof(err)) == 0)
                cb_column_destroy(&c);
        }
    }
    free(raw);
    return 0;
}
