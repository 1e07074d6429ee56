/* gpu_kv.h: paged-cache row addressing and decoding, shared by the cache kernels and attention (and,
 * on the host, by the tile tests). The row format itself is mla/kv.h's. */
#ifndef MLA_GPU_KV_H
#define MLA_GPU_KV_H

#include "gpu_dtype.h"
#include "gpu_types.h"

/* Row of (slot, pos): slot = block_table[slot][pos / bs] * bs + pos % bs. */
MLA_HD const uint8_t *kv_row(const gpu_kv_desc &kv, int slot, int pos)
{
    int blk = kv.tables[(int64_t)slot * kv.blocks_per_seq + pos / kv.block_size];
    return kv.pool + ((int64_t)blk * kv.block_size + pos % kv.block_size) * kv.row_bytes;
}

/* Element e of [kv_c (C) | k_pe (R)] of a row, dequantized to f32 by the one row codec (mla/kv.h). */
MLA_HD float kv_load(const gpu_kv_desc &kv, const uint8_t *row, int e) { return mla_kv_load(kv.codec, row, e); }

/* Position of token t of the call. */
MLA_HD int tok_pos(const int32_t *tok_seq, const gpu_seq *seqs, int t, int *slot)
{
    const gpu_seq s = seqs[tok_seq[t]];
    if (slot) *slot = s.slot;
    return s.n_past + (t - s.tok0);
}

/* Rows [*j0, *j1) of split sp (of splits) that decode token t attends in its sequence s: the token's
 * causal rows (plus causal_plus, the off-by-one fault's) cut into equal runs (split_len 0), or into runs
 * of split_len rows from row 0 (gpu_decode_plan: splits x split_len covers every token), the last ones
 * possibly short or empty. Every decode kernel splits so, and one combine merges their parts. */
MLA_HD void kv_split_rows(const gpu_seq &s, int t, int causal_plus, int splits, int split_len, int sp, int *j0, int *j1)
{
    int total = s.n_past + (t - s.tok0) + 1 + causal_plus;
    if (total > s.n_past + s.n_new) total = s.n_past + s.n_new;
    const int per = split_len > 0 ? split_len : (total + splits - 1) / splits;
    *j0 = sp * per < total ? sp * per : total;
    *j1 = *j0 + per < total ? *j0 + per : total;
}

#endif
