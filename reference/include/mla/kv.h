/* kv.h: the cached latent row, stated once for every engine: its formats (MLA_KV_FORMAT_LIST), its
 * size (mla_kv_row_bytes) and its decoder (mla_kv_load: element j of a row as f32). The reference
 * cache, the reference operator, the GPU kernels, the GPU's read_kv and the GPU benchmark all decode
 * through mla_kv_load, so a new row layout is written here and nowhere else.
 *
 * Header-only, plain C11 and valid C++: the functions are MLA_KV_HD, which is `static inline` in C
 * and C++ and `__host__ __device__` under nvcc / hipcc, so one body serves the host and the kernels.
 * It needs no library, and no GPU runtime header outside hipcc (a plugin includes it through attn_op.h).
 *
 * Row of token t: [kv_c (C) | k_pe (R)], C = kv_lora_rank, R = rope dim, packed per format:
 *   MLA_KV_BF16   (C+R) bf16 bit patterns (uint16);
 *   MLA_KV_FP8    (C+R) e4m3 codes; value = decode(code) * k_scale, the product in f32 (vLLM `fp8`);
 *   MLA_KV_FP8_DS fp8_ds_mla: C e4m3 codes | ceil(C/128) f32 tile scales | R bf16; a c_kv value is
 *                 decode(code) * scale of its 128-wide tile, in f32 (656 bytes at C 512, R 64);
 *   MLA_KV_F32    (C+R) floats.
 * Multi-byte fields are little-endian (read with memcpy: every supported host and GPU is). */
#ifndef MLA_KV_H
#define MLA_KV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#if defined(__HIPCC__)
#include <hip/hip_runtime.h> /* declares the device memcpy (nvcc declares it in every .cu) */
#endif
#define MLA_KV_HD static inline __host__ __device__
#else
#define MLA_KV_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum, name): cached row formats (layouts above). */
#define MLA_KV_FORMAT_LIST(X)  \
    X(MLA_KV_BF16, "bf16")     \
    X(MLA_KV_FP8, "fp8")       \
    X(MLA_KV_FP8_DS, "fp8ds")  \
    X(MLA_KV_F32, "f32")

typedef enum {
#define MLA_KV_FORMAT_ENUM(e, n) e,
    MLA_KV_FORMAT_LIST(MLA_KV_FORMAT_ENUM)
#undef MLA_KV_FORMAT_ENUM
        MLA_KV_FORMAT_COUNT
} mla_kv_format;

/* Elements of kv_c that share one fp8_ds_mla tile scale. */
#define MLA_KV_DS_TILE 128

/* Bytes per cached row; 0 for a bad format or dims. */
MLA_KV_HD size_t mla_kv_row_bytes(mla_kv_format f, int C, int R)
{
    if (C < 1 || R < 0) return 0;
    switch (f) {
    case MLA_KV_BF16: return 2 * (size_t)(C + R);
    case MLA_KV_FP8: return (size_t)(C + R);
    case MLA_KV_FP8_DS:
        return (size_t)C + 4 * (size_t)((C + MLA_KV_DS_TILE - 1) / MLA_KV_DS_TILE) + 2 * (size_t)R;
    case MLA_KV_F32: return 4 * (size_t)(C + R);
    default: return 0;
    }
}

/* Everything needed to decode a row except where it is. */
typedef struct mla_kv_codec {
    mla_kv_format format;
    int32_t fp8_fnuz; /* e4m3 codes of MLA_KV_FP8 / MLA_KV_FP8_DS: 0 e4m3fn, 1 e4m3fnuz (MI300) */
    int32_t c, r;     /* kv_lora_rank C, rope dim R */
    float k_scale;    /* MLA_KV_FP8: the per-tensor dequant multiplier (vLLM k_scale) */
} mla_kv_codec;

MLA_KV_HD float mla_kv_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* bf16 bit pattern -> f32 (exact). */
MLA_KV_HD float mla_kv_bf16_f32(uint16_t b) { return mla_kv_bits_f32((uint32_t)b << 16); }

/* e4m3 code -> f32 (exact), as dtype.c decodes: fn (bias 7, NaN 0x7F/0xFF) or fnuz (bias 8, NaN
 * 0x80 only). A NaN is the quiet f32 NaN with the code's sign bit. */
MLA_KV_HD float mla_kv_e4m3_f32(uint8_t code, int fnuz)
{
    uint32_t sign = (uint32_t)(code & 0x80u) << 24;
    int e = (code >> 3) & 15, m = code & 7;
    if (fnuz ? code == 0x80 : (code & 0x7f) == 0x7f) return mla_kv_bits_f32(sign | 0x7fc00000u);
    int bias = fnuz ? 8 : 7;
    if (e == 0) { /* subnormal: m * 2^(1 - bias - 3), exact in f32 */
        float v = (float)m * (fnuz ? 1.0f / 1024.0f : 1.0f / 512.0f);
        return sign ? -v : v;
    }
    return mla_kv_bits_f32(sign | (uint32_t)(e - bias + 127) << 23 | (uint32_t)m << 20);
}

/* Element j (0 <= j < C + R) of a row in format k.format, as f32. */
MLA_KV_HD float mla_kv_load(mla_kv_codec k, const uint8_t *row, int j)
{
    switch (k.format) {
    case MLA_KV_BF16: {
        uint16_t b;
        memcpy(&b, row + 2 * (size_t)j, 2);
        return mla_kv_bf16_f32(b);
    }
    case MLA_KV_FP8: return mla_kv_e4m3_f32(row[j], k.fp8_fnuz) * k.k_scale;
    case MLA_KV_FP8_DS: {
        int tiles = (k.c + MLA_KV_DS_TILE - 1) / MLA_KV_DS_TILE;
        if (j < k.c) {
            float s;
            memcpy(&s, row + k.c + 4 * (j / MLA_KV_DS_TILE), 4);
            return mla_kv_e4m3_f32(row[j], k.fp8_fnuz) * s;
        }
        uint16_t b;
        memcpy(&b, row + k.c + 4 * tiles + 2 * (j - k.c), 2);
        return mla_kv_bf16_f32(b);
    }
    case MLA_KV_F32: {
        float f;
        memcpy(&f, row + 4 * (size_t)j, 4);
        return f;
    }
    default: return mla_kv_bits_f32(0x7fc00000u); /* not a format: NaN, never a plausible value */
    }
}

/* The whole row widened to double: out[C + R] (the f64 engines' view of a cached row). */
MLA_KV_HD void mla_kv_load_row_f64(mla_kv_codec k, const uint8_t *row, double *out)
{
    for (int j = 0; j < k.c + k.r; j++) out[j] = (double)mla_kv_load(k, row, j);
}

#ifdef __cplusplus
}
#endif
#endif
