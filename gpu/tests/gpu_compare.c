/* gpu_compare.c: runs tiny models through the GPU engine and the reference engine in the SAME
 * profile over a fixed script of prefill / decode / chunked-prefill steps with two sequences of
 * different lengths, and compares every tap both engines produce by relative L2
 * (||gpu - ref|| / ||ref||); topk_ids by mismatch count. NUMERICS.md puts the rounding points in
 * the same places in both engines, so the difference is accumulation order only. Layer 0, where both
 * engines see the same inputs, carries the tight gate; from there the random tiny models amplify each
 * bf16 (or e4m3) code that the order rounds the other way, so out / logits are gated only against
 * gross errors (the limits and their measurement: GATE_*). A token whose expert set differs (a
 * near-tie the order decided) legitimately changes its sequence from there on, so its sequence's rows
 * are left out of every later comparison (keep_rows); the gpu suite judges such flips by margin. A
 * second GPU run with a different KV split count must agree with the first (split-KV combine
 * independent of the split). */
#include "gpu_compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mla/backend.h"
#include "mla_model/model.h"
#include "mla_ref/ref.h"

/* rel L2 limits. Measured on the H100, 2026-12-07 (results/published/2026-12-07-s24): 25-26 runs a case,
 * the tokens' seeds 1-12 with the tensor-core and with the SIMT projection GEMMs, and seed 12345. The
 * worst of each over the 10 cases outside fp8w: every layer-0 tap 5.44e-3, out / logits 2.48e-2, the
 * split comparison over all layers 1.37e-2 (8 cases; the faults cases, where it is not gated, 2.49e-2);
 * fp8w (each e4m3 activation code flipped by the order moves a value by up to 1/16): layer 0 3.48e-2,
 * out / logits 7.23e-2, split 2.30e-2. Not yet measured: the split comparison at layer 0 alone (printed
 * since; both runs see the same inputs there, as the engines do at layer 0). The former 1e-2 end-to-end
 * gate held at seed 12345 only: every one of the 12 other seeds failed it with the tensor-core GEMMs, 11
 * with the SIMT ones. */
#define GATE_L0 1e-2
#define GATE_L0_FP8W 1e-1
#define GATE_E2E 5e-2 /* out, logits, and attn_core / logits between split counts (layer 0's: GATE_L0) */
#define GATE_E2E_FP8W 1.5e-1
#define SEED_TRIES 4 /* seeds a case may take before every sequence's routing flipped is a failure */
#define CASE_NO_ROWS 2 /* run_case: every sequence flipped, nothing end to end to compare */

typedef struct step {
    const char *what;
    int absorbed, n_seqs;
    int32_t seq[2], past[2], n[2];
} step;

static const step script[] = {
    {"prefill 2 seqs (7, 12)", 0, 2, {0, 1}, {0, 0}, {7, 12}},
    {"decode s_q 1 and 3", 1, 2, {0, 1}, {7, 12}, {1, 3}},
    {"prefill with context 8+5", 0, 1, {0, 0}, {8, 0}, {5, 0}},
    {"decode s_q 2 after context", 1, 2, {1, 0}, {15, 13}, {1, 2}},
};
#define N_STEPS (int)(sizeof script / sizeof script[0])

typedef struct tap_stat {
    double worst;
    int n, mismatch;
} tap_stat;

/* rel L2 over the rows (first dimension) whose keep[row] is set; keep NULL: every row. *rows: rows
 * compared. Non-finite values: count_nonfinite, over every row. */
static double rel_l2(const mla_tensor *g, const mla_tensor *r, const unsigned char *keep, int64_t *rows)
{
    const int64_t n = mla_tensor_numel(r), nr = r->shape[0] > 0 ? r->shape[0] : 1, w = n / nr;
    double num = 0, den = 0;
    *rows = 0;
    for (int64_t row = 0; row < nr; row++) {
        if (keep && !keep[row]) continue;
        ++*rows;
        for (int64_t i = row * w; i < (row + 1) * w; i++) {
            double a = mla_tensor_get_f64(g, i), b = mla_tensor_get_f64(r, i);
            num += (a - b) * (a - b);
            den += b * b;
        }
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int count_nonfinite(const mla_tensor *t)
{
    int n = 0;
    for (int64_t i = 0; i < mla_tensor_numel(t); i++) n += !isfinite(mla_tensor_get_f64(t, i));
    return n;
}

#define NO_FLIP 1000000 /* route_flips: no routing flip yet */

/* The sequences' routing flips of step s: for each sequence of the script (0, 1) the first layer where
 * one of its rows' expert sets differs between any two of the three engines, kept if earlier than
 * *first (which persists over the steps: a flipped token's cached rows differ in every later layer). */
static mla_status route_flips(const mla_backend_ops *ref, void *rc, const mla_backend_ops *gpu, void *gc, void *gc2,
                              const mla_config *cfg, const step *s, int *first, int *mismatch)
{
    for (int l = 0; l < cfg->num_hidden_layers; l++) {
        if (!mla_tap_in_layer(MLA_TAP_TOPK_IDS, cfg, l)) continue;
        mla_tensor *t[3] = {NULL, NULL, NULL};
        mla_status e = ref->read_tap(rc, l, MLA_TAP_TOPK_IDS, &t[0]);
        if (e == MLA_OK) e = gpu->read_tap(gc, l, MLA_TAP_TOPK_IDS, &t[1]);
        if (e == MLA_OK) e = gpu->read_tap(gc2, l, MLA_TAP_TOPK_IDS, &t[2]);
        if (e == MLA_OK && (!mla_tensor_same_shape(t[0], t[1]) || !mla_tensor_same_shape(t[0], t[2]))) e = MLA_ERR_SHAPE;
        const int64_t k = e == MLA_OK ? mla_tensor_numel(t[0]) / t[0]->shape[0] : 0;
        for (int64_t row = 0; e == MLA_OK && row < t[0]->shape[0]; row++) {
            int diff = 0, ref_gpu = 0;
            for (int64_t i = row * k; i < (row + 1) * k; i++) {
                double a = mla_tensor_get_f64(t[0], i), b = mla_tensor_get_f64(t[1], i), c = mla_tensor_get_f64(t[2], i);
                diff |= a != b || b != c;
                ref_gpu += a != b;
            }
            *mismatch += ref_gpu;
            const int sq = row < s->n[0] ? s->seq[0] : s->seq[1];
            if (diff && l < first[sq]) first[sq] = l;
        }
        for (int i = 0; i < 3; i++) mla_tensor_free(t[i]);
        if (e != MLA_OK) return e;
    }
    return MLA_OK;
}

/* Rows of tap t at layer l (or a global tap: l < 0) that every comparison keeps: a sequence flipped at
 * layer f loses its rows from f's routed output on (taps after the router at f, everything after f). */
static void keep_rows(const step *s, const int *first, mla_tap t, int l, unsigned char *keep)
{
    const int after_router = t == MLA_TAP_TOPK_WEIGHTS || t == MLA_TAP_FFN_OUT || t == MLA_TAP_OUT;
    int row = 0;
    for (int q = 0; q < s->n_seqs; q++) {
        const int f = first[s->seq[q]];
        const int k = l < 0 ? f == NO_FLIP : (l < f || (l == f && !after_router));
        for (int i = 0; i < s->n[q]; i++) keep[row++] = (unsigned char)k;
    }
}

static mla_status make_engine(const mla_backend_ops *ops, mla_model *m, const mla_run_opts *o, void **ctx)
{
    mla_status st = ops->create(ctx);
    if (st != MLA_OK) return st;
    st = ops->load(*ctx, m, o);
    if (st != MLA_OK) {
        ops->destroy(*ctx);
        *ctx = NULL;
    }
    return st;
}

/* The script's tokens: an LCG from tok_seed (mla_gpu_check's third argument, default
 * GPU_COMPARE_SEED). Before flipped sequences were masked (2026-12-07) the gate held on the default
 * seed only: on the H200 2026-12-01, tokens from mla_rng gave tiny-v3/bf16 rel L2 out 1.8e-1 with 8
 * routing flips. */
static void fill_tokens(int32_t *tok, int n, int vocab, unsigned *seed)
{
    for (int i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        tok[i] = (int32_t)((*seed >> 8) % (unsigned)vocab);
    }
}

static mla_status run_step(const mla_backend_ops *ops, void *ctx, const step *s, const int32_t *tok)
{
    mla_batch b = {s->n_seqs, s->seq, s->past, s->n, tok};
    return s->absorbed ? ops->forward_mqa(ctx, &b) : ops->forward_mha(ctx, &b);
}

static void case_label(char *label, size_t n, const char *model, mla_profile prof, int fp8_query, unsigned faults)
{
    snprintf(label, n, "%s/%s%s%s", model, mla_profile_name(prof), fp8_query ? "+fp8q" : "", faults ? "+faults" : "");
}

/* One model x profile. Returns 0 pass, 1 fail, CASE_NO_ROWS every gate held but no row of logits was
 * left to compare. */
static int run_case(FILE *log, const mla_backend_ops *gpu, unsigned dut_faults, const char *model, mla_profile prof,
                    int fp8_query, unsigned faults, unsigned tok_seed)
{
    const mla_backend_ops *ref = mla_ref_backend();
    mla_model *m = NULL;
    void *rc = NULL, *gc = NULL, *gc2 = NULL;
    int fail = 0;
    char label[96];
    case_label(label, sizeof label, model, prof, fp8_query, faults);
    mla_status st = mla_model_open(model, &m);
    const mla_config *cfg = st == MLA_OK ? mla_model_config(m) : NULL;
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.profile = prof;
    o.block_size = 16; /* several pages per sequence */
    o.max_seqs = 4;
    o.max_seq_len = 128;
    o.shuffle_blocks = 1;
    o.fp8_query = fp8_query;
    o.kv_splits = 0;
    o.faults = faults;
    if (st == MLA_OK) st = make_engine(ref, m, &o, &rc);
    mla_run_opts o1 = o; /* the engine under test, with its planted faults */
    o1.faults |= dut_faults;
    if (st == MLA_OK) st = make_engine(gpu, m, &o1, &gc);
    mla_run_opts o2 = o1;
    o2.kv_splits = 3;
    if (st == MLA_OK) st = make_engine(gpu, m, &o2, &gc2);
    if (st != MLA_OK) {
        fprintf(log, "%-28s ERROR setting up: %s: %s\n", label, mla_strerror(st), mla_last_error());
        fail = 1;
        goto done;
    }
    tap_stat stats[MLA_TAP_COUNT];
    memset(stats, 0, sizeof stats);
    double split_worst = 0, split_l0 = 0, l0_worst = 0;
    int nonfinite = 0;
    unsigned seed = tok_seed;
    int first[2] = {NO_FLIP, NO_FLIP};
    int64_t masked_rows = 0;
    for (int si = 0; si < N_STEPS && !fail; si++) {
        const step *s = &script[si];
        int32_t tok[64];
        unsigned char keep[64];
        fill_tokens(tok, s->n[0] + (s->n_seqs > 1 ? s->n[1] : 0), cfg->vocab_size, &seed);
        mla_status a = run_step(ref, rc, s, tok), g = run_step(gpu, gc, s, tok), g2 = run_step(gpu, gc2, s, tok);
        if (a == MLA_OK && g == MLA_OK && g2 == MLA_OK)
            a = route_flips(ref, rc, gpu, gc, gc2, cfg, s, first, &stats[MLA_TAP_TOPK_IDS].mismatch);
        if (a != MLA_OK || g != MLA_OK || g2 != MLA_OK) {
            fprintf(log, "%-28s step '%s': ref %s, gpu %s, gpu(splits 3) %s: %s\n", label, s->what, mla_strerror(a),
                    mla_strerror(g), mla_strerror(g2), mla_last_error());
            fail = 1;
            break;
        }
        stats[MLA_TAP_TOPK_IDS].n++;
        for (int t = 0; t < MLA_TAP_COUNT; t++) {
            int nl = mla_tap_is_layer((mla_tap)t) ? cfg->num_hidden_layers : 1;
            char prod = mla_tap_producer((mla_tap)t);
            if (t == MLA_TAP_TOPK_IDS || (prod == 'M' && s->absorbed) || (prod == 'Q' && !s->absorbed)) continue;
            for (int l = 0; l < nl; l++) {
                if (mla_tap_is_layer((mla_tap)t) && !mla_tap_in_layer((mla_tap)t, cfg, l)) continue;
                mla_tensor *rt = NULL, *gt = NULL, *g2t = NULL;
                mla_status e1 = ref->read_tap(rc, l, (mla_tap)t, &rt);
                mla_status e2 = gpu->read_tap(gc, l, (mla_tap)t, &gt);
                mla_status e3 = gpu->read_tap(gc2, l, (mla_tap)t, &g2t);
                if (e1 != MLA_OK || e2 != MLA_OK || e3 != MLA_OK || !mla_tensor_same_shape(rt, gt) ||
                    !mla_tensor_same_shape(rt, g2t) || rt->shape[0] > (int64_t)sizeof keep) {
                    fprintf(log, "%-28s step '%s' tap %s layer %d: read ref %s gpu %s gpu(splits 3) %s\n", label,
                            s->what, mla_tap_name((mla_tap)t), l, mla_strerror(e1), mla_strerror(e2),
                            mla_strerror(e3));
                    fail = 1;
                } else {
                    keep_rows(s, first, (mla_tap)t, mla_tap_is_layer((mla_tap)t) ? l : -1, keep);
                    int64_t rows = 0, rows2 = 0;
                    nonfinite += count_nonfinite(rt) + count_nonfinite(gt) + count_nonfinite(g2t);
                    double r = rel_l2(gt, rt, keep, &rows);
                    masked_rows += rt->shape[0] - rows;
                    if (getenv("MLA_GPU_CHECK_VERBOSE"))
                        fprintf(log, "  %s step %d layer %d %-14s rel_l2 %.3e (%lld rows)\n", label, si, l,
                                mla_tap_name((mla_tap)t), r, (long long)rows);
                    if (rows) {
                        if (r > stats[t].worst) stats[t].worst = r;
                        if (mla_tap_is_layer((mla_tap)t) && l == 0 && r > l0_worst) l0_worst = r;
                        stats[t].n++;
                    }
                    if (rows && (t == MLA_TAP_ATTN_CORE || t == MLA_TAP_LOGITS)) {
                        double r2 = rel_l2(g2t, gt, keep, &rows2);
                        if (r2 > split_worst) split_worst = r2;
                        if (t == MLA_TAP_ATTN_CORE && l == 0 && r2 > split_l0) split_l0 = r2;
                    }
                }
                mla_tensor_free(rt);
                mla_tensor_free(gt);
                mla_tensor_free(g2t);
            }
        }
    }
    if (!fail) {
        fprintf(log, "%-28s", label);
        for (int t = 0; t < MLA_TAP_COUNT; t++) {
            if (!stats[t].n) continue;
            if (t == MLA_TAP_TOPK_IDS)
                fprintf(log, " %s=%d flips", mla_tap_name((mla_tap)t), stats[t].mismatch);
            else
                fprintf(log, " %s=%.2e", mla_tap_name((mla_tap)t), stats[t].worst);
        }
        fprintf(log, " | layer0 worst=%.2e | splits(auto vs 3) attn_core/logits=%.2e, layer-0 attn_core=%.2e", l0_worst,
                split_worst, split_l0);
        for (int q = 0; q < 2; q++)
            if (first[q] != NO_FLIP) fprintf(log, " | seq %d masked from layer %d", q, first[q]);
        fprintf(log, masked_rows ? " (%lld tap rows)\n" : "\n", (long long)masked_rows);
        const int w = prof == MLA_PROFILE_FP8W;
        const double g_l0 = w ? GATE_L0_FP8W : GATE_L0, g_e2e = w ? GATE_E2E_FP8W : GATE_E2E;
        const double out = stats[MLA_TAP_OUT].worst, logits = stats[MLA_TAP_LOGITS].worst;
        if (nonfinite) {
            fprintf(log, "%-28s FAIL: %d non-finite values\n", label, nonfinite);
            fail = 1;
        }
        if (!(l0_worst < g_l0)) {
            fprintf(log, "%-28s FAIL: rel L2 at layer 0 %.3e, gate %.0e\n", label, l0_worst, g_l0);
            fail = 1;
        }
        if (!stats[MLA_TAP_LOGITS].n) { /* missing data is no pass: the caller tries another seed */
            fprintf(log, "%-28s every sequence's routing flipped: no row of logits to compare\n", label);
            if (!fail) fail = CASE_NO_ROWS;
        } else if (!(out < g_e2e) || !(logits < g_e2e)) {
            fprintf(log, "%-28s FAIL: rel L2 out %.3e logits %.3e, gate %.0e\n", label, out, logits, g_e2e);
            fail = 1;
        }
        /* lse-bf16 rounds every split's LSE before the combine, so with it the split count matters */
        if (!(faults & MLA_FAULT(MLA_FAULT_LSE_BF16)) && (!(split_l0 < g_l0) || !(split_worst < g_e2e))) {
            fprintf(log, "%-28s FAIL: KV split count changes results (rel L2 layer-0 attn_core %.3e, gate %.0e; "
                         "worst %.3e, gate %.0e)\n", label, split_l0, g_l0, split_worst, g_e2e);
            fail = 1;
        }
    }
done:
    if (gc2) gpu->destroy(gc2);
    if (gc) gpu->destroy(gc);
    if (rc) ref->destroy(rc);
    mla_model_free(m);
    fprintf(log, "%-28s %s\n", label, fail == 1 ? "FAIL" : fail ? "NO DATA" : "PASS");
    return fail;
}

int gpu_compare_cases(FILE *log, const mla_backend_ops *dut, unsigned dut_faults, const char *only_model,
                      const char *only_profile, unsigned tok_seed)
{
    static const char *const models[] = {"tiny-v3", "tiny-v2-lite"};
    static const struct {
        mla_profile p;
        int fp8q;
        unsigned faults; /* every fault at once: both engines must break the same way */
    } profs[] = {{MLA_PROFILE_BF16, 0, 0}, {MLA_PROFILE_FP8KV, 0, 0}, {MLA_PROFILE_FP8KV, 1, 0},
                 {MLA_PROFILE_FP8DS, 0, 0}, {MLA_PROFILE_FP8W, 0, 0},
                 {MLA_PROFILE_BF16, 0, (1u << MLA_FAULT_COUNT) - 1}};
    int fails = 0, ran = 0;
    for (size_t mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
        if (only_model && strcmp(only_model, models[mi]) != 0) continue;
        for (size_t pi = 0; pi < sizeof profs / sizeof profs[0]; pi++) {
            if (only_profile && strcmp(only_profile, mla_profile_name(profs[pi].p)) != 0) continue;
            if (dut_faults && profs[pi].faults) continue; /* a planted fault is hidden where both carry it */
            int r = CASE_NO_ROWS;
            for (unsigned k = 0; k < SEED_TRIES && r == CASE_NO_ROWS; k++) {
                if (k) fprintf(log, "%-28s again with the tokens' seed %u\n", "", tok_seed + k);
                r = run_case(log, dut, dut_faults, models[mi], profs[pi].p, profs[pi].fp8q, profs[pi].faults,
                             tok_seed + k);
            }
            if (r == CASE_NO_ROWS) {
                char label[96];
                case_label(label, sizeof label, models[mi], profs[pi].p, profs[pi].fp8q, profs[pi].faults);
                fprintf(log, "%-28s FAIL: routing flipped every sequence at each of %d seeds\n", label, SEED_TRIES);
            }
            fails += r != 0;
            ran++;
        }
    }
    if (!ran) { /* a misspelt model or profile is no pass */
        fprintf(log, "gpu_check: no case matches model '%s' profile '%s' (models tiny-v3, tiny-v2-lite; profiles "
                     "bf16, fp8kv, fp8ds, fp8w)\n", only_model ? only_model : "all", only_profile ? only_profile : "all");
        return -1;
    }
    return fails;
}
