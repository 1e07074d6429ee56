/* taps.h: the tap points every engine records, as one X-macro.
 * X(id, name, scope, dims, shape symbols, produced by, op)
 *   scope    : L = per layer, G = global
 *   dims     : rank of the tap for a call of T tokens
 *   shape    : symbolic, outermost first; T = tokens of the call, D hidden, H heads, P nope, R rope,
 *              C kv_lora_rank, V v_head_dim, E routed experts, K experts per token, N vocab
 *   produced : B = both forms, M = naive (forward_mha) only, Q = absorbed (forward_mqa) only,
 *              E = MoE layers only
 *   op       : the operation that produces the tap from the taps before it (its inputs), for
 *              naming the op at fault when the tap is the first to diverge
 * The order here is the order of computation inside a layer, so "first diverging tap" is the
 * first in this list that fails. */
#ifndef MLA_TAPS_H
#define MLA_TAPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_TAP_LIST(X)                                                             \
    X(MLA_TAP_EMBED, "embed", 'G', 2, "T,D", 'B',                                   \
      "embedding lookup")                                                           \
    X(MLA_TAP_ATTN_NORM, "attn_norm", 'L', 2, "T,D", 'B',                           \
      "input RMSNorm (input_layernorm)")                                            \
    X(MLA_TAP_Q_NOPE, "q_nope", 'L', 3, "T,H,P", 'B',                               \
      "query projection (q_a_proj, q_a_layernorm, q_b_proj or q_proj)")             \
    X(MLA_TAP_Q_PE, "q_pe", 'L', 3, "T,H,R", 'B',                                   \
      "RoPE/YaRN on the query (pairing, frequencies, position)")                    \
    X(MLA_TAP_KV_C, "kv_c", 'L', 2, "T,C", 'B',                                     \
      "kv_a_proj_with_mqa + kv_a_layernorm (the latent that is cached)")            \
    X(MLA_TAP_K_PE, "k_pe", 'L', 2, "T,R", 'B',                                     \
      "RoPE/YaRN on the shared key (pairing, frequencies, position)")               \
    X(MLA_TAP_Q_ABSORBED, "q_absorbed", 'L', 3, "T,H,C", 'Q',                       \
      "W_UK absorption of q_nope (kv_b_proj slicing)")                              \
    X(MLA_TAP_ATTN_CORE, "attn_core", 'L', 3, "T,H,V", 'B',                         \
      "attention: scores, softmax scale, causal mask, cache read, LSE merge, W_UV") \
    X(MLA_TAP_LSE, "lse", 'L', 2, "T,H", 'B',                                       \
      "softmax normalizer (log-sum-exp)")                                           \
    X(MLA_TAP_ATTN_OUT, "attn_out", 'L', 2, "T,D", 'B',                             \
      "o_proj")                                                                     \
    X(MLA_TAP_FFN_NORM, "ffn_norm", 'L', 2, "T,D", 'B',                             \
      "residual add + post_attention_layernorm")                                    \
    X(MLA_TAP_ROUTER_LOGITS, "router_logits", 'L', 2, "T,E", 'E',                   \
      "router gate projection")                                                     \
    X(MLA_TAP_TOPK_IDS, "topk_ids", 'L', 2, "T,K", 'E',                             \
      "expert selection (scoring, bias, group-limited top-k)")                      \
    X(MLA_TAP_TOPK_WEIGHTS, "topk_weights", 'L', 2, "T,K", 'E',                     \
      "routing weights (normalization, routed_scaling_factor)")                     \
    X(MLA_TAP_FFN_OUT, "ffn_out", 'L', 2, "T,D", 'B',                               \
      "experts / dense MLP and their combination")                                  \
    X(MLA_TAP_OUT, "out", 'L', 2, "T,D", 'B',                                       \
      "residual add")                                                               \
    X(MLA_TAP_FINAL_NORM, "final_norm", 'G', 2, "T,D", 'B',                         \
      "final RMSNorm")                                                              \
    X(MLA_TAP_LOGITS, "logits", 'G', 2, "T,N", 'B',                                 \
      "lm_head")

typedef enum {
#define MLA_TAP_ENUM(id, name, scope, dims, shape, prod, op) id,
    MLA_TAP_LIST(MLA_TAP_ENUM)
#undef MLA_TAP_ENUM
        MLA_TAP_COUNT
} mla_tap;

struct mla_config;

const char *mla_tap_name(mla_tap t);
int mla_tap_from_name(const char *name, mla_tap *out); /* 0 ok, -1 unknown */
int mla_tap_is_layer(mla_tap t);                       /* 1 per-layer, 0 global */
char mla_tap_producer(mla_tap t);                      /* 'B', 'M', 'Q' or 'E' */
const char *mla_tap_op(mla_tap t);                     /* the producing op, "?" when t is not a tap */
/* Shape of the tap for a call of ntok tokens under cfg; returns the rank. */
int mla_tap_shape(mla_tap t, const struct mla_config *cfg, int64_t ntok, int64_t *shape);
/* 1 if the tap exists in this layer (router taps only in MoE layers). */
int mla_tap_in_layer(mla_tap t, const struct mla_config *cfg, int layer);

#ifdef __cplusplus
}
#endif
#endif
