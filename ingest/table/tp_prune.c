/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_prune.c: primary-index pruning. The rows of granule g lie between the
 * index's entries g and g + 1 in key order (the first row of the next granule,
 * or the part's last row). Key column 0 of every row of g is therefore inside
 * [index0[g], index0[g+1]]; column k is bounded the same way only when columns
 * 0..k-1 are equal at both ends (then the whole granule shares them and
 * column k is sorted inside it); otherwise column k may hold anything. A leaf
 * (=, IN, <, <=, >, >=) is "may match" when its values meet that interval, an
 * AND when every kid may match, an OR when one does: conservative, so a
 * granule that holds a matching row is never pruned.
 */
#include "errf.h"
#include "tp_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const cb_column *const *index;
    uint32_t n_key;
} pctx;

static bool same_type(const cb_typeinfo *a, const cb_typeinfo *b)
{
    return a->type == b->type && a->unit == b->unit &&
           (a->type != CB_DECIMAL || (a->precision == b->precision && a->scale == b->scale));
}

static int check(const pctx *p, const tp_cond *c, int depth, char *err, size_t errlen)
{
    if (depth > 64)
        return errf_fail(err, errlen, -EINVAL, "the key condition nests deeper than 64");
    switch (c->op) {
    case TP_COND_AND:
    case TP_COND_OR:
        if (!c->n_kids || !c->kids)
            return errf_fail(err, errlen, -EINVAL,
                             "an AND or OR of the key condition has no terms");
        for (uint32_t i = 0; i < c->n_kids; i++) {
            int rc = check(p, c->kids[i], depth + 1, err, errlen);
            if (rc < 0)
                return rc;
        }
        return 0;
    case TP_COND_EQ:
    case TP_COND_IN:
    case TP_COND_LT:
    case TP_COND_LE:
    case TP_COND_GT:
    case TP_COND_GE:
        if (c->key_pos >= p->n_key)
            return errf_fail(err, errlen, -EINVAL, "key condition on ORDER BY column %u of %u",
                             c->key_pos, p->n_key);
        if (!c->values || !c->values->n || c->values->null_count ||
            !same_type(&c->values->info, &p->index[c->key_pos]->info))
            return errf_fail(err, errlen, -EINVAL,
                             "the values of a key condition on ORDER BY column %u must be non-NULL "
                             "and of the column's type",
                             c->key_pos);
        if (c->op != TP_COND_IN && c->values->n != 1)
            return errf_fail(err, errlen, -EINVAL, "a comparison of the key takes one value");
        return 0;
    }
    return errf_fail(err, errlen, -EINVAL, "unknown key condition operator %d", c->op);
}

/* Is column k bounded in granule g (its prefix constant)? */
static bool bounded(const pctx *p, uint32_t k, uint32_t g)
{
    for (uint32_t j = 0; j < k; j++)
        if (tp__cmp_col(p->index[j], g, p->index[j], g + 1) != 0)
            return false;
    return true;
}

static bool may(const pctx *p, const tp_cond *c, uint32_t g)
{
    switch (c->op) {
    case TP_COND_AND:
        for (uint32_t i = 0; i < c->n_kids; i++)
            if (!may(p, c->kids[i], g))
                return false;
        return true;
    case TP_COND_OR:
        for (uint32_t i = 0; i < c->n_kids; i++)
            if (may(p, c->kids[i], g))
                return true;
        return false;
    default: break;
    }
    uint32_t k = c->key_pos;
    if (!bounded(p, k, g))
        return true;
    const cb_column *ix = p->index[k], *v = c->values;
    switch (c->op) {
    case TP_COND_EQ:
    case TP_COND_IN:
        for (uint32_t i = 0; i < v->n; i++)
            if (tp__cmp_col(ix, g, v, i) <= 0 && tp__cmp_col(ix, g + 1, v, i) >= 0)
                return true;
        return false;
    case TP_COND_LT: return tp__cmp_col(ix, g, v, 0) < 0;
    case TP_COND_LE: return tp__cmp_col(ix, g, v, 0) <= 0;
    case TP_COND_GT: return tp__cmp_col(ix, g + 1, v, 0) > 0;
    case TP_COND_GE: return tp__cmp_col(ix, g + 1, v, 0) >= 0;
    default: return true;
    }
}

int tp_prune_index(const cb_column *const *index, uint32_t n_key, uint32_t granules,
                   const tp_cond *c, tp_granule_range **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    pctx p = {index, n_key};
    for (uint32_t k = 0; k < n_key; k++)
        if (!index[k] || index[k]->n != (uint64_t)granules + 1)
            return errf_fail(err, errlen, -EINVAL,
                             "the index of key column %u has %u entries, "
                             "not %u",
                             k, index[k] ? index[k]->n : 0, granules + 1);
    if (c) {
        int rc = check(&p, c, 0, err, errlen);
        if (rc < 0)
            return rc;
    }
    tp_granule_range *r = NULL;
    size_t nr = 0, cap = 0;
    for (uint32_t g = 0; g < granules; g++) {
        if (c && !may(&p, c, g))
            continue;
        if (nr && r[nr - 1].end == g) {
            r[nr - 1].end = g + 1;
            continue;
        }
        if (nr == cap) {
            cap = cap ? cap * 2 : 8;
            tp_granule_range *t = realloc(r, cap * sizeof(*t));
            if (!t) {
                free(r);
                return -ENOMEM;
            }
            r = t;
        }
        r[nr++] = (tp_granule_range){g, g + 1};
    }
    *out = r;
    *n = nr;
    return 0;
}

int tp_prune(const tp_reader *r, const tp_cond *c, tp_granule_range **out, size_t *n, char *err,
             size_t errlen)
{
    const tp_part_meta *m = tp_reader_meta(r);
    return tp_prune_index(m->index, m->n_key, m->granules, c, out, n, err, errlen);
}
