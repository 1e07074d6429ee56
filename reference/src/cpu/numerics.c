/* numerics.c: the profile and the faults of a run resolved into ref_numerics / ref_faults (numerics.h),
 * once at load; the only place in the reference that reads mla_run_opts.faults. */
#include "numerics.h"

#include <math.h>

void ref_numerics_resolve(const mla_config *cfg, const mla_run_opts *o, ref_numerics *nm, ref_faults *f)
{
    unsigned F = o->faults;
    int low = o->profile != MLA_PROFILE_FP64;
    int want_q8 = o->profile == MLA_PROFILE_FP8KV && o->fp8_query;
    int wide = mla_attn_tc_wide(cfg->kv_lora_rank, cfg->qk_rope_head_dim);
    *nm = (ref_numerics){
        .round_bf16 = low,
        .round_f32 = low,
        .fp8_linear = o->profile == MLA_PROFILE_FP8W,
        .rope_fp32_angle = low,
        .q_fp8 = want_q8 || (F & MLA_FAULT(MLA_FAULT_FP8_Q_SATURATION)) != 0,
        .q_fp8_type = (want_q8 && o->fp8_kind == MLA_FP8_FNUZ) ? MLA_E4M3FNUZ : MLA_E4M3FN,
        .q_fp8_scale = want_q8 ? (double)(float)o->q_scale : 1.0,
        /* tensor-core rounding of P belongs to the low-precision profiles; fp64 stays the exact oracle */
        .p_tile_decode = low && o->attn_tc ? mla_attn_tc_tile(1, cfg->num_attention_heads, wide) : 0,
        .p_tile_prefill = low && o->attn_tc ? mla_attn_tc_tile(0, cfg->num_attention_heads, wide) : 0,
    };
    *f = (ref_faults){
        .softmax_scale = (F & MLA_FAULT(MLA_FAULT_NO_MSCALE))
                             ? 1.0 / sqrt((double)(cfg->qk_nope_head_dim + cfg->qk_rope_head_dim))
                             : mla_config_softmax_scale(cfg),
        .mask_slack = (F & MLA_FAULT(MLA_FAULT_CAUSAL_OFF_BY_ONE)) ? 1 : 0,
        .rope_halfsplit = (F & MLA_FAULT(MLA_FAULT_ROPE_PAIRING)) ? 1 : 0,
        .lse_bf16 = (F & MLA_FAULT(MLA_FAULT_LSE_BF16)) ? 1 : 0,
        .routed_scale = (F & MLA_FAULT(MLA_FAULT_ROUTED_SCALING)) ? 1.0 : cfg->routed_scaling_factor,
    };
}

void ref_rnd_vec(const ref_numerics *nm, double *x, int64_t n)
{
    if (!nm->round_bf16) return;
    for (int64_t i = 0; i < n; i++) x[i] = mla_round_bf16(x[i]);
}

void ref_rnd32_vec(const ref_numerics *nm, double *x, int64_t n)
{
    if (!nm->round_f32) return;
    for (int64_t i = 0; i < n; i++) x[i] = mla_round_f32(x[i]);
}
