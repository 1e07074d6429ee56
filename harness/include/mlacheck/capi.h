/* capi.h: libmlacheck, the small C API the Python package (harness/python/mlacheck) calls through
 * ctypes, with no compiled extension:
 *   - the operator cases of `mlacheck ops` (ops-smoke, ops-full): metadata and input arrays in f32 and
 *     in the kernel's native encodings, and the judge of a candidate's (out, lse) under the rules
 *     `mlacheck ops` applies (suites/rules.tol, check "op");
 *   - a whole-model suite run (`mlacheck run`) with an attention operator given as an mla_attn_ops
 *     of this process (C callbacks: ctypes CFUNCTYPE), the reference model around it; where the
 *     operator has only one of mqa / mha, the reference computes the other form itself.
 *
 * Rules of the ABI: opaque handles, POD structs with explicit sizes (every struct the caller fills or
 * receives starts with struct_size = sizeof, which the library checks), fixed-width integers. Every
 * function returns an mla_status (0 ok, negative: mla/mla.h) and leaves the detail in
 * mlacheck_last_error(); nothing exits or prints. One thread at a time (the reference's hybrid
 * engine and the engine registry serve one thread).
 *
 * Version: MLACHECK_CAPI_VERSION is bumped on any change to a struct or a signature here; the
 * Python side refuses a library whose mlacheck_capi_version() differs from the one it was written for,
 * and checks the struct sizes (mlacheck_capi_sizes) against its ctypes mirrors. */
#ifndef MLACHECK_CAPI_H
#define MLACHECK_CAPI_H

#include "mla/attn_op.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLACHECK_CAPI_VERSION 1

#if defined(__GNUC__)
#define MLACHECK_API __attribute__((visibility("default")))
#else
#define MLACHECK_API
#endif

MLACHECK_API uint32_t mlacheck_capi_version(void);
/* The calling thread's last error detail ("" when none), and a status's name ("invalid argument"). */
MLACHECK_API const char *mlacheck_last_error(void);
MLACHECK_API const char *mlacheck_status_text(int32_t status);
/* Records an error detail (the Python callbacks report an exception this way before returning
 * status); returns status. */
MLACHECK_API int32_t mlacheck_set_error(int32_t status, const char *message);

/* sizeof of every struct of this header and of attn_op.h, for the caller's mirrors. */
typedef struct mlacheck_sizes {
    uint32_t struct_size;
    uint32_t attn_ops, mqa_args, mha_args, attn_cache;
    uint32_t case_info, array, metrics, verdict, run_opts, run_result;
} mlacheck_sizes;
MLACHECK_API int32_t mlacheck_capi_sizes(mlacheck_sizes *out);

/* Bytes of one cache row in format (mla_kv_format) at kv_lora_rank C, rope dim R; 0 for a bad format. */
MLACHECK_API int64_t mlacheck_kv_row_bytes(int32_t format, int32_t C, int32_t R);

/* Decodes n_rows cache rows in format (mla_kv_format; fnuz: e4m3fnuz codes; k_scale: fp8's multiplier)
 * from data (n_rows * mlacheck_kv_row_bytes bytes) into out [n_rows, C+R] f32, as the reference
 * decodes them (mla/kv.h). MLA_ERR_INVALID for a bad format or NULL pointer. */
MLACHECK_API int32_t mlacheck_kv_decode(int32_t format, int32_t fnuz, int32_t C, int32_t R, float k_scale,
                                        const void *data, int64_t n_rows, float *out);

/* ---- operator cases ------------------------------------------------------------------------- */

/* A named operator suite's cases and the rules they are judged with. */
typedef struct mlacheck_suite mlacheck_suite;

/* suite: "ops-smoke" or "ops-full". rules_path: a rules file; NULL: the source tree's
 * suites/rules.tol, the file `mlacheck ops --rules` is given (its "op" lines hold FlashMLA's
 * check_is_allclose limits, which `mlacheck ops` also applies without --rules). */
MLACHECK_API int32_t mlacheck_ops_open(const char *suite, const char *rules_path, mlacheck_suite **out);
/* Closes the opener's hold: the suite is freed once the cases made from it are freed too. */
MLACHECK_API void mlacheck_ops_close(mlacheck_suite *s);
MLACHECK_API int32_t mlacheck_ops_count(const mlacheck_suite *s);
/* The rules file a suite judges with (for messages). */
MLACHECK_API const char *mlacheck_ops_rules_path(const mlacheck_suite *s);

#define MLACHECK_MAX_BATCH 8
#define MLACHECK_MAX_FEATURES 10

typedef struct mlacheck_case_info {
    uint32_t struct_size;
    char name[96];
    char model[24];                  /* deepseek-v3, deepseek-v2-lite, kimi-k2 */
    char form[4];                    /* "mqa" (absorbed decode) or "mha" (naive prefill) */
    char kv_format[8];               /* bf16 fp8 fp8ds f32 (mla/kv.h's names) */
    char profile[8];                 /* the rules' profile: bf16 fp8kv fp8ds f32 */
    int32_t kv_format_id;            /* mla_kv_format */
    int32_t fp8_fnuz;                /* 0 e4m3fn, 1 e4m3fnuz */
    int32_t batch, num_heads, kv_lora_rank, rope_dim, nope_dim, v_dim, total_q;
    int32_t page_size, num_blocks, max_blocks_per_seq, row_bytes;
    int32_t realistic;               /* 0: N(0,1)/10 clamped (FlashMLA's inputs); 1: model-like */
    float k_scale;                   /* fp8: the per-tensor dequant multiplier */
    double softmax_scale;
    int32_t s_q[MLACHECK_MAX_BATCH];      /* new tokens per sequence */
    int32_t seq_lens[MLACHECK_MAX_BATCH]; /* keys per sequence, new tokens included */
    int32_t out_dim;                 /* D of out [T, H, D]: C (mqa) or V (mha) */
    int32_t n_features;
    char features[MLACHECK_MAX_FEATURES][48]; /* what the case asks ("kv format bf16", "page size 64") */
} mlacheck_case_info;
/* mlacheck_ops_case_info generates the case's inputs to know its pool and features (a fraction of a
 * second for the largest); mlacheck_ops_case_name does not (for listing a suite). */
MLACHECK_API int32_t mlacheck_ops_case_info(const mlacheck_suite *s, int32_t index, mlacheck_case_info *out);
MLACHECK_API const char *mlacheck_ops_case_name(const mlacheck_suite *s, int32_t index); /* NULL: bad index */

/* One case's generated inputs (regenerated from its seed; the same bytes `mlacheck ops` feeds). */
typedef struct mlacheck_case mlacheck_case;
MLACHECK_API int32_t mlacheck_case_make(mlacheck_suite *s, int32_t index, mlacheck_case **out);
MLACHECK_API void mlacheck_case_free(mlacheck_case *c);
/* The metadata of a made case (what mlacheck_ops_case_info gives, without generating again). */
MLACHECK_API int32_t mlacheck_case_get_info(const mlacheck_case *c, mlacheck_case_info *out);

typedef enum {
    MLACHECK_DT_F32 = 0,
    MLACHECK_DT_BF16 = 1, /* uint16 bit patterns */
    MLACHECK_DT_U8 = 2,   /* e4m3 codes, fp8_ds_mla rows */
    MLACHECK_DT_I32 = 3
} mlacheck_dtype;

/* A borrowed view of one array of a case, valid until mlacheck_case_free. Contiguous, outermost first. */
typedef struct mlacheck_array {
    uint32_t struct_size;
    int32_t dtype;                   /* mlacheck_dtype */
    int32_t ndim;
    int32_t reserved;
    int64_t shape[4];
    int64_t nbytes;
    const void *data;
} mlacheck_array;

/* name: q [T,H,C+R] (mqa) or [T,H,P+R] (mha), kv_c [T,C], k_pe [T,R], w_kv_b [H*(P+V),C] (mha only),
 * as f32 (bf16-representable values) or, with the suffix "_bf16", as bf16 bits;
 * kv_cache [num_blocks, page, ...] in its native encoding (bf16 bits [.., C+R], e4m3 codes [.., C+R],
 * fp8_ds_mla bytes [.., row_bytes], f32 [.., C+R]); kv_cache_f32 [num_blocks, page, C+R] decoded as
 * the reference decodes it (mla/kv.h), NaN rows included; block_table [B, max_blocks_per_seq],
 * seq_lens [B], cu_seqlens_q [B+1] (int32). MLA_ERR_NOT_FOUND for another name. */
MLACHECK_API int32_t mlacheck_case_array(mlacheck_case *c, const char *name, mlacheck_array *out);

/* The metrics of one compared tensor (compare.h's mla_cmp_result, the fields a user reads). */
typedef struct mlacheck_metrics {
    int64_t n, n_mismatch, nonfinite_mismatch;
    double max_abs, max_rel, nmse, cos_diff, rel_l2, headroom;
    int64_t worst_coord[3];
    double worst_ref, worst_cand;
    int32_t pass;
    int32_t reserved;
} mlacheck_metrics;

typedef enum { MLACHECK_PASS = 0, MLACHECK_FAIL = 1, MLACHECK_SKIP = 2, MLACHECK_ERROR = 3 } mlacheck_verdict_kind;

typedef struct mlacheck_verdict {
    uint32_t struct_size;
    int32_t verdict;                 /* mlacheck_verdict_kind: PASS or FAIL from the judge */
    char tensor[16];                 /* the first failing tensor: "mqa_out", "mha_out", "lse"; "" on PASS */
    char metric[24];                 /* its first failing metric: "nonfinite" (NaN/Inf positions differ),
                                        "allclose" (elements over both max_abs and max_rel), "nmse",
                                        "cos_diff", "rel_l2", "ulp_p99" */
    double value, limit;             /* the metric and its limit: for allclose the mismatching
                                        fraction and the allowed fraction, for nonfinite the count, 0 */
    double max_abs_limit, max_rel_limit; /* the element limits of the failing tensor (allclose) */
    mlacheck_metrics out, lse;
    char why[320];                   /* the line `mlacheck ops` prints for the case */
} mlacheck_verdict;

/* Judges a candidate's out [T,H,out_dim] (n_out floats) and lse [T,H] (n_lse floats) for case c with
 * exactly `mlacheck ops`'s judging step (the f64 reference operator on the same inputs, the suite's
 * rules). MLA_ERR_SHAPE (naming the case, the tensor and the expected count) on a wrong size,
 * MLA_ERR_INVALID on a NULL array. */
MLACHECK_API int32_t mlacheck_case_judge(mlacheck_case *c, const float *out, int64_t n_out, const float *lse,
                                         int64_t n_lse, mlacheck_verdict *v);

/* ---- whole-model runs ----------------------------------------------------------------------- */

typedef struct mlacheck_run_opts {
    uint32_t struct_size;
    const char *suite;               /* "smoke", "ci", ...: suites/<suite>.suite */
    const char *suites_dir;          /* NULL: the source tree's suites/ (rules.tol is read there too) */
    const char *golden_dir;          /* NULL: the source tree's golden/ */
    const char *results_dir;         /* the results folder a run folder is made in (as `mlacheck run
                                        --results`); NULL: the source tree's results/ */
    const char *only_case;           /* NULL: every case */
    int32_t progress;                /* 1: a progress line on stderr */
    int32_t reserved;
} mlacheck_run_opts;

typedef struct mlacheck_run_result {
    uint32_t struct_size;
    int32_t status;                  /* the runner's status (0 when the suite ran) */
    int32_t pass, fail, skip, error; /* verdicts; error: failed checks whose cause was an error */
    int32_t first_error_status;      /* mla_status of the first error (0 when none) */
    char run_dir[1024];              /* the run folder written (summary.md, junit.xml, metrics.tsv) */
    char attention[256];             /* who computed each form: "mqa: NAME; mha: the reference" */
    char first_failure[768];         /* "case | check | profile | path | tap: message" of the first
                                        failure, "" when none */
    char first_error[512];
} mlacheck_run_result;

/* Runs a suite as `mlacheck run --engine plugin:...` runs an attention-only plugin: the reference
 * model with ops as its attention core (engine "plugin:inproc:<ops->name>", so the checks are
 * "<check>@plugin" and rules.tol's plugin lines apply). ops needs supports and at least one of mqa,
 * mha; a NULL entry is the reference's own attention for that form (written to r->attention and to
 * <run>/attention.txt). ops and every pointer in it must stay valid for the call. Returns MLA_OK when
 * the suite ran (failures are in r), else the status that stopped it; r->run_dir is set when a
 * report was written. */
MLACHECK_API int32_t mlacheck_run_model(const mlacheck_run_opts *o, const mla_attn_ops *ops,
                                        mlacheck_run_result *r);

#ifdef __cplusplus
}
#endif
#endif
