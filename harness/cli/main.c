/* main.c: the mlacheck command line: the command named by argv[1] from the command table
 * (cli_table.c), which also writes the help. Exit codes (chosen in harness/cli only):
 *   0 pass, 1 numerical failure, 2 bad input or usage, 3 engine error, 77 skipped;
 *   with --git-bisect: 0 good, 1 bad, 125 skip (anything that is neither). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "-h") && strcmp(argv[1], "--help") &&
                     strcmp(argv[1], "--version"))) {
        /* the main job: the default suite, with any run options given (mlacheck -k golden) */
        argv[0] = "run"; /* as `mlacheck run ...`: argv[0] is the command's name */
        return cli_run(argc, argv);
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        cli_print_usage(stdout);
        return CLI_EXIT_PASS;
    }
    if (!strcmp(cmd, "--version")) {
        cli_print_version(stdout);
        return CLI_EXIT_PASS;
    }
    const cli_cmd *c = cli_cmd_find(cmd);
    if (c) return c->fn(argc - 1, argv + 1);
    const char *cands[64];
    int n = 0;
    for (const cli_cmd *k = cli_cmds; k->name && n < 64; k++) cands[n++] = k->name;
    char sug[128];
    fprintf(stderr, "mlacheck: unknown command '%s'%s\n", cmd, cli_did_you_mean(cmd, cands, n, sug, sizeof sug));
    cli_print_usage(stderr);
    return CLI_EXIT_USAGE;
}
