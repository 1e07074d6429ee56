/* cli_bench.c: `mlacheck bench`: end-to-end forward time of one engine on one model (prefill of N
 * tokens, then optional decode steps), wall clock around each forward call, median of --repeat.
 * Kernel-level GPU timing with device events: --kernels (cli_bench_kernels.c). */
#include "cli.h"

#include "mla_core/rng.h"
#include "mlacheck/driver.h"
#include "mla_model/model.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cli_bench(int argc, char **argv)
{
    const char *model = "v3-layer", *profile = "fp64", *engine = "ref", *attn = "exact";
    int ntok = 1024, ndec = 0, repeat = 1, kernels = 0, quick = 0, forward_opts = 0;
    const char *results = NULL;
    cli_parser p;
    cli_parser_init(&p, "bench", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        forward_opts += strchr("mnpedra", c) != NULL;
        switch (c) {
        case 'm': model = optarg; break;
        case 'n': if (cli_parse_int("bench", "--tokens", optarg, 1, 1 << 20, &ntok)) return CLI_EXIT_USAGE; break;
        case 'p': profile = optarg; break;
        case 'e': engine = optarg; break;
        case 'd': if (cli_parse_int("bench", "--decode", optarg, 0, 1 << 20, &ndec)) return CLI_EXIT_USAGE; break;
        case 'r': if (cli_parse_int("bench", "--repeat", optarg, 1, 100, &repeat)) return CLI_EXIT_USAGE; break;
        case 'a': attn = optarg; break;
        case 'K': kernels = 1; break;
        case 'Q': quick = 1; break;
        case 'o': results = optarg; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (kernels && (forward_opts || cli_positional(&p, 0))) {
        fprintf(stderr, "mlacheck bench: --kernels takes only --quick and --results (the forward's options are for "
                        "the end-to-end timing)\n");
        return CLI_EXIT_USAGE;
    }
    if (!kernels && (quick || results)) {
        fprintf(stderr, "mlacheck bench: --quick and --results go with --kernels\n");
        return CLI_EXIT_USAGE;
    }
    if (kernels) return cli_bench_kernels(quick, results ? results : "results");
    if (cli_positional(&p, 0) || cli_check_model("bench", model) || cli_check_profile("bench", "--profile", profile) ||
        cli_check_engine("bench", engine))
        return CLI_EXIT_USAGE;
    mla_run_opts ro;
    mla_run_opts_default(&ro);
    if (ntok < 1 || ndec < 0 || repeat < 1 || repeat > 100 || mla_profile_from_name(profile, &ro.profile)) {
        fprintf(stderr, "mlacheck bench: expected --tokens >= 1, --decode >= 0, --repeat 1..100, a known --profile\n");
        return CLI_EXIT_USAGE;
    }
    if (strcmp(attn, "exact") && strcmp(attn, "tc")) {
        fprintf(stderr, "mlacheck bench: --attn %s: expected exact or tc\n", attn);
        return CLI_EXIT_USAGE;
    }
    ro.attn_tc = !strcmp(attn, "tc");
    double t0 = now_s();
    mla_model *m;
    mla_status st = mla_model_open(model, &m);
    if (st) {
        fprintf(stderr, "mlacheck bench: %s\n", mla_last_error());
        return cli_exit_for(st);
    }
    const mla_config *cfg = mla_model_config(m);
    ro.max_seqs = 1;
    ro.max_seq_len = ntok + ndec + 1;
    mla_engine e;
    if ((st = mla_engine_open(engine, m, &ro, &e))) {
        fprintf(stderr, "mlacheck bench: %s\n", mla_last_error());
        mla_model_free(m);
        return cli_exit_for(st);
    }
    int32_t *tok = malloc((size_t)(ntok + ndec) * sizeof *tok);
    double *pre = malloc((size_t)repeat * sizeof *pre), dec_total = 0;
    uint64_t s = 42;
    for (int i = 0; tok && i < ntok + ndec; i++) tok[i] = (int32_t)mla_rng_below(&s, (uint64_t)cfg->vocab_size);
    printf("bench: %s on %s, profile %s, attention %s, %d prefill tokens%s (setup %.2f s)\n", engine, model, profile,
           attn, ntok, ndec ? " + decode" : "", now_s() - t0);
    int32_t id = 0, past = 0, nnew = ntok;
    for (int r = 0; r < repeat && !st; r++) {
        past = 0;
        nnew = ntok;
        mla_batch b = {.n_seqs = 1, .seq_ids = &id, .n_past = &past, .n_new = &nnew, .tokens = tok};
        if ((st = e.ops->reset(e.ctx))) break;
        double t = now_s();
        st = e.ops->forward_mha(e.ctx, &b);
        pre[r] = now_s() - t;
        printf("  prefill run %d: %.3f s wall (%.1f tokens/s)\n", r + 1, pre[r], ntok / pre[r]);
    }
    for (int k = 0; k < ndec && !st; k++) {
        past = ntok + k;
        nnew = 1;
        mla_batch b = {.n_seqs = 1, .seq_ids = &id, .n_past = &past, .n_new = &nnew, .tokens = tok + ntok + k};
        double t = now_s();
        st = e.ops->forward_mqa(e.ctx, &b);
        dec_total += now_s() - t;
    }
    int code = 0;
    if (st) {
        fprintf(stderr, "mlacheck bench: %s\n", mla_last_error());
        code = cli_exit_for(st) == CLI_EXIT_USAGE ? CLI_EXIT_ENGINE : cli_exit_for(st);
    } else {
        qsort(pre, (size_t)repeat, sizeof *pre, cmp_double);
        printf("prefill of %d tokens: median %.3f s wall over %d run(s), first-run layer conversion included\n",
               ntok, pre[repeat / 2], repeat);
        if (ndec) printf("decode: %d steps, %.2f ms per step (mean)\n", ndec, 1e3 * dec_total / ndec);
    }
    free(tok);
    free(pre);
    mla_engine_close(&e);
    mla_model_free(m);
    return code;
}
