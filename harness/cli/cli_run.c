/* cli_run.c: `mlacheck run`, `golden` and `sweep`: suites through the runner into a report. */
#include "cli.h"

#include "mlacheck/fileio.h"
#include "mlacheck/journal.h"
#include "mlacheck/progress.h"
#include "mlacheck/runner.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Names the failures on the terminal: case, check, profile, path, first diverging tap, message
 * (the rows of summary.md's failing checks), at most CLI_RUN_SHOWN of them. */
#define CLI_RUN_SHOWN 40
static void print_failures(const mla_runner_totals *t)
{
    for (int i = 0; i < t->n_failures && i < CLI_RUN_SHOWN; i++) {
        const mla_runner_failure *f = &t->failures[i];
        printf("| %s | %s | %s | %s | **FAIL** | ", f->case_name, f->check, f->profile, f->path);
        if (f->first_layer >= 0) printf("layer %d ", f->first_layer);
        printf("%s | %s |\n", f->first_tap, f->message);
    }
    if (t->n_failures > CLI_RUN_SHOWN)
        printf("... and %d more failures (summary.md lists them all)\n", t->n_failures - CLI_RUN_SHOWN);
}

/* Loads suite + rules; prints errors. Returns 0 or an exit code. */
static int load_suite(const char *name, mla_suite **s, mla_rules **rules)
{
    char sd[1024], rp[1100];
    cli_dir("suites", sd, sizeof sd);
    *s = NULL;
    *rules = NULL;
    mla_status st = mla_suite_load(sd, name, s);
    if (st) {
        fprintf(stderr, "mlacheck: suite %s: %s\n", name, mla_last_error());
        return CLI_EXIT_USAGE;
    }
    snprintf(rp, sizeof rp, "%s/rules.tol", sd);
    if ((st = mla_rules_load(rp, rules))) {
        fprintf(stderr, "mlacheck: %s\n", mla_last_error());
        mla_suite_free(*s);
        *s = NULL;
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* SIGINT/SIGTERM: the first one asks the runner to stop after the unit in progress (it polls
 * run_signal), so the report is finished from what is done; a second one exits at once (the journal
 * keeps what was synced, `mlacheck report DIR` rebuilds the report from it). */
static volatile sig_atomic_t run_signal;

static void on_signal(int sig)
{
    if (run_signal) _exit(128 + sig);
    run_signal = sig;
}

static void catch_signals(int on)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on ? on_signal : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (on) run_signal = 0;
}

static int run_suite(mla_suite *s, mla_rules *rules, mla_runner_opts *ro, const char *results, int git_bisect,
                     int quiet, int verbose)
{
    if (cli_progress_open(quiet, verbose, &ro->progress_to)) return cli_exit_git_bisect(CLI_EXIT_USAGE, git_bisect);
    double t0 = now_s();
    mla_rep_run *rep = NULL;
    mla_jnl *jnl = NULL;
    mla_status st = mla_rep_new(results, s->name, &rep);
    char sha[64];
    if (!st) st = mla_rep_set_git_sha(rep, cli_git_sha(sha, sizeof sha));
    if (!st) st = mla_jnl_open(rep, &jnl); /* an unwritable results folder fails here, before any check */
    if (st) {
        fprintf(stderr, "mlacheck: results %s: %s\n", results, mla_last_error());
        mla_progress_free(ro->progress_to);
        mla_rep_free(rep);
        return cli_exit_git_bisect(CLI_EXIT_USAGE, git_bisect);
    }
    ro->journal = jnl;
    ro->stop = &run_signal;
    catch_signals(1);
    mla_runner_totals tot;
    st = mla_runner_run(s, rules, ro, rep, &tot);
    mla_progress_free(ro->progress_to); /* the live line cleared before the summary */
    ro->progress_to = NULL;
    int sig = run_signal, done, total, nchecks;
    mla_jnl_progress(jnl, &done, &total, &nchecks);
    char why[256];
    int interrupted = sig && done < total;
    if (interrupted)
        snprintf(why, sizeof why, "interrupted by %s after %d of %d case/profile units (%d checks finished)",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", done, total, nchecks);
    double wall = now_s() - t0;
    char out[1024] = "";
    char serr[1024] = "";
    if (st) snprintf(serr, sizeof serr, "%s", mla_last_error());
    mla_status fs = mla_jnl_finish(jnl, wall, interrupted ? why : NULL, out, sizeof out);
    catch_signals(0);
    const char *note = mla_rep_note(rep);
    if (!quiet || tot.fail || interrupted) {
        char k[32] = ""; /* a reseeded run names its K, which reproduces it */
        if (ro->reseed) snprintf(k, sizeof k, " --reseed %u", ro->reseed);
        printf("mlacheck run: suite %s%s: %d passed, %d failed, %d skipped in %.1f s wall%s%s\n", s->name, k, tot.pass,
               tot.fail, tot.skip, wall, interrupted ? "; " : "", interrupted ? why : "");
        if (fs == MLA_OK) printf("report: %s/index.html (summary.md, junit.xml, metrics.tsv)%s\n", out,
                                 interrupted ? "; marked INCOMPLETE" : "");
        if (note && note[0]) printf("note: %s\n", note);
    }
    if (fs) fprintf(stderr, "mlacheck: writing the report: %s (the journal in %s keeps what was synced)\n",
                    mla_last_error(), mla_jnl_dir(jnl));
    if (tot.fail) print_failures(&tot);
    int code = cli_exit_for_run(st, &tot);
    if (st) fprintf(stderr, "mlacheck: %s\n", serr);
    if (tot.error && tot.first_error[0]) fprintf(stderr, "mlacheck: first error: %s\n", tot.first_error);
    /* a run whose report is not written is never read as its checks' result; an interrupted one
     * exits as the signal does (130, 143) */
    if (fs) code = CLI_EXIT_USAGE;
    else if (interrupted) code = 128 + sig;
    mla_runner_totals_free(&tot);
    mla_jnl_close(jnl);
    mla_rep_free(rep);
    return cli_exit_git_bisect(code, git_bisect);
}

#define CLI_MAX_SELECT 32

int cli_run(int argc, char **argv)
{
    const char *suite = "ci", *results = NULL, *golden = NULL, *select[CLI_MAX_SELECT];
    char rd[1024], gd[1024];
    mla_runner_opts ro = {.select = select};
    int git_bisect = 0, quiet = 0, verbose = 0;
    cli_parser p;
    cli_parser_init(&p, "run", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit ? cli_exit_git_bisect(p.exit, git_bisect) : 0;
        switch (c) {
        case 's': suite = optarg; break;
        case 'e': ro.engine = optarg; break;
        case 'c': ro.only_case = optarg; break;
        case 'k':
            if (ro.n_select == CLI_MAX_SELECT) {
                fprintf(stderr, "mlacheck run: at most %d -k patterns\n", CLI_MAX_SELECT);
                return cli_exit_git_bisect(CLI_EXIT_USAGE, git_bisect);
            }
            select[ro.n_select++] = optarg;
            break;
        case 'i':
            if (cli_parse_faults(optarg, &ro.faults)) return cli_exit_git_bisect(CLI_EXIT_USAGE, git_bisect);
            break;
        case 'r': results = optarg; break;
        case 'g': golden = optarg; break;
        case 'K': /* 0 = the engine's own split count */
            if (cli_parse_int("run", "--kv-splits", optarg, 0, 1 << 16, &ro.kv_splits))
                return cli_exit_git_bisect(CLI_EXIT_USAGE, git_bisect);
            break;
        case 'S': {
            int k;
            if (cli_parse_int("run", "--reseed", optarg, 0, INT_MAX, &k))
                return cli_exit_git_bisect(CLI_EXIT_USAGE, git_bisect);
            ro.reseed = (unsigned)k;
            break;
        }
        case 'b': git_bisect = 1; break;
        case 'q': quiet = 1; break;
        case 'v': verbose = 1; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (cli_positional(&p, 0)) return cli_exit_git_bisect(CLI_EXIT_USAGE, git_bisect);
    /* every name checked before the suite runs or a results folder exists */
    if (ro.engine && cli_check_engine("run", ro.engine)) return cli_exit_git_bisect(CLI_EXIT_USAGE, git_bisect);
    ro.golden_dir = golden ? golden : cli_dir("golden", gd, sizeof gd);
    mla_suite *s;
    mla_rules *rules;
    int e = load_suite(suite, &s, &rules);
    if (!e && ro.only_case && cli_check_case("run", s, ro.only_case)) e = CLI_EXIT_USAGE;
    if (!e && cli_check_select("run", s, ro.only_case, select, ro.n_select)) e = CLI_EXIT_USAGE;
    if (e) {
        mla_suite_free(s);
        mla_rules_free(rules);
        return cli_exit_git_bisect(e, git_bisect);
    }
    int code = run_suite(s, rules, &ro, results ? results : cli_dir("results", rd, sizeof rd), git_bisect, quiet,
                         verbose);
    mla_suite_free(s);
    mla_rules_free(rules);
    return code;
}

/* MANIFEST with one line appended, the whole file replaced atomically. */
static mla_status append_manifest(const char *gd, const char *stamp, const char *suite, const char *sha,
                                  const char *reason)
{
    char mp[1100], line[4096];
    snprintf(mp, sizeof mp, "%s/MANIFEST", gd);
    int k = snprintf(line, sizeof line, "%s\tsuite=%s\tgit=%s\treason=%s\n", stamp, suite, sha, reason);
    if (k < 0 || (size_t)k >= sizeof line) return mla_errorf(MLA_ERR_INVALID, "%s: reason too long", mp);
    return mla_fio_append_atomic(mp, line, (size_t)k);
}

/* golden: write candidates to results/golden-staging/<utc>-XXXXXX/; --update copies them into golden/. */
int cli_golden(int argc, char **argv)
{
    const char *suite = "ci", *reason = NULL;
    int update = 0, quiet = 0, verbose = 0;
    cli_parser p;
    cli_parser_init(&p, "golden", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 's': suite = optarg; break;
        case 'u': update = 1; break;
        case 'm': reason = optarg; break;
        case 'q': quiet = 1; break;
        case 'v': verbose = 1; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (cli_positional(&p, 0)) return CLI_EXIT_USAGE;
    if (update && (!reason || !reason[0])) {
        fprintf(stderr, "mlacheck golden --update needs --reason TEXT (recorded in golden/MANIFEST)\n");
        return CLI_EXIT_USAGE;
    }
    mla_suite *s;
    mla_rules *rules;
    int e = load_suite(suite, &s, &rules);
    if (e) return e;
    char rd[1024], gd[1024], stage[1400], stamp[32];
    time_t t = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&t));
    cli_dir("results", rd, sizeof rd);
    cli_dir("golden", gd, sizeof gd);
    /* one staging folder per run: two runs in the same second must not write into each other's */
    char sroot[1100];
    snprintf(sroot, sizeof sroot, "%s/golden-staging", rd);
    if ((mkdir(rd, 0755) != 0 && errno != EEXIST) || (mkdir(sroot, 0755) != 0 && errno != EEXIST)) {
        fprintf(stderr, "mlacheck golden: %s: cannot create: %s\n", sroot, strerror(errno));
        mla_suite_free(s);
        mla_rules_free(rules);
        return CLI_EXIT_USAGE;
    }
    snprintf(stage, sizeof stage, "%s/%s-XXXXXX", sroot, stamp);
    if (!mkdtemp(stage)) {
        fprintf(stderr, "mlacheck golden: %s: cannot create: %s\n", stage, strerror(errno));
        mla_suite_free(s);
        mla_rules_free(rules);
        return CLI_EXIT_USAGE;
    }
    chmod(stage, 0755); /* mkdtemp makes it 0700; candidates are meant to be reviewed */
    char sha[64];
    mla_runner_opts ro = {.golden_dir = gd, .write_golden = stage, .git_sha = cli_git_sha(sha, sizeof sha)};
    mla_runner_totals tot;
    mla_status st = MLA_OK;
    if (cli_progress_open(quiet, verbose, &ro.progress_to)) {
        memset(&tot, 0, sizeof tot);
        st = mla_errorf(MLA_ERR_INVALID, "progress");
    } else {
        st = mla_runner_run(s, rules, &ro, NULL, &tot);
        mla_progress_free(ro.progress_to);
    }
    int code = 0;
    if (st || tot.error) {
        fprintf(stderr, "mlacheck golden: %s\n", st ? mla_last_error() : tot.first_error);
        code = cli_exit_for_golden(st, &tot);
    } else {
        printf("golden candidates written to %s\n", stage);
        if (update) {
            /* each golden replaced atomically, MANIFEST last: interrupted, golden/ holds old or new
             * files, never a truncated one, and MANIFEST names only an update that completed */
            if (mla_fio_replace_tree(stage, gd, "MANIFEST") || append_manifest(gd, stamp, suite, sha, reason)) {
                fprintf(stderr, "mlacheck golden: updating %s from %s failed: %s\n", gd, stage, mla_last_error());
                code = CLI_EXIT_USAGE;
            } else {
                printf("golden/ updated from %s; MANIFEST records: %s\n", stage, reason);
            }
        } else {
            printf("review them, then: mlacheck golden --suite %s --update --reason \"why\"\n", suite);
        }
    }
    mla_runner_totals_free(&tot);
    mla_suite_free(s);
    mla_rules_free(rules);
    return code;
}

/* sweep: decode vs prefill along the kv length for one model/profile; prints the first failing length. */
int cli_sweep(int argc, char **argv)
{
    const char *model = "tiny-v3", *profile = "fp64", *engine = "ref";
    int max_len = 512, step = 16, quiet = 0, verbose = 0;
    unsigned faults = 0;
    cli_parser p;
    cli_parser_init(&p, "sweep", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 'm': model = optarg; break;
        case 'p': profile = optarg; break;
        case 'e': engine = optarg; break;
        case 'n': if (cli_parse_int("sweep", "--max-len", optarg, 2, 1 << 20, &max_len)) return CLI_EXIT_USAGE; break;
        case 't': if (cli_parse_int("sweep", "--step", optarg, 1, 1 << 20, &step)) return CLI_EXIT_USAGE; break;
        case 'i':
            if (cli_parse_faults(optarg, &faults)) return CLI_EXIT_USAGE;
            break;
        case 'q': quiet = 1; break;
        case 'v': verbose = 1; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (cli_positional(&p, 0) || cli_check_model("sweep", model) || cli_check_profile("sweep", "--profile", profile) ||
        cli_check_engine("sweep", engine))
        return CLI_EXIT_USAGE;
    if (max_len < 2 || step < 1) {
        fprintf(stderr, "mlacheck sweep: --max-len must be >= 2 and --step >= 1\n");
        return CLI_EXIT_USAGE;
    }
    char text[1024];
    snprintf(text, sizeof text,
             "[case sweep]\nmodel = %s\nprompts = random:len=%d,seed=7\nengines = %s\npaths = prefill, decode\n"
             "profiles = %s\nchecks = sweep\nkv_lens = %d..%d step %d\n",
             model, max_len, engine, profile, step, max_len, step);
    mla_suite *s;
    if (mla_suite_parse(text, "sweep", &s)) {
        fprintf(stderr, "mlacheck sweep: %s\n", mla_last_error());
        return CLI_EXIT_USAGE;
    }
    char sd[1024], rp[1100], rd[1024];
    snprintf(rp, sizeof rp, "%s/rules.tol", cli_dir("suites", sd, sizeof sd));
    mla_rules *rules;
    if (mla_rules_load(rp, &rules)) {
        fprintf(stderr, "mlacheck: %s\n", mla_last_error());
        mla_suite_free(s);
        return CLI_EXIT_USAGE;
    }
    mla_runner_opts ro = {.faults = faults};
    int code = run_suite(s, rules, &ro, cli_dir("results", rd, sizeof rd), 0, quiet, verbose);
    mla_suite_free(s);
    mla_rules_free(rules);
    return code;
}
