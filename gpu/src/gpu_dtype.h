/* gpu_dtype.h: bit-exact narrow-float conversions usable on host and device.
 * bf16 is stored as uint16_t and converted here (portable across nvcc/hipcc, and exact).
 * fp8 e4m3fn / e4m3fnuz follow dtype.h: round to nearest even, saturating (SATFINITE);
 * fn: NaN -> 0x7F|sign, no inf; fnuz: NaN and inf -> 0x80, -0 -> 0x00. */
#ifndef MLA_GPU_DTYPE_H
#define MLA_GPU_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mla/kv.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#include "hip_compat.h" /* the runtime headers define __host__ / __device__ */
#define MLA_HD __host__ __device__ __forceinline__
#else /* plain C / C++ on the host: the kernel-logic tests */
#define MLA_HD static inline
#endif

MLA_HD uint32_t gd_f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

MLA_HD float gd_u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The decoders are mla/kv.h's, so the kernels, the engine and the reference decode alike. */
MLA_HD float gd_bf16_to_f32(uint16_t b) { return mla_kv_bf16_f32(b); }

MLA_HD uint16_t gd_f32_to_bf16(float x)
{
    uint32_t u = gd_f2u(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

MLA_HD float gd_round_bf16(float x) { return gd_bf16_to_f32(gd_f32_to_bf16(x)); }

/* fp8 e4m3: fnuz = 0 -> e4m3fn (bias 7, max 448), 1 -> e4m3fnuz (bias 8, max 240). */
MLA_HD float gd_e4m3_max(int fnuz) { return fnuz ? 240.0f : 448.0f; }

MLA_HD uint8_t gd_f32_to_e4m3(float x, int fnuz)
{
    uint32_t u = gd_f2u(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    float a = fabsf(x);
    if (x != x) return fnuz ? (uint8_t)0x80 : (uint8_t)(sign | 0x7f);
    if (fnuz && isinf(a)) return 0x80;
    int bias = fnuz ? 8 : 7;
    float maxv = gd_e4m3_max(fnuz);
    uint8_t code;
    if (a > maxv) {
        code = 0x7e + (fnuz ? 1 : 0); /* fn 0x7E = 448, fnuz 0x7F = 240 */
    } else {
        int e;
        (void)frexpf(a, &e); /* a = f * 2^e, f in [0.5, 1) */
        e -= 1;              /* a = (2f) * 2^e */
        int emin = 1 - bias; /* exponent of the smallest normal */
        if (a == 0.0f || e < emin) {
            /* subnormal (and the step into the first normal): multiples of 2^(emin-3), exact scaling */
            float q = rintf(ldexpf(a, 3 - emin));
            code = (uint8_t)q; /* q == 8 is exactly the smallest normal's code */
        } else {
            float q = rintf(ldexpf(a, 3 - e)); /* in [8, 16] */
            int qi = (int)q;
            if (qi == 16) {
                qi = 8;
                e += 1;
            }
            int c = ((e + bias) << 3) | (qi - 8);
            int cmax = fnuz ? 0x7f : 0x7e;
            code = (uint8_t)(c > cmax ? cmax : c);
        }
    }
    if (fnuz && code == 0) return 0; /* no negative zero */
    return (uint8_t)(code | sign);
}

MLA_HD float gd_e4m3_to_f32(uint8_t b, int fnuz) { return mla_kv_e4m3_f32(b, fnuz); }

/* 2^ceil(log2(v)) for v > 0, exact (fp8_ds_mla POW2 tile scales). */
MLA_HD float gd_pow2_ceil(float v)
{
    int e;
    float f = frexpf(v, &e); /* v = f * 2^e, f in [0.5, 1) */
    return f == 0.5f ? ldexpf(1.0f, e - 1) : ldexpf(1.0f, e);
}

#endif
