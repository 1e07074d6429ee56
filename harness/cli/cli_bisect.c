/* cli_bisect.c: `mlacheck bisect DIR`: the first diverging layer, tap and op of every failing check,
 * from a run's stored metrics (no re-run). Rows are stored in computation order, so the first failing
 * row of a check is where the divergence starts; the op named is the one that produces that tap from
 * inputs that still agreed. For bisecting commits, use `git bisect run mlacheck run --git-bisect`. */
#include "cli.h"

#include "mlacheck/driver.h"
#include "mlacheck/dumpcmp.h"
#include "mlacheck/h5io.h"

#include <dirent.h>
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

/* Replays one saved failure (failures/<name>.txt + .h5) through the reference under each known fault
 * hypothesis; a hypothesis that reproduces the candidate's dump within the rules names the op. */
static void replay_failure(const char *dir, const char *name, const mla_rules *rules)
{
    char txt[1400], h5[1400], model[256] = "", profile[16] = "", path[16] = "", check[96] = "";
    int block = 64, prefill_len = 1, chunk = 7;
    snprintf(txt, sizeof txt, "%s/failures/%s.txt", dir, name);
    snprintf(h5, sizeof h5, "%s/failures/%s.h5", dir, name);
    FILE *f = fopen(txt, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *p;
        if (!strncmp(line, "# mlacheck failing inputs:", 26) && (p = strstr(line, ", check ")))
            sscanf(p, ", check %95[^,], profile %15[^,], path %15s", check, profile, path);
        if (!strncmp(line, "# model ", 8) && (p = line))
            sscanf(p, "# model %255[^,], block_size %d, prefill_len %d, chunk %d", model, &block, &prefill_len, &chunk);
    }
    fclose(f);
    mla_dump *cand = NULL;
    mla_model *m = NULL;
    mla_path pth;
    mla_profile prof;
    if (mla_path_from_name(path, &pth) || mla_profile_from_name(profile, &prof) || mla_h5_read(h5, &cand) ||
        !cand->tokens || mla_model_open(model, &m)) {
        printf("  replay %s: cannot replay (%s)\n", name, mla_last_error());
        mla_dump_free(cand);
        return;
    }
    int n = (int)cand->tokens->shape[0];
    const int32_t *tp[1] = {cand->tokens->data};
    mla_drive_opts d = {.path = pth, .prefill_len = prefill_len, .chunk = chunk};
    char *at = strchr(check, '@');
    if (at) *at = 0; /* replay against the reference's own budget for this check */
    int found = 0;
    for (int h = -1; h < MLA_FAULT_COUNT && !found; h++) {
        mla_run_opts ro;
        mla_run_opts_default(&ro);
        ro.profile = prof;
        ro.max_seqs = 1;
        ro.max_seq_len = n + 1;
        ro.block_size = block;
        ro.faults = h < 0 ? 0 : 1u << h;
        mla_engine e;
        mla_dump *ref = NULL;
        if (mla_engine_open("ref", m, &ro, &e)) break;
        mla_status st = mla_drive(&e, mla_model_config(m), 1, tp, &n, &d, &ref);
        mla_engine_close(&e);
        if (st) break;
        mla_dcmp_ctx c = {.rules = rules, .check = check, .profile = profile, .path = path, .kv_len = -1};
        mla_dcmp_result res;
        if (mla_dcmp(&c, ref, cand, &res) == MLA_OK && res.n_failed == 0 && res.n_compared > 0) {
            found = 1;
            if (h < 0)
                printf("  replay: the reference reproduces the candidate on these inputs (a flaky or order-dependent failure?)\n");
            else
                printf("  replay: reproduced by the reference with fault '%s' (%s): that is the op at fault\n",
                       mla_fault_name(h), mla_fault_description(h));
        }
        mla_dump_free(ref);
    }
    if (!found) printf("  replay: no known fault reproduces the candidate; the op is the one named above\n");
    mla_dump_free(cand);
    mla_model_free(m);
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
    if (argc > 2 && !strcmp(argv[2], "--replay")) {
        char fd[1200], sd[1024], rp[1100];
        snprintf(fd, sizeof fd, "%s/failures", argv[1]);
        snprintf(rp, sizeof rp, "%s/rules.tol", cli_dir("suites", sd, sizeof sd));
        mla_rules *rules = NULL;
        DIR *dd = opendir(fd);
        if (dd && mla_rules_load(rp, &rules) == MLA_OK) {
            printf("replaying saved failures (%s) through the reference under each known fault:\n", fd);
            struct dirent *de;
            while ((de = readdir(dd))) {
                size_t l = strlen(de->d_name);
                if (l < 4 || strcmp(de->d_name + l - 3, ".h5")) continue;
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)(l - 3), de->d_name);
                printf("failure %s:\n", name);
                replay_failure(argv[1], name, rules);
            }
        }
        if (dd) closedir(dd);
        mla_rules_free(rules);
    }
    return CLI_EXIT_FAIL;
}
