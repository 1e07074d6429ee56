/* opcheck_internal.h: what opcheck.c shares with opcheck_export.c (the HDF5 export / judge of the
 * operator cases): a case's generated inputs and the one judging step, so exported cases are judged by
 * exactly the code `mlacheck ops` runs. Not installed; not part of the library's API. */
#ifndef MLACHECK_OPCHECK_INTERNAL_H
#define MLACHECK_OPCHECK_INTERNAL_H

#include "mlacheck/opcheck.h"

/* Everything a case feeds the operator, owned. */
typedef struct op_inputs {
    int C, R, P, V, H, T, B;
    double scale;
    int32_t cu[MLA_OPCASE_MAX_BATCH + 1];
    int32_t seq_lens[MLA_OPCASE_MAX_BATCH];
    float *q, *kv_c, *k_pe, *w_kv_b; /* q [T,H,C+R] (mqa) or [T,H,P+R] (mha); kv_c/k_pe/w for mha */
    uint8_t *pool;
    int32_t *table;
    mla_attn_cache kv;
} op_inputs;

mla_status opcheck_inputs_make(const mla_opcase *c, op_inputs *in);
void opcheck_inputs_free(op_inputs *in);

/* The features a case asks of a kernel, named as declines are ("kv format bf16", "page size 64") (at most 10), in the
 * order supports() is asked; returns the count. */
#define OPCHECK_MAX_FEATURES 10
int opcheck_features(const mla_opcase *c, const op_inputs *in, char names[][48]);

/* The judging step of every operator case: runs the reference operator on in and compares the
 * candidate's out [T,H,D] and lse [T,H] (co, cl: arrays of exactly that size) with it under o's rules
 * (o may hold no rules: FlashMLA's limits). Sets r->verdict (PASS or FAIL), r->out, r->lse, r->why. */
mla_status opcheck_judge(const mla_opcase *c, const op_inputs *in, const float *co, const float *cl,
                         const mla_opcheck_opts *o, mla_opcase_result *r);

/* The limits a tensor of a case is judged by: the rules' (check "op", tensor tap, profile) when o holds
 * rules and one matches, else FlashMLA's check_is_allclose limits (is_lse picks the lse ones). */
void opcheck_limits(const mla_opcheck_opts *o, const char *tap, const char *profile, int is_lse,
                    mla_cmp_limits *lim);

/* The steps of a case that run the candidate, shared with opcheck_child.c (which runs them in the
 * plugin's process): the first feature of the case cand declines ("kv format bf16"; NULL: none), the
 * call into out/lse, the buffers (n floats of NaN, then guard words) and their sizes. */
const char *opcheck_declined(const mla_opcase *c, const op_inputs *in, const mla_attn_ops *cand);
mla_status opcheck_call(const mla_opcase *c, const op_inputs *in, const mla_attn_ops *ops, float *out, float *lse);
#define OPCHECK_GUARD 64 /* guard floats after out and lse */
float *opcheck_buf_new(int64_t n);
void opcheck_sizes(const mla_opcase *c, const op_inputs *in, int64_t *n_out, int64_t *n_lse);

/* The candidate's step of one case: from its own copy of the inputs it declines (r->verdict SKIP,
 * r->why the feature), fails (ERROR, r->status and r->why) or fills co/cl (n_out/n_lse floats and
 * the guard words after them; r->verdict left PASS). Returns an error only when no verdict could be
 * reached (out of memory). */
typedef mla_status (*opcheck_cand_fn)(void *u, const mla_opcase *c, const op_inputs *in, float *co, float *cl,
                                      mla_opcase_result *r);

/* A case and a suite through such a step (mla_opcheck_run_case / _run_suite with the step in this
 * process; opcheck_child.c's in the plugin's). cand_name names who declined every case. */
mla_status opcheck_run_case_with(const mla_opcase *c, opcheck_cand_fn cand, void *u, const mla_opcheck_opts *o,
                                 mla_opcase_result *r);
mla_status opcheck_run_suite_with(const char *which, opcheck_cand_fn cand, void *u, const char *cand_name,
                                  const mla_opcheck_opts *o, mla_opcheck_summary *s, mla_opcase_result **results);

/* A suite's bookkeeping, shared by mla_opcheck_run_suite and mla_opcheck_judge_dir: count one verdict
 * (first_skip: a buffer of cap bytes remembering the first skip), and the run's status once every
 * case is counted (MLA_ERR_INVALID when none was selected, MLA_ERR_UNSUPPORTED when all were skipped;
 * cand names who skipped them). */
void opcheck_tally(mla_opcheck_summary *s, const mla_opcase *c, const mla_opcase_result *r, char *first_skip,
                   size_t cap);
mla_status opcheck_close(const char *which, const char *cand, const mla_opcheck_opts *o,
                         const mla_opcheck_summary *s, const char *first_skip);

#endif
