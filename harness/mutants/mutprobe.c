/* mutprobe.c: the effect of a planted bug (harness/mutants/README.md), measured apart from any gate.
 * Two engines (the clean plugin and the mutant plugin, or any two engine names) run the same probe
 * schedules side by side; after every forward call every tap both produce is compared. A schedule
 * covers what today's suites may not: mixed n_past in one call, chunked prefill next to decode,
 * page sizes 1 and 16 with shuffled block tables, fp8 caches at a non-unit, non-power-of-two scale in
 * both e4m3 kinds, positions past tiny-v3's YaRN original window (1024).
 *
 * Output, one TSV line per probe and a last line "effect": probe, max rel_l2, where (call/layer/tap),
 * first diverging tap (the earliest tap of the earliest call with rel_l2 > MUT_DIVERGE; taps in
 * taps.h order inside a layer, layers in order). rel_l2 = ||b - a|| / ||a||; for topk_ids the fraction
 * of ids that differ. A tap one engine makes and the other does not counts as rel 1.
 * Exit 0 when it measured (whatever the effect), 2 on a usage or setup error. */
#include "mlacheck/driver.h"

#include "mla_model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fp64 clean vs clean is bitwise equal (the reference is deterministic for a shape), so anything
 * above rounding of the metric itself is the mutant. */
#define MUT_DIVERGE 1e-12
#define MUT_MAX_SEQS 4
#define MUT_MAX_TOKENS 1100 /* new tokens of one call */

/* One forward call of a schedule: mqa (absorbed) or mha, and the new tokens per sequence (0: the
 * sequence is not in this call). */
typedef struct {
    int absorbed;
    int n_new[MUT_MAX_SEQS];
} mut_call;

typedef struct {
    const char *name, *model;
    mla_profile profile;
    int block_size;
    mla_fp8_kind fp8_kind;
    double kv_scale;
    int n_seqs;
    int n_calls; /* the calls below, then `decode_steps` one-token mqa steps of every sequence */
    mut_call calls[8];
    int decode_steps;
} mut_probe;

/* Where and how much. */
typedef struct {
    double rel;
    int call, layer; /* layer -1: a global tap */
    mla_tap tap;
} mut_point;

typedef struct {
    mut_point max, first;
    int diverged;
    int exact; /* measured in the fp64 profile */
} mut_result;

static const mut_probe probes[] = {
    {"v3-prefill", "tiny-v3", MLA_PROFILE_FP64, 64, MLA_FP8_FN, 1.0, 1, 1, {{0, {37}}}, 0},
    {"v3-decode", "tiny-v3", MLA_PROFILE_FP64, 64, MLA_FP8_FN, 1.0, 1, 1, {{0, {3}}}, 40},
    {"v3-chunked", "tiny-v3", MLA_PROFILE_FP64, 16, MLA_FP8_FN, 1.0, 1, 5,
     {{0, {7}}, {0, {7}}, {0, {9}}, {0, {16}}, {0, {1}}}, 0},
    /* a scheduler's step: different n_past in one call, prefill chunks next to decodes */
    {"v3-mixed", "tiny-v3", MLA_PROFILE_FP64, 16, MLA_FP8_FN, 1.0, 3, 4,
     {{0, {5, 70, 0}}, {0, {0, 0, 11}}, {0, {6, 3, 0}}, {1, {0, 1, 1}}}, 6},
    /* multi-token decode steps (speculative decoding: s_q > 1, causal inside the step) */
    {"v3-spec", "tiny-v3", MLA_PROFILE_FP64, 16, MLA_FP8_FN, 1.0, 1, 4, {{0, {5}}, {1, {3}}, {1, {3}}, {1, {2}}}, 0},
    {"v3-page1", "tiny-v3", MLA_PROFILE_FP64, 1, MLA_FP8_FN, 1.0, 2, 1, {{0, {4, 90}}}, 8},
    {"v3-long", "tiny-v3", MLA_PROFILE_FP64, 64, MLA_FP8_FN, 1.0, 1, 2, {{0, {1030}}, {0, {20}}}, 2},
    {"v3-bf16", "tiny-v3", MLA_PROFILE_BF16, 16, MLA_FP8_FN, 1.0, 1, 1, {{0, {5}}}, 20},
    {"v3-fp8kv-s", "tiny-v3", MLA_PROFILE_FP8KV, 16, MLA_FP8_FN, 0.37, 1, 1, {{0, {5}}}, 20},
    {"v3-fp8kv-fnuz", "tiny-v3", MLA_PROFILE_FP8KV, 16, MLA_FP8_FNUZ, 0.37, 1, 1, {{0, {5}}}, 20},
    {"v3-fp8ds", "tiny-v3", MLA_PROFILE_FP8DS, 16, MLA_FP8_FN, 1.0, 1, 2, {{0, {5}}, {0, {7}}}, 20},
    {"v3-fp8w", "tiny-v3", MLA_PROFILE_FP8W, 64, MLA_FP8_FN, 1.0, 1, 1, {{0, {37}}}, 3},
    {"v2lite-decode", "tiny-v2-lite", MLA_PROFILE_FP64, 16, MLA_FP8_FN, 1.0, 2, 2, {{0, {3, 30}}, {0, {7, 0}}}, 12},
};

/* rel_l2 of b against a (topk_ids: fraction of differing ids). */
static double tap_rel(const mla_tensor *a, const mla_tensor *b)
{
    int64_t n = mla_tensor_numel(a);
    if (n != mla_tensor_numel(b) || a->dtype != b->dtype) return 1.0;
    if (a->dtype == MLA_I32) {
        const int32_t *x = a->data, *y = b->data;
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) k += x[i] != y[i];
        return n ? (double)k / (double)n : 0.0;
    }
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = mla_load_f64(a->dtype, (const char *)a->data + i * mla_dtype_size(a->dtype));
        double y = mla_load_f64(b->dtype, (const char *)b->data + i * mla_dtype_size(b->dtype));
        if (isnan(x) != isnan(y) || isinf(x) != isinf(y) || (isinf(x) && x != y)) return 1.0;
        if (isinf(x) || isnan(x)) continue; /* the same -inf (an empty LSE) or NaN on both sides */
        num += (y - x) * (y - x);
        den += x * x;
    }
    if (num == 0) return 0.0;
    return den > 0 ? sqrt(num / den) : 1.0;
}

static void note(mut_result *r, int call, int layer, mla_tap tap, double rel)
{
    mut_point p = {rel, call, layer, tap};
    if (rel > r->max.rel) r->max = p;
    if (rel > MUT_DIVERGE && !r->diverged) {
        r->first = p;
        r->diverged = 1;
    }
}

/* Every tap of the last call on both engines, in computation order. */
static void compare_call(mla_engine *a, mla_engine *b, const mla_config *cf, int call, mut_result *r)
{
    for (int l = -1; l <= cf->num_hidden_layers; l++) {
        for (int t = 0; t < MLA_TAP_COUNT; t++) {
            mla_tap tap = (mla_tap)t;
            int global = !mla_tap_is_layer(tap);
            /* globals: embed before layer 0 (l = -1), final_norm and logits after the last layer */
            if (global ? !((l == -1 && tap == MLA_TAP_EMBED) || (l == cf->num_hidden_layers && tap != MLA_TAP_EMBED))
                       : (l < 0 || l >= cf->num_hidden_layers))
                continue;
            mla_tensor *x = NULL, *y = NULL;
            int lay = global ? 0 : l;
            mla_status sa = a->ops->read_tap(a->ctx, lay, tap, &x);
            mla_status sb = b->ops->read_tap(b->ctx, lay, tap, &y);
            if (!sa && !sb) note(r, call, global ? -1 : l, tap, tap_rel(x, y));
            else if (!sa != !sb) note(r, call, global ? -1 : l, tap, 1.0);
            mla_tensor_free(x);
            mla_tensor_free(y);
        }
    }
}

static int run_call(mla_engine *e, const mla_batch *bt, int absorbed)
{
    return absorbed ? e->ops->forward_mqa(e->ctx, bt) : e->ops->forward_mha(e->ctx, bt);
}

/* One probe: both engines through its schedule. Returns 0 measured, 1 the clean engine could not run
 * it (skipped), 2 setup error. A mutant's failed call counts as rel 1 at that call's embed. */
static int run_probe(const mut_probe *p, const char *ea, const char *eb, mut_result *r)
{
    memset(r, 0, sizeof *r);
    r->max.layer = r->first.layer = -1;
    mla_model *m = NULL;
    if (mla_model_open(p->model, &m)) return 2;
    const mla_config *cf = mla_model_config(m);
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.profile = p->profile;
    o.block_size = p->block_size;
    o.max_seqs = p->n_seqs;
    o.max_seq_len = 1200;
    o.fp8_kind = p->fp8_kind;
    o.kv_scale = p->kv_scale;
    o.shuffle_blocks = 1;
    o.seed = 7;
    mla_engine a, b;
    int rc = 0;
    if (mla_engine_open(ea, m, &o, &a)) {
        fprintf(stderr, "mutprobe: %s: clean engine: %s\n", p->name, mla_last_error());
        mla_model_free(m);
        return 1;
    }
    if (mla_engine_open(eb, m, &o, &b)) {
        fprintf(stderr, "mutprobe: %s: mutant engine: %s\n", p->name, mla_last_error());
        note(r, 0, -1, MLA_TAP_EMBED, 1.0);
        mla_engine_close(&a);
        mla_model_free(m);
        return 0;
    }
    int32_t past[MUT_MAX_SEQS] = {0}, ids[MUT_MAX_SEQS], np[MUT_MAX_SEQS], nn[MUT_MAX_SEQS];
    int32_t tokens[MUT_MAX_TOKENS];
    unsigned rng = 12345u;
    int ncalls = p->n_calls + p->decode_steps;
    for (int c = 0; c < ncalls && !rc; c++) {
        mut_call k = {1, {0}};
        if (c < p->n_calls) k = p->calls[c];
        else
            for (int s = 0; s < p->n_seqs; s++) k.n_new[s] = 1;
        int ns = 0, T = 0;
        for (int s = 0; s < p->n_seqs; s++) {
            if (!k.n_new[s]) continue;
            ids[ns] = s, np[ns] = past[s], nn[ns] = k.n_new[s];
            if (T + k.n_new[s] > MUT_MAX_TOKENS) {
                mla_errorf(MLA_ERR_INVALID, "probe %s call %d: %d new tokens: at most %d", p->name, c,
                           T + k.n_new[s], MUT_MAX_TOKENS);
                rc = 2;
                break;
            }
            for (int i = 0; i < k.n_new[s]; i++) {
                rng = rng * 1103515245u + 12345u;
                tokens[T++] = (int32_t)((rng >> 8) % (unsigned)cf->vocab_size);
            }
            ns++;
        }
        if (rc) break;
        mla_batch bt = {.n_seqs = ns, .seq_ids = ids, .n_past = np, .n_new = nn, .tokens = tokens};
        if (run_call(&a, &bt, k.absorbed)) {
            fprintf(stderr, "mutprobe: %s call %d: clean engine: %s\n", p->name, c, mla_last_error());
            rc = 1;
            break;
        }
        if (run_call(&b, &bt, k.absorbed)) {
            fprintf(stderr, "mutprobe: %s call %d: mutant engine: %s\n", p->name, c, mla_last_error());
            note(r, c, -1, MLA_TAP_EMBED, 1.0);
            break;
        }
        compare_call(&a, &b, cf, c, r);
        for (int i = 0; i < ns; i++) past[ids[i]] += nn[i];
    }
    mla_engine_close(&a);
    mla_engine_close(&b);
    mla_model_free(m);
    return rc;
}

static const char *where(const mut_point *p, char *buf, size_t n)
{
    if (p->rel == 0) snprintf(buf, n, "-");
    else if (p->layer < 0) snprintf(buf, n, "%s", mla_tap_name(p->tap));
    else snprintf(buf, n, "L%d/%s", p->layer, mla_tap_name(p->tap));
    return buf;
}

/* The probes on tiny-v3 run again on each --also-model (say a model with P != V), named probe@model. */
#define MUT_MAX_MODELS 8

int main(int argc, char **argv)
{
    const char *also[MUT_MAX_MODELS];
    int n_also = 0, k = 1;
    for (; k + 1 < argc && strcmp(argv[k], "--also-model") == 0; k += 2) {
        if (n_also == MUT_MAX_MODELS) {
            fprintf(stderr, "mutprobe: at most %d --also-model\n", MUT_MAX_MODELS);
            return 2;
        }
        also[n_also++] = argv[k + 1];
    }
    if (argc - k < 2) {
        fprintf(stderr, "usage: mutprobe [--also-model M]... CLEAN_ENGINE MUTANT_ENGINE [PROBE...]\n"
                        "  engines as for mlacheck run --engine (plugin:lib.so); probes: all by default\n");
        return 2;
    }
    const char *ea = argv[k], *eb = argv[k + 1];
    int first_sel = k + 2;
    mut_result best = {0};
    char best_probe[96] = "-";
    int any = 0;
    printf("probe\tmax_rel\tmax_at\tmax_call\tfirst_tap\tfirst_rel\tfirst_call\n");
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        for (int mi = -1; mi < n_also; mi++) {
            mut_probe p = probes[i];
            char name[96];
            if (mi >= 0) {
                if (strcmp(p.model, "tiny-v3") != 0) continue;
                p.model = also[mi];
                snprintf(name, sizeof name, "%s@%s", probes[i].name, also[mi]);
            } else {
                snprintf(name, sizeof name, "%s", probes[i].name);
            }
            p.name = name;
            int want = argc == first_sel;
            for (int a = first_sel; a < argc; a++) want |= strcmp(argv[a], probes[i].name) == 0;
            if (!want) continue;
            mut_result r;
            int rc = run_probe(&p, ea, eb, &r);
            if (rc == 2) {
                fprintf(stderr, "mutprobe: %s: %s\n", name, mla_last_error());
                return 2;
            }
            if (rc == 1) {
                printf("%s\tskip\t-\t-\t-\t-\t-\n", name);
                continue;
            }
            any = 1;
            char w1[64], w2[64];
            printf("%s\t%.3e\t%s\t%d\t%s\t%.3e\t%d\n", name, r.max.rel, where(&r.max, w1, sizeof w1), r.max.call,
                   r.diverged ? where(&r.first, w2, sizeof w2) : "-", r.diverged ? r.first.rel : 0.0,
                   r.diverged ? r.first.call : -1);
            /* the headline effect: exact (fp64) probes first; the low-precision probes only for a bug
             * no fp64 probe sees, since there one rounding flip cascades through routing into an
             * error that is not the bug's size */
            int exact = p.profile == MLA_PROFILE_FP64, best_exact = best.exact;
            if ((exact && !best_exact && r.max.rel > 0) || (exact == best_exact && r.max.rel > best.max.rel) ||
                (!best_exact && best.max.rel == 0 && r.max.rel > 0)) {
                best = r;
                best.exact = exact;
                snprintf(best_probe, sizeof best_probe, "%s", name);
            }
        }
    }
    if (!any) {
        fprintf(stderr, "mutprobe: no probe ran\n");
        return 2;
    }
    char w1[64], w2[64];
    printf("effect\t%.3e\t%s\t%s\t%s\t%.3e\t%s\n", best.max.rel, where(&best.max, w1, sizeof w1), best_probe,
           best.diverged ? where(&best.first, w2, sizeof w2) : "-", best.diverged ? best.first.rel : 0.0, best_probe);
    return 0;
}
