/* attn_op.h: the operator-level plugin ABI: an external MLA attention kernel checked on its own,
 * fed golden inputs (queries, a paged latent cache, block tables, scales). Header-only: a plugin
 * needs no mlacheck library to build against it, only this file, mla/kv.h and mla/mla.h.
 *
 * A plugin exports (besides or instead of plugin.h's mla_plugin_register):
 *
 *     const mla_attn_ops *mla_attn_plugin_register(uint32_t host_attn_abi_version);
 *
 * returning its vtable, or NULL when it cannot serve that host version. The vtable's abi_version
 * must equal MLA_ATTN_ABI_VERSION of the header it was built with; mlacheck refuses a mismatch
 * (MLA_ERR_VERSION, exit code 2). A missing symbol is MLA_ERR_NOT_FOUND (exit 2). supports() is asked
 * before every case; a case it declines is skipped, and a run where everything was skipped exits 77.
 *
 * The two entries mirror vLLM's MLA layer:
 *   mqa: absorbed decode. q = [q_nope . W_UK | q_pe] per head, attended over the paged latent cache
 *        rows [c_kv | k_pe] (MQA, one kv head); out is the LATENT output (before W_UV).
 *   mha: naive prefill. New tokens attend to their cached context (read from the paged cache and
 *        expanded with W_kvb) and, causally, to themselves (kv_c/k_pe given unquantized, as vLLM's
 *        forward_mha receives them); out is per-head V.
 * Both are varlen: sequence b owns query rows cu_seqlens_q[b] .. cu_seqlens_q[b+1]-1 (s_q = their
 * count, possibly 0) and has seq_lens[b] keys in the cache, the new tokens being the LAST s_q of
 * them. Query i (0-based within its sequence) sees keys j < seq_lens[b] - s_q + i + 1.
 * A query that sees no key writes out = 0, lse = -INFINITY.
 *
 * Cache: one pool [num_blocks, page_size, row] of rows in one of mla_kv_format (mla/kv.h); logical
 * token j of sequence b is row (j % page_size) of block block_table[b * max_blocks_per_seq +
 * j / page_size].
 * Rows beyond seq_lens[b] and blocks the table does not use hold NaN: a kernel must not read them
 * (block_table entries past a sequence's last block point at such NaN blocks).
 *
 * Numbers: q, kv_c, k_pe, w_kv_b are f32 holding bf16-representable values (a bf16 kernel converts
 * them exactly); out is f32 (a bf16 kernel writes its bf16 result widened); lse is the natural-log
 * log-sum-exp of the scaled scores in f32. The reference (mla_ref_attn_ops) computes in f64.
 * All strides are implied (contiguous, outermost first). Pointers are borrowed for the call.
 *
 * Rules for plugin authors: never exit or print to stdout; return mla_status codes; do not keep
 * pointers past the call; be thread-compatible (the harness calls from one thread).
 * `mlacheck ops` and `run` load and call a library plugin in a child process with a time limit per
 * call (MLA_PLUGIN_TIMEOUT_S, default 600 s): a crash, exit or hang, in the register function too,
 * is an engine error (exit 3) naming the entry point. */
#ifndef MLA_ATTN_OP_H
#define MLA_ATTN_OP_H

#include "mla/kv.h"
#include "mla/mla.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_ATTN_ABI_VERSION 1
#define MLA_ATTN_PLUGIN_SYMBOL "mla_attn_plugin_register"

/* Marks a plugin's register functions exported when the plugin builds with -fvisibility=hidden. */
#if defined(__GNUC__)
#define MLA_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define MLA_PLUGIN_EXPORT
#endif

/* Features a kernel may decline. supports(f, value) answers 1 (yes) or 0 (no). */
typedef enum {
    MLA_ATTN_FEAT_MQA = 0,           /* the mqa entry at all (value ignored) */
    MLA_ATTN_FEAT_MHA,               /* the mha entry at all (value ignored) */
    MLA_ATTN_FEAT_KV_FORMAT,         /* value: mla_kv_format */
    MLA_ATTN_FEAT_FP8_FNUZ,          /* e4m3fnuz codes (MI300) instead of e4m3fn (value ignored) */
    MLA_ATTN_FEAT_PAGE_SIZE,         /* value: tokens per page */
    MLA_ATTN_FEAT_NUM_HEADS,         /* value: query heads H */
    MLA_ATTN_FEAT_KV_LORA_RANK,      /* value: C */
    MLA_ATTN_FEAT_ROPE_DIM,          /* value: R */
    MLA_ATTN_FEAT_MULTI_TOKEN_DECODE,/* mqa with some s_q > 1 (value ignored) */
    MLA_ATTN_FEAT_MHA_CONTEXT,       /* mha with cached context (value ignored) */
    MLA_ATTN_FEAT_COUNT
} mla_attn_feature;

/* The paged latent cache, shared by both entries. */
typedef struct mla_attn_cache {
    mla_kv_format format;
    int32_t fp8_fnuz;              /* MLA_KV_FP8 / FP8_DS codes: 0 e4m3fn, 1 e4m3fnuz */
    const void *data;              /* [num_blocks, page_size, mla_kv_row_bytes(format, C, R)] */
    int32_t num_blocks, page_size;
    float k_scale;                 /* MLA_KV_FP8: per-tensor dequant multiplier (vLLM k_scale) */
    const int32_t *block_table;    /* [batch, max_blocks_per_seq] */
    int32_t max_blocks_per_seq;
} mla_attn_cache;

/* Absorbed decode (vLLM forward_mqa, FlashMLA flash_mla_with_kvcache). */
typedef struct mla_mqa_args {
    int32_t batch;                 /* B */
    int32_t num_heads;             /* H (per GPU) */
    int32_t kv_lora_rank;          /* C (512 for DeepSeek/Kimi) */
    int32_t rope_dim;              /* R (64) */
    int32_t total_q;               /* T = cu_seqlens_q[B] */
    const int32_t *cu_seqlens_q;   /* [B+1] */
    const int32_t *seq_lens;       /* [B] keys per sequence, the new tokens included */
    double softmax_scale;          /* (P+R)^-0.5 * mscale^2: NOT (C+R)^-0.5 */
    const float *q;                /* [T, H, C+R] */
    mla_attn_cache kv;
    float *out;                    /* [T, H, C] latent output, before W_UV */
    float *lse;                    /* [T, H] */
} mla_mqa_args;

/* Naive prefill over new tokens plus cached context (vLLM forward_mha with context chunks). */
typedef struct mla_mha_args {
    int32_t batch, num_heads, kv_lora_rank, rope_dim;
    int32_t nope_dim;              /* P (qk_nope_head_dim) */
    int32_t v_dim;                 /* V (v_head_dim) */
    int32_t total_q;               /* T = cu_seqlens_q[B] */
    const int32_t *cu_seqlens_q;   /* [B+1] new tokens */
    const int32_t *seq_lens;       /* [B] context + new; context = seq_lens[b] - s_q, read from kv */
    double softmax_scale;
    const float *q;                /* [T, H, P+R] (q_pe roped) */
    const float *kv_c;             /* [T, C] the new tokens' latent (unquantized) */
    const float *k_pe;             /* [T, R] the new tokens' rope key (roped) */
    const float *w_kv_b;           /* [H*(P+V), C] kv_b_proj rows of these H heads: per head P rows
                                      of W_UK then V rows of W_UV */
    mla_attn_cache kv;             /* the context rows (the new rows are there too; use kv_c/k_pe) */
    float *out;                    /* [T, H, V] */
    float *lse;                    /* [T, H] */
} mla_mha_args;

typedef struct mla_attn_ops {
    uint32_t abi_version;          /* MLA_ATTN_ABI_VERSION */
    const char *name;
    int (*supports)(mla_attn_feature f, int64_t value);
    mla_status (*mqa)(const mla_mqa_args *a);  /* may be NULL when MQA is not supported */
    mla_status (*mha)(const mla_mha_args *a);  /* may be NULL when MHA is not supported */
} mla_attn_ops;

typedef const mla_attn_ops *(*mla_attn_plugin_register_fn)(uint32_t host_attn_abi_version);


#ifdef __cplusplus
}
#endif
#endif
