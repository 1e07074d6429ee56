/* opcheck.h: operator-level checks of an attention kernel (attn_op.h) against the f64 reference
 * operator, on generated golden inputs: DeepSeek-V3 / V2-Lite / Kimi-K2 shapes at per-GPU head counts
 * (128, 64, 32, 16), page sizes 1, 16, 64, 128, bf16 / fp8 / fp8_ds_mla caches, varlen batches,
 * zero-length sequences, NaN-filled unused cache rows and blocks, random block tables. Outputs and
 * LSE are compared with mla_cmp_tensor under the rules file (check name "op", tensors "mqa_out",
 * "mha_out", "lse", profile = the cache format's profile name) or, without a rules object, under
 * FlashMLA's check_is_allclose limits. Writes past the end of out/lse are caught by guard words. */
#ifndef MLACHECK_OPCHECK_H
#define MLACHECK_OPCHECK_H

#include "mla/attn_op.h"
#include "mlacheck/compare.h"
#include "mlacheck/rules.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_OPCASE_MAX_BATCH 8
#define MLA_OPCHECK_CHECK "op" /* the check name rules are matched with */

typedef enum { MLA_OP_MQA = 0, MLA_OP_MHA = 1 } mla_op_kind;

/* One operator case; everything in it is data (the inputs are regenerated from the seed). */
typedef struct mla_opcase {
    char name[96];
    char model[24];                   /* config preset: deepseek-v3, deepseek-v2-lite, kimi-k2 */
    mla_op_kind kind;
    int num_heads;                    /* per GPU */
    int page_size;
    mla_kv_format kv_format;
    int fp8_fnuz;
    float k_scale;                    /* MLA_KV_FP8 */
    int batch;
    int32_t s_q[MLA_OPCASE_MAX_BATCH];     /* new tokens per sequence (0: zero-length) */
    int32_t seq_len[MLA_OPCASE_MAX_BATCH]; /* keys per sequence, new tokens included */
    int realistic;                    /* 0: N(0,1)/10 clamped to [-1,1] (FlashMLA); 1: model-like */
    uint64_t seed;
} mla_opcase;

typedef enum { MLA_OPCASE_PASS = 0, MLA_OPCASE_FAIL, MLA_OPCASE_SKIP, MLA_OPCASE_ERROR } mla_opcase_verdict;
const char *mla_opcase_verdict_name(mla_opcase_verdict v); /* "PASS" "FAIL" "SKIP" "ERROR" */

typedef struct mla_opcase_result {
    mla_opcase_verdict verdict;
    mla_cmp_result out, lse;          /* valid for PASS and FAIL */
    char why[320];                    /* FAIL: the failing tensor(s); SKIP: the declined feature;
                                         ERROR: the status and its detail */
    double seconds;                   /* candidate + reference */
    mla_status status;                /* ERROR: the candidate's status (MLA_ERR_DEVICE: its process
                                         crashed, exited or hung) */
} mla_opcase_result;

typedef struct mla_opcheck_opts {
    const mla_rules *rules;           /* NULL: built-in FlashMLA limits */
    int kv_format;                    /* -1: all; else only cases with this mla_kv_format */
    const char *filter;               /* NULL: all; else a substring of case names */
    /* called after each case, may be NULL (progress lines in the CLI) */
    void (*on_case)(void *user, const mla_opcase *c, const mla_opcase_result *r);
    void *user;
} mla_opcheck_opts;
void mla_opcheck_opts_default(mla_opcheck_opts *o);

typedef struct mla_opcheck_summary {
    int n_cases, n_pass, n_fail, n_skip, n_error;
    char first_fail[96];              /* name of the first FAIL or ERROR case ("" when none) */
    char first_why[320];
    mla_status first_error_status;    /* the status of the first ERROR case (MLA_OK when none) */
} mla_opcheck_summary;

/* Names of the built-in operator suites, NULL-terminated: "ops-smoke", "ops-full". */
const char *const *mla_opcheck_suites(void);

/* The cases of a suite as a new array (caller frees). MLA_ERR_NOT_FOUND for an unknown suite. */
mla_status mla_opcheck_cases(const char *suite, mla_opcase **out, int *n);

/* Generates the case's inputs, runs cand and the reference operator, compares. Returns MLA_OK when
 * a verdict was reached (any of the four); errors only for bad arguments or out of memory. */
mla_status mla_opcheck_run_case(const mla_opcase *c, const mla_attn_ops *cand, const mla_opcheck_opts *o,
                                mla_opcase_result *r);

/* Runs a suite ("ops-smoke" | "ops-full"). results (may be NULL) receives a new array of
 * summary->n_cases results (caller frees). MLA_OK when every selected case ran (failures are in the
 * summary); MLA_ERR_UNSUPPORTED when cand declined every selected case; MLA_ERR_NOT_FOUND for an
 * unknown suite; MLA_ERR_INVALID when the filters select nothing. */
mla_status mla_opcheck_run_suite(const char *which, const mla_attn_ops *cand, const mla_opcheck_opts *o,
                                 mla_opcheck_summary *summary, mla_opcase_result **results);

/* Export / judge without the C library on the kernel's machine (harness/python/README.md is the
 * format): writes every selected case of suite (o's kv_format / filter apply) as dir/<case>.h5 plus
 * the index dir/cases.json; *n_written gets the count. MLA_ERR_IO (cannot create dir or a file),
 * MLA_ERR_INVALID (filters select nothing), MLA_ERR_UNSUPPORTED (a build without HDF5). */
mla_status mla_opcheck_export(const char *suite, const char *dir, const mla_opcheck_opts *o, int *n_written);

/* Judges the outputs written for an export: reads dir/cases.json, and per listed case
 * dir/<case>.out.h5 (datasets out, lse, f32; or a root attribute skipped = reason). Fills summary and
 * calls o->on_case as mla_opcheck_run_suite does. A missing file or dataset, a wrong shape or dtype
 * stops with MLA_ERR_IO / MLA_ERR_FORMAT / MLA_ERR_SHAPE naming the file, the dataset and what was
 * expected (missing data is never a pass); MLA_ERR_UNSUPPORTED when every case was skipped. */
mla_status mla_opcheck_judge_dir(const char *dir, const mla_opcheck_opts *o, mla_opcheck_summary *summary);

/* The suite an export folder was written from (dir/cases.json's "suite") into buf[n]; the errors of
 * mla_opcheck_judge_dir for a missing or foreign index. */
mla_status mla_opcheck_export_suite(const char *dir, char *buf, size_t n);

/* One judged case as a check of a results folder (report.h), as `mlacheck run` records its checks:
 * case = the case's name, check "op", profile = mla_opcheck_profile_name of its cache format, path
 * "mqa" | "mha"; a metric row per compared tensor (mqa_out | mha_out, then lse, layer -1) with the
 * metric that set its headroom; a FAIL names the first failing tensor (first_tap) and keeps r->why
 * (the tensor, the metric against its limit, the worst element) as the message; an ERROR is a
 * failure whose message starts "ERROR: "; a SKIP keeps the declined feature. o gives the limits the
 * case was judged by (NULL: FlashMLA's). */
struct mla_rep_run;
mla_status mla_opcheck_report_case(struct mla_rep_run *rep, const mla_opcase *c, const mla_opcase_result *r,
                                   const mla_opcheck_opts *o);

/* An attention operator by engine name: "ref" (the f64 reference) or "plugin:<path.so>" (dlopen,
 * symbol MLA_ATTN_PLUGIN_SYMBOL). Errors: MLA_ERR_NOT_FOUND (cannot load, missing symbol),
 * MLA_ERR_VERSION (plugin refused the host version or reports another), MLA_ERR_FORMAT (vtable
 * without supports or without both entries), MLA_ERR_INVALID (bad name). The engine registry opens it
 * (engine_registry.h): once per path, the library stays loaded. */
mla_status mla_opcheck_open(const char *engine, const mla_attn_ops **out);

/* An operator engine for a suite run, as `mlacheck ops --engine` opens it: "ref" in this process;
 * "plugin:<path.so>" in a child process (harness/src/opcheck_child.c): the library is loaded,
 * registered and called there, each case within MLA_PLUGIN_TIMEOUT_S seconds (default 600), so a
 * plugin that crashes, aborts, exits or hangs ends only its own case (MLA_PLUGIN_CHILD=0 calls it in
 * this process). Errors: mla_opcheck_open's (a plugin that does not load or register is refused with
 * its status), MLA_ERR_DEVICE when the plugin's process died or hung while loading (the message names
 * the plugin file, the entry point and the signal or exit status), MLA_ERR_INVALID for a bad
 * MLA_PLUGIN_TIMEOUT_S. Close with mla_opcheck_engine_close. */
typedef struct mla_opcheck_engine mla_opcheck_engine;
mla_status mla_opcheck_engine_open(const char *engine, mla_opcheck_engine **out);

/* As mla_opcheck_run_suite, through e: a case whose plugin process crashes, exits or hangs is an
 * ERROR verdict with status MLA_ERR_DEVICE and the reason as why ("engine plugin:lib.so: mha
 * crashed: the plugin process died of signal 11 (Segmentation fault)"); the next case runs in a
 * fresh process. */
mla_status mla_opcheck_run_engine(const char *which, mla_opcheck_engine *e, const mla_opcheck_opts *o,
                                  mla_opcheck_summary *summary, mla_opcase_result **results);
void mla_opcheck_engine_close(mla_opcheck_engine *e);

/* Profile name of a cache format for rule matching: bf16, fp8kv, fp8ds, f32. */
const char *mla_opcheck_profile_name(mla_kv_format f);

#ifdef __cplusplus
}
#endif
#endif
