/* cli.h: subcommands of the mlacheck CLI and the exit-code contract. */
#ifndef MLACHECK_CLI_H
#define MLACHECK_CLI_H

#include "mla/mla.h"

#include <getopt.h>
#include <stdio.h>

enum {
    CLI_EXIT_PASS = 0,
    CLI_EXIT_FAIL = 1,
    CLI_EXIT_USAGE = 2,
    CLI_EXIT_ENGINE = 3,
    CLI_EXIT_SKIP = 77,
    CLI_EXIT_BISECT_SKIP = 125
};

/* ---- the command table (cli_table.c): the one source of the parser, the help and the man page ----
 * Adding a command: one cli_cmd row in cli_table.c (name, function, arguments, summary, options)
 * and its function, which reads its options with cli_parser_init / cli_next. */
typedef enum {
    CLI_FLAG,  /* no argument */
    CLI_INT,   /* an integer */
    CLI_NUM,   /* a number */
    CLI_TEXT,  /* free text */
    CLI_NAME,  /* a name checked against a known list (did you mean) */
    CLI_FILE,  /* a file */
    CLI_DIR,   /* a folder */
    CLI_LIST   /* comma-separated names */
} cli_kind;

typedef struct cli_opt {
    const char *name;  /* the long name, without "--" */
    int key;           /* what cli_next returns for it; unique in its command, not 'h' */
    int short_ok;      /* 1: -key (a letter) works too */
    cli_kind kind;
    const char *meta;  /* the argument in help: N, DIR, NAME (NULL for a flag) */
    const char *help;  /* one line; "(default x)" inside it when there is one */
} cli_opt;

typedef struct cli_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *args;    /* positional arguments in the synopsis ("" for none) */
    const char *summary; /* one line */
    const cli_opt *opts; /* ends with a row whose name is NULL */
    const char *details; /* a paragraph for help and the man page, or NULL */
} cli_cmd;

extern const cli_cmd cli_cmds[]; /* ends with a row whose name is NULL */
const cli_cmd *cli_cmd_find(const char *name);

/* Options of one command, parsed by getopt_long from the table row (so no option can be parsed
 * that help does not list, nor listed that is not parsed: the test runs each with --help). */
#define CLI_MAX_OPTS 32
typedef struct cli_parser {
    const cli_cmd *cmd;
    int argc;
    char **argv;
    int exit;                       /* when cli_next returned -1: 0 after --help, else 2 */
    struct option *lo;              /* [CLI_MAX_OPTS + 2] */
    char shorts[2 * CLI_MAX_OPTS + 4];
} cli_parser;

/* Ready to parse argv (argv[0] the command's name) of the table's command name. */
void cli_parser_init(cli_parser *p, const char *name, int argc, char **argv);
/* The next option's key (optarg set when it takes an argument); 0 when the options are over
 * (optind: the first positional argument); -1: stop and return p->exit (--help was printed, or a
 * usage error explained, with "did you mean" for a mistyped option). */
int cli_next(cli_parser *p);
/* For the default branch of a command's switch: a table option the command does not handle (a bug
 * the help test catches): a message and exit 70. */
int cli_unhandled(const cli_parser *p, int key);
/* Positional arguments: exactly n left, else a message and -1. */
int cli_positional(const cli_parser *p, int n);

/* help and the manual page (cli_help.c) */
void cli_print_usage(FILE *f);
void cli_print_cmd_help(FILE *f, const cli_cmd *c);
void cli_print_man(FILE *f);
void cli_print_version(FILE *f);
int cli_help(int argc, char **argv);

/* ---- names the user types, checked before any work (cli_names.c): each prints "mlacheck CMD:
 * OPT 'x': expected ... (did you mean 'y'?)" and returns -1 when wrong ---- */
int cli_check_engine(const char *cmd, const char *engine);
int cli_check_profile(const char *cmd, const char *opt, const char *name);
int cli_check_path(const char *cmd, const char *name);
int cli_check_model(const char *cmd, const char *model);
int cli_check_check(const char *cmd, const char *name);
struct mla_suite;
int cli_check_case(const char *cmd, const struct mla_suite *s, const char *name);
/* Every -k pattern selects at least one check of s (of only_case when given). */
int cli_check_select(const char *cmd, const struct mla_suite *s, const char *only_case, const char *const *pats,
                     int n);
/* "did you mean 'x'?" text for word among cands (n of them), "" when none is close. */
const char *cli_did_you_mean(const char *word, const char *const *cands, int n, char *buf, size_t size);

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
/* mlacheck bench --kernels (cli_bench_kernels.c): mla_gpu_bench, torch side by side, the roofline */
int cli_bench_kernels(int quick, const char *results);
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
/* Exit code of `mlacheck ops`: the status, then the cases: every failed case an error -> 3 when the
 * first error is the engine's (its process crashed, exited or hung: MLA_ERR_DEVICE; out of memory),
 * else 2; otherwise as cli_exit_for_counts. */
struct mla_opcheck_summary;
int cli_exit_for_ops(mla_status st, const struct mla_opcheck_summary *s);
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
/* The progress sink of a suite run (progress.h): none when quiet, a live line on a terminal, else
 * lines and heartbeats (every MLACHECK_HEARTBEAT_S seconds, default 10); -1 with a message for a bad
 * MLACHECK_HEARTBEAT_S. */
struct mla_progress;
int cli_progress_open(int quiet, int verbose, struct mla_progress **out);
/* Strict integer option: the whole string, in [lo, hi]; -1 with a message naming cmd and opt. */
int cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out);

#endif
