/* cli_ops.c: `mlacheck ops --engine E [--suite ops-smoke|ops-full] [--rules FILE]
 * [--format bf16|fp8|fp8ds|f32] [--filter SUBSTR] [--results DIR]`: the attention operator cases
 * (opcheck.h) through the reference's or a plugin's operator, one line per case, and a results folder
 * as `mlacheck run` writes (report.h: summary.json/md, junit.xml, metrics.tsv, index.html; one check
 * per case) under DIR (default: the project's results/).
 * `mlacheck ops --export DIR [--suite S] [--format F] [--filter X]` writes the cases' inputs as HDF5
 * instead, and `mlacheck ops --judge DIR [--rules FILE] [--format F] [--filter X]` judges the outputs
 * a kernel wrote there (harness/python/README.md), with the same lines and exit codes.
 * A plugin operator runs in a child process (mla_opcheck_engine_open): one that crashes, exits or
 * hangs is that case's ERROR, and a run whose every failure is such an engine error exits 3. */
#include "cli.h"

#include "mlacheck/opcheck.h"
#include "mlacheck/report.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const kv_format_names[] = {
#define KV_NAME(e, name) name,
    MLA_KV_FORMAT_LIST(KV_NAME)
#undef KV_NAME
};

/* What the per-case callback needs: the report and the options the cases are judged with. */
typedef struct {
    mla_rep_run *rep;
    const mla_opcheck_opts *o;
    mla_status st; /* the first failure to record a case (reported after the run) */
} ops_ctx;

static void ops_line(void *u, const mla_opcase *c, const mla_opcase_result *r)
{
    ops_ctx *x = u;
    printf("%-5s %-36s %7.3fs %s\n", mla_opcase_verdict_name(r->verdict), c->name, r->seconds,
           r->verdict == MLA_OPCASE_PASS ? "" : r->why);
    if (x->rep && !x->st) x->st = mla_opcheck_report_case(x->rep, c, r, x->o);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --format NAME into *out (an mla_kv_format); -1 with a message for an unknown name. */
static int parse_format(const char *name, int *out)
{
    for (int i = 0; i < MLA_KV_FORMAT_COUNT; i++)
        if (!strcmp(name, kv_format_names[i])) {
            *out = i;
            return 0;
        }
    fprintf(stderr, "mlacheck ops: --format %s: expected one of", name);
    for (int i = 0; i < MLA_KV_FORMAT_COUNT; i++) fprintf(stderr, " %s", kv_format_names[i]);
    fputc('\n', stderr);
    return -1;
}

int cli_ops(int argc, char **argv)
{
    const char *engine = NULL, *suite = "ops-smoke", *rules_path = NULL, *export_dir = NULL, *judge_dir = NULL,
               *results = NULL;
    mla_opcheck_opts o;
    mla_opcheck_opts_default(&o);
    o.on_case = ops_line;
    cli_parser p;
    cli_parser_init(&p, "ops", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 'e': engine = optarg; break;
        case 's': suite = optarg; break;
        case 'r': rules_path = optarg; break;
        case 'k': o.filter = optarg; break;
        case 'x': export_dir = optarg; break;
        case 'j': judge_dir = optarg; break;
        case 'o': results = optarg; break;
        case 'f':
            if (parse_format(optarg, &o.kv_format)) return CLI_EXIT_USAGE;
            break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (cli_positional(&p, 0)) return CLI_EXIT_USAGE;
    if (!!engine + !!export_dir + !!judge_dir != 1) {
        fprintf(stderr, "mlacheck ops: give one of --engine ref|plugin:<path.so>, --export DIR, --judge DIR\n");
        return CLI_EXIT_USAGE;
    }
    if (engine && (!strcmp(engine, "gpu") || cli_check_engine("ops", engine))) {
        if (!strcmp(engine, "gpu")) fprintf(stderr, "mlacheck ops: --engine gpu: expected ref or plugin:PATH.so\n");
        return CLI_EXIT_USAGE;
    }
    int known = 0, ns = 0;
    const char *const *suites = mla_opcheck_suites();
    for (; suites[ns]; ns++) known |= !strcmp(suites[ns], suite);
    if (!known && !judge_dir) {
        char sug[128];
        fprintf(stderr, "mlacheck ops: --suite '%s': expected ops-smoke or ops-full%s\n", suite,
                cli_did_you_mean(suite, suites, ns, sug, sizeof sug));
        return CLI_EXIT_USAGE;
    }
    if (export_dir) {
        int n = 0;
        mla_status st = mla_opcheck_export(suite, export_dir, &o, &n);
        if (st) fprintf(stderr, "mlacheck ops: %s: %s\n", mla_strerror(st), mla_last_error());
        else printf("%s: exported %d cases to %s (index %s/cases.json)\n", suite, n, export_dir, export_dir);
        return cli_exit_for(st);
    }
    double t0 = now_s();
    mla_opcheck_engine *eng = NULL;
    mla_rules *rules = NULL;
    mla_opcheck_summary s = {0};
    char judged[64] = "", rd[4096], sha[64];
    ops_ctx x = {.o = &o};
    o.user = &x;
    /* the suite of an export is known before judging: the report is named after it */
    mla_status st = judge_dir ? mla_opcheck_export_suite(judge_dir, judged, sizeof judged)
                              : mla_opcheck_engine_open(engine, &eng);
    if (judge_dir) suite = judged;
    if (!st && rules_path && !(st = mla_rules_load(rules_path, &rules))) o.rules = rules;
    if (!st) st = mla_rep_new(results ? results : cli_dir("results", rd, sizeof rd), suite, &x.rep);
    if (!st) {
        mla_rep_set_git_sha(x.rep, cli_git_sha(sha, sizeof sha));
        st = judge_dir ? mla_opcheck_judge_dir(judge_dir, &o, &s) : mla_opcheck_run_engine(suite, eng, &o, &s, NULL);
    }
    if (st) fprintf(stderr, "mlacheck ops: %s: %s\n", mla_strerror(st), mla_last_error());
    printf("%s: %d cases, %d passed, %d failed, %d errors, %d skipped%s%s\n", judge_dir ? judge_dir : suite, s.n_cases,
           s.n_pass, s.n_fail, s.n_error, s.n_skip, s.first_fail[0] ? "; first failure: " : "", s.first_fail);
    /* the folder is written whenever the cases ran, failed or all skipped (CI shows the failures from
     * it), not when an error stopped the run part way: a partial folder would read as a whole one */
    mla_status fs = x.st;
    if (x.rep && s.n_cases && (!st || st == MLA_ERR_UNSUPPORTED)) {
        char out[4200] = "";
        if (!fs) fs = mla_rep_finish(x.rep, now_s() - t0, out, sizeof out);
        if (fs) fprintf(stderr, "mlacheck ops: writing the report: %s\n", mla_last_error());
        else printf("report: %s/index.html (summary.md, junit.xml, metrics.tsv)\n", out);
    }
    mla_rep_free(x.rep);
    mla_rules_free(rules);
    mla_opcheck_engine_close(eng);
    return cli_exit_for_ops(st ? st : fs, &s);
}
