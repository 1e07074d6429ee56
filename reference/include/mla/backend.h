/* backend.h: the engine vtable (ggml-backend style) every engine implements: the reference, the GPU
 * engine and external plugins. The split of forward_mha (prefill, naive form) and forward_mqa (decode,
 * absorbed form over the paged latent cache) mirrors vLLM's MLA layer.
 *
 * Lifecycle: new -> load(model, opts) -> { reset | forward_mha | forward_mqa -> read_tap* }* -> free.
 * Taps hold the values of the last forward call only. */
#ifndef MLA_BACKEND_H
#define MLA_BACKEND_H

#include "mla/config.h"
#include "mla/faults.h"
#include "mla/taps.h"
#include "mla/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_BACKEND_ABI_VERSION 1

/* The model an engine loads: opaque here; opened by the loader (mla_model/model.h). */
typedef struct mla_model mla_model;

/* Features an engine may or may not support; supports() answers 0 (no) or 1 (yes). */
typedef enum {
    MLA_FEAT_PROFILE_FP64 = 0, /* + profile: MLA_FEAT_PROFILE_FP64 + MLA_PROFILE_x */
    MLA_FEAT_PROFILE_BF16,
    MLA_FEAT_PROFILE_FP8KV,
    MLA_FEAT_PROFILE_FP8DS,
    MLA_FEAT_PROFILE_FP8W,
    MLA_FEAT_PREFILL_WITH_CONTEXT, /* forward_mha over already cached tokens */
    MLA_FEAT_MULTI_TOKEN_DECODE,   /* forward_mqa with s_q > 1 */
    MLA_FEAT_TAPS_INTERNAL,        /* q_nope, q_pe, kv_c, k_pe, q_absorbed, attn_core, lse */
    MLA_FEAT_FP8_E4M3FNUZ,
    MLA_FEAT_FAULTS,               /* honours mla_run_opts.faults */
    MLA_FEAT_COUNT
} mla_feature;

typedef enum { MLA_FP8_FN = 0, MLA_FP8_FNUZ = 1 } mla_fp8_kind;

typedef struct mla_run_opts {
    mla_profile profile;
    int block_size;       /* paged cache block (page) size in tokens; 64 by default */
    int max_seqs;         /* cache slots */
    int max_seq_len;      /* tokens per sequence the cache must hold */
    mla_fp8_kind fp8_kind;
    double kv_scale;      /* fp8kv per-tensor scale (vLLM k_scale); 0 = 1.0 */
    int fp8_query;        /* fp8kv: quantize the absorbed decode query to e4m3 (scale q_scale) */
    double q_scale;       /* 0 = 1.0 */
    int kv_splits;        /* GPU decode: KV splits; 0 = engine's choice */
    int shuffle_blocks;   /* 1: block tables are a seeded permutation of the pool (not identity) */
    unsigned faults;      /* MLA_FAULT(...) bits */
    unsigned seed;
    /* 1: attention rounds as tensor-core kernels do (reference/NUMERICS.md "tensor-core attention"):
     * P to bf16 before P.V, within an online softmax over tiles of mla_attn_tc_tile() keys. The GPU
     * engine runs its mma kernels, the reference emulates them. Appended last, so a plugin built
     * before it reads the fields above unchanged. */
    int attn_tc;
} mla_run_opts;

/* Keys per tile of the tensor-core attention kernels, for decode (absorbed form, `heads` query heads)
 * or prefill: the tile boundaries (from key 0 of a part or KV split) where their running softmax
 * maximum moves, which is what P's bf16 rounding is relative to. Decode above 32 heads: 64 on the
 * wgmma kernels, which take DeepSeek's cache rows (kv_lora_rank 512 + rope 64: wide 1), 32 on the
 * mma.sync kernel, which takes every other cache (shared memory holds 32 rows of 64 heads). */
static inline int mla_attn_tc_tile(int decode, int heads, int wide)
{
    return decode && heads > 32 && !wide ? 32 : 64;
}
/* wide of a model's cache: DeepSeek's rows of kv_lora_rank 512 + rope 64, which the wgmma decodes read in
 * 64-key tiles in every cache format at any head count (fp8 above 32 heads in head groups; until
 * 2026-12-06 fp8 above 64 heads ran 32-key tiles on mma.sync, and this took the profile and heads). */
static inline int mla_attn_tc_wide(int kv_lora_rank, int rope_dim)
{
    return kv_lora_rank == 512 && rope_dim == 64;
}

void mla_run_opts_default(mla_run_opts *o);

/* A batch of sequences, each with n_new new tokens at positions n_past .. n_past+n_new-1.
 * Tokens (and every tap row) are concatenated sequence after sequence.
 *
 * The batch contract. forward_mha and forward_mqa accept a batch only when all of these hold, and
 * refuse any other with MLA_ERR_INVALID and a detail naming the field (mla_batch_validate checks
 * them; every engine calls it before it touches its cache):
 *   1. n_seqs >= 1, and seq_ids, n_past, n_new and tokens are all set.
 *   2. 0 <= seq_ids[i] < max_seqs (mla_run_opts), and no seq_id appears twice in one batch: two
 *      entries for one slot would write the same cache rows, and the second entry's n_past could
 *      not be both "before" and "after" the first.
 *   3. n_past[i] == the tokens the slot holds now (0 after reset, then the sum of the n_new of
 *      every earlier call for it). No rewind: an n_past below the cached length is an error, not a
 *      truncation, because the usual cause is a caller's position off by one, which an engine that
 *      silently overwrote history would hide; dropping tokens is reset()'s job.
 *   4. n_new[i] >= 0. n_new == 0 is a legal no-op for that sequence: its cache, its n_past and the
 *      taps (no rows) are as if it were not listed. A scheduler that keeps a fixed slot list (vLLM's
 *      persistent batch, a sequence between steps, a request paused or just admitted with nothing
 *      scheduled yet) sends such entries; rules 2, 3 and 5 still hold for them. A batch whose every
 *      n_new is 0 computes nothing and leaves no tap (read_tap answers MLA_ERR_UNSUPPORTED).
 *   5. n_past[i] + n_new[i] <= max_seq_len. Each slot's block table holds
 *      ceil(max_seq_len / block_size) blocks, so this is also what keeps every written and read row
 *      inside the blocks the slot owns.
 *   6. 0 <= tokens[t] < vocab_size for every t < sum n_new, and sum n_new < 2^31.
 * An engine may refuse a valid batch for its own capacity (say a device buffer) with its own
 * status, and answers supports() for the shapes it does not run (MLA_FEAT_PREFILL_WITH_CONTEXT,
 * MLA_FEAT_MULTI_TOKEN_DECODE). The cache of a slot advances by n_new only when the call succeeds. */
typedef struct mla_batch {
    int n_seqs;
    const int32_t *seq_ids; /* [n_seqs] cache slot of each sequence, < max_seqs, all distinct */
    const int32_t *n_past;  /* [n_seqs] tokens already cached for that sequence (exactly) */
    const int32_t *n_new;   /* [n_seqs] new tokens (s_q), >= 0 (0: a no-op for that slot) */
    const int32_t *tokens;  /* [sum n_new] */
} mla_batch;

int64_t mla_batch_tokens(const mla_batch *b);

/* What a batch is checked against: the engine's options, its model and its cache. */
typedef struct mla_batch_limits {
    int max_seqs;          /* cache slots (mla_run_opts.max_seqs) */
    int max_seq_len;       /* tokens one slot holds (mla_run_opts.max_seq_len) */
    int vocab_size;        /* token ids are below this (mla_config.vocab_size) */
    const int32_t *cached; /* [max_seqs] tokens each slot holds now */
} mla_batch_limits;

/* The batch contract above, rule by rule. who names the engine in the detail ("reference", "gpu"):
 * "<who>: batch: n_past[1] = 3, expected 5 (the tokens cache slot 2 holds)". */
mla_status mla_batch_validate(const char *who, const mla_batch *b, const mla_batch_limits *lim);

/* A validated batch without its n_new == 0 entries (rule 4), for engines: *out points into *buf
 * (caller frees; NULL when nothing was dropped and *out is *b) and the tokens are b's (an empty
 * entry holds none). out->n_seqs == 0 when every entry was empty. */
mla_status mla_batch_drop_empty(const mla_batch *b, mla_batch *out, int32_t **buf);

typedef struct mla_backend_ops {
    uint32_t abi_version; /* MLA_BACKEND_ABI_VERSION */
    const char *name;
    /* Create a context. */
    mla_status (*create)(void **ctx);
    int (*supports)(void *ctx, mla_feature f);
    /* The model stays owned by the caller and outlives the context. */
    mla_status (*load)(void *ctx, mla_model *model, const mla_run_opts *opts);
    /* Drop every cached token of every sequence. */
    mla_status (*reset)(void *ctx);
    /* Prefill, naive (MHA) form: new tokens attend to cached context + themselves (causal). */
    mla_status (*forward_mha)(void *ctx, const mla_batch *b);
    /* Decode, absorbed (MQA) form over the paged latent cache; s_q >= 1, causal within the step. */
    mla_status (*forward_mqa)(void *ctx, const mla_batch *b);
    /* A new tensor (caller frees) with the tap of the last forward call, rows in batch order.
     * layer is ignored for global taps. MLA_ERR_UNSUPPORTED if the engine does not record it. */
    mla_status (*read_tap)(void *ctx, int layer, mla_tap tap, mla_tensor **out);
    /* The cached latent rows [n_past+n_new, C+R] of one sequence, dequantized to f64 (may be NULL). */
    mla_status (*read_kv)(void *ctx, int layer, int seq_id, mla_tensor **out);
    void (*destroy)(void *ctx);
} mla_backend_ops;


#ifdef __cplusplus
}
#endif
#endif
