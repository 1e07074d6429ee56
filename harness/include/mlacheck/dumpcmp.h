/* dumpcmp.h: compare two dumps tap by tap in computation order, under the tolerance rules, with
 * MoE routing compared exactly and flipped tokens masked downstream of the flip. */
#ifndef MLACHECK_DUMPCMP_H
#define MLACHECK_DUMPCMP_H

#include "mlacheck/compare.h"
#include "mlacheck/dump.h"
#include "mlacheck/report.h"
#include "mlacheck/rules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where rows go and under which names. rep may be NULL (then nothing is recorded). */
typedef struct mla_dcmp_ctx {
    const mla_rules *rules;
    mla_rep_run *rep;
    const char *case_name, *check, *profile, *path;
    int row_lo, row_hi; /* compare token rows [row_lo, row_hi) only; row_hi 0 = all */
    int kv_len;         /* recorded in rows (sweep), -1 otherwise */
    int quiet;          /* 1: do not add metric rows (sweep probes) */
} mla_dcmp_ctx;

typedef struct mla_dcmp_result {
    int n_compared, n_failed;
    int first_layer;      /* -1 global or none */
    char first_tap[32];   /* "" when everything passed */
    char first_why[320];
    double worst_headroom;
    char worst_tap[48];   /* "L1/attn_out" */
    double kl_mean;       /* logits KL(a||b) mean, -1 when logits absent */
    int64_t flipped_tokens;
} mla_dcmp_result;

/* a is the reference side, b the candidate. Taps present in only one dump are skipped.
 * MLA_ERR_NOT_FOUND when no rule covers a compared tap (the rules file must be complete). */
mla_status mla_dcmp(const mla_dcmp_ctx *c, const mla_dump *a, const mla_dump *b, mla_dcmp_result *out);

/* Bitwise equality of every tap (determinism); first differing tap reported like mla_dcmp. */
mla_status mla_dcmp_bitwise(const mla_dcmp_ctx *c, const mla_dump *a, const mla_dump *b, mla_dcmp_result *out);

#ifdef __cplusplus
}
#endif
#endif
