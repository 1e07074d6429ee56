/* cli_tools.c: `dump`, `compare`, `list` and `bisect` (`report` is in cli_report.c). */
#include "cli.h"

#include "mla_core/rng.h"
#include "mlacheck/dumpcmp.h"
#include "mlacheck/h5io.h"
#include "mlacheck/runner.h"

#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int parse_tokens(const char *s, int32_t **out, int *n)
{
    int cap = 16, k = 0;
    int32_t *t = malloc((size_t)cap * sizeof *t);
    const char *p = s;
    while (t && *p) {
        char *end;
        errno = 0;
        long v = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1; /* no sign, no blank */
        if (v < 0 || errno || v > 0x7fffffff) {
            free(t);
            return -1;
        }
        if (k == cap) {
            int32_t *nt = realloc(t, (size_t)(cap *= 2) * sizeof *t);
            if (!nt) { /* a partial list would silently drop tokens */
                free(t);
                return -1;
            }
            t = nt;
        }
        t[k++] = (int32_t)v;
        p = end;
        if (*p == ',' && p[1]) p++; /* "1,2," or "1,,2": an empty item is refused, not skipped */
        else if (*p) {
            free(t);
            return -1;
        }
    }
    *out = t;
    *n = k;
    return k > 0 ? 0 : -1;
}

int cli_dump(int argc, char **argv)
{
    const char *tokens_from = NULL;
    int random_n = 0;
    const char *model = NULL, *tokens = NULL, *path = "prefill", *profile = "fp64", *engine = "ref", *out = NULL;
    int prefill_len = 1, chunk = 7, block = 64;
    unsigned faults = 0;
    cli_parser p;
    cli_parser_init(&p, "dump", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 'T': tokens_from = optarg; break;
        case 'R': if (cli_parse_int("dump", "--random", optarg, 1, 1 << 24, &random_n)) return CLI_EXIT_USAGE; break;
        case 'm': model = optarg; break;
        case 't': tokens = optarg; break;
        case 'p': path = optarg; break;
        case 'n': if (cli_parse_int("dump", "--prefill-len", optarg, 0, 0x7fffffff, &prefill_len)) return CLI_EXIT_USAGE; break;
        case 'c': if (cli_parse_int("dump", "--chunk", optarg, 1, 1 << 20, &chunk)) return CLI_EXIT_USAGE; break;
        case 'f': profile = optarg; break;
        case 'e': engine = optarg; break;
        case 'o': out = optarg; break;
        case 'b': if (cli_parse_int("dump", "--block-size", optarg, 1, 1 << 20, &block)) return CLI_EXIT_USAGE; break;
        case 'i':
            if (cli_parse_faults(optarg, &faults)) return CLI_EXIT_USAGE;
            break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (cli_positional(&p, 0)) return CLI_EXIT_USAGE;
    mla_drive_opts d = {.prefill_len = prefill_len, .chunk = chunk};
    mla_run_opts ro;
    mla_run_opts_default(&ro);
    if (!model || (!tokens && !tokens_from && random_n <= 0) || !out) {
        fprintf(stderr, "mlacheck dump: --model, --out and one of --tokens, --tokens-from FILE.h5, --random N are required\n");
        return CLI_EXIT_USAGE;
    }
    if (cli_check_path("dump", path) || cli_check_profile("dump", "--profile", profile) ||
        cli_check_engine("dump", engine) || cli_check_model("dump", model))
        return CLI_EXIT_USAGE;
    mla_path_from_name(path, &d.path);
    mla_profile_from_name(profile, &ro.profile);
    int32_t *tok = NULL;
    int n = 0;
    if (tokens_from) {
        /* replay the prompt of another dump (an oracle's, a failing case's) */
        mla_dump *src = NULL;
        mla_status rs = mla_h5_read(tokens_from, &src);
        if (rs || !src->tokens) {
            fprintf(stderr, "mlacheck dump: --tokens-from %s: %s\n", tokens_from, rs ? mla_last_error() : "no /tokens");
            mla_dump_free(src);
            return CLI_EXIT_USAGE;
        }
        n = (int)src->tokens->shape[0];
        tok = malloc((size_t)(n + 1) * sizeof *tok);
        for (int i = 0; tok && i < n; i++) tok[i] = ((const int32_t *)src->tokens->data)[i];
        mla_dump_free(src);
        tokens = tokens_from;
    } else if (random_n > 0) {
        tok = malloc((size_t)random_n * sizeof *tok);
        uint64_t s = 12345; /* mla/rng.h; reduced modulo the vocabulary once the model is open */
        for (int i = 0; tok && i < random_n; i++) tok[i] = (int32_t)(mla_rng_next(&s) >> 33);
        n = random_n;
        tokens = "random";
    } else if (parse_tokens(tokens, &tok, &n)) {
        fprintf(stderr, "mlacheck dump: --tokens '%s': expected comma-separated non-negative ids, no empty item\n",
                tokens);
        return CLI_EXIT_USAGE;
    }
    if (!tok) {
        fprintf(stderr, "mlacheck dump: out of memory for %d tokens\n", n);
        return CLI_EXIT_ENGINE;
    }
    if (d.path == MLA_PATH_DECODE && prefill_len >= n) {
        /* the driver would prefill the whole prompt and run no decode step under a dump saying "decode" */
        fprintf(stderr, "mlacheck dump: --prefill-len %d: expected less than the prompt length (%d tokens) on path "
                        "decode, so that at least one decode step runs\n", prefill_len, n);
        free(tok);
        return CLI_EXIT_USAGE;
    }
    mla_model *m;
    mla_status st = mla_model_open(model, &m);
    if (st) {
        fprintf(stderr, "mlacheck dump: %s\n", mla_last_error());
        free(tok);
        return cli_exit_for(st);
    }
    if (random_n > 0)
        for (int i = 0; i < n; i++) tok[i] %= mla_model_config(m)->vocab_size;
    ro.max_seqs = 1;
    ro.max_seq_len = n + 1;
    ro.faults = faults;
    ro.block_size = block;
    mla_engine e;
    mla_dump *dump = NULL;
    if ((st = mla_engine_open(engine, m, &ro, &e)) == MLA_OK) {
        const int32_t *tp[1] = {tok};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        st = mla_drive(&e, mla_model_config(m), 1, tp, &n, &d, &dump);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (!st)
            printf("%s %s of %d tokens on %s (%s): %.2f s wall (load excluded)\n", engine, path, n, model, profile,
                   (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        mla_engine_close(&e);
    }
    int code = 0;
    if (!st) {
        char sha[64];
        snprintf(dump->meta.producer, sizeof dump->meta.producer, "mlacheck dump --model %s --tokens %s --path %s "
                 "--prefill-len %d --profile %s --engine %s", model, tokens, path, prefill_len, profile, engine);
        snprintf(dump->meta.profile, sizeof dump->meta.profile, "%s", profile);
        snprintf(dump->meta.model, sizeof dump->meta.model, "%s", model);
        snprintf(dump->meta.git_sha, sizeof dump->meta.git_sha, "%s", cli_git_sha(sha, sizeof sha));
        dump->meta.model_config_json = mla_config_to_json(mla_model_config(m));
        mla_model_weights_hash(m, dump->meta.weights_hash);
        st = mla_h5_write(out, dump);
    }
    if (st) {
        fprintf(stderr, "mlacheck dump: %s\n", mla_last_error());
        code = st == MLA_ERR_DEVICE ? CLI_EXIT_ENGINE : cli_exit_for(st);
    } else {
        printf("wrote %s (%d tokens, path %s, profile %s, engine %s)\n", out, n, path, profile, engine);
    }
    mla_dump_free(dump);
    mla_model_free(m);
    free(tok);
    return code;
}

int cli_compare(int argc, char **argv)
{
    const char *check = "golden", *profile = NULL, *rules_path = NULL;
    cli_parser p;
    cli_parser_init(&p, "compare", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 'c': check = optarg; break;
        case 'p': profile = optarg; break;
        case 'r': rules_path = optarg; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (cli_positional(&p, 2) || cli_check_check("compare", check) ||
        (profile && cli_check_profile("compare", "--profile", profile)))
        return CLI_EXIT_USAGE;
    mla_dump *a = NULL, *b = NULL;
    mla_status st;
    if ((st = mla_h5_read(argv[optind], &a)) || (st = mla_h5_read(argv[optind + 1], &b))) {
        fprintf(stderr, "mlacheck compare: %s\n", mla_last_error());
        mla_dump_free(a);
        return CLI_EXIT_USAGE;
    }
    char sd[1024], rp[1100];
    if (!rules_path) {
        snprintf(rp, sizeof rp, "%s/rules.tol", cli_dir("suites", sd, sizeof sd));
        rules_path = rp;
    }
    mla_rules *rules;
    if ((st = mla_rules_load(rules_path, &rules))) {
        fprintf(stderr, "mlacheck compare: %s\n", mla_last_error());
        mla_dump_free(a);
        mla_dump_free(b);
        return CLI_EXIT_USAGE;
    }
    if (!profile) profile = b->meta.profile[0] ? b->meta.profile : "fp64";
    /* the model the reference ran: its router bias places the routing margins (without it every flip
     * of a biased router is judged clear) */
    mla_model *m = NULL;
    if (a->meta.model[0] && mla_model_open(a->meta.model, &m)) {
        fprintf(stderr, "mlacheck compare: %s (routing flips are judged without the router bias)\n", mla_last_error());
        m = NULL;
    }
    mla_dcmp_ctx cx = {.rules = rules, .model = m, .check = check, .profile = profile, .path = b->meta.path, .kv_len = -1};
    mla_dcmp_result res;
    int code;
    if (a->tokens && b->tokens && !mla_tensor_same_shape(a->tokens, b->tokens)) {
        fprintf(stderr, "mlacheck compare: token counts differ (%lld vs %lld)\n", (long long)a->tokens->shape[0],
                (long long)b->tokens->shape[0]);
        code = CLI_EXIT_USAGE;
    } else if ((st = mla_dcmp(&cx, a, b, &res))) {
        fprintf(stderr, "mlacheck compare: %s\n", mla_last_error());
        code = CLI_EXIT_USAGE;
    } else {
        printf("compare %s (%s) vs %s (%s): check %s, profile %s: %d taps compared, %d failed\n", argv[optind],
               a->meta.engine, argv[optind + 1], b->meta.engine, check, profile, res.n_compared, res.n_failed);
        printf("worst headroom %.3g at %s", res.worst_headroom, res.worst_tap);
        if (res.kl_mean >= 0) printf("; logits KL mean %.3g", res.kl_mean);
        if (res.flipped_tokens) printf("; %lld routing flips", (long long)res.flipped_tokens);
        printf("\n");
        if (res.n_optional_missing)
            printf("note: %d optional taps of the reference are not in the candidate (first %s); compared on the "
                   "rest\n", res.n_optional_missing, res.first_optional_missing);
        if (res.n_failed)
            printf("FAIL: first divergence at %s%d tap %s: %s\n", res.first_layer >= 0 ? "layer " : "",
                   res.first_layer, res.first_tap, res.first_why);
        else
            printf("PASS\n");
        code = res.n_failed ? CLI_EXIT_FAIL : CLI_EXIT_PASS;
    }
    mla_model_free(m);
    mla_rules_free(rules);
    mla_dump_free(a);
    mla_dump_free(b);
    return code;
}

int cli_list(int argc, char **argv)
{
    cli_parser p;
    cli_parser_init(&p, "list", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        return cli_unhandled(&p, c);
    }
    if (cli_positional(&p, 0)) return CLI_EXIT_USAGE;
    printf("models:");
    for (const char *const *m = mla_builtin_models(); *m; m++) printf(" %s", *m);
    printf(" (or a Hugging Face checkpoint folder)\nprofiles:");
    for (int p = 0; p < MLA_PROFILE_COUNT; p++) printf(" %s", mla_profile_name((mla_profile)p));
    printf("\nengines: ref");
#ifdef MLA_HAVE_GPU
    printf(" gpu");
#endif
    printf(" plugin:<path.so>\nfaults:");
    for (int i = 0; i < MLA_FAULT_COUNT; i++) printf(" %s", mla_fault_name(i));
    printf("\nchecks:");
    for (int k = 0; k < MLA_CHECK_COUNT; k++) printf(" %s", mla_suite_check_name((mla_suite_check)k));
    char sd[1024];
    char **names;
    int n;
    if (mla_suite_list(cli_dir("suites", sd, sizeof sd), &names, &n) == MLA_OK) {
        printf("\nsuites:");
        for (int i = 0; i < n; i++) printf(" %s", names[i]);
        mla_suite_list_free(names, n);
    }
    printf("\n");
    return 0;
}
