/* cli_args.c: the options of a command parsed from its row of the command table (cli_table.c):
 * getopt_long's arrays are built from the row, --help / -h answer from the same row, and a mistyped
 * option is named with the closest one. */
#include "cli.h"

#include "mlacheck/suite.h"

#include <stdlib.h>
#include <string.h>

void cli_parser_init(cli_parser *p, const char *name, int argc, char **argv)
{
    static struct option lo[CLI_MAX_OPTS + 2];
    memset(p, 0, sizeof *p);
    p->cmd = cli_cmd_find(name);
    p->argc = argc;
    p->argv = argv;
    p->lo = lo;
    int n = 0, k = 0;
    p->shorts[k++] = ':'; /* a missing argument returns ':', told apart from an unknown option */
    for (const cli_opt *o = p->cmd ? p->cmd->opts : NULL; o && o->name && n < CLI_MAX_OPTS; o++, n++) {
        lo[n] = (struct option){o->name, o->kind == CLI_FLAG ? no_argument : required_argument, NULL, o->key};
        if (o->short_ok) {
            p->shorts[k++] = (char)o->key;
            if (o->kind != CLI_FLAG) p->shorts[k++] = ':';
        }
    }
    lo[n++] = (struct option){"help", no_argument, NULL, 'h'};
    lo[n] = (struct option){0, 0, 0, 0};
    p->shorts[k++] = 'h';
    p->shorts[k] = 0;
    optind = 1;
    opterr = 0;
}

/* The option the user typed at argv[i] ("--sute=x" -> "sute"), for messages. */
static void typed_name(const char *arg, char *out, size_t n)
{
    while (*arg == '-') arg++;
    snprintf(out, n, "%.*s", (int)strcspn(arg, "="), arg);
}

int cli_next(cli_parser *p)
{
    const char *cmd = p->cmd ? p->cmd->name : "?";
    int c = getopt_long(p->argc, p->argv, p->shorts, p->lo, NULL);
    if (c == -1) return 0;
    if (c == 'h') {
        cli_print_cmd_help(stdout, p->cmd);
        p->exit = CLI_EXIT_PASS;
        return -1;
    }
    if (c == ':' || c == '?') {
        const char *arg = optind > 0 && optind <= p->argc ? p->argv[optind - 1] : "";
        char name[64], sug[128];
        typed_name(arg, name, sizeof name);
        if (c == ':') {
            fprintf(stderr, "mlacheck %s: option %s needs an argument\n", cmd, arg);
        } else {
            const char *cands[CLI_MAX_OPTS];
            int n = 0;
            for (const cli_opt *o = p->cmd->opts; o->name && n < CLI_MAX_OPTS; o++) cands[n++] = o->name;
            const char *best = mla_suite_suggest(name, cands, n);
            if (best) snprintf(sug, sizeof sug, " (did you mean --%s?)", best);
            else sug[0] = 0;
            if (arg[0] == '-' && arg[1] != '-' && optopt)
                fprintf(stderr, "mlacheck %s: unknown option -%c\n", cmd, optopt);
            else
                fprintf(stderr, "mlacheck %s: unknown option --%s%s\n", cmd, name, sug);
        }
        fprintf(stderr, "usage: mlacheck %s [options]%s%s (mlacheck help %s lists them)\n", cmd,
                p->cmd->args[0] ? " " : "", p->cmd->args, cmd);
        p->exit = CLI_EXIT_USAGE;
        return -1;
    }
    return c;
}

int cli_unhandled(const cli_parser *p, int key)
{
    for (const cli_opt *o = p->cmd->opts; o->name; o++)
        if (o->key == key) fprintf(stderr, "mlacheck %s: internal error: option --%s is in the table but not handled\n",
                                   p->cmd->name, o->name);
    return 70; /* EX_SOFTWARE: a bug, not the user's input */
}

int cli_positional(const cli_parser *p, int n)
{
    int have = p->argc - optind;
    if (have == n) return 0;
    if (have > n)
        fprintf(stderr, "mlacheck %s: unexpected argument '%s'\n", p->cmd->name, p->argv[optind + n]);
    else
        fprintf(stderr, "mlacheck %s: expected %s\n", p->cmd->name, p->cmd->args[0] ? p->cmd->args : "no arguments");
    fprintf(stderr, "usage: mlacheck %s [options]%s%s\n", p->cmd->name, p->cmd->args[0] ? " " : "", p->cmd->args);
    return -1;
}
