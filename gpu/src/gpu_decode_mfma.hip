/* gpu_decode_mfma.hip: the tensor-core decode on AMD (CDNA, gfx90a / gfx940: v_mfma_f32_16x16x16
 * bf16, wave64), what MLA_GPU_DECODE=mma runs in the AMD build; the NVIDIA build has gpu_decode_mma.hip
 * and the wgmma kernels instead. The schedule, the numerics and the MFMA layout it assumes are in
 * gpu_decode_mfma.h, whose phases this kernel strings together between barriers; CI compiles it for
 * gfx90a and gfx940 (gpu/tools/compile_check.sh) and runs the same phases on the host under an emulated
 * MFMA (gpu/tests/test_decode_mfma.cpp). Never run on an AMD GPU. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#if defined(MLA_GPU_HIP)

#include "gpu_decode_mfma.h"

static_assert(MLA_WARP == MF_LANES, "the MFMA decode is written for wave64");

typedef short mf_s4 __attribute__((ext_vector_type(4)));
typedef float mf_f4 __attribute__((ext_vector_type(4)));

/* The device's wave type for the phases: this lane's fragments, the MFMA on them. */
struct mf_wave {
    int lane;
    typedef uint16_t frag[4];
    typedef mf_f4 acc;
    __device__ void rows(frag &f, const uint16_t *m, int ld, int k0) const { mf_frag_rows(m, ld, k0, lane, f); }
    __device__ void cols(frag &f, const uint16_t *m, int ld, int k0, int c0) const { mf_frag_cols(m, ld, k0, c0, lane, f); }
    __device__ acc zero() const { return acc{0.0f, 0.0f, 0.0f, 0.0f}; }
    __device__ acc mma(const frag &a, const frag &b, acc c) const
    {
        const mf_s4 va = {(short)a[0], (short)a[1], (short)a[2], (short)a[3]};
        const mf_s4 vb = {(short)b[0], (short)b[1], (short)b[2], (short)b[3]};
        return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, c, 0, 0, 0);
    }
    template <class F> __device__ void each(const acc &d, F f) const
    {
        for (int i = 0; i < 4; i++) f(lane, i, d[i]);
    }
    template <class F> __device__ void scale(acc &d, F f) const
    {
        for (int i = 0; i < 4; i++) d[i] *= f(lane, i);
    }
};

/* The 16 threads of a head (consecutive lanes): their maximum and sum. */
__device__ __forceinline__ float mf_max16(float v)
{
    for (int m = 8; m > 0; m >>= 1) v = fmaxf(v, mla_shfl_xor(v, m));
    return v;
}
__device__ __forceinline__ float mf_sum16(float v)
{
    for (int m = 8; m > 0; m >>= 1) v += mla_shfl_xor(v, m);
    return v;
}

/* NB: output-dim blocks of 16 a wave (C = 64 NB). */
template <int NB> __global__ void __launch_bounds__(MF_THREADS) k_attn_decode_mfma(mf_args a, mf_geom g)
{
    extern __shared__ uint16_t mf_mem[];
    const mf_smem sm = mf_smem_of(mf_mem, g.ldk);
    const int tid = threadIdx.x, wave = tid / MF_LANES;
    mf_wave w{tid % MF_LANES};
    const mf_block b = mf_block_of(a, g, blockIdx.x, blockIdx.y, blockIdx.z);
    mf_stage_q(a, g, b, sm, tid);
    mf_f4 o[NB];
    for (int i = 0; i < NB; i++) o[i] = w.zero();
    const int nch = g.nk / MF_KR; /* chunks a tile */
    for (int it = 0; it < b.ntiles; it++) {
        const int c0 = b.j0 + it * g.nk, n = min(g.nk, b.j1 - c0);
        for (int ch = 0; ch < nch; ch++) {
            __syncthreads(); /* Q staged; the K rows' last readers done */
            mf_load_rows(a, g, b, sm, c0 + MF_KR * ch, n - MF_KR * ch, tid);
            __syncthreads();
            if (wave < 2) mf_s(w, g, sm, wave, MF_KR * ch, n);
        }
        __syncthreads(); /* every score of the tile */
        const float mn = fmaxf(sm.m_run[tid / 16], mf_max16(mf_sm_max(g, sm, tid)));
        const float sum = mf_sum16(mf_sm_p(g, sm, tid, mn));
        __syncthreads(); /* every thread of a head has read m_run */
        if (tid % 16 == 0) mf_sm_update(sm, tid / 16, mn, sum);
        __syncthreads(); /* P, corr */
        mf_rescale<NB>(w, sm, o);
        for (int ch = nch - 1; ch >= 0; ch--) { /* the last chunk is in K; earlier ones read again */
            if (ch != nch - 1) {
                __syncthreads();
                mf_load_rows(a, g, b, sm, c0 + MF_KR * ch, n - MF_KR * ch, tid);
                __syncthreads();
            }
            mf_pv<NB>(w, g, sm, wave, MF_KR * ch, o);
        }
    }
    __syncthreads(); /* l_run, m_run final */
    mf_store<NB>(w, a, g, b, sm, wave, o);
    mf_store_lse(a, b, sm, tid);
}

extern "C" int gpu_decode_mma_fits(const gpu_kv_desc *kv, int h) { return mf_fits(kv->codec, h); }
extern "C" int gpu_decode_mma_heads(const gpu_kv_desc *kv, int h)
{
    (void)kv;
    (void)h;
    return MF_HM;
}

template <int NB> static mla_status mf_launch(hipStream_t st, const mf_args &a, const mf_geom &g)
{
    dim3 grid(a.t, (a.h + MF_HM - 1) / MF_HM, a.splits);
    k_attn_decode_mfma<NB><<<grid, MF_THREADS, mf_shm_bytes(g.ldk), st>>>(a, g);
    MLA_HIP_LAUNCHED("k_attn_decode_mfma");
    return MLA_OK;
}

extern "C" mla_status gpu_attn_decode_mma(hipStream_t st, const gpu_decode_args *d)
{
    const mla_kv_codec &k = d->kv.codec;
    if (!mf_fits(k, d->h))
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: MFMA decode: needs kv_lora_rank a multiple of 64 up to %d and "
                          "kv_lora_rank + rope dim up to %d", MF_CMAX, MF_LMAX);
    const int nk = mla_attn_tc_tile(1, d->h, mla_attn_tc_wide(k.c, k.r));
    const mf_geom g = mf_geometry(k, nk, d->scale, d->q_div);
    const mf_args a = {.q_abs = d->q_abs, .q_pe = d->q_pe, .kv = d->kv, .tok_seq = d->tok_seq, .seqs = d->seqs,
                       .part_o = d->part_o, .part_lse = d->part_lse, .t = d->t, .h = d->h, .splits = d->splits, .split_len = d->split_len,
                       .causal_plus = d->causal_plus};
    switch (k.c / 64) {
    case 1: return mf_launch<1>(st, a, g);
    case 2: return mf_launch<2>(st, a, g);
    case 3: return mf_launch<3>(st, a, g);
    case 4: return mf_launch<4>(st, a, g);
    case 5: return mf_launch<5>(st, a, g);
    case 6: return mf_launch<6>(st, a, g);
    case 7: return mf_launch<7>(st, a, g);
    default: return mf_launch<8>(st, a, g);
    }
}

#endif
