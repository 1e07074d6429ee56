/* gpu_prefill_ws.hip: the pipelined wgmma prefill (gpu_prefill_pipe.hip's schedule: S of tile k and
 * P V of tile k - 1 issued together, the softmax of tile k under P V(k - 1)) with FlashAttention-3's
 * warp specialization: a third warpgroup (threads 256-383) only copies K/V tiles (cp.async into
 * gpu_prefill_wg.h's K and V rings, one mbarrier arrival per thread and tile when its copies land)
 * and gives registers back (setmaxnreg 56), while the two consumer warpgroups (threads 0-255, 64 query
 * rows each) only compute, with 224 registers, and never wait for each other within a part: a tile is
 * ready when its full[] phase completes, and a consumer frees K(t) after S(t) and V(t) after P V(t)
 * (kfree[], vfree[]: 256 arrivals). The default wgmma prefill since 2026-12-04 (bit-identical to the
 * pipe kernel, 1.12-1.21x it on P1, H200, gpu/bench/KERNELS.md "ws v1"); MLA_GPU_PREFILL_WS=0 gives the
 * pipe kernel, =2 adds gpu_prefill_pong.hip's turns of the consumers at the tensor cores (slower), =3
 * and =4 the persistent forms below (both slower but at b16 s 1024: 1.015x and 1.043x ws, H200 2026-12-04).
 *
 * Why (ncu of the pipe kernel, H200 2026-12-04, P1 s 4096, c6b1d58): tensor pipe 39% busy, 68% of
 * cycles without an eligible warp, the stalls those of one tile's chain (barrier, S, its wait, the
 * softmax, the wait for P V); both warpgroups met at a __syncthreads a tile because each stage's
 * copies were spread over all 256 threads. Here the copies, their address math (~50 instructions a
 * thread a tile) and that barrier leave the consumers, which can run out of step.
 *
 * The rings, their phases and the consumers' part: gpu_prefill_ring.h (pr_part with COPY 0). The
 * producer waits for kfree(t - 4) and vfree(t - 5) before copying tile t, and drains its copies
 * (cp.async.wait_all) before it leaves. Numerics: the pipe kernel's, bit for bit (the same helpers on
 * the same values in the same order in each consumer).
 *
 * Registers (nvcc 13 -Xptxas -v): launched at 168 a thread (384 threads), then 56 for the producer and
 * 224 for the consumers (2 x 128 x 224 + 128 x 56 = 64,512 of 65,536): no spills; 40 / 232 spilled 16
 * bytes in the producer (its two rows' copy addresses), 24 / 240 spilled 104. */
#include "gpu_internal.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_prefill_ring.h"

#define WS_THREADS (PW_THREADS + 128) /* two consumer warpgroups and the producer */

/* The producer warpgroup's copies of one query tile (row0 < the sequence's n_new): every tile of its
 * parts, in the consumers' order (pw_item's), from global tile t on (t advanced past them). */
__device__ __forceinline__ void ws_produce(const gpu_prefill_args &a, int y, int h, int row0, uint8_t *kst, int &t)
{
    const int lt = threadIdx.x - PW_THREADS; /* 0 .. 127: rows lt / 4 and 32 + lt / 4 of a tile */
    const gpu_seq s = a.seqs[y];
    const int last = min(row0 + PW_BM, s.n_new) - 1, nk_new = min(s.n_new, last + 1 + a.causal_plus);
    auto part = [&](int base, int nk) {
        for (int k = 0; k < (nk + PW_BN - 1) / PW_BN; k++, t++) pr_fill<2>(a, h, base, nk, k, t, kst, lt);
    };
    part(s.ws0 + s.n_past, nk_new);
    if (s.n_past > 0) part(s.ws0, s.n_past);
}

template <int TURNS, int SKIP> __global__ void __launch_bounds__(WS_THREADS, 1) k_attn_prefill_ws(gpu_prefill_args a, float s_mul)
{
    extern __shared__ uint8_t ws_mem[];
    uint8_t *kst = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(ws_mem) + 1023) & ~(uintptr_t)1023) + PW_QT;
    if (threadIdx.x == 0) pr_init(kst, 128); /* full[]: the producer's threads */
    __syncthreads();                          /* the barriers initialized, for all three warpgroups */
    if (threadIdx.x >= PW_THREADS) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
        const int row0 = (gridDim.x - 1 - blockIdx.x) * PW_BM; /* as pw_block */
        int t = 0;
        if (row0 < a.seqs[blockIdx.y].n_new) ws_produce(a, blockIdx.y, blockIdx.z, row0, kst, t);
        asm volatile("cp.async.wait_all;\n" ::: "memory"); /* no thread leaves with copies in flight */
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");
    int t0 = 0; /* tiles of the block's earlier parts */
    pw_block(a, ws_mem, [&](int h, int base, int nk, int causal, int row0, uint8_t *qs, uint8_t *kst_, float(&o)[64],
                            float(&lse)[2]) {
        pr_part<0, TURNS, 0, SKIP>(a, s_mul, h, base, nk, causal, row0, qs, kst_, t0, o, lse);
        t0 += (nk + PW_BN - 1) / PW_BN;
    });
}

/* The persistent form (MLA_GPU_PREFILL_WS=3): one block an SM takes the query tiles i = blockIdx.x,
 * + gridDim.x, ... of the grid's order (query tiles of one sequence and head, then sequence, then head),
 * so the producer copies the next tile's keys while the consumers finish this one's last P V and store
 * its output, and no block is started per query tile; each consumer warpgroup restages only its own Q
 * rows once it has read them. Tiles running together share a head's keys in L2 as the grid's blocks did:
 * ordered last query tiles first across heads instead (79d3b71), every SM streamed another head's keys
 * and the kernel went DRAM-bound (16k: 25.9 ms against the ws kernel's 21.5, H200 2026-12-04). Within a
 * (sequence, head) the query tiles are rotated by its index so that a block's tiles, gridDim.x apart, are
 * not always the same few (at 8 query tiles and 132 blocks: 2 of 8, a 2x imbalance). Tile numbers t run
 * on over the tiles (the rings' phases). Numerics: pw_item's and pr_part's, bit for bit the ws kernel's. */
__device__ __forceinline__ bool wsp_tile(const gpu_prefill_args &a, int i, int nbx, int &y, int &h, int &row0)
{
    const int g = i / nbx; /* (sequence, head) group: h = g / n_seqs, y = g % n_seqs */
    y = g % a.n_seqs;
    h = g / a.n_seqs;
    row0 = (nbx - 1 - (i % nbx + g) % nbx) * PW_BM;
    return row0 < a.seqs[y].n_new;
}

/* The next query tile of this block at or after i that has rows (n when none). */
__device__ __forceinline__ int wsp_next(const gpu_prefill_args &a, int i, int n, int nbx, int &y, int &h, int &row0)
{
    while (i < n && !wsp_tile(a, i, nbx, y, h, row0)) i += gridDim.x;
    return i;
}

/* PREQ 1 (MLA_GPU_PREFILL_WS=4): each consumer warpgroup issues the next query tile's Q rows as soon as
 * its last S of this tile has completed (pr_part's after_s, behind a warpgroup barrier: every warp's S
 * reads done), so their round trip runs under the last softmax, P V and store instead of before the next
 * tile's first S (b16 s 1024: ~5.6 us a query tile of fixed cost against 1.24 us a key tile,
 * gpu/bench/KERNELS.md); PREQ 0 stages Q at the start of each tile (=3, measured). */
template <int PREQ>
__global__ void __launch_bounds__(WS_THREADS, 1) k_attn_prefill_wsp(gpu_prefill_args a, float s_mul, int nbx)
{
    extern __shared__ uint8_t ws_mem[];
    uint8_t *qs = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(ws_mem) + 1023) & ~(uintptr_t)1023);
    uint8_t *kst = qs + PW_QT;
    const int n = nbx * a.n_seqs * a.h;
    if (threadIdx.x == 0) pr_init(kst, 128);
    __syncthreads();
    int y, h, row0, t = 0;
    if (threadIdx.x >= PW_THREADS) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
        for (int i = blockIdx.x; i < n; i += gridDim.x)
            if (wsp_tile(a, i, nbx, y, h, row0)) ws_produce(a, y, h, row0, kst, t);
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");
    const int wg = wg_index();
    auto body = [&](int h_, int base, int nk, int causal, int r0, uint8_t *qs_, uint8_t *kst_, float(&o)[64],
                    float(&lse)[2], auto after_s) {
        pr_part<0, 0, 1, 1>(a, s_mul, h_, base, nk, causal, r0, qs_, kst_, t, o, lse, after_s);
        t += (nk + PW_BN - 1) / PW_BN;
    };
    if constexpr (!PREQ) {
        for (int i = blockIdx.x; i < n; i += gridDim.x) {
            if (!wsp_tile(a, i, nbx, y, h, row0)) continue;
            wg_bar_sync(PR_QWG + wg, 128); /* the warpgroup's reads of its Q rows (the last tile's S) done */
            pw_item<1>(a, qs, y, h, row0, [&](int h_, int base, int nk, int causal, int r0, uint8_t *qs_,
                                              uint8_t *kst_, float(&o)[64], float(&lse)[2]) {
                body(h_, base, nk, causal, r0, qs_, kst_, o, lse, pr_no_hook());
            });
        }
    } else {
        for (int i = wsp_next(a, blockIdx.x, n, nbx, y, h, row0), first = 1; i < n; first = 0) {
            const int j = wsp_next(a, i + gridDim.x, n, nbx, y, h, row0); /* (y, h, row0) recomputed from i below */
            auto prefetch = [&]() { /* the next tile's rows of this warpgroup, once its S reads are done */
                int y2, h2, row2;
                if (j >= n || !wsp_tile(a, j, nbx, y2, h2, row2)) return;
                wg_bar_sync(PR_QWG + wg, 128);
                pw_issue_q(a, a.seqs[y2], h2, row2, qs, 64 * wg, 64, threadIdx.x % 128, 128);
            };
            wsp_tile(a, i, nbx, y, h, row0);
            const int last_new = a.seqs[y].n_past == 0; /* the new part is the tile's last */
            auto part = [&](int h_, int base, int nk, int causal, int r0, uint8_t *qs_, uint8_t *kst_, float(&o)[64],
                            float(&lse)[2]) {
                if (!causal || last_new) body(h_, base, nk, causal, r0, qs_, kst_, o, lse, prefetch);
                else body(h_, base, nk, causal, r0, qs_, kst_, o, lse, pr_no_hook());
            };
            if (first) pw_item<1>(a, qs, y, h, row0, part);
            else pw_item<2>(a, qs, y, h, row0, part);
            i = j;
        }
    }
}

/* This kernel where the pipe kernel fits (read once): 1 unless MLA_GPU_PREFILL_WS=0 (the pipe kernel),
 * 2 with MLA_GPU_PREFILL_WS=2 (the turns), 3 the persistent form, 4 that with Q prefetched. Unset, the
 * launch picks 1 or 3 by length (gpu_attn_prefill_ws); =1 keeps ws at every length. */
extern "C" int gpu_prefill_ws_on(void)
{
    static const int sw = gpu_env_switch("MLA_GPU_PREFILL_WS", 4);
    static const int on = gpu_env_off("MLA_GPU_PREFILL_WS") ? 0 : sw > 1 ? sw : 1;
    return on;
}

/* Warpgroup 0 skips the causal tiles its rows cannot see (pr_part's SKIP; bit-identical by construction):
 * 1 unless MLA_GPU_PREFILL_WS_SKIP=0. */
static int gpu_prefill_ws_skip_on(void)
{
    static const int on = !gpu_env_off("MLA_GPU_PREFILL_WS_SKIP");
    return on;
}

template <int TURNS, int SKIP> static mla_status ws_launch(hipStream_t st, const gpu_prefill_args *a)
{
    static int attr = 0;
    if (!attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_prefill_ws<TURNS, SKIP>),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PW_RSHM));
        attr = 1;
    }
    dim3 grid((a->max_new + PW_BM - 1) / PW_BM, a->n_seqs, a->h);
    k_attn_prefill_ws<TURNS, SKIP><<<grid, WS_THREADS, PW_RSHM, st>>>(*a, a->scale * 1.4426950408889634f);
    MLA_HIP_LAUNCHED("k_attn_prefill_ws");
    return MLA_OK;
}

template <int PREQ> static mla_status wsp_launch(hipStream_t st, const gpu_prefill_args *a)
{
    static int n_sm = 0;
    if (!n_sm) {
        int dev;
        hipDeviceProp_t p;
        MLA_HIP_CHECK(hipGetDevice(&dev));
        MLA_HIP_CHECK(hipGetDeviceProperties(&p, dev));
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_prefill_wsp<PREQ>),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, PW_RSHM));
        n_sm = p.multiProcessorCount;
    }
    const int nbx = (a->max_new + PW_BM - 1) / PW_BM;
    const int64_t n = (int64_t)nbx * a->n_seqs * a->h;
    if (n <= 0) return MLA_OK;
    k_attn_prefill_wsp<PREQ><<<(int)(n < n_sm ? n : n_sm), WS_THREADS, PW_RSHM, st>>>(*a, a->scale * 1.4426950408889634f, nbx);
    MLA_HIP_LAUNCHED("k_attn_prefill_wsp");
    return MLA_OK;
}

extern "C" mla_status gpu_attn_prefill_ws(hipStream_t st, const gpu_prefill_args *a)
{
    if (!gpu_prefill_wg_fits(a->p, a->r, a->v))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: warp-specialized wgmma prefill: needs P 128, R 64, V 128 (have %d, %d, %d)",
                          a->p, a->r, a->v);
    /* Unset, the persistent form where every sequence is short: ws / wsp (=3), both with SKIP, bit-identical,
     * b16 s 1024 1,993.5 / 1,881.6 us but b1 s 4096 1,370.1 / 1,542.6 (H100 2026-12-06, results/published/
     * 2026-12-06-s20 call 2): the static walk balances long causal tiles worse than the hardware's block
     * order, and short ones gain from the block's start and end overlapped. 1024 is the longest measured gain
     * (2048 not measured); 0 (unknown) keeps ws. */
    static const int forced = gpu_env_switch("MLA_GPU_PREFILL_WS", 4);
    const int on = !forced && a->max_keys > 0 && a->max_keys <= 1024 ? 3 : gpu_prefill_ws_on();
    if (on >= 3) return on == 4 ? wsp_launch<1>(st, a) : wsp_launch<0>(st, a);
    if (on == 2) return ws_launch<1, 0>(st, a);
    return gpu_prefill_ws_skip_on() ? ws_launch<0, 1>(st, a) : ws_launch<0, 0>(st, a);
}

#endif
