/* gpu_decode_tile.h: the head-grouped decode kernel's steps, written as host-and-device functions
 * of (block state, thread index) so that the same code runs inside the kernel (gpu_attn.hip, one
 * step per barrier interval) and in a host emulation that steps every thread of a block in turn
 * (gpu/tests/test_decode_tile.cpp, run in CI without a GPU).
 *
 * One block owns one decode token, a group of DT_HG heads and one KV split. Each tile of DT_NK cache
 * rows is dequantized into shared memory once and used by all heads of the group, where the first
 * decode kernel re-read the cache for every head. Numerics as that kernel and NUMERICS.md: fp32 scores,
 * online softmax, fp32 P.V; the split's normalized output and LSE go to the same combine.
 *
 * Steps of a block (a barrier after each):
 *   dt_load_q                                  once
 *   dt_load_tile, dt_scores, dt_softmax, dt_pv per tile of rows
 *   dt_store                                   once */
#ifndef MLA_GPU_DECODE_TILE_H
#define MLA_GPU_DECODE_TILE_H

#include <math.h>

#include "gpu_dtype.h"
#include "gpu_kv.h"

#define DT_HG 8        /* heads per block */
#define DT_NK 16       /* cache rows per tile */
#define DT_THREADS 256 /* a score is two half dot products: DT_HG * DT_NK * 2 == DT_THREADS */
#define DT_LMAX 576    /* kv_lora_rank + rope dim, at most */
#define DT_LD (DT_LMAX + 2) /* row stride = 2 (mod 32 banks): with the two halves of a dot product on
                            * even and odd columns, the 32 lanes of a warp read 32 different banks */
#define DT_CPT 2       /* output dims per thread: kv_lora_rank <= DT_CPT * DT_THREADS */

/* Shared memory of one block (~56 KB: fits the 64 KB LDS of CDNA). */
typedef struct dt_shared {
    float q[DT_HG][DT_LD];
    float k[DT_NK][DT_LD];
    float part[2][DT_HG][DT_NK]; /* half dot products */
    float p[DT_HG][DT_NK];       /* probabilities of the tile */
    float m[DT_HG], l[DT_HG], corr[DT_HG];
} dt_shared;

/* The block's work: token t, heads [h0, h0 + DT_HG) (those < h exist), rows [j0, j1) of its sequence. */
typedef struct dt_block {
    int t, h0, split, slot, j0, j1;
} dt_block;

typedef struct dt_args {
    const float *q_abs, *q_pe; /* [T, H, C], [T, H, R] */
    gpu_kv_desc kv;
    const int32_t *tok_seq;
    const gpu_seq *seqs;
    float *part_o;   /* [T, H, S, C] */
    float *part_lse; /* [T, H, S] */
    int t, h, splits, split_len; /* split_len: gpu_decode_args' */
    float scale;
    int causal_plus;
} dt_args;

/* Which rows the block (t, group g, split sp) attends: as the first decode kernel, so the two agree on
 * the split boundaries. */
MLA_HD dt_block dt_block_of(const dt_args &a, int t, int g, int sp)
{
    dt_block b;
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    b.t = t;
    b.h0 = g * DT_HG;
    b.split = sp;
    b.slot = s.slot;
    kv_split_rows(s, t, a.causal_plus, a.splits, a.split_len, sp, &b.j0, &b.j1);
    return b;
}

MLA_HD void dt_load_q(const dt_args &a, const dt_block &b, dt_shared &sh, int tid)
{
    int c = a.kv.codec.c, r = a.kv.codec.r;
    for (int i = tid; i < DT_HG * (c + r); i += DT_THREADS) {
        int hh = i / (c + r), e = i % (c + r), h = b.h0 + hh;
        float v = 0.0f;
        if (h < a.h) v = e < c ? a.q_abs[((int64_t)b.t * a.h + h) * c + e] : a.q_pe[((int64_t)b.t * a.h + h) * r + e - c];
        sh.q[hh][e] = v;
    }
    if (tid < DT_HG) {
        sh.m[tid] = -INFINITY;
        sh.l[tid] = 0.0f;
    }
}

/* Rows [c0, c0 + n) dequantized to f32. */
MLA_HD void dt_load_tile(const dt_args &a, const dt_block &b, dt_shared &sh, int tid, int c0, int n)
{
    int L = a.kv.codec.c + a.kv.codec.r;
    for (int i = tid; i < n * L; i += DT_THREADS) {
        int j = i / L, e = i % L;
        sh.k[j][e] = kv_load(a.kv, kv_row(a.kv, b.slot, c0 + j), e);
    }
}

/* Thread tid: the even (tid & 1 == 0) or odd columns of the dot product of head tid / (2 DT_NK) with
 * row (tid / 2) % DT_NK. */
MLA_HD void dt_scores(const dt_args &a, dt_shared &sh, int tid, int n)
{
    int half = tid & 1, j = (tid >> 1) % DT_NK, hh = tid / (2 * DT_NK);
    int L = a.kv.codec.c + a.kv.codec.r;
    float d = 0.0f;
    if (j < n)
        for (int e = half; e < L; e += 2) d += sh.q[hh][e] * sh.k[j][e];
    sh.part[half][hh][j] = d;
}

/* Threads 0 .. DT_HG-1, one head each: the online-softmax update over the tile's n rows. */
MLA_HD void dt_softmax(const dt_args &a, dt_shared &sh, int tid, int n)
{
    if (tid >= DT_HG) return;
    float s[DT_NK], mc = sh.m[tid];
    for (int j = 0; j < n; j++) {
        s[j] = (sh.part[0][tid][j] + sh.part[1][tid][j]) * a.scale;
        mc = s[j] > mc ? s[j] : mc;
    }
    float corr = expf(sh.m[tid] - mc), l = sh.l[tid] * corr; /* m = -inf on the first tile: corr 0 */
    for (int j = 0; j < DT_NK; j++) {
        float p = j < n ? expf(s[j] - mc) : 0.0f;
        sh.p[tid][j] = p;
        l += p;
    }
    sh.m[tid] = mc;
    sh.l[tid] = l;
    sh.corr[tid] = corr;
}

/* acc[hh][k] holds output dim tid + k * DT_THREADS of head h0 + hh (unnormalized). */
MLA_HD void dt_pv(const dt_args &a, dt_shared &sh, int tid, int n, float (&acc)[DT_HG][DT_CPT])
{
    for (int hh = 0; hh < DT_HG; hh++)
        for (int k = 0; k < DT_CPT; k++) acc[hh][k] *= sh.corr[hh];
    for (int k = 0; k < DT_CPT; k++) {
        int e = tid + k * DT_THREADS;
        if (e >= a.kv.codec.c) continue;
        for (int j = 0; j < n; j++) {
            float v = sh.k[j][e];
            for (int hh = 0; hh < DT_HG; hh++) acc[hh][k] += sh.p[hh][j] * v;
        }
    }
}

/* The split's normalized output and LSE, as the first decode kernel writes them. */
MLA_HD void dt_store(const dt_args &a, const dt_block &b, const dt_shared &sh, int tid,
                     const float (&acc)[DT_HG][DT_CPT])
{
    int c = a.kv.codec.c;
    for (int hh = 0; hh < DT_HG; hh++) {
        int h = b.h0 + hh;
        if (h >= a.h) break;
        int64_t pi = ((int64_t)b.t * a.h + h) * a.splits + b.split;
        float l = sh.l[hh];
        for (int k = 0; k < DT_CPT; k++) {
            int e = tid + k * DT_THREADS;
            if (e < c) a.part_o[pi * c + e] = l > 0.0f ? acc[hh][k] / l : 0.0f;
        }
        if (tid == 0) a.part_lse[pi] = l > 0.0f ? sh.m[hh] + logf(l) : -INFINITY;
    }
}

/* The engine can use this kernel when the shapes fit its fixed tiles. */
MLA_HD int dt_fits(int c, int r) { return c + r <= DT_LMAX && c <= DT_CPT * DT_THREADS && c >= 2; }

#endif
