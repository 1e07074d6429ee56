/* gpu_kv.h: paged-cache row addressing and decoding, shared by the cache kernels and attention (and,
 * on the host, by the benchmark's check). */
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

/* Element c of [kv_c (C) | k_pe (R)] of a row, dequantized to f32. */
MLA_HD float kv_load(const gpu_kv_desc &kv, const uint8_t *row, int c)
{
    if (kv.fmt == GPU_KV_BF16) {
        uint16_t b;
        memcpy(&b, row + 2 * c, 2);
        return gd_bf16_to_f32(b);
    }
    if (kv.fmt == GPU_KV_FP8) return gd_e4m3_to_f32(row[c], kv.fnuz) * kv.kv_scale;
    if (c < kv.c) {
        float s;
        memcpy(&s, row + kv.c + 4 * (c / 128), 4);
        return gd_e4m3_to_f32(row[c], 0) * s;
    }
    uint16_t b;
    memcpy(&b, row + kv.c + 4 * (kv.c / 128) + 2 * (c - kv.c), 2);
    return gd_bf16_to_f32(b);
}

/* Position of token t of the call. */
MLA_HD int tok_pos(const int32_t *tok_seq, const gpu_seq *seqs, int t, int *slot)
{
    const gpu_seq s = seqs[tok_seq[t]];
    if (slot) *slot = s.slot;
    return s.n_past + (t - s.tok0);
}

#endif
