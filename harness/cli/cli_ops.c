/* proposed body of cli_ops (harness/cli): mlacheck ops --engine E [--suite ops-smoke|ops-full]
 * [--rules FILE] [--format bf16|fp8|fp8ds|f32] [--filter SUBSTR] */
#include "cli.h"
#include "mlacheck/opcheck.h"
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void ops_line(void *u, const mla_opcase *c, const mla_opcase_result *r)
{
    (void)u;
    printf("%-5s %-36s %7.3fs %s\n", mla_opcase_verdict_name(r->verdict), c->name, r->seconds,
           r->verdict == MLA_OPCASE_PASS ? "" : r->why);
}

int cli_ops(int argc, char **argv)
{
    static const struct option lo[] = {{"engine", 1, 0, 'e'}, {"suite", 1, 0, 's'}, {"rules", 1, 0, 'r'},
                                       {"format", 1, 0, 'f'}, {"filter", 1, 0, 'k'}, {0, 0, 0, 0}};
    const char *engine = NULL, *suite = "ops-smoke", *rules_path = NULL;
    mla_opcheck_opts o;
    mla_opcheck_opts_default(&o);
    o.on_case = ops_line;
    for (int c; (c = getopt_long(argc, argv, "e:s:r:f:k:", lo, NULL)) != -1;) {
        if (c == 'e') engine = optarg;
        else if (c == 's') suite = optarg;
        else if (c == 'r') rules_path = optarg;
        else if (c == 'k') o.filter = optarg;
        else if (c == 'f') {
            static const char *const n[] = {"bf16", "fp8", "fp8ds", "f32"};
            o.kv_format = -2;
            for (int i = 0; i < 4; i++) if (!strcmp(optarg, n[i])) o.kv_format = i;
            if (o.kv_format == -2) { fprintf(stderr, "mlacheck ops: --format %s: expected bf16, fp8, fp8ds or f32\n", optarg); return CLI_EXIT_USAGE; }
        } else return CLI_EXIT_USAGE;
    }
    if (!engine) { fprintf(stderr, "mlacheck ops: --engine ref|plugin:<path.so> is required\n"); return CLI_EXIT_USAGE; }
    const mla_attn_ops *ops;
    mla_rules *rules = NULL;
    mla_opcheck_summary s = {0};
    mla_status st = mla_opcheck_open(engine, &ops);
    if (!st && rules_path && !(st = mla_rules_load(rules_path, &rules))) o.rules = rules;
    if (!st) st = mla_opcheck_run_suite(suite, ops, &o, &s, NULL);
    if (st) fprintf(stderr, "mlacheck ops: %s: %s\n", mla_strerror(st), mla_last_error());
    printf("%s: %d cases, %d passed, %d failed, %d errors, %d skipped%s%s\n", suite, s.n_cases, s.n_pass, s.n_fail,
           s.n_error, s.n_skip, s.first_fail[0] ? "; first failure: " : "", s.first_fail);
    mla_rules_free(rules);
    return mla_opcheck_exit_code(st, &s);
}
