/* cli_bisect.c: `mlacheck bisect DIR`: the first diverging layer, tap and op of every failing check,
 * from a run's stored metrics (no re-run). Rows are stored in computation order, so the first failing
 * row of a check is where the divergence starts; the op named is the one that produces that tap from
 * inputs that still agreed. For bisecting commits, use `git bisect run mlacheck run --git-bisect`. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The op that produces each tap (the taps before it are its inputs). */
static const char *tap_op(const char *tap)
{
    static const char *const map[][2] = {
        {"embed", "embedding lookup"},
        {"attn_norm", "input RMSNorm (input_layernorm)"},
        {"q_nope", "query projection (q_a_proj, q_a_layernorm, q_b_proj or q_proj)"},
        {"q_pe", "RoPE/YaRN on the query (pairing, frequencies, position)"},
        {"kv_c", "kv_a_proj_with_mqa + kv_a_layernorm (the latent that is cached)"},
        {"k_pe", "RoPE/YaRN on the shared key (pairing, frequencies, position)"},
        {"q_absorbed", "W_UK absorption of q_nope (kv_b_proj slicing)"},
        {"attn_core", "attention: scores, softmax scale, causal mask, cache read, LSE merge, W_UV"},
        {"lse", "softmax normalizer (log-sum-exp)"},
        {"attn_out", "o_proj"},
        {"ffn_norm", "residual add + post_attention_layernorm"},
        {"router_logits", "router gate projection"},
        {"topk_ids", "expert selection (scoring, bias, group-limited top-k)"},
        {"topk_weights", "routing weights (normalization, routed_scaling_factor)"},
        {"ffn_out", "experts / dense MLP and their combination"},
        {"out", "residual add"},
        {"final_norm", "final RMSNorm"},
        {"logits", "lm_head"},
        {"worst", "sweep (see the kv length)"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], tap)) return map[i][1];
    return "?";
}

int cli_bisect(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "mlacheck bisect: expected a results folder (results/<run-id>)\n"
                        "to bisect commits: git bisect run <build-and-run script> using mlacheck run --git-bisect\n");
        return CLI_EXIT_USAGE;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.tsv", argv[1]);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "mlacheck bisect: %s: cannot open\n", path);
        return CLI_EXIT_USAGE;
    }
    char line[8192];
    if (!fgets(line, sizeof line, f) || strncmp(line, "case\tcheck", 10)) {
        fprintf(stderr, "mlacheck bisect: %s: expected the metrics.tsv header\n", path);
        fclose(f);
        return CLI_EXIT_USAGE;
    }
    char seen[256][160];
    int nseen = 0, nfail = 0;
    while (fgets(line, sizeof line, f)) {
        char *col[18] = {0};
        int k = 0;
        for (char *save = NULL, *t = strtok_r(line, "\t\n", &save); t && k < 18; t = strtok_r(NULL, "\t\n", &save))
            col[k++] = t;
        if (k < 16 || strcmp(col[15], "0") != 0) continue; /* pass column */
        char key[160];
        snprintf(key, sizeof key, "%s|%s|%s|%s", col[0], col[1], col[2], col[3]);
        int dup = 0;
        for (int i = 0; i < nseen; i++) dup |= !strcmp(seen[i], key);
        if (dup || nseen == 256) continue;
        snprintf(seen[nseen++], sizeof seen[0], "%s", key);
        nfail++;
        int layer = atoi(col[4]);
        printf("case %s, check %s, profile %s, path %s:\n", col[0], col[1], col[2], col[3]);
        if (layer >= 0)
            printf("  first diverging: layer %d tap %s", layer, col[5]);
        else
            printf("  first diverging: tap %s", col[5]);
        if (strcmp(col[6], "-1")) printf(" at kv length %s", col[6]);
        printf("\n  op: %s\n  %s\n", tap_op(col[5]), k > 17 ? col[17] : "");
    }
    fclose(f);
    if (!nfail) {
        printf("no failing comparisons in %s\n", path);
        return CLI_EXIT_PASS;
    }
    return CLI_EXIT_FAIL;
}
