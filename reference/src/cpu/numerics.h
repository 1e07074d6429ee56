/* numerics.h: what the profile and the injected faults mean for the reference's arithmetic, resolved
 * once at load into plain scalars (as gpu_forward.hip does for its kernels). The ops read these
 * values and never the run options, so the oracle's formulas carry no fault branches: a fault is a
 * different parameter value (a scale, a mask slack, a RoPE pairing). */
#ifndef MLA_REF_NUMERICS_H
#define MLA_REF_NUMERICS_H

#include "mla/backend.h"
#include "mla/dtype.h"

/* Where values are rounded (reference/NUMERICS.md). All zero: plain float64 (profile fp64). */
typedef struct ref_numerics {
    int round_bf16;      /* bf16 storage points round (every profile but fp64) */
    int round_f32;       /* f32 storage points (LSE, router, logits) round */
    int fp8_linear;      /* fp8w: a linear's input is 1x128 e4m3 act-quantized first */
    int rope_fp32_angle; /* RoPE angle pos * inv_freq formed in fp32, as a GPU does */
    /* The absorbed decode query [q_abs | q_pe] through fp8 and back: fp8kv with fp8_query (type of
     * fp8_kind, scale q_scale), or the fp8-q-saturation fault (e4m3fn, scale 1). */
    int q_fp8;
    mla_dtype q_fp8_type;
    double q_fp8_scale;
    /* attn_tc: keys per softmax tile of the tensor-core kernels whose P rounding is emulated
     * (ref_softmax_rows_tc); 0 = none (P exact) */
    int p_tile_decode, p_tile_prefill;
} ref_numerics;

/* The planted faults (faults.h MLA_FAULT_LIST) as the values the ops use. All faults off: the
 * values of the model. */
typedef struct ref_faults {
    double softmax_scale; /* Dqk^-0.5 m^2; Dqk^-0.5 under no-mscale */
    int mask_slack;       /* query i sees keys j < i + 1 + mask_slack: 0, 1 under causal-off-by-one */
    int rope_halfsplit;   /* RoPE pairs (i, i + R/2) instead of (2i, 2i+1): rope-pairing */
    int lse_bf16;         /* the LSE merge reads bf16-rounded LSEs: lse-bf16 */
    double routed_scale;  /* routed_scaling_factor; 1 under routed-scaling */
} ref_faults;

/* nm and f for a run of cfg under o (o->faults, o->profile, the fp8 query options). */
void ref_numerics_resolve(const mla_config *cfg, const mla_run_opts *o, ref_numerics *nm, ref_faults *f);

/* bf16 / f32 storage points: x rounded when the profile stores that value in that format. */
static inline double ref_rnd(const ref_numerics *nm, double x) { return nm->round_bf16 ? mla_round_bf16(x) : x; }
static inline double ref_rnd32(const ref_numerics *nm, double x) { return nm->round_f32 ? mla_round_f32(x) : x; }
void ref_rnd_vec(const ref_numerics *nm, double *x, int64_t n);
void ref_rnd32_vec(const ref_numerics *nm, double *x, int64_t n);
#endif
