/* taps.h: the tap points every engine records, as one X-macro.
 * X(id, name, scope, dims, shape symbols, produced by)
 *   scope    : L = per layer, G = global
 *   dims     : rank of the tap for a call of T tokens
 *   shape    : symbolic, outermost first; T = tokens of the call, D hidden, H heads, P nope, R rope,
 *              C kv_lora_rank, V v_head_dim, E routed experts, K experts per token, N vocab
 *   produced : B = both forms, M = naive (forward_mha) only, Q = absorbed (forward_mqa) only,
 *              E = MoE layers only
 * The order here is the order of computation inside a layer, so "first diverging tap" is the
 * first in this list that fails. */
#ifndef MLA_TAPS_H
#define MLA_TAPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_TAP_LIST(X)                                             \
    X(MLA_TAP_EMBED, "embed", 'G', 2, "T,D", 'B')                   \
    X(MLA_TAP_ATTN_NORM, "attn_norm", 'L', 2, "T,D", 'B')           \
    X(MLA_TAP_Q_NOPE, "q_nope", 'L', 3, "T,H,P", 'B')               \
    X(MLA_TAP_Q_PE, "q_pe", 'L', 3, "T,H,R", 'B')                   \
    X(MLA_TAP_KV_C, "kv_c", 'L', 2, "T,C", 'B')                     \
    X(MLA_TAP_K_PE, "k_pe", 'L', 2, "T,R", 'B')                     \
    X(MLA_TAP_Q_ABSORBED, "q_absorbed", 'L', 3, "T,H,C", 'Q')       \
    X(MLA_TAP_ATTN_CORE, "attn_core", 'L', 3, "T,H,V", 'B')         \
    X(MLA_TAP_LSE, "lse", 'L', 2, "T,H", 'B')                       \
    X(MLA_TAP_ATTN_OUT, "attn_out", 'L', 2, "T,D", 'B')             \
    X(MLA_TAP_FFN_NORM, "ffn_norm", 'L', 2, "T,D", 'B')             \
    X(MLA_TAP_ROUTER_LOGITS, "router_logits", 'L', 2, "T,E", 'E')   \
    X(MLA_TAP_TOPK_IDS, "topk_ids", 'L', 2, "T,K", 'E')             \
    X(MLA_TAP_TOPK_WEIGHTS, "topk_weights", 'L', 2, "T,K", 'E')     \
    X(MLA_TAP_FFN_OUT, "ffn_out", 'L', 2, "T,D", 'B')               \
    X(MLA_TAP_OUT, "out", 'L', 2, "T,D", 'B')                       \
    X(MLA_TAP_FINAL_NORM, "final_norm", 'G', 2, "T,D", 'B')         \
    X(MLA_TAP_LOGITS, "logits", 'G', 2, "T,N", 'B')

typedef enum {
#define MLA_TAP_ENUM(id, name, scope, dims, shape, prod) id,
    MLA_TAP_LIST(MLA_TAP_ENUM)
#undef MLA_TAP_ENUM
        MLA_TAP_COUNT
} mla_tap;

struct mla_config;

const char *mla_tap_name(mla_tap t);
int mla_tap_from_name(const char *name, mla_tap *out); /* 0 ok, -1 unknown */
int mla_tap_is_layer(mla_tap t);                       /* 1 per-layer, 0 global */
char mla_tap_producer(mla_tap t);                      /* 'B', 'M', 'Q' or 'E' */
/* Shape of the tap for a call of ntok tokens under cfg; returns the rank. */
int mla_tap_shape(mla_tap t, const struct mla_config *cfg, int64_t ntok, int64_t *shape);
/* 1 if the tap exists in this layer (router taps only in MoE layers). */
int mla_tap_in_layer(mla_tap t, const struct mla_config *cfg, int layer);

#ifdef __cplusplus
}
#endif
#endif
