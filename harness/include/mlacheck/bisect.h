/* bisect.h: where a failed run diverged, from its results folder alone (no re-run): the first
 * failing metric row of every failing check (metrics.tsv keeps computation order, so that row is where
 * the divergence starts), the op that produces its tap, and a replay of a saved failure through the
 * reference under each known fault hypothesis. For bisecting commits, `mlacheck run --git-bisect`
 * serves `git bisect run`. */
#ifndef MLACHECK_BISECT_H
#define MLACHECK_BISECT_H

#include <stddef.h>

#include "mla/mla.h"
#include "mlacheck/metrics.h"
#include "mlacheck/rules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The first failing row of one failing (case, check, profile, path). */
typedef struct mla_bisect_hit {
    const mla_rep_row *row; /* borrowed from the mla_metrics it was found in */
    const char *op;         /* the op that produces row->tap (mla_bisect_tap_op) */
} mla_bisect_hit;

/* The first failing row of every failing (case, check, profile, path), in the order those rows
 * appear; *hits (caller frees; NULL when *n is 0) borrows from m. */
mla_status mla_bisect_first_failures(const mla_metrics *m, mla_bisect_hit **hits, size_t *n);

/* The op that produces a metrics row's tap (taps.h); "worst", a sweep's per-length summary row,
 * names the sweep; "?" for an unknown name. Static storage. */
const char *mla_bisect_tap_op(const char *tap);

/* The saved failures of a run folder: the names <name> of failures/<name>.h5, sorted (caller frees
 * with mla_bisect_names_free). MLA_ERR_NOT_FOUND when the folder has no failures/. */
mla_status mla_bisect_saved_failures(const char *run_dir, char ***names, size_t *n);
void mla_bisect_names_free(char **names, size_t n);

enum {
    MLA_BISECT_NO_FAULT = -1,       /* the reference without a fault reproduces the candidate */
    MLA_BISECT_NOT_REPRODUCED = -2  /* no hypothesis reproduces it: the op named by the metrics stands */
};

/* Replays failures/<name>.txt (mla_failure, failure.h) and the candidate's dump failures/<name>.h5
 * through the reference: first without a fault, then under each fault of MLA_FAULT_LIST. *fault is
 * the first hypothesis whose dump matches the candidate's under rules (with the reference's own
 * budget for the check: "golden@gpu" is judged as "golden"), MLA_BISECT_NO_FAULT or
 * MLA_BISECT_NOT_REPRODUCED. Errors (unreadable inputs, an unknown path or profile, an engine that
 * does not open or drive) are returned, with *fault MLA_BISECT_NOT_REPRODUCED. */
mla_status mla_bisect_replay(const char *run_dir, const char *name, const mla_rules *rules, int *fault);

#ifdef __cplusplus
}
#endif
#endif
