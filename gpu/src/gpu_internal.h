/* gpu_internal.h: the GPU engine's context, weight layout and the host-side launchers of every kernel.
 * Launchers validate nothing (the engine validates once per call) and return mla_status after
 * checking the launch. Activations are bf16 stored as uint16_t unless the name says f32. */
#ifndef MLA_GPU_INTERNAL_H
#define MLA_GPU_INTERNAL_H

#include "gpu_scratch.h"
#include "gpu_split_plan.h"
#include "gpu_types.h"
#include "hip_compat.h"
#include "mla/backend.h"

#include <stdlib.h>
#include <string.h>

/* A linear layer y = x . W^T, W [N, K]. bf16 weights (w) or, in fp8w, e4m3fn codes (q) with
 * 128x128 block scales (s [ceil(N/128), ceil(K/128)], dequant multipliers). */
typedef struct gpu_linear {
    uint16_t *w; /* [N, K] bf16, or NULL */
    uint8_t *q;  /* [N, K] e4m3fn codes, or NULL */
    float *s;    /* [ceil(N/128), ceil(K/128)] */
    int n, k;
} gpu_linear;

typedef struct gpu_mlp {
    gpu_linear gate, up, down; /* gate/up [I, D], down [D, I] */
} gpu_mlp;

typedef struct gpu_layer {
    float *attn_norm, *ffn_norm; /* [D] (bf16 values) */
    float *q_a_norm;             /* [Lq] or NULL */
    float *kv_a_norm;            /* [C] */
    gpu_linear q_a, q_b, q;      /* q_a/q_b when q_lora_rank > 0, else q */
    gpu_linear kv_a;             /* [C+R, D] */
    gpu_linear kv_b;             /* [H(P+V), C], always bf16 */
    uint16_t *w_uk_t;            /* [H, C, P] bf16: W_UK transposed for q_absorbed = q_nope . W_UK */
    gpu_linear o;                /* [D, H V] */
    int moe;
    gpu_mlp mlp;                 /* dense layers */
    float *gate;                 /* [E, D] router weights as loaded (never fp8, not rounded) */
    float *bias;                 /* [E] e_score_correction_bias or NULL */
    gpu_mlp *experts;            /* [E] */
    gpu_mlp shared;              /* shared experts (n == 0 when none) */
} gpu_layer;

/* Grow-only device buffer. */
typedef struct gpu_buf {
    void *p;
    size_t bytes;
} gpu_buf;

/* The forward pass's scratch, one buffer per line of GPU_SCRATCH_LIST. */
typedef struct gpu_scratch {
#define GPU_SCRATCH_FIELD(name) gpu_buf name;
    GPU_SCRATCH_LIST(GPU_SCRATCH_FIELD)
#undef GPU_SCRATCH_FIELD
} gpu_scratch;

typedef struct gpu_tap {
    gpu_buf buf;
    int valid;
} gpu_tap;

typedef struct gpu_ctx {
    mla_model *model;
    mla_config cfg;
    mla_run_opts opts;
    int loaded, fnuz, fp8w;
    int decode_kernel;   /* gpu_decode_kernel: MLA_GPU_DECODE=first (default) | tiled | mma at load */
    int prefill_kernel;  /* gpu_prefill_kernel: MLA_GPU_PREFILL=first (default) | tiled | mma at load */
    int dev, n_sm;
    char dev_name[256];
    hipStream_t stream;
    gpu_layer *layers;
    uint16_t *embed;   /* [N, D] */
    uint16_t *lm_head; /* [N, D] (may alias embed) */
    float *final_norm; /* [D] */
    float *inv_freq;   /* [R/2] f32 */
    /* paged cache */
    mla_kv_codec kv_codec; /* the rows' format (mla/kv.h), fixed at load */
    int row_bytes, blocks_per_seq, n_blocks;
    uint8_t **kv_pool;   /* [L] device pools */
    size_t kv_pool_bytes; /* bytes of each layer's pool */
    int32_t *d_tables;   /* [max_seqs, blocks_per_seq] */
    int32_t *h_tables;
    int *seq_len;        /* [max_seqs] cached tokens, host */
    /* last call */
    int64_t ntok;
    gpu_tap *taps;       /* [(L + 1) * MLA_TAP_COUNT]; globals at index L */
    gpu_scratch scratch;
} gpu_ctx;

#ifdef __cplusplus
extern "C" {
#endif

/* hipMalloc with a message that says what the memory was for, how much, and how much the device has
 * free: MLA_ERR_NOMEM when the device is out of memory, MLA_ERR_DEVICE for other failures. */
mla_status gpu_malloc(void **p, size_t bytes, const char *what);
mla_status gpu_buf_ensure(gpu_buf *b, size_t bytes);
void gpu_buf_free(gpu_buf *b);

/* ---- gpu_gemm.hip ---- */
/* Y[b][m, n] = sum_k X[b][m, k] W[b][n, k], bf16 in, fp32 accumulate, Y bf16 (y_f32 = 0) or f32.
 * Strides in elements; batch b over gridDim.z with strides *_bs. */
typedef struct gpu_gemm_args {
    const uint16_t *x;
    int64_t ldx, x_bs;
    const uint16_t *w;
    int64_t ldw, w_bs;
    void *y;
    int64_t ldy, y_bs;
    int m, n, k, batch, y_f32;
} gpu_gemm_args;
mla_status gpu_gemm_bf16(hipStream_t st, const gpu_gemm_args *a);
/* The two kernels gpu_gemm_bf16 picks from (mla_gpu_bench --gemm times both): the SIMT one (any shape)
 * and the tensor-core one (gpu_gemm_mma.hip, NVIDIA only: x, w 16-byte aligned, ldx, ldw, x_bs, w_bs
 * multiples of 8 elements; gpu_gemm_mma_fits is 0 elsewhere). */
mla_status gpu_gemm_bf16_simt(hipStream_t st, const gpu_gemm_args *a);
int gpu_gemm_mma_fits(const gpu_gemm_args *a);
mla_status gpu_gemm_bf16_mma(hipStream_t st, const gpu_gemm_args *a);
/* Block-fp8: x codes [m, k] with scales [m, ceil(k/128)], w codes [n, k] with scales
 * [ceil(n/128), ceil(k/128)]; y [m, n] bf16 with row stride ldy. */
mla_status gpu_gemm_fp8(hipStream_t st, const uint8_t *xq, const float *xs, const uint8_t *wq,
                        const float *ws, uint16_t *y, int64_t ldy, int m, int n, int k);
/* Its two kernels (mla_gpu_bench --gemm times both): SIMT (any shape) and tensor cores
 * (gpu_gemm_fp8_mma.hip, NVIDIA only: k a multiple of 128, xq and wq 16-byte aligned). */
mla_status gpu_gemm_fp8_simt(hipStream_t st, const uint8_t *xq, const float *xs, const uint8_t *wq,
                             const float *ws, uint16_t *y, int64_t ldy, int m, int n, int k);
int gpu_gemm_fp8_mma_fits(const uint8_t *xq, const uint8_t *wq, int k);
mla_status gpu_gemm_fp8_mma(hipStream_t st, const uint8_t *xq, const float *xs, const uint8_t *wq,
                            const float *ws, uint16_t *y, int64_t ldy, int m, int n, int k);
/* DeepSeek act_quant: 1x128 groups, amax = max(max|x|, 1e-4), s = amax / 448, code = e4m3fn(x / s). */
mla_status gpu_act_quant(hipStream_t st, const uint16_t *x, int64_t ldx, int m, int k, uint8_t *q,
                         float *s);

/* ---- gpu_ops.hip ---- */
mla_status gpu_embed(hipStream_t st, const int32_t *tok, const uint16_t *table, int t, int d,
                     uint16_t *y);
/* y[t, :n] = bf16(g * x * rsqrt(mean(x^2) + eps)) */
mla_status gpu_rmsnorm(hipStream_t st, const uint16_t *x, int64_t ldx, const float *g, int t, int n,
                       float eps, uint16_t *y, int64_t ldy);
/* Interleaved (or, with the fault, half-split) RoPE of rows: in [t, heads, ld_in] at offset off_in,
 * R wide, into out [t, heads, R]; position of token i = pos[i]. Optionally copies the nope part
 * (nope > 0) into nope_out [t, heads, nope]. */
typedef struct gpu_rope_args {
    const uint16_t *in;
    int64_t ld_in; /* elements per head row */
    int off_in, heads, r, nope;
    uint16_t *out, *nope_out;
    const int32_t *tok_seq;
    const gpu_seq *seqs;
    const float *inv_freq;
    float attn_factor;
    int half_split, t;
} gpu_rope_args;
mla_status gpu_rope(hipStream_t st, const gpu_rope_args *a);
/* y = bf16(a + b) */
mla_status gpu_add(hipStream_t st, const uint16_t *a, const uint16_t *b, uint16_t *y, int64_t n);
/* a = bf16(silu(g) * u) */
mla_status gpu_silu_mul(hipStream_t st, const uint16_t *g, const uint16_t *u, uint16_t *a, int64_t n);
/* Write the new tokens' rows [kv_c (bf16) | k_pe (bf16)] into the paged cache. */
mla_status gpu_cache_write(hipStream_t st, gpu_kv_desc kv, const uint16_t *kv_c, const uint16_t *k_pe,
                           const int32_t *tok_seq, const gpu_seq *seqs, int t);
/* Naive-form workspace: per sequence, context rows from the cache (dequantized, bf16) then the
 * fresh rows. ws_kvc [n_ws, C], ws_kpe [n_ws, R]. */
mla_status gpu_gather_ws(hipStream_t st, gpu_kv_desc kv, const uint16_t *kv_c, const uint16_t *k_pe,
                         const gpu_seq *seqs, int n_seqs, int n_ws, uint16_t *ws_kvc, uint16_t *ws_kpe);
/* Absorbed decode query quantization in place: q = dequant(e4m3(q / scale)) * scale over
 * [q_abs | q_pe] rows (fp8 query profile, or the fp8-q-saturation fault with scale 1, fn). */
mla_status gpu_quant_query(hipStream_t st, uint16_t *q_abs, const uint16_t *q_pe, int64_t rows, int c,
                           int r, float scale, int fnuz, float *q_abs_f, float *q_pe_f);
/* Widen bf16 to f32 (q for the decode kernel when it stays bf16). */
mla_status gpu_bf16_to_f32(hipStream_t st, const uint16_t *x, float *y, int64_t n);
/* MoE: route rows of router logits [t, E] -> ids [t, K] (i32), weights [t, K] (f32). */
typedef struct gpu_route_args {
    const float *logits, *bias;
    int32_t *ids;
    float *w;
    int t, e, k, n_group, topk_group, sigmoid, group_limited, norm, apply_scaling;
    float scaling;
} gpu_route_args;
mla_status gpu_route(hipStream_t st, const gpu_route_args *a);
/* router logits y [t, e] (f32) = x [t, d] (bf16) . w [e, d] (f32)^T */
mla_status gpu_router_logits(hipStream_t st, const uint16_t *x, const float *w, int t, int e, int d, float *y);
mla_status gpu_gather_rows(hipStream_t st, const uint16_t *x, const int32_t *rows, int n, int d,
                           uint16_t *y);
/* acc[rows[i], :] += w[i] * y[i, :] (fp32); a row appears once per call, so no atomics. */
mla_status gpu_scatter_acc(hipStream_t st, const uint16_t *y, const int32_t *rows, const float *w,
                           int n, int d, float *acc);
/* acc = y (f32) or y = bf16(acc + s) */
mla_status gpu_acc_init(hipStream_t st, float *acc, int64_t n);
mla_status gpu_acc_finish(hipStream_t st, const float *acc, const uint16_t *shared, uint16_t *y,
                          int64_t n);

/* ---- gpu_attn.hip ---- */
typedef struct gpu_prefill_args {
    const uint16_t *q_nope, *q_pe; /* [T, H, P], [T, H, R] */
    const uint16_t *kvx;           /* [n_ws, H (P + V)] */
    const uint16_t *ws_kpe;        /* [n_ws, R] */
    const int32_t *tok_seq;
    const gpu_seq *seqs;
    uint16_t *out; /* [T, H, V] */
    float *lse;    /* [T, H] */
    int t, h, p, r, v;
    float scale;
    int causal_plus, lse_bf16;
    int n_seqs, max_new; /* for the tiled kernels' grids */
    int max_keys;        /* the longest n_past + n_new (0: unknown), for gpu_prefill_ws.hip's choice */
    int kernel;          /* gpu_prefill_kernel; one whose shapes do not fit falls back to the first */
} gpu_prefill_args;
/* The prefill kernels: the first (block per token and head), the query-tiled SIMT one
 * (gpu_prefill_tile.h) and the tensor-core one (gpu_prefill_mma.hip, NVIDIA only). */
typedef enum { GPU_PREFILL_FIRST = 0, GPU_PREFILL_TILED = 1, GPU_PREFILL_MMA = 2 } gpu_prefill_kernel;
mla_status gpu_attn_prefill(hipStream_t st, const gpu_prefill_args *a);
int gpu_prefill_mma_fits(int p, int r, int v);
mla_status gpu_attn_prefill_mma(hipStream_t st, const gpu_prefill_args *a);
/* A kernel switch in the environment: a single digit 1 .. max gives that digit, unset or anything else
 * 0 (the default kernel). Callers keep it in a static, read once, so a run never changes kernels midway. */
static inline int gpu_env_switch(const char *name, int max)
{
    const char *e = getenv(name);
    return e && e[0] >= '1' && e[0] <= '0' + max && !e[1] ? e[0] - '0' : 0;
}
/* An off-switch for a default kernel: 1 when the variable is exactly "0", so the old kernel stays
 * selectable for comparisons. Read once by callers, as above. */
static inline int gpu_env_off(const char *name)
{
    const char *e = getenv(name);
    return e && !strcmp(e, "0");
}

/* wgmma prefill (gpu_prefill_wg.hip, NVIDIA only): P 128, R 64, V 128; gpu_attn_prefill_mma picks it */
int gpu_prefill_wg_fits(int p, int r, int v);
mla_status gpu_attn_prefill_wg(hipStream_t st, const gpu_prefill_args *a);
/* its pipelined form (gpu_prefill_pipe.hip, NVIDIA only; MLA_GPU_PREFILL_PIPE=0 the serial one) */
int gpu_prefill_pipe_on(void);
mla_status gpu_attn_prefill_pipe(hipStream_t st, const gpu_prefill_args *a);
/* the pipelined form with the warpgroups in turns (gpu_prefill_pong.hip, NVIDIA only): off by default,
 * MLA_GPU_PREFILL_PONG=1 picks it */
int gpu_prefill_pong_on(void);
mla_status gpu_attn_prefill_pong(hipStream_t st, const gpu_prefill_args *a);
/* the pipelined form with S over 128 keys (gpu_prefill_wide.hip, NVIDIA only): MLA_GPU_PREFILL_WIDE=1 */
int gpu_prefill_wide_on(void);
mla_status gpu_attn_prefill_wide(hipStream_t st, const gpu_prefill_args *a);
/* with a producer warpgroup (gpu_prefill_ws.hip, NVIDIA only): the default, MLA_GPU_PREFILL_WS=0 the
 * pipelined one, =2 with turns, =3 persistent */
int gpu_prefill_ws_on(void);
mla_status gpu_attn_prefill_ws(hipStream_t st, const gpu_prefill_args *a);

/* The decode kernels: the first (block per token, head, split), the head-grouped SIMT one
 * (gpu_decode_tile.h) and the tensor-core one (gpu_decode_mma.hip). */
typedef enum { GPU_DECODE_FIRST = 0, GPU_DECODE_TILED = 1, GPU_DECODE_MMA = 2 } gpu_decode_kernel;

typedef struct gpu_decode_args {
    const float *q_abs, *q_pe; /* [T, H, C], [T, H, R] f32 (bf16 or dequantized fp8 values) */
    gpu_kv_desc kv;
    const int32_t *tok_seq;
    const gpu_seq *seqs;
    float *part_o;   /* [T, H, S, C] */
    float *part_lse; /* [T, H, S] */
    uint16_t *o_lat; /* [T, H, C] */
    float *lse;      /* [T, H] */
    int t, h, splits;
    int split_len; /* 0: each token's rows cut into splits equal runs; > 0: runs of split_len rows from row 0 */
    float scale;
    int causal_plus, lse_bf16;
    float q_div; /* an fp8 query's q_scale (q_abs holds e4m3 codes times it), else 1 */
    int kernel;  /* gpu_decode_kernel; a kernel whose shapes do not fit falls back to the first */
} gpu_decode_args;
mla_status gpu_attn_decode(hipStream_t st, const gpu_decode_args *a);
/* The kernel gpu_attn_decode runs for a request (the first one when the requested does not fit). */
gpu_decode_kernel gpu_decode_pick(int kernel, const gpu_kv_desc *kv, int h);
/* KV split count the engine uses when kv_splits is 0, for the picked kernel (blocks = decode tokens x
 * heads, or x head groups for the grouped kernels: gpu_decode_blocks). */
int gpu_decode_splits(int blocks, int max_kv, int n_sm, gpu_decode_kernel k);
/* The split plan of a decode (gpu_split_plan.h). tot[i]: the keys decode token i attends; groups: the
 * head-group blocks of a token (gpu_decode_blocks of one token). */
gpu_split_plan gpu_decode_plan(const int *tot, int n, int groups, int n_sm, gpu_decode_kernel k);
int gpu_decode_blocks(int t, int h, gpu_decode_kernel k, const gpu_kv_desc *kv);
/* gpu_decode_mma.hip: NVIDIA only (0 / MLA_ERR_UNSUPPORTED on AMD) */
int gpu_decode_mma_fits(const gpu_kv_desc *kv, int h);
int gpu_decode_mma_heads(const gpu_kv_desc *kv, int h);
mla_status gpu_attn_decode_mma(hipStream_t st, const gpu_decode_args *a);

#ifdef __cplusplus
}
#endif
#endif
