/* cli.h: subcommands of the mlacheck CLI and the exit-code contract. */
#ifndef MLACHECK_CLI_H
#define MLACHECK_CLI_H

#include "mla/mla.h"

enum {
    CLI_EXIT_PASS = 0,
    CLI_EXIT_FAIL = 1,
    CLI_EXIT_USAGE = 2,
    CLI_EXIT_ENGINE = 3,
    CLI_EXIT_SKIP = 77,
    CLI_EXIT_BISECT_SKIP = 125
};

int cli_run(int argc, char **argv);
int cli_dump(int argc, char **argv);
int cli_compare(int argc, char **argv);
int cli_golden(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_bisect(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_ops(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_accuracy(int argc, char **argv);
int cli_calibrate(int argc, char **argv);
int cli_write_hf(int argc, char **argv);
int cli_clean(int argc, char **argv);

/* Exit code for a library status: bad input -> 2, engine/device -> 3, skipped -> 77. */
int cli_exit_for(mla_status st);
/* Exit code for a run of counted cases: a library status first (cli_exit_for), then a failed case
 * -> 1, every case skipped -> 77, else 0. */
int cli_exit_for_counts(mla_status st, int n_failed, int n_skipped, int n_cases);
/* Exit code of a suite run (run, sweep): the runner's status, then its totals: every failure an
 * error -> 2 or 3 (as cli_exit_for, non-finite logits being the engine's), a failed comparison -> 1,
 * nothing passed -> 77. */
struct mla_runner_totals;
int cli_exit_for_run(mla_status st, const struct mla_runner_totals *t);
/* Exit code of `mlacheck golden`: any error -> 3. */
int cli_exit_for_golden(mla_status st, const struct mla_runner_totals *t);
/* Under --git-bisect: pass -> 0, fail -> 1, anything else -> 125 (git bisect skip). */
int cli_exit_git_bisect(int code, int git_bisect);
/* A project folder ("suites", "golden", "results"): ./name when it exists, else an installed
 * mlacheck's (cli_install_dir), else the source tree's. */
const char *cli_dir(const char *name, char *buf, size_t n);
/* An installed mlacheck's folder for name: <prefix>/share/mlacheck/name, "results" in the working
 * folder; NULL for a build-tree binary (cli_install.c). */
const char *cli_install_dir(const char *name, char *buf, size_t n);
/* The git sha of the source tree (or "unknown"). */
const char *cli_git_sha(char *buf, size_t n);
/* Parse "a,b,c" fault names into bits; -1 on an unknown name (message printed). */
int cli_parse_faults(const char *list, unsigned *bits);
/* Strict integer option: the whole string, in [lo, hi]; -1 with a message naming cmd and opt. */
int cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out);

#endif
