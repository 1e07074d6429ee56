/* test_config.c: config.json parsing (rope_scaling and rope_parameters spellings, null q_lora_rank,
 * defaults, errors), presets, derived constants against mla-spec.md §c, tensor shapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mla_model/model.h"

/* DeepSeek-V3-style config.json (transformers 4 spelling). */
static const char *V3_JSON =
    "{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"model_type\": \"deepseek_v3\",\n"
    " \"vocab_size\": 129280, \"hidden_size\": 7168, \"intermediate_size\": 18432,\n"
    " \"moe_intermediate_size\": 2048, \"num_hidden_layers\": 61, \"num_attention_heads\": 128,\n"
    " \"num_key_value_heads\": 128, \"n_shared_experts\": 1, \"n_routed_experts\": 256,\n"
    " \"routed_scaling_factor\": 2.5, \"kv_lora_rank\": 512, \"q_lora_rank\": 1536,\n"
    " \"qk_rope_head_dim\": 64, \"v_head_dim\": 128, \"qk_nope_head_dim\": 128,\n"
    " \"topk_method\": \"noaux_tc\", \"n_group\": 8, \"topk_group\": 4, \"num_experts_per_tok\": 8,\n"
    " \"moe_layer_freq\": 1, \"first_k_dense_replace\": 3, \"norm_topk_prob\": true,\n"
    " \"scoring_func\": \"sigmoid\", \"hidden_act\": \"silu\", \"max_position_embeddings\": 163840,\n"
    " \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000, \"tie_word_embeddings\": false,\n"
    " \"rope_scaling\": {\"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 40, \"mscale\": 1.0,\n"
    "   \"mscale_all_dim\": 1.0, \"original_max_position_embeddings\": 4096, \"type\": \"yarn\"},\n"
    " \"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\",\n"
    "   \"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]},\n"
    " \"torch_dtype\": \"bfloat16\", \"use_cache\": true}\n";

/* DeepSeek-V2-Lite: q_lora_rank null, softmax/greedy, mscale 0.707. */
static const char *V2L_JSON =
    "{\"model_type\": \"deepseek_v2\", \"vocab_size\": 102400, \"hidden_size\": 2048,\n"
    " \"intermediate_size\": 10944, \"moe_intermediate_size\": 1408, \"num_hidden_layers\": 27,\n"
    " \"num_attention_heads\": 16, \"n_shared_experts\": 2, \"n_routed_experts\": 64,\n"
    " \"routed_scaling_factor\": 1.0, \"kv_lora_rank\": 512, \"q_lora_rank\": null,\n"
    " \"qk_rope_head_dim\": 64, \"v_head_dim\": 128, \"qk_nope_head_dim\": 128,\n"
    " \"topk_method\": \"greedy\", \"n_group\": 1, \"topk_group\": 1, \"num_experts_per_tok\": 6,\n"
    " \"first_k_dense_replace\": 1, \"norm_topk_prob\": false, \"scoring_func\": \"softmax\",\n"
    " \"max_position_embeddings\": 163840, \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000,\n"
    " \"rope_scaling\": {\"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 40, \"mscale\": 0.707,\n"
    "   \"mscale_all_dim\": 0.707, \"original_max_position_embeddings\": 4096, \"type\": \"yarn\"}}\n";

/* Kimi-K2 in transformers-5 spelling: rope_parameters carries rope_theta and rope_type. */
static const char *KIMI_FMT =
    "{\"model_type\": \"kimi_k2\", \"vocab_size\": 163840, \"hidden_size\": 7168,\n"
    " \"num_hidden_layers\": 61, \"num_attention_heads\": 64, \"q_lora_rank\": 1536,\n"
    " \"kv_lora_rank\": 512, \"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64, \"v_head_dim\": 128,\n"
    " \"intermediate_size\": 18432, \"moe_intermediate_size\": 2048, \"num_experts_per_tok\": 8,\n"
    " \"n_routed_experts\": 384, \"n_group\": 1, \"topk_group\": 1, \"first_k_dense_replace\": 1,\n"
    " \"routed_scaling_factor\": 2.827, \"max_position_embeddings\": %d,\n"
    " \"rope_parameters\": {\"rope_type\": \"yarn\", \"rope_theta\": 50000.0, \"factor\": %d,\n"
    "   \"original_max_position_embeddings\": 4096, \"beta_fast\": 1.0, \"beta_slow\": 1.0,\n"
    "   \"mscale\": 1.0, \"mscale_all_dim\": 1.0}}";

/* The required dimensions (DeepSeek-V3's), inserted by with_dims into a short test config that
 * starts with model_type, each unless the text names it itself. */
static const char *V3_DIMS[][2] = {
    { "vocab_size", "129280" },        { "hidden_size", "7168" },   { "num_hidden_layers", "61" },
    { "num_attention_heads", "128" },  { "q_lora_rank", "1536" },   { "kv_lora_rank", "512" },
    { "qk_nope_head_dim", "128" },     { "qk_rope_head_dim", "64" }, { "v_head_dim", "128" },
    { "intermediate_size", "18432" },  { "n_routed_experts", "256" }, { "moe_intermediate_size", "2048" },
    { "num_experts_per_tok", "8" },
};

static const char *with_dims(const char *text, char *buf, size_t n)
{
    if (strncmp(text, "{\"model_type\"", 13)) return text;
    size_t k = (size_t)snprintf(buf, n, "{");
    for (size_t i = 0; i < sizeof V3_DIMS / sizeof V3_DIMS[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\"", V3_DIMS[i][0]);
        if (!strstr(text, key)) k += (size_t)snprintf(buf + k, n - k, "%s: %s, ", key, V3_DIMS[i][1]);
    }
    snprintf(buf + k, n - k, "%s", text + 1);
    return buf;
}

static void parse_ok(const char *text, mla_config *c)
{
    char buf[4096];
    text = with_dims(text, buf, sizeof buf);
    mla_status st = mla_config_from_json(text, "config.json", c);
    if (st != MLA_OK) fail_msg("parse failed: %s", mla_last_error());
}

static void kimi(int factor, int maxpos, mla_config *c)
{
    char buf[2048];
    snprintf(buf, sizeof buf, KIMI_FMT, maxpos, factor);
    parse_ok(buf, c);
}

static void test_v3_json(void **state)
{
    (void)state;
    mla_config c;
    parse_ok(V3_JSON, &c);
    assert_string_equal(c.model_type, "deepseek_v3");
    assert_int_equal(c.hidden_size, 7168);
    assert_int_equal(c.num_hidden_layers, 61);
    assert_int_equal(c.q_lora_rank, 1536);
    assert_int_equal(c.kv_lora_rank, 512);
    assert_int_equal(c.n_routed_experts, 256);
    assert_int_equal(c.num_experts_per_tok, 8);
    assert_int_equal(c.n_group, 8);
    assert_int_equal(c.topk_group, 4);
    assert_int_equal(c.first_k_dense_replace, 3);
    assert_int_equal(c.scoring_func, MLA_SCORE_SIGMOID);
    assert_int_equal(c.topk_method, MLA_TOPK_NOAUX_TC);
    assert_int_equal(c.has_e_score_correction_bias, 1);
    assert_int_equal(c.norm_topk_prob, 1);
    assert_true(c.routed_scaling_factor == 2.5);
    assert_int_equal(c.has_yarn, 1);
    assert_true(c.rope_factor == 40.0);
    assert_int_equal(c.rope_original_max_pos, 4096);
    assert_true(c.beta_fast == 32.0 && c.beta_slow == 1.0 && c.mscale == 1.0 && c.mscale_all_dim == 1.0);
    assert_int_equal(c.max_position_embeddings, 163840);
    assert_int_equal(c.fp8_weights, 1);
    assert_int_equal(c.weight_block_size, 128);
    assert_true(fabs(mla_config_softmax_scale(&c) - 0.1352338) < 1e-7);
}

/* YaRN ramp of §c.1: pairs <= low keep theta_i, pairs >= high use theta_i / factor. */
static void check_ramp(const mla_config *c, int low, int high)
{
    int half = c->qk_rope_head_dim / 2;
    double f[64];
    assert_true(half <= 64);
    mla_config_inv_freq(c, f);
    for (int i = 0; i < half; i++) {
        double th = pow(c->rope_theta, -2.0 * i / c->qk_rope_head_dim);
        if (i <= low) assert_true(f[i] == th);
        else if (i >= high) assert_true(f[i] == th / c->rope_factor);
        else {
            assert_true(f[i] < th);
            assert_true(f[i] > th / c->rope_factor);
        }
    }
}

static void test_v3_yarn_ramp(void **state)
{
    (void)state;
    mla_config c;
    parse_ok(V3_JSON, &c);
    check_ramp(&c, 10, 23);
}

static void test_v2_lite_json(void **state)
{
    (void)state;
    mla_config c;
    parse_ok(V2L_JSON, &c);
    assert_string_equal(c.model_type, "deepseek_v2");
    assert_int_equal(c.q_lora_rank, 0);
    assert_int_equal(c.scoring_func, MLA_SCORE_SOFTMAX);
    assert_int_equal(c.topk_method, MLA_TOPK_GREEDY);
    assert_int_equal(c.has_e_score_correction_bias, 0);
    assert_int_equal(c.norm_topk_prob, 0);
    assert_int_equal(c.n_shared_experts, 2);
    assert_int_equal(c.fp8_weights, 0);
    assert_true(c.mscale_all_dim == 0.707);
    assert_true(fabs(mla_config_softmax_scale(&c) - 0.1147214) < 1e-7);
    check_ramp(&c, 10, 23);
}

static void test_kimi_rope_parameters(void **state)
{
    (void)state;
    mla_config c;
    kimi(32, 131072, &c);
    assert_string_equal(c.model_type, "kimi_k2");
    assert_true(c.rope_theta == 50000.0);
    assert_int_equal(c.has_yarn, 1);
    assert_true(c.beta_fast == 1.0);
    assert_true(c.routed_scaling_factor == 2.827);
    /* router kind defaults for kimi_k2 (no scoring_func / topk_method in this file) */
    assert_int_equal(c.scoring_func, MLA_SCORE_SIGMOID);
    assert_int_equal(c.topk_method, MLA_TOPK_NOAUX_TC);
    assert_int_equal(c.has_e_score_correction_bias, 1);
    assert_true(fabs(mla_config_softmax_scale(&c) - 0.1308608) < 1e-7);
    check_ramp(&c, 19, 20);
    kimi(64, 262144, &c);
    assert_true(fabs(mla_config_softmax_scale(&c) - 0.1446796) < 1e-7);
}

static void test_rope_parameters_default(void **state)
{
    (void)state;
    mla_config c;
    parse_ok("{\"model_type\": \"deepseek_v3\", \"rope_theta\": 5.0,"
             " \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 20000}}",
             &c);
    assert_int_equal(c.has_yarn, 0);
    assert_true(c.rope_theta == 20000.0);
    assert_true(fabs(mla_config_softmax_scale(&c) - 1.0 / sqrt(192.0)) < 1e-15);
    /* rope_scaling with rope_type (not type), mscale_all_dim absent: no softmax mscale^2 */
    parse_ok("{\"model_type\": \"deepseek_v3\", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 40}}", &c);
    assert_int_equal(c.has_yarn, 1);
    assert_int_equal(c.rope_original_max_pos, 4096); /* = max_position_embeddings default */
    assert_true(c.mscale_all_dim == 0.0);
    assert_true(fabs(mla_config_softmax_scale(&c) - 1.0 / sqrt(192.0)) < 1e-15);
}

/* Absent non-dimension fields take HF DeepseekV3Config's defaults (with_dims supplies the required ones). */
static void test_defaults(void **state)
{
    (void)state;
    mla_config c;
    parse_ok("{\"model_type\": \"deepseek_v3\"}", &c);
    assert_int_equal(c.vocab_size, 129280);
    assert_int_equal(c.hidden_size, 7168);
    assert_int_equal(c.intermediate_size, 18432);
    assert_int_equal(c.moe_intermediate_size, 2048);
    assert_int_equal(c.num_hidden_layers, 61);
    assert_int_equal(c.num_attention_heads, 128);
    assert_int_equal(c.q_lora_rank, 1536);
    assert_int_equal(c.first_k_dense_replace, 3);
    assert_int_equal(c.max_position_embeddings, 4096);
    assert_int_equal(c.has_yarn, 0);
    assert_int_equal(c.fp8_weights, 0);
    assert_true(c.rms_norm_eps == 1e-6);
    parse_ok("{\"model_type\": \"deepseek_v2\", \"n_group\": 1, \"topk_group\": 1}", &c);
    assert_int_equal(c.scoring_func, MLA_SCORE_SOFTMAX);
    assert_int_equal(c.topk_method, MLA_TOPK_GREEDY);
    assert_int_equal(c.norm_topk_prob, 0);
}

typedef struct {
    const char *json;
    mla_status st;
    const char *needle[3];
} bad_case;

static void test_errors(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        { "{\"model_type\": \"deepseek_v3\", \"hidden_size\": \"7168\"}", MLA_ERR_FORMAT,
          { "config.json", "field hidden_size", "expected a positive integer, got string" } },
        { "{\"model_type\": \"deepseek_v3\", \"kv_lora_rank\": -512}", MLA_ERR_FORMAT,
          { "config.json", "kv_lora_rank", "got -512" } },
        { "{\"model_type\": \"llama\"}", MLA_ERR_FORMAT, { "config.json", "model_type", "llama" } },
        { "{\"hidden_size\": 7}", MLA_ERR_FORMAT, { "config.json", "model_type", "expected a string" } },
        { "{\"model_type\": \"deepseek_v3\", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}}",
          MLA_ERR_FORMAT, { "config.json", "rope_scaling.type", "linear" } },
        { "{\"model_type\": \"deepseek_v3\", \"rope_scaling\": {\"type\": \"yarn\"}}", MLA_ERR_FORMAT,
          { "config.json", "rope_scaling.factor", "expected" } },
        { "{\"model_type\": \"deepseek_v3\", \"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": \"40\"}}",
          MLA_ERR_FORMAT, { "config.json", "rope_parameters.factor", "got string" } },
        { "{\"model_type\": \"deepseek_v3\", \"rope_scaling\": {\"factor\": 40}}", MLA_ERR_FORMAT,
          { "config.json", "rope_scaling.rope_type", "got nothing" } },
        { "{\"model_type\": \"deepseek_v3\", \"topk_method\": \"best\"}", MLA_ERR_FORMAT,
          { "config.json", "topk_method", "best" } },
        { "{\"model_type\": \"deepseek_v3\", \"scoring_func\": 3}", MLA_ERR_FORMAT,
          { "config.json", "scoring_func", "got integer" } },
        { "{\"model_type\": \"deepseek_v3\", \"norm_topk_prob\": \"yes\"}", MLA_ERR_FORMAT,
          { "config.json", "norm_topk_prob", "true or false" } },
        { "{\"model_type\": \"deepseek_v3\", \"num_experts_per_tok\": 300}", MLA_ERR_INVALID,
          { "config.json", "num_experts_per_tok", "300" } },
        { "{\"model_type\": \"deepseek_v3\", \"n_group\": 7}", MLA_ERR_INVALID, { "config.json", "n_group", "7" } },
        { "{\"model_type\": \"deepseek_v3\", \"qk_rope_head_dim\": 63}", MLA_ERR_INVALID,
          { "config.json", "qk_rope_head_dim", "even" } },
        { "{\"model_type\": \"deepseek_v3\", \"quantization_config\": {\"quant_method\": \"awq\"}}",
          MLA_ERR_FORMAT, { "config.json", "quantization_config.quant_method", "awq" } },
        { "{\"model_type\": \"deepseek_v3\", \"quantization_config\": {\"quant_method\": \"fp8\","
          " \"weight_block_size\": [128, 64]}}",
          MLA_ERR_FORMAT, { "config.json", "weight_block_size", "[128, 64]" } },
        /* unsupported values are bad input (exit 2), not a skip */
        { "{\"model_type\": \"deepseek_v3\", \"hidden_act\": \"gelu\"}", MLA_ERR_FORMAT,
          { "config.json", "hidden_act", "gelu" } },
        { "{\"model_type\": \"deepseek_v3\", \"rope_interleave\": false}", MLA_ERR_FORMAT,
          { "config.json", "rope_interleave", "interleaved" } },
        /* missing dimensions name the field instead of taking DeepSeek-V3's */
        { "{\"vocab_size\": 10, \"model_type\": \"deepseek_v3\"}", MLA_ERR_FORMAT,
          { "config.json", "field hidden_size", "required" } },
        { "{\"n_routed_experts\": 4, \"model_type\": \"deepseek_v3\", \"hidden_size\": 8, \"vocab_size\": 8,"
          " \"num_hidden_layers\": 1, \"num_attention_heads\": 1, \"q_lora_rank\": null, \"kv_lora_rank\": 8,"
          " \"qk_nope_head_dim\": 8, \"qk_rope_head_dim\": 8, \"v_head_dim\": 8, \"intermediate_size\": 8}",
          MLA_ERR_FORMAT, { "config.json", "moe_intermediate_size", "required when n_routed_experts (4)" } },
        { "{\"model_type\": \"deepseek_v3\", \"kv_lora_rank\": null}", MLA_ERR_FORMAT,
          { "config.json", "kv_lora_rank", "got null" } },
        /* sizes bounded before any work: checked arithmetic, numbers in the message */
        { "{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 1000000}", MLA_ERR_FORMAT,
          { "config.json", "parameters in", "expected at most 2199023255552" } },
        { "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 2147483647}", MLA_ERR_FORMAT,
          { "config.json", "hidden_size", "expected at most 16777216" } },
        { "{\"model_type\": \"deepseek_v3\", \"n_routed_experts\": 16777216, \"n_group\": 1, \"topk_group\": 1}",
          MLA_ERR_FORMAT, { "config.json", "parameters in", "tensors" } },
        { "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 7168,", MLA_ERR_FORMAT,
          { "config.json", "invalid JSON", "line" } },
        { "[1, 2]", MLA_ERR_FORMAT, { "config.json", "object", "array" } },
        { "{\"model_type\": \"deepseek_v3\", \"hidden_size\": 1, \"hidden_size\": 2}", MLA_ERR_FORMAT,
          { "config.json", "hidden_size", "duplicate" } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mla_config c;
        char buf[4096];
        mla_clear_error();
        mla_status st = mla_config_from_json(with_dims(cases[i].json, buf, sizeof buf), "config.json", &c);
        if (st != cases[i].st) fail_msg("case %zu: status %d, expected %d (%s)", i, st, cases[i].st, mla_last_error());
        for (int k = 0; k < 3; k++)
            if (!strstr(mla_last_error(), cases[i].needle[k]))
                fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, mla_last_error(), cases[i].needle[k]);
    }
}

static void assert_config_equal(const mla_config *a, const mla_config *b)
{
    assert_string_equal(a->model_type, b->model_type);
#define EQ(f) assert_int_equal(a->f, b->f)
#define EQD(f) assert_true(a->f == b->f)
    EQ(vocab_size); EQ(hidden_size); EQ(num_hidden_layers); EQ(num_attention_heads); EQ(q_lora_rank);
    EQ(kv_lora_rank); EQ(qk_nope_head_dim); EQ(qk_rope_head_dim); EQ(v_head_dim); EQ(intermediate_size);
    EQ(moe_intermediate_size); EQ(first_k_dense_replace); EQ(moe_layer_freq); EQ(n_routed_experts);
    EQ(n_shared_experts); EQ(num_experts_per_tok); EQ(n_group); EQ(topk_group); EQ(scoring_func);
    EQ(topk_method); EQ(norm_topk_prob); EQ(has_e_score_correction_bias); EQD(routed_scaling_factor);
    EQD(rms_norm_eps); EQD(rope_theta); EQ(max_position_embeddings); EQ(has_yarn); EQ(tie_word_embeddings);
    EQ(fp8_weights);
    if (a->has_yarn) {
        EQD(rope_factor); EQ(rope_original_max_pos); EQD(beta_fast); EQD(beta_slow); EQD(mscale);
        EQD(mscale_all_dim);
    }
    if (a->fp8_weights) EQ(weight_block_size);
#undef EQ
#undef EQD
}

static void test_presets_roundtrip(void **state)
{
    (void)state;
    static const char *names[] = { "deepseek-v3", "deepseek-v2-lite", "kimi-k2", "tiny-v2-lite", "tiny-v3",
                                   "asym-v3", "asym-v2-lite", "v3-layer", "v2-lite-layer" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        mla_config a, b;
        assert_int_equal(mla_config_preset(names[i], &a), MLA_OK);
        if (mla_config_validate(&a, names[i])) fail_msg("%s: %s", names[i], mla_last_error());
        char *js = mla_config_to_json(&a);
        assert_non_null(js);
        if (mla_config_from_json(js, names[i], &b)) fail_msg("%s: %s\n%s", names[i], mla_last_error(), js);
        assert_config_equal(&a, &b);
        free(js);
    }
    mla_config c;
    assert_int_equal(mla_config_preset("deepseek-v3", &c), MLA_OK);
    assert_true(fabs(mla_config_softmax_scale(&c) - 0.1352338) < 1e-7);
    assert_int_equal(c.fp8_weights, 1);
    assert_int_equal(mla_config_preset("deepseek-v2-lite", &c), MLA_OK);
    assert_true(fabs(mla_config_softmax_scale(&c) - 0.1147214) < 1e-7);
    assert_int_equal(mla_config_preset("kimi-k2", &c), MLA_OK);
    assert_true(fabs(mla_config_softmax_scale(&c) - 0.1308608) < 1e-7);
    check_ramp(&c, 19, 20);
    assert_int_equal(mla_config_preset("gpt-2", &c), MLA_ERR_NOT_FOUND);
    assert_non_null(strstr(mla_last_error(), "gpt-2"));
}

static void expect_shape(const mla_config *c, const char *name, int nd, int64_t a, int64_t b)
{
    int got_nd;
    int64_t s[6];
    if (mla_config_tensor_shape(c, name, &got_nd, s)) fail_msg("%s: unknown", name);
    assert_int_equal(got_nd, nd);
    assert_int_equal(s[0], a);
    if (nd == 2) assert_int_equal(s[1], b);
}

static void expect_unknown(const mla_config *c, const char *name)
{
    int nd;
    int64_t s[6];
    if (mla_config_tensor_shape(c, name, &nd, s) == 0) fail_msg("%s: should be unknown", name);
}

static void test_tensor_shapes(void **state)
{
    (void)state;
    mla_config c;
    assert_int_equal(mla_config_preset("tiny-v3", &c), MLA_OK);
    expect_shape(&c, "model.embed_tokens.weight", 2, 512, 256);
    expect_shape(&c, "lm_head.weight", 2, 512, 256);
    expect_shape(&c, "model.norm.weight", 1, 256, 0);
    expect_shape(&c, "model.layers.0.self_attn.q_a_proj.weight", 2, 192, 256);
    expect_shape(&c, "model.layers.0.self_attn.q_a_layernorm.weight", 1, 192, 0);
    expect_shape(&c, "model.layers.0.self_attn.q_b_proj.weight", 2, 8 * 48, 192);
    expect_shape(&c, "model.layers.2.self_attn.kv_a_proj_with_mqa.weight", 2, 256 + 16, 256);
    expect_shape(&c, "model.layers.2.self_attn.kv_a_layernorm.weight", 1, 256, 0);
    expect_shape(&c, "model.layers.2.self_attn.kv_b_proj.weight", 2, 8 * 64, 256);
    expect_shape(&c, "model.layers.2.self_attn.o_proj.weight", 2, 256, 8 * 32);
    expect_shape(&c, "model.layers.0.mlp.down_proj.weight", 2, 256, 384);
    expect_shape(&c, "model.layers.1.mlp.gate.weight", 2, 16, 256);
    expect_shape(&c, "model.layers.1.mlp.gate.e_score_correction_bias", 1, 16, 0);
    expect_shape(&c, "model.layers.1.mlp.experts.15.up_proj.weight", 2, 96, 256);
    expect_shape(&c, "model.layers.1.mlp.experts.15.down_proj.weight", 2, 256, 96);
    expect_shape(&c, "model.layers.1.mlp.shared_experts.gate_proj.weight", 2, 96, 256);
    expect_shape(&c, "model.layers.1.self_attn.q_b_proj.weight_scale_inv", 2, 3, 2);
    expect_unknown(&c, "model.layers.3.input_layernorm.weight");
    expect_unknown(&c, "model.layers.1.mlp.experts.16.up_proj.weight");
    expect_unknown(&c, "model.layers.1.mlp.experts.01.up_proj.weight");
    expect_unknown(&c, "model.layers.0.self_attn.q_proj.weight");
    expect_unknown(&c, "model.layers.0.mlp.gate.weight");
    expect_unknown(&c, "model.layers.1.mlp.down_proj.weight");
    expect_unknown(&c, "model.layers.1.input_layernorm.weight_scale_inv");
    expect_unknown(&c, "model.norm.bias");
    assert_int_equal(mla_config_preset("tiny-v2-lite", &c), MLA_OK);
    expect_shape(&c, "model.layers.0.self_attn.q_proj.weight", 2, 4 * 48, 128);
    expect_shape(&c, "model.layers.1.mlp.shared_experts.down_proj.weight", 2, 128, 2 * 64);
    expect_unknown(&c, "model.layers.1.mlp.gate.e_score_correction_bias");
    expect_unknown(&c, "model.layers.0.self_attn.q_a_proj.weight");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v3_json),
        cmocka_unit_test(test_v3_yarn_ramp),
        cmocka_unit_test(test_v2_lite_json),
        cmocka_unit_test(test_kimi_rope_parameters),
        cmocka_unit_test(test_rope_parameters_default),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_presets_roundtrip),
        cmocka_unit_test(test_tensor_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
