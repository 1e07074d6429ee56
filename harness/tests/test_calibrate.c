/* test_calibrate.c: the noise table of calibrate.h from metric rows: tap classes (layer 0, later
 * layers, global taps), the statistics, the rounding of k x max, the rows that are not noise, and the
 * emitted rules.tol lines, which load and budget the classes they name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlacheck/calibrate.h"

static mla_rep_row row(const char *check, int layer, const char *tap, double rel_l2, const char *worst)
{
    return (mla_rep_row){.case_name = "c", .check = check, .profile = "bf16", .path = "prefill", .layer = layer,
                         .tap = tap, .kv_len = -1, .n = 10, .rel_l2 = rel_l2, .headroom = rel_l2, .worst = worst,
                         .pass = 1, .why = ""};
}

static const mla_calib_row *find(const mla_calib_table *t, const char *check, const char *tap)
{
    for (size_t i = 0; i < t->n_rows; i++)
        if (!strcmp(t->rows[i].check, check) && !strcmp(t->rows[i].tap, tap)) return &t->rows[i];
    return NULL;
}

static void test_round_up(void **state)
{
    (void)state;
    assert_true(fabs(mla_calib_round_up(7.94e-4) - 8e-4) < 1e-18);
    assert_true(fabs(mla_calib_round_up(1.23e-4) - 1.3e-4) < 1e-18);
    assert_true(fabs(mla_calib_round_up(0.12) - 0.12) < 1e-15); /* already on the grid */
    assert_true(fabs(mla_calib_round_up(0.0581) - 0.059) < 1e-15);
    assert_true(mla_calib_round_up(0) == 0);
}

static void test_table_and_rules(void **state)
{
    (void)state;
    mla_rep_row rows[] = {
        row("decode-vs-prefill", 0, "lse", 1e-4, NULL),       row("decode-vs-prefill", 0, "lse", 3e-4, NULL),
        row("decode-vs-prefill", 0, "lse", 2e-4, NULL),       row("decode-vs-prefill", 1, "out", 0.01, NULL),
        row("decode-vs-prefill", 2, "out", 0.03, NULL),       row("decode-vs-prefill", -1, "logits", 0.02, NULL),
        row("decode-vs-prefill", 1, "topk_ids", 0.79, "route_margin"),
        row("determinism", 0, "lse", 0, "bitwise"),           /* not noise: bitwise */
        row("decode-vs-prefill", 1, "attn_core", INFINITY, "missing"), /* not noise: a missing tap */
        row("noise-floor", -1, "noise-floor-k", 1.2, NULL),   /* not noise: a ratio */
        row("decode-vs-prefill", 1, "topk_ids", 0, "mismatch_frac"), /* not noise: an older run's id count */
    };
    mla_metrics m = {.rows = rows, .n_rows = sizeof rows / sizeof rows[0]};
    mla_rules *rules = NULL;
    assert_int_equal(mla_rules_parse("L0/.* .* .* rel_l2=1e-3\n.* .* .* rel_l2=0.2\n", "now.tol", &rules), MLA_OK);
    mla_calib_set *set = NULL;
    assert_int_equal(mla_calib_begin(&set), MLA_OK);
    assert_int_equal(mla_calib_add(set, &m, rules), MLA_OK);
    mla_calib_table t;
    assert_int_equal(mla_calib_end(set, 3, "mlacheck calibrate --suite x", &t), MLA_OK);
    assert_int_equal((int)t.n_rows, 4); /* L0/lse, L1+/out, logits, L1+/topk_ids */

    const mla_calib_row *lse = find(&t, "decode-vs-prefill", "L0/lse");
    assert_non_null(lse);
    assert_int_equal((int)lse->n, 3);
    assert_true(fabs(lse->median - 2e-4) < 1e-18 && fabs(lse->max - 3e-4) < 1e-18 && fabs(lse->p99 - 3e-4) < 1e-18);
    assert_true(fabs(lse->limit - 9e-4) < 1e-18);
    assert_true(lse->limit_now == 1e-3 && lse->rule_line == 1 && !lse->mixed_rules);
    const mla_calib_row *out = find(&t, "decode-vs-prefill", "L[1-9][0-9]*/out");
    assert_non_null(out);
    assert_int_equal((int)out->n, 2);
    assert_true(fabs(out->limit - 0.09) < 1e-15 && out->limit_now == 0.2);
    const mla_calib_row *route = find(&t, "decode-vs-prefill", "L[1-9][0-9]*/topk_ids");
    assert_non_null(route);
    assert_string_equal(route->metric, "route_margin");
    assert_true(route->max == 0.79 && route->limit == 0);
    assert_null(find(&t, "determinism", "L0/lse"));
    /* computation order inside a check: L0 taps, then later layers, then global taps */
    assert_true(lse < out && out < find(&t, "decode-vs-prefill", "logits"));

    char dir[] = "/tmp/test_calibrate_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char tsv[64], tol[64];
    snprintf(tsv, sizeof tsv, "%s/x.tsv", dir);
    snprintf(tol, sizeof tol, "%s/x.tol", dir);
    assert_int_equal(mla_calib_write_tsv(tsv, &t), MLA_OK);
    assert_int_equal(mla_calib_write_rules(tol, &t, "calibration/x.tsv"), MLA_OK);
    /* the emitted lines are rules.tol lines: they load, and each budgets its class at k x max */
    mla_rules *emitted = NULL;
    assert_int_equal(mla_rules_load(tol, &emitted), MLA_OK);
    assert_int_equal(mla_rules_count(emitted), 3); /* the routing row is a comment */
    const mla_rule_limits *rl = mla_rules_match(emitted, "L7/out", "bf16", "decode-vs-prefill");
    assert_non_null(rl);
    assert_true(fabs(rl->lim.rel_l2 - 0.09) < 1e-15);
    assert_null(mla_rules_match(emitted, "L0/out", "bf16", "decode-vs-prefill"));
    assert_null(mla_rules_match(emitted, "L7/out", "bf16", "decode-vs-prefill@gpu")); /* exact check */
    FILE *f = fopen(tol, "r");
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "# source: calibration/x.tsv row 1: n=3 median=0.0002 max=0.0003 (k=3)"));
    assert_non_null(strstr(text, "worst margin/bound 0.79"));
    mla_rules_free(emitted);
    remove(tsv);
    remove(tol);
    rmdir(dir);
    mla_calib_free(&t);
    mla_rules_free(rules);
}

/* --models: each row's model by its case; the rows record the models that fed them, limit_now follows
 * the model= lines, and the emitted lines carry model=(...) and judge only those models. */
static void test_models(void **state)
{
    (void)state;
    mla_suite *suite = NULL;
    assert_int_equal(mla_suite_parse("[defaults]\nengines = ref\nagainst = golden\nprofiles = bf16\n"
                                     "[case b]\nmodel = tiny-v3\nprompts = random:len=4,seed=1\nchecks = decode-vs-prefill\n"
                                     "[case a]\nmodel = hf/asym.v3\nprompts = random:len=4,seed=1\nchecks = decode-vs-prefill\n",
                                     "m.suite", &suite),
                     MLA_OK);
    mla_rep_row rows[] = {row("decode-vs-prefill", 0, "lse", 1e-4, NULL), row("decode-vs-prefill", 0, "lse", 2e-4, NULL),
                          row("decode-vs-prefill", 0, "lse", 3e-4, NULL)};
    rows[0].case_name = "b";
    rows[1].case_name = "a";
    rows[2].case_name = "b";
    mla_metrics m = {.rows = rows, .n_rows = 3};
    mla_rules *rules = NULL;
    assert_int_equal(mla_rules_parse("L0/.* .* .* rel_l2=1e-3 model=tiny-.*\n.* .* .* rel_l2=0.2\n", "now.tol", &rules),
                     MLA_OK);
    mla_calib_set *set = NULL;
    assert_int_equal(mla_calib_begin(&set), MLA_OK);
    assert_int_equal(mla_calib_set_models(set, suite), MLA_OK);
    assert_int_equal(mla_calib_add(set, &m, rules), MLA_OK);
    mla_calib_table t;
    assert_int_equal(mla_calib_end(set, 3, "x", &t), MLA_OK);
    const mla_calib_row *lse = find(&t, "decode-vs-prefill", "L0/lse");
    assert_non_null(lse);
    assert_string_equal(lse->models, "asym.v3|tiny-v3");
    /* the first sample (case b, tiny-v3) matched the model= line; case a's the shared one */
    assert_true(lse->limit_now == 1e-3 && lse->rule_line == 1 && lse->mixed_rules);

    char dir[] = "/tmp/test_calibrate_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char tol[64];
    snprintf(tol, sizeof tol, "%s/m.tol", dir);
    assert_int_equal(mla_calib_write_rules(tol, &t, "calibration/m.tsv"), MLA_OK);
    mla_rules *emitted = NULL;
    assert_int_equal(mla_rules_load(tol, &emitted), MLA_OK);
    const mla_rule_limits *rl = mla_rules_match_model(emitted, "L0/lse", "bf16", "decode-vs-prefill", "asym.v3");
    assert_non_null(rl);
    assert_true(fabs(rl->lim.rel_l2 - 9e-4) < 1e-18);
    assert_non_null(mla_rules_match_model(emitted, "L0/lse", "bf16", "decode-vs-prefill", "tiny-v3"));
    /* '.' escaped: asymXv3 is not asym.v3; a model not measured gets no line */
    assert_null(mla_rules_match_model(emitted, "L0/lse", "bf16", "decode-vs-prefill", "asymXv3"));
    assert_null(mla_rules_match_model(emitted, "L0/lse", "bf16", "decode-vs-prefill", "v3-layer"));
    mla_rules_free(emitted);
    remove(tol);
    rmdir(dir);
    mla_calib_free(&t);

    /* a row of a case the suite lacks: refused, naming the case and the suite */
    rows[1].case_name = "gone";
    assert_int_equal(mla_calib_begin(&set), MLA_OK);
    assert_int_equal(mla_calib_set_models(set, suite), MLA_OK);
    assert_int_equal(mla_calib_add(set, &m, rules), MLA_ERR_INVALID);
    assert_non_null(strstr(mla_last_error(), "'gone'"));
    assert_non_null(strstr(mla_last_error(), "suite m"));
    assert_int_equal(mla_calib_end(set, 3, "x", &t), MLA_OK);
    mla_calib_free(&t);
    mla_rules_free(rules);
    mla_suite_free(suite);
}

static void test_bad_k(void **state)
{
    (void)state;
    mla_calib_set *set = NULL;
    assert_int_equal(mla_calib_begin(&set), MLA_OK);
    mla_calib_table t;
    assert_int_equal(mla_calib_end(set, 0, "x", &t), MLA_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_up),
        cmocka_unit_test(test_table_and_rules),
        cmocka_unit_test(test_models),
        cmocka_unit_test(test_bad_k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
