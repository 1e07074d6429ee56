/* cli_help.c: `mlacheck help [COMMAND]`, `CMD --help`, `--version` and the manual page
 * (`mlacheck help --man`), all written from the command table (cli_table.c). */
#include "cli.h"

#include <string.h>

#ifndef MLA_VERSION
#define MLA_VERSION "unknown"
#endif

#define HELP_WIDTH 100
#define HELP_COL 28

static const char exit_text[] = "0 pass, 1 numerical failure, 2 bad input or usage, 3 engine error, 77 skipped; "
                                "with --git-bisect: 0 good, 1 bad, 125 skip (anything that is neither)";

/* text from column col (the cursor is there), wrapped at HELP_WIDTH with later lines indented to col */
static void wrap(FILE *f, const char *text, int col)
{
    int at = col;
    for (const char *w = text; *w;) {
        size_t n = strcspn(w, " ");
        if (at > col && at + 1 + (int)n > HELP_WIDTH) {
            fprintf(f, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', f);
            at++;
        }
        fwrite(w, 1, n, f);
        at += (int)n;
        w += n;
        while (*w == ' ') w++;
    }
    fputc('\n', f);
}

/* "-k, --select PATTERN" */
static int opt_label(char *out, size_t n, const cli_opt *o)
{
    char sh[8] = "";
    if (o->short_ok) snprintf(sh, sizeof sh, "-%c, ", o->key);
    return snprintf(out, n, "%s--%s%s%s", sh, o->name, o->meta ? " " : "", o->meta ? o->meta : "");
}

void cli_print_usage(FILE *f)
{
    fputs("usage: mlacheck [COMMAND] [options]   (no command: mlacheck run, the ci suite)\n"
          "       mlacheck help COMMAND | mlacheck COMMAND --help | mlacheck --version\n\ncommands:\n", f);
    for (const cli_cmd *c = cli_cmds; c->name; c++) {
        fprintf(f, "  %-10s ", c->name);
        wrap(f, c->summary, 13);
    }
    fputs("\nexit status: ", f);
    wrap(f, exit_text, 13);
}

void cli_print_cmd_help(FILE *f, const cli_cmd *c)
{
    fprintf(f, "usage: mlacheck %s [options]%s%s\n", c->name, c->args[0] ? " " : "", c->args);
    wrap(f, c->summary, 0);
    fputs("\noptions:\n", f);
    char label[96];
    for (const cli_opt *o = c->opts; o->name; o++) {
        int n = opt_label(label, sizeof label, o);
        fprintf(f, "  %s", label);
        if (n + 2 >= HELP_COL) fprintf(f, "\n%*s", HELP_COL, "");
        else fprintf(f, "%*s", HELP_COL - 2 - n, "");
        wrap(f, o->help, HELP_COL);
    }
    fprintf(f, "  -h, --help%*s", HELP_COL - 12, "");
    wrap(f, "this help", HELP_COL);
    if (c->details) {
        fputc('\n', f);
        wrap(f, c->details, 0);
    }
}

/* text for roff: a backslash doubled, '-' as \-, a line never starting with '.' or '\'' */
static void roff(FILE *f, const char *s)
{
    if (*s == '.' || *s == '\'') fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\') fputs("\\e", f);
        else if (*s == '-') fputs("\\-", f);
        else fputc(*s, f);
    }
}

void cli_print_man(FILE *f)
{
    fputs(".TH MLACHECK 1 \"\" \"mlacheck " MLA_VERSION "\" \"User Commands\"\n"
          ".SH NAME\nmlacheck \\- check MLA attention engines against a float64 reference, tap by tap\n"
          ".SH SYNOPSIS\n.B mlacheck\n[\\fICOMMAND\\fR] [\\fIoptions\\fR]\n.br\n.B mlacheck help\n\\fICOMMAND\\fR\n"
          ".br\n.B mlacheck \\-\\-version\n"
          ".SH DESCRIPTION\nWithout a command, mlacheck runs the default suite (\\fBmlacheck run\\fR, suite ci). "
          "Every command answers \\fB\\-\\-help\\fR.\n.SH COMMANDS\n", f);
    for (const cli_cmd *c = cli_cmds; c->name; c++) {
        fputs(".SS \"", f);
        roff(f, c->name);
        if (c->args[0]) {
            fputc(' ', f);
            roff(f, c->args);
        }
        fputs("\"\n", f);
        roff(f, c->summary);
        fputc('\n', f);
        if (c->details) {
            fputs(".PP\n", f);
            roff(f, c->details);
            fputc('\n', f);
        }
        for (const cli_opt *o = c->opts; o->name; o++) {
            fputs(".TP\n", f);
            if (o->short_ok) fprintf(f, "\\fB\\-%c\\fR, ", o->key);
            fputs("\\fB\\-\\-", f);
            roff(f, o->name);
            fputs("\\fR", f);
            if (o->meta) {
                fputs(" \\fI", f);
                roff(f, o->meta);
                fputs("\\fR", f);
            }
            fputc('\n', f);
            roff(f, o->help);
            fputc('\n', f);
        }
    }
    fputs(".SH EXIT STATUS\n", f);
    roff(f, exit_text);
    fputs("\n.SH ENVIRONMENT\n.TP\n.B MLACHECK_HEARTBEAT_S\nseconds between the heartbeat lines of a run whose "
          "stderr is not a terminal (default 10)\n.SH SEE ALSO\nREADME.md, ARCHITECTURE.md and harness/BAD_INPUT.md "
          "in the source tree\n", f);
}

void cli_print_version(FILE *f)
{
    char sha[64];
    fprintf(f, "mlacheck %s (git %s)\n", MLA_VERSION, cli_git_sha(sha, sizeof sha));
}

int cli_help(int argc, char **argv)
{
    cli_parser p;
    cli_parser_init(&p, "help", argc, argv);
    int man = 0, list = 0;
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 'M': man = 1; break;
        case 'C': list = 1; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (argc - optind > 1) return cli_positional(&p, 1) ? CLI_EXIT_USAGE : 0;
    if (man) {
        cli_print_man(stdout);
        return CLI_EXIT_PASS;
    }
    if (list) {
        for (const cli_cmd *c = cli_cmds; c->name; c++) printf("%s\n", c->name);
        return CLI_EXIT_PASS;
    }
    if (optind == argc) {
        cli_print_usage(stdout);
        return CLI_EXIT_PASS;
    }
    const cli_cmd *c = cli_cmd_find(argv[optind]);
    if (!c) {
        const char *cands[64];
        int n = 0;
        for (const cli_cmd *k = cli_cmds; k->name && n < 64; k++) cands[n++] = k->name;
        char sug[128];
        fprintf(stderr, "mlacheck help: unknown command '%s'%s\n", argv[optind],
                cli_did_you_mean(argv[optind], cands, n, sug, sizeof sug));
        return CLI_EXIT_USAGE;
    }
    cli_print_cmd_help(stdout, c);
    return CLI_EXIT_PASS;
}
