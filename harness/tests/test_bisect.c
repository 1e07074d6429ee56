/* test_bisect.c: the data that travels between runner, report and bisect: metrics.tsv written and
 * loaded through its column table, failure inputs written and read as key = value lines, the first
 * failing row of each check, and the tap-to-op text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mla/taps.h"
#include "mlacheck/bisect.h"
#include "mlacheck/failure.h"
#include "mlacheck/metrics.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void assert_msg_has(const char *part)
{
    if (!strstr(mla_last_error(), part)) fail_msg("'%s' not in '%s'", part, mla_last_error());
}

static void test_metrics_round_trip(void **state)
{
    (void)state;
    char path[] = "/tmp/test_bisect-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    mla_rep_row rows[] = {
        {.case_name = "c", .check = "golden", .profile = "fp64", .path = "prefill", .layer = -1, .tap = "embed",
         .kv_len = -1, .n = 12, .max_abs = 0.1, .max_rel = 1.0 / 3, .nmse_db = -999, .cos_diff = 1e-300,
         .rel_l2 = INFINITY, .ulp_p99 = 2, .headroom = NAN, .worst = "rel_l2", .pass = 1, .why = ""},
        {.case_name = "c", .check = "golden", .profile = "fp64", .path = "prefill", .layer = 0, .tap = "attn_core",
         .kv_len = 64, .n = 5000000000LL, .max_abs = -0.0, .rel_l2 = 2.5e-3, .headroom = 7, .worst = "shape",
         .pass = 0, .why = "tab\there, newline\nhere"},
        {.case_name = "c", .check = "golden", .profile = "fp64", .path = "prefill", .layer = 1, .tap = "out",
         .kv_len = -1, .worst = NULL, .pass = 0, .why = NULL},
    };
    assert_int_equal(mla_metrics_write(path, rows, 3), MLA_OK);
    mla_metrics m;
    assert_int_equal(mla_metrics_load(path, &m), MLA_OK);
    assert_int_equal(m.n_rows, 3);
    assert_string_equal(m.rows[0].tap, "embed");
    assert_true(m.rows[0].max_rel == 1.0 / 3 && m.rows[0].cos_diff == 1e-300 && m.rows[0].nmse_db == -999);
    assert_true(isinf(m.rows[0].rel_l2) && isnan(m.rows[0].headroom));
    assert_int_equal(m.rows[1].n, 5000000000LL);
    assert_int_equal(m.rows[1].kv_len, 64);
    assert_string_equal(m.rows[1].why, "tab here, newline here"); /* the table stays a table */
    assert_string_equal(m.rows[2].worst, "");
    assert_string_equal(m.rows[2].why, "");
    mla_metrics_free(&m);
    assert_null(m.rows);

    /* another header, a short row, a bad number */
    write_text(path, "case\tcheck\n");
    assert_int_equal(mla_metrics_load(path, &m), MLA_ERR_FORMAT);
    assert_msg_has(":1: 2 columns; expected 18");
    write_text(path, "case\tcheck\tprofile\tpath\tlayer\ttap\tkv_len\tn\tmax_abs\tmax_rel\tnmse_db\tcos_diff\t"
                     "rel_l2\tulp_p99\theadroom\tpass\tworst\twhy\n"
                     "c\tg\tp\tq\tx1\tt\t-1\t1\t0\t0\t0\t0\t0\t0\t0\t1\trel_l2\t\n");
    assert_int_equal(mla_metrics_load(path, &m), MLA_ERR_FORMAT);
    assert_msg_has(":2: column layer = 'x1'");
    unlink(path);
    assert_int_equal(mla_metrics_load(path, &m), MLA_ERR_NOT_FOUND);
}

static void test_failure_round_trip(void **state)
{
    (void)state;
    const int32_t tok[] = {3, 1, 4, 1, 5};
    mla_failure f = {.suite = "ci", .case_name = "tiny-v3-golden", .check = "golden@gpu", .profile = "bf16",
                     .path = "decode", .model = "/models/a b", .block_size = 64, .prefill_len = 3, .chunk = 0,
                     .faults = 0x24, .tokens = tok, .n_tokens = 5};
    char *text = NULL;
    assert_int_equal(mla_failure_format(&f, &text), MLA_OK);
    assert_non_null(strstr(text, "\ncheck = golden@gpu\n"));
    assert_non_null(strstr(text, "\nfaults = 0x24\n"));
    assert_non_null(strstr(text, "\ntokens = 3,1,4,1,5\n"));
    mla_failure g;
    assert_int_equal(mla_failure_parse(text, "t.txt", &g), MLA_OK);
    assert_string_equal(g.suite, "ci");
    assert_string_equal(g.case_name, "tiny-v3-golden");
    assert_string_equal(g.check, "golden@gpu");
    assert_string_equal(g.profile, "bf16");
    assert_string_equal(g.path, "decode");
    assert_string_equal(g.model, "/models/a b");
    assert_int_equal(g.block_size, 64);
    assert_int_equal(g.prefill_len, 3);
    assert_int_equal(g.chunk, 0);
    assert_int_equal(g.faults, 0x24);
    assert_int_equal(g.n_tokens, 5);
    assert_memory_equal(g.tokens, tok, sizeof tok);
    mla_failure_free(&g);
    free(text);

    f.model = "two\nlines";
    assert_int_equal(mla_failure_format(&f, &text), MLA_ERR_INVALID);
    assert_null(text);
    assert_int_equal(mla_failure_parse("suite = ci\nsuite = ci\n", "t.txt", &g), MLA_ERR_FORMAT);
    assert_msg_has("t.txt:2: key 'suite' given twice");
    assert_int_equal(mla_failure_parse("sute = ci\n", "t.txt", &g), MLA_ERR_FORMAT);
    assert_msg_has("t.txt:1: unknown key 'sute'");
    assert_int_equal(mla_failure_parse("# only a comment\nsuite = ci\n", "t.txt", &g), MLA_ERR_FORMAT);
    assert_msg_has("key 'case' missing");
    assert_int_equal(mla_failure_parse("tokens = 1,,2\n", "t.txt", &g), MLA_ERR_FORMAT);
    assert_msg_has("t.txt:1: tokens = '1,,2'");
    assert_null(g.owned_tokens);
}

static void test_first_failures_and_ops(void **state)
{
    (void)state;
    mla_rep_row rows[] = {
        {.case_name = "a", .check = "golden", .profile = "fp64", .path = "prefill", .layer = -1, .tap = "embed", .pass = 1},
        {.case_name = "a", .check = "golden", .profile = "fp64", .path = "prefill", .layer = 0, .tap = "q_pe", .pass = 0},
        {.case_name = "a", .check = "golden", .profile = "fp64", .path = "prefill", .layer = 0, .tap = "attn_core", .pass = 0},
        {.case_name = "a", .check = "golden", .profile = "fp64", .path = "decode", .layer = 1, .tap = "topk_weights", .pass = 0},
        {.case_name = "a", .check = "sweep", .profile = "fp64", .path = "decode", .layer = -1, .tap = "worst", .pass = 0},
        {.case_name = "a", .check = "golden", .profile = "fp64", .path = "decode", .layer = 0, .tap = "lse", .pass = 0},
    };
    mla_metrics m = {.rows = rows, .n_rows = 6};
    mla_bisect_hit *h = NULL;
    size_t n = 0;
    assert_int_equal(mla_bisect_first_failures(&m, &h, &n), MLA_OK);
    assert_int_equal(n, 3);
    assert_ptr_equal(h[0].row, &rows[1]);
    assert_string_equal(h[0].op, "RoPE/YaRN on the query (pairing, frequencies, position)");
    assert_ptr_equal(h[1].row, &rows[3]);
    assert_string_equal(h[1].op, "routing weights (normalization, routed_scaling_factor)");
    assert_ptr_equal(h[2].row, &rows[4]);
    assert_string_equal(h[2].op, "sweep (see the kv length)");
    free(h);
    m.n_rows = 1;
    assert_int_equal(mla_bisect_first_failures(&m, &h, &n), MLA_OK);
    assert_int_equal(n, 0);
    assert_null(h);
    /* every tap has its op, and a name that is no tap has none */
    for (int t = 0; t < MLA_TAP_COUNT; t++) assert_true(strlen(mla_tap_op((mla_tap)t)) > 3);
    assert_string_equal(mla_tap_op(MLA_TAP_ATTN_OUT), "o_proj");
    assert_string_equal(mla_bisect_tap_op("nope"), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_round_trip),
        cmocka_unit_test(test_failure_round_trip),
        cmocka_unit_test(test_first_failures_and_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
