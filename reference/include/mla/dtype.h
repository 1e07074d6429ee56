/* dtype.h: element types and bit-exact conversions.
 * All float->narrow conversions round to nearest, ties to even.
 * Saturation rules (mla-spec.md §e):
 *   e4m3fn   : |x| beyond max finite (448) -> +-448 (CUDA __NV_SATFINITE); NaN -> 0x7F (sign kept); no inf.
 *   e4m3fnuz : max finite 240 -> +-240; NaN (and inf) -> 0x80 (the only NaN); no -0 (-0 -> 0x00).
 *   e5m2     : saturating to +-57344; NaN -> 0x7F/0xFF quiet NaN; inf saturates too (SATFINITE).
 *   ue8m0    : value 2^(e-127), 0xFF = NaN; conversion from f32 is explicit about rounding (see below).
 *   bf16/f16 : IEEE rules (overflow -> inf), NaN stays NaN (quiet). */
#ifndef MLA_DTYPE_H
#define MLA_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum, name, bytes) -- the name is what HDF5 'dtype' attributes hold. */
#define MLA_DTYPE_LIST(X)               \
    X(MLA_F64, "f64", 8)                \
    X(MLA_F32, "f32", 4)                \
    X(MLA_BF16, "bf16", 2)              \
    X(MLA_F16, "f16", 2)                \
    X(MLA_E4M3FN, "e4m3fn", 1)          \
    X(MLA_E4M3FNUZ, "e4m3fnuz", 1)      \
    X(MLA_E5M2, "e5m2", 1)              \
    X(MLA_UE8M0, "ue8m0", 1)            \
    X(MLA_I32, "i32", 4)                \
    X(MLA_I64, "i64", 8)                \
    X(MLA_U8, "u8", 1)

typedef enum {
#define MLA_DTYPE_ENUM(e, n, b) e,
    MLA_DTYPE_LIST(MLA_DTYPE_ENUM)
#undef MLA_DTYPE_ENUM
        MLA_DTYPE_COUNT
} mla_dtype;

size_t mla_dtype_size(mla_dtype t);
const char *mla_dtype_name(mla_dtype t);
/* Returns 0 and sets *out when name is known, -1 otherwise. */
int mla_dtype_from_name(const char *name, mla_dtype *out);
/* 1 for the float types whose values are stored as raw bits (bf16, f16, fp8, ue8m0). */
int mla_dtype_is_packed_float(mla_dtype t);

uint16_t mla_f32_to_bf16(float x);
float mla_bf16_to_f32(uint16_t b);
/* Round a value to the nearest bf16 and back (one rounding from double: via f32 would double-round,
 * so this rounds the double directly). */
double mla_round_bf16(double x);
uint16_t mla_f32_to_f16(float x);
float mla_f16_to_f32(uint16_t h);
double mla_round_f16(double x);
double mla_round_f32(double x);

uint8_t mla_f32_to_e4m3fn(float x);
float mla_e4m3fn_to_f32(uint8_t b);
uint8_t mla_f32_to_e4m3fnuz(float x);
float mla_e4m3fnuz_to_f32(uint8_t b);
uint8_t mla_f32_to_e5m2(float x);
float mla_e5m2_to_f32(uint8_t b);

/* ue8m0: power-of-two scales. _ceil rounds up (DeepSeek/FlashMLA quantizers: 2^ceil(log2 s)),
 * _floor truncates toward zero (SM100 e8m0 reader, per vLLM's test). Non-positive -> 2^-127 code 0. */
uint8_t mla_f32_to_ue8m0_ceil(float x);
uint8_t mla_f32_to_ue8m0_floor(float x);
float mla_ue8m0_to_f32(uint8_t b);

/* Any scalar element at p of type t, widened to double (ints converted). */
double mla_load_f64(mla_dtype t, const void *p);
/* Store double v narrowed to type t at p (floats: RNE + the saturation rules above;
 * f32 from double rounds once). */
void mla_store_f64(mla_dtype t, void *p, double v);

/* Distance in units in the last place between a and b when both are represented in t
 * (monotone integer mapping of the bit patterns); for f64/f32 too. NaN -> UINT64_MAX. */
uint64_t mla_ulp_distance(mla_dtype t, double a, double b);

#ifdef __cplusplus
}
#endif
#endif
