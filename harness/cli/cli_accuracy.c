/* cli_accuracy.c: `mlacheck accuracy`: bits per byte, KL and top-1 agreement of each profile against
 * the fp64 reference on real text, and the layer-by-layer error growth (accuracy.h). */
#include "cli.h"

#include "mlacheck/accuracy.h"
#include "mlacheck/driver.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage_err(const char *msg)
{
    fprintf(stderr, "mlacheck accuracy: %s (mlacheck help accuracy lists the options)\n", msg);
    return CLI_EXIT_USAGE;
}

int cli_accuracy(int argc, char **argv)
{
    mla_acc_opts o = {.bos = -1, .window = 256, .n_windows = 8, .engine = "ref", .path = MLA_PATH_DECODE,
                      .prefill_len = 32, .chunk = 64};
    mla_path path;
    const char *profiles = "bf16,fp8kv,fp8ds,fp8w", *out = NULL;
    cli_parser p;
    cli_parser_init(&p, "accuracy", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 'm': o.model = optarg; break;
        case 't': o.text = optarg; break;
        case 'b': if (cli_parse_int("accuracy", "--bos", optarg, 0, 1 << 30, &o.bos)) return CLI_EXIT_USAGE; break;
        case 'w': if (cli_parse_int("accuracy", "--window", optarg, 2, 1 << 20, &o.window)) return CLI_EXIT_USAGE; break;
        case 'k': if (cli_parse_int("accuracy", "--windows", optarg, 1, 4096, &o.n_windows)) return CLI_EXIT_USAGE; break;
        case 'e': o.engine = optarg; break;
        case 'p': profiles = optarg; break;
        case 'o': out = optarg; break;
        case 'P':
            if (cli_check_path("accuracy", optarg)) return CLI_EXIT_USAGE;
            mla_path_from_name(optarg, &path);
            o.path = (int)path;
            break;
        case 'n': if (cli_parse_int("accuracy", "--prefill-len", optarg, 1, 1 << 20, &o.prefill_len)) return CLI_EXIT_USAGE; break;
        case 'c': if (cli_parse_int("accuracy", "--chunk", optarg, 1, 1 << 20, &o.chunk)) return CLI_EXIT_USAGE; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (optind < argc) return usage_err("unexpected argument");
    if (!o.model || !o.text) return usage_err("--model and --text are required");
    if (cli_check_model("accuracy", o.model) || cli_check_engine("accuracy", o.engine)) return CLI_EXIT_USAGE;
    mla_profile prof[MLA_PROFILE_COUNT];
    char buf[256];
    snprintf(buf, sizeof buf, "%s", profiles);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        mla_profile any;
        if (mla_profile_from_name(tok, &any) != 0) {
            cli_check_profile("accuracy", "--profiles", tok);
            return CLI_EXIT_USAGE;
        }
        if (o.n_profiles == MLA_PROFILE_COUNT || mla_profile_from_name(tok, &prof[o.n_profiles]) != 0) {
            fprintf(stderr, "mlacheck accuracy: --profiles: '%s' is not a profile (fp64, bf16, fp8kv, fp8ds, fp8w), "
                            "or a profile is listed twice\n", tok);
            return CLI_EXIT_USAGE;
        }
        o.n_profiles++;
    }
    o.profiles = prof;
    char od[1024];
    if (!out) {
        const char *base = strrchr(o.model, '/');
        snprintf(od, sizeof od, "results/accuracy-%s", base ? base + 1 : o.model);
        out = od;
    }
    mla_acc_result r;
    mla_status st = mla_accuracy_run(&o, &r);
    if (!st) st = mla_accuracy_write(&r, &o, out);
    if (st) {
        fprintf(stderr, "mlacheck accuracy: %s\n", mla_last_error());
        if (!r.rows) return cli_exit_for(st);
        mla_accuracy_free(&r);
        return cli_exit_for(st);
    }
    printf("%-8s %-6s %10s %11s %11s %8s %10s  layer out rel L2 ...\n", "engine", "prof", "bits/byte", "KL mean",
           "KL max", "top-1", "logits");
    for (int i = 0; i < r.n_rows; i++) {
        const mla_acc_row *w = &r.rows[i];
        printf("%-8s %-6s %10.4f %11.3e %11.3e %8.4f %10.3e ", w->engine, mla_profile_name(w->profile), w->bits_per_byte,
               w->kl_mean, w->kl_max, w->top1, w->logits_rel_l2);
        for (int l = 0; l < r.n_layers; l++) printf(" %.2e", w->layer_rel_l2[l]);
        printf("\n");
    }
    printf("%lld predicted bytes per row, %.1f s; written %s/accuracy.{md,tsv}, growth.svg\n", (long long)r.n_predicted,
           r.seconds, out);
    mla_accuracy_free(&r);
    return CLI_EXIT_PASS;
}
