/* gpu_scratch.h: the forward pass's grow-only device scratch buffers, listed once. The list generates
 * the gpu_scratch fields (gpu_internal.h) and the loop that frees them (gpu_engine.hip); a new buffer
 * is one line here. Shapes: T tokens of the call, S sequences, H heads, n_ws workspace rows (context +
 * new tokens of every sequence), K experts per token, splits = KV splits of the decode. */
#ifndef MLA_GPU_SCRATCH_H
#define MLA_GPU_SCRATCH_H

/* X(name): one gpu_buf per line. */
#define GPU_SCRATCH_LIST(X)                                                                        \
    X(tokens)       /* [T] i32: the call's token ids                                             */ \
    X(tok_seq)      /* [T] i32: sequence index of each token                                     */ \
    X(seqs)         /* [S] gpu_seq: per-sequence metadata                                        */ \
    X(q_a)          /* [T, Lq] bf16: q_a_proj output (q_lora_rank > 0)                           */ \
    X(q_a_normed)   /* [T, Lq] bf16: q_a after q_a_layernorm                                     */ \
    X(q_proj)       /* [T, H, P+R] bf16: the query projection before RoPE                        */ \
    X(kv_a)         /* [T, C+R] bf16: kv_a_proj_with_mqa output                                  */ \
    X(ws_kv_c)      /* [n_ws, C] bf16: naive form, context rows from the cache then new kv_c     */ \
    X(ws_k_pe)      /* [n_ws, R] bf16: the same rows' k_pe                                       */ \
    X(ws_k_nope_v)  /* [n_ws, H (P+V)] bf16: ws_kv_c . W_kvb^T, per head K_nope then V          */ \
    X(q_abs_f32)    /* [T, H, C] f32: absorbed query for the decode kernel (fp8-rounded or not)  */ \
    X(q_pe_f32)     /* [T, H, R] f32: roped q_pe for the decode kernel                           */ \
    X(split_o)      /* [T, H, splits, C] f32: each KV split's normalized latent output           */ \
    X(split_lse)    /* [T, H, splits] f32: each KV split's LSE                                   */ \
    X(o_latent)     /* [T, H, C] bf16: the merged latent output, before W_UV                     */ \
    X(resid_attn)   /* [T, D] bf16: x + attn_out, the residual stream between attention and FFN  */ \
    X(mlp_gate)     /* [m, I] bf16: gate_proj output                                             */ \
    X(mlp_up)       /* [m, I] bf16: up_proj output                                               */ \
    X(mlp_act)      /* [m, I] bf16: silu(gate) * up                                              */ \
    X(act_q8)       /* [m, k] e4m3fn: fp8w activation codes of one linear                        */ \
    X(act_q8_scale) /* [m, ceil(k/128)] f32: their 1x128 group scales                            */ \
    X(moe_rows)     /* [T K] i32: token row of each (token, expert) pair, grouped by expert      */ \
    X(moe_weight)   /* [T K] f32: its routing weight, in the same order                          */ \
    X(moe_x)        /* [T, D] bf16: the rows of one expert, gathered                             */ \
    X(moe_y)        /* [T, D] bf16: that expert's output rows                                    */ \
    X(moe_acc)      /* [T, D] f32: weighted sum of the routed experts                            */

#endif
