/* ref_internal.h: the scalar CPU reference engine's context and its ops (one pure function per op).
 * Everything is double; the profile decides where values are rounded (reference/NUMERICS.md). */
#ifndef MLA_REF_INTERNAL_H
#define MLA_REF_INTERNAL_H

#include "mla/attn_op.h"
#include "mla/backend.h"
#include "mla/quant.h"

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

typedef struct ref_ctx {
    mla_model *model;
    const mla_config *cfg;
    mla_run_opts opts;
    int round;             /* 0 for fp64, 1 when activations are stored as bf16/f32 */
    ref_layer *layers;     /* [L] */
    double *embed;         /* [N,D] */
    double *final_norm;    /* [D] */
    double *lm_head;       /* [N,D] */
    double *inv_freq;      /* [R/2] */
    ref_cache *cache;      /* [L] */
    int32_t *seq_len;      /* [max_seqs] tokens cached per sequence */
    mla_tensor *taps[MLA_TAP_COUNT]; /* global taps of the last call */
    mla_tensor **ltaps;    /* [L * MLA_TAP_COUNT] */
    const mla_attn_ops *attn_ops; /* non-NULL: attention core delegated (ref_hook.h, attn_delegate.c) */
} ref_ctx;

/* ---- rounding at storage points ---- */
double ref_rnd(const ref_ctx *c, double x);   /* bf16 storage point */
double ref_rnd32(const ref_ctx *c, double x); /* f32 storage point */
void ref_rnd_vec(const ref_ctx *c, double *x, int64_t n);
void ref_rnd32_vec(const ref_ctx *c, double *x, int64_t n);
int ref_is_fp8_linear_profile(const ref_ctx *c);

/* ---- ops (ops.c) ---- */
/* y[T,N] = x[T,K] . W[N,K]^T, then rounded to bf16 (profile). fp8 = 1: x is 1x128 act-quantized first. */
void ref_linear(const ref_ctx *c, const double *x, const double *w, int64_t T, int64_t K, int64_t N,
                int fp8, double *y);
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
/* y[T,n] = gamma * x / sqrt(mean(x^2) + eps), x row stride ldx; one rounding. */
void ref_rmsnorm(const ref_ctx *c, const double *x, int64_t ldx, const double *gamma, int64_t T,
                 int64_t n, double eps, double *y, int64_t ldy);
/* In-place RoPE of x[R] at position pos (interleaved pairs; half-split with the rope fault). */
void ref_rope(const ref_ctx *c, double *x, int64_t pos);
/* y[T,D] = W2(silu(W1 x) * W3 x) with the profile's roundings; inter = hidden width. */
void ref_mlp(const ref_ctx *c, const double *x, int64_t T, const double *w1, const double *w2,
             const double *w3, int64_t inter, double *y);

/* ---- cache (cache.c) ---- */
mla_status ref_cache_init(ref_ctx *c);
void ref_cache_free(ref_ctx *c);
/* Write token pos of seq: kv_c[C], k_pe[R] (already rounded), quantized per profile. */
mla_status ref_cache_write(ref_ctx *c, int layer, int seq, int64_t pos, const double *kv_c,
                           const double *k_pe);
/* Read token pos of seq dequantized into row[C+R]. */
void ref_cache_read(const ref_ctx *c, int layer, int seq, int64_t pos, double *row);

/* ---- attention (attention.c) ---- */
/* Naive form over cached context [0, n_past) + the new tokens (causal), LSE-merged.
 * q[n,H,P+R] (q_pe roped), kv_c_new[n,C], k_pe_new[n,R] -> core[n,H,V], lse[n,H]. */
mla_status ref_attn_mha(const ref_ctx *c, int layer, int seq, int64_t n_past, int64_t n, const double *q,
                        const double *kv_c_new, const double *k_pe_new, double *core, double *lse);
/* Absorbed form over the paged cache rows [0, n_past+n) (the new rows already written).
 * q[n,H,P+R] -> q_abs[n,H,C], core[n,H,V], lse[n,H]. */
mla_status ref_attn_mqa(const ref_ctx *c, int layer, int seq, int64_t n_past, int64_t n, const double *q,
                        double *q_abs, double *core, double *lse);
/* Softmax scale with the fault applied. */
double ref_softmax_scale(const ref_ctx *c);
/* The absorbed decode query: q_abs[n,H,C] = bf16(q_nope . W_UK) per head, qf[n*H, C+R] = [q_abs | q_pe]
 * rows (t, h), quantized to fp8 and back when the profile (fp8_query) or the saturation fault says so. */
mla_status ref_mqa_query(const ref_ctx *c, int layer, int64_t n, const double *q, double *q_abs, double *qf);

/* ---- delegated attention (attn_delegate.c): same contracts as above, through c->attn_ops.
 * Both read the new tokens' rows from the cache, so the caller writes them first. ---- */
mla_status ref_attn_mha_delegate(const ref_ctx *c, int layer, int seq, int64_t n_past, int64_t n,
                                 const double *q, const double *kv_c_new, const double *k_pe_new,
                                 double *core, double *lse);
mla_status ref_attn_mqa_delegate(const ref_ctx *c, int layer, int seq, int64_t n_past, int64_t n,
                                 const double *q, double *q_abs, double *core, double *lse);
/* 1 when c->attn_ops can serve profile p (its cache format and both entries). */
int ref_attn_delegate_supports(const mla_attn_ops *ops, mla_profile p);

/* ---- MoE (moe.c) ---- */
/* x[T,D] -> y[T,D]; router_logits[T,E], ids[T,K], weights[T,K]. */
void ref_moe(const ref_ctx *c, const ref_layer *lw, const double *x, int64_t T, double *router_logits,
             int32_t *ids, double *weights, double *y);

/* ---- weights (weights.c) ---- */
mla_status ref_layer_load(ref_ctx *c, int l);
void ref_layer_release(ref_ctx *c, int l);
mla_status ref_globals_load(ref_ctx *c);
#endif
