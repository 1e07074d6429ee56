/* test_dtype.c: bit-exact conversions of dtype.h, exhaustively where the format is small. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mla/dtype.h"

typedef struct {
    const char *name;
    mla_dtype t;
    uint8_t (*enc)(float);
    float (*dec)(uint8_t);
    int mbits, bias;
    uint8_t max_code; /* largest finite positive code */
    float max;
} fp8_case;

static const fp8_case FP8[] = {
    {"e4m3fn", MLA_E4M3FN, mla_f32_to_e4m3fn, mla_e4m3fn_to_f32, 3, 7, 0x7E, 448.0f},
    {"e4m3fnuz", MLA_E4M3FNUZ, mla_f32_to_e4m3fnuz, mla_e4m3fnuz_to_f32, 3, 8, 0x7F, 240.0f},
    {"e5m2", MLA_E5M2, mla_f32_to_e5m2, mla_e5m2_to_f32, 2, 15, 0x7B, 57344.0f},
};
#define NFP8 (sizeof FP8 / sizeof FP8[0])

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static int is_nan_code(const fp8_case *c, uint8_t b)
{
    switch (c->t) {
    case MLA_E4M3FN: return (b & 0x7F) == 0x7F;
    case MLA_E4M3FNUZ: return b == 0x80;
    case MLA_E5M2: return (b & 0x7C) == 0x7C && (b & 0x03) != 0;
    default: return 0;
    }
}

static int is_inf_code(const fp8_case *c, uint8_t b)
{
    return c->t == MLA_E5M2 && (b & 0x7F) == 0x7C;
}

/* Independent decoder from the textbook formula (pow, not the library's bit path). */
static double ref_value(const fp8_case *c, uint8_t b)
{
    int ebits = 7 - c->mbits;
    int s = b >> 7, e = (b >> c->mbits) & ((1 << ebits) - 1), m = b & ((1 << c->mbits) - 1);
    double v = e == 0 ? pow(2.0, 1 - c->bias) * (m / pow(2.0, c->mbits))
                      : pow(2.0, e - c->bias) * (1.0 + m / pow(2.0, c->mbits));
    return s ? -v : v;
}

/* Every one of the 256 codes decodes to the textbook value and re-encodes to itself. */
static void test_fp8_all_codes(void **state)
{
    (void)state;
    for (size_t k = 0; k < NFP8; k++) {
        const fp8_case *c = &FP8[k];
        int nan_codes = 0;
        for (int i = 0; i < 256; i++) {
            uint8_t b = (uint8_t)i;
            float v = c->dec(b);
            if (is_nan_code(c, b)) {
                nan_codes++;
                assert_true(isnan(v));
                uint8_t back = c->enc(v);
                if (!is_nan_code(c, back))
                    fail_msg("%s: NaN code 0x%02X re-encodes to non-NaN 0x%02X", c->name, i, back);
                continue;
            }
            if (is_inf_code(c, b)) {
                assert_true(isinf(v));
                assert_int_equal(c->enc(v), (b & 0x80) | c->max_code); /* SATFINITE */
                continue;
            }
            if (v != (float)ref_value(c, b))
                fail_msg("%s: code 0x%02X decodes to %a, expected %a", c->name, i, (double)v,
                         ref_value(c, b));
            uint8_t back = c->enc(v);
            if (back != b) fail_msg("%s: code 0x%02X -> %a -> 0x%02X", c->name, i, (double)v, back);
            if (c->dec(back) != v || !signbit(c->dec(back)) != !signbit(v))
                fail_msg("%s: code 0x%02X sign lost", c->name, i);
        }
        int expect_nan = c->t == MLA_E4M3FN ? 2 : c->t == MLA_E4M3FNUZ ? 1 : 6;
        assert_int_equal(nan_codes, expect_nan);
    }
}

/* Finite positive codes are strictly increasing in value. */
static void test_fp8_monotone(void **state)
{
    (void)state;
    for (size_t k = 0; k < NFP8; k++) {
        const fp8_case *c = &FP8[k];
        for (int i = 0; i < c->max_code; i++)
            if (!(c->dec((uint8_t)i) < c->dec((uint8_t)(i + 1))))
                fail_msg("%s: codes 0x%02X, 0x%02X not increasing", c->name, i, i + 1);
        assert_true(c->dec(c->max_code) == c->max);
    }
}

/* The midpoint between every pair of adjacent codes rounds to the even code; one f32 ulp
 * either side rounds to the nearer code. Both signs. */
static void test_fp8_ties_to_even(void **state)
{
    (void)state;
    for (size_t k = 0; k < NFP8; k++) {
        const fp8_case *c = &FP8[k];
        for (int i = 0; i < c->max_code; i++) {
            for (int neg = 0; neg < 2; neg++) {
                uint8_t lo = (uint8_t)(i | (neg << 7)), hi = (uint8_t)((i + 1) | (neg << 7));
                /* fnuz has no -0 code: its negative side starts at the value -0 */
                int nz = c->t == MLA_E4M3FNUZ && lo == 0x80;
                float a = nz ? -0.0f : c->dec(lo), b = c->dec(hi);
                float mid = (float)(((double)a + (double)b) / 2); /* exact */
                assert_true((double)mid == ((double)a + (double)b) / 2);
                uint8_t even = (i & 1) ? hi : lo;
                uint8_t got = c->enc(mid);
                if (c->t == MLA_E4M3FNUZ && even == 0x80) even = 0x00; /* no -0 */
                if (got != even)
                    fail_msg("%s: tie %a between 0x%02X and 0x%02X -> 0x%02X", c->name,
                             (double)mid, lo, hi, got);
                uint8_t toward_a = c->enc(nextafterf(mid, a));
                uint8_t toward_b = c->enc(nextafterf(mid, b));
                uint8_t want_a = lo;
                if (c->t == MLA_E4M3FNUZ && want_a == 0x80) want_a = 0x00;
                assert_int_equal(toward_a, want_a);
                assert_int_equal(toward_b, hi);
            }
        }
    }
}

static void test_fp8_edges(void **state)
{
    (void)state;
    /* e4m3fn */
    assert_int_equal(mla_f32_to_e4m3fn(1.0f), 0x38);
    assert_int_equal(mla_f32_to_e4m3fn(448.0f), 0x7E);
    assert_int_equal(mla_f32_to_e4m3fn(-448.0f), 0xFE);
    assert_int_equal(mla_f32_to_e4m3fn(464.0f), 0x7E); /* tie 448|480 -> even 448 */
    assert_int_equal(mla_f32_to_e4m3fn(480.0f), 0x7E); /* saturates */
    assert_int_equal(mla_f32_to_e4m3fn(1e9f), 0x7E);
    assert_int_equal(mla_f32_to_e4m3fn(-1e9f), 0xFE);
    assert_int_equal(mla_f32_to_e4m3fn(INFINITY), 0x7E);
    assert_int_equal(mla_f32_to_e4m3fn(-INFINITY), 0xFE);
    assert_int_equal(mla_f32_to_e4m3fn(FLT_MAX), 0x7E);
    assert_int_equal(mla_f32_to_e4m3fn(NAN), 0x7F);
    assert_int_equal(mla_f32_to_e4m3fn(-NAN), 0xFF);
    assert_int_equal(mla_f32_to_e4m3fn(-0.0f), 0x80);
    assert_int_equal(mla_f32_to_e4m3fn(0.0f), 0x00);
    assert_true(mla_e4m3fn_to_f32(0x01) == ldexpf(1.0f, -9));
    assert_true(mla_e4m3fn_to_f32(0x08) == ldexpf(1.0f, -6)); /* min normal */
    assert_int_equal(mla_f32_to_e4m3fn(ldexpf(1.0f, -10)), 0x00); /* half min subnormal: tie */
    assert_int_equal(mla_f32_to_e4m3fn(ldexpf(1.5f, -10)), 0x01);
    assert_int_equal(mla_f32_to_e4m3fn(-ldexpf(1.0f, -11)), 0x80);
    assert_true(signbit(mla_e4m3fn_to_f32(0x80)) && mla_e4m3fn_to_f32(0x80) == 0.0f);
    assert_true(isnan(mla_e4m3fn_to_f32(0x7F)) && isnan(mla_e4m3fn_to_f32(0xFF)));
    /* e4m3fnuz: same bits are half the fn value */
    assert_int_equal(mla_f32_to_e4m3fnuz(1.0f), 0x40);
    assert_int_equal(mla_f32_to_e4m3fnuz(240.0f), 0x7F);
    assert_int_equal(mla_f32_to_e4m3fnuz(248.0f), 0x7F); /* tie 240|256 -> even, saturated */
    assert_int_equal(mla_f32_to_e4m3fnuz(1e9f), 0x7F);
    assert_int_equal(mla_f32_to_e4m3fnuz(-1e9f), 0xFF);
    assert_int_equal(mla_f32_to_e4m3fnuz(NAN), 0x80);
    assert_int_equal(mla_f32_to_e4m3fnuz(INFINITY), 0x80); /* header: inf -> the NaN */
    assert_int_equal(mla_f32_to_e4m3fnuz(-0.0f), 0x00);
    assert_int_equal(mla_f32_to_e4m3fnuz(-ldexpf(1.0f, -12)), 0x00); /* underflow: no -0 */
    assert_true(mla_e4m3fnuz_to_f32(0x01) == ldexpf(1.0f, -10));
    assert_true(isnan(mla_e4m3fnuz_to_f32(0x80)));
    for (int i = 0; i < 0x7F; i++) /* same bits, half the fn value */
        assert_true(mla_e4m3fnuz_to_f32((uint8_t)i) * 2 == mla_e4m3fn_to_f32((uint8_t)i));
    /* e5m2 */
    assert_int_equal(mla_f32_to_e5m2(1.0f), 0x3C);
    assert_int_equal(mla_f32_to_e5m2(57344.0f), 0x7B);
    assert_int_equal(mla_f32_to_e5m2(61440.0f), 0x7B); /* tie 57344|65536 -> even, saturated */
    assert_int_equal(mla_f32_to_e5m2(1e9f), 0x7B);
    assert_int_equal(mla_f32_to_e5m2(INFINITY), 0x7B);
    assert_int_equal(mla_f32_to_e5m2(-INFINITY), 0xFB);
    assert_int_equal(mla_f32_to_e5m2(NAN), 0x7F);
    assert_int_equal(mla_f32_to_e5m2(-0.0f), 0x80);
    assert_true(mla_e5m2_to_f32(0x01) == ldexpf(1.0f, -16));
    assert_true(isinf(mla_e5m2_to_f32(0x7C)) && mla_e5m2_to_f32(0xFC) < 0);
}

/* Every bf16 code round-trips through f32; NaNs stay quiet NaNs with their sign. */
static void test_bf16_all_codes(void **state)
{
    (void)state;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t b = (uint16_t)i;
        float v = mla_bf16_to_f32(b);
        assert_int_equal(f32_bits(v), i << 16);
        uint16_t back = mla_f32_to_bf16(v);
        if (isnan(v)) {
            if ((back & 0x7F80) != 0x7F80 || !(back & 0x0040) || (back & 0x8000) != (b & 0x8000))
                fail_msg("bf16 NaN 0x%04X -> 0x%04X", b, back);
            continue;
        }
        if (back != b) fail_msg("bf16 0x%04X -> %a -> 0x%04X", b, (double)v, back);
        double r = mla_round_bf16(v);
        if (r != v || !signbit(r) != !signbit(v)) fail_msg("mla_round_bf16 moved 0x%04X", b);
        uint16_t viastore;
        mla_store_f64(MLA_BF16, &viastore, v);
        assert_int_equal(viastore, b);
    }
}

static void test_f16_all_codes(void **state)
{
    (void)state;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float v = mla_f16_to_f32(h);
        uint16_t back = mla_f32_to_f16(v);
        if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF)) {
            assert_true(isnan(v));
            if ((back & 0x7C00) != 0x7C00 || !(back & 0x0200) || (back & 0x8000) != (h & 0x8000))
                fail_msg("f16 NaN 0x%04X -> 0x%04X", h, back);
            continue;
        }
        if (back != h) fail_msg("f16 0x%04X -> %a -> 0x%04X", h, (double)v, back);
        assert_true(mla_round_f16(v) == v);
    }
    assert_int_equal(mla_f32_to_f16(1.0f), 0x3C00);
    assert_int_equal(mla_f32_to_f16(65504.0f), 0x7BFF);
    assert_int_equal(mla_f32_to_f16(65519.0f), 0x7BFF);
    assert_int_equal(mla_f32_to_f16(65520.0f), 0x7C00); /* tie at max + half ulp -> inf */
    assert_int_equal(mla_f32_to_f16(-1e9f), 0xFC00);
    assert_int_equal(mla_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
    assert_int_equal(mla_f32_to_f16(ldexpf(1.0f, -25)), 0x0000); /* tie -> even 0 */
    assert_int_equal(mla_f32_to_f16(ldexpf(1.5f, -25)), 0x0001);
    assert_int_equal(mla_f32_to_f16(ldexpf(3.0f, -25)), 0x0002); /* tie 1|2 -> 2 */
    assert_int_equal(mla_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(mla_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3C00);           /* tie */
    assert_int_equal(mla_f32_to_f16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3C02);       /* tie */
    assert_true(mla_round_f16(1.0 + ldexp(1.0, -11) + ldexp(1.0, -40)) == 1.0 + ldexp(1.0, -10));
    assert_true(isinf(mla_round_f16(65520.0)) && mla_round_f16(65519.999) == 65504.0);
}

static void test_bf16_known(void **state)
{
    (void)state;
    assert_int_equal(mla_f32_to_bf16(1.0f), 0x3F80);
    assert_int_equal(mla_f32_to_bf16(f32_from_bits(0x3F808000)), 0x3F80); /* tie -> even */
    assert_int_equal(mla_f32_to_bf16(f32_from_bits(0x3F818000)), 0x3F82); /* tie -> even */
    assert_int_equal(mla_f32_to_bf16(f32_from_bits(0x3F808001)), 0x3F81);
    assert_int_equal(mla_f32_to_bf16(f32_from_bits(0x3F807FFF)), 0x3F80);
    assert_int_equal(mla_f32_to_bf16(FLT_MAX), 0x7F80);
    assert_int_equal(mla_f32_to_bf16(-FLT_MAX), 0xFF80);
    assert_int_equal(mla_f32_to_bf16(INFINITY), 0x7F80);
    assert_int_equal(mla_f32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(mla_f32_to_bf16(f32_from_bits(0x00008000)), 0x0000); /* subnormal tie */
    assert_int_equal(mla_f32_to_bf16(f32_from_bits(0x00018000)), 0x0002);
    uint16_t qn = mla_f32_to_bf16(f32_from_bits(0x7F800001)); /* signalling NaN */
    assert_true((qn & 0x7FC0) == 0x7FC0);
    assert_int_equal(mla_f32_to_bf16(f32_from_bits(0xFFC00000)), 0xFFC0);
    /* the f32 path and the double path agree */
    for (uint32_t u = 0x3F800000; u < 0x3F800000 + 70000; u += 7) {
        float x = f32_from_bits(u);
        uint16_t viastore;
        mla_store_f64(MLA_BF16, &viastore, x);
        assert_int_equal(viastore, mla_f32_to_bf16(x));
        assert_true(mla_round_bf16(x) == mla_bf16_to_f32(viastore));
    }
}

/* mla_round_* round once from the double: a value just above a bf16 tie must not be pulled
 * onto the tie by an f32 detour. */
static void test_round_double_ties(void **state)
{
    (void)state;
    double one = 1.0, q = ldexp(1.0, -7); /* bf16 ulp at 1 */
    assert_true(mla_round_bf16(one + q / 2) == one);                          /* tie, even */
    assert_true(mla_round_bf16(one + 3 * q / 2) == one + 2 * q);              /* tie, even */
    assert_true(mla_round_bf16(one + q / 2 + ldexp(1.0, -40)) == one + q);    /* above tie */
    assert_true(mla_round_bf16(one + q / 2 - ldexp(1.0, -40)) == one);        /* below tie */
    /* the f32 detour would give 1.0 here: */
    assert_true((double)mla_bf16_to_f32(mla_f32_to_bf16((float)(one + q / 2 + ldexp(1.0, -40)))) ==
                one);
    assert_true(mla_round_bf16(-(one + q / 2 + ldexp(1.0, -40))) == -(one + q));
    assert_true(signbit(mla_round_bf16(-ldexp(1.0, -140))) && mla_round_bf16(-ldexp(1.0, -140)) == 0);
    assert_true(mla_round_bf16(ldexp(1.0, -133)) == ldexp(1.0, -133)); /* min bf16 subnormal */
    assert_true(mla_round_bf16(ldexp(1.0, -134)) == 0.0);              /* tie -> 0 */
    assert_true(mla_round_bf16(ldexp(1.0, -134) * 1.0000001) == ldexp(1.0, -133));
    assert_true(isinf(mla_round_bf16(1e300)));
    assert_true(isnan(mla_round_bf16(NAN)));
    assert_true(mla_round_bf16(0x1.FEp127) == 0x1.FEp127);
    assert_true(isinf(mla_round_bf16(0x1.FFp127)));                  /* tie past max -> inf */
    assert_true(mla_round_bf16(0x1.FEFFFFFFp127) == 0x1.FEp127);
    /* f32 */
    assert_true(mla_round_f32(1.0 + ldexp(1.0, -24)) == 1.0);
    assert_true(mla_round_f32(1.0 + ldexp(1.0, -24) + ldexp(1.0, -52)) == 1.0 + ldexp(1.0, -23));
    assert_true(mla_round_f32(1.0 + 3 * ldexp(1.0, -24)) == 1.0 + ldexp(1.0, -22));
    assert_true(mla_round_f32((double)FLT_MAX + ldexp(1.0, 103)) == INFINITY); /* tie */
    assert_true(mla_round_f32((double)FLT_MAX + ldexp(1.0, 102)) == FLT_MAX);
    assert_true(mla_round_f32(ldexp(1.0, -150)) == 0.0);
    assert_true(mla_round_f32(ldexp(3.0, -151)) == ldexp(1.0, -149));
    for (int i = 0; i < 100000; i++) { /* agrees with the compiler's double->float */
        double x = ldexp(1.0 + i * 0.0000123457, (i % 278) - 150) * ((i & 1) ? -1 : 1);
        if (mla_round_f32(x) != (double)(float)x) fail_msg("round_f32(%a)", x);
    }
}

static void test_ue8m0(void **state)
{
    (void)state;
    assert_int_equal(mla_f32_to_ue8m0_ceil(1.0f), 127);
    assert_int_equal(mla_f32_to_ue8m0_floor(1.0f), 127);
    assert_int_equal(mla_f32_to_ue8m0_ceil(1.5f), 128);
    assert_int_equal(mla_f32_to_ue8m0_floor(1.5f), 127);
    assert_int_equal(mla_f32_to_ue8m0_ceil(nextafterf(1.0f, 2.0f)), 128);
    assert_int_equal(mla_f32_to_ue8m0_floor(nextafterf(2.0f, 0.0f)), 127);
    assert_int_equal(mla_f32_to_ue8m0_ceil(ldexpf(1.0f, -127)), 0);
    assert_int_equal(mla_f32_to_ue8m0_floor(ldexpf(1.0f, -127)), 0);
    assert_int_equal(mla_f32_to_ue8m0_ceil(ldexpf(1.0f, 127)), 254);
    assert_int_equal(mla_f32_to_ue8m0_floor(ldexpf(1.0f, 127)), 254);
    assert_int_equal(mla_f32_to_ue8m0_ceil(ldexpf(1.0f, -149)), 0); /* below range: clamp */
    assert_int_equal(mla_f32_to_ue8m0_ceil(ldexpf(1.5f, -127)), 1);
    assert_int_equal(mla_f32_to_ue8m0_ceil(0.0f), 0);
    assert_int_equal(mla_f32_to_ue8m0_floor(-3.0f), 0);
    assert_int_equal(mla_f32_to_ue8m0_ceil(NAN), 0xFF);
    assert_int_equal(mla_f32_to_ue8m0_ceil(FLT_MAX), 254); /* saturates */
    assert_true(mla_ue8m0_to_f32(127) == 1.0f);
    assert_true(mla_ue8m0_to_f32(0) == ldexpf(1.0f, -127));
    assert_true(mla_ue8m0_to_f32(254) == ldexpf(1.0f, 127));
    assert_true(isnan(mla_ue8m0_to_f32(255)));
    for (int b = 0; b < 255; b++) {
        float v = mla_ue8m0_to_f32((uint8_t)b);
        assert_int_equal(mla_f32_to_ue8m0_ceil(v), b);
        assert_int_equal(mla_f32_to_ue8m0_floor(v), b);
    }
}

static void test_dtype_table(void **state)
{
    (void)state;
    static const size_t sizes[MLA_DTYPE_COUNT] = {8, 4, 2, 2, 1, 1, 1, 1, 4, 8, 1};
    for (int i = 0; i < MLA_DTYPE_COUNT; i++) {
        mla_dtype t = (mla_dtype)i, back = MLA_DTYPE_COUNT;
        assert_int_equal(mla_dtype_size(t), sizes[i]);
        assert_int_equal(mla_dtype_from_name(mla_dtype_name(t), &back), 0);
        assert_int_equal(back, t);
    }
    assert_string_equal(mla_dtype_name(MLA_E4M3FNUZ), "e4m3fnuz");
    mla_dtype d;
    assert_int_equal(mla_dtype_from_name("fp8", &d), -1);
    assert_int_equal(mla_dtype_from_name("", &d), -1);
    assert_int_equal(mla_dtype_from_name(NULL, &d), -1);
    assert_string_equal(mla_dtype_name(MLA_DTYPE_COUNT), "?");
    assert_int_equal(mla_dtype_size(MLA_DTYPE_COUNT), 0);
    assert_true(mla_dtype_is_packed_float(MLA_BF16) && mla_dtype_is_packed_float(MLA_UE8M0) &&
                mla_dtype_is_packed_float(MLA_E5M2));
    assert_false(mla_dtype_is_packed_float(MLA_F32) || mla_dtype_is_packed_float(MLA_U8) ||
                 mla_dtype_is_packed_float(MLA_I32));
}

static void test_load_store(void **state)
{
    (void)state;
    unsigned char buf[8];
    /* values exact in every float type */
    static const double vals[] = {0.0, 1.0, -2.0, 0.5, 3.0, -0.25};
    for (int i = 0; i < MLA_DTYPE_COUNT; i++) {
        mla_dtype t = (mla_dtype)i;
        for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
            double v = vals[k];
            if (t == MLA_UE8M0 && !(v > 0 && v == ldexp(1.0, ilogb(v)))) continue;
            if (t == MLA_U8 && (v < 0 || v != floor(v))) continue;
            if ((t == MLA_I32 || t == MLA_I64) && v != floor(v)) continue;
            memset(buf, 0xAA, sizeof buf);
            mla_store_f64(t, buf, v);
            if (mla_load_f64(t, buf) != v)
                fail_msg("%s: store/load %g -> %g", mla_dtype_name(t), v, mla_load_f64(t, buf));
            for (size_t j = mla_dtype_size(t); j < sizeof buf; j++) assert_int_equal(buf[j], 0xAA);
        }
    }
    /* rounding and saturation on store */
    mla_store_f64(MLA_F32, buf, 1.0 + ldexp(1.0, -24) + ldexp(1.0, -50));
    assert_true(mla_load_f64(MLA_F32, buf) == 1.0 + ldexp(1.0, -23));
    mla_store_f64(MLA_E4M3FN, buf, 1e6);
    assert_int_equal(buf[0], 0x7E);
    mla_store_f64(MLA_E4M3FN, buf, 464.0 + ldexp(1.0, -30)); /* above the tie: still saturates */
    assert_int_equal(buf[0], 0x7E);
    mla_store_f64(MLA_E4M3FN, buf, 1.0625 + ldexp(1.0, -40)); /* above tie 1|1.125 */
    assert_int_equal(buf[0], 0x39);
    mla_store_f64(MLA_UE8M0, buf, 1.0 + ldexp(1.0, -40)); /* ceil on the double */
    assert_int_equal(buf[0], 128);
    mla_store_f64(MLA_I32, buf, 2.5);
    assert_true(mla_load_f64(MLA_I32, buf) == 2.0);
    mla_store_f64(MLA_I32, buf, -3.5);
    assert_true(mla_load_f64(MLA_I32, buf) == -4.0);
    mla_store_f64(MLA_I32, buf, 1e20);
    assert_true(mla_load_f64(MLA_I32, buf) == 2147483647.0);
    mla_store_f64(MLA_I64, buf, -1e30);
    int64_t i64;
    memcpy(&i64, buf, sizeof i64);
    assert_true(i64 == INT64_MIN);
    mla_store_f64(MLA_I64, buf, 9007199254740993.0 * 2); /* exact even integer */
    memcpy(&i64, buf, sizeof i64);
    assert_true(i64 == INT64_C(18014398509481984));
    mla_store_f64(MLA_U8, buf, 300.0);
    assert_int_equal(buf[0], 255);
    mla_store_f64(MLA_U8, buf, -5.0);
    assert_int_equal(buf[0], 0);
    mla_store_f64(MLA_U8, buf, NAN);
    assert_int_equal(buf[0], 0);
    mla_store_f64(MLA_F16, buf, 1e6);
    assert_true(isinf(mla_load_f64(MLA_F16, buf)));
    mla_store_f64(MLA_F64, buf, -0.1);
    assert_true(mla_load_f64(MLA_F64, buf) == -0.1);
}

static void test_ulp_distance(void **state)
{
    (void)state;
    assert_int_equal(mla_ulp_distance(MLA_F32, 1.0, nextafterf(1.0f, 2.0f)), 1);
    assert_int_equal(mla_ulp_distance(MLA_F32, 1.0, 1.0 + ldexp(1.0, -30)), 0); /* same f32 */
    assert_int_equal(mla_ulp_distance(MLA_F32, 0.0, -0.0), 0);
    assert_int_equal(mla_ulp_distance(MLA_F32, -ldexp(1.0, -149), ldexp(1.0, -149)), 2);
    assert_int_equal(mla_ulp_distance(MLA_F32, 2.0, 1.0), 1u << 23);
    assert_int_equal(mla_ulp_distance(MLA_F32, FLT_MAX, INFINITY), 1);
    assert_true(mla_ulp_distance(MLA_F32, NAN, 1.0) == UINT64_MAX);
    assert_true(mla_ulp_distance(MLA_F64, 1.0, NAN) == UINT64_MAX);
    assert_int_equal(mla_ulp_distance(MLA_F64, 1.0, nextafter(1.0, 0.0)), 1);
    assert_int_equal(mla_ulp_distance(MLA_F64, -0.0, 0.0), 0);
    assert_true(mla_ulp_distance(MLA_F64, -INFINITY, INFINITY) == 2 * UINT64_C(0x7FF0000000000000));
    assert_int_equal(mla_ulp_distance(MLA_BF16, 1.0, 1.0 + ldexp(1.0, -7)), 1);
    assert_int_equal(mla_ulp_distance(MLA_BF16, 1.0, 2.0), 128);
    assert_int_equal(mla_ulp_distance(MLA_BF16, -1.0, 1.0), 2 * 0x3F80);
    assert_int_equal(mla_ulp_distance(MLA_F16, 1.0, 1.0 + ldexp(1.0, -10)), 1);
    assert_int_equal(mla_ulp_distance(MLA_E4M3FN, 448.0, -448.0), 2 * 0x7E);
    assert_int_equal(mla_ulp_distance(MLA_E4M3FN, 448.0, 1e9), 0); /* saturation */
    assert_int_equal(mla_ulp_distance(MLA_E4M3FN, 1.0, 1.125), 1);
    assert_int_equal(mla_ulp_distance(MLA_E4M3FN, -0.0, 0.0), 0);
    assert_int_equal(mla_ulp_distance(MLA_E4M3FNUZ, 1.0, -1.0), 2 * 0x40);
    assert_true(mla_ulp_distance(MLA_E4M3FNUZ, INFINITY, 1.0) == UINT64_MAX); /* inf is NaN */
    assert_int_equal(mla_ulp_distance(MLA_E5M2, 57344.0, INFINITY), 0);
    assert_int_equal(mla_ulp_distance(MLA_UE8M0, 1.0, 8.0), 3);
    assert_int_equal(mla_ulp_distance(MLA_I32, 5.0, -5.0), 10);
    assert_int_equal(mla_ulp_distance(MLA_U8, 5.0, 7.0), 2);
    assert_true(mla_ulp_distance(MLA_I64, -9.3e18, 9.3e18) == UINT64_MAX); /* saturated ends */
    /* symmetric, and agrees with the code distance on every finite e4m3fn pair of one sign */
    for (int a = 0; a < 0x7F; a++)
        for (int b = 0; b < 0x7F; b++) {
            uint64_t d = mla_ulp_distance(MLA_E4M3FN, mla_e4m3fn_to_f32((uint8_t)a),
                                          mla_e4m3fn_to_f32((uint8_t)b));
            assert_int_equal(d, (uint64_t)(a > b ? a - b : b - a));
        }
}

/* Oracle: the nearest finite code by exhaustive search (ties to the even code), saturating. */
static uint8_t brute_encode(const fp8_case *c, float x)
{
    double a = fabs((double)x);
    int best = 0;
    for (int i = 1; i <= c->max_code; i++) {
        double di = fabs((double)c->dec((uint8_t)i) - a), db = fabs((double)c->dec((uint8_t)best) - a);
        if (di < db || (di == db && (i & 1) == 0)) best = i;
    }
    if (best == 0 && c->t == MLA_E4M3FNUZ) return 0;
    return (uint8_t)(best | (signbit(x) ? 0x80 : 0));
}

/* Sampled f32 values over and beyond each format's range agree with the brute-force oracle. */
static void test_fp8_bruteforce(void **state)
{
    (void)state;
    uint64_t rng = 0x243F6A8885A308D3u;
    for (int n = 0; n < 30000; n++) {
        rng = rng * 6364136223846793005u + 1442695040888963407u;
        uint32_t mant = (uint32_t)(rng >> 40) & 0xFFFFFF; /* 24 random bits */
        int e = (int)((rng >> 20) % 44) - 24;            /* 2^-24 .. 2^19 */
        float x = ldexpf((float)(mant | 0x800000), e - 23);
        if (n & 1) x = -x;
        if (n % 7 == 0) x = (float)(int)(x * 16) / 16; /* short mantissas hit exact ties */
        for (size_t k = 0; k < NFP8; k++) {
            const fp8_case *c = &FP8[k];
            uint8_t want = brute_encode(c, x), got = c->enc(x);
            if (want != got) fail_msg("%s(%a): 0x%02X, oracle 0x%02X", c->name, (double)x, got, want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_all_codes),   cmocka_unit_test(test_fp8_monotone),
        cmocka_unit_test(test_fp8_ties_to_even), cmocka_unit_test(test_fp8_edges),
        cmocka_unit_test(test_bf16_all_codes),  cmocka_unit_test(test_f16_all_codes),
        cmocka_unit_test(test_bf16_known),      cmocka_unit_test(test_round_double_ties),
        cmocka_unit_test(test_ue8m0),           cmocka_unit_test(test_dtype_table),
        cmocka_unit_test(test_load_store),      cmocka_unit_test(test_ulp_distance),
        cmocka_unit_test(test_fp8_bruteforce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
