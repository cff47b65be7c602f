/* SPDX-License-Identifier: Apache-2.0
 *
 * dist_state.c: the envelope of a partial state (dist_state.h) around the
 * body exec/eng_partial.c writes and merges.
 */
#include "dist_state.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int dist_state_encode(const eng_pstate *ps, uint32_t unit, ew_buf *b)
{
    uint64_t rows, bytes;
    eng_pstate_stats(ps, &rows, &bytes);
    size_t start = b->n;
    ew_u32(b, DIST_STATE_MAGIC);
    uint8_t vf[4] = {DIST_STATE_VERSION & 0xff, DIST_STATE_VERSION >> 8, 0, 0};
    ew_raw(b, vf, 4);
    ew_u64(b, eng_pstate_fingerprint(ps));
    ew_u32(b, unit);
    ew_u64(b, rows);
    ew_u64(b, bytes);
    ew_u32(b, 0); /* the body's length, once known */
    size_t body = b->n;
    eng_pstate_encode(ps, b);
    if (b->err)
        return b->err;
    if (b->n - body > DIST_STATE_MAX_BODY)
        return b->err = -E2BIG;
    ew_put_u32_at(b, start + DIST_STATE_HEADER - 4, (uint32_t)(b->n - body));
    return b->err;
}

static int bad(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen,
             "a partial state from a worker is malformed (%s): the servers of "
             "the cluster must run the same version",
             what);
    return -EBADMSG;
}

int dist_state_header(const void *p, size_t n, dist_state_hdr *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    er_buf r;
    er_init(&r, p, n);
    if (n < DIST_STATE_HEADER)
        return bad(err, errlen, "shorter than its header");
    if (er_u32(&r) != DIST_STATE_MAGIC)
        return bad(err, errlen, "not a partial state");
    const uint8_t *vf = er_raw(&r, 4);
    out->version = (uint16_t)(vf[0] | vf[1] << 8);
    if (out->version != DIST_STATE_VERSION) {
        snprintf(err, errlen,
                 "a worker sent a partial state of version %u where this server "
                 "reads version %u: the servers of the cluster must run the same "
                 "version",
                 out->version, DIST_STATE_VERSION);
        return -EBADMSG;
    }
    if (vf[2] || vf[3])
        return bad(err, errlen, "unknown flags");
    out->fingerprint = er_u64(&r);
    out->unit = er_u32(&r);
    out->rows_read = er_u64(&r);
    out->bytes_read = er_u64(&r);
    out->body_len = er_u32(&r);
    if (r.err || out->body_len > DIST_STATE_MAX_BODY || out->body_len != n - DIST_STATE_HEADER)
        return bad(err, errlen, "its body's length");
    return 0;
}

int dist_state_merge(eng_pstate *ps, const void *p, size_t n, char *err, size_t errlen)
{
    dist_state_hdr h;
    int rc = dist_state_header(p, n, &h, err, errlen);
    if (rc < 0)
        return rc;
    if (h.fingerprint != eng_pstate_fingerprint(ps)) {
        snprintf(err, errlen,
                 "a worker sent the partial state of another statement (its "
                 "columns or aggregates differ): the servers of the cluster must "
                 "run the same version and read the same files");
        return -EBADMSG;
    }
    er_buf r;
    er_init(&r, (const uint8_t *)p + DIST_STATE_HEADER, h.body_len);
    rc = eng_pstate_merge(ps, &r, err, errlen);
    if (rc == 0)
        eng_pstate_add_stats(ps, h.rows_read, h.bytes_read);
    return rc;
}

int dist_state_encode_insert(uint32_t unit, const dist_insert_done *d, ew_buf *b)
{
    size_t start = b->n;
    ew_u32(b, DIST_STATE_MAGIC);
    uint8_t vf[4] = {DIST_STATE_VERSION & 0xff, DIST_STATE_VERSION >> 8, 0, 0};
    ew_raw(b, vf, 4);
    ew_u64(b, DIST_STATE_INSERT_FINGERPRINT);
    ew_u32(b, unit);
    ew_u64(b, d->rows_read);
    ew_u64(b, d->bytes_read);
    ew_u32(b, 17);
    uint8_t kind = DIST_STATE_KIND_INSERT;
    ew_raw(b, &kind, 1);
    ew_u64(b, d->rows_written);
    ew_u64(b, d->bytes_written);
    if (!b->err && b->n - start != DIST_STATE_HEADER + 17)
        b->err = -EINVAL;
    return b->err;
}

int dist_state_read_insert(const void *p, size_t n, dist_insert_done *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    dist_state_hdr h;
    int rc = dist_state_header(p, n, &h, err, errlen);
    if (rc < 0)
        return rc;
    if (h.fingerprint != DIST_STATE_INSERT_FINGERPRINT || h.body_len != 17)
        return bad(err, errlen, "not the answer of an INSERT's unit");
    er_buf r;
    er_init(&r, (const uint8_t *)p + DIST_STATE_HEADER, h.body_len);
    const uint8_t *kind = er_raw(&r, 1);
    if (r.err || kind[0] != DIST_STATE_KIND_INSERT)
        return bad(err, errlen, "not the answer of an INSERT's unit");
    out->rows_written = er_u64(&r);
    out->bytes_written = er_u64(&r);
    out->rows_read = h.rows_read;
    out->bytes_read = h.bytes_read;
    return r.err ? bad(err, errlen, "its body") : 0;
}
