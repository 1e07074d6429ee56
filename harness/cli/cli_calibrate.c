/* cli_calibrate.c: `mlacheck calibrate`: run suites (or read runs' metrics.tsv), measure the benign
 * error of each (check, profile, tap class) and write the calibration table and the rules.tol lines
 * k x the measured maximum (calibrate.h). The run's pass or fail does not matter here: the rows are
 * the measurement, so the exit code is 0 whenever the table was written. */
#include "cli.h"

#include "mlacheck/calibrate.h"
#include "mlacheck/runner.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAL_MAX_INPUTS 16

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs one suite into results and adds its metric rows to set. */
static int cal_suite(const char *name, const mla_rules *rules, const mla_runner_opts *ro, const char *results,
                     mla_calib_set *set)
{
    char sd[1024];
    mla_suite *s = NULL;
    if (mla_suite_load(cli_dir("suites", sd, sizeof sd), name, &s)) {
        fprintf(stderr, "mlacheck calibrate: suite %s: %s\n", name, mla_last_error());
        return CLI_EXIT_USAGE;
    }
    double t0 = now_s();
    mla_rep_run *rep = NULL;
    mla_status st = mla_rep_new(results, s->name, &rep);
    mla_runner_totals tot;
    memset(&tot, 0, sizeof tot);
    char out[1024] = "", mp[1100];
    if (!st) {
        char sha[64];
        mla_rep_set_git_sha(rep, cli_git_sha(sha, sizeof sha));
        st = mla_runner_run(s, rules, ro, rep, &tot);
        if (!st) st = mla_rep_finish(rep, now_s() - t0, out, sizeof out);
    }
    int code = 0;
    if (st) {
        fprintf(stderr, "mlacheck calibrate: suite %s: %s\n", name, mla_last_error());
        code = cli_exit_for(st);
    } else if (tot.error) {
        /* an engine that did not run measured nothing: calibrating on its absence would be wrong */
        fprintf(stderr, "mlacheck calibrate: suite %s: %d checks ended in an error (first: %s)\n", name, tot.error,
                tot.first_error);
        code = CLI_EXIT_ENGINE;
    } else {
        char k[32] = "";
        if (ro->reseed) snprintf(k, sizeof k, " --reseed %u", ro->reseed);
        printf("calibrate: suite %s%s: %d checks passed, %d failed (measured all the same), in %.1f s; run %s\n", s->name,
               k, tot.pass, tot.fail, now_s() - t0, out);
        snprintf(mp, sizeof mp, "%s/metrics.tsv", out);
        mla_metrics m = {0};
        if ((st = mla_metrics_load(mp, &m)) || (st = mla_calib_add(set, &m, rules))) {
            fprintf(stderr, "mlacheck calibrate: %s\n", mla_last_error());
            code = cli_exit_for(st);
        }
        mla_metrics_free(&m);
    }
    mla_runner_totals_free(&tot);
    mla_rep_free(rep);
    mla_suite_free(s);
    return code;
}

static int cal_from(const char *path, const mla_rules *rules, mla_calib_set *set)
{
    mla_metrics m = {0};
    mla_status st = mla_metrics_load(path, &m);
    if (!st) st = mla_calib_add(set, &m, rules);
    mla_metrics_free(&m);
    if (st) fprintf(stderr, "mlacheck calibrate: %s: %s\n", path, mla_last_error());
    return st ? cli_exit_for(st) : 0;
}

/* Prints the table with the current limit beside the proposed one. */
static void cal_print(const mla_calib_table *t)
{
    printf("%-20s %-6s %-26s %6s %10s %10s %10s %10s\n", "check", "prof", "tap", "n", "median", "max", "limit_now",
           "k*max");
    for (size_t i = 0; i < t->n_rows; i++) {
        const mla_calib_row *r = &t->rows[i];
        if (strcmp(r->metric, "rel_l2")) {
            printf("%-20s %-6s %-26s %6lld %10.3g %10.3g %10s %10s (worst margin/bound)\n", r->check, r->profile, r->tap,
                   (long long)r->n, r->median, r->max, "-", "-");
            continue;
        }
        printf("%-20s %-6s %-26s %6lld %10.3g %10.3g %10.3g %10.2g\n", r->check, r->profile, r->tap, (long long)r->n,
               r->median, r->max, r->limit_now, r->limit);
    }
}

int cli_calibrate(int argc, char **argv)
{
    const char *suites[CAL_MAX_INPUTS], *froms[CAL_MAX_INPUTS];
    int n_suites = 0, n_froms = 0, quiet = 0, reseeds = 1;
    const char *out = NULL, *rules_out = NULL, *results = NULL, *models = NULL;
    double k = MLA_CALIB_K;
    mla_runner_opts ro = {0};
    cli_parser p;
    cli_parser_init(&p, "calibrate", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 's':
        case 'f':
            if ((c == 's' ? n_suites : n_froms) == CAL_MAX_INPUTS) {
                fprintf(stderr, "mlacheck calibrate: at most %d --suite and %d --from\n", CAL_MAX_INPUTS, CAL_MAX_INPUTS);
                return CLI_EXIT_USAGE;
            }
            if (c == 's') suites[n_suites++] = optarg;
            else froms[n_froms++] = optarg;
            break;
        case 'e': ro.engine = optarg; break;
        case 'm': models = optarg; break;
        case 'c': ro.only_case = optarg; break;
        case 'K':
            if (cli_parse_int("calibrate", "--kv-splits", optarg, 0, 1 << 16, &ro.kv_splits)) return CLI_EXIT_USAGE;
            break;
        case 'k': {
            char *end = NULL;
            k = strtod(optarg, &end);
            if (end == optarg || *end) k = 0; /* refused below */
            break;
        }
        case 'S':
            if (cli_parse_int("calibrate", "--reseeds", optarg, 1, 1 << 20, &reseeds)) return CLI_EXIT_USAGE;
            break;
        case 'o': out = optarg; break;
        case 'R': rules_out = optarg; break;
        case 'r': results = optarg; break;
        case 'q': quiet = 1; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (ro.engine && cli_check_engine("calibrate", ro.engine)) return CLI_EXIT_USAGE;
    if (optind < argc || !(k > 0)) {
        fprintf(stderr, "mlacheck calibrate: %s\n", optind < argc ? "unexpected argument" : "--k must be > 0");
        return CLI_EXIT_USAGE;
    }
    if (n_suites + n_froms == 0) suites[n_suites++] = "ci";
    /* the suites and the case named before anything runs */
    int case_found = !ro.only_case;
    for (int i = 0; i < n_suites; i++) {
        char sdir[1024];
        mla_suite *s = NULL;
        if (mla_suite_load(cli_dir("suites", sdir, sizeof sdir), suites[i], &s)) {
            fprintf(stderr, "mlacheck calibrate: suite %s: %s\n", suites[i], mla_last_error());
            return CLI_EXIT_USAGE;
        }
        if (!case_found && mla_suite_find_case(s, ro.only_case)) case_found = 1;
        if (!case_found && i == n_suites - 1) cli_check_case("calibrate", s, ro.only_case);
        mla_suite_free(s);
    }
    if (!case_found) return CLI_EXIT_USAGE;
    if (!out && n_suites == 0) {
        fprintf(stderr, "mlacheck calibrate: --from needs --out (the table is named after a suite otherwise)\n");
        return CLI_EXIT_USAGE;
    }
    /* the command itself is the table's source, so another machine can redo it (less the options
     * that change where the runs go or what is printed, not what is measured) */
    char source[512];
    size_t m = (size_t)snprintf(source, sizeof source, "mlacheck calibrate");
    for (int i = 1; i < argc && m < sizeof source; i++) {
        if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) continue;
        if (!strcmp(argv[i], "--results") || !strcmp(argv[i], "-r")) {
            i++;
            continue;
        }
        if (!strncmp(argv[i], "--results=", 10)) continue;
        m += (size_t)snprintf(source + m, sizeof source - m, " %s", argv[i]);
    }
    char sd[1024], rp[1100], rd[1024], gd[1024], def_out[1200], def_rules[1200];
    snprintf(rp, sizeof rp, "%s/rules.tol", cli_dir("suites", sd, sizeof sd));
    mla_rules *rules = NULL;
    if (mla_rules_load(rp, &rules)) {
        fprintf(stderr, "mlacheck calibrate: %s\n", mla_last_error());
        return CLI_EXIT_USAGE;
    }
    if (!out) {
        const char *base = strrchr(suites[0], '/');
        base = base ? base + 1 : suites[0];
        size_t bl = strcspn(base, ".");
        snprintf(def_out, sizeof def_out, "%s/calibration/%.*s%s.tsv", sd, (int)bl, base,
                 ro.engine ? (!strncmp(ro.engine, "plugin:", 7) ? "-plugin" : !strcmp(ro.engine, "gpu") ? "-gpu" : "")
                           : "");
        out = def_out;
    }
    if (!rules_out) {
        size_t ol = strlen(out);
        snprintf(def_rules, sizeof def_rules, "%.*s.tol", (int)(ol > 4 && !strcmp(out + ol - 4, ".tsv") ? ol - 4 : ol), out);
        rules_out = def_rules;
    }
    if (!results) results = cli_dir("results", rd, sizeof rd);
    ro.golden_dir = cli_dir("golden", gd, sizeof gd);
    double t0 = now_s();
    mla_calib_set *set = NULL;
    if (mla_calib_begin(&set)) {
        fprintf(stderr, "mlacheck calibrate: %s\n", mla_last_error());
        mla_rules_free(rules);
        return CLI_EXIT_ENGINE;
    }
    int code = 0;
    if (models) {
        mla_suite *ms = NULL;
        mla_status st = mla_suite_load(cli_dir("suites", sd, sizeof sd), models, &ms);
        if (!st) st = mla_calib_set_models(set, ms);
        mla_suite_free(ms);
        if (st) {
            fprintf(stderr, "mlacheck calibrate: --models %s: %s\n", models, mla_last_error());
            code = CLI_EXIT_USAGE;
        }
    }
    /* more workloads of the same suites (mlacheck/reseed.h): the tail of the benign error, which one
     * fixed set of prompts can miss (8 of 20 ci runs under --reseed 1 .. 20 failed at 41a2710's limits) */
    for (int i = 0; i < n_suites && !code; i++)
        for (int r = 0; r < reseeds && !code; r++) {
            ro.reseed = (unsigned)r;
            code = cal_suite(suites[i], rules, &ro, results, set);
        }
    for (int i = 0; i < n_froms && !code; i++) code = cal_from(froms[i], rules, set);
    mla_calib_table t;
    mla_status st = mla_calib_end(set, k, source, &t);
    if (code) {
        mla_calib_free(&t);
        mla_rules_free(rules);
        return code;
    }
    const char *tsv_name = strstr(out, "calibration/") ? strstr(out, "calibration/") : out;
    if (st || (st = mla_calib_write_tsv(out, &t)) || (st = mla_calib_write_rules(rules_out, &t, tsv_name))) {
        fprintf(stderr, "mlacheck calibrate: %s\n", mla_last_error());
        code = cli_exit_for(st);
    } else {
        if (!quiet) cal_print(&t);
        printf("calibrate: %zu rows in %s, rules.tol lines (k = %g) in %s, %.1f s wall\n", t.n_rows, out, k,
               rules_out, now_s() - t0);
    }
    mla_calib_free(&t);
    mla_rules_free(rules);
    return code;
}
