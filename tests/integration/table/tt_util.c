/* SPDX-License-Identifier: Apache-2.0
 *
 * tt_util.c: helpers of the table integration tests (see tt_util.h).
 */
#include "tt_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tp_column_def tt_cols[3] = {
    {.name = "id", .info = {.type = CB_UINT64}, .codec = TP_CODEC_LZ4},
    {.name = "ver", .info = {.type = CB_INT64}, .codec = TP_CODEC_LZ4},
    {.name = "s",
     .info = {.type = CB_STRING},
     .nullable = true,
     .codec = TP_CODEC_ZSTD,
     .level = 1},
};
static uint32_t tt_key[1] = {0};

tb_schema tt_schema(bool replacing)
{
    tb_schema s = {.n_cols = 3,
                   .cols = tt_cols,
                   .n_key = 1,
                   .key_cols = tt_key,
                   .engine = replacing ? "ReplacingMergeTree" : "MergeTree",
                   .version_col = replacing ? 1 : -1,
                   .index_granularity = 1024,
                   .schema_version = 1};
    return s;
}

void tt_opts(tb_table_opts *o, const char *endpoint, const char *root, bool writer)
{
    memset(o, 0, sizeof(*o));
    s3_config_init(&o->s3);
    snprintf(o->s3.endpoint, sizeof(o->s3.endpoint), "%s", endpoint);
    snprintf(o->s3.access_key, sizeof(o->s3.access_key), "S3RVER");
    snprintf(o->s3.secret_key, sizeof(o->s3.secret_key), "S3RVER");
    o->s3.path_style = true;
    o->s3.retry_base_ms = 5;
    o->s3.retry_cap_ms = 50;
    o->bucket = H_S3_DEFAULT_BUCKET;
    o->root = root;
    o->writer = writer;
}

int tt_write_part(const tb_table *t, const char *partition, uint64_t first, uint64_t step,
                  uint32_t n, int64_t ver_base, char name[TB_NAME_MAX], tb_part_add *add, char *err,
                  size_t errlen)
{
    tb_upload *u;
    int rc = tb_upload_create(&u, t, partition, 0, err, errlen);
    if (rc < 0)
        return rc;
    tb_schema sc = tt_schema(false);
    tp_writer_opts wo = {.part_name = tb_upload_name(u),
                         .cols = sc.cols,
                         .n_cols = 3,
                         .key_cols = sc.key_cols,
                         .n_key = 1,
                         .index_granularity = 1024,
                         .input_sorted = true,
                         .write = tb_upload_write,
                         .write_arg = u};
    tp_writer *w;
    if ((rc = tp_writer_create(&w, &wo, err, errlen)) < 0) {
        tb_upload_destroy(&u);
        return rc;
    }
    const uint32_t chunk = 10000;
    for (uint32_t at = 0; at < n && !rc; at += chunk) {
        uint32_t k = n - at < chunk ? n - at : chunk;
        cb_batch *b;
        if ((rc = cb_batch_create(&b, k, 3)) < 0)
            break;
        for (int c = 0; c < 3 && !rc; c++)
            rc = cb_column_create(&b->cols[c], &sc.cols[c].info, sc.cols[c].name, k);
        for (uint32_t i = 0; i < k && !rc; i++) {
            uint64_t id = first + (uint64_t)(at + i) * step;
            ((uint64_t *)b->cols[0]->values)[i] = id;
            ((int64_t *)b->cols[1]->values)[i] = ver_base + at + i;
            char s[48];
            /* a hash suffix keeps the column from compressing to nothing, so
             * a million rows need a multipart upload */
            int len = snprintf(s, sizeof(s), "row %llu %016llx", (unsigned long long)id,
                               (unsigned long long)(id * 0x9e3779b97f4a7c15ull ^ (id >> 7)));
            cb_column *sc2 = b->cols[2];
            if ((rc = cb_column_reserve_data(sc2, sc2->offsets[i] + (size_t)len)) < 0)
                break;
            memcpy(sc2->data + sc2->offsets[i], s, (size_t)len);
            sc2->offsets[i + 1] = sc2->offsets[i] + (uint32_t)len;
        }
        if (!rc)
            rc = tp_writer_add(w, b, err, errlen);
        cb_batch_destroy(&b);
    }
    tp_part_info info;
    if (!rc)
        rc = tp_writer_finish(w, &info, NULL, NULL, err, errlen);
    if (rc < 0 && tb_upload_error(u)[0])
        snprintf(err, errlen, "%s", tb_upload_error(u));
    tp_writer_destroy(&w);
    uint64_t size = 0;
    if (!rc)
        rc = tb_upload_finish(u, &size, err, errlen);
    if (!rc) {
        snprintf(name, TB_NAME_MAX, "%s", tb_upload_name(u));
        memset(add, 0, sizeof(*add));
        add->name = name;
        add->partition = partition;
        add->rows = info.rows;
        add->bytes = size;
    }
    tb_upload_destroy(&u);
    return rc;
}

int tt_read_all(const tb_table *t, const tb_snapshot *s, uint64_t *rows, uint64_t *id_sum,
                uint64_t *id_xor, char *err, size_t errlen)
{
    *rows = *id_sum = *id_xor = 0;
    for (size_t i = 0; i < s->n_parts; i++) {
        rs_source *src;
        tp_reader *r;
        int rc = tb_part_open(t, s->parts[i].name, &src, &r, err, errlen);
        if (rc < 0)
            return rc;
        uint32_t col = 0;
        cb_batch *b;
        rc = tp_reader_read(r, &col, 1, 0, tp_reader_meta(r)->granules, &b, err, errlen);
        if (!rc) {
            for (uint32_t k = 0; k < b->n_rows; k++) {
                uint64_t id = ((uint64_t *)b->cols[0]->values)[k];
                *id_sum += id;
                *id_xor ^= id * 0x9e3779b97f4a7c15ull;
            }
            *rows += b->n_rows;
            if (b->n_rows != s->parts[i].rows)
                rc = -EBADMSG;
            cb_batch_destroy(&b);
        }
        tp_reader_destroy(&r);
        rs_destroy(&src);
        if (rc < 0)
            return rc;
    }
    return 0;
}
