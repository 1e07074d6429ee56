/* runner.h: run a suite: every case, profile, engine, path and check, into a report. */
#ifndef MLACHECK_RUNNER_H
#define MLACHECK_RUNNER_H

#include "mlacheck/driver.h"
#include "mlacheck/report.h"
#include "mlacheck/rules.h"
#include "mlacheck/suite.h"

#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mla_runner_opts {
    const char *golden_dir;   /* golden/ */
    const char *engine;       /* non-NULL: replaces every case's engine list (e.g. "gpu") */
    unsigned faults;          /* MLA_FAULT(...) bits injected into the candidate engines */
    const char *only_case;    /* run just this case (NULL = all) */
    int progress;             /* 1: a live progress line on stderr (when progress_to is NULL) */
    int kv_splits;            /* passed to engines */
    const char *write_golden; /* non-NULL: write golden candidates into this folder instead of checking */
    const char *git_sha;      /* recorded in written goldens */
    struct mla_progress *progress_to; /* non-NULL: the progress lines go there (progress.h) */
    const char *const *select;        /* [n_select] globs over "case/check/profile" (mla_runner_selected) */
    int n_select;
    struct mla_jnl *journal;  /* non-NULL: each finished case/profile unit is synced to it (journal.h) */
    volatile sig_atomic_t *stop; /* non-NULL and set (a signal handler): stop after the unit that is running */
    unsigned reseed;          /* --reseed K (reseed.h): 0 = the suite's prompts and arrivals as written */
} mla_runner_opts;

/* 1 when the check of (case, profile) is selected: no patterns, or one matches. A pattern with a '/'
 * is matched (fnmatch) against "case/check/profile", one without against each of the three and the
 * whole; the check is the report's name ("golden@gpu") or the name before its '@'. */
int mla_runner_selected(const char *const *patterns, int n, const char *case_name, const char *check,
                        const char *profile);

/* One failed verdict, as the report records it. */
typedef struct mla_runner_failure {
    char *case_name;       /* owned */
    char check[64];        /* "check" or "check@engine" */
    char profile[16];
    char path[16];         /* prefill, decode, chunked, decoded or "-" */
    int first_layer;       /* -1: a global tap, or none */
    char first_tap[32];    /* "" when the failure was an error */
    char message[512];
    int is_error;          /* 1: an error (bad input, engine), not a comparison */
} mla_runner_failure;

typedef struct mla_runner_totals {
    int pass, fail, skip, error; /* error: failed checks whose cause was an error, not a comparison */
    mla_status first_error_status;
    char first_error[512];
    mla_runner_failure *failures; /* [n_failures] every failed verdict, in report order (owned) */
    int n_failures, cap_failures;
    int64_t engine_loads;         /* engines opened and loaded during the run */
} mla_runner_totals;

/* Runs the suite, adding rows and verdicts to rep (may be NULL when writing goldens). Engine or
 * input errors inside a case are recorded as failed checks with the message and counted in
 * totals.error; the return value is an error only when nothing could run (bad rules, no model) or
 * the journal could not be written (the run stops at the first unit it cannot keep).
 * With o->stop set the run ends after the unit in progress (the journal says how far it got).
 * totals is overwritten; free it with mla_runner_totals_free, whatever the result. */
mla_status mla_runner_run(const mla_suite *s, const mla_rules *rules, const mla_runner_opts *o,
                          mla_rep_run *rep, mla_runner_totals *totals);

void mla_runner_totals_free(mla_runner_totals *totals);

/* Tokens of a suite prompt for a vocabulary (random prompts are drawn from their seed), under
 * --reseed K (reseed.h: random and text prompts move, tokens: and file: stay; 0 = as written).
 * Caller frees *tokens. */
mla_status mla_runner_prompt_tokens(const mla_suite_prompt *p, const char *suite_origin, int vocab, unsigned reseed,
                                    int32_t **tokens, int *n);

/* golden/<model>/<profile>/<path>-<len>-<fnv8>.h5 for one sequence. */
void mla_runner_golden_path(const char *golden_dir, const char *model, const char *profile,
                            const char *path, const int32_t *tokens, int n, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
