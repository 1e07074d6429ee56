/* make_seeds.c: writes the generated part of the seed corpus (harness/fuzz/README.md says how the
 * committed corpus was made): fuzz_make_seeds OUTDIR writes OUTDIR/safetensors/ (the micro model as
 * one file, its two-shard index, an empty header), OUTDIR/config/ (the micro config, every preset
 * written back, an fp8 one) and, with HDF5, OUTDIR/h5/micro-sealed.h5 (a micro dump as mla_h5_write
 * writes it; h5unjam makes the unsealed seed from it). */
#include "fuzz_common.h"

#include "mla_model/model.h"
#ifdef MLA_FUZZ_H5
#include "mlacheck/h5io.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *sub(const char *out, const char *name)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", out, name);
    mkdir(buf, 0755);
    return buf;
}

/* One safetensors seed: the mode byte (fuzz_safetensors.c) then the file. */
static void st_seed(const char *dir, const char *name, uint8_t mode, const void *p, size_t n)
{
    uint8_t *b = malloc(n + 1);
    if (!b) abort();
    b[0] = mode;
    memcpy(b + 1, p, n);
    fuzz_write(dir, name, b, n + 1);
    free(b);
}

#ifdef MLA_FUZZ_H5
static void h5_seed(const char *dir)
{
    mla_config c;
    mla_dump *d = NULL;
    if (mla_config_from_json(fuzz_micro_config, "micro", &c) || mla_dump_new(&d, &c)) abort();
    int64_t ntok = 3, sh[MLA_MAX_DIMS];
    mla_tensor *tok = NULL;
    if (mla_tensor_new(&tok, MLA_I32, 1, &ntok, "tokens")) abort();
    for (int i = 0; i < 3; i++) ((int32_t *)tok->data)[i] = i + 1;
    d->tokens = tok;
    static const char *taps[] = {"embed", "logits", "attn_norm", "kv_a", "moe_out"};
    for (size_t i = 0; i < sizeof taps / sizeof taps[0]; i++) {
        mla_tap tap;
        if (mla_tap_from_name(taps[i], &tap)) continue;
        int layer = mla_tap_is_layer(tap) ? 1 : 0;
        if (mla_tap_is_layer(tap) && !mla_tap_in_layer(tap, &c, layer)) continue;
        int nd = mla_tap_shape(tap, &c, ntok, sh);
        mla_tensor *t = NULL;
        if (nd < 0 || mla_tensor_new(&t, i % 2 ? MLA_F32 : MLA_BF16, nd, sh, taps[i])) abort();
        mla_dump_set(d, layer, tap, t);
    }
    snprintf(d->meta.producer, sizeof d->meta.producer, "fuzz_make_seeds");
    snprintf(d->meta.model, sizeof d->meta.model, "micro");
    snprintf(d->meta.created, sizeof d->meta.created, "2026-12-01T00:00:00Z");
    char path[1200];
    snprintf(path, sizeof path, "%s/micro-sealed.h5", dir);
    if (mla_h5_write(path, d)) {
        fprintf(stderr, "%s\n", mla_last_error());
        abort();
    }
    mla_dump_free(d);
}
#endif

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_make_seeds OUTDIR\n");
        return 2;
    }
    mkdir(argv[1], 0755);
    const char *d = sub(argv[1], "safetensors");
    size_t n;
    uint8_t *b = fuzz_micro_safetensors(0, 1, &n);
    st_seed(d, "micro-single", 0, b, n);
    free(b);
    char *idx = fuzz_micro_index(2);
    st_seed(d, "micro-index", 1, idx, strlen(idx));
    free(idx);
    static const uint8_t empty[] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    st_seed(d, "empty-header", 0, empty, sizeof empty);

    d = sub(argv[1], "config");
    fuzz_write(d, "micro.json", fuzz_micro_config, strlen(fuzz_micro_config));
    static const char *presets[] = {"tiny-v2-lite", "tiny-v3", "asym-v3", "deepseek-v3", "kimi-k2"};
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        mla_config c;
        if (mla_config_preset(presets[i], &c)) abort();
        if (i == 3) c.fp8_weights = 1; /* one seed with a quantization_config */
        char *j = mla_config_to_json(&c), name[64];
        snprintf(name, sizeof name, "%s.json", presets[i]);
        fuzz_write(d, name, j, strlen(j));
        free(j);
    }
#ifdef MLA_FUZZ_H5
    h5_seed(sub(argv[1], "h5"));
#endif
    return 0;
}
