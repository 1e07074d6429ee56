/* quant.h: FP8 storage formats used by MLA serving stacks (mla-spec.md §e), bit-exact.
 * Every quantizer DIVIDES by the scale (x / s, as CUDA KV writers do) unless the name says
 * _recip, and converts with saturation (SATFINITE). */
#ifndef MLA_QUANT_H
#define MLA_QUANT_H

#include "mla/dtype.h"
#include "mla/kv.h"
#include "mla/mla.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Max finite value of an fp8 element type (448, 240, 57344). */
float mla_fp8_max(mla_dtype t);
/* Narrow f32 -> fp8 code of type t (e4m3fn, e4m3fnuz, e5m2) / widen back. */
uint8_t mla_fp8_encode(mla_dtype t, float x);
float mla_fp8_decode(mla_dtype t, uint8_t b);

/* vLLM `fp8` KV cache, per-tensor scale shared by c_kv and k_pe:
 * code[i] = sat(float(x[i]) / scale). n elements. */
void mla_kv_quant_per_tensor(mla_dtype t, const float *x, size_t n, float scale, uint8_t *code);
void mla_kv_dequant_per_tensor(mla_dtype t, const uint8_t *code, size_t n, float scale, float *x);

/* fp8_ds_mla: 656-byte row = 512 e4m3fn of c_kv | 4 fp32 tile scales (one per 128) | 64 bf16 k_pe.
 * Scale rule: MLA_DS_SCALE_POW2 (FlashMLA reference: 2^ceil(log2(max(amax/448, 1e-4))))
 * or MLA_DS_SCALE_RAW (vLLM writer: max(amax/448, FLT_MIN)). */
#define MLA_DS_ROW_BYTES 656
#define MLA_DS_NOPE 512
#define MLA_DS_ROPE 64
#define MLA_DS_TILE MLA_KV_DS_TILE /* 128, mla/kv.h */
typedef enum { MLA_DS_SCALE_POW2 = 0, MLA_DS_SCALE_RAW = 1 } mla_ds_scale_rule;
/* c_kv[512] (f32 values), k_pe[64] (f32, rounded to bf16) -> row[656], little-endian. */
void mla_ds_row_pack(const float *c_kv, const float *k_pe, mla_ds_scale_rule rule, uint8_t *row);
/* row[656] -> c_kv[512] (code * tile scale, in f32), k_pe[64]. */
void mla_ds_row_unpack(const uint8_t *row, float *c_kv, float *k_pe);

/* 128x128 block-scaled weights (DeepSeek-V3 checkpoints): W[r,c] = code[r,c] * scale_inv[r/128, c/128].
 * Quantize: per block amax -> s = amax/448 (0 block -> s = 1), code = sat(w / s). */
void mla_block_quant(const double *w, int64_t rows, int64_t cols, int block, uint8_t *code,
                     float *scale_inv);
void mla_block_dequant(const uint8_t *code, const float *scale_inv, int64_t rows, int64_t cols,
                       int block, double *w);

/* 1x128 dynamic activation quant (DeepSeek act_quant): per group of `group` along each row,
 * amax = max(max|x|, 1e-4), s = amax/448, optionally s = 2^ceil(log2 s) (ue8m0), code = sat(x / s).
 * x[rows, cols] -> code[rows, cols], scale[rows, ceil(cols/group)]. */
void mla_act_quant(const float *x, int64_t rows, int64_t cols, int group, int ue8m0, uint8_t *code,
                   float *scale);

/* fp8_ds_mla rows for any latent/rope width (the tiny built-in models use 256/16):
 * [nope e4m3fn codes | ceil(nope/128) fp32 tile scales (the last tile may be partial) |
 *  rope bf16], little-endian. The 656-byte functions above are these with 512/64. */
size_t mla_ds_row_bytes(int nope, int rope);
/* c_kv[nope], k_pe[rope] -> row[mla_ds_row_bytes(nope, rope)]. MLA_ERR_INVALID on nope < 1,
 * rope < 0 or a NULL pointer (row untouched). */
mla_status mla_ds_row_pack_n(int nope, int rope, const float *c_kv, const float *k_pe,
                             mla_ds_scale_rule rule, uint8_t *row);
/* row -> c_kv[nope] (code * tile scale, f32), k_pe[rope]. Same errors as pack. */
mla_status mla_ds_row_unpack_n(int nope, int rope, const uint8_t *row, float *c_kv, float *k_pe);

#ifdef __cplusplus
}
#endif
#endif
