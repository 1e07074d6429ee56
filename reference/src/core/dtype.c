/* dtype.c: element types and bit-exact conversions (mla-spec.md §e).
 *
 * Every narrow float format here is one parameterised sign-magnitude format
 * (exponent bits, fraction bits, bias, which codes are reserved) and every conversion
 * goes through two exact steps on a double:
 *   1. grid_round: round |x| once, to nearest-even, onto the format's grid with an
 *      unbounded exponent range above (exact integer arithmetic on the double's bits);
 *   2. overflow policy: IEEE (-> inf) or SATFINITE (-> max finite), then pack the bits.
 * f32 widens to double exactly, so f32 inputs are rounded once too, and rounding a double
 * straight to bf16/f16 avoids the double rounding that a detour via f32 would add. */
#include "mla/dtype.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- the generic format --------------------------------------------------------------- */

typedef enum {
    LAYOUT_IEEE, /* all-ones exponent is inf (fraction 0) or NaN: f16, bf16, e5m2 */
    LAYOUT_FN,   /* only the all-ones magnitude is NaN, no inf: e4m3fn */
    LAYOUT_FNUZ  /* every magnitude is finite; the -0 pattern is the only NaN: e4m3fnuz */
} fmt_layout;

typedef struct {
    int ebits, mbits, bias;
    fmt_layout layout;
    int satfinite; /* 1: overflow and inf -> max finite (CUDA __NV_SATFINITE); 0: -> inf */
} fmt;

static const fmt FMT_BF16 = {8, 7, 127, LAYOUT_IEEE, 0};
static const fmt FMT_F16 = {5, 10, 15, LAYOUT_IEEE, 0};
static const fmt FMT_E4M3FN = {4, 3, 7, LAYOUT_FN, 1};
static const fmt FMT_E4M3FNUZ = {4, 3, 8, LAYOUT_FNUZ, 1};
static const fmt FMT_E5M2 = {5, 2, 15, LAYOUT_IEEE, 1};

/* Round a >= 0 (finite) to the nearest multiple of the format's quantum 2^(max(e, emin) - mbits),
 * ties to even, where e is the exponent of a's leading bit. No upper exponent limit. Exact. */
static double grid_round(double a, int mbits, int emin)
{
    uint64_t u;
    memcpy(&u, &a, sizeof u);
    int efield = (int)((u >> 52) & 0x7FF);
    uint64_t m = u & ((UINT64_C(1) << 52) - 1);
    int e; /* a == m * 2^(e - 52) */
    if (efield == 0) {
        if (m == 0) return a;
        e = -1022;
    } else {
        m |= UINT64_C(1) << 52;
        e = efield - 1023;
    }
    if (efield != 0 && e >= emin) { /* normal in the format: round the bit pattern (carry into the
                                      * exponent is the next power of two); avoids ldexp, ~5x faster */
        int s = 52 - mbits;
        u += ((UINT64_C(1) << (s - 1)) - 1) + ((u >> s) & 1);
        u &= ~((UINT64_C(1) << s) - 1);
        memcpy(&a, &u, sizeof a);
        return a;
    }
    int q = (e > emin ? e : emin) - mbits;
    int shift = q - (e - 52); /* low bits of m below the quantum */
    if (shift <= 0) return a;
    if (shift >= 54) return 0.0; /* m < 2^53: a is below half a quantum */
    uint64_t r = m >> shift;
    uint64_t rem = m & ((UINT64_C(1) << shift) - 1);
    uint64_t half = UINT64_C(1) << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return ldexp((double)r, q);
}

static uint32_t fmt_frac_mask(const fmt *f) { return (UINT32_C(1) << f->mbits) - 1; }
static uint32_t fmt_mag_mask(const fmt *f) { return (UINT32_C(1) << (f->ebits + f->mbits)) - 1; }

/* Largest finite magnitude code. */
static uint32_t fmt_max_code(const fmt *f)
{
    switch (f->layout) {
    case LAYOUT_IEEE:
        return ((((UINT32_C(1) << f->ebits) - 2)) << f->mbits) | fmt_frac_mask(f);
    case LAYOUT_FN:
        return fmt_mag_mask(f) - 1;
    case LAYOUT_FNUZ:
        return fmt_mag_mask(f);
    }
    return 0;
}

/* Value of a finite magnitude code. */
static double fmt_mag_value(const fmt *f, uint32_t mag)
{
    uint32_t ef = mag >> f->mbits, fr = mag & fmt_frac_mask(f);
    if (ef == 0) return ldexp((double)fr, 1 - f->bias - f->mbits);
    return ldexp((double)(fr | (UINT32_C(1) << f->mbits)), (int)ef - f->bias - f->mbits);
}

/* Magnitude code of r, which is on the grid and <= max finite. */
static uint32_t fmt_mag_code(const fmt *f, double r)
{
    if (r == 0) return 0;
    int e;
    double fr = frexp(r, &e); /* r = fr * 2^e, fr in [0.5, 1) */
    e -= 1;                   /* r = (2 fr) * 2^e */
    int emin = 1 - f->bias;
    if (e < emin) return (uint32_t)ldexp(r, f->mbits - emin); /* subnormal */
    uint32_t frac = (uint32_t)ldexp(2.0 * fr - 1.0, f->mbits);
    return ((uint32_t)(e + f->bias) << f->mbits) | frac;
}

static uint32_t fmt_encode(const fmt *f, double x)
{
    int n = f->ebits + f->mbits;
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t sign = (uint32_t)(u >> 63) << n;
    if (isnan(x)) {
        switch (f->layout) {
        case LAYOUT_IEEE:
            if (!f->satfinite) /* f16/bf16: quiet NaN, sign and top payload bits kept */
                return sign | (fmt_mag_mask(f) & ~fmt_frac_mask(f)) |
                       (UINT32_C(1) << (f->mbits - 1)) |
                       ((uint32_t)(u >> (52 - f->mbits)) & fmt_frac_mask(f));
            return sign | fmt_mag_mask(f); /* e5m2: 0x7F / 0xFF */
        case LAYOUT_FN:
            return sign | fmt_mag_mask(f); /* 0x7F / 0xFF */
        case LAYOUT_FNUZ:
            return UINT32_C(1) << n; /* 0x80, the only NaN */
        }
    }
    uint32_t maxc = fmt_max_code(f);
    uint32_t overflow = f->satfinite ? maxc : (fmt_mag_mask(f) & ~fmt_frac_mask(f)); /* or inf */
    double a = fabs(x);
    uint32_t mag;
    if (isinf(a)) {
        if (f->layout == LAYOUT_FNUZ) return UINT32_C(1) << n; /* no inf: NaN (header rule) */
        mag = overflow;
    } else {
        double r = grid_round(a, f->mbits, 1 - f->bias);
        mag = r > fmt_mag_value(f, maxc) ? overflow : fmt_mag_code(f, r);
    }
    if (mag == 0 && f->layout == LAYOUT_FNUZ) return 0; /* no -0 */
    return sign | mag;
}

static int fmt_is_nan(const fmt *f, uint32_t b)
{
    int n = f->ebits + f->mbits;
    uint32_t mag = b & fmt_mag_mask(f);
    switch (f->layout) {
    case LAYOUT_IEEE:
        return (mag >> f->mbits) == (UINT32_C(1) << f->ebits) - 1 && (mag & fmt_frac_mask(f));
    case LAYOUT_FN:
        return mag == fmt_mag_mask(f);
    case LAYOUT_FNUZ:
        return (b & ((UINT32_C(1) << (n + 1)) - 1)) == (UINT32_C(1) << n);
    }
    return 0;
}

/* Decode to f32 (every value of these formats is an f32). NaN -> quiet f32 NaN, sign kept. */
static float fmt_decode(const fmt *f, uint32_t b)
{
    int n = f->ebits + f->mbits;
    int neg = (int)((b >> n) & 1);
    uint32_t mag = b & fmt_mag_mask(f);
    if (fmt_is_nan(f, b)) {
        uint32_t bits = ((uint32_t)neg << 31) | UINT32_C(0x7FC00000);
        if (f->layout == LAYOUT_IEEE) /* keep the payload */
            bits |= (mag & fmt_frac_mask(f)) << (23 - f->mbits);
        float v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    double v;
    if (f->layout == LAYOUT_IEEE && (mag >> f->mbits) == (UINT32_C(1) << f->ebits) - 1)
        v = INFINITY;
    else
        v = fmt_mag_value(f, mag);
    return (float)(neg ? -v : v);
}

/* Round a double to a format's value set (IEEE overflow to inf), keeping sign and NaN. */
static double fmt_round_ieee(double x, int mbits, int emin, double maxv)
{
    if (isnan(x) || isinf(x)) return x;
    double r = grid_round(fabs(x), mbits, emin);
    if (r > maxv) r = INFINITY;
    return copysign(r, x);
}

/* ---- type table ----------------------------------------------------------------------- */

size_t mla_dtype_size(mla_dtype t)
{
    switch (t) {
#define MLA_DTYPE_SIZE(e, n, b) \
    case e:                     \
        return b;
        MLA_DTYPE_LIST(MLA_DTYPE_SIZE)
#undef MLA_DTYPE_SIZE
    default:
        return 0;
    }
}

const char *mla_dtype_name(mla_dtype t)
{
    switch (t) {
#define MLA_DTYPE_NAME(e, n, b) \
    case e:                     \
        return n;
        MLA_DTYPE_LIST(MLA_DTYPE_NAME)
#undef MLA_DTYPE_NAME
    default:
        return "?";
    }
}

int mla_dtype_from_name(const char *name, mla_dtype *out)
{
    if (!name) return -1;
#define MLA_DTYPE_MATCH(e, n, b) \
    if (strcmp(name, n) == 0) {  \
        if (out) *out = e;       \
        return 0;                \
    }
    MLA_DTYPE_LIST(MLA_DTYPE_MATCH)
#undef MLA_DTYPE_MATCH
    return -1;
}

int mla_dtype_is_packed_float(mla_dtype t)
{
    switch (t) {
    case MLA_BF16:
    case MLA_F16:
    case MLA_E4M3FN:
    case MLA_E4M3FNUZ:
    case MLA_E5M2:
    case MLA_UE8M0:
        return 1;
    default:
        return 0;
    }
}

/* ---- bf16 / f16 / f32 ------------------------------------------------------------------- */

#define BF16_MAX_D 0x1.FEp127   /* (2 - 2^-7) * 2^127 */
#define F16_MAX_D 65504.0

uint16_t mla_f32_to_bf16(float x)
{
    /* bf16 is the top half of f32 (same exponent range, subnormals included), so RNE is an
     * integer add on the bits: the carry moves into the exponent, and past FLT_MAX into inf. */
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & UINT32_C(0x7FFFFFFF)) > UINT32_C(0x7F800000))
        return (uint16_t)((u >> 16) | 0x0040); /* quiet NaN, sign and payload top kept */
    u += UINT32_C(0x7FFF) + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

float mla_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

double mla_round_bf16(double x) { return fmt_round_ieee(x, 7, -126, BF16_MAX_D); }

uint16_t mla_f32_to_f16(float x) { return (uint16_t)fmt_encode(&FMT_F16, (double)x); }

float mla_f16_to_f32(uint16_t h) { return fmt_decode(&FMT_F16, h); }

double mla_round_f16(double x) { return fmt_round_ieee(x, 10, -14, F16_MAX_D); }

double mla_round_f32(double x) { return fmt_round_ieee(x, 23, -126, (double)FLT_MAX); }

/* ---- fp8 -------------------------------------------------------------------------------- */

uint8_t mla_f32_to_e4m3fn(float x) { return (uint8_t)fmt_encode(&FMT_E4M3FN, (double)x); }
float mla_e4m3fn_to_f32(uint8_t b) { return fmt_decode(&FMT_E4M3FN, b); }
uint8_t mla_f32_to_e4m3fnuz(float x) { return (uint8_t)fmt_encode(&FMT_E4M3FNUZ, (double)x); }
float mla_e4m3fnuz_to_f32(uint8_t b) { return fmt_decode(&FMT_E4M3FNUZ, b); }
uint8_t mla_f32_to_e5m2(float x) { return (uint8_t)fmt_encode(&FMT_E5M2, (double)x); }
float mla_e5m2_to_f32(uint8_t b) { return fmt_decode(&FMT_E5M2, b); }

/* ---- ue8m0 ------------------------------------------------------------------------------ */

/* Exact on the double: NaN -> 0xFF, non-positive -> 0 (2^-127), +inf -> 0xFE (satfinite),
 * otherwise 2^floor(log2 x) or 2^ceil(log2 x), clamped to [2^-127, 2^127]. */
static uint8_t ue8m0_encode(double x, int round_up)
{
    if (isnan(x)) return 0xFF;
    if (!(x > 0)) return 0;
    if (isinf(x)) return 0xFE;
    int e;
    double fr = frexp(x, &e); /* x = fr * 2^e, floor(log2 x) = e - 1 */
    int k = e - 1;
    if (round_up && fr != 0.5) k += 1;
    k += 127;
    if (k < 0) k = 0;
    if (k > 254) k = 254;
    return (uint8_t)k;
}

uint8_t mla_f32_to_ue8m0_ceil(float x) { return ue8m0_encode((double)x, 1); }
uint8_t mla_f32_to_ue8m0_floor(float x) { return ue8m0_encode((double)x, 0); }

float mla_ue8m0_to_f32(uint8_t b)
{
    if (b == 0xFF) return NAN;
    return ldexpf(1.0f, (int)b - 127);
}

/* ---- generic load / store ---------------------------------------------------------------- */

/* Integers: round to nearest even, saturate to the type's range, NaN -> 0. */
static int64_t int_narrow(double v, double lo, double hi_excl, int64_t lo_i, int64_t hi_i)
{
    if (isnan(v)) return 0;
    double r = nearbyint(v);
    if (r < lo) return lo_i;
    if (r >= hi_excl) return hi_i;
    return (int64_t)r;
}

double mla_load_f64(mla_dtype t, const void *p)
{
    switch (t) {
    case MLA_F64: {
        double v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case MLA_F32: {
        float v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case MLA_BF16:
    case MLA_F16: {
        uint16_t b;
        memcpy(&b, p, sizeof b);
        return t == MLA_BF16 ? mla_bf16_to_f32(b) : mla_f16_to_f32(b);
    }
    case MLA_E4M3FN:
        return mla_e4m3fn_to_f32(*(const uint8_t *)p);
    case MLA_E4M3FNUZ:
        return mla_e4m3fnuz_to_f32(*(const uint8_t *)p);
    case MLA_E5M2:
        return mla_e5m2_to_f32(*(const uint8_t *)p);
    case MLA_UE8M0:
        return mla_ue8m0_to_f32(*(const uint8_t *)p);
    case MLA_I32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case MLA_I64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return (double)v;
    }
    case MLA_U8:
        return *(const uint8_t *)p;
    default:
        return NAN;
    }
}

void mla_store_f64(mla_dtype t, void *p, double v)
{
    switch (t) {
    case MLA_F64:
        memcpy(p, &v, sizeof v);
        return;
    case MLA_F32: {
        float f = (float)mla_round_f32(v); /* exact: already on the f32 grid */
        memcpy(p, &f, sizeof f);
        return;
    }
    case MLA_BF16:
    case MLA_F16: {
        uint16_t b = (uint16_t)fmt_encode(t == MLA_BF16 ? &FMT_BF16 : &FMT_F16, v);
        memcpy(p, &b, sizeof b);
        return;
    }
    case MLA_E4M3FN:
        *(uint8_t *)p = (uint8_t)fmt_encode(&FMT_E4M3FN, v);
        return;
    case MLA_E4M3FNUZ:
        *(uint8_t *)p = (uint8_t)fmt_encode(&FMT_E4M3FNUZ, v);
        return;
    case MLA_E5M2:
        *(uint8_t *)p = (uint8_t)fmt_encode(&FMT_E5M2, v);
        return;
    case MLA_UE8M0:
        /* Rounds up, as the scale writers do: a stored scale never shrinks below the value. */
        *(uint8_t *)p = ue8m0_encode(v, 1);
        return;
    case MLA_I32: {
        int32_t i = (int32_t)int_narrow(v, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX);
        memcpy(p, &i, sizeof i);
        return;
    }
    case MLA_I64: {
        int64_t i = int_narrow(v, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN,
                               INT64_MAX);
        memcpy(p, &i, sizeof i);
        return;
    }
    case MLA_U8:
        *(uint8_t *)p = (uint8_t)int_narrow(v, 0.0, 256.0, 0, 255);
        return;
    default:
        return;
    }
}

/* ---- ulp distance ------------------------------------------------------------------------- */

/* Sign-magnitude bits -> a monotone integer line (+0 and -0 both map to 0). */
static int64_t ordered(uint64_t bits, int sign_bit)
{
    int64_t mag = (int64_t)(bits & ((UINT64_C(1) << sign_bit) - 1));
    return (bits >> sign_bit) & 1 ? -mag : mag;
}

/* Position of v on t's integer line; 0 when v is (or becomes) NaN in t. */
static int ulp_position(mla_dtype t, double v, int64_t *pos)
{
    const fmt *f = NULL;
    switch (t) {
    case MLA_F64: {
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        *pos = ordered(u, 63);
        return 1;
    }
    case MLA_F32: {
        float x = (float)mla_round_f32(v);
        uint32_t u;
        memcpy(&u, &x, sizeof u);
        *pos = ordered(u, 31);
        return 1;
    }
    case MLA_BF16: f = &FMT_BF16; break;
    case MLA_F16: f = &FMT_F16; break;
    case MLA_E4M3FN: f = &FMT_E4M3FN; break;
    case MLA_E4M3FNUZ: f = &FMT_E4M3FNUZ; break;
    case MLA_E5M2: f = &FMT_E5M2; break;
    case MLA_UE8M0: {
        uint8_t c = ue8m0_encode(v, 1);
        if (c == 0xFF) return 0;
        *pos = c;
        return 1;
    }
    case MLA_I32:
    case MLA_I64:
    case MLA_U8: {
        unsigned char buf[8];
        mla_store_f64(t, buf, v);
        double back = mla_load_f64(t, buf);
        if (t == MLA_I64) {
            int64_t i;
            memcpy(&i, buf, sizeof i);
            *pos = i;
        } else {
            *pos = (int64_t)back;
        }
        return 1;
    }
    default:
        return 0;
    }
    uint32_t c = fmt_encode(f, v);
    if (fmt_is_nan(f, c)) return 0;
    *pos = ordered(c, f->ebits + f->mbits);
    return 1;
}

uint64_t mla_ulp_distance(mla_dtype t, double a, double b)
{
    if (isnan(a) || isnan(b)) return UINT64_MAX;
    int64_t pa, pb;
    if (!ulp_position(t, a, &pa) || !ulp_position(t, b, &pb)) return UINT64_MAX;
    return pa >= pb ? (uint64_t)pa - (uint64_t)pb : (uint64_t)pb - (uint64_t)pa;
}
