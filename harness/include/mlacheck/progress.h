/* progress.h: what a suite run is doing, on stderr while it runs (the runner feeds it, the CLI
 * chooses the mode).
 *
 * Lines mode (stderr not a terminal, as in CI): one line per check of a (case, profile) as it
 * finishes, with its verdict and seconds, and every heartbeat_s a heartbeat line with the elapsed
 * time, the work done and an ETA from it, so a long case is never silent. Live mode (a terminal):
 * one line redrawn in place, failures printed above it. Verbose adds a line per path with its
 * message and the time spent driving engines.
 *
 * Work is counted in check calls (one check on one prompt group and engine): the runner announces
 * the total, and the ETA is elapsed x (left / done). Every function is a no-op on NULL, so the runner
 * calls them unconditionally. Thread: a heartbeat thread prints on its own; every call takes its lock. */
#ifndef MLACHECK_PROGRESS_H
#define MLACHECK_PROGRESS_H

#include "mla/mla.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MLA_PROGRESS_OFF = 0, MLA_PROGRESS_LINES = 1, MLA_PROGRESS_LIVE = 2 } mla_progress_mode;

typedef struct mla_progress_opts {
    int mode;           /* mla_progress_mode */
    int verbose;        /* 1: a line per (check, path) with its message; drive times */
    double heartbeat_s; /* lines mode: seconds between heartbeats (<= 0: 10) */
    FILE *out;          /* NULL: stderr */
} mla_progress_opts;

typedef struct mla_progress mla_progress;

/* A sink for o (copied); *out NULL for MLA_PROGRESS_OFF. Starts the heartbeat thread. */
mla_status mla_progress_new(const mla_progress_opts *o, mla_progress **out);
/* Stops the thread, clears a live line, frees. */
void mla_progress_free(mla_progress *p);

/* ---- the runner's side ---- */
/* The run starts: total_work check calls are planned. */
void mla_progress_begin(mla_progress *p, int64_t total_work);
/* A (case, profile) starts; planned: its check calls (the count is reached at unit_end whatever ran). */
void mla_progress_unit(mla_progress *p, const char *case_name, const char *profile, int64_t planned);
/* check (its report name, "golden@gpu") starts; leave adds its seconds and work (1 for a check call,
 * 0 for the engine drives, entered as "run" or "run@engine"). */
void mla_progress_enter(mla_progress *p, const char *check);
void mla_progress_leave(mla_progress *p, int64_t work);
/* One verdict of a check (verdict: mla_rep_verdict, error: its cause was an error). */
void mla_progress_verdict(mla_progress *p, const char *check, const char *path, int verdict, int error,
                          const char *msg);
/* Prints the lines of the checks that got verdicts since the last flush, each check once per unit. */
void mla_progress_flush(mla_progress *p);
/* The (case, profile) ends: unprinted checks are printed, the work count reaches the unit's plan. */
void mla_progress_unit_end(mla_progress *p);

#ifdef __cplusplus
}
#endif
#endif
