/* test_dumpcmp.c: the completeness rule of mla_dcmp (dumpcmp.h): a missing required tap (a layer's
 * out, the logits) fails naming it, first in computation order; a hollow reference fails; 0 taps
 * compared is never a pass; optional taps missing from the candidate are counted, not failed. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_passes),   cmocka_unit_test(test_hollow_candidate),
        cmocka_unit_test(test_missing_layer_and_logits), cmocka_unit_test(test_hollow_reference),
        cmocka_unit_test(test_nothing_compared),  cmocka_unit_test(test_no_internal_taps_noted),
        cmocka_unit_test(test_partial_rows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
