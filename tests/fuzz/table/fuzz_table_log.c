/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_table_log.c: libFuzzer target for the commit log's objects: the JSON
 * parser, a version (then applied to an empty table when it is version 0,
 * and written back and parsed again), a checkpoint (written back and parsed
 * again). Seeds: tests/fuzz/corpus/table_log (versions and checkpoints).
 */
#include "tb_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    char err[256];
    tj_val j;
    if (tj_parse(p, size, &j, err, sizeof(err)) == 0)
        tj_free(&j);
    tb__version v;
    if (tb__version_parse(p, size, &v, err, sizeof(err)) == 0) {
        tb_snapshot s = {0};
        s.schema.version_col = -1;
        tb__apply(&s, &v, 10, 3600, err, sizeof(err));
        tp__bytes b = {0};
        if (tb__version_write(&v, &b) == 0) {
            tb__version w;
            if (tb__version_parse((const char *)b.p, b.len, &w, err, sizeof(err)) != 0)
                abort(); /* what we write we must read */
            tb__version_free(&w);
        }
        free(b.p);
        tb__snapshot_deinit(&s);
        tb__version_free(&v);
    }
    tb_snapshot c;
    if (tb__checkpoint_parse(p, size, &c, err, sizeof(err)) == 0) {
        tp__bytes b = {0};
        if (tb__checkpoint_write(&c, &b) == 0) {
            tb_snapshot d;
            if (tb__checkpoint_parse((const char *)b.p, b.len, &d, err, sizeof(err)) != 0)
                abort();
            tb__snapshot_deinit(&d);
        }
        free(b.p);
        tb__snapshot_deinit(&c);
    }
    return 0;
}
