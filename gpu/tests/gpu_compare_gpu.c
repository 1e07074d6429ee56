/* gpu_compare_gpu.c: the GPU engine's side of the comparison (gpu_compare.c): the device probe, the
 * oversized-cache case and every case with the GPU engine under test. */
#include <string.h>

#include "gpu_compare.h"
#include "mla/backend.h"
#include "mla_model/model.h"
#include "mla_gpu.h"

/* A cache larger than the device: load must fail with MLA_ERR_NOMEM and a message that names the
 * cache and the sizes, and leave the device usable (the comparison cases run after it). */
static int oom_case(FILE *log)
{
    const mla_backend_ops *gpu = mla_gpu_backend();
    mla_model *m = NULL;
    void *ctx = NULL;
    int fail = 1;
    if (mla_model_open("tiny-v3", &m) != MLA_OK || gpu->create(&ctx) != MLA_OK) goto done;
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.profile = MLA_PROFILE_BF16;
    o.block_size = 16;
    o.max_seqs = 1024;
    o.max_seq_len = 1 << 18; /* 2^28 rows x 544 B = 146 GB per layer */
    mla_status st = gpu->load(ctx, m, &o);
    fail = !(st == MLA_ERR_NOMEM && strstr(mla_last_error(), "paged KV cache") && strstr(mla_last_error(), "free of"));
    fprintf(log, "%-28s load -> %s: %s\n", "oversized cache", mla_strerror(st), mla_last_error());
done:
    if (ctx) gpu->destroy(ctx);
    mla_model_free(m);
    fprintf(log, "%-28s %s\n", "oversized cache", fail ? "FAIL" : "PASS");
    return fail;
}

int gpu_compare_run(FILE *log, const char *only_model, const char *only_profile, unsigned tok_seed)
{
    char desc[256];
    if (mla_gpu_probe(desc, sizeof desc) != MLA_OK) {
        fprintf(log, "gpu: %s: skipped\n", mla_last_error());
        return 77;
    }
    fprintf(log, "gpu: %s\n", desc);
    int fails = only_model ? 0 : oom_case(log);
    const int r = gpu_compare_cases(log, mla_gpu_backend(), 0, only_model, only_profile, tok_seed);
    if (r < 0) return 1;
    fails += r;
    fprintf(log, "gpu_check: %d case(s) failed (tokens' seed %u)\n", fails, tok_seed);
    return fails ? 1 : 0;
}
