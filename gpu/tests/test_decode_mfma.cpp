/* test_decode_mfma.cpp: the AMD decode kernel (gpu/src/gpu_decode_mfma.h, the phases
 * gpu_decode_mfma.hip strings together) run on the host, in CI, with v_mfma_f32_16x16x16 bf16 emulated
 * from the layout that header states:
 *  - the S and P V blocks alone, every output against float64 sums of the same bf16 inputs, padding past
 *    the valid columns NaN (a read past them shows), and a planted reader with lane / 16 and lane % 16
 *    swapped, which must fail;
 *  - whole blocks, every thread's phase stepped between the kernel's barriers, splits combined, against
 *    float64 attention over the dequantized cache rows: paged caches in the three row formats (e4m3fn
 *    and e4m3fnuz), shuffled block tables, uneven and empty splits, s_q 2, partial head groups, 64- and
 *    32-key tiles, the causal-off-by-one fault's extra row; a reference one row short must fail;
 *  - the shared-memory plan within CDNA's 64 KB, fragment rows 8-byte aligned.
 * Not checked: the layout against the hardware (no AMD GPU here), the GPU's memory model. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "decode_case.h"
#include "gpu_decode_mfma.h"

namespace {

using dc::uni;
double bf(uint16_t v) { return gd_bf16_to_f32(v); }
const uint16_t NAN_BF16 = 0x7fc0;

/* d += a . b over the wave, fragments per lane as gpu_decode_mfma.h states the layout */
void mfma(double (&d)[MF_LANES][4], const uint16_t (&a)[MF_LANES][4], const uint16_t (&b)[MF_LANES][4])
{
    double A[16][16], B[16][16];
    for (int l = 0; l < MF_LANES; l++)
        for (int j = 0; j < 4; j++) {
            A[l % 16][4 * (l / 16) + j] = bf(a[l][j]);
            B[4 * (l / 16) + j][l % 16] = bf(b[l][j]);
        }
    for (int l = 0; l < MF_LANES; l++)
        for (int i = 0; i < 4; i++) {
            const int r = mf_d_row(l, i), c = mf_d_col(l);
            for (int k = 0; k < 16; k++) d[l][i] += A[r][k] * B[k][c];
        }
}

/* the planted bug: lane / 16 and lane % 16 exchanged in the row reader */
void frag_rows_swapped(const uint16_t *m, int ld, int k0, int lane, uint16_t f[4])
{
    const uint16_t *p = m + (lane / 16) * ld + k0 + 4 * (lane % 16);
    for (int j = 0; j < 4; j++) f[j] = p[j];
}

/* the kernel's row stride at lp columns */
int ldk_of(int lp)
{
    mla_kv_codec k{};
    k.c = lp;
    return mf_geometry(k, 64, 1.0f, 1.0f).ldk;
}

typedef void (*rows_fn)(const uint16_t *, int, int, int, uint16_t *);

/* S = Q K^T of 16 heads x 16 keys over lp dims, both in the kernel's shared-memory rows (stride ldk,
 * columns past lp NaN); the worst |error| against float64 */
double s_block(rows_fn rows, int lp, int key0)
{
    const int ldk = ldk_of(lp);
    std::vector<uint16_t> Q(MF_HM * ldk, NAN_BF16), K(MF_KR * ldk, NAN_BF16);
    for (int r = 0; r < MF_HM; r++)
        for (int e = 0; e < lp; e++) Q[r * ldk + e] = gd_f32_to_bf16(uni());
    for (int r = 0; r < MF_KR; r++)
        for (int e = 0; e < lp; e++) K[r * ldk + e] = gd_f32_to_bf16(uni());
    double d[MF_LANES][4] = {};
    for (int k0 = 0; k0 < lp; k0 += 16) {
        uint16_t fa[MF_LANES][4], fb[MF_LANES][4];
        for (int l = 0; l < MF_LANES; l++) {
            rows(Q.data(), ldk, k0, l, fa[l]);
            rows(K.data() + key0 * ldk, ldk, k0, l, fb[l]);
        }
        mfma(d, fa, fb);
    }
    double worst = 0;
    int seen[MF_HM][16] = {};
    for (int l = 0; l < MF_LANES; l++)
        for (int i = 0; i < 4; i++) {
            const int h = mf_d_row(l, i), key = mf_d_col(l);
            double ref = 0;
            for (int e = 0; e < lp; e++) ref += bf(Q[h * ldk + e]) * bf(K[(key0 + key) * ldk + e]);
            const double err = fabs(d[l][i] - ref);
            worst = err > worst || isnan(err) ? err : worst;
            seen[h][key]++;
        }
    for (int h = 0; h < MF_HM; h++)
        for (int k = 0; k < 16; k++)
            if (seen[h][k] != 1) return INFINITY; /* every score written once */
    return worst;
}

/* O (16 heads x 16 dims at dim0) = P V over the 32 keys of a chunk, P's keys at key0 of its row: the
 * kernel's two 16-key steps; the worst |error| against float64 */
double pv_block(int lp, int key0, int dim0)
{
    const int ldk = ldk_of(lp);
    std::vector<uint16_t> P(MF_HM * MF_PLD, NAN_BF16), V(MF_KR * ldk, NAN_BF16);
    for (int r = 0; r < MF_HM; r++)
        for (int k = 0; k < 64; k++) P[r * MF_PLD + k] = gd_f32_to_bf16(0.5f * (uni() + 1.0f));
    for (int r = 0; r < MF_KR; r++)
        for (int e = 0; e < lp; e++) V[r * ldk + e] = gd_f32_to_bf16(uni());
    double d[MF_LANES][4] = {};
    for (int kb = 0; kb < MF_KR / 16; kb++) {
        uint16_t fa[MF_LANES][4], fb[MF_LANES][4];
        for (int l = 0; l < MF_LANES; l++) {
            mf_frag_rows(P.data(), MF_PLD, key0 + 16 * kb, l, fa[l]);
            mf_frag_cols(V.data(), ldk, 16 * kb, dim0, l, fb[l]);
        }
        mfma(d, fa, fb);
    }
    double worst = 0;
    for (int l = 0; l < MF_LANES; l++)
        for (int i = 0; i < 4; i++) {
            const int h = mf_d_row(l, i), dim = dim0 + mf_d_col(l);
            double ref = 0;
            for (int k = 0; k < MF_KR; k++) ref += bf(P[h * MF_PLD + key0 + k]) * bf(V[k * ldk + dim]);
            const double err = fabs(d[l][i] - ref);
            worst = err > worst || isnan(err) ? err : worst;
        }
    return worst;
}

/* The test's wave type for the kernel's phases: all 64 lanes at once, the MFMA emulated (float64) */
struct host_wave {
    typedef uint16_t frag[MF_LANES][4];
    struct acc {
        double v[MF_LANES][4];
    };
    void rows(frag &f, const uint16_t *m, int ld, int k0) const
    {
        for (int l = 0; l < MF_LANES; l++) mf_frag_rows(m, ld, k0, l, f[l]);
    }
    void cols(frag &f, const uint16_t *m, int ld, int k0, int c0) const
    {
        for (int l = 0; l < MF_LANES; l++) mf_frag_cols(m, ld, k0, c0, l, f[l]);
    }
    acc zero() const { return acc{}; }
    acc mma(const frag &a, const frag &b, acc c) const
    {
        mfma(c.v, a, b);
        return c;
    }
    template <class F> void each(const acc &d, F f) const
    {
        for (int l = 0; l < MF_LANES; l++)
            for (int i = 0; i < 4; i++) f(l, i, (float)d.v[l][i]);
    }
    template <class F> void scale(acc &d, F f) const
    {
        for (int l = 0; l < MF_LANES; l++)
            for (int i = 0; i < 4; i++) d.v[l][i] *= f(l, i);
    }
};

/* One block as the kernel runs it: each phase for every thread (or wave) between barriers. */
template <int NB> void run_block(const mf_args &a, const mf_geom &g, int t, int hg, int sp, std::vector<uint16_t> &mem)
{
    std::fill(mem.begin(), mem.end(), (uint16_t)0xffff); /* garbage (NaN), as shared memory starts */
    const mf_smem sm = mf_smem_of(mem.data(), g.ldk);
    const mf_block b = mf_block_of(a, g, t, hg, sp);
    host_wave w;
    for (int tid = 0; tid < MF_THREADS; tid++) mf_stage_q(a, g, b, sm, tid);
    static host_wave::acc o[4][NB];
    for (int wv = 0; wv < 4; wv++)
        for (int i = 0; i < NB; i++) o[wv][i] = w.zero();
    const int nch = g.nk / MF_KR;
    for (int it = 0; it < b.ntiles; it++) {
        const int c0 = b.j0 + it * g.nk, n = std::min(g.nk, b.j1 - c0);
        for (int ch = 0; ch < nch; ch++) {
            for (int tid = 0; tid < MF_THREADS; tid++) mf_load_rows(a, g, b, sm, c0 + MF_KR * ch, n - MF_KR * ch, tid);
            for (int wv = 0; wv < 2; wv++) mf_s(w, g, sm, wv, MF_KR * ch, n);
        }
        float mn[MF_HM], sum[MF_HM];
        for (int hh = 0; hh < MF_HM; hh++) {
            float mx = -INFINITY, s = 0.0f;
            for (int sub = 0; sub < 16; sub++) mx = fmaxf(mx, mf_sm_max(g, sm, 16 * hh + sub));
            mn[hh] = fmaxf(sm.m_run[hh], mx);
            for (int sub = 0; sub < 16; sub++) s += mf_sm_p(g, sm, 16 * hh + sub, mn[hh]);
            sum[hh] = s;
        }
        for (int hh = 0; hh < MF_HM; hh++) mf_sm_update(sm, hh, mn[hh], sum[hh]);
        for (int wv = 0; wv < 4; wv++) mf_rescale<NB>(w, sm, o[wv]);
        for (int ch = nch - 1; ch >= 0; ch--) {
            if (ch != nch - 1)
                for (int tid = 0; tid < MF_THREADS; tid++) mf_load_rows(a, g, b, sm, c0 + MF_KR * ch, n - MF_KR * ch, tid);
            for (int wv = 0; wv < 4; wv++) mf_pv<NB>(w, g, sm, wv, MF_KR * ch, o[wv]);
        }
    }
    for (int wv = 0; wv < 4; wv++) mf_store<NB>(w, a, g, b, sm, wv, o[wv]);
    for (int tid = 0; tid < MF_THREADS; tid++) mf_store_lse(a, b, sm, tid);
}

struct kcase {
    const char *name;
    int nk; /* keys a tile (mla_attn_tc_tile of the case's heads and rows) */
    dc::shape sh;
};

/* Runs one case through the kernel's phases; the worst rel L2 of the output and |lse| error against
 * float64 attention (ref_causal_plus: the reference's extra rows), and the non-finite values. */
void run_kernel_case(const kcase &kc, int ref_causal_plus, double *worst_o, double *worst_lse, int *nonfinite)
{
    const dc::shape &sh = kc.sh;
    dc::data d(sh, 200.0f, 2.0f / sqrtf(192.0f));
    const mf_args a = {.q_abs = d.q_abs.data(), .q_pe = d.q_pe.data(), .kv = d.kv, .tok_seq = d.tok_seq.data(),
                       .seqs = d.seqs.data(), .part_o = d.part_o.data(), .part_lse = d.part_lse.data(), .t = d.t, .h = sh.h,
                       .splits = d.s, .split_len = sh.split_len, .causal_plus = sh.causal_plus};
    const mf_geom g = mf_geometry(d.kv.codec, kc.nk, d.scale, 1.0f);
    std::vector<uint16_t> mem(mf_shm_bytes(g.ldk) / 2);
    for (int t = 0; t < d.t; t++)
        for (int hg = 0; hg < (sh.h + MF_HM - 1) / MF_HM; hg++)
            for (int sp = 0; sp < d.s; sp++) {
                if (sh.c == 512) run_block<8>(a, g, t, hg, sp, mem);
                else run_block<4>(a, g, t, hg, sp, mem);
            }
    d.judge(sh, ref_causal_plus, worst_o, worst_lse, nonfinite);
}

int failures = 0;
void expect(bool ok, const char *what, double v)
{
    printf("%-58s %s (%.3g)\n", what, ok ? "ok" : "FAIL", v);
    failures += !ok;
}

} // namespace

int main()
{
    const double tol = 1e-9; /* float64 sums of the same bf16 inputs, in another order */
    for (int lp : {576, 272, 64}) {
        char what[96];
        snprintf(what, sizeof what, "S block, lp %d, keys 0-15", lp);
        expect(s_block(mf_frag_rows, lp, 0) < tol, what, s_block(mf_frag_rows, lp, 0));
        snprintf(what, sizeof what, "S block, lp %d, keys 16-31", lp);
        const double e16 = s_block(mf_frag_rows, lp, 16);
        expect(e16 < tol, what, e16);
        for (int key0 : {0, 32})
            for (int dim0 : {0, 48, 496}) {
                if (dim0 + 16 > lp) continue;
                snprintf(what, sizeof what, "P V block, lp %d, keys %d-%d, dims %d-%d", lp, key0, key0 + 31, dim0, dim0 + 15);
                const double e = pv_block(lp, key0, dim0);
                expect(e < tol, what, e);
            }
    }
    /* whole blocks: P in bf16 (relative 2^-9) bounds the output's error (measured 8.8e-4 to 1.8e-3 on
     * these cases, 2026-12-04); the LSE is of fp32 sums (measured <= 5.8e-7) */
    const double lim_o = 4e-3, lim_lse = 1e-5;
    const kcase cases[] = {
        {"v3 dims, bf16, 2 seqs, page 16", 64, {512, 64, 16, 16, MLA_KV_BF16, 0, 1, 1, 0, {37, 150}}},
        {"v3 dims, fp8, 3 uneven splits", 64, {512, 64, 16, 16, MLA_KV_FP8, 0, 1, 3, 0, {37, 100, 1}}},
        {"fp8_ds, 12 heads, s_q 2, page 64", 64, {512, 64, 12, 64, MLA_KV_FP8_DS, 0, 2, 2, 0, {70, 3}}},
        {"fp8 e4m3fnuz, 20 heads (two groups)", 64, {512, 64, 20, 16, MLA_KV_FP8, 1, 1, 1, 0, {90}}},
        {"tiny-v3 dims, off-by-one fault", 64, {256, 16, 8, 16, MLA_KV_BF16, 0, 2, 1, 1, {20, 33}}},
        {"40 heads, C 256 R 32: 32-key tiles", 32, {256, 32, 40, 1, MLA_KV_BF16, 0, 1, 2, 0, {75}}},
        {"more splits than rows", 64, {256, 64, 4, 16, MLA_KV_BF16, 0, 1, 8, 0, {5, 17}}},
        {"fixed 256-key splits, uneven lengths", 64, {512, 64, 16, 16, MLA_KV_FP8_DS, 0, 1, 3, 0, {300, 37, 700}, 256}},
    };
    for (const kcase &kc : cases) {
        double wo, wl;
        int nf;
        run_kernel_case(kc, kc.sh.causal_plus, &wo, &wl, &nf);
        char what[96];
        snprintf(what, sizeof what, "kernel: %s", kc.name);
        printf("  rel L2 %.2e  |lse| %.2e  non-finite %d\n", wo, wl, nf);
        expect(nf == 0 && wo <= lim_o && wl <= lim_lse, what, wo);
    }
    {
        double wo, wl;
        int nf;
        run_kernel_case(cases[4], 0, &wo, &wl, &nf);
        expect(!(wo <= lim_o && wl <= lim_lse), "sensitivity: a reference one row short fails", wo);
    }
    const double planted = s_block(frag_rows_swapped, 576, 0);
    expect(!(planted < tol), "planted: a row reader with lane / 16 and lane % 16 swapped", planted);
    const int ldk = ldk_of(576), shm = mf_shm_bytes(ldk);
    expect(shm <= 65536, "shared memory at C + R 576 within CDNA's 64 KB", shm);
    std::vector<uint16_t> mem(shm / 2);
    const mf_smem sm = mf_smem_of(mem.data(), ldk);
    auto at8 = [&](const void *p) { return ((const uint8_t *)p - (const uint8_t *)mem.data()) % 8 == 0; };
    expect(ldk * 2 % 8 == 0 && MF_PLD * 2 % 8 == 0 && at8(sm.K) && at8(sm.P) && at8(sm.sc) &&
               (const uint8_t *)(sm.corr + MF_HM) <= (const uint8_t *)(mem.data() + mem.size()),
           "fragment rows 8-byte aligned (Q, K, P), the f32 part inside", ldk);
    printf("test_decode_mfma: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
