/* decode_case.h: what the host tests of the decode kernels share (test_decode_tile.cpp: the SIMT
 * head-grouped kernel; test_decode_mfma.cpp: the AMD MFMA kernel): a paged cache of random rows in one
 * of the three row formats behind a shuffled block table, poisoned where unwritten (NaN in bf16 and
 * e4m3fn), bf16 queries, and the judgement of a kernel's split outputs: the splits merged by their LSEs
 * and compared with float64 attention over the same dequantized rows. */
#ifndef MLA_GPU_TESTS_DECODE_CASE_H
#define MLA_GPU_TESTS_DECODE_CASE_H

#include <math.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "gpu_dtype.h"
#include "gpu_kv.h"

namespace dc {

inline uint64_t &rng()
{
    static uint64_t s = 0x1234567887654321ull;
    return s;
}
inline float uni() /* [-1, 1) */
{
    rng() = rng() * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng() >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

struct shape {
    int c, r, h, block_size;
    mla_kv_format fmt;
    int fnuz;
    int s_q, splits, causal_plus;
    std::vector<int> lens; /* tokens per sequence, the last s_q of them decoded */
    int split_len = 0;     /* gpu_decode_args' (0: equal runs) */
};

/* The cache and the call of one case; codes of fp8 rows are values x `code_mul` (per-tensor k_scale
 * 1 / code_mul; fp8_ds_mla tile scales powers of two near it). */
struct data {
    std::vector<uint8_t> pool;
    std::vector<int32_t> tables, tok_seq;
    std::vector<gpu_seq> seqs;
    std::vector<float> q_abs, q_pe, part_o, part_lse;
    gpu_kv_desc kv;
    int t, s;
    float scale;

    data(const shape &sh, float code_mul, float scale_) : scale(scale_)
    {
        const int C = sh.c, R = sh.r, n_seqs = (int)sh.lens.size();
        int maxlen = 0;
        for (int len : sh.lens) maxlen = std::max(maxlen, len);
        const int bps = (maxlen + sh.block_size - 1) / sh.block_size, n_blocks = bps * n_seqs;
        const int rb = (int)mla_kv_row_bytes(sh.fmt, C, R);
        pool.assign((size_t)n_blocks * sh.block_size * rb, 0xff);
        tables.resize(n_blocks);
        for (int i = 0; i < n_blocks; i++) tables[i] = i;
        for (int i = n_blocks - 1; i > 0; i--) std::swap(tables[i], tables[(int)((uni() + 1.0f) * 0.5f * (float)(i + 1)) % (i + 1)]);
        const mla_kv_codec codec = {.format = sh.fmt, .fp8_fnuz = sh.fnuz, .c = C, .r = R,
                                    .k_scale = sh.fmt == MLA_KV_FP8 ? 1.0f / code_mul : 1.0f};
        kv = gpu_kv_desc{.pool = pool.data(), .tables = tables.data(), .blocks_per_seq = bps, .block_size = sh.block_size,
                         .row_bytes = rb, .codec = codec};
        seqs.resize(n_seqs);
        for (int s = 0; s < n_seqs; s++) {
            seqs[s] = gpu_seq{.slot = s, .n_past = sh.lens[s] - sh.s_q, .n_new = sh.s_q, .tok0 = s * sh.s_q, .ws0 = 0};
            for (int k = 0; k < sh.s_q; k++) tok_seq.push_back(s);
            for (int j = 0; j < sh.lens[s]; j++) put_row(sh, code_mul, const_cast<uint8_t *>(kv_row(kv, s, j)));
        }
        t = (int)tok_seq.size();
        s = sh.splits;
        q_abs.resize((size_t)t * sh.h * C);
        q_pe.resize((size_t)t * sh.h * R);
        for (float &v : q_abs) v = gd_round_bf16(uni());
        for (float &v : q_pe) v = gd_round_bf16(uni());
        part_o.assign((size_t)t * sh.h * s * C, NAN);
        part_lse.assign((size_t)t * sh.h * s, NAN);
    }

    static void put_row(const shape &sh, float code_mul, uint8_t *row)
    {
        const int tiles = (sh.c + MLA_KV_DS_TILE - 1) / MLA_KV_DS_TILE;
        for (int e = 0; e < sh.c + sh.r; e++) {
            const float v = uni();
            const uint16_t b = gd_f32_to_bf16(v);
            if (sh.fmt == MLA_KV_BF16) {
                memcpy(row + 2 * e, &b, 2);
            } else if (sh.fmt == MLA_KV_FP8) {
                row[e] = gd_f32_to_e4m3(v * code_mul, sh.fnuz);
            } else if (e < sh.c) {
                row[e] = gd_f32_to_e4m3(v * code_mul, sh.fnuz);
                if (e % MLA_KV_DS_TILE == 0) {
                    const float s = gd_pow2_ceil(1.0f / code_mul) * (e % 256 ? 1.0f : 0.5f);
                    memcpy(row + sh.c + 4 * (e / MLA_KV_DS_TILE), &s, 4);
                }
            } else {
                memcpy(row + sh.c + 4 * tiles + 2 * (e - sh.c), &b, 2);
            }
        }
    }

    /* The splits merged by their LSEs against float64 attention over the same rows (ref_causal_plus:
     * the reference's extra rows): the worst rel L2 of the output, |lse| error, non-finite values. */
    void judge(const shape &sh, int ref_causal_plus, double *worst_o, double *worst_lse, int *nonfinite) const
    {
        const int C = sh.c, R = sh.r, L = C + R, H = sh.h;
        *worst_o = *worst_lse = 0;
        *nonfinite = 0;
        std::vector<double> o(C), want(C), sc;
        for (int ti = 0; ti < t; ti++) {
            const gpu_seq sq = seqs[tok_seq[ti]];
            const int pos = sq.n_past + (ti - sq.tok0), total = std::min(pos + 1 + ref_causal_plus, sq.n_past + sq.n_new);
            for (int h = 0; h < H; h++) {
                const int64_t base = ((int64_t)ti * H + h) * s;
                double mm = -INFINITY, wsum = 0;
                for (int k = 0; k < s; k++) mm = std::max(mm, (double)part_lse[base + k]);
                std::fill(o.begin(), o.end(), 0.0);
                for (int k = 0; k < s; k++) {
                    if (part_lse[base + k] == -INFINITY) continue;
                    const double w = exp(part_lse[base + k] - mm);
                    wsum += w;
                    for (int e = 0; e < C; e++) o[e] += w * part_o[(base + k) * C + e];
                }
                for (int e = 0; e < C; e++) o[e] /= wsum;
                const double lse = mm + log(wsum);
                const float *q = &q_abs[((size_t)ti * H + h) * C], *qp = &q_pe[((size_t)ti * H + h) * R];
                sc.assign(total, 0.0);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < total; j++) {
                    const uint8_t *row = kv_row(kv, sq.slot, j);
                    double d = 0;
                    for (int e = 0; e < L; e++) d += (double)(e < C ? q[e] : qp[e - C]) * kv_load(kv, row, e);
                    sc[j] = d * scale;
                    mx = std::max(mx, sc[j]);
                }
                std::fill(want.begin(), want.end(), 0.0);
                for (int j = 0; j < total; j++) {
                    const double p = exp(sc[j] - mx);
                    sum += p;
                    const uint8_t *row = kv_row(kv, sq.slot, j);
                    for (int e = 0; e < C; e++) want[e] += p * kv_load(kv, row, e);
                }
                double num = 0, den = 0;
                for (int e = 0; e < C; e++) {
                    want[e] /= sum;
                    if (!std::isfinite(o[e])) (*nonfinite)++;
                    num += (o[e] - want[e]) * (o[e] - want[e]);
                    den += want[e] * want[e];
                }
                const double rel = sqrt(num / den), el = fabs(lse - (mx + log(sum)));
                if (!std::isfinite(lse)) (*nonfinite)++;
                if (!(rel <= *worst_o)) *worst_o = rel; /* NaN sticks */
                if (!(el <= *worst_lse)) *worst_lse = el;
            }
        }
    }
};

} // namespace dc

#endif
