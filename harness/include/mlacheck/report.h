/* report.h: a run's results folder, written atomically.
 *
 * Accumulate metric rows and check verdicts in an mla_rep_run, then mla_rep_finish() writes
 * results/<run-id>.tmp-XXXXXX/{summary.json, summary.md, junit.xml, metrics.tsv, plots/, index.html}
 * and renames it to results/<run-id> (a reader never sees a half-written run). When a run journal
 * (journal.h) made results/<run-id> already, the files are moved into it instead, and the folder's
 * INCOMPLETE marker says it is not whole until the journal removes it.
 * Run ids: <UTC yyyymmddThhmmssZ>-<suite>-<4 hex>, e.g. 20261130T120501Z-ci-3fa2.
 * Limit use (limit_use in summary.json and metrics.tsv): measured / limit of the metric that comes
 * closest to its rule's limit, the largest over the limits checked; 0 is exact agreement, 1 is at
 * the limit, above 1 fails. Every table, plot and file of a report uses this one name.
 * Provenance (mla_rep_add_prop): git id, compiler, BLAS, HDF5, and what the run adds (engine, model,
 * device) go into summary.json "provenance", summary.md, index.html and junit.xml properties.
 * Plots need gnuplot: the MLA_GNUPLOT environment variable when set (even empty: then only PATH),
 * else the configure-time path, else PATH. Without it plots are skipped with a note, not an error. */
#ifndef MLACHECK_REPORT_H
#define MLACHECK_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mla/mla.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MLA_REP_PASS = 0, MLA_REP_FAIL = 1, MLA_REP_SKIP = 2 } mla_rep_verdict;

/* One compared tensor. Strings are copied; NULL reads as "". */
typedef struct mla_rep_row {
    const char *case_name, *check, *profile, *path;
    int layer;          /* -1 for global taps */
    const char *tap;
    int kv_len;         /* -1 unless a sweep row */
    int64_t n;          /* elements compared */
    double max_abs, max_rel, nmse_db, cos_diff, rel_l2, ulp_p99;
    double headroom;    /* the limit use (above): worst measured/limit over the checked limits; > 1 fails */
    const char *worst;  /* the metric that set it ("rel_l2", ...); NULL: rel_l2 */
    int pass;
    const char *why;    /* failure reason ("rel_l2 3.1e-5 > 1e-6", "NaN at [3,7]"), "" when passing */
    /* The rule's limits for this tensor (0: not checked or not known), drawn on the plots; kept in
     * the results folder's limits.tsv beside metrics.tsv (whose columns stay as they are). */
    double lim_max_abs, lim_max_rel, lim_cos_diff, lim_rel_l2, lim_ulp_p99;
} mla_rep_row;

typedef struct mla_rep_run mla_rep_run;

/* results_dir is created if missing; suite_name goes into the run id (sanitized). */
mla_status mla_rep_new(const char *results_dir, const char *suite_name, mla_rep_run **out);
void mla_rep_free(mla_rep_run *r);
const char *mla_rep_run_id(const mla_rep_run *r);
/* Defaults: MLA_GIT_SHA, then GITHUB_SHA from the environment, then the id compiled in at build
 * time (mla_git_id.h), else "unknown". Also the "git" provenance property. */
mla_status mla_rep_set_git_sha(mla_rep_run *r, const char *sha);
/* Adds value to provenance property key (letters, digits, '_', '.'); a value the key already holds
 * is not repeated, others are appended ", "-separated (two engines: "ref, gpu"). New runs start
 * with git, compiler, blas, hdf5 (and host at finish). Adding engine "gpu" in a build with the GPU
 * engine also records "device" (name, architecture, runtime, driver) from the device probe. */
mla_status mla_rep_add_prop(mla_rep_run *r, const char *key, const char *value);
/* The value of a provenance property, "" when unset. */
const char *mla_rep_prop(const mla_rep_run *r, const char *key);
/* Seconds a check took (after mla_rep_add_check; the last check added): junit.xml's time. */
void mla_rep_set_check_seconds(mla_rep_run *r, double seconds);

/* Marks the run incomplete (why: "interrupted by SIGINT after 3 of 9 case/profile units"; NULL:
 * complete again). summary.json then says "complete": false, "incomplete": why and verdict
 * "incomplete"; summary.md and index.html say so at the top; junit.xml has one more failing testcase. */
mla_status mla_rep_set_incomplete(mla_rep_run *r, const char *why);

mla_status mla_rep_add_metric(mla_rep_run *r, const mla_rep_row *row);
/* One verdict per (case, check, profile, path). first_layer -1 / first_tap NULL when not known or
 * passing. The worst metric and headroom are taken from this check's metric rows at finish. */
mla_status mla_rep_add_check(mla_rep_run *r, const char *case_name, const char *check, const char *profile,
                             const char *path, mla_rep_verdict v, const char *message, int first_layer,
                             const char *first_tap);
/* The exact inputs of a failing case, written as failures/<name>.txt (name: letters, digits, '-', '_');
 * the first text per name is kept. */
mla_status mla_rep_add_input(mla_rep_run *r, const char *name, const char *text);
/* A file (the candidate's dump) moved into failures/<name> at finish. */
mla_status mla_rep_add_input_file(mla_rep_run *r, const char *name, const char *src_path);
/* One logits KL divergence (per token), for the histogram. */
mla_status mla_rep_add_kl(mla_rep_run *r, double kl);

/* A row callback for mla_dcmp (dumpcmp.h, mla_dcmp_row_fn): the compared tap becomes a metric row of
 * rep (an mla_rep_run *, may be NULL: then nothing is recorded), and a logits row's KL goes to the
 * histogram. Set .on_row = mla_rep_on_dcmp_row, .user = rep in the mla_dcmp_ctx. */
struct mla_dcmp_row;
mla_status mla_rep_on_dcmp_row(void *rep, const struct mla_dcmp_row *row);

/* Counts so far (any pointer may be NULL). */
void mla_rep_counts(const mla_rep_run *r, int *pass, int *fail, int *skip);

/* Writes the folder and renames it into place; the final path goes to out_dir[n] (may be NULL).
 * Notes that are not errors (plots skipped) are available from mla_rep_note(). */
mla_status mla_rep_finish(mla_rep_run *r, double wall_seconds, char *out_dir, size_t n);
const char *mla_rep_note(const mla_rep_run *r); /* "" when none */

/* Re-renders plots, summary.md and index.html of an existing run folder from its summary.json and
 * metrics.tsv (mlacheck report DIR). note[n] (may be NULL) receives e.g. "gnuplot not found: plots
 * skipped". */
mla_status mla_rep_render(const char *dir, char *note, size_t n);

/* The gnuplot the report would use, or NULL (see the lookup order above). Static storage. */
const char *mla_rep_find_gnuplot(void);

/* Escapers used by the writers (exposed for tests): write s to f escaped. */
void mla_rep_xml_escape(FILE *f, const char *s);
void mla_rep_md_escape(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif
#endif
