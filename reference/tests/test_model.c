/* test_model.c: built-in models (shapes, bf16 values, determinism), writing and reloading HF
 * folders (single file, shards, BF16/F32, a hand-made F8_E4M3 + weight_scale_inv checkpoint), and
 * every malformed-checkpoint case the loader must reject with a clear message. Checkpoints are
 * written into a fresh temporary folder, removed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mla_model/model.h"
#include "mla/quant.h"

static char g_root[256];

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_root, sizeof g_root, "/tmp/mla_test_model_XXXXXX");
    return mkdtemp(g_root) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return nftw(g_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* g_root/name, created. */
static const char *subdir(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", g_root, name);
    mkdir(buf, 0777);
    return buf;
}

static void write_bytes(const char *dir, const char *name, const void *p, size_t n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* A safetensors file: 8-byte length, header text, data. */
static void write_st(const char *dir, const char *name, const char *header, const void *data, size_t dlen)
{
    size_t hl = strlen(header);
    size_t n = 8 + hl + dlen;
    uint8_t *b = calloc(1, n);
    assert_non_null(b);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    if (dlen) memcpy(b + 8 + hl, data, dlen);
    write_bytes(dir, name, b, n);
    free(b);
}

static void write_config(const char *dir, const mla_config *c)
{
    char *js = mla_config_to_json(c);
    assert_non_null(js);
    write_bytes(dir, "config.json", js, strlen(js));
    free(js);
}

static mla_model *open_ok(const char *name)
{
    mla_model *m = NULL;
    mla_status st = mla_model_open(name, &m);
    if (st != MLA_OK) fail_msg("open %s: %s", name, mla_last_error());
    return m;
}

static const mla_tensor *tensor_ok(mla_model *m, const char *name)
{
    const mla_tensor *t = NULL;
    if (mla_model_tensor(m, name, &t)) fail_msg("tensor %s: %s", name, mla_last_error());
    return t;
}

static double *f64_ok(mla_model *m, const char *name, int64_t *n)
{
    double *v = NULL;
    if (mla_model_tensor_f64(m, name, &v, n)) fail_msg("tensor_f64 %s: %s", name, mla_last_error());
    return v;
}

static int ends_with(const char *s, const char *sfx)
{
    size_t n = strlen(s), k = strlen(sfx);
    return n >= k && !strcmp(s + n - k, sfx);
}

/* ---- built-in models ----------------------------------------------------------------------- */

static void test_builtin_list(void **state)
{
    (void)state;
    const char *const *names = mla_builtin_models();
    const char *want[] = { "tiny-v2-lite", "tiny-v3", "asym-v3", "asym-v2-lite", "v3-layer", "v2-lite-layer" };
    int n = 0;
    while (names[n]) n++;
    assert_int_equal(n, 6);
    for (int i = 0; i < 6; i++) assert_string_equal(names[i], want[i]);
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v9", &m), MLA_ERR_NOT_FOUND);
    assert_null(m);
    assert_non_null(strstr(mla_last_error(), "tiny-v9"));
}

/* Every tensor has its config shape and the init's statistics; values are bf16 (bias f32). */
static void check_builtin(const char *name, int expect_count)
{
    mla_model *m = open_ok(name);
    const mla_config *c = mla_model_config(m);
    assert_string_equal(mla_model_source(m), name);
    assert_int_equal(mla_model_tensor_count(m), expect_count);
    for (int i = 0; i < mla_model_tensor_count(m); i++) {
        const char *tn = mla_model_tensor_name(m, i);
        if (i > 0) assert_true(strcmp(mla_model_tensor_name(m, i - 1), tn) < 0);
        const mla_tensor *t = tensor_ok(m, tn);
        int nd;
        int64_t shape[MLA_MAX_DIMS];
        assert_int_equal(mla_config_tensor_shape(c, tn, &nd, shape), 0);
        assert_int_equal(t->ndim, nd);
        for (int d = 0; d < nd; d++) assert_int_equal(t->shape[d], shape[d]);
        int is_bias = ends_with(tn, "e_score_correction_bias");
        assert_int_equal(t->dtype, is_bias ? MLA_F32 : MLA_BF16);
        int64_t n;
        double *v = f64_ok(m, tn, &n);
        assert_int_equal(n, mla_tensor_numel(t));
        double sum = 0, sq = 0;
        for (int64_t k = 0; k < n; k++) {
            assert_true(isfinite(v[k]));
            if (is_bias) assert_true(mla_round_f32(v[k]) == v[k]);
            else assert_true(mla_round_bf16(v[k]) == v[k]);
            sum += v[k];
        }
        double mean = sum / (double)n;
        for (int64_t k = 0; k < n; k++) sq += (v[k] - mean) * (v[k] - mean);
        double sd = sqrt(sq / (double)n), want_mean = 0, want_sd;
        if (is_bias) want_sd = 0.05;
        else if (nd == 1) {
            want_mean = 1.0;
            want_sd = 0.1;
        } else if (!strcmp(tn, "model.embed_tokens.weight")) want_sd = 1.0;
        else want_sd = 1.0 / sqrt((double)shape[1]);
        if (strstr(tn, "mlp.gate.weight")) want_sd *= 4.0; /* decisive routers (builtin.c) */
        /* n >= 16 samples; these bounds are ~5 sigma of the sample statistics */
        double tol_sd = want_sd * 5.0 / sqrt((double)n) * 1.5 + want_sd * 0.01;
        double tol_mean = want_sd * 5.0 / sqrt((double)n);
        if (fabs(sd - want_sd) > tol_sd || fabs(mean - want_mean) > tol_mean)
            fail_msg("%s %s: mean %g sd %g, expected %g / %g", name, tn, mean, sd, want_mean, want_sd);
        free(v);
    }
    const mla_tensor *t;
    assert_int_equal(mla_model_tensor(m, "model.layers.9.mlp.gate.weight", &t), MLA_ERR_NOT_FOUND);
    assert_non_null(strstr(mla_last_error(), "model.layers.9.mlp.gate.weight"));
    mla_model_free(m);
}

static void test_builtin_tiny(void **state)
{
    (void)state;
    /* globals 3; attention 9 (v3: q_a, q_a_norm, q_b) or 7 (v2-lite: q_proj) incl. 2 norms;
     * dense MLP 3; MoE: gate (+bias) + 3 per expert + 3 shared */
    check_builtin("tiny-v3", 3 + (9 + 3) + 2 * (9 + 2 + 16 * 3 + 3));
    check_builtin("tiny-v2-lite", 3 + (7 + 3) + 2 * (7 + 1 + 8 * 3 + 3));
}

static int is_pow2(int x) { return x > 0 && !(x & (x - 1)); }

/* The asym models exist to expose index mistakes: the dimensions an engine could confuse with one
 * another must all differ (and the sizes with free choice must not be powers of two), the YaRN
 * window must be crossed by a 130-token prompt, and v2-lite's cos/sin factor must not be 1. */
static void check_asym(const char *name)
{
    mla_config c;
    assert_int_equal(mla_config_preset(name, &c), MLA_OK);
    int H = c.num_attention_heads, P = c.qk_nope_head_dim, R = c.qk_rope_head_dim, V = c.v_head_dim;
    int dims[] = { P, V, R, c.kv_lora_rank, c.hidden_size, H, H * (P + V), H * (P + R), H * V, P + R,
                   c.intermediate_size, c.moe_intermediate_size, c.vocab_size, c.q_lora_rank };
    int nd = (int)(sizeof dims / sizeof dims[0]) - (c.q_lora_rank ? 0 : 1);
    for (int i = 0; i < nd; i++)
        for (int j = i + 1; j < nd; j++)
            if (dims[i] == dims[j]) fail_msg("%s: dimensions %d and %d are both %d", name, i, j, dims[i]);
    int free_sizes[] = { P, V, R, H, c.hidden_size, c.vocab_size, c.intermediate_size, c.moe_intermediate_size,
                         c.n_routed_experts, c.num_experts_per_tok, c.n_shared_experts, P + R, P + V };
    for (size_t i = 0; i < sizeof free_sizes / sizeof free_sizes[0]; i++)
        if (is_pow2(free_sizes[i])) fail_msg("%s: size %zu is a power of two (%d)", name, i, free_sizes[i]);
    int counts[] = { c.n_routed_experts, c.num_experts_per_tok, c.n_shared_experts, c.n_group, c.topk_group };
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (counts[i] == counts[j] && counts[i] > 1) fail_msg("%s: expert counts %d and %d equal", name, i, j);
    assert_int_equal(c.kv_lora_rank % 128, 0); /* fp8_ds_mla tiles */
    assert_true(c.kv_lora_rank % 256 != 0);
    assert_true(c.has_yarn && c.rope_original_max_pos < 130);
    assert_true(c.max_position_embeddings == (int)(c.rope_factor * c.rope_original_max_pos));
}

static void test_builtin_asym(void **state)
{
    (void)state;
    check_asym("asym-v3");
    check_asym("asym-v2-lite");
    check_builtin("asym-v3", 3 + (9 + 3) + 2 * (9 + 2 + 21 * 3 + 3));
    check_builtin("asym-v2-lite", 3 + (7 + 3) + 2 * (7 + 1 + 13 * 3 + 3));
    mla_config c;
    assert_int_equal(mla_config_preset("asym-v2-lite", &c), MLA_OK);
    assert_true(fabs(mla_config_rope_attn_factor(&c) - 1.0) > 0.05);
    assert_int_equal(c.q_lora_rank, 0);
    assert_int_equal(mla_config_preset("asym-v3", &c), MLA_OK);
    assert_true(c.q_lora_rank > 0 && c.n_group > 1 && c.topk_method == MLA_TOPK_NOAUX_TC);
}

static void test_builtin_v3_layer(void **state)
{
    (void)state;
    mla_model *m = open_ok("v3-layer");
    const mla_config *c = mla_model_config(m);
    assert_int_equal(c->num_attention_heads, 128);
    assert_int_equal(c->q_lora_rank, 1536);
    assert_int_equal(c->kv_lora_rank, 512);
    assert_int_equal(c->n_routed_experts, 0);
    assert_true(fabs(mla_config_softmax_scale(c) - 0.1352338) < 1e-7);
    assert_int_equal(mla_model_tensor_count(m), 3 + 9 + 3);
    const mla_tensor *t = tensor_ok(m, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight");
    assert_int_equal(t->shape[0], 576);
    assert_int_equal(t->shape[1], 7168);
    /* 63 chunks: generated by several threads, yet the same bytes and statistics every time */
    mla_model *m2 = open_ok("v3-layer");
    const mla_tensor *t2 = tensor_ok(m2, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight");
    assert_memory_equal(t->data, t2->data, mla_tensor_nbytes(t));
    int64_t n;
    double *v = f64_ok(m, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", &n);
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < n; k++) sum += v[k];
    for (int64_t k = 0; k < n; k++) sq += (v[k] - sum / n) * (v[k] - sum / n);
    assert_true(fabs(sum / n) < 5.0 / sqrt(7168.0) / sqrt((double)n));
    assert_true(fabs(sqrt(sq / n) * sqrt(7168.0) - 1.0) < 0.01);
    free(v);
    mla_model_free(m2);
    t = tensor_ok(m, "model.layers.0.self_attn.q_b_proj.weight");
    assert_int_equal(t->shape[0], 128 * 192);
    assert_int_equal(t->shape[1], 1536);
    mla_model_free(m);
}

/* Same seed -> same bytes, whatever order the tensors are asked for in. */
static void test_builtin_deterministic(void **state)
{
    (void)state;
    mla_model *a = open_ok("tiny-v3"), *b = open_ok("tiny-v3");
    int n = mla_model_tensor_count(a);
    for (int i = n - 1; i >= 0; i--) tensor_ok(b, mla_model_tensor_name(b, i));
    for (int i = 0; i < n; i++) {
        const char *tn = mla_model_tensor_name(a, i);
        const mla_tensor *x = tensor_ok(a, tn), *y = tensor_ok(b, tn);
        assert_int_equal(mla_tensor_nbytes(x), mla_tensor_nbytes(y));
        assert_memory_equal(x->data, y->data, mla_tensor_nbytes(x));
    }
    char ha[17], hb[17], hc[17];
    assert_int_equal(mla_model_weights_hash(a, ha), MLA_OK);
    assert_int_equal(mla_model_weights_hash(b, hb), MLA_OK);
    assert_string_equal(ha, hb);
    assert_int_equal(strlen(ha), 16);
    /* different tensors get different streams */
    const mla_tensor *u = tensor_ok(a, "model.layers.1.mlp.experts.0.up_proj.weight");
    const mla_tensor *g = tensor_ok(a, "model.layers.1.mlp.experts.0.gate_proj.weight");
    assert_true(memcmp(u->data, g->data, mla_tensor_nbytes(u)) != 0);
    mla_model *c = open_ok("tiny-v2-lite");
    assert_int_equal(mla_model_weights_hash(c, hc), MLA_OK);
    assert_string_not_equal(ha, hc);
    mla_model_free(a);
    mla_model_free(b);
    mla_model_free(c);
}

/* ---- write_hf and reload ------------------------------------------------------------------- */

/* b holds a's tensors with the same values (and, if same_dtype, the same dtype and bytes). */
static void assert_same_tensors(mla_model *a, mla_model *b, int same_dtype)
{
    assert_int_equal(mla_model_tensor_count(a), mla_model_tensor_count(b));
    for (int i = 0; i < mla_model_tensor_count(a); i++) {
        const char *tn = mla_model_tensor_name(a, i);
        assert_string_equal(tn, mla_model_tensor_name(b, i));
        const mla_tensor *x = tensor_ok(a, tn), *y = tensor_ok(b, tn);
        assert_int_equal(x->ndim, y->ndim);
        for (int d = 0; d < x->ndim; d++) assert_int_equal(x->shape[d], y->shape[d]);
        if (same_dtype) {
            assert_int_equal(x->dtype, y->dtype);
            assert_memory_equal(x->data, y->data, mla_tensor_nbytes(x));
        }
        int64_t n1, n2;
        double *v1 = f64_ok(a, tn, &n1), *v2 = f64_ok(b, tn, &n2);
        assert_int_equal(n1, n2);
        for (int64_t k = 0; k < n1; k++)
            if (v1[k] != v2[k]) fail_msg("%s[%lld]: %.17g vs %.17g", tn, (long long)k, v1[k], v2[k]);
        free(v1);
        free(v2);
    }
}

static void test_write_roundtrip(void **state)
{
    (void)state;
    mla_model *m = open_ok("tiny-v3");
    char h0[17], h1[17];
    assert_int_equal(mla_model_weights_hash(m, h0), MLA_OK);
    static const mla_dtype dts[] = { MLA_F64, MLA_BF16, MLA_F32 };
    static const char *dirs[] = { "rt_src", "rt_bf16", "rt_f32" };
    for (int k = 0; k < 3; k++) {
        const char *dir = subdir(dirs[k]);
        if (mla_model_write_hf(m, dir, dts[k], 0)) fail_msg("write %s: %s", dir, mla_last_error());
        mla_model *r = open_ok(dir);
        assert_string_equal(mla_model_source(r), dir);
        const mla_config *c = mla_model_config(r);
        assert_int_equal(c->q_lora_rank, 192);
        assert_int_equal(c->n_routed_experts, 16);
        assert_true(c->rope_factor == 40.0);
        assert_int_equal(c->rope_original_max_pos, 1024);
        /* source dtype and BF16 leave tiny-v3 (bf16 weights, f32 bias) byte-identical */
        assert_same_tensors(m, r, dts[k] != MLA_F32);
        assert_int_equal(mla_model_weights_hash(r, h1), MLA_OK);
        if (dts[k] != MLA_F32) assert_string_equal(h0, h1);
        else {
            assert_string_not_equal(h0, h1);
            assert_int_equal(tensor_ok(r, "model.norm.weight")->dtype, MLA_F32);
        }
        mla_model_free(r);
    }
    mla_model_free(m);
}

static void test_write_sharded(void **state)
{
    (void)state;
    mla_model *m = open_ok("tiny-v2-lite");
    const char *dir = subdir("sharded");
    if (mla_model_write_hf(m, dir, MLA_BF16, 64 * 1024)) fail_msg("write: %s", mla_last_error());
    char path[600];
    struct stat sb;
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    assert_int_equal(stat(path, &sb), 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_not_equal(stat(path, &sb), 0);
    int shards = 0;
    /* the embedding alone is 96 KiB, so there are several shards; count them via the index */
    char *text = NULL;
    {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        text = calloc(1, 1 << 20);
        assert_non_null(text);
        size_t n = fread(text, 1, (1 << 20) - 1, f);
        fclose(f);
        assert_true(n > 0);
    }
    for (int i = 1; i < 100; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "model-%05d-of-", i);
        if (strstr(text, nm)) shards = i;
    }
    free(text);
    assert_true(shards >= 3);
    mla_model *r = open_ok(dir);
    char h0[17], h1[17];
    assert_int_equal(mla_model_weights_hash(m, h0), MLA_OK);
    assert_int_equal(mla_model_weights_hash(r, h1), MLA_OK);
    assert_string_equal(h0, h1);
    assert_same_tensors(m, r, 1);
    mla_model_free(r);
    mla_model_free(m);
}

/* ---- fp8 block-scaled checkpoint ----------------------------------------------------------- */

static int is_fp8_linear(const char *name)
{
    return ends_with(name, "_proj.weight") || ends_with(name, "_proj_with_mqa.weight");
}

static const char *shape_json(const mla_tensor *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < t->ndim; d++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    snprintf(buf + k, n - k, "]");
    return buf;
}

/* Writes the model with every projection as F8_E4M3 + weight_scale_inv (mla_block_quant, 128x128),
 * the rest (embeddings, norms, router gates, bias) in their source bytes. */
static void write_fp8_checkpoint(mla_model *m, const char *dir)
{
    mla_config cfg = *mla_model_config(m);
    cfg.fp8_weights = 1;
    cfg.weight_block_size = 128;
    write_config(dir, &cfg);
    char *hdr = NULL, *data = NULL, sh[96];
    size_t hl = 0, dl = 0;
    FILE *h = open_memstream(&hdr, &hl), *d = open_memstream(&data, &dl);
    assert_non_null(h);
    assert_non_null(d);
    fprintf(h, "{\"__metadata__\": {\"format\": \"pt\"}");
    for (int i = 0; i < mla_model_tensor_count(m); i++) {
        const char *tn = mla_model_tensor_name(m, i);
        const mla_tensor *t = tensor_ok(m, tn);
        long off = ftell(d);
        if (!is_fp8_linear(tn)) {
            fwrite(t->data, 1, mla_tensor_nbytes(t), d);
            fprintf(h, ", \"%s\": {\"dtype\": \"%s\", \"shape\": %s, \"data_offsets\": [%ld, %ld]}", tn,
                    t->dtype == MLA_F32 ? "F32" : "BF16", shape_json(t, sh, sizeof sh), off, ftell(d));
            continue;
        }
        int64_t r = t->shape[0], c = t->shape[1], sr = (r + 127) / 128, sc = (c + 127) / 128, n;
        double *w = f64_ok(m, tn, &n);
        uint8_t *code = malloc((size_t)n);
        float *s = malloc((size_t)(sr * sc) * sizeof *s);
        assert_non_null(code);
        assert_non_null(s);
        mla_block_quant(w, r, c, 128, code, s);
        fwrite(code, 1, (size_t)n, d);
        fprintf(h, ", \"%s\": {\"dtype\": \"F8_E4M3\", \"shape\": %s, \"data_offsets\": [%ld, %ld]}", tn,
                shape_json(t, sh, sizeof sh), off, ftell(d));
        off = ftell(d);
        fwrite(s, sizeof *s, (size_t)(sr * sc), d);
        fprintf(h, ", \"%s_scale_inv\": {\"dtype\": \"F32\", \"shape\": [%lld, %lld], \"data_offsets\": [%ld, %ld]}",
                tn, (long long)sr, (long long)sc, off, ftell(d));
        free(w);
        free(code);
        free(s);
    }
    fprintf(h, "}");
    fclose(h);
    fclose(d);
    write_st(dir, "model.safetensors", hdr, data, dl);
    free(hdr);
    free(data);
}

static void test_fp8_checkpoint(void **state)
{
    (void)state;
    mla_model *m = open_ok("tiny-v3");
    const char *dir = subdir("fp8");
    write_fp8_checkpoint(m, dir);
    mla_model *q = open_ok(dir);
    assert_int_equal(mla_model_config(q)->fp8_weights, 1);
    int n_fp8 = 0;
    for (int i = 0; i < mla_model_tensor_count(m); i++) {
        const char *tn = mla_model_tensor_name(m, i);
        int64_t n, nq;
        double *w = f64_ok(m, tn, &n), *v = f64_ok(q, tn, &nq);
        assert_int_equal(n, nq);
        const mla_tensor *t = tensor_ok(q, tn);
        if (!is_fp8_linear(tn)) {
            assert_memory_equal(w, v, (size_t)n * sizeof *w);
            free(w);
            free(v);
            continue;
        }
        n_fp8++;
        assert_int_equal(t->dtype, MLA_E4M3FN);
        char sn[200];
        snprintf(sn, sizeof sn, "%s_scale_inv", tn);
        const mla_tensor *s = tensor_ok(q, sn);
        assert_int_equal(s->dtype, MLA_F32);
        int64_t cols = t->shape[1], sc = s->shape[1];
        const uint8_t *code = t->data;
        const float *scale = s->data;
        for (int64_t k = 0; k < n; k++) {
            int64_t r = k / cols, c = k % cols;
            float sk = scale[(r / 128) * sc + c / 128];
            /* weight_dequant: code * scale_inv in f32 (mla-spec.md §e.2) */
            double want = (double)(mla_e4m3fn_to_f32(code[k]) * sk);
            if (v[k] != want) fail_msg("%s[%lld]: %.17g, expected %.17g", tn, (long long)k, v[k], want);
            /* and close to the bf16 original: e4m3 keeps 3 mantissa bits (half-ulp 2^-4 relative),
             * subnormal step 2^-9 in units of the block scale */
            if (fabs(v[k] - w[k]) > fabs(w[k]) * 0x1p-4 + (double)sk * 0x1p-10)
                fail_msg("%s[%lld]: dequantized %.9g far from %.9g", tn, (long long)k, v[k], w[k]);
        }
        free(w);
        free(v);
    }
    assert_int_equal(n_fp8, 3 * 5 + 3 + 2 * (16 * 3 + 3)); /* 5 attention per layer, dense 3, MoE 51 */
    assert_int_equal(mla_model_tensor_count(q), mla_model_tensor_count(m) + n_fp8);

    /* source-dtype rewrite keeps codes and scales: same hash */
    char h0[17], h1[17];
    const char *d2 = subdir("fp8_copy");
    if (mla_model_write_hf(q, d2, MLA_F64, 0)) fail_msg("write: %s", mla_last_error());
    mla_model *q2 = open_ok(d2);
    assert_int_equal(mla_model_weights_hash(q, h0), MLA_OK);
    assert_int_equal(mla_model_weights_hash(q2, h1), MLA_OK);
    assert_string_equal(h0, h1);
    assert_same_tensors(q, q2, 1);
    mla_model_free(q2);

    /* BF16 rewrite dequantizes and drops the scales and quantization_config */
    const char *d3 = subdir("fp8_bf16");
    if (mla_model_write_hf(q, d3, MLA_BF16, 0)) fail_msg("write: %s", mla_last_error());
    mla_model *b = open_ok(d3);
    assert_int_equal(mla_model_config(b)->fp8_weights, 0);
    assert_int_equal(mla_model_tensor_count(b), mla_model_tensor_count(m));
    const char *wn = "model.layers.1.self_attn.q_b_proj.weight";
    assert_int_equal(tensor_ok(b, wn)->dtype, MLA_BF16);
    int64_t n1, n2;
    double *v1 = f64_ok(q, wn, &n1), *v2 = f64_ok(b, wn, &n2);
    assert_int_equal(n1, n2);
    for (int64_t k = 0; k < n1; k++) assert_true(v2[k] == mla_round_bf16(v1[k]));
    free(v1);
    free(v2);
    mla_model_free(b);
    mla_model_free(q);
    mla_model_free(m);
}

/* ---- malformed checkpoints ------------------------------------------------------------------ */

/* 256 bytes of bf16 ones: model.norm.weight of tiny-v2-lite is [128]. */
static uint8_t g_data[65536];

typedef struct {
    const char *dir;
    mla_status want;
    const char *needle[3];
} expect;

static void expect_open(const expect *e)
{
    mla_model *m = NULL;
    mla_clear_error();
    mla_status st = mla_model_open(e->dir, &m);
    if (st != e->want) fail_msg("%s: status %d (%s), expected %d", e->dir, st, mla_last_error(), e->want);
    assert_null(m);
    if (getenv("MLA_TEST_VERBOSE")) printf("    %s\n", mla_last_error());
    for (int k = 0; k < 3 && e->needle[k]; k++)
        if (!strstr(mla_last_error(), e->needle[k]))
            fail_msg("%s: message \"%s\" lacks \"%s\"", e->dir, mla_last_error(), e->needle[k]);
}

/* A folder with tiny-v2-lite's config.json and one model.safetensors of the given header/data. */
static const char *bad_folder(const char *name, const char *header, size_t dlen)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s", subdir(name));
    mla_config c;
    assert_int_equal(mla_config_preset("tiny-v2-lite", &c), MLA_OK);
    write_config(dir, &c);
    if (header) write_st(dir, "model.safetensors", header, g_data, dlen);
    return dir;
}

#define NORM "\"model.norm.weight\""

static void test_malformed_safetensors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof g_data / 2; i++) {
        g_data[2 * i] = 0x80; /* bf16 1.0 = 0x3F80 */
        g_data[2 * i + 1] = 0x3F;
    }
    struct {
        const char *name, *header;
        size_t dlen;
        mla_status want;
        const char *needle[3];
    } cases[] = {
        { "non_object", "[1, 2]", 0, MLA_ERR_FORMAT, { "model.safetensors", "header", "JSON object" } },
        { "bad_json", "{\"model.norm.weight\": {\"dtype\": ", 0, MLA_ERR_FORMAT,
          { "model.safetensors", "header", "invalid JSON" } },
        { "no_dtype", "{" NORM ": {\"shape\": [128], \"data_offsets\": [0, 256]}}", 256, MLA_ERR_FORMAT,
          { "model.safetensors", "model.norm.weight", "field dtype" } },
        { "bad_dtype", "{" NORM ": {\"dtype\": \"Q4_K\", \"shape\": [128], \"data_offsets\": [0, 256]}}", 256,
          MLA_ERR_FORMAT, { "model.safetensors", "field dtype", "Q4_K" } },
        { "bad_shape", "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [-128], \"data_offsets\": [0, 256]}}", 256,
          MLA_ERR_FORMAT, { "model.safetensors", "model.norm.weight", "field shape" } },
        { "no_offsets", "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128]}}", 256, MLA_ERR_FORMAT,
          { "model.safetensors", "model.norm.weight", "field data_offsets" } },
        { "offsets_range", "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [0, 256]}}", 200,
          MLA_ERR_FORMAT, { "model.safetensors", "field data_offsets", "out of range" } },
        { "begin_gt_end", "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [256, 0]}}", 256,
          MLA_ERR_FORMAT, { "model.safetensors", "field data_offsets", "begin 256 > end 0" } },
        { "byte_size", "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [0, 254]}}", 256,
          MLA_ERR_FORMAT, { "model.safetensors", "model.norm.weight", "expected 128 elements x 2 bytes" } },
        { "overlap",
          "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [0, 256]},"
          " \"model.layers.0.input_layernorm.weight\": {\"dtype\": \"BF16\", \"shape\": [128],"
          " \"data_offsets\": [128, 384]}}",
          384, MLA_ERR_FORMAT, { "model.safetensors", "field data_offsets", "overlap" } },
        { "dup_key",
          "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [0, 256]}, " NORM
          ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [0, 256]}}",
          256, MLA_ERR_FORMAT, { "model.safetensors", "header", "duplicate" } },
        { "shape_config", "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [64, 2], \"data_offsets\": [0, 256]}}", 256,
          MLA_ERR_SHAPE, { "model.safetensors", "model.norm.weight", "expected [128]" } },
        { "int_dtype", "{" NORM ": {\"dtype\": \"I32\", \"shape\": [128], \"data_offsets\": [0, 512]}}", 512,
          MLA_ERR_FORMAT, { "model.safetensors", "model.norm.weight", "field dtype" } },
        { "missing", "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [0, 256]}}", 256,
          MLA_ERR_FORMAT, { "config.json", "field num_hidden_layers", "safetensors files hold: 128 in 1 tensors" } },
        { "fp8_no_scale",
          "{\"model.layers.0.self_attn.o_proj.weight\": {\"dtype\": \"F8_E4M3\", \"shape\": [128, 128],"
          " \"data_offsets\": [0, 16384]}}",
          16384, MLA_ERR_NOT_FOUND, { "model.safetensors", "o_proj.weight_scale_inv", "F8_E4M3" } },
        { "fp8_bad_scale",
          "{\"model.layers.0.self_attn.o_proj.weight\": {\"dtype\": \"F8_E4M3\", \"shape\": [128, 128],"
          " \"data_offsets\": [0, 16384]}, \"model.layers.0.self_attn.o_proj.weight_scale_inv\":"
          " {\"dtype\": \"F32\", \"shape\": [2, 1], \"data_offsets\": [16384, 16392]}}",
          16392, MLA_ERR_SHAPE, { "model.safetensors", "o_proj.weight_scale_inv", "field shape" } },
        { "meta_bad", "{\"__metadata__\": [1]}", 0, MLA_ERR_FORMAT, { "model.safetensors", "__metadata__", "object" } },
        /* an empty header: no entries, so no NULL may reach qsort/bsearch (UBSan) */
        { "empty_header", "{}", 0, MLA_ERR_FORMAT, { "config.json", "1115776 parameters in 83 tensors", "hold: 0 in 0" } },
        { "e5m2", "{" NORM ": {\"dtype\": \"F8_E5M2\", \"shape\": [128], \"data_offsets\": [0, 128]}}", 128,
          MLA_ERR_FORMAT, { "model.safetensors", "model.norm.weight", "F8_E5M2 is not supported" } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect e = { bad_folder(cases[i].name, cases[i].header, cases[i].dlen), cases[i].want,
                     { cases[i].needle[0], cases[i].needle[1], cases[i].needle[2] } };
        expect_open(&e);
    }

    /* NaN / Inf in a weight: an error naming the tensor and the first index */
    uint8_t w[256];
    memcpy(w, g_data, sizeof w);
    w[2 * 37] = 0xC0; /* bf16 0x7FC0 = NaN at index 37 */
    w[2 * 37 + 1] = 0x7F;
    const char *hn = "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [0, 256]}}";
    const char *nd = bad_folder("nan_weight", NULL, 0);
    write_st(nd, "model.safetensors", hn, w, sizeof w);
    expect_open(&(expect){ nd, MLA_ERR_FORMAT, { "model.norm.weight", "NaN at flat index 37", "finite" } });
    w[2 * 37] = 0x80; /* 0xFF80 = -Inf */
    w[2 * 37 + 1] = 0xFF;
    nd = bad_folder("inf_weight", NULL, 0);
    write_st(nd, "model.safetensors", hn, w, sizeof w);
    expect_open(&(expect){ nd, MLA_ERR_FORMAT, { "model.norm.weight", "Inf at flat index 37", "finite" } });

    /* header length past the end of the file, and a file too short to hold the length */
    const char *dir = bad_folder("hlen_past_end", NULL, 0);
    uint8_t raw[24] = { 0xE8, 0x03 }; /* 1000 */
    memcpy(raw + 8, "{}", 2);
    write_bytes(dir, "model.safetensors", raw, sizeof raw);
    expect_open(&(expect){ dir, MLA_ERR_FORMAT, { "model.safetensors", "header length", "past end of file" } });
    dir = bad_folder("short_file", NULL, 0);
    write_bytes(dir, "model.safetensors", raw, 5);
    expect_open(&(expect){ dir, MLA_ERR_FORMAT, { "model.safetensors", "header length", "at least 8" } });
    dir = bad_folder("no_weights", NULL, 0);
    expect_open(&(expect){ dir, MLA_ERR_NOT_FOUND, { "no_weights", "model.safetensors", NULL } });
}

static void test_malformed_folder(void **state)
{
    (void)state;
    /* no config.json */
    const char *dir = subdir("no_config");
    write_st(dir, "model.safetensors", "{}", NULL, 0);
    expect_open(&(expect){ dir, MLA_ERR_NOT_FOUND, { "config.json", "cannot open", NULL } });
    /* config.json with a bad field */
    dir = subdir("bad_config");
    const char *cj = "{\"model_type\": \"deepseek_v3\", \"vocab_size\": 8, \"hidden_size\": \"big\"}";
    write_bytes(dir, "config.json", cj, strlen(cj));
    expect_open(&(expect){ dir, MLA_ERR_FORMAT, { "config.json", "num_hidden_layers", "required" } });
    /* a missing dimension names the field instead of taking DeepSeek-V3's (issue 12) */
    dir = subdir("config_no_hidden");
    cj = "{\"model_type\": \"deepseek_v3\", \"vocab_size\": 8}";
    write_bytes(dir, "config.json", cj, strlen(cj));
    expect_open(&(expect){ dir, MLA_ERR_FORMAT, { "config.json", "field hidden_size", "required" } });
    /* neither a built-in nor a folder */
    expect_open(&(expect){ "/nonexistent/ckpt", MLA_ERR_NOT_FOUND, { "/nonexistent/ckpt", "folder", NULL } });

    /* sharded checkpoints with a broken index */
    static const char *H_NORM = "{" NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [0, 256]}}";
    static const char *H_BOTH =
        "{\"model.layers.0.input_layernorm.weight\": {\"dtype\": \"BF16\", \"shape\": [128],"
        " \"data_offsets\": [0, 256]}, " NORM ": {\"dtype\": \"BF16\", \"shape\": [128], \"data_offsets\": [256, 512]}}";
    static const char *H_LN =
        "{\"model.layers.0.input_layernorm.weight\": {\"dtype\": \"BF16\", \"shape\": [128],"
        " \"data_offsets\": [0, 256]}}";
    struct {
        const char *name, *index, *b_header;
        mla_status want;
        const char *needle[3];
    } cases[] = {
        { "idx_missing_tensor",
          "{\"weight_map\": {\"model.norm.weight\": \"b.safetensors\","
          " \"model.layers.0.input_layernorm.weight\": \"b.safetensors\"}}",
          H_LN, MLA_ERR_NOT_FOUND, { "model.safetensors.index.json", "weight_map.model.norm.weight", "b.safetensors" } },
        { "idx_missing_shard", "{\"weight_map\": {\"model.norm.weight\": \"c.safetensors\"}}", H_LN,
          MLA_ERR_NOT_FOUND, { "c.safetensors", "cannot open", "listed in" } },
        { "idx_not_object", "{\"weight_map\": [\"a.safetensors\"]}", H_LN, MLA_ERR_FORMAT,
          { "model.safetensors.index.json", "weight_map", "expected an object" } },
        { "idx_bad_name", "{\"weight_map\": {\"model.norm.weight\": \"../a.safetensors\"}}", H_LN, MLA_ERR_FORMAT,
          { "model.safetensors.index.json", "weight_map.model.norm.weight", "file name" } },
        { "idx_dup",
          "{\"weight_map\": {\"model.norm.weight\": \"a.safetensors\","
          " \"model.layers.0.input_layernorm.weight\": \"b.safetensors\"}}",
          H_BOTH, MLA_ERR_FORMAT, { "safetensors", "model.norm.weight", "also in" } },
        { "idx_missing_required",
          "{\"weight_map\": {\"model.norm.weight\": \"a.safetensors\","
          " \"model.layers.0.input_layernorm.weight\": \"b.safetensors\"}}",
          H_LN, MLA_ERR_FORMAT, { "idx_missing_required", "config.json", "safetensors files hold: 256 in 2 tensors" } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *d = bad_folder(cases[i].name, NULL, 0);
        write_st(d, "a.safetensors", H_NORM, g_data, 256);
        write_st(d, "b.safetensors", cases[i].b_header, g_data, 512);
        write_bytes(d, "model.safetensors.index.json", cases[i].index, strlen(cases[i].index));
        expect_open(&(expect){ d, cases[i].want, { cases[i].needle[0], cases[i].needle[1], cases[i].needle[2] } });
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_list),
        cmocka_unit_test(test_builtin_tiny),
        cmocka_unit_test(test_builtin_asym),
        cmocka_unit_test(test_builtin_v3_layer),
        cmocka_unit_test(test_builtin_deterministic),
        cmocka_unit_test(test_write_roundtrip),
        cmocka_unit_test(test_write_sharded),
        cmocka_unit_test(test_fp8_checkpoint),
        cmocka_unit_test(test_malformed_safetensors),
        cmocka_unit_test(test_malformed_folder),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
