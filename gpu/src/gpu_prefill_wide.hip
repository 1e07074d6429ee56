/* gpu_prefill_wide.hip: the pipelined wgmma prefill (gpu_prefill_pipe.hip) with S over 128 keys at a
 * time: 12 m64n128k16 a warpgroup instead of 2 x 12 m64n64k16 (Q read from shared memory half as
 * often), one wait for S and two block barriers per 128 keys, while the softmax, P's rounding and
 * O += P V still go 64 keys at a time in the same order, so the result is the pipe kernel's bit for
 * bit (the tiles the reference's attn_tc emulation assumes stay 64 keys). MLA_GPU_PREFILL_WIDE=1 picks
 * it (read once); off by default until measured.
 *
 * Why (ncu of the pipe kernel, H200 2026-12-04, P1 s 4096, c6b1d58): 502 warp instructions a 64-key
 * tile, tensor pipe 39% busy, 68% of cycles without an eligible warp; the stalls are the chain of one
 * tile (barrier, S, its wait, the softmax, the wait for P V), not the instruction count. Halving the
 * barriers and S waits per key and doubling each S's size shortens that chain per FLOP; the
 * ping-pong (gpu_prefill_pong.hip) did not, because its turns were shorter than a softmax.
 *
 * Shapes: 128-key tiles in two stages of 80 KB (K: 3 atoms of 128 rows, k_nope 0-1 and k_pe 2; V: 2
 * atoms of 128 rows), each copied as two 64-row halves by pw_issue (the second half at +8 KB in each
 * atom); with Q (48 KB) 209 KB. A tile's second half past the part's keys (an odd count of 64-key
 * tiles) is zero-filled and run like any other: all its keys are hidden, so corr is 1, p is 0, and m,
 * l and O come out as they were (O + 0 . V). Skipping it instead (a branch around its P V) made ptxas
 * serialize the wgmmas (C7511) and spill 176 bytes; straight-line, 251 registers and no spills.
 * Step of tile T (halves a = 64-key tile 2T, b = 2T + 1): barrier; S(T) and P V(T - 1, b) issued;
 * wait S; softmax(a) under P V(T - 1, b); wait P V; barrier (both warpgroups are done with tile T - 1:
 * its stage takes tile T + 1); P(a) packed, O *= corr(a); P V(T, a) issued; softmax(b) under it; wait;
 * P(b) packed, O *= corr(b); P V(T, b) goes with the next step's S. The copy of tile T + 1 is issued
 * half a tile before its use (the pipe kernel: two 64-key tiles ahead). Not yet run on a GPU. */
#include "gpu_internal.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_prefill_wg.h"

#define PK_BN 128                          /* keys a tile */
#define PK_ATOM (PK_BN * WG_ATOM_ROW)      /* an atom of a K or V tile: 128 rows, 16 KB */
#define PK_HALF (PW_BN * WG_ATOM_ROW)      /* the second 64-row half inside an atom: 8 KB */
#define PK_KT (PW_QK / 64 * PK_ATOM)       /* 48 KB */
#define PK_STAGE (PK_KT + PW_V / 64 * PK_ATOM) /* 80 KB */
#define PK_SHM (1024 + PW_QT + 2 * PK_STAGE)

/* S = Q K^T of one warpgroup against the 128 keys of the K tile at kt, as two 64-column halves, one
 * wgmma group (scale-d 0 on the first k16 step, as pw_scores). */
__device__ __forceinline__ void pk_scores(float (&sa)[32], float (&sb)[32], uint32_t qa, uint32_t kt)
{
    wg_fence();
    const uint64_t dq = wg_desc_k(qa), dk = wg_desc_k(kt);
    wg_m64n128_ss<0>(sa, sb, dq, dk);
#pragma unroll
    for (int ks = 1; ks < PW_QK / 16; ks++)
        wg_m64n128_ss(sa, sb, wg_desc_add(dq, ks / 4 * PW_QATOM + ks % 4 * 32), wg_desc_add(dk, ks / 4 * PK_ATOM + ks % 4 * 32));
    wg_commit();
}

/* One part, as pp_part, with 128-key S tiles (above). */
__device__ void pk_part(const gpu_prefill_args &a, float s_mul, int h, int base, int nk, int causal, int row0,
                        uint8_t *qs, uint8_t *kst, float (&o)[64], float (&lse)[2])
{
    const int tid = threadIdx.x, warp = (tid % 128) / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int wg = wg_index();
    const int ntiles = (nk + PW_BN - 1) / PW_BN, nt = (ntiles + 1) / 2; /* 64-key tiles, 128-key tiles */
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 64; i++) o[i] = 0.0f;
    __syncthreads(); /* the previous part is done with the stages */
    auto issue = [&](int t) { /* tile t into stage t % 2, both halves (zeros past the part's keys) */
        uint8_t *k = kst + (t % 2) * PK_STAGE, *v = k + PK_KT;
        pw_issue<PK_ATOM>(a, h, base, nk, 2 * t, k, v, 2 * nt);
        pw_issue<PK_ATOM>(a, h, base, nk, 2 * t + 1, k + PK_HALF, v + PK_HALF, 2 * nt);
    };
    issue(0);
    tc_commit();
    issue(1);
    tc_commit();
    const int r0 = row0 + 64 * wg + 16 * warp + gq;
    const int vis_all = pw_vis_all(a, nk, causal, row0, wg);
    const uint32_t qa = tc_smem(qs) + wg * 64 * WG_ATOM_ROW;
    auto kt = [&](int t) { return tc_smem(kst + (t % 2) * PK_STAGE); };
    auto vt = [&](int t) { return tc_smem(kst + (t % 2) * PK_STAGE + PK_KT); };
    uint32_t pa[PW_BN / 16][4];
    float sa[32], sb[32], corr[2];
    auto softmax = [&](int j, float(&s)[32]) { /* 64-key tile j of the part */
        pw_softmax_tile(s, m, l, corr, s_mul, j, vis_all, r0, tq, nk, causal, a.causal_plus);
    };
    if (nt > 0) {      /* tile 0: no P V before its S */
        tc_wait<1>();
        wg_proxy_fence();
        __syncthreads();
        pk_scores(sa, sb, qa, kt(0));
        wg_wait<0>();
        wg_fence_operand(sa);
        wg_fence_operand(sb);
        softmax(0, sa);
        pw_pack(sa, pa);
        pw_rescale(o, corr);
        {
            wg_fence_operand(o);
            wg_fence_operand(pa);
            wg_fence();
            pw_pv<PK_ATOM>(o, pa, vt(0));
            softmax(1, sb);
            wg_wait<0>();
            wg_fence_operand(o);
            wg_fence_operand(pa);
            wg_fence_operand(sb);
            pw_pack(sb, pa);
            pw_rescale(o, corr);
        }
    }
    for (int t = 1; t < nt; t++) {
        /* commit groups: tiles 0 and 1, then tile t + 1 at step t: tile t is always the newest */
        tc_wait<0>();
        wg_proxy_fence();
        __syncthreads(); /* tile t visible to both warpgroups */
        wg_fence_operand(o);
        wg_fence_operand(pa);
        pk_scores(sa, sb, qa, kt(t));
        pw_pv<PK_ATOM>(o, pa, vt(t - 1) + PK_HALF); /* P V(t - 1, b) */
        wg_wait<1>();
        wg_fence_operand(sa);
        wg_fence_operand(sb);
        softmax(2 * t, sa);
        wg_wait<0>();
        wg_fence_operand(o);
        wg_fence_operand(pa);
        wg_fence_operand(sa);
        __syncthreads(); /* both warpgroups are done with tile t - 1: its stage takes tile t + 1 */
        if (t + 1 < nt) issue(t + 1);
        tc_commit();
        pw_pack(sa, pa);
        pw_rescale(o, corr);
        {
            wg_fence_operand(o);
            wg_fence_operand(pa);
            wg_fence();
            pw_pv<PK_ATOM>(o, pa, vt(t)); /* P V(t, a) under softmax(b) */
            softmax(2 * t + 1, sb);
            wg_wait<0>();
            wg_fence_operand(o);
            wg_fence_operand(pa);
            wg_fence_operand(sb);
            pw_pack(sb, pa);
            pw_rescale(o, corr);
        }
    }
    if (nt > 0) {
        wg_fence_operand(o);
        wg_fence_operand(pa);
        wg_fence();
        pw_pv<PK_ATOM>(o, pa, vt(nt - 1) + PK_HALF);
        wg_wait<0>();
        wg_fence_operand(o);
    }
    pw_finish(o, m, l, lse);
}

__global__ void __launch_bounds__(PW_THREADS, 1) k_attn_prefill_wide(gpu_prefill_args a, float s_mul)
{
    extern __shared__ uint8_t pk_mem[];
    pw_block(a, pk_mem, [&](int h, int base, int nk, int causal, int row0, uint8_t *qs, uint8_t *kst, float(&o)[64],
                            float(&lse)[2]) { pk_part(a, s_mul, h, base, nk, causal, row0, qs, kst, o, lse); });
}

/* MLA_GPU_PREFILL_WIDE=1 (read once): this kernel where the pipe kernel fits. */
extern "C" int gpu_prefill_wide_on(void)
{
    static const int on = gpu_env_switch("MLA_GPU_PREFILL_WIDE", 1);
    return on;
}

extern "C" mla_status gpu_attn_prefill_wide(hipStream_t st, const gpu_prefill_args *a)
{
    if (!gpu_prefill_wg_fits(a->p, a->r, a->v))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: wide wgmma prefill: needs P 128, R 64, V 128 (have %d, %d, %d)",
                          a->p, a->r, a->v);
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_prefill_wide),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PK_SHM));
        attr = 1;
    }
    dim3 grid((a->max_new + PW_BM - 1) / PW_BM, a->n_seqs, a->h);
    k_attn_prefill_wide<<<grid, PW_THREADS, PK_SHM, st>>>(*a, a->scale * 1.4426950408889634f);
    MLA_HIP_LAUNCHED("k_attn_prefill_wide");
    return MLA_OK;
}

#endif
