/* dumpcmp.h: compare two dumps tap by tap in computation order, under the tolerance rules, with
 * MoE routing compared as expert sets, each flip judged by the reference's margin against the
 * observed score noise (compare.h, mla_cmp_route_rule), and flipped tokens masked downstream. */
#ifndef MLACHECK_DUMPCMP_H
#define MLACHECK_DUMPCMP_H

#include "mlacheck/compare.h"
#include "mlacheck/dump.h"
#include "mlacheck/rules.h"
#include "mla_model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mla_dcmp_ctx;

/* One compared tap, handed to the row callback as soon as it is judged (ggml's eval-callback idea:
 * the comparison does not know who records it). Everything is borrowed for the call. */
typedef struct mla_dcmp_row {
    const struct mla_dcmp_ctx *ctx; /* the names: case, check, profile, path, kv_len */
    int layer;                      /* -1 for global taps */
    const char *tap;                /* the tap's name (taps.h) */
    const mla_cmp_result *r;        /* metrics, headroom, pass and why */
    const char *worst;              /* the metric that set headroom ("bitwise", "shape", ...); NULL: rel_l2 */
    int has_kl;                     /* 1: kl_mean holds the logits' mean KL(a||b) per token */
    double kl_mean;
} mla_dcmp_row;

/* Called once per compared tap in computation order; a status other than MLA_OK stops the
 * comparison, and mla_dcmp returns it. */
typedef mla_status (*mla_dcmp_row_fn)(void *user, const mla_dcmp_row *row);

/* The rules and the names a comparison runs under, and where its rows go. */
typedef struct mla_dcmp_ctx {
    const mla_rules *rules;
    const char *case_name, *check, *profile, *path;
    int row_lo, row_hi;    /* compare token rows [row_lo, row_hi) only; row_hi 0 = all */
    int kv_len;            /* passed on in rows (sweep), -1 otherwise */
    mla_dcmp_row_fn on_row; /* NULL: rows are not handed out (sweep probes, bisect) */
    void *user;            /* on_row's first argument */
    mla_model *model;      /* the model both dumps ran: its e_score_correction_bias places the routing
                            * margins; NULL with a biased router: every routing flip is clear */
} mla_dcmp_ctx;

/* The first divergence, named by noise. Each compared tap i has a headroom h_i = measured / limit (its
 * rule's, compare.h), which under limits set at k x the measured noise (calibrate.h) is the tap's
 * error in units of its own noise, divided by k. In computation order, tap i STANDS OUT when
 *     h_i >= MLA_DCMP_STANDOUT_MIN   and   h_i >= MLA_DCMP_STANDOUT_JUMP x max_{j < i} h_j
 * and that max is not 0 (a tap can stand out only from an inexact tap before it: exact taps such as
 * embed say nothing about the comparison's noise): its error is a sizeable fraction of its limit
 * and a clear jump over everything upstream, where benign noise grows smoothly. Routing taps
 * (topk_ids, judged by margin) neither stand out nor raise the max. In a failing comparison the first
 * divergence is the earliest tap that stands out, when it comes at or before the first tap over its
 * limit; otherwise (the error grew smoothly into the limit) it is the first tap over its limit. So a
 * wrong tap at 0.5x its limit upstream of a tap at 1.2x is named, and the report (first_why) names
 * both. reference/NUMERICS.md "First divergence" says why. */
#define MLA_DCMP_STANDOUT_MIN 0.5
#define MLA_DCMP_STANDOUT_JUMP 2.0

typedef struct mla_dcmp_result {
    int n_compared, n_failed;
    int first_layer;      /* the first divergence (above): -1 global or none */
    char first_tap[32];   /* "" when everything passed */
    char first_why[320];  /* its reason; when it is a standing-out tap under its limit, that and the
                           * first tap over its limit ("...; first over its limit: layer 1 tap lse: ...") */
    int first_stands_out; /* 1: the first divergence stood out (the rule above), 0: first over limit */
    double first_jump;    /* its headroom over the largest before it (INFINITY when none before) */
    int over_layer;       /* the first tap over its limit (the same as first_* unless a standing-out */
    char over_tap[32];    /* tap came before it); "" when everything passed */
    double worst_headroom;
    char worst_tap[48];   /* "L1/attn_out" */
    double kl_mean;       /* logits KL(a||b) mean, -1 when logits absent */
    int64_t flipped_tokens;
    int n_optional_missing;       /* optional taps the reference holds and the candidate lacks (not failures) */
    char first_optional_missing[48]; /* the first of them in computation order, "L0/q_nope"; "" when none */
} mla_dcmp_result;

/* The routing rule (compare.h, mla_cmp_route_rule) of layer's router under config cf (the reference
 * side's), with model's e_score_correction_bias in *bias (owned by the caller, NULL when none) and
 * noise_k (the rule's route_noise_k). *ok = 0 when cf names a bias that model (NULL allowed) cannot
 * supply: the margins cannot be placed, so the caller must treat every flip as clear. Every routing
 * comparison (mla_dcmp, the noise-floor check) builds its rule here. */
mla_status mla_dcmp_route_rule(mla_model *model, const mla_config *cf, int layer, double noise_k,
                               mla_cmp_route_rule *rule, double **bias, int *ok);

/* a is the reference side, b the candidate. What each side must hold (the completeness rule):
 * - required taps: every layer's block output `out` (layers 0 .. the model's num_hidden_layers - 1,
 *   from each dump's /meta model_config) and `logits`. The reference must hold them (a hollow golden
 *   fails) and so must the candidate; a required tap absent from either side, or a layer present on
 *   one side only, is a failure naming it (layer, tap), placed in computation order, so a missing tap
 *   that comes first is the first divergence (its row's worst is "missing", headroom INFINITY).
 * - optional taps: every other tap (embed, final_norm, the internal taps an engine without
 *   MLA_FEAT_TAPS_INTERNAL does not record, q_absorbed outside decode, the router taps). Compared when
 *   both sides hold them; one the reference holds and the candidate lacks is counted in
 *   n_optional_missing (not a failure, no row); one only the candidate holds is ignored.
 * - a tap some calls of a path did not make (mla_dump_rows: q_absorbed on the decode path) is compared
 *   on the rows both sides hold; rows the reference holds and the candidate lacks count in
 *   n_optional_missing, and a tap with no row in common is skipped like an absent optional one.
 * - 0 taps compared is never a pass: a failure at tap "none" saying nothing was compared.
 * Same shapes are required of every compared tap (a shape mismatch fails that tap).
 * MLA_ERR_NOT_FOUND when no rule covers a compared tap (the rules file must be complete). */
mla_status mla_dcmp(const mla_dcmp_ctx *c, const mla_dump *a, const mla_dump *b, mla_dcmp_result *out);

/* Bitwise equality of every tap (determinism), under the same completeness rule; first differing
 * tap reported like mla_dcmp. */
mla_status mla_dcmp_bitwise(const mla_dcmp_ctx *c, const mla_dump *a, const mla_dump *b, mla_dcmp_result *out);

#ifdef __cplusplus
}
#endif
#endif
