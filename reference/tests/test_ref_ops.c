/* test_ref_ops.c: the reference engine's own ops (ref_internal.h) against direct float64 evaluations
 * of mla-spec.md: attention in both forms (§b.2, §b.3) on small shapes with qk_nope != v_head_dim,
 * the LSE merge (§g.13), RoPE pairing (§c, and the rope-pairing fault), the paged cache through a
 * shuffled block table, group-limited top-k routing (§d) on a hand-computed case, and the faults
 * resolved into parameter values. All in the fp64 profile (no rounding), so agreement is to a few ulps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_internal.h"

#define TOL 1e-12

static uint64_t rng_state = 0x2545F4914F6CDD1Du;

/* Deterministic uniform in [-1, 1). */
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

static void fill(double *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = urand();
}

static const ref_numerics NM_FP64 = {0};

/* |a - b| <= TOL * max(1, |b|) elementwise, reporting the first index that is not. */
static void assert_close(const double *a, const double *b, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double tol = TOL * (fabs(b[i]) > 1 ? fabs(b[i]) : 1);
        if (!(fabs(a[i] - b[i]) <= tol)) fail_msg("%s[%lld]: %.17g, expected %.17g", what, (long long)i, a[i], b[i]);
    }
}

/* ---- attention ---------------------------------------------------------------------------- */

enum { H = 3, P = 5, R = 4, V = 3, C = 6, DQK = P + R, W = P + V, L = C + R, SMAX = 16, NMAX = 8 };
static const ref_attn_dims DIMS = {.H = H, .P = P, .R = R, .V = V, .C = C};

/* Direct MLA attention of one sequence, formula by formula (mla-spec.md §b.2 (7)-(11)): rows[S, C+R]
 * the latent and rope part of every key, q[n,H,P+R] the last n of the S = n_past + n tokens; query i
 * sees keys j < n_past + i + 1 + slack. out[n,H,V], lse[n,H], q_abs[n,H,C] (§b.3 (13)). */
static void attn_direct(double *out, double *lse, double *q_abs, const double *q, const double *rows,
                        int64_t n_past, int64_t n, const double *kv_b, double scale, int slack)
{
    int64_t S = n_past + n;
    for (int64_t i = 0; i < n; i++)
        for (int64_t h = 0; h < H; h++) {
            const double *qi = q + (i * H + h) * DQK;
            int64_t vis = n_past + i + 1 + slack < S ? n_past + i + 1 + slack : S;
            double s[SMAX], mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < vis; j++) {
                double dot = 0;
                for (int64_t d = 0; d < P; d++) { /* k_nope[h] = W_UK[h] c_j */
                    double k = 0;
                    for (int64_t c = 0; c < C; c++) k += kv_b[(h * W + d) * C + c] * rows[j * L + c];
                    dot += qi[d] * k;
                }
                for (int64_t r = 0; r < R; r++) dot += qi[P + r] * rows[j * L + C + r];
                s[j] = scale * dot;
                mx = s[j] > mx ? s[j] : mx;
            }
            for (int64_t j = 0; j < vis; j++) sum += exp(s[j] - mx);
            lse[i * H + h] = mx + log(sum);
            for (int64_t e = 0; e < V; e++) { /* o = sum_j p_j W_UV[h] c_j */
                double o = 0;
                for (int64_t j = 0; j < vis; j++) {
                    double v = 0;
                    for (int64_t c = 0; c < C; c++) v += kv_b[(h * W + P + e) * C + c] * rows[j * L + c];
                    o += exp(s[j] - mx) / sum * v;
                }
                out[(i * H + h) * V + e] = o;
            }
            for (int64_t c = 0; c < C; c++) {
                double a = 0;
                for (int64_t d = 0; d < P; d++) a += qi[d] * kv_b[(h * W + d) * C + c];
                q_abs[(i * H + h) * C + c] = a;
            }
        }
}

/* Random inputs of one sequence: q[n,H,P+R], rows[S,C+R] (context then new), kv_b[H*(P+V),C]. */
typedef struct {
    double q[NMAX * H * DQK], rows[SMAX * L], kv_b[H * W * C];
    double kv_c_new[NMAX * C], k_pe_new[NMAX * R];
} attn_inputs;

static void attn_inputs_fill(attn_inputs *in, int64_t n_past, int64_t n)
{
    fill(in->q, n * H * DQK);
    fill(in->rows, (n_past + n) * L);
    fill(in->kv_b, H * W * C);
    for (int64_t i = 0; i < n; i++) { /* the new tokens as the MHA form receives them */
        memcpy(in->kv_c_new + i * C, in->rows + (n_past + i) * L, C * sizeof(double));
        memcpy(in->k_pe_new + i * R, in->rows + (n_past + i) * L + C, R * sizeof(double));
    }
}

/* Both forms against the formula: with and without context (the MHA form then LSE-merges two
 * parts), one and several new tokens, the causal mask exact and with the off-by-one slack. */
static void test_attention_forms(void **state)
{
    (void)state;
    static const int64_t pasts[] = {0, 5}, news[] = {1, 4};
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int slack = 0; slack <= 1; slack++) {
                int64_t n_past = pasts[a], n = news[b];
                attn_inputs in;
                attn_inputs_fill(&in, n_past, n);
                ref_faults f = {.softmax_scale = 0.37, .mask_slack = slack, .routed_scale = 1};
                double want[NMAX * H * V], want_lse[NMAX * H], want_qa[NMAX * H * C];
                attn_direct(want, want_lse, want_qa, in.q, in.rows, n_past, n, in.kv_b, f.softmax_scale, slack);

                double core[NMAX * H * V], lse[NMAX * H], q_abs[NMAX * H * C];
                assert_int_equal(ref_attn_mha(core, lse, in.q, in.kv_c_new, in.k_pe_new, in.rows, n_past, n, in.kv_b,
                                              DIMS, &NM_FP64, &f),
                                 MLA_OK);
                assert_close(core, want, n * H * V, "mha core");
                assert_close(lse, want_lse, n * H, "mha lse");

                assert_int_equal(ref_attn_mqa(core, lse, q_abs, in.q, in.rows, n_past, n, in.kv_b, DIMS, &NM_FP64, &f),
                                 MLA_OK);
                assert_close(core, want, n * H * V, "mqa core");
                assert_close(lse, want_lse, n * H, "mqa lse");
                assert_close(q_abs, want_qa, n * H * C, "mqa q_abs");
            }
}

/* One head's attention of query q[dq] over keys k[nk,dq], values v[nk,dv]: o[dv], *lse. */
static void part_direct(double *o, double *lse, const double *q, const double *k, const double *v, int nk, int dq,
                        int dv)
{
    double s[SMAX], mx = -INFINITY, sum = 0;
    for (int j = 0; j < nk; j++) {
        s[j] = 0;
        for (int d = 0; d < dq; d++) s[j] += q[d] * k[j * dq + d];
        mx = s[j] > mx ? s[j] : mx;
    }
    for (int j = 0; j < nk; j++) sum += exp(s[j] - mx);
    for (int e = 0; e < dv; e++) {
        o[e] = 0;
        for (int j = 0; j < nk; j++) o[e] += exp(s[j] - mx) / sum * v[j * dv + e];
    }
    *lse = mx + log(sum);
}

/* Merging the attentions over keys [0, na) and [na, nk) gives the attention over all nk keys. */
static void test_lse_merge(void **state)
{
    (void)state;
    enum { DQ = 7, DV = 5, NK = 11 };
    for (int na = 1; na < NK; na += 3) {
        double q[DQ], k[NK * DQ], v[NK * DV];
        fill(q, DQ);
        fill(k, NK * DQ);
        fill(v, NK * DV);
        for (int i = 0; i < DQ; i++) q[i] *= 3; /* peaked scores: the two LSEs differ by several units */
        double oa[DV], la, ob[DV], lb, o[DV], l;
        part_direct(oa, &la, q, k, v, na, DQ, DV);
        part_direct(ob, &lb, q, k + na * DQ, v + na * DV, NK - na, DQ, DV);
        part_direct(o, &l, q, k, v, NK, DQ, DV);
        ref_lse_merge(oa, &la, ob, &lb, DV, 0, &NM_FP64);
        assert_close(oa, o, DV, "merged o");
        assert_close(&la, &l, 1, "merged lse");
    }
    /* an empty part (-inf) leaves the other as it is */
    double oa[2] = {0.25, -1.5}, la = 0.75, ob[2] = {9, 9}, lb = -INFINITY;
    ref_lse_merge(oa, &la, ob, &lb, 2, 0, &NM_FP64);
    assert_true(oa[0] == 0.25 && oa[1] == -1.5 && la == 0.75);
    /* the lse-bf16 fault: LSEs read at bf16 precision move the merged LSE */
    double oc[1] = {1}, lc = 0.1234567, od[1] = {2}, ld = 0.7654321, oe[1] = {1}, le = lc;
    ref_lse_merge(oc, &lc, od, &ld, 1, 0, &NM_FP64);
    ref_lse_merge(oe, &le, od, &ld, 1, 1, &NM_FP64);
    assert_true(fabs(le - lc) > 1e-4);
}

/* ---- RoPE --------------------------------------------------------------------------------- */

/* Pair (a, b) of x0 rotated by angle pos * f into x. */
static void assert_rotated(const double *x, const double *x0, int a, int b, double ang)
{
    double want_a = x0[a] * cos(ang) - x0[b] * sin(ang), want_b = x0[a] * sin(ang) + x0[b] * cos(ang);
    if (fabs(x[a] - want_a) > TOL || fabs(x[b] - want_b) > TOL)
        fail_msg("pair (%d, %d): (%.17g, %.17g), expected (%.17g, %.17g)", a, b, x[a], x[b], want_a, want_b);
}

/* Interleaved pairs (2i, 2i+1) rotate by pos * inv_freq[i]; the half-split fault pairs (i, i + R/2). */
static void test_rope_pairing(void **state)
{
    (void)state;
    enum { RR = 8, HALF = RR / 2 };
    double inv_freq[HALF] = {1.0, 0.31, 0.097, 0.03};
    ref_rope_table rope = {.R = RR, .inv_freq = inv_freq, .mag = 1.0};
    double x0[RR], x[RR], y[RR];
    fill(x0, RR);
    const int64_t pos = 3;
    memcpy(x, x0, sizeof x);
    ref_rope(x, pos, &rope, 0, &NM_FP64);
    for (int i = 0; i < HALF; i++) assert_rotated(x, x0, 2 * i, 2 * i + 1, (double)pos * inv_freq[i]);
    memcpy(y, x0, sizeof y);
    ref_rope(y, pos, &rope, 1, &NM_FP64);
    for (int i = 0; i < HALF; i++) assert_rotated(y, x0, i, i + HALF, (double)pos * inv_freq[i]);
    assert_true(fabs(x[1] - y[1]) > 1e-3); /* the two pairings are different rotations */
    /* position 0 is the identity; the magnitude scales both parts */
    rope.mag = 2.0;
    memcpy(x, x0, sizeof x);
    ref_rope(x, 0, &rope, 0, &NM_FP64);
    for (int i = 0; i < RR; i++) assert_true(x[i] == 2.0 * x0[i]);
}

/* ---- paged cache -------------------------------------------------------------------------- */

/* Rows written in a scrambled order through a shuffled block table read back exactly, sit in the
 * physical block the table names, and an unwritten row reads as zeros; block sizes 1 and 16. */
static void test_paged_cache(void **state)
{
    (void)state;
    enum { LAYERS = 2, SEQS = 3, LEN = 37 };
    static const int sizes[] = {1, 16};
    for (int bi = 0; bi < 2; bi++) {
        mla_config cfg = {.num_hidden_layers = LAYERS, .kv_lora_rank = C, .qk_rope_head_dim = R};
        ref_ctx c = {.cfg = &cfg};
        mla_run_opts_default(&c.opts);
        c.opts.profile = MLA_PROFILE_FP64;
        c.opts.block_size = sizes[bi];
        c.opts.max_seqs = SEQS;
        c.opts.max_seq_len = LEN;
        c.opts.shuffle_blocks = 1;
        c.opts.seed = 11;
        assert_int_equal(ref_cache_init(&c), MLA_OK);
        const ref_cache *k0 = &c.cache[0];
        int moved = 0, seen[SEQS * LEN] = {0};
        for (int i = 0; i < k0->max_blocks; i++) {
            moved += k0->table[i] != i;
            assert_in_range(k0->table[i], 0, k0->max_blocks - 1);
            assert_int_equal(seen[k0->table[i]]++, 0);
        }
        assert_true(moved > 0); /* a permutation of the pool, not the identity */

        static double rows[LAYERS][SEQS][LEN][L];
        fill(&rows[0][0][0][0], (int64_t)LAYERS * SEQS * LEN * L);
        const int n_written = LEN - 2; /* the last two positions stay unwritten */
        for (int s = 0; s < LAYERS * SEQS * n_written; s++) {
            int i = (int)(((int64_t)s * 7919) % (LAYERS * SEQS * n_written)); /* 7919 prime: a permutation */
            int l = i % LAYERS, q = i / LAYERS % SEQS, p = i / (LAYERS * SEQS);
            assert_int_equal(ref_cache_write(&c, l, q, p, rows[l][q][p], rows[l][q][p] + C), MLA_OK);
        }
        for (int l = 0; l < LAYERS; l++)
            for (int q = 0; q < SEQS; q++)
                for (int p = 0; p < LEN; p++) {
                    double got[L];
                    ref_cache_read(&c, l, q, p, got);
                    const ref_cache *k = &c.cache[l];
                    int32_t pb = k->table[q * k->blocks_per_seq + p / k->block_size];
                    if (p >= n_written) {
                        for (int d = 0; d < L; d++) assert_true(got[d] == 0.0);
                        continue;
                    }
                    assert_memory_equal(got, rows[l][q][p], sizeof got);
                    assert_non_null(k->blocks[pb]);
                    assert_memory_equal(k->blocks[pb] + (p % k->block_size) * k->row_bytes, rows[l][q][p], sizeof got);
                }
        ref_cache_free(&c);
    }
}

/* ---- group-limited routing ---------------------------------------------------------------- */

static double logit_of(double p) { return log(p / (1 - p)); }

/* 8 experts in 4 groups of 2, sigmoid scores s = (0.95 0.05 | 0.6 0.58 | 0.55 0.5 | 0.1 0.1), a zero
 * e_score_correction_bias, top-2 groups, 2 experts, renormalized, scale 2.5. With the bias the group
 * score is the sum of its two best: 1.0, 1.18, 1.05, 0.2, so groups 1 and 2 stay and group 0 with the
 * best expert (0) is dropped: experts 2 and 3. Without group limiting: experts 0 and 2. Without a
 * bias the group score is its best, and with one group kept only group 0 stays: experts 0 and 1. */
static void test_route_group_limited(void **state)
{
    (void)state;
    static const double s[8] = {0.95, 0.05, 0.6, 0.58, 0.55, 0.5, 0.1, 0.1};
    double logits[8], bias[8] = {0};
    for (int e = 0; e < 8; e++) logits[e] = logit_of(s[e]);
    ref_moe_cfg m = {.E = 8, .K = 2, .n_group = 4, .topk_group = 2, .group_limited = 1, .sigmoid = 1,
                     .norm_topk_prob = 1, .routed_scale = 2.5};
    int32_t ids[2];
    double w[2];

    assert_int_equal(ref_moe_route(ids, w, logits, bias, &m, &NM_FP64), MLA_OK);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    double want[2] = {2.5 * 0.6 / 1.18, 2.5 * 0.58 / 1.18};
    assert_close(w, want, 2, "grouped weights");

    m.group_limited = 0; /* greedy over all experts */
    assert_int_equal(ref_moe_route(ids, w, logits, bias, &m, &NM_FP64), MLA_OK);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 2);

    m.group_limited = 1;
    m.topk_group = 1;
    assert_int_equal(ref_moe_route(ids, w, logits, NULL, &m, &NM_FP64), MLA_OK);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 1);
    double want1[2] = {2.5 * 0.95, 2.5 * 0.05};
    assert_close(w, want1, 2, "one-group weights");
}

/* ---- numerics and faults ------------------------------------------------------------------ */

/* Each planted fault becomes its parameter value, and nothing else moves. */
static void test_faults_resolve(void **state)
{
    (void)state;
    mla_config cfg = {.qk_nope_head_dim = 12, .qk_rope_head_dim = 4, .routed_scaling_factor = 2.5, .has_yarn = 1,
                      .rope_factor = 40, .mscale = 1, .mscale_all_dim = 1};
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.profile = MLA_PROFILE_BF16;
    o.q_scale = 0.5; /* used by the fp8kv query only, never by the saturation fault */
    ref_numerics nm, nm0;
    ref_faults f, f0;
    ref_numerics_resolve(&cfg, &o, &nm0, &f0);
    assert_true(f0.softmax_scale == mla_config_softmax_scale(&cfg) && f0.softmax_scale > 1.1 / 4);
    assert_true(f0.mask_slack == 0 && f0.rope_halfsplit == 0 && f0.lse_bf16 == 0 && f0.routed_scale == 2.5);
    assert_true(nm0.round_bf16 && nm0.round_f32 && nm0.rope_fp32_angle && !nm0.fp8_linear && !nm0.q_fp8);

    o.faults = MLA_FAULT(MLA_FAULT_ROPE_PAIRING);
    ref_numerics_resolve(&cfg, &o, &nm, &f);
    assert_true(f.rope_halfsplit == 1 && f.mask_slack == 0 && f.softmax_scale == f0.softmax_scale);
    o.faults = MLA_FAULT(MLA_FAULT_CAUSAL_OFF_BY_ONE);
    ref_numerics_resolve(&cfg, &o, &nm, &f);
    assert_true(f.mask_slack == 1 && f.rope_halfsplit == 0);
    o.faults = MLA_FAULT(MLA_FAULT_NO_MSCALE);
    ref_numerics_resolve(&cfg, &o, &nm, &f);
    assert_true(f.softmax_scale == 0.25 && f.mask_slack == 0); /* (12 + 4)^-0.5 */
    o.faults = MLA_FAULT(MLA_FAULT_ROUTED_SCALING);
    ref_numerics_resolve(&cfg, &o, &nm, &f);
    assert_true(f.routed_scale == 1.0 && f.softmax_scale == f0.softmax_scale);
    o.faults = MLA_FAULT(MLA_FAULT_LSE_BF16);
    ref_numerics_resolve(&cfg, &o, &nm, &f);
    assert_true(f.lse_bf16 == 1 && f.routed_scale == 2.5);
    o.faults = MLA_FAULT(MLA_FAULT_FP8_Q_SATURATION);
    ref_numerics_resolve(&cfg, &o, &nm, &f);
    assert_true(nm.q_fp8 == 1 && nm.q_fp8_type == MLA_E4M3FN && nm.q_fp8_scale == 1.0 && f.lse_bf16 == 0);

    o.faults = 0; /* fp8kv with an fp8 query: the profile's own quantization, no fault */
    o.profile = MLA_PROFILE_FP8KV;
    o.fp8_query = 1;
    o.fp8_kind = MLA_FP8_FNUZ;
    ref_numerics_resolve(&cfg, &o, &nm, &f);
    assert_true(nm.q_fp8 == 1 && nm.q_fp8_type == MLA_E4M3FNUZ && nm.q_fp8_scale == 0.5);
    o.profile = MLA_PROFILE_FP64;
    ref_numerics_resolve(&cfg, &o, &nm, &f);
    assert_true(!nm.round_bf16 && !nm.round_f32 && !nm.rope_fp32_angle && !nm.q_fp8);
}

/* The tensor-core softmax weights (ref_softmax_rows_tc) against the kernel's own algorithm written out:
 * keys in tiles, a running maximum, the output and the row sum rescaled by exp(m_old - m_new) at each
 * tile, P rounded to bf16 before it meets V. They must agree to rounding; and they must differ from the
 * exact softmax by about bf16's precision (else the emulation would be a no-op). */
static void test_softmax_tc(void **state)
{
    (void)state;
    enum { NK = 150, DV = 5, TILE = 64 };
    double s[NK], w[NK], w_exact[NK], v[NK * DV], lse, lse_exact;
    for (int trial = 0; trial < 20; trial++) {
        for (int j = 0; j < NK; j++) s[j] = 4.0 * urand() + (j > 70 ? 1.5 : 0.0); /* the maximum moves late */
        fill(v, NK * DV);
        int64_t vis = 20 + trial * 6; /* partial last tiles, tiles past the visible keys */
        memcpy(w, s, sizeof s);
        memcpy(w_exact, s, sizeof s);
        ref_softmax_rows_tc(w, &lse, &vis, 1, NK, TILE);
        ref_softmax_rows(w_exact, &lse_exact, &vis, 1, NK);
        double m = -INFINITY, l = 0, o[DV] = {0}, o_tc[DV] = {0}, o_ex[DV] = {0};
        for (int t0 = 0; t0 < vis; t0 += TILE) {
            int t1 = t0 + TILE < vis ? t0 + TILE : (int)vis;
            double mn = m;
            for (int j = t0; j < t1; j++) mn = s[j] > mn ? s[j] : mn;
            double corr = exp(m - mn);
            l *= corr;
            for (int d = 0; d < DV; d++) o[d] *= corr;
            for (int j = t0; j < t1; j++) {
                double p = exp(s[j] - mn);
                l += p;
                for (int d = 0; d < DV; d++) o[d] += mla_round_bf16(p) * v[j * DV + d];
            }
            m = mn;
        }
        double diff = 0, norm = 0;
        for (int d = 0; d < DV; d++) {
            o[d] /= l;
            for (int j = 0; j < NK; j++) {
                o_tc[d] += w[j] * v[j * DV + d];
                o_ex[d] += w_exact[j] * v[j * DV + d];
            }
            diff += (o_tc[d] - o_ex[d]) * (o_tc[d] - o_ex[d]);
            norm += o_ex[d] * o_ex[d];
        }
        assert_close(o_tc, o, DV, "tensor-core softmax weights vs the online algorithm");
        assert_true(fabs(lse - (m + log(l))) < TOL && fabs(lse - lse_exact) < TOL);
        for (int j = (int)vis; j < NK; j++) assert_true(w[j] == 0.0);
        double rel = sqrt(diff / norm);
        assert_true(rel > 1e-5 && rel < 1e-2); /* P's bf16 rounding shows, at bf16's scale */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_forms), cmocka_unit_test(test_lse_merge),
        cmocka_unit_test(test_rope_pairing),    cmocka_unit_test(test_paged_cache),
        cmocka_unit_test(test_route_group_limited), cmocka_unit_test(test_faults_resolve),
        cmocka_unit_test(test_softmax_tc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
