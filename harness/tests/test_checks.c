/* test_checks.c: the noise-floor check's routing (checks.h, chk_noise_floor_seq). A candidate whose
 * expert set differs from the fp64 oracle's is judged by the oracle's margin, as every other routing
 * comparison is: a near-tie flip ends the judging of the sequence (its later taps legitimately differ
 * by O(1)) and says so; a flip with a clear margin, or one whose margins cannot be placed, fails at
 * topk_ids. Dumps of tiny-v3 built by hand, router scores chosen so the decisions are known. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../src/checks/checks.h"

#define S 3        /* tokens */
#define E 16       /* tiny-v3 experts: 4 groups of 4, 2 groups kept, 4 experts chosen */
#define K 4
#define FLIP_L 1   /* tiny-v3's first MoE layer */
#define FLIP_T 1   /* the token whose routing flips */
#define CHECK "noise-floor@gpu"

typedef struct {
    mla_model *m;
    mla_rules *rules;
    chk_run r;
} fixture;

static int setup(void **state)
{
    static fixture f;
    if (mla_model_open("tiny-v3", &f.m)) return -1;
    /* suites/rules.tol's lines for the noise floor and routing */
    if (mla_rules_parse("noise-floor-k .* noise-floor(@.*)? max_rel=3\n"
                        "L[0-9]+/topk_ids fp64 .* route_noise_k=0\n"
                        "L[0-9]+/topk_ids .* .* route_noise_k=1\n",
                        "t.tol", &f.rules))
        return -1;
    memset(&f.r, 0, sizeof f.r);
    f.r.rules = f.rules;
    f.r.profile = "bf16";
    f.r.m = f.m;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    free(f->r.v);
    mla_rules_free(f->rules);
    mla_model_free(f->m);
    return 0;
}

static mla_tensor *tensor(mla_dtype dt, int64_t cols, const char *name)
{
    int64_t sh[2] = {S, cols};
    mla_tensor *t = NULL;
    assert_int_equal(mla_tensor_new(&t, dt, 2, sh, name), MLA_OK);
    return t;
}

static void put(mla_tensor *t, int64_t i, double v)
{
    mla_store_f64(t->dtype, (char *)t->data + (size_t)i * mla_dtype_size(t->dtype), v);
}

/* The selection scores sigmoid(logit) + bias every token gets: kept groups 0 and 1, experts
 * {0, 1, 4, 5} chosen, expert 6 the best left out, behind expert 5 by `margin`. */
static void target_scores(double margin, double *s)
{
    static const double base[E] = {0.60, 0.59, 0.30, 0.30, 0.58, 0, 0, 0.30,
                                   0.45, 0.44, 0.30, 0.30, 0.45, 0.44, 0.30, 0.30};
    memcpy(s, base, sizeof base);
    s[5] = 0.5 + margin / 2;
    s[6] = 0.5 - margin / 2;
}

/* Router logits of layer whose selection scores are s[E] (row `only` alone, or every row when -1). */
static void set_logits(const fixture *f, mla_tensor *x, int layer, const double *s, int only)
{
    mla_cmp_route_rule rule;
    double *bias = NULL;
    int ok = 0;
    assert_int_equal(mla_dcmp_route_rule(f->m, mla_model_config(f->m), layer, 1, &rule, &bias, &ok), MLA_OK);
    assert_true(ok && bias && rule.n_bias == E);
    for (int t = 0; t < S; t++)
        for (int e = 0; e < E && (only < 0 || t == only); e++) {
            double p = s[e] - bias[e];
            assert_true(p > 0 && p < 1);
            put(x, (int64_t)t * E + e, log(p / (1 - p)));
        }
    free(bias);
}

/* A dump of tiny-v3 with every tap; the router's decisions at each MoE layer per target_scores. */
static mla_dump *make_dump(const fixture *f, double margin)
{
    const mla_config *cfg = mla_model_config(f->m);
    mla_dump *d = NULL;
    assert_int_equal(mla_dump_new(&d, cfg), MLA_OK);
    d->tokens = tensor(MLA_I32, 1, "tokens");
    d->tokens->ndim = 1;
    double s[E];
    target_scores(margin, s);
    for (int t = 0; t < MLA_TAP_COUNT; t++)
        for (int l = 0; l < (mla_tap_is_layer((mla_tap)t) ? d->n_layers : 1); l++) {
            if (mla_tap_is_layer((mla_tap)t) && !mla_tap_in_layer((mla_tap)t, cfg, l)) continue;
            const char *name = mla_tap_name((mla_tap)t);
            mla_tensor *x;
            if (t == MLA_TAP_ROUTER_LOGITS) {
                x = tensor(MLA_F64, E, name);
                set_logits(f, x, l, s, -1);
            } else if (t == MLA_TAP_TOPK_IDS) {
                static const int ids[K] = {0, 1, 4, 5};
                x = tensor(MLA_I32, K, name);
                for (int i = 0; i < S * K; i++) put(x, i, ids[i % K]);
            } else {
                x = tensor(MLA_F64, 4, name);
                for (int i = 0; i < S * 4; i++) put(x, i, 1.0 + 0.25 * ((i + t) % 5));
            }
            mla_dump_set(d, l, (mla_tap)t, x);
        }
    return d;
}

/* Moves token FLIP_T's row of every float tap after layer FLIP_L's routing by O(1), as a different
 * expert does. */
static void diverge_after(mla_dump *d)
{
    for (int l = FLIP_L; l <= d->n_layers; l++)
        for (int t = 0; t < MLA_TAP_COUNT; t++) {
            int global = !mla_tap_is_layer((mla_tap)t);
            if ((l == d->n_layers) != global || t == MLA_TAP_EMBED) continue;
            if (t == MLA_TAP_ROUTER_LOGITS || t == MLA_TAP_TOPK_IDS) continue;
            if (l == FLIP_L && t < MLA_TAP_TOPK_WEIGHTS) continue;
            mla_tensor **x = mla_dump_slot(d, global ? 0 : l, (mla_tap)t);
            if (!*x) continue;
            for (int i = 0; i < 4; i++) put(*x, FLIP_T * 4 + i, mla_tensor_get_f64(*x, FLIP_T * 4 + i) + 1.0);
        }
}

/* The candidate takes expert 6 for expert 5 on token FLIP_T at layer FLIP_L, with its own scores
 * ranking them as margin_b says (negative: 6 ahead), and its later taps diverge. */
static void flip(const fixture *f, mla_dump *b, double margin_b)
{
    mla_tensor **ids = mla_dump_slot(b, FLIP_L, MLA_TAP_TOPK_IDS);
    put(*ids, FLIP_T * K + 3, 6);
    double s[E];
    target_scores(margin_b, s);
    set_logits(f, *mla_dump_slot(b, FLIP_L, MLA_TAP_ROUTER_LOGITS), FLIP_L, s, FLIP_T);
    diverge_after(b);
}

static mla_dcmp_result judge(fixture *f, const mla_dump *a, const mla_dump *b, char *extra, size_t n)
{
    /* the emulated reference: the oracle with a relative error of 1e-5 on every float tap (a
     * precision's own rounding), which the candidate's router logits (moved by 1e-7) stay under */
    mla_dump *e = make_dump(f, 1e-7);
    for (int t = 0; t < MLA_TAP_COUNT; t++)
        for (int l = 0; l < (mla_tap_is_layer((mla_tap)t) ? e->n_layers : 1) && t != MLA_TAP_TOPK_IDS; l++) {
            mla_tensor **x = mla_dump_slot(e, l, (mla_tap)t);
            for (int64_t i = 0; *x && i < mla_tensor_numel(*x); i++)
                put(*x, i, mla_tensor_get_f64(*x, i) * (1 + 1e-5 * (i % 3 - 1)));
        }
    mla_dcmp_result res;
    assert_int_equal(chk_noise_floor_seq(&f->r, CHECK, 3.0, a, b, e, &res, extra, n), MLA_OK);
    mla_dump_free(e);
    return res;
}

/* No flip: every tap but topk_ids is judged, and an O(1) error after the router still fails. */
static void test_no_flip_judges_every_tap(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 1e-7), *b = make_dump(f, 1e-7);
    char extra[200];
    mla_dcmp_result res = judge(f, a, b, extra, sizeof extra);
    assert_int_equal(res.n_failed, 0);
    assert_int_equal(res.flipped_tokens, 0);
    assert_string_equal(extra, "");
    int taps = 0;
    for (int t = 0; t < MLA_TAP_COUNT; t++)
        for (int l = 0; l < (mla_tap_is_layer((mla_tap)t) ? a->n_layers : 1); l++)
            taps += t != MLA_TAP_TOPK_IDS && mla_dump_get(a, l, (mla_tap)t) != NULL;
    assert_int_equal(res.n_compared, taps);
    diverge_after(b);
    res = judge(f, a, b, extra, sizeof extra);
    assert_int_equal(res.n_failed, 1);
    assert_int_equal(res.first_layer, FLIP_L);
    assert_string_equal(res.first_tap, "topk_weights");
    mla_dump_free(a);
    mla_dump_free(b);
}

/* A near tie (oracle's margin 1e-7, the candidate's scores moved by 1e-7 the other way): benign, the
 * sequence passes although everything after it (L1/ffn_out ... logits) is O(1) off, and the note
 * says those taps were not judged. */
static void test_benign_flip_ends_judging(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 1e-7), *b = make_dump(f, 1e-7);
    flip(f, b, -1e-7);
    char extra[200];
    mla_dcmp_result res = judge(f, a, b, extra, sizeof extra);
    assert_int_equal(res.n_failed, 0);
    assert_int_equal(res.flipped_tokens, 1);
    assert_non_null(strstr(extra, "benign routing flip vs fp64 at layer 1 (1 tokens, worst margin/bound 0.5"));
    assert_non_null(strstr(extra, "later taps not judged"));
    assert_string_equal(res.worst_tap, "L1/topk_ids"); /* its row: margin/bound, the largest headroom */
    assert_true(res.worst_headroom > 0.49 && res.worst_headroom < 0.51);
    chk_verdict_note(&f->r, "benign", "prefill", &res, extra);
    assert_int_equal(f->r.v[f->r.nv - 1].fail, 0);
    assert_non_null(strstr(f->r.v[f->r.nv - 1].msg, "later taps not judged"));
    mla_dump_free(a);
    mla_dump_free(b);
}

/* The oracle chose expert 5 by a margin of 0.1, far beyond any score noise: fails at topk_ids. */
static void test_clear_flip_fails_at_topk_ids(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 0.1), *b = make_dump(f, 0.1);
    flip(f, b, 0.1); /* the candidate's scores agree with the oracle's, yet it took expert 6 */
    char extra[200];
    mla_dcmp_result res = judge(f, a, b, extra, sizeof extra);
    assert_int_equal(res.n_failed, 1);
    assert_int_equal(res.first_layer, FLIP_L);
    assert_string_equal(res.first_tap, "topk_ids");
    assert_int_equal(strncmp(res.first_why, "routing: 1 of 3 tokens flip, 1 clear", 36), 0);
    assert_string_equal(extra, "");
    mla_dump_free(a);
    mla_dump_free(b);
}

/* The near tie again, but the candidate recorded no router logits: the margins cannot be placed, and
 * missing data is never a pass. */
static void test_flip_without_scores_is_clear(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 1e-7), *b = make_dump(f, 1e-7);
    flip(f, b, -1e-7);
    mla_tensor **lb = mla_dump_slot(b, FLIP_L, MLA_TAP_ROUTER_LOGITS);
    mla_tensor_free(*lb);
    *lb = NULL;
    char extra[200];
    mla_dcmp_result res = judge(f, a, b, extra, sizeof extra);
    assert_int_equal(res.n_failed, 1);
    assert_string_equal(res.first_tap, "topk_ids");
    mla_dump_free(a);
    mla_dump_free(b);
}

/* The rule's bias comes from the model; without one, a biased router's rule is not ok. */
static void test_route_rule(void **state)
{
    fixture *f = *state;
    mla_cmp_route_rule rule;
    double *bias = NULL;
    int ok = 1;
    assert_int_equal(mla_dcmp_route_rule(NULL, mla_model_config(f->m), FLIP_L, 1, &rule, &bias, &ok), MLA_OK);
    assert_int_equal(ok, 0);
    assert_null(bias);
    assert_int_equal(mla_dcmp_route_rule(f->m, mla_model_config(f->m), FLIP_L, 1, &rule, &bias, &ok), MLA_OK);
    assert_int_equal(ok, 1);
    assert_int_equal(rule.n_group, 4);
    assert_int_equal(rule.topk_group, 2);
    assert_true(rule.sigmoid && rule.group_top2 && rule.noise_k == 1);
    assert_ptr_equal(rule.bias, bias);
    free(bias);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_flip_judges_every_tap),
        cmocka_unit_test(test_benign_flip_ends_judging),
        cmocka_unit_test(test_clear_flip_fails_at_topk_ids),
        cmocka_unit_test(test_flip_without_scores_is_clear),
        cmocka_unit_test(test_route_rule),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
