/* cli_bisect.c: `mlacheck bisect [--replay] DIR`: the first diverging layer, tap and op of every
 * failing check of a run, from its stored metrics (no re-run); with --replay, each saved failure is
 * replayed through the reference under each known fault (bisect.h). For bisecting commits, use
 * `git bisect run mlacheck run --git-bisect`. */
#include "cli.h"

#include "mla/backend.h"
#include "mlacheck/bisect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_hit(const mla_bisect_hit *h)
{
    const mla_rep_row *w = h->row;
    printf("case %s, check %s, profile %s, path %s:\n", w->case_name, w->check, w->profile, w->path);
    if (w->layer >= 0)
        printf("  first diverging: layer %d tap %s", w->layer, w->tap);
    else
        printf("  first diverging: tap %s", w->tap);
    if (w->kv_len != -1) printf(" at kv length %d", w->kv_len);
    printf("\n  op: %s\n  %s\n", h->op, w->why);
}

static void print_replay(const char *name, mla_status st, int fault)
{
    printf("failure %s:\n", name);
    if (st)
        printf("  replay %s: cannot replay (%s)\n", name, mla_last_error());
    else if (fault == MLA_BISECT_NO_FAULT)
        printf("  replay: the reference reproduces the candidate on these inputs (a flaky or order-dependent failure?)\n");
    else if (fault >= 0)
        printf("  replay: reproduced by the reference with fault '%s' (%s): that is the op at fault\n",
               mla_fault_name(fault), mla_fault_description(fault));
    else
        printf("  replay: no known fault reproduces the candidate; the op is the one named above\n");
}

/* Every saved failure of run_dir through the reference; the rules are suites/rules.tol. */
static void replay_all(const char *run_dir)
{
    char sd[1024], rp[1100];
    snprintf(rp, sizeof rp, "%s/rules.tol", cli_dir("suites", sd, sizeof sd));
    mla_rules *rules = NULL;
    char **names = NULL;
    size_t n = 0;
    mla_status st = mla_rules_load(rp, &rules);
    if (!st) st = mla_bisect_saved_failures(run_dir, &names, &n);
    if (st) {
        fprintf(stderr, "mlacheck bisect --replay: %s\n", mla_last_error());
    } else {
        printf("replaying saved failures (%s/failures) through the reference under each known fault:\n", run_dir);
        for (size_t i = 0; i < n; i++) {
            int fault;
            mla_status rs = mla_bisect_replay(run_dir, names[i], rules, &fault);
            print_replay(names[i], rs, fault);
        }
    }
    mla_bisect_names_free(names, n);
    mla_rules_free(rules);
}

int cli_bisect(int argc, char **argv)
{
    int replay = 0;
    cli_parser p;
    cli_parser_init(&p, "bisect", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        if (c == 'x') replay = 1;
        else return cli_unhandled(&p, c);
    }
    if (cli_positional(&p, 1)) {
        fprintf(stderr, "to bisect commits: git bisect run <build-and-run script> using mlacheck run --git-bisect\n");
        return CLI_EXIT_USAGE;
    }
    const char *dir = argv[optind];
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.tsv", dir);
    mla_metrics m;
    mla_bisect_hit *hits = NULL;
    size_t n = 0;
    mla_status st = mla_metrics_load(path, &m);
    if (!st) st = mla_bisect_first_failures(&m, &hits, &n);
    if (st) {
        fprintf(stderr, "mlacheck bisect: %s\n", mla_last_error());
        mla_metrics_free(&m);
        return cli_exit_for(st);
    }
    for (size_t i = 0; i < n; i++) print_hit(&hits[i]);
    free(hits);
    mla_metrics_free(&m);
    if (!n) {
        printf("no failing comparisons in %s\n", path);
        return CLI_EXIT_PASS;
    }
    if (replay) replay_all(dir);
    return CLI_EXIT_FAIL;
}
