/* calibrate.h: limits from a noise model. The benign error of each (check, profile, tap class) is
 * measured over a run's metric rows: every row of a check compares the same computation under a valid
 * alternative (another form, path, chunk size, split count, block size, batch composition, prompt,
 * engine rounding points), so the spread of its metric over the rows is the noise that check must
 * tolerate. A limit is then k x the largest sample (k stated, MLA_CALIB_K by default).
 *
 * Tap classes: "L0/<tap>" (layer 0 sees the same inputs in both runs), "L[1-9][0-9]*\/<tap>" (later
 * layers, which inherit earlier roundings) and global taps by name ("embed", "logits"). The metric is
 * rel_l2 (the key rules.tol budgets these checks with); routing rows (topk_ids) record their worst
 * margin / bound ("route_margin", judged by route_noise_k, not limited here). Bitwise checks
 * (determinism, batch-invariance), the noise-floor ratio, rows that failed for a missing tap or a
 * shape, and topk_ids rows of older runs (judged by a mismatch count) are not noise and are skipped. */
#ifndef MLACHECK_CALIBRATE_H
#define MLACHECK_CALIBRATE_H

#include <stddef.h>

#include "mla/mla.h"
#include "mlacheck/metrics.h"
#include "mlacheck/rules.h"
#include "mlacheck/suite.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default multiple: limit = 3 x the largest measured sample. The largest of a few hundred samples
 * still underestimates the tail of unseen prompts; 3 is PyTorch same()'s factor and the project's
 * noise-floor k, and keeps O(1) bugs (mask, scale, RoPE: rel_l2 >= 0.1 at their first tap) far above
 * the limit. */
#define MLA_CALIB_K 3.0

/* One calibration row: the measured noise of (check, profile, tap class). */
typedef struct mla_calib_row {
    char check[64], profile[16];
    char tap[64];        /* the tap class as a rules.tol tap regex ("L0/lse", "L[1-9][0-9]*\/out") */
    char metric[16];     /* "rel_l2" or "route_margin" */
    int64_t n;           /* samples (metric rows) */
    double median, p99, max;
    double limit;        /* k x max, rounded up to 2 significant digits; 0 for route_margin rows */
    double limit_now;    /* the current rules' rel_l2 limit of the first sample (-1: no rule), and */
    int rule_line;       /* its line (0 when none) */
    int mixed_rules;     /* 1: the samples matched more than one rule line (the class spans lines) */
    char models[256];    /* with mla_calib_set_models: the models whose rows fed it, sorted, '|'-joined */
} mla_calib_row;

typedef struct mla_calib_table {
    mla_calib_row *rows;
    size_t n_rows;
    double k;
    char source[512];    /* the command that measured it */
} mla_calib_table;

/* Adds the samples of metric rows m to a set being built (mla_calib_begin, then one or more
 * mla_calib_add, then mla_calib_end). rules (may be NULL) gives limit_now. */
typedef struct mla_calib_set mla_calib_set;
mla_status mla_calib_begin(mla_calib_set **out);
mla_status mla_calib_add(mla_calib_set *s, const mla_metrics *m, const mla_rules *rules);
/* Names each row's model by its case's in suite (call before mla_calib_add): rows then record their
 * models, limit_now follows the rules' model= lines, and the emitted lines carry model=(...), so a
 * line set from some models' noise judges only those. A row whose case the suite lacks is refused
 * (MLA_ERR_INVALID naming the case and the suite): its model would be a guess. */
mla_status mla_calib_set_models(mla_calib_set *s, const mla_suite *suite);
/* Sorts, takes the statistics and the limits (k > 0) into *t (rows sorted by check, profile, tap
 * class in computation order); frees s. */
mla_status mla_calib_end(mla_calib_set *s, double k, const char *source, mla_calib_table *t);
void mla_calib_free(mla_calib_table *t);

/* The round-up of x to two significant digits (0.000123 -> 0.00013, 7.94e-4 -> 8e-4). */
double mla_calib_round_up(double x);

/* The table as TSV (header: check profile tap metric n median p99 max k limit limit_now rule_line
 * models source; models "-" without mla_calib_set_models) to path. MLA_ERR_IO naming the path. */
mla_status mla_calib_write_tsv(const char *path, const mla_calib_table *t);
/* One rules.tol line per rel_l2 row with a nonzero limit: "<tap> <profile> <check> rel_l2=<limit>
 * [model=(<models>)] # source: <tsv_name> row <i>: n=.. max=.. (k=..)", rows numbered from 1 after the header. */
mla_status mla_calib_write_rules(const char *path, const mla_calib_table *t, const char *tsv_name);

#ifdef __cplusplus
}
#endif
#endif
