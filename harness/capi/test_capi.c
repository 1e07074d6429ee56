/* test_capi.c: libmlacheck's C API (mlacheck/capi.h) through the shared library, as ctypes calls it:
 * version and struct sizes, a case's arrays, the judge (the reference operator's own outputs pass, a
 * 1% scaled out fails naming mqa_out, a wrong size is MLA_ERR_SHAPE naming case and tensor), the
 * suite held by its cases, and whole-model runs with a decode-only and a prefill-only operator (the
 * reference computes the other form; the result says so) against a refused empty operator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mla_ref/ref.h"
#include "mlacheck/capi.h"

static void test_version_and_sizes(void **state)
{
    (void)state;
    assert_int_equal(mlacheck_capi_version(), MLACHECK_CAPI_VERSION);
    mlacheck_sizes s = {.struct_size = sizeof s};
    assert_int_equal(mlacheck_capi_sizes(&s), MLA_OK);
    assert_int_equal(s.mqa_args, sizeof(mla_mqa_args));
    assert_int_equal(s.verdict, sizeof(mlacheck_verdict));
    s.struct_size = 3;
    assert_int_equal(mlacheck_capi_sizes(&s), MLA_ERR_VERSION);
    assert_int_equal(mlacheck_kv_row_bytes(MLA_KV_FP8_DS, 512, 64), 656);
    assert_int_equal(mlacheck_kv_row_bytes(99, 512, 64), 0);
}

/* The reference operator's outputs for case i of ops-smoke (an mqa case). */
static void ref_outputs(mlacheck_case *c, const mlacheck_case_info *ci, float **out, float **lse)
{
    mlacheck_array q = {.struct_size = sizeof q}, kv = {.struct_size = sizeof kv},
                   bt = {.struct_size = sizeof bt}, sl = {.struct_size = sizeof sl}, cu = {.struct_size = sizeof cu};
    assert_int_equal(mlacheck_case_array(c, "q", &q), MLA_OK);
    assert_int_equal(mlacheck_case_array(c, "kv_cache", &kv), MLA_OK);
    assert_int_equal(mlacheck_case_array(c, "block_table", &bt), MLA_OK);
    assert_int_equal(mlacheck_case_array(c, "seq_lens", &sl), MLA_OK);
    assert_int_equal(mlacheck_case_array(c, "cu_seqlens_q", &cu), MLA_OK);
    assert_int_equal(q.dtype, MLACHECK_DT_F32);
    assert_int_equal(q.shape[2], ci->kv_lora_rank + ci->rope_dim);
    assert_int_equal(kv.dtype, MLACHECK_DT_BF16);
    assert_int_equal(kv.nbytes, (int64_t)ci->num_blocks * ci->page_size * ci->row_bytes);
    int64_t n = (int64_t)ci->total_q * ci->num_heads;
    *out = malloc((size_t)(n * ci->out_dim) * sizeof(float));
    *lse = malloc((size_t)n * sizeof(float));
    assert_non_null(*out);
    assert_non_null(*lse);
    mla_mqa_args a = {.batch = ci->batch, .num_heads = ci->num_heads, .kv_lora_rank = ci->kv_lora_rank,
                      .rope_dim = ci->rope_dim, .total_q = ci->total_q, .cu_seqlens_q = cu.data,
                      .seq_lens = sl.data, .softmax_scale = ci->softmax_scale, .q = q.data,
                      .kv = {.format = (mla_kv_format)ci->kv_format_id, .fp8_fnuz = ci->fp8_fnuz, .data = kv.data,
                             .num_blocks = ci->num_blocks, .page_size = ci->page_size, .k_scale = ci->k_scale,
                             .block_table = bt.data, .max_blocks_per_seq = ci->max_blocks_per_seq},
                      .out = *out, .lse = *lse};
    assert_int_equal(mla_ref_attn_ops()->mqa(&a), MLA_OK);
}

static void test_case_and_judge(void **state)
{
    (void)state;
    mlacheck_suite *s = NULL;
    assert_int_equal(mlacheck_ops_open("ops-nope", NULL, &s), MLA_ERR_NOT_FOUND);
    assert_non_null(strstr(mlacheck_last_error(), "expected ops-smoke or ops-full"));
    assert_int_equal(mlacheck_ops_open("ops-smoke", NULL, &s), MLA_OK);
    assert_int_equal(mlacheck_ops_count(s), 10);
    assert_string_equal(mlacheck_ops_case_name(s, 0), "mqa-v3-h128-p64-bf16-small-ba");
    assert_null(mlacheck_ops_case_name(s, 10));
    mlacheck_case *c = NULL;
    assert_int_equal(mlacheck_case_make(s, 0, &c), MLA_OK);
    mlacheck_ops_close(s); /* the case holds the suite (its rules) */
    mlacheck_case_info ci = {.struct_size = sizeof ci};
    assert_int_equal(mlacheck_case_get_info(c, &ci), MLA_OK);
    assert_string_equal(ci.form, "mqa");
    assert_string_equal(ci.kv_format, "bf16");
    assert_int_equal(ci.n_features, 6);
    assert_string_equal(ci.features[1], "kv format bf16");
    mlacheck_array a = {.struct_size = sizeof a};
    assert_int_equal(mlacheck_case_array(c, "kv_c", &a), MLA_ERR_NOT_FOUND); /* mha only */
    assert_int_equal(mlacheck_case_array(c, "q_bf16", &a), MLA_OK);
    assert_int_equal(a.dtype, MLACHECK_DT_BF16);
    float *out, *lse;
    ref_outputs(c, &ci, &out, &lse);
    int64_t n = (int64_t)ci.total_q * ci.num_heads;
    mlacheck_verdict v = {.struct_size = sizeof v};
    assert_int_equal(mlacheck_case_judge(c, out, n * ci.out_dim, lse, n, &v), MLA_OK);
    assert_int_equal(v.verdict, MLACHECK_PASS);
    assert_string_equal(v.tensor, "");
    for (int64_t i = 0; i < n * ci.out_dim; i++) out[i] *= 1.01f;
    assert_int_equal(mlacheck_case_judge(c, out, n * ci.out_dim, lse, n, &v), MLA_OK);
    assert_int_equal(v.verdict, MLACHECK_FAIL);
    assert_string_equal(v.tensor, "mqa_out");
    assert_true(v.value > v.limit || !strcmp(v.metric, "allclose"));
    assert_true(v.out.max_abs > 0 && !v.out.pass && v.lse.pass);
    assert_int_equal(mlacheck_case_judge(c, out, n * ci.out_dim - 1, lse, n, &v), MLA_ERR_SHAPE);
    assert_non_null(strstr(mlacheck_last_error(), "case mqa-v3-h128-p64-bf16-small-ba: out has"));
    assert_int_equal(mlacheck_case_judge(c, out, n * ci.out_dim, NULL, n, &v), MLA_ERR_INVALID);
    assert_non_null(strstr(mlacheck_last_error(), "lse is missing"));
    free(out);
    free(lse);
    mlacheck_case_free(c);
}

/* The reference operator with one entry removed. */
static int all(mla_attn_feature f, int64_t v)
{
    (void)f;
    (void)v;
    return 1;
}

static void run_one(const mla_attn_ops *ops, int expect_status, mlacheck_run_result *r)
{
    char dir[] = "/tmp/mlacheck-capi-XXXXXX";
    assert_non_null(mkdtemp(dir));
    mlacheck_run_opts o = {.struct_size = sizeof o, .suite = "smoke", .results_dir = dir};
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    assert_int_equal(mlacheck_run_model(&o, ops, r), expect_status);
}

static void test_run_one_form(void **state)
{
    (void)state;
    mla_attn_ops decode = {.abi_version = MLA_ATTN_ABI_VERSION, .name = "ref mqa", .supports = all,
                           .mqa = mla_ref_attn_ops()->mqa};
    mlacheck_run_result r;
    run_one(&decode, MLA_OK, &r);
    assert_int_equal(r.fail, 0);
    assert_int_equal(r.pass, 5);
    assert_string_equal(r.attention, "mqa (decode): ref mqa; mha (prefill): the reference (none given)");
    assert_true(r.run_dir[0] != '\0');
    mla_attn_ops prefill = {.abi_version = MLA_ATTN_ABI_VERSION, .name = "ref mha", .supports = all,
                            .mha = mla_ref_attn_ops()->mha};
    run_one(&prefill, MLA_OK, &r);
    assert_int_equal(r.fail, 0);
    assert_int_equal(r.pass, 5);
    assert_non_null(strstr(r.attention, "mqa (decode): the reference (none given)"));
    mla_attn_ops none = {.abi_version = MLA_ATTN_ABI_VERSION, .name = "empty", .supports = all};
    run_one(&none, MLA_ERR_FORMAT, &r);
    assert_non_null(strstr(mlacheck_last_error(), "at least one of mqa, mha"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_sizes),
        cmocka_unit_test(test_case_and_judge),
        cmocka_unit_test(test_run_one_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
