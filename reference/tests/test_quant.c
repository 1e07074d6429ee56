/* test_quant.c: FP8 storage formats of quant.h (per-tensor KV, fp8_ds_mla rows, 128x128 block
 * weights, 1x128 activations), checked against hand-computed bytes and error bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mla/kv.h"
#include "mla/quant.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

/* Deterministic uniform in [-1, 1). */
static float urand(void)
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (float)((double)(rng_state >> 11) / 4503599627370496.0 - 1.0);
}

static float le_f32(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* Half the e4m3fn spacing at |y| (y already in code units, |y| <= 448). */
static double e4m3fn_half_ulp(double y)
{
    int e = y == 0 ? -6 : ilogb(y);
    if (e < -6) e = -6;
    return ldexp(1.0, e - 3) / 2;
}

static int fp8_is_nan(mla_dtype t, uint8_t b)
{
    if (t == MLA_E4M3FN) return (b & 0x7F) == 0x7F;
    if (t == MLA_E4M3FNUZ) return b == 0x80;
    return (b & 0x7C) == 0x7C && (b & 3);
}

static void test_fp8_dispatch(void **state)
{
    (void)state;
    assert_true(mla_fp8_max(MLA_E4M3FN) == 448.0f);
    assert_true(mla_fp8_max(MLA_E4M3FNUZ) == 240.0f);
    assert_true(mla_fp8_max(MLA_E5M2) == 57344.0f);
    assert_true(mla_fp8_max(MLA_BF16) == 0.0f);
    static const mla_dtype ts[] = {MLA_E4M3FN, MLA_E4M3FNUZ, MLA_E5M2};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(mla_fp8_encode(ts[k], mla_fp8_max(ts[k])) & 0x80, 0);
        assert_true(mla_fp8_decode(ts[k], mla_fp8_encode(ts[k], mla_fp8_max(ts[k]))) ==
                    mla_fp8_max(ts[k]));
        assert_true(mla_fp8_decode(ts[k], mla_fp8_encode(ts[k], 1e30f)) == mla_fp8_max(ts[k]));
    }
    assert_int_equal(mla_fp8_encode(MLA_E4M3FN, 3.0f), mla_f32_to_e4m3fn(3.0f));
    assert_int_equal(mla_fp8_encode(MLA_E4M3FNUZ, 3.0f), mla_f32_to_e4m3fnuz(3.0f));
    assert_int_equal(mla_fp8_encode(MLA_E5M2, 3.0f), mla_f32_to_e5m2(3.0f));
    assert_true(isnan(mla_fp8_decode(MLA_F32, 0)));
}

/* code = sat(x / s): the decoded code is within half an fp8 ulp of the f32 quotient, and
 * dequant is exactly decode(code) * s rounded once to f32. */
static void test_kv_per_tensor_round_trip(void **state)
{
    (void)state;
    enum { N = 4096 };
    float x[N], back[N];
    uint8_t code[N];
    const float scale = 0.0173f;
    for (int i = 0; i < N; i++) x[i] = urand() * 7.0f * (i % 5 == 0 ? 0.001f : 1.0f);
    mla_kv_quant_per_tensor(MLA_E4M3FN, x, N, scale, code);
    mla_kv_dequant_per_tensor(MLA_E4M3FN, code, N, scale, back);
    for (int i = 0; i < N; i++) {
        double y = (double)(x[i] / scale); /* the f32 quotient the writer converts */
        assert_true(fabs(y) <= 448.0);
        double v = mla_e4m3fn_to_f32(code[i]);
        if (fabs(v - y) > e4m3fn_half_ulp(fabs(y)))
            fail_msg("x=%a: code 0x%02X (%g) vs x/s=%g", (double)x[i], code[i], v, y);
        assert_true(back[i] == (float)(v * (double)scale)); /* v*s exact in double */
        /* end to end: half ulp in scaled units plus the two f32 roundings */
        double bound = e4m3fn_half_ulp(fabs(y)) * scale + ldexp(fabs(x[i]) + fabs(back[i]), -23);
        if (fabs((double)back[i] - x[i]) > bound)
            fail_msg("x=%a back=%a bound %g", (double)x[i], (double)back[i], bound);
    }
    /* fnuz and e5m2 go through the same path */
    float one = 1.0f;
    uint8_t c;
    mla_kv_quant_per_tensor(MLA_E4M3FNUZ, &one, 1, 0.5f, &c);
    assert_int_equal(c, 0x48); /* 2.0 in fnuz: exponent 9 */
    mla_kv_quant_per_tensor(MLA_E5M2, &one, 1, 0.5f, &c);
    assert_int_equal(c, 0x40);
}

static void test_kv_saturation_never_nan(void **state)
{
    (void)state;
    float x[] = {1e9f, -1e9f, 1e6f, -3e5f, FLT_MAX, -FLT_MAX, 3.0e38f, INFINITY, -INFINITY};
    enum { N = sizeof x / sizeof x[0] };
    uint8_t code[N];
    float back[N];
    static const mla_dtype ts[] = {MLA_E4M3FN, MLA_E4M3FNUZ, MLA_E5M2};
    for (int k = 0; k < 3; k++) {
        mla_kv_quant_per_tensor(ts[k], x, N, 0.5f, code);
        mla_kv_dequant_per_tensor(ts[k], code, N, 0.5f, back);
        for (int i = 0; i < N; i++) {
            if (ts[k] == MLA_E4M3FNUZ && isinf(x[i] / 0.5f)) { /* fnuz: inf is the NaN code */
                assert_int_equal(code[i], 0x80);
                continue;
            }
            if (fp8_is_nan(ts[k], code[i]))
                fail_msg("%s: x=%g gave NaN code 0x%02X", mla_dtype_name(ts[k]), (double)x[i],
                         code[i]);
            assert_true(back[i] == copysignf(mla_fp8_max(ts[k]) * 0.5f, x[i]));
        }
    }
    float y[] = {449.0f, -500.0f, 464.0f, 479.9f};
    uint8_t cy[4];
    mla_kv_quant_per_tensor(MLA_E4M3FN, y, 4, 1.0f, cy);
    assert_int_equal(cy[0], 0x7E);
    assert_int_equal(cy[1], 0xFE);
    assert_int_equal(cy[2], 0x7E);
    assert_int_equal(cy[3], 0x7E);
    float nan_in = NAN;
    uint8_t c;
    mla_kv_quant_per_tensor(MLA_E4M3FN, &nan_in, 1, 1.0f, &c);
    assert_int_equal(c, 0x7F);
}

/* Known values: tile amaxes 448, 224, 0, 300 -> scales 1, 0.5, 2^-13 (POW2) / FLT_MIN (RAW),
 * 1 (POW2) / 300/448 (RAW). */
static void fill_known_row(float *c_kv, float *k_pe)
{
    for (int i = 0; i < MLA_DS_NOPE; i++) c_kv[i] = 0.0f;
    c_kv[0] = 1.0f;
    c_kv[1] = -448.0f;
    c_kv[2] = 3.5f;
    c_kv[128] = 224.0f;
    c_kv[129] = 1.0f;
    c_kv[384] = 300.0f;
    c_kv[385] = -0.75f;
    for (int i = 0; i < MLA_DS_ROPE; i++) k_pe[i] = (float)(i - 32) * 0.25f;
    k_pe[0] = 1.0f;
    k_pe[1] = 1.0f + ldexpf(1.0f, -7) + ldexpf(1.0f, -8); /* 1.5 bf16 ulps: tie -> even 0x3F82 */
}

static void test_ds_row_layout(void **state)
{
    (void)state;
    float c_kv[MLA_DS_NOPE], k_pe[MLA_DS_ROPE], c_back[MLA_DS_NOPE], pe_back[MLA_DS_ROPE];
    uint8_t row[MLA_DS_ROW_BYTES + 8];
    assert_int_equal(mla_ds_row_bytes(MLA_DS_NOPE, MLA_DS_ROPE), MLA_DS_ROW_BYTES);
    fill_known_row(c_kv, k_pe);
    for (int rule = 0; rule < 2; rule++) {
        memset(row, 0xCD, sizeof row);
        mla_ds_row_pack(c_kv, k_pe, (mla_ds_scale_rule)rule, row);
        for (int i = MLA_DS_ROW_BYTES; i < (int)sizeof row; i++) assert_int_equal(row[i], 0xCD);
        /* scales at [512, 528), little-endian f32 */
        assert_true(le_f32(row + 512) == 1.0f);
        assert_int_equal(row[512], 0x00);
        assert_int_equal(row[515], 0x3F);
        assert_int_equal(row[514], 0x80);
        assert_true(le_f32(row + 516) == 0.5f);
        if (rule == MLA_DS_SCALE_POW2) {
            assert_true(le_f32(row + 520) == ldexpf(1.0f, -13)); /* 2^ceil(log2 1e-4) */
            assert_true(le_f32(row + 524) == 1.0f);
        } else {
            assert_true(le_f32(row + 520) == FLT_MIN);
            assert_true(le_f32(row + 524) == 300.0f / 448.0f);
        }
        /* codes */
        assert_int_equal(row[0], 0x38);   /* 1.0 / 1 */
        assert_int_equal(row[1], 0xFE);   /* -448 */
        assert_int_equal(row[2], 0x46);   /* 3.5 = 1.75 * 2 */
        assert_int_equal(row[128], 0x7E); /* 224 / 0.5 = 448 */
        assert_int_equal(row[129], 0x40); /* 1 / 0.5 = 2 */
        assert_int_equal(row[256], 0x00);
        assert_int_equal(row[384], rule == MLA_DS_SCALE_POW2 ? mla_f32_to_e4m3fn(300.0f) : 0x7E);
        /* k_pe bf16 at [528, 656) */
        assert_int_equal(row[528], 0x80);
        assert_int_equal(row[529], 0x3F);
        assert_int_equal(row[530], 0x82);
        assert_int_equal(row[531], 0x3F);
        mla_ds_row_unpack(row, c_back, pe_back);
        for (int i = 0; i < MLA_DS_NOPE; i++) {
            float s = le_f32(row + 512 + 4 * (i / 128));
            assert_true(c_back[i] == mla_e4m3fn_to_f32(row[i]) * s);
        }
        assert_true(c_back[0] == 1.0f && c_back[1] == -448.0f && c_back[128] == 224.0f);
        assert_true(c_back[2] == 3.5f && c_back[129] == 1.0f);
        for (int i = 0; i < MLA_DS_ROPE; i++)
            assert_true(pe_back[i] == mla_bf16_to_f32(mla_f32_to_bf16(k_pe[i])));
        assert_true(pe_back[1] == 1.0f + ldexpf(1.0f, -6));
    }
}

static void test_ds_zero_tile(void **state)
{
    (void)state;
    float c_kv[MLA_DS_NOPE] = {0}, k_pe[MLA_DS_ROPE] = {0}, c_back[MLA_DS_NOPE], pe_back[MLA_DS_ROPE];
    uint8_t row[MLA_DS_ROW_BYTES];
    for (int rule = 0; rule < 2; rule++) {
        mla_ds_row_pack(c_kv, k_pe, (mla_ds_scale_rule)rule, row);
        for (int i = 0; i < MLA_DS_NOPE; i++) assert_int_equal(row[i], 0);
        for (int t = 0; t < 4; t++) {
            float s = le_f32(row + 512 + 4 * t);
            assert_true(s > 0 && isfinite(s));
        }
        mla_ds_row_unpack(row, c_back, pe_back);
        for (int i = 0; i < MLA_DS_NOPE; i++) assert_true(c_back[i] == 0.0f && !signbit(c_back[i]));
        for (int i = 0; i < MLA_DS_ROPE; i++) assert_true(pe_back[i] == 0.0f);
    }
}

/* amax = 448 * 2^k: the POW2 scale is exactly 2^k (ceil of an exact log2 stays put), and the
 * amax element encodes to the max code; RAW gives the same here. */
static void test_ds_pow2_amax(void **state)
{
    (void)state;
    float c_kv[MLA_DS_NOPE], k_pe[MLA_DS_ROPE] = {0};
    uint8_t row[MLA_DS_ROW_BYTES];
    for (int k = -13; k <= 20; k += 3) { /* 2^-13 > 1e-4: the floor stays out */
        for (int i = 0; i < MLA_DS_NOPE; i++) c_kv[i] = urand() * ldexpf(448.0f, k);
        for (int t = 0; t < 4; t++) c_kv[t * 128 + 7] = (t & 1 ? -1 : 1) * ldexpf(448.0f, k);
        for (int rule = 0; rule < 2; rule++) {
            mla_ds_row_pack(c_kv, k_pe, (mla_ds_scale_rule)rule, row);
            for (int t = 0; t < 4; t++) {
                if (le_f32(row + 512 + 4 * t) != ldexpf(1.0f, k))
                    fail_msg("k=%d rule %d tile %d: scale %a", k, rule, t,
                             (double)le_f32(row + 512 + 4 * t));
                assert_int_equal(row[t * 128 + 7], (t & 1) ? 0xFE : 0x7E);
            }
        }
    }
    /* just above a power of two: POW2 rounds the scale up, RAW keeps it */
    for (int i = 0; i < MLA_DS_NOPE; i++) c_kv[i] = 0.0f;
    c_kv[0] = nextafterf(448.0f, 1000.0f);
    mla_ds_row_pack(c_kv, k_pe, MLA_DS_SCALE_POW2, row);
    assert_true(le_f32(row + 512) == 2.0f);
    assert_int_equal(row[0], 0x76); /* 224.00002 -> 224 */
    mla_ds_row_pack(c_kv, k_pe, MLA_DS_SCALE_RAW, row);
    assert_true(le_f32(row + 512) == c_kv[0] / 448.0f);
}

/* Generalized rows: sizes, partial last tile, round trip against the per-element bound. */
static void test_ds_row_n(void **state)
{
    (void)state;
    assert_int_equal(mla_ds_row_bytes(256, 16), 256 + 8 + 32);
    assert_int_equal(mla_ds_row_bytes(200, 8), 200 + 8 + 16);
    assert_int_equal(mla_ds_row_bytes(128, 0), 132);
    assert_int_equal(mla_ds_row_bytes(0, 16), 0);
    assert_int_equal(mla_ds_row_bytes(16, -1), 0);
    static const int shapes[][2] = {{256, 16}, {200, 8}, {512, 64}, {1, 0}};
    for (int k = 0; k < 4; k++) {
        int nope = shapes[k][0], rope = shapes[k][1];
        size_t nb = mla_ds_row_bytes(nope, rope);
        float *c = malloc(sizeof(float) * nope), *cb = malloc(sizeof(float) * nope);
        float *p = malloc(sizeof(float) * (rope + 1)), *pb = malloc(sizeof(float) * (rope + 1));
        uint8_t *row = malloc(nb + 4), *row2 = malloc(nb + 4);
        assert_non_null(c && cb && p && pb && row && row2);
        for (int i = 0; i < nope; i++) c[i] = urand() * 3.0f;
        for (int i = 0; i < rope; i++) p[i] = urand();
        memset(row + nb, 0xEE, 4);
        assert_int_equal(mla_ds_row_pack_n(nope, rope, c, p, MLA_DS_SCALE_POW2, row), MLA_OK);
        for (int i = 0; i < 4; i++) assert_int_equal(row[nb + i], 0xEE);
        assert_int_equal(mla_ds_row_unpack_n(nope, rope, row, cb, pb), MLA_OK);
        for (int i = 0; i < nope; i++) {
            float s = le_f32(row + nope + 4 * (i / 128));
            float amax = 0.0f;
            for (int j = (i / 128) * 128; j < nope && j < (i / 128 + 1) * 128; j++)
                amax = fmaxf(amax, fabsf(c[j]));
            assert_true(s >= amax / 448.0f && s < 2.0f * fmaxf(amax / 448.0f, 1e-4f));
            double y = (double)(c[i] / s);
            assert_true(fabs(mla_e4m3fn_to_f32(row[i]) - y) <= e4m3fn_half_ulp(fabs(y)));
            assert_true(cb[i] == mla_e4m3fn_to_f32(row[i]) * s);
        }
        for (int i = 0; i < rope; i++) assert_true(pb[i] == mla_bf16_to_f32(mla_f32_to_bf16(p[i])));
        if (nope == 512 && rope == 64) { /* the fixed-size entry points are the same bytes */
            mla_ds_row_pack(c, p, MLA_DS_SCALE_POW2, row2);
            assert_memory_equal(row, row2, nb);
        }
        free(c), free(cb), free(p), free(pb), free(row), free(row2);
    }
    uint8_t row[16];
    float v[4] = {0};
    assert_int_equal(mla_ds_row_pack_n(0, 0, v, v, MLA_DS_SCALE_RAW, row), MLA_ERR_INVALID);
    assert_true(strlen(mla_last_error()) > 0);
    assert_int_equal(mla_ds_row_pack_n(4, 2, v, NULL, MLA_DS_SCALE_RAW, row), MLA_ERR_INVALID);
    assert_int_equal(mla_ds_row_pack_n(4, 0, v, NULL, (mla_ds_scale_rule)7, row), MLA_ERR_INVALID);
    assert_int_equal(mla_ds_row_unpack_n(4, -1, row, v, v), MLA_ERR_INVALID);
    assert_int_equal(mla_ds_row_pack_n(4, 0, v, NULL, MLA_DS_SCALE_RAW, row), MLA_OK);
}

/* 200x300 with 128 blocks: 2x3 scales, partial edge blocks, one all-zero block. */
static void test_block_quant(void **state)
{
    (void)state;
    enum { R = 200, C = 300, B = 128, NBR = 2, NBC = 3 };
    double *w = malloc(sizeof(double) * R * C), *back = malloc(sizeof(double) * R * C);
    uint8_t *code = malloc(R * C);
    float sc[NBR * NBC + 1];
    assert_non_null(w && back && code);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            double v = (double)urand() * ldexp(1.0, (r / B) * 3 - (c / B) * 2);
            if (r < B && c >= 2 * B) v = 0.0; /* block (0,2): all zero */
            w[r * C + c] = v;
        }
    sc[NBR * NBC] = -7.0f;
    mla_block_quant(w, R, C, B, code, sc);
    assert_true(sc[NBR * NBC] == -7.0f); /* nothing past ceil(R/B) x ceil(C/B) */
    assert_true(sc[0 * NBC + 2] == 1.0f);
    for (int br = 0; br < NBR; br++)
        for (int bc = 0; bc < NBC; bc++) {
            double amax = 0;
            for (int r = br * B; r < R && r < (br + 1) * B; r++)
                for (int c = bc * B; c < C && c < (bc + 1) * B; c++) amax = fmax(amax, fabs(w[r * C + c]));
            if (amax > 0) assert_true(sc[br * NBC + bc] == (float)(amax / 448.0));
        }
    mla_block_dequant(code, sc, R, C, B, back);
    int max_codes = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            float s = sc[(r / B) * NBC + c / B];
            double y = w[r * C + c] / (double)s;
            double v = mla_e4m3fn_to_f32(code[r * C + c]);
            assert_true(fabs(y) <= 448.0 * (1 + 1e-6));
            if (fabs(v - fmin(fabs(y), 448.0) * (y < 0 ? -1 : 1)) > e4m3fn_half_ulp(fmin(fabs(y), 448.0)))
                fail_msg("(%d,%d): w=%a code 0x%02X", r, c, w[r * C + c], code[r * C + c]);
            assert_true(back[r * C + c] == (double)(float)(v * (double)s));
            if ((code[r * C + c] & 0x7F) == 0x7E) max_codes++;
        }
    assert_true(max_codes >= 5); /* every nonzero block has its amax at the max code */
    free(w), free(back), free(code);
}

/* 1x128 act quant: plain scale is amax/448 in f32; ue8m0 scales are powers of two >= that,
 * so no element saturates; groups may be partial. */
static void test_act_quant(void **state)
{
    (void)state;
    enum { R = 3, C = 300, G = 128, NG = 3 };
    float x[R * C], s_plain[R * NG], s_pow2[R * NG];
    uint8_t c_plain[R * C], c_pow2[R * C];
    for (int i = 0; i < R * C; i++) x[i] = urand() * (1.0f + (float)(i % 17));
    for (int i = 0; i < C; i++) x[2 * C + i] = 0.0f; /* row 2 all zero: amax clamps to 1e-4 */
    x[2 * C + 5] = 1e-6f;
    mla_act_quant(x, R, C, G, 0, c_plain, s_plain);
    mla_act_quant(x, R, C, G, 1, c_pow2, s_pow2);
    for (int r = 0; r < R; r++)
        for (int g = 0; g < NG; g++) {
            float amax = 1e-4f;
            for (int c = g * G; c < C && c < (g + 1) * G; c++) amax = fmaxf(amax, fabsf(x[r * C + c]));
            float s = amax / 448.0f, p = s_pow2[r * NG + g];
            assert_true(s_plain[r * NG + g] == s);
            int e;
            assert_true(frexpf(p, &e) == 0.5f); /* a power of two */
            assert_true(p >= s && p < 2 * s);
            for (int c = g * G; c < C && c < (g + 1) * G; c++) {
                float xi = x[r * C + c];
                assert_int_equal(c_plain[r * C + c], mla_f32_to_e4m3fn(xi / s));
                assert_int_equal(c_pow2[r * C + c], mla_f32_to_e4m3fn(xi / p));
                assert_true(fabsf(xi / p) <= 448.0f);
                assert_false((c_pow2[r * C + c] & 0x7F) == 0x7F);
            }
        }
    assert_true(s_plain[2 * NG] == 1e-4f / 448.0f);
    assert_true(s_pow2[2 * NG] == ldexpf(1.0f, -22)); /* 2.23e-7 -> 2^ceil(-22.1) */
    assert_int_equal(c_plain[2 * C], 0x00);
}

static uint32_t f32_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* mla/kv.h's host-and-device decoder is bit for bit dtype.c's: every e4m3 code of both kinds (NaN
 * sign included), every bf16 pattern, and mla_kv_load in each row format. */
static void test_kv_codec_is_dtype_decoder(void **state)
{
    (void)state;
    for (int fnuz = 0; fnuz < 2; fnuz++)
        for (int b = 0; b < 256; b++) {
            float want = mla_fp8_decode(fnuz ? MLA_E4M3FNUZ : MLA_E4M3FN, (uint8_t)b);
            assert_int_equal(f32_bits(mla_kv_e4m3_f32((uint8_t)b, fnuz)), f32_bits(want));
        }
    for (uint32_t b = 0; b < 65536; b++)
        assert_int_equal(f32_bits(mla_kv_bf16_f32((uint16_t)b)), f32_bits(mla_bf16_to_f32((uint16_t)b)));

    enum { C = 200, R = 8 }; /* a partial last ds tile */
    uint8_t row[4 * (C + R)];
    float v[C + R];
    for (int i = 0; i < C + R; i++) v[i] = 3.0f * urand();
    for (int fnuz = 0; fnuz < 2; fnuz++) { /* fp8 per-tensor: decode * k_scale in f32 */
        mla_dtype t = fnuz ? MLA_E4M3FNUZ : MLA_E4M3FN;
        mla_kv_codec k = {.format = MLA_KV_FP8, .fp8_fnuz = fnuz, .c = C, .r = R, .k_scale = 0.37f};
        for (int i = 0; i < C + R; i++) row[i] = mla_fp8_encode(t, v[i] / k.k_scale);
        for (int i = 0; i < C + R; i++)
            assert_int_equal(f32_bits(mla_kv_load(k, row, i)), f32_bits(mla_fp8_decode(t, row[i]) * 0.37f));
        assert_int_equal(mla_kv_row_bytes(k.format, C, R), C + R);
    }
    mla_kv_codec kb = {.format = MLA_KV_BF16, .c = C, .r = R};
    for (int i = 0; i < C + R; i++) {
        uint16_t b = mla_f32_to_bf16(v[i]);
        memcpy(row + 2 * i, &b, 2);
    }
    for (int i = 0; i < C + R; i++)
        assert_int_equal(f32_bits(mla_kv_load(kb, row, i)), f32_bits(mla_bf16_to_f32(mla_f32_to_bf16(v[i]))));
    mla_kv_codec kf = {.format = MLA_KV_F32, .c = C, .r = R};
    memcpy(row, v, sizeof v);
    for (int i = 0; i < C + R; i++) assert_int_equal(f32_bits(mla_kv_load(kf, row, i)), f32_bits(v[i]));
    assert_int_equal(mla_kv_row_bytes(MLA_KV_F32, C, R), 4 * (C + R));
    /* fp8_ds_mla: code * tile scale in f32, rope bf16, read by hand from the packed bytes */
    mla_kv_codec kd = {.format = MLA_KV_FP8_DS, .fp8_fnuz = 0, .c = C, .r = R, .k_scale = 1.0f};
    assert_int_equal(mla_kv_row_bytes(kd.format, C, R), mla_ds_row_bytes(C, R));
    assert_int_equal(mla_ds_row_pack_n(C, R, v, v + C, MLA_DS_SCALE_POW2, row), MLA_OK);
    for (int i = 0; i < C; i++)
        assert_int_equal(f32_bits(mla_kv_load(kd, row, i)),
                         f32_bits(mla_e4m3fn_to_f32(row[i]) * le_f32(row + C + 4 * (i / 128))));
    for (int i = 0; i < R; i++) {
        uint16_t b = (uint16_t)(row[C + 8 + 2 * i] | row[C + 8 + 2 * i + 1] << 8);
        assert_int_equal(f32_bits(mla_kv_load(kd, row, C + i)), f32_bits(mla_bf16_to_f32(b)));
    }
    assert_int_equal(mla_kv_row_bytes(MLA_KV_FORMAT_COUNT, C, R), 0);
    assert_int_equal(mla_kv_row_bytes(MLA_KV_BF16, 0, R), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_dispatch),     cmocka_unit_test(test_kv_per_tensor_round_trip),
        cmocka_unit_test(test_kv_saturation_never_nan), cmocka_unit_test(test_ds_row_layout),
        cmocka_unit_test(test_ds_zero_tile),     cmocka_unit_test(test_ds_pow2_amax),
        cmocka_unit_test(test_ds_row_n),         cmocka_unit_test(test_block_quant),
        cmocka_unit_test(test_act_quant),        cmocka_unit_test(test_kv_codec_is_dtype_decoder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
