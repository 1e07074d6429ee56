/* gpu_decode_mma.h: what the tensor-core decode kernels share (gpu_decode_mma.hip: mma.sync;
 * gpu_decode_wg.hip: wgmma): the launch geometry and the query staging. NVIDIA only. */
#ifndef MLA_GPU_DECODE_MMA_H
#define MLA_GPU_DECODE_MMA_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpu_internal.h"
#include "gpu_kv.h"
#include "gpu_mma.h"
#include "gpu_wgmma.h"

/* Shapes every block of one launch shares, computed on the host. */
typedef struct dm_geom {
    int lp;       /* C + R rounded up to 16 (the MMA k step); pad columns are zero in Q and K */
    int ldk;      /* row stride of Q and K tiles in bf16 elements: 8 (mod 64), so 8 rows of an ldmatrix hit 8 bank groups */
    int rb;       /* raw (fp8) row stride in bytes, a multiple of 16 */
    float q_div;  /* an fp8 query's q_scale (1 otherwise): Q holds q / q_div, the codes */
    float s_mul;  /* softmax scale x log2(e) x q_div x k_scale: scores in base 2 */
    float o_mul;  /* k_scale of an fp8 cache (1 otherwise) */
    int p_split;  /* MLA_GPU_MMA_P=split: P as bf16 hi + lo (two PV products, ~fp32 P) instead of bf16(P) */
} dm_geom;

/* The geometry of one launch (host). */
dm_geom dm_geometry(const gpu_decode_args *a);

/* mla_attn_tc_wide of this launch's cache (host): the reference's side of the tile contract. */
static inline int dm_tc_wide(const gpu_decode_args *a) { return mla_attn_tc_wide(a->kv.codec.c, a->kv.codec.r); }

/* Element e of query row (t, h) as the kernels stage it: q_absorbed | q_pe over q_div, zero past the
 * heads and columns; bf16 values already, so rounding it to bf16 is exact (NUMERICS.md). */
__device__ __forceinline__ float dm_q(const gpu_decode_args &a, const dm_geom &g, int t, int h, int e)
{
    const int C = a.kv.codec.c, L = C + a.kv.codec.r;
    if (h >= a.h || e >= L) return 0.0f;
    return (e < C ? a.q_abs[((int64_t)t * a.h + h) * C + e] : a.q_pe[((int64_t)t * a.h + h) * (L - C) + e - C]) / g.q_div;
}

#define DM_THREADS 256 /* every tensor-core decode kernel: 8 warps */

/* A wgmma decode block's token t and first head h0 in a grid of HB-head groups: (t x groups, 1, splits),
 * the groups of a token adjacent in launch order (dm_grid), or (t, groups, splits). */
struct dm_heads {
    int t, h0;
};
template <int HB> __device__ __forceinline__ dm_heads dm_heads_of(int h)
{
    const int ng = (h + HB - 1) / HB;
    dm_heads b;
    b.t = gridDim.y == 1 ? blockIdx.x / ng : blockIdx.x;
    b.h0 = (gridDim.y == 1 ? blockIdx.x % ng : blockIdx.y) * HB;
    return b;
}

/* The grid of a wgmma decode launch of hb-head groups (host): the groups of a token adjacent unless
 * MLA_GPU_DECODE_WG_HG=0 (gpu_decode_mma.hip says why). */
dim3 dm_grid(const gpu_decode_args *a, int hb);

/* e4m3 code -> f32, exact: the 7 magnitude bits placed under the f32 exponent field give 2^-127-based
 * values (subnormal codes become f32 subnormals), and one multiply by 2^(127 - bias) rebiases. NaN as
 * mla_kv_e4m3_f32. */
__device__ __forceinline__ float dm_e4m3(uint32_t code, int fnuz)
{
    uint32_t s = (code & 0x80u) << 24, mag = code & 0x7fu;
    float v = __uint_as_float(s | mag << 20) * (fnuz ? 0x1p119f : 0x1p120f);
    int nan = fnuz ? code == 0x80u : mag == 0x7fu;
    return nan ? __uint_as_float(s | 0x7fc00000u) : v;
}

/* Rows [c0, c0 + NK) of the block's sequence into dst (stride bytes apart): row_bytes / CH copies each,
 * by DM_THREADS / NK threads per row; rows at or past n are zero-filled, so P . V never meets the
 * cache pool's NaN poison. */
template <int CH, int NK>
__device__ __forceinline__ void dm_load_rows(const gpu_kv_desc &kv, int slot, int c0, int n, uint8_t *dst, int stride)
{
    const int tpr = DM_THREADS / NK, j = threadIdx.x / tpr, per_row = kv.row_bytes / CH;
    const int ok = j < n;
    const uint8_t *src = ok ? kv_row(kv, slot, c0 + j) : kv.pool;
    const uint32_t d = tc_smem(dst + (size_t)j * stride);
    for (int c = threadIdx.x % tpr; c < per_row; c += tpr) tc_cp<CH>(d + c * CH, src + (ok ? c * CH : 0), ok ? CH : 0);
}

template <int NK>
__device__ __forceinline__ void dm_load(const gpu_kv_desc &kv, int slot, int c0, int n, uint8_t *dst, int stride)
{
    if (kv.row_bytes % 16 == 0)
        dm_load_rows<16, NK>(kv, slot, c0, n, dst, stride);
    else if (kv.row_bytes % 8 == 0)
        dm_load_rows<8, NK>(kv, slot, c0, n, dst, stride);
    else
        dm_load_rows<4, NK>(kv, slot, c0, n, dst, stride);
}

/* Element x (>= the four-at-a-time part) of a raw row, f32. */
__device__ __forceinline__ float dm_raw_one(const gpu_kv_desc &kv, const uint8_t *row, int x)
{
    const int C = kv.codec.c, L = C + kv.codec.r, tiles = (C + MLA_KV_DS_TILE - 1) / MLA_KV_DS_TILE;
    if (x >= L) return 0.0f;
    if (kv.codec.format != MLA_KV_FP8_DS) return dm_e4m3(row[x], kv.codec.fp8_fnuz);
    uint16_t b;
    memcpy(&b, row + C + 4 * tiles + 2 * (x - C), 2);
    return mla_kv_bf16_f32(b);
}

/* Two e4m3fn codes (the low 16 bits) -> two f32, exact: the hardware conversion to f16x2 (every e4m3
 * value, subnormals and NaN included, is an f16), then widened. */
__device__ __forceinline__ float2 dm_e4m3x2(uint32_t two)
{
    uint32_t h2;
    asm("{ .reg .b16 c; cvt.u16.u32 c, %1; cvt.rn.f16x2.e4m3x2 %0, c; }" : "=r"(h2) : "r"(two));
    __half2 h = *reinterpret_cast<__half2 *>(&h2);
    return __half22float2(h);
}

/* Four e4m3fn codes (w, low byte first) times 2^-120 mul -> four bf16 (lo: codes 0 and 1), exactly, on
 * the integer and bf16 pipes instead of dm_e4m3x2's f16 and f32 conversions (a quarter of the rate;
 * alone this gained nothing on the H200, 2026-12-02: the addressing around it cost more, see dm_widen_e4m3):
 * each code's sign goes to bit 15 and its 7 magnitude bits under the bf16 exponent field, which gives
 * the code's value times 2^-120 (subnormal codes become bf16 subnormals); one bf16 multiply by mul =
 * 2^120 x scale rebiases and scales it (the exact product, rounded once: as rebiasing exactly first and
 * scaling after). Exact when mul is a power of two (or 0: scales that are powers of two up to 2^7) and
 * no code is NaN (0x7f, 0xff); gpu/bench/widen_probe.cu checks every code against dm_e4m3. */
__device__ __forceinline__ void dm_e4m3x4_bf16(uint32_t w, __nv_bfloat162 mul, uint32_t &lo, uint32_t &hi)
{
    const uint32_t a = __byte_perm(w, 0, 0x1404), b = __byte_perm(w, 0, 0x3424); /* codes in the high bytes */
    uint32_t x = (a & 0x80008000u) | ((a & 0x7f007f00u) >> 4), y = (b & 0x80008000u) | ((b & 0x7f007f00u) >> 4);
    const __nv_bfloat162 bx = __hmul2(*reinterpret_cast<__nv_bfloat162 *>(&x), mul);
    const __nv_bfloat162 by = __hmul2(*reinterpret_cast<__nv_bfloat162 *>(&y), mul);
    lo = *reinterpret_cast<const uint32_t *>(&bx);
    hi = *reinterpret_cast<const uint32_t *>(&by);
}

/* Eight e4m3fn codes times sc -> eight bf16 by the hardware conversion to f16 and f32, rounding v * sc
 * from f32 as the reference: the rare case of dm_e4m3x8_bf16, kept out of line. */
static __device__ __noinline__ uint4 dm_e4m3x8_f32(uint2 w, float sc)
{
    uint32_t r[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const float2 f = dm_e4m3x2((k < 2 ? w.x : w.y) >> (16 * (k % 2)));
        r[k] = tc_pack(f.x * sc, f.y * sc);
    }
    return make_uint4(r[0], r[1], r[2], r[3]);
}

/* Eight e4m3fn codes times sc -> eight bf16, exactly: dm_e4m3x4_bf16 under a power-of-two scale up to
 * 2^7 (2^120 sc must be a bf16: fp8_ds_mla tile scales in practice, and 1 for per-tensor fp8) when no
 * code is NaN, else dm_e4m3x8_f32. */
__device__ __forceinline__ uint4 dm_e4m3x8_bf16(uint2 w, float sc)
{
    const uint32_t nan = (((w.x & 0x7f7f7f7fu) + 0x01010101u) | ((w.y & 0x7f7f7f7fu) + 0x01010101u)) & 0x80808080u;
    const uint32_t u = __float_as_uint(sc);
    if (nan || (u & 0x7fffffu) || (u & 0x7f800000u) > (127u + 7u) << 23) return dm_e4m3x8_f32(w, sc);
    const __nv_bfloat162 m = __float2bfloat162_rn(sc * 0x1p120f);
    uint4 v;
    dm_e4m3x4_bf16(w.x, m, v.x, v.y);
    dm_e4m3x4_bf16(w.y, m, v.z, v.w);
    return v;
}

/* Raw fp8 rows -> bf16 K tile (columns [0, lp); zero past C + R and in rows at or past n); off(j, e): the
 * byte offset of row j's eight columns from e (the kernels' tile layouts differ). e4m3fn codes by
 * dm_e4m3x8_bf16 (the first version decoded bit by bit and bound fp8 decode to ~400 GB/s on
 * instruction issue, ncu 2026-12-01); e4m3fnuz (no hardware conversion) by dm_e4m3. Thread (row tid / tpr,
 * eight-column group tid % tpr + k tpr): no division, one row check. */
template <int NK, class Off>
__device__ void dm_widen(const gpu_kv_desc &kv, const dm_geom &g, const uint8_t *__restrict__ raw,
                         uint8_t *__restrict__ kb, int n, Off off)
{
    constexpr int tpr = DM_THREADS / NK;
    const int C = kv.codec.c, fnuz = kv.codec.fp8_fnuz, ds = kv.codec.format == MLA_KV_FP8_DS;
    const int fast_end = ds ? C : C + kv.codec.r, j = threadIdx.x / tpr; /* codes, eight at a time */
    const int ds_tiles = (C + MLA_KV_DS_TILE - 1) / MLA_KV_DS_TILE, rope16 = ds && (C + 4 * ds_tiles) % 16 == 0;
    const uint8_t *row = raw + (size_t)j * g.rb;
    for (int e = (threadIdx.x % tpr) * 8; e < g.lp; e += tpr * 8) {
        float v[8];
        if (j >= n) {
#pragma unroll
            for (int k = 0; k < 8; k++) v[k] = 0.0f;
        } else if (e + 8 <= fast_end) {
            const uint2 w = *reinterpret_cast<const uint2 *>(row + e);
            const float sc = ds ? *reinterpret_cast<const float *>(row + C + 4 * (e / MLA_KV_DS_TILE)) : 1.0f;
            if (!fnuz) {
                *reinterpret_cast<uint4 *>(kb + off(j, e)) = dm_e4m3x8_bf16(w, sc);
                continue;
            }
#pragma unroll
            for (int k = 0; k < 8; k++) v[k] = dm_e4m3(((k < 4 ? w.x : w.y) >> (8 * (k % 4))) & 0xffu, 1) * sc;
        } else if (rope16 && e >= C && e + 8 <= C + kv.codec.r) { /* fp8_ds_mla's bf16 rope part: copied as is */
            *reinterpret_cast<uint4 *>(kb + off(j, e)) = *reinterpret_cast<const uint4 *>(row + C + 4 * ds_tiles + 2 * (e - C));
            continue;
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++) v[k] = dm_raw_one(kv, row, e + k);
        }
        *reinterpret_cast<uint4 *>(kb + off(j, e)) =
            make_uint4(tc_pack(v[0], v[1]), tc_pack(v[2], v[3]), tc_pack(v[4], v[5]), tc_pack(v[6], v[7]));
    }
}

/* The wgmma decode kernels' cache tile (gpu_decode_wg.hip, gpu_decode_wt.hip): 64 rows of DeepSeek's
 * kv_lora_rank 512 + rope 64 in bf16, 128-byte swizzled, 9 atoms side by side. */
#define WD_NK 64                      /* keys a tile */
#define WD_C 512                      /* kv_lora_rank */
#define WD_L 576                      /* C + rope dim */
#define WD_ATOM (64 * WG_ATOM_ROW)    /* one swizzled atom of 64 rows */
#define WD_TILE (WD_L / 64 * WD_ATOM) /* 64 rows x 576 bf16: 9 atoms, 72 KB */

/* Byte offset of element (r, e) of a 64 x 576 swizzled tile. */
__device__ __forceinline__ int wd_off(int r, int e) { return e / 64 * WD_ATOM + wg_sw128(r, e % 64); }

/* NK raw e4m3fn rows of DeepSeek's layouts (DS: fp8_ds_mla's 512 codes, 4 tile scales and the bf16
 * rope; else 576 codes of per-tensor fp8) -> the first NK rows at kb of a swizzled bf16 tile, rows at or
 * past n zero, by NT threads (u = 0 .. NT - 1): dm_widen with every offset known at compile time and a
 * tile scale read once per 128 codes (dm_widen's per-chunk addressing and branches made fp8 decode
 * issue-bound, ~10 instructions a code: ncu 2026-12-02). Thread: row u / T, eight-column chunks u % T +
 * T k (T = NT / NK threads a row, a divisor of 8), chunk c in atom c / 8 at chunk c % 8 ^ row % 8.
 * Values as dm_widen's, bit for bit. */
template <int DS, int NK, int NT = DM_THREADS>
__device__ __forceinline__ void dm_widen_e4m3(const uint8_t *__restrict__ raw, int rb, uint8_t *__restrict__ kb, int n,
                                              unsigned u = threadIdx.x)
{
    constexpr int T = NT / NK, NCH = WD_L / 8 / T; /* threads a row, chunks a thread */
    static_assert(8 % T == 0, "a thread's chunks k and k + 8 / T share an atom");
    const int j = u / T, q = u % T;
    uint8_t *dst = kb + j * WG_ATOM_ROW;
    auto at = [&](int k) { return dst + T * k / 8 * WD_ATOM + ((q + T * k % 8) ^ (j % 8)) * 16; };
    if (j >= n) {
#pragma unroll
        for (int k = 0; k < NCH; k++) *reinterpret_cast<uint4 *>(at(k)) = make_uint4(0, 0, 0, 0);
        return;
    }
    const uint8_t *row = raw + (size_t)j * rb;
    constexpr int NCODE = (DS ? WD_C : WD_L) / 8 / T;
    /* every load first, then the conversions and stores: the compiler cannot move a load of raw above a
     * store to kb by itself (one load-use latency a chunk: ncu of gpu_decode_wf.hip, 2026-12-04) */
    constexpr int NS = DS ? WD_C / MLA_KV_DS_TILE : 1; /* scales a row; chunk k's is T k / 16 */
    uint2 w[NCODE];
    float sc[NS];
    uint4 rope[DS ? NCH - NCODE : 1];
#pragma unroll
    for (int k = 0; k < NCODE; k++) w[k] = *reinterpret_cast<const uint2 *>(row + 8 * (q + T * k));
#pragma unroll
    for (int i = 0; i < NS; i++) sc[i] = DS ? *reinterpret_cast<const float *>(row + WD_C + 4 * i) : 1.0f;
    if (DS) /* the bf16 rope part, copied: row + 512 codes + 16 bytes of scales */
#pragma unroll
        for (int k = NCODE; k < NCH; k++)
            rope[k - NCODE] = *reinterpret_cast<const uint4 *>(row + WD_C + 16 + 2 * (8 * (q + T * k) - WD_C));
    /* dm_e4m3x8_bf16's two conditions checked once for the thread's part of the row instead of for
     * every eight codes (with the scale's conversion, ~half of the widening's instructions: ncu of
     * gpu_decode_wf.hip, 2026-12-04): no NaN code (the bytes' low 7 bits + 1 never carry) and scales
     * that are powers of two up to 2^7. Else every chunk goes through dm_e4m3x8_bf16, which decides per
     * chunk: the same values either way. */
    uint32_t nan = 0, bad = 0;
#pragma unroll
    for (int k = 0; k < NCODE; k++) nan |= ((w[k].x & 0x7f7f7f7fu) + 0x01010101u) | ((w[k].y & 0x7f7f7f7fu) + 0x01010101u);
#pragma unroll
    for (int i = 0; i < NS; i++) {
        const uint32_t b = __float_as_uint(sc[i]);
        bad |= (b & 0x7fffffu) | ((b & 0x7f800000u) > (127u + 7u) << 23);
    }
    if (!(nan & 0x80808080u) && !bad) {
        __nv_bfloat162 m[NS];
#pragma unroll
        for (int i = 0; i < NS; i++) m[i] = __float2bfloat162_rn(sc[i] * 0x1p120f);
#pragma unroll
        for (int k = 0; k < NCODE; k++) {
            uint4 v;
            dm_e4m3x4_bf16(w[k].x, m[T * k / 16 % NS], v.x, v.y);
            dm_e4m3x4_bf16(w[k].y, m[T * k / 16 % NS], v.z, v.w);
            *reinterpret_cast<uint4 *>(at(k)) = v;
        }
    } else {
#pragma unroll
        for (int k = 0; k < NCODE; k++) *reinterpret_cast<uint4 *>(at(k)) = dm_e4m3x8_bf16(w[k], sc[T * k / 16 % NS]);
    }
    if (DS)
#pragma unroll
        for (int k = NCODE; k < NCH; k++) *reinterpret_cast<uint4 *>(at(k)) = rope[k - NCODE];
}

/* dm_widen_e4m3_q's checks and conversions: a thread's NM chunks of 16 codes w with their scale tiles sc
 * (up: see there), chunk i's two bf16 chunks stored by st(i, lo, hi); the exact integer path unless a
 * code is NaN or a scale not a power of two in range, then dm_e4m3x8_bf16 */
template <int NM, int NS, typename ST>
__device__ __forceinline__ void dm_wq_convert(const uint4 (&w)[NM], const float (&sc)[4], bool up, ST st)
{
    uint32_t nan = 0, bad = 0;
#pragma unroll
    for (int i = 0; i < NM; i++)
        nan |= ((w[i].x & 0x7f7f7f7fu) + 0x01010101u) | ((w[i].y & 0x7f7f7f7fu) + 0x01010101u) | ((w[i].z & 0x7f7f7f7fu) + 0x01010101u) |
               ((w[i].w & 0x7f7f7f7fu) + 0x01010101u);
#pragma unroll
    for (int t = 0; t < NS; t++) {
        const uint32_t b = __float_as_uint(sc[t]);
        bad |= (b & 0x7fffffu) | ((b & 0x7f800000u) > (127u + 7u) << 23);
    }
    if (!(nan & 0x80808080u) && !bad) {
        __nv_bfloat162 m[NS];
#pragma unroll
        for (int t = 0; t < NS; t++) m[t] = __float2bfloat162_rn(sc[t] * 0x1p120f);
#pragma unroll
        for (int i = 0; i < NM; i++) {
            const __nv_bfloat162 mi = i % 2 && up ? m[(i / 2 + 1) % NS] : m[i / 2 % NS];
            uint4 l, h;
            dm_e4m3x4_bf16(w[i].x, mi, l.x, l.y);
            dm_e4m3x4_bf16(w[i].y, mi, l.z, l.w);
            dm_e4m3x4_bf16(w[i].z, mi, h.x, h.y);
            dm_e4m3x4_bf16(w[i].w, mi, h.z, h.w);
            st(i, l, h);
        }
    } else {
#pragma unroll
        for (int i = 0; i < NM; i++) {
            const float si = i % 2 && up ? sc[(i / 2 + 1) % NS] : sc[i / 2 % NS];
            st(i, dm_e4m3x8_bf16(make_uint2(w[i].x, w[i].y), si), dm_e4m3x8_bf16(make_uint2(w[i].z, w[i].w), si));
        }
    }
}

/* dm_widen_e4m3 at four threads a row (NT = 4 NK), no shared-memory bank met twice by a quarter warp
 * (the unit of 16-byte accesses: rows j and j ^ 1): thread q of row j loads 16 codes at a time, chunks
 * q + rot + 4 i (mod the row's), and stores their two bf16 chunks at slots 2 m % 8 and 2 m % 8 + 1 of
 * its row, so rows j and j ^ 1 store to slots of opposite parity. rot is 3 on odd rows of fp8_ds_mla:
 * its rows lie 656 = 5 x 128 + 16 bytes apart, and 48 bytes more puts an odd row's 64 loaded bytes
 * beside, not over, its even neighbour's (fp8 rows, 576 bytes apart, already are). dm_widen_e4m3's
 * mapping (chunks q + 4 k, 8 bytes of codes a load) took 2x the ideal wavefronts on both (ncu of
 * gpu_decode_wf.hip at fp8_ds_mla h16, 2026-12-05: 8 a STS.128, 4 a LDS.64). Values as dm_widen_e4m3's,
 * bit for bit. */
template <int DS, int NK>
__device__ __forceinline__ void dm_widen_e4m3_q(const uint8_t *__restrict__ raw, int rb, uint8_t *__restrict__ kb, int n, unsigned u)
{
    constexpr int RM = (DS ? WD_C : WD_L) / 16, NM = RM / 4, NS = DS ? WD_C / MLA_KV_DS_TILE : 1; /* chunks: row, thread */
    const int j = u / 4, q = u % 4, rot = DS && (j & 1) ? 3 : 0, a0 = (q + rot) / 4, s0 = 2 * ((q + rot) % 4);
    const int last = (q + rot + 4 * (NM - 1)) % RM; /* the one chunk that may wrap */
    uint8_t *lo = kb + j * WG_ATOM_ROW + a0 * WD_ATOM + ((s0 ^ (j % 8)) * 16), *hi = lo + (((s0 + 1) ^ (j % 8)) - (s0 ^ (j % 8))) * 16;
    auto st = [&](int i, uint4 l, uint4 h) {
        const int d = i < NM - 1 ? i * WD_ATOM : (last / 4 - a0) * WD_ATOM;
        *reinterpret_cast<uint4 *>(lo + d) = l;
        *reinterpret_cast<uint4 *>(hi + d) = h;
    };
    /* the rope (fp8_ds_mla: 8 bf16 chunks after 512 codes and 16 bytes of scales): chunks (q + rot + 4 s) % 8 */
    auto rope_at = [&](int s) { return kb + j * WG_ATOM_ROW + WD_C / 64 * WD_ATOM + ((((q + rot + 4 * s) % 8) ^ (j % 8)) * 16); };
    const uint4 z = make_uint4(0, 0, 0, 0);
    if (j >= n) {
#pragma unroll
        for (int i = 0; i < NM; i++) st(i, z, z);
        if (DS)
#pragma unroll
            for (int s = 0; s < 2; s++) *reinterpret_cast<uint4 *>(rope_at(s)) = z;
        return;
    }
    const uint8_t *row = raw + (size_t)j * rb, *lb = row + 16 * (q + rot);
    uint4 w[NM], rope[2];
#pragma unroll
    for (int i = 0; i < NM; i++) w[i] = *reinterpret_cast<const uint4 *>(i < NM - 1 ? lb + 64 * i : row + 16 * last);
    float sc[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    if (DS) {
        const uint4 s = *reinterpret_cast<const uint4 *>(row + WD_C);
        sc[0] = __uint_as_float(s.x), sc[1] = __uint_as_float(s.y), sc[2] = __uint_as_float(s.z), sc[3] = __uint_as_float(s.w);
#pragma unroll
        for (int s2 = 0; s2 < 2; s2++) rope[s2] = *reinterpret_cast<const uint4 *>(row + WD_C + 16 + 16 * ((q + rot + 4 * s2) % 8));
    }
    /* chunk i's scale tile, (q + rot + 4 i) / 8 % 4: i / 2, but i / 2 + 1 on odd i of a rotated thread past
     * q 0 (both indices known at compile time: a runtime index would put the array in local memory) */
    const bool up = rot && q >= 1;
    dm_wq_convert<NM, NS>(w, sc, up, st);
    if (DS)
#pragma unroll
        for (int s = 0; s < 2; s++) *reinterpret_cast<uint4 *>(rope_at(s)) = rope[s];
}

/* dm_widen_e4m3_q in two steps (its loads, then its conversions and stores), for a widening that frees
 * the raw rows before it may write the tile (gpu_decode_wf.hip's RE): the same mapping and values, the
 * conversions shared (dm_wq_convert). Its loads and addresses repeat dm_widen_e4m3_q's while RE is
 * unmeasured: dm_widen_e4m3_q written as load then store changes the PTX of every wf kernel (nvcc 13.0),
 * so the measured defaults keep their own code; if RE wins, that function becomes load then store. */
template <int DS, int NK> struct dm_wq {
    static constexpr int RM = (DS ? WD_C : WD_L) / 16, NM = RM / 4, NS = DS ? WD_C / MLA_KV_DS_TILE : 1; /* chunks: row, thread */
    int j, q, rot, live;
    uint4 w[NM], rope[2];
    float sc[4];
    /* this thread's codes, scales and rope of its row (u / 4) of the n rows at raw (rb bytes apart) */
    __device__ __forceinline__ void load(const uint8_t *__restrict__ raw, int rb, int n, unsigned u)
    {
        j = u / 4, q = u % 4, rot = DS && (j & 1) ? 3 : 0, live = j < n;
        if (!live) return;
        const int last = (q + rot + 4 * (NM - 1)) % RM; /* the one chunk that may wrap */
        const uint8_t *row = raw + (size_t)j * rb, *lb = row + 16 * (q + rot);
#pragma unroll
        for (int i = 0; i < NM; i++) w[i] = *reinterpret_cast<const uint4 *>(i < NM - 1 ? lb + 64 * i : row + 16 * last);
        sc[0] = sc[1] = sc[2] = sc[3] = 1.0f;
        if (DS) {
            const uint4 s = *reinterpret_cast<const uint4 *>(row + WD_C);
            sc[0] = __uint_as_float(s.x), sc[1] = __uint_as_float(s.y), sc[2] = __uint_as_float(s.z), sc[3] = __uint_as_float(s.w);
#pragma unroll
            for (int s2 = 0; s2 < 2; s2++) rope[s2] = *reinterpret_cast<const uint4 *>(row + WD_C + 16 + 16 * ((q + rot + 4 * s2) % 8));
        }
    }
    /* the loaded row widened into its row of the swizzled tile at kb (zeros past n) */
    __device__ __forceinline__ void store(uint8_t *__restrict__ kb) const
    {
        const int a0 = (q + rot) / 4, s0 = 2 * ((q + rot) % 4), last = (q + rot + 4 * (NM - 1)) % RM;
        uint8_t *lo = kb + j * WG_ATOM_ROW + a0 * WD_ATOM + ((s0 ^ (j % 8)) * 16), *hi = lo + (((s0 + 1) ^ (j % 8)) - (s0 ^ (j % 8))) * 16;
        auto st = [&](int i, uint4 l, uint4 h) {
            const int d = i < NM - 1 ? i * WD_ATOM : (last / 4 - a0) * WD_ATOM;
            *reinterpret_cast<uint4 *>(lo + d) = l;
            *reinterpret_cast<uint4 *>(hi + d) = h;
        };
        /* the rope (fp8_ds_mla: 8 bf16 chunks after 512 codes and 16 bytes of scales): chunks (q + rot + 4 s) % 8 */
        auto rope_at = [&](int s) { return kb + j * WG_ATOM_ROW + WD_C / 64 * WD_ATOM + ((((q + rot + 4 * s) % 8) ^ (j % 8)) * 16); };
        const uint4 z = make_uint4(0, 0, 0, 0);
        if (!live) {
#pragma unroll
            for (int i = 0; i < NM; i++) st(i, z, z);
            if (DS)
#pragma unroll
                for (int s = 0; s < 2; s++) *reinterpret_cast<uint4 *>(rope_at(s)) = z;
            return;
        }
        /* chunk i's scale tile, (q + rot + 4 i) / 8 % 4: i / 2, but i / 2 + 1 on odd i of a rotated thread past
         * q 0 (both indices known at compile time: a runtime index would put the array in local memory) */
        const bool up = rot && q >= 1;
        dm_wq_convert<NM, NS>(w, sc, up, st);
        if (DS)
#pragma unroll
            for (int s = 0; s < 2; s++) *reinterpret_cast<uint4 *>(rope_at(s)) = rope[s];
    }
};

/* Cache rows [c, c + 64) of a bf16 wide cache into a swizzled tile (one cp.async commit group's copies)
 * by NT threads, u = 0 .. NT - 1 (DM_THREADS: the block; 128: one warpgroup): row u / T, 16-byte chunks
 * u % T + T i of its 72 (T = NT / 64 threads a row); rows at or past end zero-filled (P . V never meets
 * the pool's NaN poison). */
template <int NT = DM_THREADS>
__device__ __forceinline__ void dm_load_wide(const gpu_kv_desc &kv, int slot, int c, int end, uint8_t *tile, int u = threadIdx.x)
{
    constexpr int T = NT / WD_NK;
    const int j = u / T, ok = j < end - c;
    const uint8_t *src = ok ? kv_row(kv, slot, c + j) : kv.pool;
    const uint32_t d = tc_smem(tile);
    for (int ch = u % T; ch < WD_L / 8; ch += T) tc_cp<16>(d + wd_off(j, ch * 8), src + (ok ? ch * 16 : 0), ok ? 16 : 0);
}

#define DM_SHM_MAX 232448 /* dynamic shared memory a block may opt into on sm_90 (227 KB) */

/* The wgmma decode (gpu_decode_wg.hip): 64 heads a block, bf16 cache of C 512 + R 64. */
int gpu_decode_wg_fits(const gpu_kv_desc *kv, int h);
mla_status gpu_attn_decode_wg(hipStream_t st, const gpu_decode_args *a, const dm_geom &g);
/* Its seesaw schedule (gpu_decode_ss.hip), opt-in: MLA_GPU_DECODE_WG_SS=1. */
mla_status gpu_attn_decode_ss(hipStream_t st, const gpu_decode_args *a, const dm_geom &g);
/* The transposed wgmma decode (gpu_decode_wt.hip): C 512 + R 64, up to 32 heads in bf16, any head count
 * in fp8 (64-head groups above 32). */
int gpu_decode_wt_fits(const gpu_kv_desc *kv, int h);
mla_status gpu_attn_decode_wt(hipStream_t st, const gpu_decode_args *a, const dm_geom &g);
/* Its warp-specialized fp8 form (gpu_decode_wf.hip): an e4m3fn cache, up to 32 heads, or any head count
 * in 32-head groups (wf_groups); wt dispatches to it. */
int gpu_decode_wf_fits(const gpu_kv_desc *kv, int h);
mla_status gpu_attn_decode_wf(hipStream_t st, const gpu_decode_args *a, const dm_geom &g);

#endif
