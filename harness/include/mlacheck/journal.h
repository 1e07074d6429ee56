/* journal.h: a run's results kept durably as they are made, so that an interrupted or killed run
 * keeps every finished check.
 *
 * mla_jnl_open makes the run folder results/<run-id>/ at the start of the run, with
 *   INCOMPLETE     a marker: the folder does not hold a whole run (removed when the report of a run
 *                  that completed is in place; an interrupted run keeps it, with the reason)
 *   journal.tsv    metric rows, in metrics.tsv's format (metrics.h), appended
 *   journal.jsonl  one JSON object a line: {"journal":1, run_id, suite, git_sha, created} first, then
 *                  {"units":M}, {"check":{...}} (summary.json's check objects), {"kl":x}, {"done":N}
 *                  after each case/profile unit, and {"end":"complete"|why} last
 * Each mla_jnl_sync appends what the report gained since the last one (metric rows before checks)
 * and fsyncs both files, so a check in the journal has its rows there too.
 * `mlacheck report DIR` on a folder with INCOMPLETE rebuilds the report files from the journal
 * (mla_jnl_rebuild). */
#ifndef MLACHECK_JOURNAL_H
#define MLACHECK_JOURNAL_H

#include <stddef.h>

#include "mla/mla.h"
#include "mlacheck/report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_JNL_MARKER "INCOMPLETE"
#define MLA_JNL_ROWS "journal.tsv"
#define MLA_JNL_LINES "journal.jsonl"

typedef struct mla_jnl mla_jnl;

/* Makes results/<run-id>/ for rep (its id, suite, sha: set the sha first) with the marker and the
 * journal files, all fsync'd. MLA_ERR_IO naming the path when the folder cannot be written (a
 * read-only results folder fails here, before any check runs). */
mla_status mla_jnl_open(mla_rep_run *rep, mla_jnl **out);
/* The planned case/profile units (the runner states it once, before the first). */
mla_status mla_jnl_set_units(mla_jnl *j, int units);
/* Appends the rows, checks and KL values rep gained since the last sync, then {"done":units_done};
 * fsyncs. An error (disk full) is sticky: later syncs return it. */
mla_status mla_jnl_sync(mla_jnl *j, int units_done);
void mla_jnl_progress(const mla_jnl *j, int *units_done, int *units_total, int *checks);
/* The run folder (results/<run-id>). */
const char *mla_jnl_dir(const mla_jnl *j);
/* Ends the run: a last sync, the report written into the run folder (mla_rep_finish), {"end":...}
 * appended; then INCOMPLETE removed when why is NULL, else rewritten with why (and the report says
 * why, mla_rep_set_incomplete). out_dir as mla_rep_finish. Frees nothing: call mla_jnl_close. */
mla_status mla_jnl_finish(mla_jnl *j, double wall_seconds, const char *why, char *out_dir, size_t n);
void mla_jnl_close(mla_jnl *j);

/* dir holds a journal and INCOMPLETE: its report (summary.json, metrics.tsv, summary.md, junit.xml,
 * index.html, plots/) rebuilt from the journal, marked incomplete with the journal's last word (the
 * reason an interrupted run gave, else "the run stopped after N of M case/profile units ..."). 
 * MLA_ERR_NOT_FOUND when dir has no journal; msg[n] receives a line for the user. */
mla_status mla_jnl_rebuild(const char *dir, char *msg, size_t n);
/* 1 when dir holds the INCOMPLETE marker. */
int mla_jnl_is_incomplete(const char *dir);

#ifdef __cplusplus
}
#endif
#endif
