/* test_dumpcmp.c: the completeness rule of mla_dcmp (dumpcmp.h): a missing required tap (a layer's
 * out, the logits) fails naming it, first in computation order; a hollow reference fails; 0 taps
 * compared is never a pass; optional taps missing from the candidate are counted, not failed. And the
 * first divergence named by noise: a wrong tap under its limit upstream of one over it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mlacheck/dumpcmp.h"

#define S 3 /* tokens */

typedef struct {
    mla_model *m;
    mla_rules *rules;
} fixture;

static int setup(void **state)
{
    static fixture f;
    if (mla_model_open("tiny-v3", &f.m)) return -1;
    if (mla_rules_parse(".* .* .* max_abs=0\n", "t.tol", &f.rules)) return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    mla_rules_free(f->rules);
    mla_model_free(f->m);
    return 0;
}

static mla_tensor *filled(mla_dtype dt, int64_t cols, const char *name)
{
    int64_t sh[2] = {S, cols};
    mla_tensor *t = NULL;
    assert_int_equal(mla_tensor_new(&t, dt, 2, sh, name), MLA_OK);
    for (int64_t i = 0; i < S * cols; i++)
        mla_store_f64(dt, (char *)t->data + (size_t)i * mla_dtype_size(dt), (double)(i % 4));
    return t;
}

/* A dump of tiny-v3 holding every tap but the router taps (optional, and their routing needs real
 * expert sets), or, with internal = 0, only what an engine without MLA_FEAT_TAPS_INTERNAL records. */
static mla_dump *make_dump_of(const mla_config *cfg, int internal)
{
    mla_dump *d = NULL;
    assert_int_equal(mla_dump_new(&d, cfg), MLA_OK);
    d->tokens = filled(MLA_I32, 1, "tokens");
    d->tokens->ndim = 1;
    for (int t = 0; t < MLA_TAP_COUNT; t++) {
        if (t == MLA_TAP_ROUTER_LOGITS || t == MLA_TAP_TOPK_IDS || t == MLA_TAP_TOPK_WEIGHTS) continue;
        int is_internal = t >= MLA_TAP_Q_NOPE && t <= MLA_TAP_LSE;
        if (is_internal && !internal) continue;
        if (!mla_tap_is_layer((mla_tap)t)) {
            mla_dump_set(d, 0, (mla_tap)t, filled(MLA_F64, 4, mla_tap_name((mla_tap)t)));
            continue;
        }
        for (int l = 0; l < d->n_layers; l++)
            if (mla_tap_in_layer((mla_tap)t, cfg, l))
                mla_dump_set(d, l, (mla_tap)t, filled(MLA_F64, 4, mla_tap_name((mla_tap)t)));
    }
    return d;
}

static mla_dump *make_dump(const fixture *f, int internal)
{
    return make_dump_of(mla_model_config(f->m), internal);
}

static void drop(mla_dump *d, int layer, mla_tap t)
{
    mla_tensor **slot = mla_dump_slot(d, layer, t);
    mla_tensor_free(*slot);
    *slot = NULL;
}

static mla_dcmp_result compare(const fixture *f, const mla_dump *a, const mla_dump *b)
{
    mla_dcmp_ctx c = {.rules = f->rules, .model = f->m, .check = "golden", .profile = "fp64", .path = "prefill",
                      .kv_len = -1};
    mla_dcmp_result r;
    assert_int_equal(mla_dcmp(&c, a, b, &r), MLA_OK);
    mla_dcmp_result rb;
    assert_int_equal(mla_dcmp_bitwise(&c, a, b, &rb), MLA_OK);
    /* the determinism walk states the same completeness */
    assert_int_equal(rb.n_failed > 0, r.n_failed > 0);
    assert_string_equal(rb.first_tap, r.first_tap);
    return r;
}

static void test_complete_passes(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 1), *b = make_dump(f, 1);
    mla_dcmp_result r = compare(f, a, b);
    assert_int_equal(r.n_failed, 0);
    assert_true(r.n_compared > 0);
    assert_int_equal(r.n_optional_missing, 0);
    mla_dump_free(a);
    mla_dump_free(b);
}

/* a candidate with only /meta and /tokens: the first required tap, layer 0's out, fails first */
static void test_hollow_candidate(void **state)
{
    fixture *f = *state;
    const mla_config *cfg = mla_model_config(f->m);
    mla_dump *a = make_dump(f, 1), *b = NULL;
    assert_int_equal(mla_dump_new(&b, cfg), MLA_OK);
    b->tokens = filled(MLA_I32, 1, "tokens");
    b->tokens->ndim = 1;
    mla_dcmp_result r = compare(f, a, b);
    assert_int_equal(r.n_compared, 0);
    assert_int_equal(r.n_failed, a->n_layers + 1); /* every layer's out and the logits */
    assert_int_equal(r.first_layer, 0);
    assert_string_equal(r.first_tap, "out");
    assert_non_null(strstr(r.first_why, "candidate lacks L0/out"));
    mla_dump_free(a);
    mla_dump_free(b);
}

/* a missing layer (its out) and a missing /logits fail, each naming itself */
static void test_missing_layer_and_logits(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 1), *b = make_dump(f, 1);
    drop(b, 0, MLA_TAP_LOGITS);
    mla_dcmp_result r = compare(f, a, b);
    assert_int_equal(r.n_failed, 1);
    assert_int_equal(r.first_layer, -1);
    assert_string_equal(r.first_tap, "logits");
    assert_non_null(strstr(r.first_why, "logits"));
    int last = b->n_layers - 1;
    for (int t = 0; t < MLA_TAP_COUNT; t++)
        if (mla_tap_is_layer((mla_tap)t)) drop(b, last, (mla_tap)t);
    r = compare(f, a, b);
    assert_int_equal(r.n_failed, 2);
    assert_int_equal(r.first_layer, last);
    assert_string_equal(r.first_tap, "out");
    assert_non_null(strstr(r.first_why, "candidate lacks"));
    /* as the reference, the same dump is a hollow golden */
    r = compare(f, b, a);
    assert_int_equal(r.first_layer, last);
    assert_non_null(strstr(r.first_why, "reference lacks"));
    /* a candidate with one layer more than the reference's model fails on that layer's out */
    mla_config less = *mla_model_config(f->m);
    less.num_hidden_layers--;
    mla_dump *c = make_dump_of(&less, 1);
    r = compare(f, c, a);
    assert_int_equal(r.n_failed, 1);
    assert_int_equal(r.first_layer, last);
    assert_string_equal(r.first_tap, "out");
    assert_non_null(strstr(r.first_why, "reference's model has"));
    mla_dump_free(c);
    mla_dump_free(a);
    mla_dump_free(b);
}

/* a hollow reference (a golden without the logits) fails too, whatever the candidate holds */
static void test_hollow_reference(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 1), *b = make_dump(f, 1);
    drop(a, 0, MLA_TAP_LOGITS);
    mla_dcmp_result r = compare(f, a, b);
    assert_int_equal(r.n_failed, 1);
    assert_string_equal(r.first_tap, "logits");
    assert_non_null(strstr(r.first_why, "reference lacks logits"));
    mla_dump_free(a);
    mla_dump_free(b);
}

/* two dumps of a model without layers, the reference without logits: nothing compared, a failure */
static void test_nothing_compared(void **state)
{
    fixture *f = *state;
    mla_config cfg = *mla_model_config(f->m);
    cfg.num_hidden_layers = 0;
    mla_dump *a = NULL, *b = NULL;
    assert_int_equal(mla_dump_new(&a, &cfg), MLA_OK);
    assert_int_equal(mla_dump_new(&b, &cfg), MLA_OK);
    mla_dump_set(b, 0, MLA_TAP_LOGITS, filled(MLA_F64, 4, "logits"));
    mla_dcmp_result r = compare(f, a, b);
    assert_int_equal(r.n_compared, 0);
    assert_true(r.n_failed > 0);
    assert_string_equal(r.first_tap, "logits");
    mla_dump_free(a);
    mla_dump_free(b);
}

/* an engine without internal taps passes on what it has, the missing optional taps counted */
static void test_no_internal_taps_noted(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 1), *b = make_dump(f, 0);
    mla_dcmp_result r = compare(f, a, b);
    assert_int_equal(r.n_failed, 0);
    assert_true(r.n_compared > 0);
    assert_true(r.n_optional_missing > 0);
    assert_string_equal(r.first_optional_missing, "L0/q_nope");
    /* the other way round nothing is missing: the candidate's extra taps are not the reference's */
    r = compare(f, b, a);
    assert_int_equal(r.n_failed, 0);
    assert_int_equal(r.n_optional_missing, 0);
    mla_dump_free(a);
    mla_dump_free(b);
}

/* A tap some calls did not make (mla_dump_rows) is compared on the rows both sides hold: a wrong value
 * there fails at that tap (bitwise walk: this file's rule sets no value limit), a value in a row one
 * side lacks is not judged, and rows the reference holds and the candidate lacks count as optional
 * missing (never a silent pass). */
static unsigned char *rows_from(int first)
{
    unsigned char *r = malloc(S);
    assert_non_null(r);
    for (int i = 0; i < S; i++) r[i] = i >= first;
    return r;
}

static mla_dcmp_result compare_bits(const fixture *f, const mla_dump *a, const mla_dump *b)
{
    mla_dcmp_ctx c = {.rules = f->rules, .model = f->m, .check = "determinism", .profile = "fp64", .path = "decode",
                      .kv_len = -1};
    mla_dcmp_result r;
    assert_int_equal(mla_dcmp_bitwise(&c, a, b, &r), MLA_OK);
    return r;
}

static void test_partial_rows(void **state)
{
    fixture *f = *state;
    mla_dump *a = make_dump(f, 1), *b = make_dump(f, 1);
    mla_tensor *qa = *mla_dump_slot(a, 0, MLA_TAP_Q_ABSORBED), *qb = *mla_dump_slot(b, 0, MLA_TAP_Q_ABSORBED);
    int64_t per = mla_tensor_numel(qa) / S;
    mla_dump_set_rows(a, 0, MLA_TAP_Q_ABSORBED, rows_from(1));
    mla_dump_set_rows(b, 0, MLA_TAP_Q_ABSORBED, rows_from(1));
    ((double *)qb->data)[0] = 99; /* row 0: neither side made it */
    mla_dcmp_result r = compare(f, a, b);
    assert_int_equal(r.n_failed, 0);
    assert_int_equal(r.n_optional_missing, 0);
    ((double *)qb->data)[2 * per] = 99; /* row 2: both hold it */
    r = compare_bits(f, a, b);
    assert_int_equal(r.n_failed, 1);
    assert_string_equal(r.first_tap, "q_absorbed");
    assert_int_equal(r.first_layer, 0);
    ((double *)qb->data)[2 * per] = ((double *)qa->data)[2 * per];
    mla_dump_set_rows(a, 0, MLA_TAP_Q_ABSORBED, NULL); /* the reference holds every row, the candidate 1.. */
    r = compare(f, a, b);
    assert_int_equal(r.n_failed, 0);
    assert_int_equal(r.n_optional_missing, 1);
    assert_string_equal(r.first_optional_missing, "L0/q_absorbed");
    mla_dump_set_rows(b, 0, MLA_TAP_Q_ABSORBED, rows_from(S)); /* no row in common: skipped, counted */
    r = compare(f, a, b);
    assert_int_equal(r.n_failed, 0);
    assert_int_equal(r.n_optional_missing, 1);
    mla_dump_free(a);
    mla_dump_free(b);
}

/* Scales every value of (layer, t) in d by 1 + eps: rel_l2 against the unscaled dump is exactly eps. */
static void scale(mla_dump *d, int layer, mla_tap t, double eps)
{
    mla_tensor *x = *mla_dump_slot(d, layer, t);
    assert_non_null(x);
    for (int64_t i = 0; i < mla_tensor_numel(x); i++) {
        char *p = (char *)x->data + (size_t)i * mla_dtype_size(x->dtype);
        mla_store_f64(x->dtype, p, mla_load_f64(x->dtype, p) * (1 + eps));
    }
}

/* A candidate whose every tap carries benign noise (1e-4, 0.01x its limit), then the given taps of
 * layer 0 at the given headrooms (x their limits: lse 1e-3, the rest 1e-2). */
static mla_dcmp_result noisy_compare(const fixture *f, const mla_rules *rules, const mla_tap *taps,
                                     const double *headroom, int n)
{
    mla_dump *a = make_dump(f, 1), *b = make_dump(f, 1);
    for (int l = 0; l < b->n_layers; l++)
        for (int t = 0; t < MLA_TAP_COUNT; t++)
            if (mla_tap_is_layer((mla_tap)t) && *mla_dump_slot(b, l, (mla_tap)t)) scale(b, l, (mla_tap)t, 1e-4);
    for (int i = 0; i < n; i++) {
        double lim = taps[i] == MLA_TAP_LSE ? 1e-3 : 1e-2;
        /* undo the benign noise, then set the tap's own error */
        scale(b, 0, taps[i], 1 / (1 + 1e-4) - 1);
        scale(b, 0, taps[i], headroom[i] * lim);
    }
    mla_dcmp_ctx c = {.rules = rules, .model = f->m, .check = "golden", .profile = "bf16", .path = "prefill",
                      .kv_len = -1};
    mla_dcmp_result r;
    assert_int_equal(mla_dcmp(&c, a, b, &r), MLA_OK);
    mla_dump_free(a);
    mla_dump_free(b);
    return r;
}

/* The wrong tap (q_pe at 0.6x its limit, 60x the benign taps before it) comes before the first tap
 * over its limit (lse at 1.2x): q_pe is the first divergence, and the reason names both. With the
 * error growing smoothly into the limit (0.4, 0.45, 0.6, 1.1: no step of 2x), nothing stands out and
 * the first tap over its limit is named. A tap that is itself over its limit and stands out is named
 * with its own reason only. */
static void test_first_divergence_by_noise(void **state)
{
    fixture *f = *state;
    mla_rules *rules = NULL;
    assert_int_equal(mla_rules_parse("L[0-9]+/lse .* .* rel_l2=1e-3\n.* .* .* rel_l2=1e-2\n", "n.tol", &rules), MLA_OK);

    const mla_tap wrong[] = {MLA_TAP_Q_PE, MLA_TAP_LSE};
    const double h_wrong[] = {0.6, 1.2};
    mla_dcmp_result r = noisy_compare(f, rules, wrong, h_wrong, 2);
    assert_int_equal(r.n_failed, 1);
    assert_int_equal(r.first_layer, 0);
    assert_string_equal(r.first_tap, "q_pe");
    assert_int_equal(r.first_stands_out, 1);
    assert_true(r.first_jump > 50 && r.first_jump < 70);
    assert_int_equal(r.over_layer, 0);
    assert_string_equal(r.over_tap, "lse");
    assert_non_null(strstr(r.first_why, "stands out from its noise: rel_l2 6.000e-03 at 0.60x its limit"));
    assert_non_null(strstr(r.first_why, "first over its limit: layer 0 tap lse: rel_l2"));

    const mla_tap smooth[] = {MLA_TAP_Q_NOPE, MLA_TAP_Q_PE, MLA_TAP_ATTN_CORE, MLA_TAP_LSE};
    const double h_smooth[] = {0.4, 0.45, 0.6, 1.1};
    r = noisy_compare(f, rules, smooth, h_smooth, 4);
    assert_int_equal(r.n_failed, 1);
    assert_string_equal(r.first_tap, "lse");
    assert_string_equal(r.over_tap, "lse");
    assert_int_equal(r.first_stands_out, 0);
    assert_null(strstr(r.first_why, "stands out"));

    /* under the minimum (0.4x) nothing stands out however large the jump; lse at 1.5x (3.75x the
     * largest before it) stands out itself */
    const mla_tap jump[] = {MLA_TAP_Q_PE, MLA_TAP_LSE};
    const double h_jump[] = {0.4, 1.5};
    r = noisy_compare(f, rules, jump, h_jump, 2);
    assert_string_equal(r.first_tap, "lse");
    assert_int_equal(r.first_stands_out, 1);
    assert_null(strstr(r.first_why, "stands out"));

    /* a standing-out tap AFTER the first tap over its limit is not the first divergence */
    const mla_tap late[] = {MLA_TAP_Q_NOPE, MLA_TAP_Q_PE, MLA_TAP_ATTN_CORE, MLA_TAP_LSE};
    const double h_late[] = {0.45, 0.8, 1.05, 9};
    r = noisy_compare(f, rules, late, h_late, 4);
    assert_int_equal(r.n_failed, 2);
    assert_string_equal(r.first_tap, "attn_core");
    assert_int_equal(r.first_stands_out, 0);
    mla_rules_free(rules);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_passes),   cmocka_unit_test(test_hollow_candidate),
        cmocka_unit_test(test_missing_layer_and_logits), cmocka_unit_test(test_hollow_reference),
        cmocka_unit_test(test_nothing_compared),  cmocka_unit_test(test_no_internal_taps_noted),
        cmocka_unit_test(test_partial_rows),
        cmocka_unit_test(test_first_divergence_by_noise),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
