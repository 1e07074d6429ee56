/* test_plugin_abi.c: the plugin ABIs (plugin.h whole model, attn_op.h operator) end to end: the
 * example plugins are dlopen'ed from their build paths (compile definitions), the loaders refuse a
 * wrong ABI version, a missing symbol and an unsupported profile with the documented statuses, the
 * reference-wrapping plugin passes the operator suite and the whole-model comparison, and the buggy
 * one fails both, with its planted layer named. The reference operator itself is checked against a
 * naive loop written here and against the other MLA form (absorbed vs naive). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mla/attn_op.h"
#include "mla/dtype.h"
#include "mla_core/rng.h"
#include "mlacheck/driver.h"
#include "mlacheck/opcheck.h"
#include "mla_model/model.h"
#include "mla_ref/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MLA_REF_PLUGIN
#error "MLA_REF_PLUGIN (path of libexample_ref_plugin.so) must be defined by CMake"
#endif

#define ENGINE(path) "plugin:" path

static void assert_msg_has(const char *needle)
{
    if (!strstr(mla_last_error(), needle)) fail_msg("error '%s' lacks '%s'", mla_last_error(), needle);
}

/* ---- loading ----------------------------------------------------------------------------------- */

static void test_load_ok(void **state)
{
    (void)state;
    const mla_attn_ops *ops = NULL;
    assert_int_equal(mla_opcheck_open(ENGINE(MLA_REF_PLUGIN), &ops), MLA_OK);
    assert_non_null(ops);
    assert_string_equal(ops->name, "example-ref");
    assert_int_equal(ops->abi_version, MLA_ATTN_ABI_VERSION);
    assert_int_equal(mla_opcheck_open("ref", &ops), MLA_OK);
    assert_ptr_equal(ops, mla_ref_attn_ops());
}

static void test_missing_symbol(void **state)
{
    (void)state;
    const mla_attn_ops *ops = NULL;
    /* libm is a real shared library without either symbol */
    assert_int_equal(mla_opcheck_open("plugin:libm.so.6", &ops), MLA_ERR_NOT_FOUND);
    assert_null(ops);
    assert_msg_has("missing symbol mla_attn_plugin_register");
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    mla_run_opts o;
    mla_run_opts_default(&o);
    mla_engine e;
    assert_int_equal(mla_engine_open("plugin:libm.so.6", m, &o, &e), MLA_ERR_NOT_FOUND);
    assert_msg_has("missing symbol mla_plugin_register");
    assert_int_equal(mla_opcheck_open("plugin:/nonexistent/libnothing.so", &ops), MLA_ERR_NOT_FOUND);
    assert_msg_has("cannot load");
    assert_int_equal(mla_opcheck_open("gpu", &ops), MLA_ERR_INVALID);
    mla_model_free(m);
}

static void test_abi_mismatch(void **state)
{
    (void)state;
    const mla_attn_ops *ops = NULL;
    assert_int_equal(mla_opcheck_open(ENGINE(MLA_MISMATCH_PLUGIN), &ops), MLA_ERR_VERSION);
    assert_null(ops);
    assert_msg_has("attention ABI version 2, expected 1");
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    mla_run_opts o;
    mla_run_opts_default(&o);
    mla_engine e;
    assert_int_equal(mla_engine_open(ENGINE(MLA_MISMATCH_PLUGIN), m, &o, &e), MLA_ERR_VERSION);
    mla_model_free(m);
}

static void test_unsupported_profile(void **state)
{
    (void)state;
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.profile = MLA_PROFILE_FP8DS;
    mla_engine e;
    assert_int_equal(mla_engine_open(ENGINE(MLA_BUGGY_PLUGIN), m, &o, &e), MLA_ERR_UNSUPPORTED);
    assert_msg_has("profile fp8ds not supported");
    mla_model_free(m);

    const mla_attn_ops *ops = NULL;
    assert_int_equal(mla_opcheck_open(ENGINE(MLA_BUGGY_PLUGIN), &ops), MLA_OK);
    mla_opcheck_opts oo;
    mla_opcheck_opts_default(&oo);
    oo.kv_format = MLA_KV_FP8_DS;
    mla_opcheck_summary s;
    mla_status st = mla_opcheck_run_suite("ops-smoke", ops, &oo, &s, NULL);
    assert_int_equal(st, MLA_ERR_UNSUPPORTED);
    assert_msg_has("declines kv format fp8ds");
    assert_true(s.n_cases >= 2);
    assert_int_equal(s.n_skip, s.n_cases);
}

/* ---- the operator suite -------------------------------------------------------------------------- */

static void print_case(void *user, const mla_opcase *c, const mla_opcase_result *r)
{
    (void)user;
    printf("  %-5s %-36s out %s | lse max_abs=%.3g %.3fs %s\n", mla_opcase_verdict_name(r->verdict), c->name,
           r->verdict <= MLA_OPCASE_FAIL ? (r->out.pass ? "ok" : "BAD") : "-", r->lse.max_abs, r->seconds,
           r->verdict == MLA_OPCASE_PASS ? "" : r->why);
}

/* The ops-smoke suite through an operator plugin; the per-case results (caller frees). */
static mla_opcase_result *run_ops_smoke(const char *engine, mla_opcheck_summary *s)
{
    const mla_attn_ops *ops = NULL;
    assert_int_equal(mla_opcheck_open(engine, &ops), MLA_OK);
    mla_opcheck_opts o;
    mla_opcheck_opts_default(&o);
    o.on_case = print_case;
    mla_opcase_result *res = NULL;
    assert_int_equal(mla_opcheck_run_suite("ops-smoke", ops, &o, s, &res), MLA_OK);
    return res;
}

static void test_ref_plugin_passes_smoke(void **state)
{
    (void)state;
    mla_opcheck_summary s;
    mla_opcase_result *res = run_ops_smoke(ENGINE(MLA_REF_PLUGIN), &s);
    assert_int_equal(s.n_cases, 10);
    assert_int_equal(s.n_pass, s.n_cases);
    for (int i = 0; i < s.n_cases; i++) { /* the same code on the same inputs: bit-identical */
        assert_true(res[i].out.n > 0);
        assert_int_equal(res[i].out.n_mismatch, 0);
        assert_true(res[i].out.max_abs == 0.0 && res[i].lse.max_abs == 0.0);
    }
    free(res);
}

static void test_buggy_plugin_fails_smoke(void **state)
{
    (void)state;
    mla_opcheck_summary s;
    mla_opcase_result *res = run_ops_smoke(ENGINE(MLA_BUGGY_PLUGIN), &s);
    assert_int_equal(s.n_skip, 2); /* the fp8ds cases */
    assert_int_equal(s.n_pass, 0);
    assert_int_equal(s.n_fail, s.n_cases - s.n_skip);
    assert_string_equal(s.first_fail, "mqa-v3-h128-p64-bf16-small-ba");
    for (int i = 0; i < s.n_cases; i++)
        if (res[i].verdict == MLA_OPCASE_FAIL) assert_false(res[i].lse.pass); /* the scale moves every lse */
    free(res);
}

/* The same rules file syntax the harness uses, check name "op". */
static void test_rules_are_used(void **state)
{
    (void)state;
    mla_rules *rules = NULL;
    assert_int_equal(mla_rules_parse("mqa_out .* op max_abs=1e-300\nlse .* op max_abs=1e-300\n", "test", &rules),
                     MLA_OK);
    mla_opcase *cases;
    int n;
    assert_int_equal(mla_opcheck_cases("ops-smoke", &cases, &n), MLA_OK);
    /* a candidate one f32 ulp off the reference passes FlashMLA's limits but not these */
    mla_opcheck_opts o;
    mla_opcheck_opts_default(&o);
    mla_opcase_result r;
    assert_int_equal(mla_opcheck_run_case(&cases[3], mla_ref_attn_ops(), &o, &r), MLA_OK);
    assert_int_equal(r.verdict, MLA_OPCASE_PASS);
    o.rules = rules;
    assert_int_equal(mla_opcheck_run_case(&cases[3], mla_ref_attn_ops(), &o, &r), MLA_OK);
    assert_int_equal(r.verdict, MLA_OPCASE_PASS); /* exact is still exact */
    free(cases);
    mla_rules_free(rules);
}

/* A kernel that writes one float past out must be caught by the guard words. */
static mla_status overrun_mqa(const mla_mqa_args *a)
{
    mla_status st = mla_ref_attn_ops()->mqa(a);
    a->out[(int64_t)a->total_q * a->num_heads * a->kv_lora_rank] = 0.0f;
    return st;
}
static int overrun_supports(mla_attn_feature f, int64_t v) { return mla_ref_attn_ops()->supports(f, v); }

static void test_guard_catches_overrun(void **state)
{
    (void)state;
    const mla_attn_ops bad = {.abi_version = MLA_ATTN_ABI_VERSION, .name = "overrun",
                              .supports = overrun_supports, .mqa = overrun_mqa};
    mla_opcase *cases;
    int n;
    assert_int_equal(mla_opcheck_cases("ops-smoke", &cases, &n), MLA_OK);
    mla_opcase_result r;
    assert_int_equal(mla_opcheck_run_case(&cases[3], &bad, NULL, &r), MLA_OK);
    assert_int_equal(r.verdict, MLA_OPCASE_FAIL);
    assert_non_null(strstr(r.why, "wrote past the end of out"));
    assert_int_equal(mla_opcheck_run_case(&cases[6], &bad, NULL, &r), MLA_OK); /* mha: no entry */
    assert_int_equal(r.verdict, MLA_OPCASE_SKIP);
    free(cases);
}

static void test_full_suite_shape(void **state)
{
    (void)state;
    mla_opcase *cases;
    int n;
    assert_int_equal(mla_opcheck_cases("ops-full", &cases, &n), MLA_OK);
    assert_int_equal(n, 194);
    int heads[129] = {0}, pages[129] = {0}, fmt[MLA_KV_FORMAT_COUNT] = {0}, zero = 0, multi = 0;
    for (int i = 0; i < n; i++) {
        heads[cases[i].num_heads]++;
        pages[cases[i].page_size]++;
        fmt[cases[i].kv_format]++;
        for (int b = 0; b < cases[i].batch; b++) {
            zero += cases[i].s_q[b] == 0;
            multi += cases[i].kind == MLA_OP_MQA && cases[i].s_q[b] > 1;
        }
        for (int j = 0; j < i; j++) assert_string_not_equal(cases[i].name, cases[j].name);
    }
    assert_true(heads[128] && heads[64] && heads[32] && heads[16]);
    assert_true(pages[1] && pages[16] && pages[64] && pages[128]);
    assert_true(fmt[MLA_KV_BF16] && fmt[MLA_KV_FP8] && fmt[MLA_KV_FP8_DS]);
    assert_true(zero > 0 && multi > 0);
    free(cases);
    assert_int_equal(mla_opcheck_cases("ops-nothing", &cases, &n), MLA_ERR_NOT_FOUND);
}

/* ---- the reference operator against independent math ------------------------------------------- */

enum { TB = 3, TH = 4, TC = 64, TR = 16, TP = 16, TV = 24, TPAGE = 4, TMB = 8, TNB = 12 };

/* Uniform in [-0.5, 0.5) (mla/rng.h). */
static double urand(uint64_t *s) { return mla_rng_uniform(s) - 0.5; }

/* A NaN-filled f32 pool; sequences with {s_q, seq_len}; rows written through a reversed table. */
typedef struct {
    float pool[TNB * TPAGE * (TC + TR)];
    int32_t table[TB * TMB];
    int32_t cu[TB + 1], lens[TB];
    mla_attn_cache kv;
} tiny_cache;

static void tiny_cache_make(tiny_cache *t, const int *s_q, const int *lens, uint64_t *rng)
{
    for (size_t i = 0; i < sizeof t->pool / sizeof t->pool[0]; i++) t->pool[i] = NAN;
    t->cu[0] = 0;
    int next = TNB - 1;
    for (int b = 0; b < TB; b++) {
        t->cu[b + 1] = t->cu[b] + s_q[b];
        t->lens[b] = lens[b];
        for (int i = 0; i < TMB; i++) t->table[b * TMB + i] = i * TPAGE < lens[b] ? next-- : 0;
        for (int j = 0; j < lens[b]; j++)
            for (int k = 0; k < TC + TR; k++)
                t->pool[((int64_t)t->table[b * TMB + j / TPAGE] * TPAGE + j % TPAGE) * (TC + TR) + k] =
                    (float)urand(rng);
    }
    t->kv = (mla_attn_cache){.format = MLA_KV_F32, .data = t->pool, .num_blocks = TNB, .page_size = TPAGE,
                             .block_table = t->table, .max_blocks_per_seq = TMB};
}

static const float *tiny_row(const tiny_cache *t, int b, int j)
{
    return t->pool + ((int64_t)t->table[b * TMB + j / TPAGE] * TPAGE + j % TPAGE) * (TC + TR);
}

static void test_ref_mqa_naive(void **state)
{
    (void)state;
    static tiny_cache t;
    uint64_t rng = 7;
    const int s_q[TB] = {2, 0, 1}, lens[TB] = {9, 0, 13};
    tiny_cache_make(&t, s_q, lens, &rng);
    int T = t.cu[TB];
    float q[3 * TH * (TC + TR)], out[3 * TH * TC], lse[3 * TH];
    for (int i = 0; i < T * TH * (TC + TR); i++) q[i] = (float)(4 * urand(&rng));
    double scale = 0.3;
    mla_mqa_args a = {.batch = TB, .num_heads = TH, .kv_lora_rank = TC, .rope_dim = TR, .total_q = T,
                      .cu_seqlens_q = t.cu, .seq_lens = t.lens, .softmax_scale = scale, .q = q, .kv = t.kv,
                      .out = out, .lse = lse};
    assert_int_equal(mla_ref_attn_ops()->mqa(&a), MLA_OK);
    for (int b = 0; b < TB; b++)
        for (int i = 0; i < s_q[b]; i++)
            for (int h = 0; h < TH; h++) {
                int tq = t.cu[b] + i, vis = lens[b] - s_q[b] + i + 1;
                const float *qr = q + (tq * TH + h) * (TC + TR);
                double s[16], mx = -INFINITY, sum = 0, o[TC] = {0};
                for (int j = 0; j < vis; j++) {
                    s[j] = 0;
                    for (int k = 0; k < TC + TR; k++) s[j] += (double)qr[k] * tiny_row(&t, b, j)[k];
                    s[j] *= scale;
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int j = 0; j < vis; j++) sum += exp(s[j] - mx);
                for (int j = 0; j < vis; j++)
                    for (int k = 0; k < TC; k++) o[k] += exp(s[j] - mx) / sum * tiny_row(&t, b, j)[k];
                assert_float_equal(lse[tq * TH + h], mx + log(sum), 1e-5);
                for (int k = 0; k < TC; k++) assert_float_equal(out[(tq * TH + h) * TC + k], o[k], 1e-6);
            }
    /* bad input is refused, naming the field */
    t.table[2 * TMB + 1] = TNB;
    assert_int_equal(mla_ref_attn_ops()->mqa(&a), MLA_ERR_INVALID);
    assert_msg_has("kv.block_table[2][1] = 12");
}

/* Absorbed vs naive: mha(q) must equal W_UV . mqa([q_nope . W_UK | q_pe]) for the same cache. */
static void test_ref_mha_equals_absorbed(void **state)
{
    (void)state;
    static tiny_cache t;
    static float w[TH * (TP + TV) * TC], q[8 * TH * (TP + TR)], qa[8 * TH * (TC + TR)];
    static float kvc[8 * TC], kpe[8 * TR], out_h[8 * TH * TV], lse_h[8 * TH], out_l[8 * TH * TC], lse_l[8 * TH];
    uint64_t rng = 99;
    const int s_q[TB] = {3, 0, 5}, lens[TB] = {3, 0, 17}; /* no context; context 12 */
    tiny_cache_make(&t, s_q, lens, &rng);
    int T = t.cu[TB];
    for (int i = 0; i < TH * (TP + TV) * TC; i++) w[i] = (float)urand(&rng);
    for (int i = 0; i < T * TH * (TP + TR); i++) q[i] = (float)(2 * urand(&rng));
    for (int b = 0; b < TB; b++)
        for (int i = 0; i < s_q[b]; i++) { /* the new tokens are the last rows of the cache */
            const float *row = tiny_row(&t, b, lens[b] - s_q[b] + i);
            memcpy(kvc + (t.cu[b] + i) * TC, row, TC * sizeof(float));
            memcpy(kpe + (t.cu[b] + i) * TR, row + TC, TR * sizeof(float));
        }
    for (int tq = 0; tq < T; tq++)
        for (int h = 0; h < TH; h++) {
            const float *qn = q + (tq * TH + h) * (TP + TR);
            float *dst = qa + (tq * TH + h) * (TC + TR);
            for (int c = 0; c < TC; c++) {
                double acc = 0;
                for (int d = 0; d < TP; d++) acc += (double)qn[d] * w[(h * (TP + TV) + d) * TC + c];
                dst[c] = (float)acc;
            }
            memcpy(dst + TC, qn + TP, TR * sizeof(float));
        }
    double scale = 0.2;
    mla_mha_args m = {.batch = TB, .num_heads = TH, .kv_lora_rank = TC, .rope_dim = TR, .nope_dim = TP,
                      .v_dim = TV, .total_q = T, .cu_seqlens_q = t.cu, .seq_lens = t.lens, .softmax_scale = scale,
                      .q = q, .kv_c = kvc, .k_pe = kpe, .w_kv_b = w, .kv = t.kv, .out = out_h, .lse = lse_h};
    mla_mqa_args a = {.batch = TB, .num_heads = TH, .kv_lora_rank = TC, .rope_dim = TR, .total_q = T,
                      .cu_seqlens_q = t.cu, .seq_lens = t.lens, .softmax_scale = scale, .q = qa, .kv = t.kv,
                      .out = out_l, .lse = lse_l};
    assert_int_equal(mla_ref_attn_ops()->mha(&m), MLA_OK);
    assert_int_equal(mla_ref_attn_ops()->mqa(&a), MLA_OK);
    for (int tq = 0; tq < T; tq++)
        for (int h = 0; h < TH; h++) {
            assert_float_equal(lse_h[tq * TH + h], lse_l[tq * TH + h], 2e-5);
            for (int e = 0; e < TV; e++) {
                double acc = 0;
                for (int c = 0; c < TC; c++) acc += (double)w[(h * (TP + TV) + TP + e) * TC + c] * out_l[(tq * TH + h) * TC + c];
                assert_float_equal(out_h[(tq * TH + h) * TV + e], acc, 2e-5);
            }
        }
}

/* ---- whole model --------------------------------------------------------------------------------- */

/* Runs tiny-v3 prefill on engine name and on the reference; returns the first (layer, tap) whose
 * values differ, layer -1 when none. */
static void first_divergence(const char *name, int *layer, mla_tap *tap)
{
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    const mla_config *cf = mla_model_config(m);
    mla_run_opts o;
    mla_run_opts_default(&o);
    mla_engine a, b;
    assert_int_equal(mla_engine_open("ref", m, &o, &a), MLA_OK);
    if (mla_engine_open(name, m, &o, &b)) fail_msg("%s: %s", name, mla_last_error());
    int32_t seq = 0, past = 0, n = 12, tokens[12];
    for (int i = 0; i < n; i++) tokens[i] = (i * 37 + 5) % cf->vocab_size;
    mla_batch batch = {.n_seqs = 1, .seq_ids = &seq, .n_past = &past, .n_new = &n, .tokens = tokens};
    assert_int_equal(a.ops->forward_mha(a.ctx, &batch), MLA_OK);
    assert_int_equal(b.ops->forward_mha(b.ctx, &batch), MLA_OK);
    *layer = -1;
    for (int l = 0; l < cf->num_hidden_layers && *layer < 0; l++)
        for (int t = 0; t < MLA_TAP_COUNT && *layer < 0; t++) {
            if (!mla_tap_is_layer((mla_tap)t) || !mla_tap_in_layer((mla_tap)t, cf, l)) continue;
            if (mla_tap_producer((mla_tap)t) == 'Q') continue;
            mla_tensor *ta = NULL, *tb = NULL;
            assert_int_equal(a.ops->read_tap(a.ctx, l, (mla_tap)t, &ta), MLA_OK);
            assert_int_equal(b.ops->read_tap(b.ctx, l, (mla_tap)t, &tb), MLA_OK);
            mla_cmp_result r;
            mla_cmp_limits lim = {.max_abs = 1e-300};
            assert_int_equal(mla_cmp_tensor(ta, tb, &lim, &r), MLA_OK);
            if (!r.pass) {
                *layer = l;
                *tap = (mla_tap)t;
            }
            mla_tensor_free(ta);
            mla_tensor_free(tb);
        }
    mla_engine_close(&a);
    mla_engine_close(&b);
    mla_model_free(m);
}

static void test_whole_model_plugins(void **state)
{
    (void)state;
    int layer;
    mla_tap tap;
    first_divergence(ENGINE(MLA_REF_PLUGIN), &layer, &tap);
    assert_int_equal(layer, -1);
    first_divergence(ENGINE(MLA_BUGGY_PLUGIN), &layer, &tap);
    printf("  buggy whole-model plugin: first divergence at layer %d tap %s\n", layer, mla_tap_name(tap));
    assert_int_equal(layer, 1); /* tiny-v3: layer 0 dense, layer 1 the first MoE layer */
    assert_string_equal(mla_tap_name(tap), "topk_weights");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_ok),
        cmocka_unit_test(test_missing_symbol),
        cmocka_unit_test(test_abi_mismatch),
        cmocka_unit_test(test_unsupported_profile),
        cmocka_unit_test(test_ref_mqa_naive),
        cmocka_unit_test(test_ref_mha_equals_absorbed),
        cmocka_unit_test(test_full_suite_shape),
        cmocka_unit_test(test_guard_catches_overrun),
        cmocka_unit_test(test_rules_are_used),
        cmocka_unit_test(test_ref_plugin_passes_smoke),
        cmocka_unit_test(test_buggy_plugin_fails_smoke),
        cmocka_unit_test(test_whole_model_plugins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
