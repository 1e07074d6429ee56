/* ref_internal.h: the scalar CPU reference engine's context and its ops. Everything is double; the
 * profile decides where values are rounded (reference/NUMERICS.md, numerics.h).
 * Ops are pure functions in llm.c's shape: outputs first, then inputs, weights, dimensions and the
 * resolved numerics/faults; none sees the engine context. An op that allocates returns mla_status
 * (MLA_ERR_NOMEM naming the buffer); an op that cannot fail returns void. Shapes are outermost first.
 * The matrix products (ref_matmul_*) keep BLAS order, output last. */
#ifndef MLA_REF_INTERNAL_H
#define MLA_REF_INTERNAL_H

#include "mla/attn_op.h"
#include "mla/backend.h"
#include "mla/quant.h"
#include "numerics.h"

/* Per-layer weights in double, already rounded/quantized as the profile stores them. */
typedef struct ref_layer {
    int loaded;
    double *attn_norm, *ffn_norm;     /* [D] */
    double *q_a, *q_a_norm, *q_b;     /* [Lq,D] [Lq] [H*Dqk,Lq] */
    double *q;                        /* [H*Dqk,D] when q_lora_rank == 0 */
    double *kv_a, *kv_a_norm, *kv_b;  /* [C+R,D] [C] [H*(P+V),C] */
    double *o;                        /* [D,H*V] */
    double *w1, *w2, *w3;             /* dense MLP: gate [I,D], down [D,I], up [I,D] */
    double *gate, *bias;              /* router [E,D], e_score_correction_bias [E] (or NULL) */
    double **e_w1, **e_w2, **e_w3;    /* [E] experts: [Im,D] [D,Im] [Im,D] */
    double *s_w1, *s_w2, *s_w3;       /* shared experts: [Is,D] [D,Is] [Is,D] */
} ref_layer;

/* Paged latent cache of one layer: blocks of block_size rows, allocated on first touch. */
typedef struct ref_cache {
    int row_bytes;     /* bytes per cached token */
    int block_size;
    int max_blocks;    /* pool size */
    int blocks_per_seq;
    uint8_t **blocks;  /* [max_blocks] */
    int32_t *table;    /* [max_seqs * blocks_per_seq] physical block of each logical block */
} ref_cache;

/* Attention dimensions (mla-spec.md §a names). */
typedef struct ref_attn_dims {
    int64_t H; /* heads */
    int64_t P; /* qk_nope_head_dim */
    int64_t R; /* qk_rope_head_dim */
    int64_t V; /* v_head_dim */
    int64_t C; /* kv_lora_rank */
} ref_attn_dims;

/* RoPE of one run: R dims, inv_freq[R/2] (borrowed), the cos/sin magnitude (attention_factor). */
typedef struct ref_rope_table {
    int64_t R;
    const double *inv_freq;
    double mag;
} ref_rope_table;

/* MoE shape and routing rule of one run (mla-spec.md §d). */
typedef struct ref_moe_cfg {
    int64_t D, E, K;      /* hidden, routed experts, experts per token */
    int64_t Im;           /* expert width; the shared experts are one MLP of width Im * n_shared */
    int64_t n_shared;
    int n_group;          /* expert groups; group-limited routing when > 1 and group_limited */
    int topk_group;       /* groups kept */
    int group_limited;    /* topk_method is not greedy */
    int sigmoid;          /* scores: sigmoid of the logits (else softmax) */
    int norm_topk_prob;   /* renormalize the K weights to sum 1 */
    double routed_scale;  /* routed_scaling_factor (ref_faults.routed_scale) */
} ref_moe_cfg;

typedef struct ref_ctx {
    mla_model *model;
    const mla_config *cfg;
    mla_run_opts opts;
    int round;             /* weights stored bf16-rounded (every profile but fp64; weights.c) */
    ref_numerics nm;       /* resolved at load */
    ref_faults faults;     /* resolved at load */
    ref_attn_dims ad;
    ref_rope_table rope;
    ref_moe_cfg moe;
    ref_layer *layers;     /* [L] */
    double *embed;         /* [N,D] */
    double *final_norm;    /* [D] */
    double *lm_head;       /* [N,D] */
    double *inv_freq;      /* [R/2] */
    ref_cache *cache;      /* [L] */
    int32_t *seq_len;      /* [max_seqs] tokens cached per sequence */
    mla_tensor *taps[MLA_TAP_COUNT]; /* global taps of the last call */
    mla_tensor **ltaps;    /* [L * MLA_TAP_COUNT] */
    const mla_attn_ops *attn_ops; /* non-NULL: attention delegated (attn_delegate.c); a NULL entry: ours */
} ref_ctx;

/* 1 under fp8w (weights.c: which linears are block-fp8 quantized). */
int ref_is_fp8_linear_profile(const ref_ctx *c);

/* ---- ops (ops.c) ---- */
/* y[T,N] = x[T,K] . W[N,K]^T, then rounded to bf16 (profile). fp8 = 1 and nm->fp8_linear: x is 1x128
 * act-quantized first. */
mla_status ref_linear(double *y, const double *x, const double *w, int64_t T, int64_t K, int64_t N, int fp8,
                      const ref_numerics *nm);
/* fn(arg, i) for i in [0, n) on the reference's threads; tasks must be independent. Matrix products
 * inside a task run single-threaded with the same tiles, so results do not depend on the split. */
void ref_parallel_for(int64_t n, void (*fn)(void *arg, int64_t i), void *arg);
/* Plain y[M,N] = a[M,K] . b[N,K]^T (no rounding), for products within one sequence. */
void ref_matmul_nt(const double *a, const double *b, int64_t M, int64_t K, int64_t N, double *y);
/* ref_matmul_nt for products whose rows span a batch (projections, router): dgemm sees the same
 * call shape whatever the batch, so a row's result does not depend on its neighbours. */
void ref_matmul_nt_batch(const double *a, const double *b, int64_t M, int64_t K, int64_t N, double *y);
/* Plain y[M,N] = a[M,K] . b[K,N]. */
void ref_matmul_nn(const double *a, const double *b, int64_t M, int64_t K, int64_t N, double *y);
/* y[T,n] (row stride ldy) = gamma[n] * x / sqrt(mean(x^2) + eps), x[T,n] row stride ldx; one rounding.
 * y may be x (same strides). */
void ref_rmsnorm(double *y, int64_t ldy, const double *x, int64_t ldx, const double *gamma, int64_t T,
                 int64_t n, double eps, const ref_numerics *nm);
/* Row-wise causal softmax of s[m,nk] in place: row i over its first vis[i] entries (the rest get p = 0;
 * vis[i] <= 0: all zero, lse -inf); lse[m] = ln sum exp(s). */
void ref_softmax_rows(double *s, double *lse, const int64_t *vis, int64_t m, int64_t nk);
/* As ref_softmax_rows with the P rounding of tensor-core kernels (tiles of `tile` keys from key 0;
 * tile <= 0: exactly ref_softmax_rows). */
void ref_softmax_rows_tc(double *s, double *lse, const int64_t *vis, int64_t m, int64_t nk, int64_t tile);
/* In place RoPE of x[R] at position pos: pairs (2i, 2i+1), or (i, i + R/2) when halfsplit. */
void ref_rope(double *x, int64_t pos, const ref_rope_table *rope, int halfsplit, const ref_numerics *nm);
/* y[T,D] = W2(silu(W1 x) * W3 x), x[T,D], w1/w3 [inter,D], w2 [D,inter], with the profile's roundings. */
mla_status ref_mlp(double *y, const double *x, const double *w1, const double *w2, const double *w3, int64_t T,
                   int64_t D, int64_t inter, const ref_numerics *nm);

/* ---- cache (cache.c) ---- */
mla_status ref_cache_init(ref_ctx *c);
void ref_cache_free(ref_ctx *c);
/* Write token pos of seq: kv_c[C], k_pe[R] (already rounded), quantized per profile. */
mla_status ref_cache_write(ref_ctx *c, int layer, int seq, int64_t pos, const double *kv_c,
                           const double *k_pe);
/* Read token pos of seq dequantized into row[C+R]. */
void ref_cache_read(const ref_ctx *c, int layer, int seq, int64_t pos, double *row);
/* The stored bytes of token pos of seq (row_bytes of them), or NULL when its block was never written. */
const uint8_t *ref_cache_raw_row(const ref_ctx *c, int layer, int seq, int64_t pos);

/* ---- attention (attention.c) ---- */
/* LSE merge of two partial attentions (mla-spec.md §g.13): oa[dv], *la become the merge of (oa, la) and
 * (ob, lb); a -inf part contributes nothing. lse_bf16: the LSEs are read bf16-rounded (the fault). */
void ref_lse_merge(double *oa, double *la, const double *ob, const double *lb, int64_t dv, int lse_bf16,
                   const ref_numerics *nm);
/* Naive form of one sequence: context ctx[n_past, C+R] (cache rows, dequantized) + the n new tokens
 * (causal), attended separately and LSE-merged, as chunked prefill over a cache does.
 * q[n,H,P+R] (q_pe roped), kv_c_new[n,C], k_pe_new[n,R], kv_b[H*(P+V),C] -> core[n,H,V], lse[n,H]. */
mla_status ref_attn_mha(double *core, double *lse, const double *q, const double *kv_c_new,
                        const double *k_pe_new, const double *ctx, int64_t n_past, int64_t n,
                        const double *kv_b, ref_attn_dims d, const ref_numerics *nm, const ref_faults *f);
/* Absorbed form of one sequence over rows[n_past+n, C+R] (cache rows, the new ones included).
 * q[n,H,P+R], kv_b[H*(P+V),C] -> q_abs[n,H,C], core[n,H,V], lse[n,H]. */
mla_status ref_attn_mqa(double *core, double *lse, double *q_abs, const double *q, const double *rows,
                        int64_t n_past, int64_t n, const double *kv_b, ref_attn_dims d, const ref_numerics *nm,
                        const ref_faults *f);
/* The absorbed decode query: q_abs[n,H,C] = bf16(q_nope . W_UK) per head, qf[n*H, C+R] = [q_abs | q_pe]
 * rows (t, h), through fp8 and back when nm->q_fp8. */
mla_status ref_mqa_query(double *q_abs, double *qf, const double *q, int64_t n, const double *kv_b,
                         ref_attn_dims d, const ref_numerics *nm);

/* ---- delegated attention (attn_delegate.c): the contracts of ref_attn_mqa / ref_attn_mha, through
 * an attn_op.h operator over kv, the sequence's cache in the operator's format (ref_attn_pool_build:
 * the new tokens' rows included, so the caller writes them to the cache first). ---- */
typedef struct ref_attn_pool {
    uint8_t *data;     /* [num_blocks, page_size, row bytes]; unused rows NaN */
    int32_t *table;    /* identity block table */
    mla_attn_cache kv; /* views of data and table */
} ref_attn_pool;
/* Rows [0, S) of seq in layer's cache, in the format the operator reads for c's profile. */
mla_status ref_attn_pool_build(ref_attn_pool *p, const ref_ctx *c, int layer, int seq, int64_t S);
void ref_attn_pool_free(ref_attn_pool *p);
mla_status ref_attn_mha_delegate(double *core, double *lse, const double *q, const double *kv_c_new,
                                 const double *k_pe_new, int64_t n_past, int64_t n, const mla_attn_cache *kv,
                                 const double *kv_b, ref_attn_dims d, const ref_numerics *nm, const ref_faults *f,
                                 const mla_attn_ops *ops);
mla_status ref_attn_mqa_delegate(double *core, double *lse, double *q_abs, const double *q, int64_t n_past,
                                 int64_t n, const mla_attn_cache *kv, const double *kv_b, ref_attn_dims d,
                                 const ref_numerics *nm, const ref_faults *f, const mla_attn_ops *ops);
/* 1 when c->attn_ops can serve profile p (its cache format and the forms it has entries for). */
int ref_attn_delegate_supports(const mla_attn_ops *ops, mla_profile p);

/* ---- MoE (moe.c) ---- */
/* Routing of one token: logits[E], bias[E] (e_score_correction_bias or NULL) -> ids[K], w[K]. */
mla_status ref_moe_route(int32_t *ids, double *w, const double *logits, const double *bias,
                         const ref_moe_cfg *m, const ref_numerics *nm);
/* x[T,D] -> y[T,D] through the router and experts of lw; router_logits[T,E], ids[T,K], weights[T,K]. */
mla_status ref_moe(double *y, double *router_logits, int32_t *ids, double *weights, const double *x, int64_t T,
                   const ref_layer *lw, const ref_moe_cfg *m, const ref_numerics *nm);

/* ---- forward pass (forward.c) ---- */
/* One call over a batch already validated: every tap of the call made anew in c, the cache extended.
 * stream_weights: each layer's weights are released after use. */
mla_status ref_forward(ref_ctx *c, const mla_batch *b, int absorbed, int stream_weights);
/* Frees every tap of the last call. */
void ref_taps_clear(ref_ctx *c);

/* ---- weights (weights.c) ---- */
mla_status ref_layer_load(ref_ctx *c, int l);
void ref_layer_release(ref_ctx *c, int l);
mla_status ref_globals_load(ref_ctx *c);
#endif
