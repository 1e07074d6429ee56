/* quant.c: FP8 storage formats used by MLA serving stacks (mla-spec.md §e), bit-exact.
 * Arithmetic is written in the precision the peers use (f32 divide, f32 multiply) so that
 * codes match theirs bit for bit; conversions are the saturating ones of dtype.c. */
#include "mla/quant.h"

#include "mla/kv.h"

#include <float.h>
#include <math.h>
#include <string.h>

float mla_fp8_max(mla_dtype t)
{
    switch (t) {
    case MLA_E4M3FN: return 448.0f;
    case MLA_E4M3FNUZ: return 240.0f;
    case MLA_E5M2: return 57344.0f;
    default: return 0.0f; /* not an fp8 element type */
    }
}

uint8_t mla_fp8_encode(mla_dtype t, float x)
{
    switch (t) {
    case MLA_E4M3FN: return mla_f32_to_e4m3fn(x);
    case MLA_E4M3FNUZ: return mla_f32_to_e4m3fnuz(x);
    case MLA_E5M2: return mla_f32_to_e5m2(x);
    default: return 0;
    }
}

float mla_fp8_decode(mla_dtype t, uint8_t b)
{
    switch (t) {
    case MLA_E4M3FN: return mla_e4m3fn_to_f32(b);
    case MLA_E4M3FNUZ: return mla_e4m3fnuz_to_f32(b);
    case MLA_E5M2: return mla_e5m2_to_f32(b);
    default: return NAN;
    }
}

/* ---- per-tensor KV (vLLM `fp8`) ------------------------------------------------------------ */

void mla_kv_quant_per_tensor(mla_dtype t, const float *x, size_t n, float scale, uint8_t *code)
{
    /* x[n] -> code[n]; f32 divide then SATFINITE convert, as scaled_convert does. */
    for (size_t i = 0; i < n; i++) code[i] = mla_fp8_encode(t, x[i] / scale);
}

void mla_kv_dequant_per_tensor(mla_dtype t, const uint8_t *code, size_t n, float scale, float *x)
{
    /* code[n] -> x[n] = decode * scale in f32 (Triton MLA's dequant-on-load). */
    for (size_t i = 0; i < n; i++) x[i] = mla_fp8_decode(t, code[i]) * scale;
}

/* ---- fp8_ds_mla rows ------------------------------------------------------------------------ */

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int ds_tiles(int nope) { return (nope + MLA_DS_TILE - 1) / MLA_DS_TILE; }

size_t mla_ds_row_bytes(int nope, int rope) { return mla_kv_row_bytes(MLA_KV_FP8_DS, nope, rope); }

/* Tile scale from the tile's amax (f32 arithmetic, mla-spec.md §e.6). */
static float ds_tile_scale(float amax, mla_ds_scale_rule rule)
{
    float s = amax / 448.0f;
    if (rule == MLA_DS_SCALE_RAW) return s > FLT_MIN ? s : FLT_MIN;
    /* FlashMLA reference: 2^ceil(log2(max(s, 1e-4))); exact ceil through ue8m0. */
    if (!(s > 1e-4f)) s = 1e-4f;
    return mla_ue8m0_to_f32(mla_f32_to_ue8m0_ceil(s));
}

mla_status mla_ds_row_pack_n(int nope, int rope, const float *c_kv, const float *k_pe,
                             mla_ds_scale_rule rule, uint8_t *row)
{
    if (nope < 1 || rope < 0 || !c_kv || !row || (rope > 0 && !k_pe))
        return mla_errorf(MLA_ERR_INVALID,
                          "ds row pack: nope=%d rope=%d: expected nope >= 1, rope >= 0 and "
                          "non-NULL buffers",
                          nope, rope);
    if (rule != MLA_DS_SCALE_POW2 && rule != MLA_DS_SCALE_RAW)
        return mla_errorf(MLA_ERR_INVALID, "ds row pack: scale rule %d: expected 0 or 1",
                          (int)rule);
    int ntiles = ds_tiles(nope);
    uint8_t *scales = row + nope;            /* [ntiles] f32 LE */
    uint8_t *pe = row + nope + 4 * ntiles;   /* [rope] bf16 LE */
    for (int tile = 0; tile < ntiles; tile++) {
        int lo = tile * MLA_DS_TILE;
        int hi = lo + MLA_DS_TILE < nope ? lo + MLA_DS_TILE : nope;
        float amax = 0.0f;
        for (int i = lo; i < hi; i++) amax = fmaxf(amax, fabsf(c_kv[i]));
        float s = ds_tile_scale(amax, rule);
        for (int i = lo; i < hi; i++) row[i] = mla_f32_to_e4m3fn(c_kv[i] / s);
        uint32_t sb;
        memcpy(&sb, &s, sizeof sb);
        put_le32(scales + 4 * tile, sb);
    }
    for (int i = 0; i < rope; i++) {
        uint16_t b = mla_f32_to_bf16(k_pe[i]);
        pe[2 * i] = (uint8_t)(b & 0xFF);
        pe[2 * i + 1] = (uint8_t)(b >> 8);
    }
    return MLA_OK;
}

mla_status mla_ds_row_unpack_n(int nope, int rope, const uint8_t *row, float *c_kv, float *k_pe)
{
    if (nope < 1 || rope < 0 || !c_kv || !row || (rope > 0 && !k_pe))
        return mla_errorf(MLA_ERR_INVALID,
                          "ds row unpack: nope=%d rope=%d: expected nope >= 1, rope >= 0 and "
                          "non-NULL buffers",
                          nope, rope);
    /* the one row decoder (mla/kv.h); fp8_ds_mla codes are e4m3fn */
    const mla_kv_codec k = {.format = MLA_KV_FP8_DS, .fp8_fnuz = 0, .c = nope, .r = rope, .k_scale = 1.0f};
    for (int i = 0; i < nope; i++) c_kv[i] = mla_kv_load(k, row, i);
    for (int i = 0; i < rope; i++) k_pe[i] = mla_kv_load(k, row, nope + i);
    return MLA_OK;
}

void mla_ds_row_pack(const float *c_kv, const float *k_pe, mla_ds_scale_rule rule, uint8_t *row)
{
    (void)mla_ds_row_pack_n(MLA_DS_NOPE, MLA_DS_ROPE, c_kv, k_pe, rule, row);
}

void mla_ds_row_unpack(const uint8_t *row, float *c_kv, float *k_pe)
{
    (void)mla_ds_row_unpack_n(MLA_DS_NOPE, MLA_DS_ROPE, row, c_kv, k_pe);
}

/* ---- 128x128 block-scaled weights ------------------------------------------------------------- */

void mla_block_quant(const double *w, int64_t rows, int64_t cols, int block, uint8_t *code,
                     float *scale_inv)
{
    /* w[rows, cols] -> code[rows, cols] e4m3fn, scale_inv[ceil(rows/block), ceil(cols/block)]. */
    if (!w || !code || !scale_inv || rows < 1 || cols < 1 || block < 1) return;
    int64_t nbr = (rows + block - 1) / block, nbc = (cols + block - 1) / block;
    for (int64_t br = 0; br < nbr; br++) {
        int64_t r0 = br * block, r1 = r0 + block < rows ? r0 + block : rows;
        for (int64_t bc = 0; bc < nbc; bc++) {
            int64_t c0 = bc * block, c1 = c0 + block < cols ? c0 + block : cols;
            double amax = 0.0;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++) amax = fmax(amax, fabs(w[r * cols + c]));
            /* s = amax/448 rounded once to f32; a zero block gets 1, and a block so small that
             * s underflows gets FLT_MIN so w / s stays finite. */
            float s = amax > 0.0 ? (float)mla_round_f32(amax / 448.0) : 1.0f;
            if (s < FLT_MIN) s = FLT_MIN;
            if (isinf(s)) s = FLT_MAX;
            scale_inv[br * nbc + bc] = s;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++)
                    mla_store_f64(MLA_E4M3FN, &code[r * cols + c], w[r * cols + c] / (double)s);
        }
    }
}

void mla_block_dequant(const uint8_t *code, const float *scale_inv, int64_t rows, int64_t cols,
                       int block, double *w)
{
    /* code[rows, cols], scale_inv[ceil(rows/block), ceil(cols/block)] -> w[rows, cols];
     * the product is taken in f32 as weight_dequant does. */
    if (!w || !code || !scale_inv || rows < 1 || cols < 1 || block < 1) return;
    int64_t nbc = (cols + block - 1) / block;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            float s = scale_inv[(r / block) * nbc + c / block];
            w[r * cols + c] = (double)(mla_e4m3fn_to_f32(code[r * cols + c]) * s);
        }
}

/* ---- 1x128 activation quant ------------------------------------------------------------------- */

void mla_act_quant(const float *x, int64_t rows, int64_t cols, int group, int ue8m0, uint8_t *code,
                   float *scale)
{
    /* x[rows, cols] -> code[rows, cols] e4m3fn, scale[rows, ceil(cols/group)]. */
    if (!x || !code || !scale || rows < 1 || cols < 1 || group < 1) return;
    int64_t ng = (cols + group - 1) / group;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        for (int64_t g = 0; g < ng; g++) {
            int64_t c0 = g * group, c1 = c0 + group < cols ? c0 + group : cols;
            float amax = 1e-4f;
            for (int64_t c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(xr[c]));
            float s = amax / 448.0f;
            if (ue8m0) s = mla_ue8m0_to_f32(mla_f32_to_ue8m0_ceil(s));
            scale[r * ng + g] = s;
            for (int64_t c = c0; c < c1; c++) code[r * cols + c] = mla_f32_to_e4m3fn(xr[c] / s);
        }
    }
}
