/* cli_report.c: `mlacheck report DIR`: a run folder's report rebuilt from its journal when the run
 * did not finish it (INCOMPLETE present: interrupted, killed, crashed), else re-rendered from
 * summary.json and metrics.tsv (restyling a finished report without rerunning the suite). */
#include "cli.h"

#include "mlacheck/journal.h"
#include "mlacheck/report.h"

#include <stdio.h>

int cli_report(int argc, char **argv)
{
    cli_parser p;
    cli_parser_init(&p, "report", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        return cli_unhandled(&p, c);
    }
    if (cli_positional(&p, 1)) return CLI_EXIT_USAGE;
    const char *dir = argv[optind]; /* the folder */
    if (mla_jnl_is_incomplete(dir)) {
        char msg[1024] = "";
        mla_status st = mla_jnl_rebuild(dir, msg, sizeof msg);
        if (st) {
            fprintf(stderr, "mlacheck report: %s\n", mla_last_error());
            return CLI_EXIT_USAGE;
        }
        printf("%s\n", msg);
        return CLI_EXIT_PASS;
    }
    char note[256] = "";
    mla_status st = mla_rep_render(dir, note, sizeof note);
    if (st) {
        fprintf(stderr, "mlacheck report: %s\n", mla_last_error());
        return CLI_EXIT_USAGE;
    }
    printf("rendered %s/index.html%s%s\n", dir, note[0] ? "; " : "", note);
    return CLI_EXIT_PASS;
}
