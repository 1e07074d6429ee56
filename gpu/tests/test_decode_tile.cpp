/* test_decode_tile.cpp: the head-grouped decode kernel's steps (gpu/src/gpu_decode_tile.h) run on the
 * host, every thread of a block stepped in turn between the kernel's barriers, against float64
 * attention over the same dequantized cache rows. Runs in CI without a GPU: it checks the kernel's
 * indexing, tiling, split boundaries, masking and online softmax; not the GPU's memory model.
 * Paged caches in all three row formats, shuffled block tables, partial head groups, uneven and
 * empty splits, s_q 2, the causal-off-by-one fault's extra row; unwritten rows are poisoned so that
 * reading one turns the result into NaN. A last case makes sure the comparison can fail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "decode_case.h"
#include "gpu_decode_tile.h"

namespace {

struct tcase {
    const char *name;
    dc::shape sh;
};

/* Runs one case; returns the worst (rel L2 of o, |lse error|) over every (token, head).
 * ref_causal_plus lets the last case compare against a deliberately different reference. */
void run_case(const tcase &tc, int ref_causal_plus, double *worst_o, double *worst_lse, int *nonfinite)
{
    const dc::shape &sh = tc.sh;
    dc::data d(sh, 256.0f, 0.3f / sqrtf(192.0f));
    const int H = sh.h, groups = (H + DT_HG - 1) / DT_HG;
    const dt_args a = {.q_abs = d.q_abs.data(), .q_pe = d.q_pe.data(), .kv = d.kv, .tok_seq = d.tok_seq.data(),
                       .seqs = d.seqs.data(), .part_o = d.part_o.data(), .part_lse = d.part_lse.data(), .t = d.t, .h = H,
                       .splits = d.s, .split_len = sh.split_len, .scale = d.scale, .causal_plus = sh.causal_plus};

    /* the kernel: every block, every thread stepped between barriers */
    dt_shared *smem = (dt_shared *)malloc(sizeof(dt_shared));
    std::vector<float> acc((size_t)DT_THREADS * DT_HG * DT_CPT);
    auto acc_of = [&](int tid) -> float (&)[DT_HG][DT_CPT] {
        return *reinterpret_cast<float(*)[DT_HG][DT_CPT]>(&acc[(size_t)tid * DT_HG * DT_CPT]);
    };
    for (int t = 0; t < d.t; t++)
        for (int g = 0; g < groups; g++)
            for (int sp = 0; sp < d.s; sp++) {
                memset(smem, 0xff, sizeof *smem); /* garbage, as shared memory starts */
                std::fill(acc.begin(), acc.end(), 0.0f);
                const dt_block b = dt_block_of(a, t, g, sp);
                for (int tid = 0; tid < DT_THREADS; tid++) dt_load_q(a, b, *smem, tid);
                for (int c0 = b.j0; c0 < b.j1; c0 += DT_NK) {
                    int n = b.j1 - c0 < DT_NK ? b.j1 - c0 : DT_NK;
                    for (int tid = 0; tid < DT_THREADS; tid++) dt_load_tile(a, b, *smem, tid, c0, n);
                    for (int tid = 0; tid < DT_THREADS; tid++) dt_scores(a, *smem, tid, n);
                    for (int tid = 0; tid < DT_THREADS; tid++) dt_softmax(a, *smem, tid, n);
                    for (int tid = 0; tid < DT_THREADS; tid++) dt_pv(a, *smem, tid, n, acc_of(tid));
                }
                for (int tid = 0; tid < DT_THREADS; tid++) dt_store(a, b, *smem, tid, acc_of(tid));
            }
    free(smem);
    d.judge(sh, ref_causal_plus, worst_o, worst_lse, nonfinite);
}

} // namespace

int main()
{
    /* rel L2 of the output and |lse| error of fp32 arithmetic against float64 (measured <= 4e-7) */
    const double lim_o = 1e-5, lim_lse = 1e-5;
    const tcase cases[] = {
        {"v3 dims, bf16, 2 seqs", {512, 64, 16, 16, MLA_KV_BF16, 0, 1, 1, 0, {37, 100}}},
        {"v3 dims, fp8, 3 uneven splits", {512, 64, 16, 16, MLA_KV_FP8, 0, 1, 3, 0, {37, 100, 1}}},
        {"fp8_ds, 12 heads, s_q 2", {512, 64, 12, 64, MLA_KV_FP8_DS, 0, 2, 2, 0, {70, 3}}},
        {"tiny-v3 dims, off-by-one fault", {256, 16, 8, 16, MLA_KV_BF16, 0, 2, 1, 1, {20, 33}}},
        {"more splits than rows", {128, 64, 4, 16, MLA_KV_BF16, 0, 1, 8, 0, {5, 17}}},
        {"kimi-k2 heads 64, page 1", {512, 64, 64, 1, MLA_KV_BF16, 0, 1, 2, 0, {40}}},
        {"fixed 64-key splits, uneven lengths", {512, 64, 16, 16, MLA_KV_FP8, 0, 1, 4, 0, {37, 200, 1, 130, 64}, 64}},
        {"fixed 32-key splits, s_q 2, off-by-one", {256, 16, 8, 16, MLA_KV_BF16, 0, 2, 3, 1, {20, 70, 33}, 32}},
    };
    int fails = 0;
    for (const tcase &tc : cases) {
        double wo, wl;
        int nf;
        run_case(tc, tc.sh.causal_plus, &wo, &wl, &nf);
        int ok = nf == 0 && wo <= lim_o && wl <= lim_lse;
        printf("%-34s rel L2 %.2e  |lse| %.2e  non-finite %d  %s\n", tc.name, wo, wl, nf, ok ? "ok" : "FAIL");
        fails += !ok;
    }
    /* sensitivity: the same kernel judged against a reference that sees one row fewer must fail */
    {
        double wo, wl;
        int nf;
        run_case(cases[3], 0, &wo, &wl, &nf);
        int caught = !(wo <= lim_o && wl <= lim_lse);
        printf("%-34s rel L2 %.2e  |lse| %.2e  %s\n", "control: reference one row short", wo, wl,
               caught ? "caught (ok)" : "NOT CAUGHT");
        fails += !caught;
    }
    printf("test_decode_tile: %d failure(s)\n", fails);
    return fails ? 1 : 0;
}
