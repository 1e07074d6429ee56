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

#include "gpu_decode_tile.h"

namespace {

struct tcase {
    const char *name;
    int c, r, h, block_size;
    mla_kv_format fmt;
    int s_q, splits, causal_plus;
    std::vector<int> lens; /* tokens per sequence, the last s_q of them decoded */
};

uint64_t rng_state = 0x1234567887654321ull;
float uni() /* [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng_state >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

void put_row(const tcase &tc, uint8_t *row)
{
    for (int e = 0; e < tc.c + tc.r; e++) {
        float v = uni();
        if (tc.fmt == MLA_KV_BF16) {
            uint16_t b = gd_f32_to_bf16(v);
            memcpy(row + 2 * e, &b, 2);
        } else if (tc.fmt == MLA_KV_FP8) {
            row[e] = gd_f32_to_e4m3(v * 256.0f, 0);
        } else if (e < tc.c) {
            row[e] = gd_f32_to_e4m3(v * 256.0f, 0);
            if (e % 128 == 0) {
                float s = 1.0f / 256.0f;
                memcpy(row + tc.c + 4 * (e / 128), &s, 4);
            }
        } else {
            uint16_t b = gd_f32_to_bf16(v);
            memcpy(row + tc.c + 4 * (tc.c / 128) + 2 * (e - tc.c), &b, 2);
        }
    }
}

/* Runs one case; returns the worst (rel L2 of o, |lse error|) over every (token, head).
 * ref_causal_plus lets the last case compare against a deliberately different reference. */
void run_case(const tcase &tc, int ref_causal_plus, double *worst_o, double *worst_lse, int *nonfinite)
{
    const int C = tc.c, R = tc.r, L = C + R, H = tc.h, n_seqs = (int)tc.lens.size();
    int maxlen = 0;
    for (int len : tc.lens) maxlen = len > maxlen ? len : maxlen;
    const int bps = (maxlen + tc.block_size - 1) / tc.block_size, n_blocks = bps * n_seqs;
    const int rb = (int)mla_kv_row_bytes(tc.fmt, C, R);
    std::vector<uint8_t> pool((size_t)n_blocks * tc.block_size * rb, 0xff); /* poison: NaN in every format */
    std::vector<int32_t> tables(n_blocks);
    for (int i = 0; i < n_blocks; i++) tables[i] = i;
    for (int i = n_blocks - 1; i > 0; i--) {
        int j = (int)((uni() + 1.0f) * 0.5f * (float)(i + 1)) % (i + 1), t = tables[i];
        tables[i] = tables[j];
        tables[j] = t;
    }
    const mla_kv_codec codec = {.format = tc.fmt, .fp8_fnuz = 0, .c = C, .r = R,
                                .k_scale = tc.fmt == MLA_KV_FP8 ? 1.0f / 256.0f : 1.0f};
    const gpu_kv_desc kv = {.pool = pool.data(), .tables = tables.data(), .blocks_per_seq = bps,
                            .block_size = tc.block_size, .row_bytes = rb, .codec = codec};
    std::vector<gpu_seq> seqs(n_seqs);
    std::vector<int32_t> tok_seq;
    for (int s = 0; s < n_seqs; s++) {
        seqs[s] = gpu_seq{.slot = s, .n_past = tc.lens[s] - tc.s_q, .n_new = tc.s_q, .tok0 = s * tc.s_q, .ws0 = 0};
        for (int k = 0; k < tc.s_q; k++) tok_seq.push_back(s);
        for (int j = 0; j < tc.lens[s]; j++) put_row(tc, const_cast<uint8_t *>(kv_row(kv, s, j)));
    }
    const int T = (int)tok_seq.size(), S = tc.splits, groups = (H + DT_HG - 1) / DT_HG;
    std::vector<float> q_abs((size_t)T * H * C), q_pe((size_t)T * H * R);
    for (float &v : q_abs) v = gd_round_bf16(uni());
    for (float &v : q_pe) v = gd_round_bf16(uni());
    std::vector<float> part_o((size_t)T * H * S * C, NAN), part_lse((size_t)T * H * S, NAN);
    const float scale = 0.3f / sqrtf(192.0f);
    const dt_args a = {.q_abs = q_abs.data(), .q_pe = q_pe.data(), .kv = kv, .tok_seq = tok_seq.data(),
                       .seqs = seqs.data(), .part_o = part_o.data(), .part_lse = part_lse.data(), .t = T, .h = H,
                       .splits = S, .scale = scale, .causal_plus = tc.causal_plus};

    /* the kernel: every block, every thread stepped between barriers */
    dt_shared *sh = (dt_shared *)malloc(sizeof(dt_shared));
    std::vector<float> acc((size_t)DT_THREADS * DT_HG * DT_CPT);
    auto acc_of = [&](int tid) -> float (&)[DT_HG][DT_CPT] {
        return *reinterpret_cast<float(*)[DT_HG][DT_CPT]>(&acc[(size_t)tid * DT_HG * DT_CPT]);
    };
    for (int t = 0; t < T; t++)
        for (int g = 0; g < groups; g++)
            for (int sp = 0; sp < S; sp++) {
                memset(sh, 0xff, sizeof *sh); /* garbage, as shared memory starts */
                std::fill(acc.begin(), acc.end(), 0.0f);
                const dt_block b = dt_block_of(a, t, g, sp);
                for (int tid = 0; tid < DT_THREADS; tid++) dt_load_q(a, b, *sh, tid);
                for (int c0 = b.j0; c0 < b.j1; c0 += DT_NK) {
                    int n = b.j1 - c0 < DT_NK ? b.j1 - c0 : DT_NK;
                    for (int tid = 0; tid < DT_THREADS; tid++) dt_load_tile(a, b, *sh, tid, c0, n);
                    for (int tid = 0; tid < DT_THREADS; tid++) dt_scores(a, *sh, tid, n);
                    for (int tid = 0; tid < DT_THREADS; tid++) dt_softmax(a, *sh, tid, n);
                    for (int tid = 0; tid < DT_THREADS; tid++) dt_pv(a, *sh, tid, n, acc_of(tid));
                }
                for (int tid = 0; tid < DT_THREADS; tid++) dt_store(a, b, *sh, tid, acc_of(tid));
            }
    free(sh);

    /* combine the splits and compare with float64 attention over the same rows */
    *worst_o = *worst_lse = 0;
    *nonfinite = 0;
    std::vector<double> o(C), want(C), sc;
    for (int t = 0; t < T; t++) {
        const gpu_seq s = seqs[tok_seq[t]];
        int pos = s.n_past + (t - s.tok0), total = pos + 1 + ref_causal_plus;
        if (total > s.n_past + s.n_new) total = s.n_past + s.n_new;
        for (int h = 0; h < H; h++) {
            int64_t base = ((int64_t)t * H + h) * S;
            double mm = -INFINITY, wsum = 0;
            for (int k = 0; k < S; k++) mm = part_lse[base + k] > mm ? part_lse[base + k] : mm;
            std::fill(o.begin(), o.end(), 0.0);
            for (int k = 0; k < S; k++) {
                if (part_lse[base + k] == -INFINITY) continue;
                double w = exp(part_lse[base + k] - mm);
                wsum += w;
                for (int e = 0; e < C; e++) o[e] += w * part_o[(base + k) * C + e];
            }
            for (int e = 0; e < C; e++) o[e] /= wsum;
            double lse = mm + log(wsum);

            const float *q = &q_abs[((size_t)t * H + h) * C], *qp = &q_pe[((size_t)t * H + h) * R];
            sc.assign(total, 0.0);
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < total; j++) {
                const uint8_t *row = kv_row(kv, s.slot, j);
                double d = 0;
                for (int e = 0; e < L; e++) d += (double)(e < C ? q[e] : qp[e - C]) * kv_load(kv, row, e);
                sc[j] = d * scale;
                mx = sc[j] > mx ? sc[j] : mx;
            }
            std::fill(want.begin(), want.end(), 0.0);
            for (int j = 0; j < total; j++) {
                double p = exp(sc[j] - mx);
                sum += p;
                const uint8_t *row = kv_row(kv, s.slot, j);
                for (int e = 0; e < C; e++) want[e] += p * kv_load(kv, row, e);
            }
            double num = 0, den = 0;
            for (int e = 0; e < C; e++) {
                want[e] /= sum;
                if (!isfinite(o[e])) (*nonfinite)++;
                num += (o[e] - want[e]) * (o[e] - want[e]);
                den += want[e] * want[e];
            }
            double rel = sqrt(num / den), el = fabs(lse - (mx + log(sum)));
            if (!isfinite(lse)) (*nonfinite)++;
            if (!(rel <= *worst_o)) *worst_o = rel; /* NaN sticks */
            if (!(el <= *worst_lse)) *worst_lse = el;
        }
    }
}

} // namespace

int main()
{
    /* rel L2 of the output and |lse| error of fp32 arithmetic against float64 (measured <= 4e-7) */
    const double lim_o = 1e-5, lim_lse = 1e-5;
    const tcase cases[] = {
        {"v3 dims, bf16, 2 seqs", 512, 64, 16, 16, MLA_KV_BF16, 1, 1, 0, {37, 100}},
        {"v3 dims, fp8, 3 uneven splits", 512, 64, 16, 16, MLA_KV_FP8, 1, 3, 0, {37, 100, 1}},
        {"fp8_ds, 12 heads, s_q 2", 512, 64, 12, 64, MLA_KV_FP8_DS, 2, 2, 0, {70, 3}},
        {"tiny-v3 dims, off-by-one fault", 256, 16, 8, 16, MLA_KV_BF16, 2, 1, 1, {20, 33}},
        {"more splits than rows", 128, 64, 4, 16, MLA_KV_BF16, 1, 8, 0, {5, 17}},
        {"kimi-k2 heads 64, page 1", 512, 64, 64, 1, MLA_KV_BF16, 1, 2, 0, {40}},
    };
    int fails = 0;
    for (const tcase &tc : cases) {
        double wo, wl;
        int nf;
        run_case(tc, tc.causal_plus, &wo, &wl, &nf);
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
