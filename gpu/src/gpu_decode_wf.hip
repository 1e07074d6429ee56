/* gpu_decode_wf.hip: the transposed wgmma decode (gpu_decode_wt.hip) over an e4m3fn cache (per-tensor
 * fp8 or fp8_ds_mla, C 512 + R 64), up to 32 heads, warp-specialized: producers fetch the raw rows in
 * 32-row half tiles and widen them, exactly, into a ring of two bf16 tiles; one consumer warpgroup
 * (threads 0-127) holds every head of the block (N = NW, 16 or 32) and only runs S^T, the softmax and
 * P V, freeing a tile's slot once its P V has completed, before S^T of the next (wf_early). The raw
 * halves come by the copy engine (PL 2: a copy warp's cp.async.bulk, two widening warpgroups; the default,
 * up to 32 heads with the register split, wf_split) or through a cp.async ring in shared memory (PL 0: one
 * producer warpgroup); wf_bulk says why. (PL 1, the raw rows straight into the producer's registers, was
 * removed: slower both times it was tried, KERNELS.md wf v5 and v9.) The default decode of those caches up
 * to 32 heads (MLA_GPU_DECODE_WF=0: the wt kernel); versions and measurements: gpu/bench/KERNELS.md "wf".
 *
 * Why (ncu of wt at fp8_ds_mla h16, 2026-12-04): one block of 8 warps ran copy, widening, S, softmax and
 * P V of each tile in one chain (DRAM 23.7%, tensor 6.2%, 0.34 issued a scheduler), and its two
 * warpgroups (8 heads each) each read the whole 72 KB bf16 tile twice a tile through wgmma (S^T and P V):
 * ~2,200 of the ~3,600 cycles a tile that 1.6x the bf16 tokens/s allows went to those shared-memory
 * reads alone. Here the tile is read once by one warpgroup, and the widening runs beside it.
 *
 * Hand-offs: full[b] (128 producer arrivals, after fence.proxy.async: the widened tile visible to
 * wgmma), empty[b] (128 consumer arrivals once P V of the tile in slot b has completed); tile k uses
 * slot k % 2, phase k / 2. Numerics: wt's per head (same S^T sums, the same softmax code per column,
 * P^T rounded to bf16 the same way, the same P V sums: wgmma's per-element sums do not depend on N), so
 * the output is bit-identical to wt's. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#if !defined(MLA_GPU_HIP)

#include "gpu_decode_mma.h"

#define WF_RN 32  /* rows of a raw stage: half a tile */
#define WF_PBAR 2 /* the producer's named barrier (1: the consumer warpgroup's) */

/* Shared memory: alignment slack, two bf16 tiles, Q and P^T of the NW heads, NST raw half tiles, the
 * consumers' column reductions (4 warps x NW), the
 * mbarriers full[2], empty[2], rfull[2 NST], rempty[NST] (the last two: PL 2's raw ring). */
static size_t wf_shm(int nw, int nst, int rb)
{
    return 1024 + 2 * (size_t)WD_TILE + (size_t)nw * (2 * WD_L + WG_ATOM_ROW) + (size_t)nst * WF_RN * rb + 4 * (size_t)nw * 4 +
           (4 + 3 * (size_t)nst) * 8;
}

/* The producer's shared state: the block's rows [j0, j1) of the sequence in slot, ntiles tiles. */
struct wf_prod {
    const gpu_decode_args &a;
    const dm_geom &g;
    uint8_t *kb, *raw;
    uint32_t full, empty;
    int slot, j0, j1, ntiles, u; /* u: 0 .. 127 */
    int wq;                      /* widening: dm_widen_e4m3_q (1) or dm_widen_e4m3 */
    __device__ int row_of(int h) const { return j0 + h / 2 * WD_NK + h % 2 * WF_RN; } /* first row of half h */
    /* this thread's row (u / 4) of half h, null past the split */
    __device__ const uint8_t *src_of(int h) const
    {
        const int c = row_of(h) + u / 4;
        return h < 2 * ntiles && c < j1 ? kv_row(a.kv, slot, c) : nullptr;
    }
    /* before tile k's first rows: tile k - 2's P V is done, its slot free */
    __device__ void wait_slot(int k) const
    {
        if (k >= 2) wg_mb_wait(empty + 8 * (k % 2), (k / 2 - 1) & 1);
    }
    /* raw rows (rows of half h at stage raw) -> tile k's half h % 2 in its bf16 slot */
    template <int DS> __device__ void widen(const uint8_t *raw_h, int h) const
    {
        const int k = h / 2, n = min(WD_NK, j1 - (j0 + k * WD_NK)) - h % 2 * WF_RN;
        uint8_t *dst = kb + k % 2 * WD_TILE + h % 2 * WF_RN * WG_ATOM_ROW;
        if (wq)
            dm_widen_e4m3_q<DS, WF_RN>(raw_h, g.rb, dst, n, u);
        else
            dm_widen_e4m3<DS, WF_RN, 128>(raw_h, g.rb, dst, n, u);
    }
    /* dm_widen_e4m3_q in two steps: half h's rows from raw_h into x's registers, then into its bf16 slot */
    template <int DS> __device__ void fetch(dm_wq<DS, WF_RN> &x, const uint8_t *raw_h, int h) const
    {
        x.load(raw_h, g.rb, min(WD_NK, j1 - (j0 + h / 2 * WD_NK)) - h % 2 * WF_RN, u);
    }
    template <int DS> __device__ void put(const dm_wq<DS, WF_RN> &x, int h) const { x.store(kb + h / 2 % 2 * WD_TILE + h % 2 * WF_RN * WG_ATOM_ROW); }
    /* after tile k's last rows: visible to wgmma, tile k full */
    __device__ void tile_done(int k) const
    {
        wg_proxy_fence();
        wg_mb_arrive(full + 8 * (k % 2));
    }
};

/* PL 0: raw rows through a ring of NST half tiles in shared memory, 16-byte cp.async by every producer
 * thread (4 a row); a stage is refilled once every producer thread has widened it (named barrier
 * WF_PBAR). The row pointer of half h + NST is computed a half ahead. (cp.async.bulk instead, a lane of
 * one warp a row: slower, 558.3 us at fp8_ds_mla h16 against 530.1: nvcc issues the bulk copies of a
 * warp's lanes one by one, and the rest of the warpgroup waits for that warp at the barrier; 61b9f99.) */
template <int DS, int NST> __device__ __forceinline__ void wf_produce_ring(const wf_prod &p)
{
    const int j = p.u / 4, q = p.u % 4, rb = p.g.rb;
    auto issue = [&](int h, const uint8_t *src) { /* one commit group a half, empty or not: the wait counts hold */
        if (src) {
            const uint32_t d = tc_smem(p.raw + (h % NST * WF_RN + j) * rb);
            for (int ch = q; ch < rb / 16; ch += 4) tc_cp<16>(d + 16 * ch, src + 16 * ch, 16);
        }
        tc_commit();
    };
#pragma unroll
    for (int h = 0; h < NST - 1; h++) issue(h, p.src_of(h));
    const uint8_t *nxt = p.src_of(NST - 1);
    for (int h = 0; h < 2 * p.ntiles; h++) {
        const int k = h / 2;
        tc_wait<NST - 2>();       /* half h has landed (this thread's copies) */
        wg_bar_sync(WF_PBAR, 128); /* every thread's; and every thread is done widening half h - 1 */
        issue(h + NST - 1, nxt);   /* into half h - 1's stage */
        nxt = p.src_of(h + NST);
        if (h % 2 == 0) p.wait_slot(k);
        p.widen<DS>(p.raw + h % NST * WF_RN * rb, h);
        if (h % 2) p.tile_done(k);
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory"); /* no thread leaves with copies in flight */
}

/* PL 2: the copy engine fetches each raw half with one cp.async.bulk a run of its rows that lies in one
 * page (one copy a half when pages hold whole halves), issued by a copy warp up to NST halves ahead into
 * stage h % NST; rfull[h % (2 NST)] completes when half h's bytes have landed, rempty[h % NST] when the
 * 128 threads widening it have read it. The widening warpgroups then only widen: NPW of them take turns
 * by half (h % NPW), so with 2 each tile is widened by both at once.
 * Why 2 NST rfull barriers: with NST 3 and NPW 2 a stage's halves alternate between the warpgroups, and
 * the waiter of half h + 3 may come to its stage's barrier before half h's bytes have landed (bulk copies
 * need not complete in order): the parity it waits for is then the one of the phase before, already
 * complete, and it would widen half h's bytes (or none) as h + 3. Barrier h % (2 NST) is waited on by one
 * warpgroup only, in order, so no waiter falls a phase behind. (With one rfull a stage, the 2026-12-04
 * runs with L2 prefetch, which shifts copy latencies, failed "unspecified launch failure".) */
template <int NST> __device__ __forceinline__ void wf_copy_bulk(const wf_prod &p, uint32_t rfull, uint32_t rempty, int lane)
{
    const int rb = p.g.rb, bs = p.a.kv.block_size;
    for (int h = 0; h < 2 * p.ntiles; h++) {
        const int s = h % NST, c0 = p.row_of(h), n = min(WF_RN, p.j1 - c0), c = c0 + lane;
        const uint32_t bar = rfull + 8 * (h % (2 * NST));
        if (h >= NST) wg_mb_wait(rempty + 8 * s, (h / NST - 1) & 1);
        if (lane == 0) {
            if (n > 0)
                wg_mb_expect_tx(bar, n * rb);
            else
                wg_mb_arrive(bar); /* the last tile's second half past the split: zeros, no bytes */
        }
        __syncwarp();
        if (lane < n && (lane == 0 || c % bs == 0)) /* the first row of a run within one page */
            wg_bulk_copy(tc_smem(p.raw + (s * WF_RN + lane) * rb), kv_row(p.a.kv, p.slot, c), min(bs - c % bs, n - lane) * rb, bar);
    }
}

/* widening warpgroup w of NPW: halves w, w + NPW, ... */
template <int DS, int NST, int NPW, int RE> __device__ __forceinline__ void wf_widen_bulk(const wf_prod &p, uint32_t rfull, uint32_t rempty, int w)
{
    for (int h = w; h < 2 * p.ntiles; h += NPW) {
        const int k = h / 2, s = h % NST;
        if constexpr (RE) { /* the stage freed once read, before the wait for the bf16 slot (wf_release_early) */
            wg_mb_wait(rfull + 8 * (h % (2 * NST)), (h / (2 * NST)) & 1);
            dm_wq<DS, WF_RN> x;
            p.fetch<DS>(x, p.raw + s * WF_RN * p.g.rb, h);
            wg_mb_arrive(rempty + 8 * s); /* release: this thread's reads of the stage are done */
            if (NPW == 2 || h % 2 == 0) p.wait_slot(k);
            p.put<DS>(x, h);
        } else {
            if (NPW == 2 || h % 2 == 0) p.wait_slot(k);
            wg_mb_wait(rfull + 8 * (h % (2 * NST)), (h / (2 * NST)) & 1);
            p.widen<DS>(p.raw + s * WF_RN * p.g.rb, h);
            wg_mb_arrive(rempty + 8 * s);
        }
        if (NPW == 2 || h % 2) p.tile_done(k);
    }
}

/* threads: the consumer warpgroup, NPW producer (widening) warpgroups, PL 2's copy warp, or with RG a
 * whole copy warpgroup whose warps 1-3 only give their registers back */
template <int PL, int NPW, int RG> constexpr int wf_threads() { return 128 * (1 + NPW) + (PL == 2 ? (RG ? 128 : 32) : 0); }
/* RG's register split (setmaxnreg): the copy warpgroup down to WF_RG_COPY, the consumer up to WF_RG_CONS,
 * the widening warpgroups at the launch's (65536 / threads: 128 at NPW 2, 168 at NPW 1); the consumer
 * of 32 heads needs ~232 (its ring form: 231, no spill), which the launch's 128 or 168 cannot hold
 * (ptxas 13.0: 1,164 / 404 bytes of spill). At NPW 2: 232 + 2 x 128 + 24 = 4 x 128, the pool exactly. */
#define WF_RG_CONS 232
#define WF_RG_COPY 24

/* NST raw half stages (PL 0 and 2); NPW widening warpgroups (2: PL 2 only);
 * ER: the consumer's order (below); RG: PL 2's register split (wf_threads); UN: the consumer's loop
 * unrolled by two for constant slots (kb_s); RE: PL 2's raw stages freed once read (wf_widen_bulk);
 * wq: the widening's thread mapping (wf_prod::widen). */
/* a consumer tile's bf16 slot: B, or tile it's it % 2 (B -1) */
template <int B> struct wf_slot {
    __device__ static constexpr int of(int it) { return B < 0 ? it % 2 : B; }
};

template <int NW, int DS, int PL, int NST, int NPW, int ER, int RG, int UN, int RE>
__global__ void __launch_bounds__(wf_threads<PL, NPW, RG>(), 1) k_attn_decode_wf(gpu_decode_args a, dm_geom g, int wq)
{
    constexpr int QA = NW * WG_ATOM_ROW; /* one atom of Q: NW rows x 64 columns */
    constexpr int QW = WD_L / 64 * QA;   /* Q: 9 atoms */
    constexpr int NA = NW / 2, NC = NW / 4; /* accumulator floats of one m64nNW; columns a thread holds */
    extern __shared__ uint8_t wf_mem[];
    uint8_t *kb = wg_align1024(wf_mem);
    uint8_t *qs = kb + 2 * WD_TILE, *ps = qs + QW, *raw = ps + NW * WG_ATOM_ROW;
    float *red = reinterpret_cast<float *>(raw + NST * WF_RN * g.rb); /* [warp][column] */
    const uint32_t full = tc_smem(red + 4 * NW), empty = full + 16, rfull = full + 32, rempty = rfull + 16 * NST; /* mbarriers */

    const int tid = threadIdx.x, wg = wg_index();
    const dm_heads hb = dm_heads_of<NW>(a.h);
    const int t = hb.t, h0 = hb.h0, sp = blockIdx.z;
    const gpu_seq s = a.seqs[a.tok_seq[t]];
    int j0, j1;
    kv_split_rows(s, t, a.causal_plus, a.splits, a.split_len, sp, &j0, &j1);
    const int ntiles = (j1 - j0 + WD_NK - 1) / WD_NK;
    if (tid == 0) {
        wg_mb_init(full, 128 * NPW);
        wg_mb_init(full + 8, 128 * NPW);
        wg_mb_init(empty, 128);
        wg_mb_init(empty + 8, 128);
        if (PL == 2)
            for (int i = 0; i < NST; i++) {
                wg_mb_init(rfull + 8 * i, 1);
                wg_mb_init(rfull + 8 * (NST + i), 1);
                wg_mb_init(rempty + 8 * i, 128);
            }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); /* visible to the copy engine */
    }
    __syncthreads(); /* the mbarriers initialized; the warpgroups part here */

    if (wg >= 1) { /* producers: half h is rows [32 (h % 2), +32) of tile h / 2 */
        const wf_prod p{a, g, kb, raw, full, empty, s.slot, j0, j1, ntiles, tid % 128, wq};
        if constexpr (PL == 2) {
            if (wg > NPW) {
                if constexpr (RG) {
                    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(WF_RG_COPY) : "memory");
                    if (tid % 128 >= 32) return;
                }
                wf_copy_bulk<NST>(p, rfull, rempty, tid % 32);
            } else {
                wf_widen_bulk<DS, NST, NPW, RE>(p, rfull, rempty, wg - 1);
            }
        } else {
            wf_produce_ring<DS, NST>(p);
        }
        return;
    }
    if constexpr (RG) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(WF_RG_CONS) : "memory");

    const int warp = tid / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    for (int i = tid; i < NW * WD_L / 8; i += 128) { /* Q, eight columns at a time */
        const int r = i / (WD_L / 8), e = i % (WD_L / 8) * 8;
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) w[k] = tc_pack(dm_q(a, g, t, h0 + r, e + 2 * k), dm_q(a, g, t, h0 + r, e + 2 * k + 1));
        *reinterpret_cast<uint4 *>(qs + e / 64 * QA + wg_sw128(r, e % 64)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
    wg_proxy_fence();
    wg_bar_sync(1, 128); /* Q written and visible to wgmma */

    float m_run[NC], l_run[NC], o[WD_C / 64][NA];
#pragma unroll
    for (int ci = 0; ci < NC; ci++) {
        m_run[ci] = -INFINITY;
        l_run[ci] = 0.0f;
    }
#pragma unroll
    for (int c = 0; c < WD_C / 64; c++)
#pragma unroll
        for (int i = 0; i < NA; i++) o[c][i] = 0.0f;
    /* the wgmma descriptors' base. ncu 2026-12-05 (H100, fp8_ds_mla h16): each wgmma's two descriptors
     * were built in vector registers and moved by four R2UR, ~10 instructions a wgmma and 23% of the
     * consumer's samples, with the slot (it % 2) and a __shfl_sync'd base both in vector registers. UN 1:
     * the loop unrolled by two so each body's slot is a constant, and the shared address itself as the
     * base: nothing in the descriptors varies by thread or tile, for the uniform datapath. UN 0: the
     * measured form, the base warp-uniform by __shfl_sync and rebuilt each tile from an opaque copy
     * (hoisted out of the loop, the 68 descriptors spilled: 104 bytes at fp8_ds_mla h16, ptxas 13.0). */
    const uint32_t kb_s = UN ? tc_smem(kb) : __shfl_sync(0xffffffffu, tc_smem(kb), 0);
    auto base = [&]() {
        uint32_t b = kb_s;
        if (!UN) asm volatile("" : "+r"(b));
        return b;
    };
    /* column (head) of accumulator column slot ci of this thread: m64nN's d[4 j + e] is column 8 j + 2 q + e % 2 */
    auto col = [&](int ci) { return 8 * (ci / 2) + 2 * tq + ci % 2; };

    /* ER 0: S^T of tile it + 1 is issued right behind P V of tile it, so the tensor cores run both back to
     * back while the warpgroup waits once a tile; but the consumer then holds both bf16 slots from the
     * wait for tile it + 1 until both have completed, and the producers widen tile it + 2 only during the
     * softmax (ncu 2026-12-05, fp8_ds_mla h16: consumer and widening warps each waited ~37% of their time
     * on the other). ER 1: P V of tile it alone, slot it % 2 freed once it has completed, then S^T of
     * tile it + 1: the widening of tile it + 2 overlaps the consumer's whole next tile. */
    float sc[NA];
    /* S^T of tile it into sc, its widened tile there (wait_full first, and no zeroing of sc: ptxas
     * serializes every wgmma when an mbarrier's wait loop or a write of sc falls between wgmmas in
     * flight, C7511 / C7515) */
    auto wait_full = [&](int it, int b) { wg_mb_wait(full + 8 * b, (it / 2) & 1); }; /* b: it's slot */
    auto issue_s = [&](int b) { /* b: the tile's slot */
        const uint32_t b0 = base();
        const uint64_t dk = wg_desc_k(b0 + b * WD_TILE), dq = wg_desc_k(b0 + 2 * WD_TILE);
        wg_m64_ss<0, 0>(sc, dk, dq); /* scale-d 0: sc = K Q^T of the first k16 step, sc's old values unread */
#pragma unroll
        for (int ks = 1; ks < WD_L / 16; ks++)
            wg_m64_ss(sc, wg_desc_add(dk, ks / 4 * WD_ATOM + ks % 4 * 32), wg_desc_add(dq, ks / 4 * QA + ks % 4 * 32));
        wg_commit();
    };
    if (ntiles > 0) {
        wait_full(0, 0);
        wg_fence();
        issue_s(0);
        wg_wait<0>();
        wg_fence_operand(sc);
    }
    /* tile it, S^T of it done; no wgmma in flight across the back edge (ptxas serializes them otherwise,
     * C7511). SL: the slot, wf_slot<0 / 1> (UN 1) or wf_slot<-1> (it % 2). */
    auto tile = [&](const int it, auto sl) {
        const int n = min(WD_NK, j1 - (j0 + it * WD_NK)), b = decltype(sl)::of(it);
        /* online softmax per column, as wt: sc[4 j + e] is key 16 warp + gq + 8 (e / 2) of column slot 2 j + e % 2 */
        float mx[NC];
#pragma unroll
        for (int ci = 0; ci < NC; ci++) mx[ci] = -INFINITY;
#pragma unroll
        for (int i = 0; i < NA; i++) {
            const int key = 16 * warp + gq + 8 * ((i % 4) / 2), ci = 2 * (i / 4) + i % 2;
            sc[i] = key < n ? sc[i] * g.s_mul : -INFINITY;
            mx[ci] = fmaxf(mx[ci], sc[i]);
        }
#pragma unroll
        for (int ci = 0; ci < NC; ci++) {
            mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 4));
            mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 8));
            mx[ci] = fmaxf(mx[ci], __shfl_xor_sync(0xffffffffu, mx[ci], 16));
            if (gq == 0) red[warp * NW + col(ci)] = mx[ci];
        }
        wg_bar_sync(1, 128);
        float corr[NC];
#pragma unroll
        for (int ci = 0; ci < NC; ci++) {
            const int c = col(ci);
            const float mn = fmaxf(fmaxf(m_run[ci], fmaxf(red[c], red[NW + c])), fmaxf(red[2 * NW + c], red[3 * NW + c]));
            corr[ci] = exp2f(m_run[ci] - mn); /* m_run = -inf on the first tile: 0 */
            m_run[ci] = mn;
            l_run[ci] *= corr[ci];
        }
#pragma unroll
        for (int i = 0; i < NA; i++) {
            const int key = 16 * warp + gq + 8 * ((i % 4) / 2), ci = 2 * (i / 4) + i % 2;
            const float p = exp2f(sc[i] - m_run[ci]);
            l_run[ci] += p;
            *reinterpret_cast<uint16_t *>(ps + wg_sw128(col(ci), key)) = (uint16_t)(tc_pack(p, 0.0f) & 0xffffu);
        }
#pragma unroll
        for (int c = 0; c < WD_C / 64; c++)
#pragma unroll
            for (int i = 0; i < NA; i++) o[c][i] *= corr[2 * (i / 4) + i % 2];
        wg_proxy_fence();
        wg_bar_sync(1, 128); /* P^T of every column, all 64 keys */

        const uint32_t b0 = base();
        const uint64_t dv = wg_desc_n(b0 + b * WD_TILE, WD_ATOM), dp = wg_desc_k(b0 + 2 * WD_TILE + QW);
        const int more = it + 1 < ntiles;
        if (!ER && more) wait_full(it + 1, 1 - b);
        wg_fence();
#pragma unroll
        for (int c = 0; c < WD_C / 64; c++)
#pragma unroll
            for (int kk = 0; kk < WD_NK / 16; kk++)
                wg_m64_ss<1>(o[c], wg_desc_add(dv, c * WD_ATOM + kk * 16 * WG_ATOM_ROW), wg_desc_add(dp, kk * 32));
        wg_commit();
        if (ER) {
            wg_wait<0>();
            wg_fence_operand(o);
            wg_mb_arrive(empty + 8 * b); /* this thread's wgmmas on slot b are done */
            if (more) {
                wait_full(it + 1, 1 - b);
                wg_fence();
                issue_s(1 - b);
                wg_wait<0>();
                wg_fence_operand(sc);
            }
        } else {
            if (more) issue_s(1 - b);
            wg_wait<0>(); /* P V of tile it, and S^T of tile it + 1 */
            wg_fence_operand(sc);
            wg_fence_operand(o);
            wg_mb_arrive(empty + 8 * b);
        }
    };
    if constexpr (UN) {
        for (int it = 0; it < ntiles; it += 2) {
            tile(it, wf_slot<0>{});
            if (it + 1 < ntiles) tile(it + 1, wf_slot<1>{});
        }
    } else {
        for (int it = 0; it < ntiles; it++) tile(it, wf_slot<-1>{});
    }

    /* column sums: over the 8 lanes of a column, then the 4 warps */
#pragma unroll
    for (int ci = 0; ci < NC; ci++) {
        l_run[ci] += __shfl_xor_sync(0xffffffffu, l_run[ci], 4);
        l_run[ci] += __shfl_xor_sync(0xffffffffu, l_run[ci], 8);
        l_run[ci] += __shfl_xor_sync(0xffffffffu, l_run[ci], 16);
    }
    wg_bar_sync(1, 128); /* every warp is past its last read of the maxima */
#pragma unroll
    for (int ci = 0; ci < NC; ci++)
        if (gq == 0) red[warp * NW + col(ci)] = l_run[ci];
    wg_bar_sync(1, 128);
#pragma unroll
    for (int ci = 0; ci < NC; ci++) {
        const int c = col(ci), h = h0 + c;
        if (h >= a.h) continue;
        const float l = red[c] + red[NW + c] + red[2 * NW + c] + red[3 * NW + c];
        const int64_t pi = ((int64_t)t * a.h + h) * a.splits + sp;
        const float f = l > 0.0f ? g.o_mul / l : 0.0f;
        float *dst = a.part_o + pi * WD_C + 16 * warp + gq;
#pragma unroll
        for (int cc = 0; cc < WD_C / 64; cc++)
#pragma unroll
            for (int r = 0; r < 2; r++) dst[64 * cc + 8 * r] = o[cc][4 * (ci / 2) + 2 * r + ci % 2] * f;
        if (warp == 0 && gq == 0) a.part_lse[pi] = l > 0.0f ? (m_run[ci] + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
}

/* MLA_GPU_DECODE_WF_GROUPS, read once: 0 wf only up to 32 heads (above: wt's 64-head groups). Unset:
 * any head count in 32-head groups, the groups of a token adjacent (dm_grid). 0 / unset, b 128 s_k 8192,
 * H200 2026-12-06 (results/published/2026-12-06-s21 call 1, bit-identical): fp8 h64 672.7 / 618.8 us,
 * fp8_ds_mla h64 714.5 / 652.9, fp8 h128 1,323.9 / 1,220.4, fp8_ds_mla h128 1,416.3 / 1,288.2 (h128 ran
 * mma.sync's 32-key tiles before: 2,625.6 / 2,637.7). */
static int wf_groups(void)
{
    static const int on = !gpu_env_off("MLA_GPU_DECODE_WF_GROUPS");
    return on;
}

/* MLA_GPU_DECODE_WF, read once: 0 the wt kernel instead (comparisons). Up to 32 heads: the 32-head form
 * (N 32) ran bit-identical to wt at b 128 s_k 8192 h32, fp8 470.9 us against wt's 583.4 (H200, 2026-12-04,
 * results/published/2026-12-04-h200-s15). */
int gpu_decode_wf_fits(const gpu_kv_desc *kv, int h)
{
    static const int off = gpu_env_off("MLA_GPU_DECODE_WF");
    const mla_kv_format f = kv->codec.format;
    return !off && (f == MLA_KV_FP8 || f == MLA_KV_FP8_DS) && !kv->codec.fp8_fnuz && h >= 1 && (h <= 32 || wf_groups()) &&
           gpu_decode_wt_fits(kv, h);
}

/* MLA_GPU_DECODE_WF_RE, read once (with RG and WQ, not UN): PL 2's widening frees a raw stage once read into
 * registers, then waits for its bf16 slot (RE 0: slot, stage, widen, free). Unset: at 17-32 heads (N 32,
 * two raw stages); =1 at every head count, =0 nowhere. Why (ncu H100 2026-12-06, results/published/
 * 2026-12-06-s19 call 2, fp8_ds_mla h16): the widening warps waited for landed halves 24% of their samples
 * and for a free slot 12%, while the copy warp waited for free stages. RE 0 / 1, H200 2026-12-06
 * (results/published/2026-12-06-s20 call 1, bit-identical): fp8 h32 348.7 / 319.7 us, fp8_ds_mla h32
 * 361.4 / 328.3, but fp8 h16 253.9 / 258.0, fp8_ds_mla h16 265.2 / 268.1 (three stages there). */
static int wf_release_early(int nw)
{
    static const int off = gpu_env_off("MLA_GPU_DECODE_WF_RE"), all = gpu_env_switch("MLA_GPU_DECODE_WF_RE", 1) == 1;
    return !off && (all || nw > 16);
}

/* MLA_GPU_DECODE_WF_WQ, read once: 0 dm_widen_e4m3's thread mapping instead of dm_widen_e4m3_q's (unset: 1).
 * (L2 prefetch ahead of the copy warp, MLA_GPU_DECODE_WF_PF 2, 4 and 8 halves: removed, 0.97-1.0x at fp8 and
 * fp8_ds_mla h16 and h32, H200 2026-12-05.) */
static int wf_quads(void)
{
    static const int v = !gpu_env_off("MLA_GPU_DECODE_WF_WQ");
    return v;
}

template <int NW, int DS, int PL, int NST, int NPW = 1, int ER = 0, int RG = 0, int UN = 0, int RE = 0>
static mla_status wf_launch(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    const size_t shm = wf_shm(NW, NST, g.rb);
    static size_t attr = 0; /* per instantiation: > 48 KB of dynamic shared memory needs the opt-in */
    if (shm > attr) {
        MLA_HIP_CHECK(hipFuncSetAttribute(reinterpret_cast<const void *>(&k_attn_decode_wf<NW, DS, PL, NST, NPW, ER, RG, UN, RE>),
                                          hipFuncAttributeMaxDynamicSharedMemorySize, (int)shm));
        attr = shm;
    }
    k_attn_decode_wf<NW, DS, PL, NST, NPW, ER, RG, UN, RE><<<dm_grid(a, NW), wf_threads<PL, NPW, RG>(), shm, st>>>(*a, g, wf_quads());
    MLA_HIP_LAUNCHED("k_attn_decode_wf");
    return MLA_OK;
}

/* MLA_GPU_DECODE_WF_RG, read once: 0 PL 2 without the register split (wf_threads; unset: with it, where
 * the consumer's order is ER 1, and 17-32 heads on the copy engine). Off / on, H200 2026-12-05
 * (results/published/2026-12-05-h200-s17 call 3): fp8_ds_mla h16 286.9 / 266.1 us, fp8 h16 276.9 /
 * 256.0, fp8 h32 431.0 / 351.6, fp8_ds_mla h32 462.5 / 364.1; bit-identical, memcheck 0 errors. */
static int wf_split(void)
{
    static const int on = !gpu_env_off("MLA_GPU_DECODE_WF_RG");
    return on;
}

/* MLA_GPU_DECODE_WF_UN=1, read once: with the register split, the consumer's loop unrolled for constant
 * slots (UN, kb_s). Opt-in: 0.99-1.01x, H200 2026-12-05 (fp8_ds_mla h16 267.8 us against 266.1). */
static int wf_unroll(void)
{
    static const int on = gpu_env_switch("MLA_GPU_DECODE_WF_UN", 1) == 1;
    return on;
}

/* The raw halves' route (PL 0 or 2) and widening warpgroups: MLA_GPU_DECODE_WF_BULK, read once: 0 the
 * cp.async ring, 1 the copy engine (PL 2) with one widening warpgroup, 2 with two. Unset: 2 up to 16
 * heads (fp8_ds_mla h16 373.3 us, against 391.7 with one and 450.9 for the ring; bit-identical), and
 * for 17-32 heads with the register split (without it PL 2 at N 32 spills: 844.2 us against the ring's
 * 470.9 at fp8 h32; H200, 2026-12-04), else the ring. */
static int wf_bulk(int nw, int rg)
{
    static const int off = gpu_env_off("MLA_GPU_DECODE_WF_BULK"), v = gpu_env_switch("MLA_GPU_DECODE_WF_BULK", 2);
    return off ? 0 : v ? v : nw <= 16 || rg ? 2 : 0;
}

/* MLA_GPU_DECODE_WF_ER, read once: 0 the consumer's order ER 0 instead of ER 1 (P V of tile it alone, its
 * slot freed, then S^T of tile it + 1) in the default forms (PL 2 at NST 3 and NPW 2, PL 0 at NST 2).
 * ER 0 / ER 1, widening WQ 1, b 128 s_k 8192, H100 2026-12-05 (results/published/2026-12-05-h200-s17):
 * fp8_ds_mla h16 328.8 / 297.5 us, fp8 h16 331.0 / 283.2, fp8 h32 431.1 / 426.7, fp8_ds_mla h32 459.0 /
 * 459.1; bit-identical. (Its first form, the slot freed by wgmma.wait_group 1 between P V and S^T issued
 * together: 0.97-1.0x, H200 2026-12-05: the release still came after S^T's issue.) */
static int wf_early(void)
{
    static const int on = !gpu_env_off("MLA_GPU_DECODE_WF_ER");
    return on;
}

/* As many raw half stages (3 or 2) as shared memory holds beside the two bf16 tiles
 * (fp8_ds_mla h16: 3, 232,272 B; h32: 2). */
template <int NW, int DS> static mla_status wf_launch_nst(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    const int nst = wf_shm(NW, 3, g.rb) <= DM_SHM_MAX ? 3 : 2;
    if (nst == 2 && wf_shm(NW, 2, g.rb) > DM_SHM_MAX)
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: wf decode: %zu bytes of shared memory needed", wf_shm(NW, 2, g.rb));
    const int er = wf_early(), rg = er && wf_split(), un = rg && wf_unroll(), re = rg && !un && wf_quads() && wf_release_early(NW);
    switch (wf_bulk(NW, rg) * 2 + (nst == 3)) {
    case 5:
        return un   ? wf_launch<NW, DS, 2, 3, 2, 1, 1, 1>(st, a, g)
               : re ? wf_launch<NW, DS, 2, 3, 2, 1, 1, 0, 1>(st, a, g)
               : rg ? wf_launch<NW, DS, 2, 3, 2, 1, 1>(st, a, g)
               : er ? wf_launch<NW, DS, 2, 3, 2, 1>(st, a, g)
                    : wf_launch<NW, DS, 2, 3, 2>(st, a, g);
    case 4:
        return un   ? wf_launch<NW, DS, 2, 2, 2, 1, 1, 1>(st, a, g)
               : re ? wf_launch<NW, DS, 2, 2, 2, 1, 1, 0, 1>(st, a, g)
               : rg ? wf_launch<NW, DS, 2, 2, 2, 1, 1>(st, a, g)
                    : wf_launch<NW, DS, 2, 2, 2>(st, a, g);
    case 3: return wf_launch<NW, DS, 2, 3, 1>(st, a, g);
    case 2: return rg ? wf_launch<NW, DS, 2, 2, 1, 1, 1>(st, a, g) : wf_launch<NW, DS, 2, 2, 1>(st, a, g);
    case 1: return wf_launch<NW, DS, 0, 3>(st, a, g);
    default: return er ? wf_launch<NW, DS, 0, 2, 1, 1>(st, a, g) : wf_launch<NW, DS, 0, 2>(st, a, g);
    }
}

mla_status gpu_attn_decode_wf(hipStream_t st, const gpu_decode_args *a, const dm_geom &g)
{
    if (!gpu_decode_wf_fits(&a->kv, a->h))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: wf decode: needs an e4m3fn cache of C 512 + R 64 (and at most 32 heads "
                          "with MLA_GPU_DECODE_WF_GROUPS=0)");
    const int ds = a->kv.codec.format == MLA_KV_FP8_DS;
    if (a->h <= 16) return ds ? wf_launch_nst<16, 1>(st, a, g) : wf_launch_nst<16, 0>(st, a, g);
    return ds ? wf_launch_nst<32, 1>(st, a, g) : wf_launch_nst<32, 0>(st, a, g);
}

#endif
