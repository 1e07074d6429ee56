/* fuzz_common.c: scratch files and the micro model of the fuzz targets (fuzz_common.h). */
#include "fuzz_common.h"

#include "mla/weights.h"
#include "mla_model/model.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_root[256];

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void rm_root(void)
{
    if (g_root[0]) nftw(g_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_dir(const char *sub)
{
    static char buf[512];
    if (!g_root[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        snprintf(g_root, sizeof g_root, "%s/mla-fuzz-%ld", base && *base ? base : "/tmp", (long)getpid());
        if (mkdir(g_root, 0700) != 0) {
            perror(g_root);
            abort();
        }
        atexit(rm_root);
    }
    if (!sub || !*sub) return g_root;
    snprintf(buf, sizeof buf, "%s/%s", g_root, sub);
    struct stat sb;
    if (stat(buf, &sb) != 0 && mkdir(buf, 0700) != 0) {
        perror(buf);
        abort();
    }
    return buf;
}

void fuzz_write(const char *dir, const char *name, const void *p, size_t n)
{
    char path[768];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

void fuzz_remove(const char *dir, const char *name)
{
    char path[768];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    remove(path);
}

char *fuzz_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t) abort();
    if (size) memcpy(t, data, size);
    t[size] = '\0';
    return t;
}

const char fuzz_micro_config[] =
    "{\"model_type\": \"deepseek_v2\", \"vocab_size\": 16, \"hidden_size\": 16, \"num_hidden_layers\": 2,\n"
    " \"num_attention_heads\": 2, \"q_lora_rank\": null, \"kv_lora_rank\": 8, \"qk_nope_head_dim\": 4,\n"
    " \"qk_rope_head_dim\": 4, \"v_head_dim\": 4, \"intermediate_size\": 16, \"moe_intermediate_size\": 8,\n"
    " \"first_k_dense_replace\": 1, \"moe_layer_freq\": 1, \"n_routed_experts\": 2, \"n_shared_experts\": 1,\n"
    " \"num_experts_per_tok\": 1, \"n_group\": 1, \"topk_group\": 1, \"rms_norm_eps\": 1e-06,\n"
    " \"rope_theta\": 10000.0, \"max_position_embeddings\": 64, \"tie_word_embeddings\": false,\n"
    " \"hidden_act\": \"silu\", \"rope_scaling\": null}\n";

typedef struct {
    char name[128];
    int nd;
    int64_t shape[2];
} micro_tensor;

static int micro_cmp(const void *a, const void *b)
{
    return strcmp(((const micro_tensor *)a)->name, ((const micro_tensor *)b)->name);
}

static void grow(char **s, size_t *len, size_t *cap, const char *add)
{
    size_t k = strlen(add);
    if (*len + k + 1 > *cap) {
        *cap = 2 * (*len + k + 1);
        *s = realloc(*s, *cap);
        if (!*s) abort();
    }
    memcpy(*s + *len, add, k + 1);
    *len += k;
}

/* The micro model's tensors, sorted by name; returns the count. */
static int micro_list(micro_tensor *v, int cap)
{
    mla_config c;
    if (mla_config_from_json(fuzz_micro_config, "micro config.json", &c)) {
        fprintf(stderr, "fuzz: %s\n", mla_last_error());
        abort();
    }
    int nt = 0;
    const char *globals[] = {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight"};
    for (int i = 0; i < 3; i++) {
        snprintf(v[nt].name, sizeof v[nt].name, "%s", globals[i]);
        v[nt].nd = i < 2 ? 2 : 1;
        v[nt].shape[0] = i < 2 ? c.vocab_size : c.hidden_size;
        v[nt].shape[1] = c.hidden_size;
        nt++;
    }
    for (int l = 0; l < c.num_hidden_layers; l++)
        for (int w = 0; w < MLA_LW_COUNT; w++)
            for (int e = 0; e < mla_lw_count(&c, l, (mla_layer_weight)w); e++) {
                if (nt == cap || mla_lw_name(v[nt].name, sizeof v[nt].name, l, (mla_layer_weight)w, e)) abort();
                v[nt].nd = mla_lw_shape(&c, (mla_layer_weight)w, v[nt].shape);
                nt++;
            }
    qsort(v, (size_t)nt, sizeof *v, micro_cmp);
    return nt;
}

uint8_t *fuzz_micro_safetensors(int part, int parts, size_t *n)
{
    micro_tensor v[256];
    int nt = micro_list(v, 256);
    int lo = nt * part / parts, hi = nt * (part + 1) / parts;
    char *h = NULL, item[512];
    size_t hl = 0, hc = 0;
    uint64_t off = 0;
    grow(&h, &hl, &hc, "{\"__metadata__\": {\"format\": \"pt\"}");
    for (int i = lo; i < hi; i++) {
        uint64_t bytes = 2 * (uint64_t)v[i].shape[0] * (uint64_t)(v[i].nd == 2 ? v[i].shape[1] : 1);
        if (v[i].nd == 2)
            snprintf(item, sizeof item, ", \"%s\": {\"dtype\": \"BF16\", \"shape\": [%lld, %lld], \"data_offsets\": "
                     "[%llu, %llu]}", v[i].name, (long long)v[i].shape[0], (long long)v[i].shape[1],
                     (unsigned long long)off, (unsigned long long)(off + bytes));
        else
            snprintf(item, sizeof item, ", \"%s\": {\"dtype\": \"BF16\", \"shape\": [%lld], \"data_offsets\": "
                     "[%llu, %llu]}", v[i].name, (long long)v[i].shape[0], (unsigned long long)off,
                     (unsigned long long)(off + bytes));
        grow(&h, &hl, &hc, item);
        off += bytes;
    }
    grow(&h, &hl, &hc, "}");
    while (hl % 8) grow(&h, &hl, &hc, " "); /* data 8-byte aligned, as the safetensors writer pads */
    *n = 8 + hl + off;
    uint8_t *b = malloc(*n);
    if (!b) abort();
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, h, hl);
    for (uint64_t i = 0; i < off; i += 2) {
        b[8 + hl + i] = 0x80; /* bf16 1.0 = 0x3F80 */
        b[8 + hl + i + 1] = 0x3F;
    }
    free(h);
    return b;
}

char *fuzz_micro_index(int parts)
{
    micro_tensor v[256];
    int nt = micro_list(v, 256);
    char *s = NULL, item[512];
    size_t len = 0, cap = 0;
    grow(&s, &len, &cap, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    for (int p = 0, i = 0; p < parts; p++)
        for (; i < nt * (p + 1) / parts; i++) {
            char fn[64];
            fuzz_shard_name(fn, sizeof fn, p, parts);
            snprintf(item, sizeof item, "%s\n  \"%s\": \"%s\"", i ? "," : "", v[i].name, fn);
            grow(&s, &len, &cap, item);
        }
    grow(&s, &len, &cap, "\n}}\n");
    return s;
}

void fuzz_shard_name(char *buf, size_t n, int part, int parts)
{
    snprintf(buf, n, "model-%05d-of-%05d.safetensors", part + 1, parts);
}
