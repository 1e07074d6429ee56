/* compare.h: tensor comparison metrics (reference vs candidate), routing and logits comparisons,
 * and the fp64 noise-floor rule. Values of any dtype are widened to double; sums are compensated
 * long double, so metrics are exact enough to compare against limits of 1e-15. */
#ifndef MLACHECK_COMPARE_H
#define MLACHECK_COMPARE_H

#include "mla/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(field) for the double limits, in struct order; they are also the keys of rules.tol (rules.h).
 * a is the reference, b the candidate; every relative measure divides by the reference. */
#define MLA_CMP_LIMIT_LIST(X) \
    X(max_abs) X(max_rel) X(rel_floor) X(nmse) X(cos_diff) X(mismatch_frac) X(ulp_p99) X(rel_l2) \
    X(route_noise_k)

/* The limits of one comparison; a limit <= 0 is "not checked".
 * Element i mismatches when abs_err > max_abs AND rel_err > max_rel; with only one of the two set,
 * that one alone decides (abs-or-rel pass, FlashMLA's check_is_allclose). */
typedef struct mla_cmp_limits {
    double max_abs;       /* abs_err = |b - a| per element */
    double max_rel;       /* rel_err = |b - a| / (|a| + rel_floor) per element */
    double rel_floor;     /* added to |a| in rel_err's denominator (not a limit) */
    double nmse;          /* sum (b - a)^2 / sum a^2 */
    double cos_diff;      /* 1 - cos(a, b) */
    double mismatch_frac; /* allowed fraction of mismatching elements (<= 0: none) */
    double ulp_p99;       /* 99th percentile ULP distance, counted in ulp_dtype */
    double rel_l2;        /* ||b - a|| / ||a|| */
    double route_noise_k; /* routing taps only: a flip is benign iff the reference's margins are within
                           * route_noise_k x the observed score noise (mla_cmp_route_rule); <= 0: no
                           * flip is benign */
    mla_dtype ulp_dtype;  /* MLA_F64 when 0 */
} mla_cmp_limits;

/* Metrics over the finite pairs; NaN/Inf pairs are checked for identical positions (and inf signs)
 * first, counted in nonfinite_mismatch, and excluded from everything else.
 *   nmse      sum(e^2) / sum(ref^2) (0 when both sums are 0, inf when only the reference is 0)
 *   nmse_db   10 log10(nmse); -999 when nmse == 0 (exact)
 *   cos_diff  1 - 2 sum(ab) / sum(a^2 + b^2), computed as sum((a-b)^2) / sum(a^2 + b^2) (same value,
 *             no cancellation)
 *   rel_l2    ||b - a|| / ||a||
 *   ulp_*     nearest-rank percentiles of mla_ulp_distance(ulp_dtype, a, b)
 *   worst_*   the first nonfinite mismatch; else the element with the largest limit ratio
 *             min(abs/max_abs, rel/max_rel) when max_abs/max_rel are set; else the largest abs
 *             error (-1 when no element). worst_coord: its coordinates (outermost first).
 *   headroom  max over checked metrics of measured / limit (<= 1 passes; INFINITY on a nonfinite
 *             mismatch; 0 when nothing is checked). For the element check it is the largest element
 *             ratio when no mismatch is allowed, else (n_mismatch / n) / mismatch_frac.
 *   why       "" on pass, else the failed checks, "; "-separated. */
typedef struct mla_cmp_result {
    int64_t n, n_mismatch, nonfinite_mismatch;
    double max_abs, max_rel, nmse, nmse_db, cos_diff, rel_l2, ulp_p50, ulp_p99, ulp_max, headroom;
    int64_t worst_index;
    double worst_ref, worst_cand;
    int64_t worst_coord[6];
    int pass;
    char why[256];
} mla_cmp_result;

/* Compares candidate b against reference a (same shape, any dtypes). lim may be NULL (nothing
 * checked: pass unless NaN/Inf positions differ). MLA_ERR_SHAPE when shapes differ. */
mla_status mla_cmp_tensor(const mla_tensor *a, const mla_tensor *b, const mla_cmp_limits *lim,
                          mla_cmp_result *out);

/* One line: "PASS n=... max_abs=... nmse=...(... dB) ... headroom=..." into buf[n]. */
void mla_cmp_format(const mla_cmp_result *r, char *buf, size_t n);

/* ---- routing: top-k expert ids compared as sets per token, each flip judged by margin ---- */

#define MLA_CMP_MAX_FLIPS 8

/* How the engines select experts from the router logits (mla-spec.md §d, reference/src/cpu/moe.c):
 * selection score s = sigmoid(logit) + bias (softmax over the row without bias for softmax
 * routers); with n_group > 1 the experts split into n_group groups of E / n_group, a group's score
 * is the sum of its two best s (group_top2) or its best s, and only the topk_group best groups are
 * kept. A flip is benign when the REFERENCE's own decision margins are inside the noise bound:
 *   expert margin  s(last selected) - s(best unselected within the kept groups)
 *   group margin   g(last kept group) - g(best dropped group)          (no groups: 0, not judged)
 *   noise d        max over the token's experts of |s_a - s_b| (the bias cancels), at least
 *                  2^-23 max|s_a| (the engines round scores to f32, which the logits cannot show)
 *   bound          expert noise_k * 2d (two scores may each move by d), group noise_k * 4d (two
 *                  group scores of two experts each)
 * benign iff noise_k > 0, d > 0 and both margins <= their bounds; noise_k 1 is exactly "the observed
 * score differences can overturn the reference's decision". */
typedef struct mla_cmp_route_rule {
    int n_group, topk_group;
    int sigmoid;       /* 1: sigmoid scores, 0: softmax over the row */
    int group_top2;    /* 1: group score = sum of the two best (noaux_tc with bias), 0: the best */
    const double *bias; /* [E] e_score_correction_bias, or NULL */
    int64_t n_bias;     /* length of bias (must be E when bias is set) */
    double noise_k;     /* <= 0: no flip is benign (fp64: exact routing) */
} mla_cmp_route_rule;

/* One flip: expert_a chosen by a only, expert_b by b only (paired in ascending id order; -1 when a
 * token's sets differ in size). Scores are the router scores (router_logits taps) of both experts in
 * each run; NAN when no scores were given or an id is outside [0, E). Margins and bounds are the
 * token's (NAN when no scores or no rule). */
typedef struct mla_cmp_flip {
    int64_t token;
    int32_t expert_a, expert_b;
    double a_score_a, a_score_b; /* a's scores of expert_a and expert_b */
    double b_score_a, b_score_b; /* b's scores of expert_a and expert_b */
    double margin_expert, bound_expert, margin_group, bound_group;
    int group_swap; /* the engines keep different groups (recomputed, or b's ids in a group a dropped):
                     * judged at group level */
    int benign;
} mla_cmp_flip;

typedef struct mla_cmp_routing_result {
    int64_t n_tokens, n_flipped_tokens, n_flipped_experts; /* experts in a's set not in b's */
    int64_t n_clear_tokens;                                /* flipped tokens that are not benign */
    double worst_ratio;  /* max over flipped tokens of max(margin / bound) (INFINITY when a bound is 0
                          * or unknown; 0 when no flip) */
    int n_flips;         /* entries recorded in flips[]: clear flips first, then benign ones */
    mla_cmp_flip flips[MLA_CMP_MAX_FLIPS];
    int pass;            /* no clear flip */
    char why[320];
} mla_cmp_routing_result;

/* ids_a/ids_b: [T, K] integer-valued (any dtype); scores_a/scores_b: router logits [T, E] or NULL;
 * rule NULL or scores NULL: margins unknown, every flip is clear. MLA_ERR_SHAPE on shape mismatch
 * (bias length other than E, E not divisible by n_group). */
mla_status mla_cmp_routing(const mla_tensor *ids_a, const mla_tensor *ids_b,
                           const mla_tensor *scores_a, const mla_tensor *scores_b,
                           const mla_cmp_route_rule *rule, mla_cmp_routing_result *out);
void mla_cmp_format_routing(const mla_cmp_routing_result *r, char *buf, size_t n);

/* ---- logits [T, N]: softmax in double with max subtraction ---- */

typedef struct mla_cmp_logits_result {
    int64_t n_tokens, vocab;
    double kl_ab_mean, kl_ab_max; /* KL(P_a || P_b) over tokens */
    double kl_ba_mean, kl_ba_max; /* KL(P_b || P_a) */
    int64_t kl_worst_token;       /* argmax of KL(P_a || P_b) */
    double top1_agree;            /* fraction of tokens with the same argmax (lowest id on ties) */
    double top5_overlap;          /* mean |top5_a ∩ top5_b| / 5 (min(5, N) for tiny vocabularies) */
    double max_dp;                /* max |p_a - p_b| over all tokens and ids */
} mla_cmp_logits_result;

/* MLA_ERR_NONFINITE when a row holds NaN or +inf or only -inf (-inf entries are probability 0). */
mla_status mla_cmp_logits(const mla_tensor *a, const mla_tensor *b, mla_cmp_logits_result *out);
/* lp[n] = log softmax(x[n]) in double (compensated sum); nonzero when x has no finite maximum. */
int mla_cmp_log_softmax(const double *x, int64_t n, double *lp);
void mla_cmp_format_logits(const mla_cmp_logits_result *r, char *buf, size_t n);

/* Noise-floor rule (PyTorch same() idea): the candidate's error vs fp64 passes iff
 * cand_err_vs_fp64 <= k * ref_err_vs_fp64 + abs_slack. Returns 1 pass, 0 fail (NaN fails). */
int mla_cmp_noise_floor(double cand_err_vs_fp64, double ref_err_vs_fp64, double k, double abs_slack);

#ifdef __cplusplus
}
#endif
#endif
