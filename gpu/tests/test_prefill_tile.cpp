/* test_prefill_tile.cpp: the query-tiled prefill kernel's steps (gpu/src/gpu_prefill_tile.h) run on the
 * host, every thread of a block stepped in turn between the kernel's barriers, against float64
 * attention with the same semantics: new tokens causal, cached context separate, each part's output
 * rounded to bf16 before the LSE merge. Batches of sequences with and without context, partial query
 * tiles, V of 32 / 64 / 128, the off-by-one and bf16-LSE faults. A last case makes sure the
 * comparison can fail. Runs in CI without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "gpu_prefill_tile.h"

namespace {

struct tcase {
    const char *name;
    int h, p, r, v, causal_plus, lse_bf16;
    std::vector<int> past, news; /* per sequence: cached tokens, new tokens */
};

uint64_t rng_state = 0x9e3779b97f4a7c15ull;
uint16_t rnd_bf16()
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return gd_f32_to_bf16((float)(rng_state >> 40) * (2.0f / 16777216.0f) - 1.0f);
}

double rb(double x) { return gd_round_bf16((float)x); } /* the kernel rounds fp32 values */

/* Worst rel L2 of an output row (against float64 with the kernel's bf16 rounding points) and |lse|. */
void run_case(const tcase &tc, int ref_causal_plus, double *worst_o, double *worst_lse, int *nonfinite, int *over_ulp)
{
    const int H = tc.h, P = tc.p, R = tc.r, V = tc.v, D = P + R, S = (int)tc.news.size();
    std::vector<gpu_seq> seqs(S);
    int T = 0, n_ws = 0, max_new = 0;
    for (int s = 0; s < S; s++) {
        seqs[s] = gpu_seq{.slot = s, .n_past = tc.past[s], .n_new = tc.news[s], .tok0 = T, .ws0 = n_ws};
        T += tc.news[s];
        n_ws += tc.past[s] + tc.news[s];
        max_new = tc.news[s] > max_new ? tc.news[s] : max_new;
    }
    std::vector<uint16_t> qn((size_t)T * H * P), qp((size_t)T * H * R), kvx((size_t)n_ws * H * (P + V)), kpe((size_t)n_ws * R);
    for (auto &x : qn) x = rnd_bf16();
    for (auto &x : qp) x = rnd_bf16();
    for (auto &x : kvx) x = rnd_bf16();
    for (auto &x : kpe) x = rnd_bf16();
    std::vector<uint16_t> out((size_t)T * H * V, 0xffff); /* NaN until written */
    std::vector<float> lse((size_t)T * H, NAN);
    const float scale = 0.4f / sqrtf((float)D);
    const pt_args a = {.q_nope = qn.data(), .q_pe = qp.data(), .kvx = kvx.data(), .ws_kpe = kpe.data(),
                       .seqs = seqs.data(), .out = out.data(), .lse = lse.data(), .h = H, .p = P, .r = R, .v = V,
                       .scale = scale, .causal_plus = tc.causal_plus, .lse_bf16 = tc.lse_bf16};

    /* the kernel: every block, every thread stepped between barriers */
    pt_shared *sh = (pt_shared *)malloc(sizeof(pt_shared));
    std::vector<pt_block> b(PT_THREADS);
    std::vector<float> acc((size_t)PT_THREADS * PT_ACC), keep((size_t)PT_THREADS * PT_ACC);
    auto A = [&](std::vector<float> &x, int tid) -> float (&)[PT_ACC] {
        return *reinterpret_cast<float(*)[PT_ACC]>(&x[(size_t)tid * PT_ACC]);
    };
    auto run_part = [&](int ctx) {
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int tid = 0; tid < PT_THREADS; tid++) pt_part_begin(a, b[tid], *sh, tid, ctx);
        for (int c0 = b[0].k0; c0 < b[0].k1; c0 += PT_NK) {
            int n = b[0].k1 - c0 < PT_NK ? b[0].k1 - c0 : PT_NK;
            for (int tid = 0; tid < PT_THREADS; tid++) pt_load_kv(a, b[tid], *sh, tid, c0, n);
            for (int tid = 0; tid < PT_THREADS; tid++) pt_scores(a, *sh, tid, n);
            for (int tid = 0; tid < PT_THREADS; tid++) pt_softmax(a, b[tid], *sh, tid, c0, n);
            for (int tid = 0; tid < PT_THREADS; tid++) pt_pv(a, *sh, tid, n, A(acc, tid));
        }
    };
    for (int qt = 0; qt < (max_new + PT_QT - 1) / PT_QT; qt++)
        for (int si = 0; si < S; si++)
            for (int h = 0; h < H; h++) {
                memset(sh, 0xff, sizeof *sh); /* garbage, as shared memory starts */
                for (int tid = 0; tid < PT_THREADS; tid++) b[tid] = pt_block_of(a, qt, si, h);
                if (b[0].rows <= 0) continue;
                for (int tid = 0; tid < PT_THREADS; tid++) pt_load_q(a, b[tid], *sh, tid);
                run_part(0);
                for (int tid = 0; tid < PT_THREADS; tid++) pt_part_end_new(a, *sh, tid, A(acc, tid), A(keep, tid));
                if (b[0].s.n_past > 0) {
                    run_part(1);
                    for (int tid = 0; tid < PT_THREADS; tid++) pt_part_end_ctx(a, *sh, tid);
                }
                for (int tid = 0; tid < PT_THREADS; tid++) pt_store(a, b[tid], *sh, tid, A(acc, tid), A(keep, tid));
            }
    free(sh);

    /* float64 with the same parts and rounding points */
    *worst_o = *worst_lse = 0;
    *nonfinite = *over_ulp = 0;
    const int64_t ld = (int64_t)H * (P + V);
    std::vector<double> oa(V), ob(V), sc;
    auto part = [&](const gpu_seq &s, int t, int h, int k0, int k1, std::vector<double> &o) -> double {
        sc.assign(k1 - k0, 0.0);
        double mx = -INFINITY, sum = 0;
        for (int k = k0; k < k1; k++) {
            int64_t w = s.ws0 + k;
            double d = 0;
            for (int e = 0; e < D; e++)
                d += (double)gd_bf16_to_f32(e < P ? qn[((size_t)t * H + h) * P + e] : qp[((size_t)t * H + h) * R + e - P]) *
                     gd_bf16_to_f32(e < P ? kvx[w * ld + h * (P + V) + e] : kpe[w * R + e - P]);
            sc[k - k0] = d * scale;
            mx = sc[k - k0] > mx ? sc[k - k0] : mx;
        }
        std::fill(o.begin(), o.end(), 0.0);
        for (int k = k0; k < k1; k++) {
            double pk = exp(sc[k - k0] - mx);
            sum += pk;
            for (int e = 0; e < V; e++) o[e] += pk * gd_bf16_to_f32(kvx[(s.ws0 + k) * ld + h * (P + V) + P + e]);
        }
        for (int e = 0; e < V; e++) o[e] /= sum;
        return mx + log(sum);
    };
    for (int si = 0; si < S; si++) {
        const gpu_seq s = seqs[si];
        for (int i = 0; i < s.n_new; i++)
            for (int h = 0; h < H; h++) {
                int t = s.tok0 + i, total = s.n_past + s.n_new;
                int end = s.n_past + i + 1 + ref_causal_plus < total ? s.n_past + i + 1 + ref_causal_plus : total;
                double lb = part(s, t, h, s.n_past, end, ob), l = lb;
                std::vector<double> want(ob);
                if (s.n_past > 0) {
                    double la = part(s, t, h, 0, s.n_past, oa);
                    double xa = tc.lse_bf16 ? rb(la) : la, xb = tc.lse_bf16 ? rb(lb) : lb;
                    double mm = xa > xb ? xa : xb, wa = exp(xa - mm), wb = exp(xb - mm);
                    for (int e = 0; e < V; e++) want[e] = rb(oa[e]) * (wa / (wa + wb)) + rb(ob[e]) * (wb / (wa + wb));
                    l = log(wa + wb) + mm;
                }
                double num = 0, den = 0;
                for (int e = 0; e < V; e++) {
                    double got = gd_bf16_to_f32(out[((size_t)t * H + h) * V + e]);
                    if (!isfinite(got)) (*nonfinite)++;
                    double w = rb(want[e]); /* the kernel's output is bf16 */
                    num += (got - w) * (got - w);
                    den += w * w;
                    double big = fabs(w) > fabs(got) ? fabs(w) : fabs(got);
                    if (fabs(got - w) > ldexp(1.0, ilogb(big) - 7) + 1e-30) (*over_ulp)++; /* > 1 bf16 ulp */
                }
                double rel = sqrt(num / den), el = fabs(lse[(size_t)t * H + h] - l);
                if (!isfinite(lse[(size_t)t * H + h])) (*nonfinite)++;
                if (!(rel <= *worst_o)) *worst_o = rel;
                if (!(el <= *worst_lse)) *worst_lse = el;
            }
    }
}

} // namespace

int main()
{
    /* outputs compared after bf16 rounding on both sides: what differs is a float32 value next to a
     * rounding boundary (of a part or of the output) rounding the other way than float64 does */
    const double lim_o = 2e-3, lim_lse = 2e-5; /* and no output more than 1 bf16 ulp away */
    const tcase cases[] = {
        {"v3 dims, 3 seqs, no context", 4, 128, 64, 128, 0, 0, {0, 0, 0}, {70, 5, 33}},
        {"v3 dims, context 40 + 37 new", 3, 128, 64, 128, 0, 0, {40, 0}, {37, 64}},
        {"tiny dims (v 32), context, bf16 LSE", 8, 32, 16, 32, 0, 1, {9, 100}, {40, 3}},
        {"v 64, off-by-one fault", 2, 64, 32, 64, 1, 0, {17, 0}, {50, 20}},
    };
    int fails = 0;
    for (const tcase &tc : cases) {
        double wo, wl;
        int nf, nu;
        run_case(tc, tc.causal_plus, &wo, &wl, &nf, &nu);
        int ok = nf == 0 && nu == 0 && wo <= lim_o && wl <= lim_lse;
        printf("%-38s rel L2 %.2e  |lse| %.2e  non-finite %d  > 1 ulp %d  %s\n", tc.name, wo, wl, nf, nu,
               ok ? "ok" : "FAIL");
        fails += !ok;
    }
    { /* sensitivity: the same kernel judged against a reference that sees one key fewer must fail */
        double wo, wl;
        int nf, nu;
        run_case(cases[3], 0, &wo, &wl, &nf, &nu);
        int caught = !(wo <= lim_o && wl <= lim_lse);
        printf("%-38s rel L2 %.2e  |lse| %.2e  %s\n", "control: reference one key short", wo, wl,
               caught ? "caught (ok)" : "NOT CAUGHT");
        fails += !caught;
    }
    printf("test_prefill_tile: %d failure(s)\n", fails);
    return fails ? 1 : 0;
}
