/* gpu_prefill_tile.h: the query-tiled prefill kernel's steps (naive / MHA form), host-and-device
 * functions of (block state, thread index) like gpu_decode_tile.h, so tests/test_prefill_tile.cpp
 * runs the kernel's logic on the host in CI.
 *
 * One block owns PT_QT query rows of one sequence and one head. Key tiles of PT_NK rows (K = [k_nope |
 * k_pe], V) are staged in shared memory once for all PT_QT queries, where the first prefill kernel
 * read every key once per query. Numerics as that kernel: fp32 scores and online softmax, the new
 * tokens (causal) and the cached context attended separately, each part's output rounded to bf16 and
 * merged by LSE in fp32 (chunked prefill's rounding points, reference/NUMERICS.md).
 *
 * Steps (a barrier after each): pt_load_q; per part (new tokens, then context when n_past > 0):
 * pt_part_begin, then per key tile pt_load_kv, pt_scores, pt_softmax, pt_pv, then pt_part_end;
 * finally pt_store. */
#ifndef MLA_GPU_PREFILL_TILE_H
#define MLA_GPU_PREFILL_TILE_H

#include <math.h>

#include "gpu_dtype.h"
#include "gpu_types.h"

#define PT_QT 32          /* query rows per block */
#define PT_NK 16          /* key rows per tile */
#define PT_THREADS 256    /* scores: PT_QT * PT_NK == 2 * PT_THREADS */
#define PT_DMAX 192       /* qk_nope + qk_rope, at most */
#define PT_VMAX 128       /* v_head_dim, at most; it must divide PT_THREADS */
#define PT_LD (PT_DMAX + 2) /* row stride = 2 (mod 32 banks) */
#define PT_LDV (PT_VMAX + 2)
#define PT_ACC (PT_QT * PT_VMAX / PT_THREADS) /* output values per thread */

/* ~48 KB: under CDNA's 64 KB and CUDA's default 48 KB. */
typedef struct pt_shared {
    float q[PT_QT][PT_LD];
    float k[PT_NK][PT_LD];
    float v[PT_NK][PT_LDV];
    float p[PT_QT][PT_NK];
    float m[PT_QT], l[PT_QT], corr[PT_QT];
    float lse_new[PT_QT], fa[PT_QT], fb[PT_QT], lse[PT_QT];
} pt_shared;

typedef struct pt_args {
    const uint16_t *q_nope, *q_pe; /* [T, H, P], [T, H, R] */
    const uint16_t *kvx;           /* [n_ws, H (P + V)]: k_nope | v per head */
    const uint16_t *ws_kpe;        /* [n_ws, R] */
    const gpu_seq *seqs;
    uint16_t *out; /* [T, H, V] */
    float *lse;    /* [T, H] */
    int h, p, r, v;
    float scale;
    int causal_plus, lse_bf16;
} pt_args;

/* Block (query tile qt of sequence si, head h): rows i0 .. i0 + rows - 1 of the sequence's new tokens. */
typedef struct pt_block {
    gpu_seq s;
    int h, i0, rows;
    int k0, k1; /* key positions of the current part */
    int ctx;    /* 1 while attending the cached context */
} pt_block;

MLA_HD pt_block pt_block_of(const pt_args &a, int qt, int si, int h)
{
    pt_block b;
    b.s = a.seqs[si];
    b.h = h;
    b.i0 = qt * PT_QT;
    b.rows = b.s.n_new - b.i0 < PT_QT ? b.s.n_new - b.i0 : PT_QT; /* <= 0: nothing to do */
    b.k0 = b.k1 = 0;
    b.ctx = 0;
    return b;
}

MLA_HD int pt_fits(int p, int r, int v)
{
    return p + r <= PT_DMAX && v <= PT_VMAX && v >= 1 && PT_THREADS % v == 0;
}

/* Keys row i of the block may see in the current part: [k0, end). */
MLA_HD int pt_row_end(const pt_args &a, const pt_block &b, int i)
{
    if (b.ctx) return b.s.n_past;
    int total = b.s.n_past + b.s.n_new, end = b.s.n_past + b.i0 + i + 1 + a.causal_plus;
    return end < total ? end : total;
}

MLA_HD void pt_load_q(const pt_args &a, const pt_block &b, pt_shared &sh, int tid)
{
    int d = a.p + a.r;
    for (int x = tid; x < PT_QT * d; x += PT_THREADS) {
        int i = x / d, e = x % d;
        float val = 0.0f;
        if (i < b.rows) {
            int64_t t = b.s.tok0 + b.i0 + i;
            val = gd_bf16_to_f32(e < a.p ? a.q_nope[(t * a.h + b.h) * a.p + e] : a.q_pe[(t * a.h + b.h) * a.r + e - a.p]);
        }
        sh.q[i][e] = val;
    }
}

/* Starts a part: ctx 0 = the new tokens, keys [n_past, last row's end); ctx 1 = the context [0, n_past). */
MLA_HD void pt_part_begin(const pt_args &a, pt_block &b, pt_shared &sh, int tid, int ctx)
{
    b.ctx = ctx;
    b.k0 = ctx ? 0 : b.s.n_past;
    b.k1 = pt_row_end(a, b, b.rows - 1);
    if (tid < PT_QT) {
        sh.m[tid] = -INFINITY;
        sh.l[tid] = 0.0f;
    }
}

MLA_HD void pt_load_kv(const pt_args &a, const pt_block &b, pt_shared &sh, int tid, int c0, int n)
{
    int d = a.p + a.r;
    int64_t ld = (int64_t)a.h * (a.p + a.v);
    for (int x = tid; x < n * d; x += PT_THREADS) {
        int j = x / d, e = x % d;
        int64_t w = b.s.ws0 + c0 + j;
        sh.k[j][e] = gd_bf16_to_f32(e < a.p ? a.kvx[w * ld + (int64_t)b.h * (a.p + a.v) + e] : a.ws_kpe[w * a.r + e - a.p]);
    }
    for (int x = tid; x < n * a.v; x += PT_THREADS) {
        int j = x / a.v, e = x % a.v;
        int64_t w = b.s.ws0 + c0 + j;
        sh.v[j][e] = gd_bf16_to_f32(a.kvx[w * ld + (int64_t)b.h * (a.p + a.v) + a.p + e]);
    }
}

/* Thread tid: rows tid / 8 and keys tid % 8, tid % 8 + 8; scores land in p, masked later. */
MLA_HD void pt_scores(const pt_args &a, pt_shared &sh, int tid, int n)
{
    int i = tid / 8, d = a.p + a.r;
    for (int jj = 0; jj < 2; jj++) {
        int j = tid % 8 + 8 * jj;
        float s = 0.0f;
        if (j < n)
            for (int e = 0; e < d; e++) s += sh.q[i][e] * sh.k[j][e];
        sh.p[i][j] = s * a.scale;
    }
}

/* Threads 0 .. PT_QT-1, one query row each: online-softmax update over the keys it sees in the tile. */
MLA_HD void pt_softmax(const pt_args &a, const pt_block &b, pt_shared &sh, int tid, int c0, int n)
{
    if (tid >= PT_QT) return;
    int i = tid, vis = tid < b.rows ? pt_row_end(a, b, i) - c0 : 0; /* keys j < vis are visible */
    if (vis > n) vis = n;
    float m = sh.m[i], mc = m;
    for (int j = 0; j < vis; j++) mc = sh.p[i][j] > mc ? sh.p[i][j] : mc;
    float corr = mc == -INFINITY ? 1.0f : expf(m - mc), l = sh.l[i] * corr;
    for (int j = 0; j < PT_NK; j++) {
        float pj = j < vis ? expf(sh.p[i][j] - mc) : 0.0f;
        sh.p[i][j] = pj;
        l += pj;
    }
    sh.m[i] = mc;
    sh.l[i] = l;
    sh.corr[i] = corr;
}

/* acc[k]: column tid % v of row tid / v + k * (PT_THREADS / v), unnormalized. */
MLA_HD void pt_pv(const pt_args &a, pt_shared &sh, int tid, int n, float (&acc)[PT_ACC])
{
    int col = tid % a.v, stride = PT_THREADS / a.v, nrow = PT_QT / stride;
    for (int k = 0; k < nrow; k++) {
        int i = tid / a.v + k * stride;
        float x = acc[k] * sh.corr[i];
        for (int j = 0; j < n; j++) x += sh.p[i][j] * sh.v[j][col];
        acc[k] = x;
    }
}

/* End of the new-token part: its normalized output goes to keep[], its LSE to lse_new. */
MLA_HD void pt_part_end_new(const pt_args &a, pt_shared &sh, int tid, const float (&acc)[PT_ACC], float (&keep)[PT_ACC])
{
    int stride = PT_THREADS / a.v, nrow = PT_QT / stride;
    for (int k = 0; k < nrow; k++) {
        int i = tid / a.v + k * stride;
        keep[k] = acc[k] / sh.l[i];
    }
    if (tid < PT_QT) sh.lse_new[tid] = sh.m[tid] + logf(sh.l[tid]);
}

/* End of the context part: per row, the LSE-merge weights of the two parts and the merged LSE. */
MLA_HD void pt_part_end_ctx(const pt_args &a, pt_shared &sh, int tid)
{
    if (tid >= PT_QT) return;
    float la = sh.m[tid] + logf(sh.l[tid]), lb = sh.lse_new[tid];
    if (a.lse_bf16) {
        la = gd_round_bf16(la);
        lb = gd_round_bf16(lb);
    }
    float mm = la > lb ? la : lb, wa = expf(la - mm), wb = expf(lb - mm);
    sh.fa[tid] = wa / (wa + wb);
    sh.fb[tid] = wb / (wa + wb);
    sh.lse[tid] = logf(wa + wb) + mm;
}

/* Output rows: the new part alone (no context), or each part rounded to bf16 and merged. */
MLA_HD void pt_store(const pt_args &a, const pt_block &b, const pt_shared &sh, int tid, const float (&acc)[PT_ACC],
                     const float (&keep)[PT_ACC])
{
    int col = tid % a.v, stride = PT_THREADS / a.v, nrow = PT_QT / stride;
    for (int k = 0; k < nrow; k++) {
        int i = tid / a.v + k * stride;
        if (i >= b.rows) continue;
        float o = keep[k];
        if (b.s.n_past > 0) o = gd_round_bf16(acc[k] / sh.l[i]) * sh.fa[i] + gd_round_bf16(o) * sh.fb[i];
        int64_t t = b.s.tok0 + b.i0 + i;
        a.out[(t * a.h + b.h) * a.v + col] = gd_f32_to_bf16(o);
    }
    if (tid < b.rows) {
        int64_t t = b.s.tok0 + b.i0 + tid;
        a.lse[t * a.h + b.h] = b.s.n_past > 0 ? sh.lse[tid] : sh.lse_new[tid];
    }
}

#endif
