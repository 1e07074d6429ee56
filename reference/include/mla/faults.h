/* faults.h: the deliberate faults an engine may plant (mla_run_opts.faults), to prove that the
 * harness catches each one. Part of the contract: the reference, the GPU engine and plugins honour
 * them under MLA_FEAT_FAULTS. */
#ifndef MLA_FAULTS_H
#define MLA_FAULTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Deliberate faults, for proving the harness catches them. X(enum bit, name, what it breaks) */
#define MLA_FAULT_LIST(X)                                                                  \
    X(MLA_FAULT_ROPE_PAIRING, "rope-pairing", "RoPE on half-split pairs instead of interleaved") \
    X(MLA_FAULT_CAUSAL_OFF_BY_ONE, "causal-off-by-one", "causal mask lets a query see the next key") \
    X(MLA_FAULT_NO_MSCALE, "no-mscale", "softmax scale without the YaRN mscale^2")          \
    X(MLA_FAULT_FP8_Q_SATURATION, "fp8-q-saturation", "decode query cast to e4m3 (scale 1, saturating) where it should stay bf16") \
    X(MLA_FAULT_ROUTED_SCALING, "routed-scaling", "routed_scaling_factor not applied")     \
    X(MLA_FAULT_LSE_BF16, "lse-bf16", "log-sum-exp rounded to bf16 before merging")

typedef enum {
#define MLA_FAULT_ENUM(e, n, d) e##_BIT,
    MLA_FAULT_LIST(MLA_FAULT_ENUM)
#undef MLA_FAULT_ENUM
        MLA_FAULT_COUNT
} mla_fault_bit;
#define MLA_FAULT(e) (1u << (e##_BIT))
const char *mla_fault_name(int bit);
const char *mla_fault_description(int bit);
int mla_fault_from_name(const char *name, unsigned *mask); /* adds the bit; 0 ok, -1 unknown */

#ifdef __cplusplus
}
#endif
#endif
