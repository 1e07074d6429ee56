/* gpu_engine.hip: the GPU engine's vtable: device probe, create/destroy, supports, load (weights
 * uploaded per layer from mla_model_tensor_f64, rounded on the host once), the paged cache and reset.
 * forward_* / read_* live in gpu_forward.hip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_dtype.h"
#include "gpu_internal.h"
#include "mla/dtype.h"
#include "mla/quant.h"
#include "mla/weights.h"
#include "mla_core/rng.h"
#include "mla_model/model.h"
#include "mla_gpu.h"

mla_status gpu_forward_mha(void *vctx, const mla_batch *b);
mla_status gpu_forward_mqa(void *vctx, const mla_batch *b);
mla_status gpu_read_tap(void *vctx, int layer, mla_tap tap, mla_tensor **out);
mla_status gpu_read_kv(void *vctx, int layer, int seq_id, mla_tensor **out);

extern "C" mla_status gpu_malloc(void **p, size_t bytes, const char *what)
{
    hipError_t e = hipMalloc(p, bytes);
    if (e == hipSuccess) return MLA_OK;
    *p = NULL;
    (void)hipGetLastError(); /* clear the sticky allocation error */
    size_t free_b = 0, total_b = 0;
    (void)hipMemGetInfo(&free_b, &total_b);
    const double gib = 1024.0 * 1024.0 * 1024.0;
    return mla_errorf(e == hipErrorOutOfMemory ? MLA_ERR_NOMEM : MLA_ERR_DEVICE,
                      "gpu: device allocation of %.3f GiB for %s failed (%s); the device has %.3f GiB free of %.3f GiB",
                      (double)bytes / gib, what, hipGetErrorString(e), (double)free_b / gib, (double)total_b / gib);
}

extern "C" mla_status gpu_buf_ensure(gpu_buf *b, size_t bytes)
{
    if (bytes <= b->bytes) return MLA_OK;
    if (b->p) MLA_HIP_CHECK(hipFree(b->p));
    b->p = NULL;
    b->bytes = 0;
    size_t want = bytes + bytes / 4 + 256;
    mla_status st = gpu_malloc(&b->p, want, "a scratch buffer of the forward pass");
    if (st) return st;
    b->bytes = want;
    return MLA_OK;
}

extern "C" void gpu_buf_free(gpu_buf *b)
{
    if (b->p) (void)hipFree(b->p);
    b->p = NULL;
    b->bytes = 0;
}

extern "C" mla_status mla_gpu_probe(char *desc, size_t n)
{
    int count = 0;
    hipError_t e = hipGetDeviceCount(&count);
    if (e != hipSuccess || count == 0) {
        if (desc && n) snprintf(desc, n, "no GPU device");
        return mla_errorf(MLA_ERR_NO_DEVICE, "gpu: no GPU device visible to the runtime (%s)",
                          e != hipSuccess ? hipGetErrorString(e) : "device count 0");
    }
    hipDeviceProp_t p;
    MLA_HIP_CHECK(hipGetDeviceProperties(&p, 0));
    int rt = 0, drv = 0;
    MLA_HIP_CHECK(hipRuntimeGetVersion(&rt));
    MLA_HIP_CHECK(hipDriverGetVersion(&drv)); /* provenance: reports name the driver too */
#if defined(MLA_GPU_HIP)
    const char *arch = p.gcnArchName;
#else
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d", p.major, p.minor);
#endif
    if (desc && n)
        snprintf(desc, n, "%s, %s, %d SMs, %.0f GiB, %s runtime %d, driver %d, warp %d", p.name, arch,
                 p.multiProcessorCount, (double)p.totalGlobalMem / (1024.0 * 1024 * 1024),
#if defined(MLA_GPU_HIP)
                 "HIP",
#else
                 "CUDA",
#endif
                 rt, drv, MLA_WARP);
    return MLA_OK;
}

static mla_status gpu_create(void **out)
{
    *out = NULL;
    char desc[256];
    mla_status st = mla_gpu_probe(desc, sizeof desc);
    if (st != MLA_OK) return st;
    gpu_ctx *c = (gpu_ctx *)calloc(1, sizeof *c);
    if (!c) return mla_errorf(MLA_ERR_NOMEM, "gpu: context allocation failed");
    hipDeviceProp_t p;
    hipError_t e = hipGetDeviceProperties(&p, 0);
    if (e == hipSuccess) e = hipSetDevice(0);
    if (e == hipSuccess) e = hipStreamCreate(&c->stream);
    if (e != hipSuccess) {
        free(c);
        return mla_errorf(MLA_ERR_DEVICE, "gpu: device setup failed: %s", hipGetErrorString(e));
    }
    c->n_sm = p.multiProcessorCount;
    snprintf(c->dev_name, sizeof c->dev_name, "%s", desc);
    *out = c;
    return MLA_OK;
}

static int gpu_supports(void *vctx, mla_feature f)
{
    (void)vctx;
    switch (f) {
    case MLA_FEAT_PROFILE_FP64: return 0;
    case MLA_FEAT_PROFILE_BF16:
    case MLA_FEAT_PROFILE_FP8KV:
    case MLA_FEAT_PROFILE_FP8DS:
    case MLA_FEAT_PROFILE_FP8W:
    case MLA_FEAT_PREFILL_WITH_CONTEXT:
    case MLA_FEAT_MULTI_TOKEN_DECODE:
    case MLA_FEAT_TAPS_INTERNAL:
    case MLA_FEAT_FP8_E4M3FNUZ:
    case MLA_FEAT_FAULTS: return 1;
    default: return 0;
    }
}

static void free_linear(gpu_linear *l)
{
    if (l->w) (void)hipFree(l->w);
    if (l->q) (void)hipFree(l->q);
    if (l->s) (void)hipFree(l->s);
    memset(l, 0, sizeof *l);
}

static void free_mlp(gpu_mlp *m)
{
    free_linear(&m->gate);
    free_linear(&m->up);
    free_linear(&m->down);
}

static void gpu_unload(gpu_ctx *c)
{
    int L = c->cfg.num_hidden_layers;
    if (c->layers) {
        for (int i = 0; i < L; i++) {
            gpu_layer *ly = &c->layers[i];
            float *fl[] = {ly->attn_norm, ly->ffn_norm, ly->q_a_norm, ly->kv_a_norm, ly->bias};
            for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++)
                if (fl[k]) (void)hipFree(fl[k]);
            free_linear(&ly->q_a);
            free_linear(&ly->q_b);
            free_linear(&ly->q);
            free_linear(&ly->kv_a);
            free_linear(&ly->kv_b);
            free_linear(&ly->o);
            if (ly->w_uk_t) (void)hipFree(ly->w_uk_t);
            if (ly->gate) (void)hipFree(ly->gate);
            free_mlp(&ly->mlp);
            free_mlp(&ly->shared);
            if (ly->experts) {
                for (int e = 0; e < c->cfg.n_routed_experts; e++) free_mlp(&ly->experts[e]);
                free(ly->experts);
            }
        }
        free(c->layers);
        c->layers = NULL;
    }
    if (c->lm_head && c->lm_head != c->embed) (void)hipFree(c->lm_head);
    if (c->embed) (void)hipFree(c->embed);
    if (c->final_norm) (void)hipFree(c->final_norm);
    if (c->inv_freq) (void)hipFree(c->inv_freq);
    c->lm_head = c->embed = NULL;
    c->final_norm = c->inv_freq = NULL;
    if (c->kv_pool) {
        for (int i = 0; i < L; i++)
            if (c->kv_pool[i]) (void)hipFree(c->kv_pool[i]);
        free(c->kv_pool);
        c->kv_pool = NULL;
    }
    if (c->d_tables) (void)hipFree(c->d_tables);
    c->d_tables = NULL;
    free(c->h_tables);
    free(c->seq_len);
    c->h_tables = NULL;
    c->seq_len = NULL;
    if (c->taps) {
        for (int i = 0; i < (L + 1) * MLA_TAP_COUNT; i++) gpu_buf_free(&c->taps[i].buf);
        free(c->taps);
        c->taps = NULL;
    }
#define GPU_SCRATCH_FREE(name) gpu_buf_free(&c->scratch.name);
    GPU_SCRATCH_LIST(GPU_SCRATCH_FREE)
#undef GPU_SCRATCH_FREE
    c->loaded = 0;
}

static void gpu_destroy(void *vctx)
{
    gpu_ctx *c = (gpu_ctx *)vctx;
    if (!c) return;
    gpu_unload(c);
    if (c->stream) (void)hipStreamDestroy(c->stream);
    free(c);
}

/* ---- weight upload ---- */

static mla_status fetch_f64(gpu_ctx *c, const char *name, int64_t expect, double **out)
{
    int64_t n = 0;
    mla_status st = mla_model_tensor_f64(c->model, name, out, &n);
    if (st != MLA_OK) return st;
    if (n != expect) {
        free(*out);
        *out = NULL;
        return mla_errorf(MLA_ERR_SHAPE, "gpu: tensor %s: %lld elements, expected %lld", name, (long long)n,
                          (long long)expect);
    }
    return MLA_OK;
}

static mla_status upload(void **d, const void *h, size_t bytes)
{
    mla_status st = gpu_malloc(d, bytes, "model weights");
    if (st) return st;
    MLA_HIP_CHECK(hipMemcpy(*d, h, bytes, hipMemcpyHostToDevice));
    return MLA_OK;
}

static mla_status up_bf16_host(const double *w, int64_t n, uint16_t **d)
{
    uint16_t *h = (uint16_t *)malloc((size_t)n * 2);
    if (!h) return mla_errorf(MLA_ERR_NOMEM, "gpu: host staging of %lld bf16 values", (long long)n);
    for (int64_t i = 0; i < n; i++) h[i] = gd_f32_to_bf16((float)mla_round_bf16(w[i]));
    mla_status st = upload((void **)d, h, (size_t)n * 2);
    free(h);
    return st;
}

static mla_status up_bf16(gpu_ctx *c, const char *name, int64_t n, uint16_t **d)
{
    double *w;
    mla_status st = fetch_f64(c, name, n, &w);
    if (st != MLA_OK) return st;
    st = up_bf16_host(w, n, d);
    free(w);
    return st;
}

/* Norm weights, the router gate and its bias: kept as loaded (f32), as the reference keeps them. */
static mla_status up_vec(gpu_ctx *c, const char *name, int64_t n, int round_bf16, float **d)
{
    double *w;
    mla_status st = fetch_f64(c, name, n, &w);
    if (st != MLA_OK) return st;
    float *h = (float *)malloc((size_t)n * 4);
    if (!h) {
        free(w);
        return mla_errorf(MLA_ERR_NOMEM, "gpu: host staging of %s", name);
    }
    for (int64_t i = 0; i < n; i++) h[i] = round_bf16 ? (float)mla_round_bf16(w[i]) : (float)w[i];
    st = upload((void **)d, h, (size_t)n * 4);
    free(h);
    free(w);
    return st;
}

static mla_status up_linear(gpu_ctx *c, const char *name, int n, int k, int fp8, gpu_linear *l)
{
    double *w;
    mla_status st = fetch_f64(c, name, (int64_t)n * k, &w);
    if (st != MLA_OK) return st;
    l->n = n;
    l->k = k;
    if (!fp8) {
        st = up_bf16_host(w, (int64_t)n * k, &l->w);
        free(w);
        return st;
    }
    int64_t nsc = (int64_t)((n + 127) / 128) * ((k + 127) / 128);
    uint8_t *q = (uint8_t *)malloc((size_t)n * k);
    float *s = (float *)malloc((size_t)nsc * 4);
    if (!q || !s) st = mla_errorf(MLA_ERR_NOMEM, "gpu: fp8 staging of %s", name);
    if (st == MLA_OK) {
        for (int64_t i = 0; i < (int64_t)n * k; i++) w[i] = mla_round_bf16(w[i]);
        mla_block_quant(w, n, k, 128, q, s);
        st = upload((void **)&l->q, q, (size_t)n * k);
    }
    if (st == MLA_OK) st = upload((void **)&l->s, s, (size_t)nsc * 4);
    free(q);
    free(s);
    free(w);
    return st;
}

/* kv_b_proj [H(P+V), C], bf16 in every profile (fp8w too: it is not an fp8 linear; a block-fp8
 * checkpoint arrives dequantized from mla_model_tensor_f64): the naive form uses it as is;
 * W_UK^T [H, C, P] for the absorbed query. */
static mla_status up_kv_b(gpu_ctx *c, const char *name, gpu_layer *ly)
{
    const mla_config *g = &c->cfg;
    int H = g->num_attention_heads, P = g->qk_nope_head_dim, V = g->v_head_dim, C = g->kv_lora_rank;
    int64_t rows = (int64_t)H * (P + V), n = rows * C;
    double *w;
    mla_status st = fetch_f64(c, name, n, &w);
    if (st != MLA_OK) return st;
    ly->kv_b.n = (int)rows;
    ly->kv_b.k = C;
    st = up_bf16_host(w, n, &ly->kv_b.w);
    if (st == MLA_OK) {
        double *t = (double *)malloc((size_t)H * C * P * sizeof(double));
        if (!t) st = mla_errorf(MLA_ERR_NOMEM, "gpu: W_UK staging");
        else {
            for (int h = 0; h < H; h++)
                for (int cc = 0; cc < C; cc++)
                    for (int p = 0; p < P; p++)
                        t[((int64_t)h * C + cc) * P + p] = w[((int64_t)h * (P + V) + p) * C + cc];
            st = up_bf16_host(t, (int64_t)H * C * P, &ly->w_uk_t);
            free(t);
        }
    }
    free(w);
    return st;
}

/* Where row w (expert e) of the weight table (mla/weights.h) goes in a gpu_layer: a float vector for
 * the MLA_LW_KEEP rows, a linear for the others (kv_b, the one MLA_LW_BF16 row, has its own upload). */
typedef struct gpu_layer_slot {
    float **vec;
    gpu_linear *lin;
} gpu_layer_slot;

static gpu_layer_slot layer_slot(gpu_layer *ly, mla_layer_weight w, int e)
{
    gpu_layer_slot s = {NULL, NULL};
    switch (w) {
    case MLA_LW_ATTN_NORM: s.vec = &ly->attn_norm; break;
    case MLA_LW_FFN_NORM: s.vec = &ly->ffn_norm; break;
    case MLA_LW_Q_A: s.lin = &ly->q_a; break;
    case MLA_LW_Q_A_NORM: s.vec = &ly->q_a_norm; break;
    case MLA_LW_Q_B: s.lin = &ly->q_b; break;
    case MLA_LW_Q: s.lin = &ly->q; break;
    case MLA_LW_KV_A: s.lin = &ly->kv_a; break;
    case MLA_LW_KV_A_NORM: s.vec = &ly->kv_a_norm; break;
    case MLA_LW_KV_B: s.lin = &ly->kv_b; break;
    case MLA_LW_O: s.lin = &ly->o; break;
    case MLA_LW_MLP_GATE: s.lin = &ly->mlp.gate; break;
    case MLA_LW_MLP_DOWN: s.lin = &ly->mlp.down; break;
    case MLA_LW_MLP_UP: s.lin = &ly->mlp.up; break;
    case MLA_LW_ROUTER: s.vec = &ly->gate; break;
    case MLA_LW_ROUTER_BIAS: s.vec = &ly->bias; break;
    case MLA_LW_EXPERT_GATE: s.lin = &ly->experts[e].gate; break;
    case MLA_LW_EXPERT_DOWN: s.lin = &ly->experts[e].down; break;
    case MLA_LW_EXPERT_UP: s.lin = &ly->experts[e].up; break;
    case MLA_LW_SHARED_GATE: s.lin = &ly->shared.gate; break;
    case MLA_LW_SHARED_DOWN: s.lin = &ly->shared.down; break;
    case MLA_LW_SHARED_UP: s.lin = &ly->shared.up; break;
    case MLA_LW_COUNT: break;
    }
    return s;
}

/* Every tensor of layer i from the weight table: MLA_LW_KEEP rows as f32 vectors (the router as a
 * flat [E*D]), kv_b through up_kv_b, the fp8-linear rows as bf16 or, under fp8w, block-fp8. */
static mla_status load_layer(gpu_ctx *c, int i)
{
    const mla_config *g = &c->cfg;
    gpu_layer *ly = &c->layers[i];
    ly->moe = mla_config_is_moe_layer(g, i);
    int E = mla_lw_count(g, i, MLA_LW_EXPERT_GATE);
    if (E > 0) {
        ly->experts = (gpu_mlp *)calloc((size_t)E, sizeof(gpu_mlp));
        if (!ly->experts) return mla_errorf(MLA_ERR_NOMEM, "gpu: expert table");
    }
    mla_status st = MLA_OK;
    for (int w = 0; w < MLA_LW_COUNT && st == MLA_OK; w++) {
        mla_layer_weight lw = (mla_layer_weight)w;
        int64_t shape[2];
        mla_lw_shape(g, lw, shape);
        mla_lw_store store = mla_lw_store_of(lw);
        int n = mla_lw_count(g, i, lw);
        for (int e = 0; e < n && st == MLA_OK; e++) {
            char nm[256];
            if (mla_lw_name(nm, sizeof nm, i, lw, e))
                return mla_errorf(MLA_ERR_INVALID, "gpu: layer %d %s: name too long", i, mla_lw_suffix(lw));
            gpu_layer_slot s = layer_slot(ly, lw, e);
            if (store == MLA_LW_KEEP)
                st = up_vec(c, nm, shape[1] > 0 ? shape[0] * shape[1] : shape[0], 0, s.vec);
            else if (store == MLA_LW_BF16)
                st = up_kv_b(c, nm, ly);
            else
                st = up_linear(c, nm, (int)shape[0], (int)shape[1], c->fp8w, s.lin);
        }
    }
    return st;
}

/* Poison: unwritten rows decode as NaN (fnuz has its NaN at 0x80), so a read past the written
 * tokens shows up in every tap downstream. Done at load and at every reset, so an engine reused
 * across drives (the harness keeps engines open) never shows a kernel the previous drive's rows. */
static mla_status poison_cache(gpu_ctx *c)
{
    int poison = c->kv_codec.fp8_fnuz ? 0x80 : 0xff;
    for (int i = 0; i < c->cfg.num_hidden_layers; i++) MLA_HIP_CHECK(hipMemset(c->kv_pool[i], poison, c->kv_pool_bytes));
    return MLA_OK;
}

/* The cache row format of a profile. */
static mla_kv_format gpu_kv_format(mla_profile p)
{
    return p == MLA_PROFILE_FP8KV ? MLA_KV_FP8 : p == MLA_PROFILE_FP8DS ? MLA_KV_FP8_DS : MLA_KV_BF16;
}

static mla_status setup_cache(gpu_ctx *c)
{
    const mla_config *g = &c->cfg;
    int L = g->num_hidden_layers, C = g->kv_lora_rank, R = g->qk_rope_head_dim;
    const mla_run_opts *o = &c->opts;
    mla_kv_format f = gpu_kv_format(o->profile);
    /* fp8_ds_mla codes are e4m3fn on every device (k_cache_write, as the reference's cache) */
    c->kv_codec = mla_kv_codec{.format = f, .fp8_fnuz = f == MLA_KV_FP8 ? c->fnuz : 0, .c = C, .r = R,
                               .k_scale = (float)o->kv_scale};
    c->row_bytes = (int)mla_kv_row_bytes(f, C, R);
    c->blocks_per_seq = (o->max_seq_len + o->block_size - 1) / o->block_size;
    if ((int64_t)c->blocks_per_seq * o->max_seqs > INT32_MAX)
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: paged cache of %d sequences x %d blocks: more than 2^31 blocks",
                          o->max_seqs, c->blocks_per_seq);
    c->n_blocks = c->blocks_per_seq * o->max_seqs;
    size_t pool = (size_t)c->n_blocks * o->block_size * c->row_bytes;
    c->kv_pool = (uint8_t **)calloc((size_t)L, sizeof(uint8_t *));
    c->h_tables = (int32_t *)malloc((size_t)c->n_blocks * 4);
    c->seq_len = (int *)calloc((size_t)o->max_seqs, sizeof(int));
    if (!c->kv_pool || !c->h_tables || !c->seq_len) return mla_errorf(MLA_ERR_NOMEM, "gpu: cache tables");
    c->kv_pool_bytes = pool;
    char what[200];
    snprintf(what, sizeof what, "the paged KV cache (%d layers x %d sequences x %d tokens x %d B/row)", L,
             o->max_seqs, c->blocks_per_seq * o->block_size, c->row_bytes);
    for (int i = 0; i < L; i++) {
        mla_status st = gpu_malloc((void **)&c->kv_pool[i], pool, what);
        if (st) return st;
    }
    mla_status pst = poison_cache(c);
    if (pst) return pst;
    for (int i = 0; i < c->n_blocks; i++) c->h_tables[i] = i;
    if (o->shuffle_blocks) mla_rng_shuffle_i32(c->h_tables, c->n_blocks, o->seed);
    return upload((void **)&c->d_tables, c->h_tables, (size_t)c->n_blocks * 4);
}

/* A kernel name (MLA_GPU_DECODE / MLA_GPU_PREFILL) as gpu_decode_kernel / gpu_prefill_kernel (same
 * numbering); unset: mma under attn_tc, else first; -1 for an unknown name. */
static int gpu_kernel_named(const char *name, int attn_tc)
{
    if (!name || !*name) return attn_tc ? GPU_DECODE_MMA : GPU_DECODE_FIRST;
    if (!strcmp(name, "first")) return GPU_DECODE_FIRST;
    if (!strcmp(name, "tiled")) return GPU_DECODE_TILED;
    if (!strcmp(name, "mma")) return GPU_DECODE_MMA;
    return -1;
}

static mla_status gpu_load(void *vctx, mla_model *model, const mla_run_opts *opts)
{
    gpu_ctx *c = (gpu_ctx *)vctx;
    if (!c || !model || !opts) return mla_errorf(MLA_ERR_INVALID, "gpu: load: NULL argument");
    if (c->loaded) gpu_unload(c);
    const mla_config *g = mla_model_config(model);
    mla_status st = mla_config_validate(g, mla_model_source(model));
    if (st != MLA_OK) return st;
    if (opts->profile == MLA_PROFILE_FP64 || (unsigned)opts->profile >= MLA_PROFILE_COUNT)
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: profile %s is not supported (bf16, fp8kv, fp8ds, fp8w are)",
                          mla_profile_name(opts->profile));
    if (opts->block_size <= 0 || opts->max_seqs <= 0 || opts->max_seq_len <= 0)
        return mla_errorf(MLA_ERR_INVALID, "gpu: run opts: block_size %d, max_seqs %d, max_seq_len %d, expected > 0",
                          opts->block_size, opts->max_seqs, opts->max_seq_len);
    if (g->kv_lora_rank > 512 || g->v_head_dim > 256 || g->qk_rope_head_dim % 2 || g->n_group > 64)
        return mla_errorf(MLA_ERR_UNSUPPORTED,
                          "gpu: %s: kv_lora_rank %d (max 512), v_head_dim %d (max 256), qk_rope_head_dim %d (even), "
                          "n_group %d (max 64)", mla_model_source(model), g->kv_lora_rank, g->v_head_dim,
                          g->qk_rope_head_dim, g->n_group);
    if (opts->profile == MLA_PROFILE_FP8DS && g->kv_lora_rank % 128)
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: fp8ds needs kv_lora_rank a multiple of 128, got %d",
                          g->kv_lora_rank);
    /* Kernels: first (default) | tiled | mma from MLA_GPU_DECODE / MLA_GPU_PREFILL; opts.attn_tc asks for
     * the mma kernels (P rounded to bf16, which the reference emulates only under attn_tc) and is
     * refused where they cannot run, so a run never claims rounding it did not do. */
    const char *dk = getenv("MLA_GPU_DECODE"), *pk = getenv("MLA_GPU_PREFILL");
    int kd = gpu_kernel_named(dk, opts->attn_tc), kp = gpu_kernel_named(pk, opts->attn_tc);
    if (kd < 0) return mla_errorf(MLA_ERR_INVALID, "gpu: MLA_GPU_DECODE=%s: expected first, tiled or mma", dk);
    if (kp < 0) return mla_errorf(MLA_ERR_INVALID, "gpu: MLA_GPU_PREFILL=%s: expected first, tiled or mma", pk);
    if (opts->attn_tc) {
        const mla_kv_format fmt = gpu_kv_format(opts->profile);
        gpu_kv_desc kv;
        memset(&kv, 0, sizeof kv);
        kv.codec.format = fmt;
        kv.codec.c = g->kv_lora_rank;
        kv.codec.r = g->qk_rope_head_dim;
        kv.row_bytes = (int)mla_kv_row_bytes(fmt, g->kv_lora_rank, g->qk_rope_head_dim);
        if (kd != GPU_DECODE_MMA || kp != GPU_PREFILL_MMA || !gpu_decode_mma_fits(&kv, g->num_attention_heads) ||
            !gpu_prefill_mma_fits(g->qk_nope_head_dim, g->qk_rope_head_dim, g->v_head_dim))
            return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: attn_tc needs the mma kernels (NVIDIA; C %d, R %d, P %d, V %d, "
                              "MLA_GPU_DECODE/PREFILL unset or mma)", g->kv_lora_rank, g->qk_rope_head_dim,
                              g->qk_nope_head_dim, g->v_head_dim);
    }
    c->decode_kernel = kd;
    c->prefill_kernel = kp;
    c->model = model;
    c->cfg = *g;
    c->opts = *opts;
    if (c->opts.kv_scale <= 0.0) c->opts.kv_scale = 1.0;
    if (c->opts.q_scale <= 0.0) c->opts.q_scale = 1.0;
    c->fnuz = opts->fp8_kind == MLA_FP8_FNUZ;
    c->fp8w = opts->profile == MLA_PROFILE_FP8W;
    int L = g->num_hidden_layers, D = g->hidden_size, N = g->vocab_size, R = g->qk_rope_head_dim;
    c->layers = (gpu_layer *)calloc((size_t)L, sizeof(gpu_layer));
    c->taps = (gpu_tap *)calloc((size_t)(L + 1) * MLA_TAP_COUNT, sizeof(gpu_tap));
    if (!c->layers || !c->taps) st = mla_errorf(MLA_ERR_NOMEM, "gpu: layer tables");
    if (st == MLA_OK) st = up_bf16(c, "model.embed_tokens.weight", (int64_t)N * D, &c->embed);
    if (st == MLA_OK) st = up_vec(c, "model.norm.weight", D, 0, &c->final_norm);
    if (st == MLA_OK) {
        if (g->tie_word_embeddings)
            c->lm_head = c->embed;
        else
            st = up_bf16(c, "lm_head.weight", (int64_t)N * D, &c->lm_head);
    }
    if (st == MLA_OK) {
        double inv[512];
        float f[512];
        mla_config_inv_freq(g, inv);
        for (int i = 0; i < R / 2; i++) f[i] = (float)inv[i];
        st = upload((void **)&c->inv_freq, f, (size_t)(R / 2) * 4);
    }
    for (int i = 0; i < L && st == MLA_OK; i++) st = load_layer(c, i);
    if (st == MLA_OK) st = setup_cache(c);
    if (st != MLA_OK) {
        gpu_unload(c);
        return st;
    }
    c->loaded = 1;
    return MLA_OK;
}

static mla_status gpu_reset(void *vctx)
{
    gpu_ctx *c = (gpu_ctx *)vctx;
    if (!c || !c->loaded) return mla_errorf(MLA_ERR_INVALID, "gpu: reset before load");
    memset(c->seq_len, 0, (size_t)c->opts.max_seqs * sizeof(int));
    c->ntok = 0;
    for (int i = 0; i < (c->cfg.num_hidden_layers + 1) * MLA_TAP_COUNT; i++) c->taps[i].valid = 0;
    return poison_cache(c);
}

static const mla_backend_ops gpu_ops = {
    .abi_version = MLA_BACKEND_ABI_VERSION,
    .name = "gpu",
    .create = gpu_create,
    .supports = gpu_supports,
    .load = gpu_load,
    .reset = gpu_reset,
    .forward_mha = gpu_forward_mha,
    .forward_mqa = gpu_forward_mqa,
    .read_tap = gpu_read_tap,
    .read_kv = gpu_read_kv,
    .destroy = gpu_destroy,
};

extern "C" const mla_backend_ops *mla_gpu_backend(void) { return &gpu_ops; }
