/* batch.c: the batch contract of backend.h, checked in one place for every engine. The rules are
 * numbered there; each refusal names the field and the index that broke it. */
#include "mla/backend.h"

#include <stdlib.h>

mla_status mla_batch_validate(const char *who, const mla_batch *b, const mla_batch_limits *lim)
{
    if (!who) who = "engine";
    if (!b || !lim || !lim->cached) return mla_errorf(MLA_ERR_INVALID, "%s: batch: no batch or no limits", who);
    /* rule 1 */
    if (b->n_seqs <= 0) return mla_errorf(MLA_ERR_INVALID, "%s: batch: n_seqs = %d, expected >= 1", who, b->n_seqs);
    if (!b->seq_ids || !b->n_past || !b->n_new || !b->tokens)
        return mla_errorf(MLA_ERR_INVALID, "%s: batch: %s is NULL", who,
                          !b->seq_ids ? "seq_ids" : !b->n_past ? "n_past" : !b->n_new ? "n_new" : "tokens");
    int64_t total = 0;
    for (int i = 0; i < b->n_seqs; i++) {
        int s = b->seq_ids[i];
        /* rule 2 */
        if (s < 0 || s >= lim->max_seqs)
            return mla_errorf(MLA_ERR_INVALID, "%s: batch: seq_ids[%d] = %d, expected [0, %d) (max_seqs)", who, i,
                              s, lim->max_seqs);
        for (int j = 0; j < i; j++)
            if (b->seq_ids[j] == s)
                return mla_errorf(MLA_ERR_INVALID, "%s: batch: seq_ids[%d] = %d repeats seq_ids[%d]", who, i, s, j);
        /* rule 3 */
        if (b->n_past[i] != lim->cached[s])
            return mla_errorf(MLA_ERR_INVALID,
                              "%s: batch: n_past[%d] = %d, expected %d (the tokens cache slot %d holds)", who, i,
                              b->n_past[i], lim->cached[s], s);
        /* rule 4 */
        if (b->n_new[i] < 0)
            return mla_errorf(MLA_ERR_INVALID, "%s: batch: n_new[%d] = %d, expected >= 0", who, i, b->n_new[i]);
        /* rule 5 */
        if ((int64_t)b->n_past[i] + b->n_new[i] > lim->max_seq_len)
            return mla_errorf(MLA_ERR_INVALID,
                              "%s: batch: n_past[%d] + n_new[%d] = %lld tokens, expected <= %d (max_seq_len)", who, i,
                              i, (long long)b->n_past[i] + b->n_new[i], lim->max_seq_len);
        total += b->n_new[i];
    }
    /* rule 6 */
    if (total > INT32_MAX)
        return mla_errorf(MLA_ERR_INVALID, "%s: batch: sum of n_new = %lld, expected < 2^31", who, (long long)total);
    for (int64_t t = 0; t < total; t++)
        if (b->tokens[t] < 0 || b->tokens[t] >= lim->vocab_size)
            return mla_errorf(MLA_ERR_INVALID, "%s: batch: tokens[%lld] = %d, expected [0, %d) (vocab_size)", who,
                              (long long)t, b->tokens[t], lim->vocab_size);
    return MLA_OK;
}

mla_status mla_batch_drop_empty(const mla_batch *b, mla_batch *out, int32_t **buf)
{
    *buf = NULL;
    *out = *b;
    int keep = 0;
    for (int i = 0; i < b->n_seqs; i++) keep += b->n_new[i] > 0;
    if (keep == b->n_seqs) return MLA_OK;
    int32_t *p = malloc((size_t)(3 * keep + 1) * sizeof *p);
    if (!p) return mla_errorf(MLA_ERR_NOMEM, "batch: %d entries without the empty ones", keep);
    int32_t *ids = p, *past = p + keep, *nnew = p + 2 * keep;
    for (int i = 0, k = 0; i < b->n_seqs; i++)
        if (b->n_new[i] > 0) {
            ids[k] = b->seq_ids[i];
            past[k] = b->n_past[i];
            nnew[k++] = b->n_new[i];
        }
    *out = (mla_batch){.n_seqs = keep, .seq_ids = ids, .n_past = past, .n_new = nnew, .tokens = b->tokens};
    *buf = p;
    return MLA_OK;
}
