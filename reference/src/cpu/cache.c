/* cache.c: the paged latent cache. Row = [kv_c (C) | k_pe (R)] per token, stored as the profile says:
 * f64 (fp64, bf16, fp8w: values already rounded), e4m3 codes with one per-tensor scale (fp8kv), or
 * the fp8_ds_mla row (fp8ds). slot = table[seq][pos / bs] * bs + pos % bs; blocks are allocated on
 * first touch so long max_seq_len costs nothing until used. */
#include "ref_internal.h"

#include "mla/kv.h"
#include "mla_core/rng.h"

#include <stdlib.h>
#include <string.h>

/* The codec of the profile's rows (mla/kv.h); 0 for the f64 profiles, whose rows are plain doubles. */
static int cache_codec(const ref_ctx *c, mla_kv_codec *k)
{
    int C = c->cfg->kv_lora_rank, R = c->cfg->qk_rope_head_dim;
    switch (c->opts.profile) {
    case MLA_PROFILE_FP8KV:
        *k = (mla_kv_codec){.format = MLA_KV_FP8, .fp8_fnuz = c->opts.fp8_kind == MLA_FP8_FNUZ, .c = C, .r = R,
                            .k_scale = (float)c->opts.kv_scale};
        return 1;
    case MLA_PROFILE_FP8DS: /* e4m3fn whatever fp8_kind says: mla_ds_row_pack_n writes fn codes */
        *k = (mla_kv_codec){.format = MLA_KV_FP8_DS, .fp8_fnuz = 0, .c = C, .r = R, .k_scale = 1.0f};
        return 1;
    default: return 0;
    }
}

static int cache_row_bytes(const ref_ctx *c)
{
    mla_kv_codec k;
    if (cache_codec(c, &k)) return (int)mla_kv_row_bytes(k.format, k.c, k.r);
    return (c->cfg->kv_lora_rank + c->cfg->qk_rope_head_dim) * (int)sizeof(double);
}

mla_status ref_cache_init(ref_ctx *c)
{
    int L = c->cfg->num_hidden_layers;
    int bs = c->opts.block_size;
    if (bs <= 0) return mla_errorf(MLA_ERR_INVALID, "reference: block_size %d: expected > 0", bs);
    if (c->opts.profile == MLA_PROFILE_FP8DS && c->cfg->kv_lora_rank % MLA_DS_TILE != 0)
        return mla_errorf(MLA_ERR_UNSUPPORTED,
                          "reference: profile fp8ds needs kv_lora_rank a multiple of %d, got %d",
                          MLA_DS_TILE, c->cfg->kv_lora_rank);
    int bps = (c->opts.max_seq_len + bs - 1) / bs;
    c->cache = calloc((size_t)L, sizeof *c->cache);
    c->seq_len = calloc((size_t)c->opts.max_seqs, sizeof *c->seq_len);
    if (!c->cache || !c->seq_len) return mla_errorf(MLA_ERR_NOMEM, "reference: cache");
    for (int l = 0; l < L; l++) {
        ref_cache *k = &c->cache[l];
        k->row_bytes = cache_row_bytes(c);
        k->block_size = bs;
        k->blocks_per_seq = bps;
        k->max_blocks = bps * c->opts.max_seqs;
        k->blocks = calloc((size_t)k->max_blocks, sizeof *k->blocks);
        k->table = malloc((size_t)k->max_blocks * sizeof *k->table);
        if (!k->blocks || !k->table) return mla_errorf(MLA_ERR_NOMEM, "reference: cache table");
        for (int i = 0; i < k->max_blocks; i++) k->table[i] = i;
        if (c->opts.shuffle_blocks) mla_rng_shuffle_i32(k->table, k->max_blocks, c->opts.seed + (unsigned)l);
    }
    return MLA_OK;
}

void ref_cache_free(ref_ctx *c)
{
    if (!c->cache) return;
    for (int l = 0; l < c->cfg->num_hidden_layers; l++) {
        ref_cache *k = &c->cache[l];
        if (k->blocks)
            for (int i = 0; i < k->max_blocks; i++) free(k->blocks[i]);
        free(k->blocks);
        free(k->table);
    }
    free(c->cache);
    free(c->seq_len);
    c->cache = NULL;
    c->seq_len = NULL;
}

static uint8_t *cache_row(const ref_cache *k, int seq, int64_t pos, int alloc)
{
    int64_t lb = pos / k->block_size;
    int32_t pb = k->table[(int64_t)seq * k->blocks_per_seq + lb];
    if (!k->blocks[pb]) {
        if (!alloc) return NULL;
        /* calloc so an unwritten row reads as zeros, never as garbage */
        k->blocks[pb] = calloc((size_t)k->block_size, (size_t)k->row_bytes);
        if (!k->blocks[pb]) return NULL;
    }
    return k->blocks[pb] + (pos % k->block_size) * k->row_bytes;
}

const uint8_t *ref_cache_raw_row(const ref_ctx *c, int layer, int seq, int64_t pos)
{
    return cache_row(&c->cache[layer], seq, pos, 0);
}

static mla_dtype cache_fp8_type(const ref_ctx *c)
{
    return c->opts.fp8_kind == MLA_FP8_FNUZ ? MLA_E4M3FNUZ : MLA_E4M3FN;
}

mla_status ref_cache_write(ref_ctx *c, int layer, int seq, int64_t pos, const double *kv_c,
                           const double *k_pe)
{
    int C = c->cfg->kv_lora_rank, R = c->cfg->qk_rope_head_dim;
    ref_cache *k = &c->cache[layer];
    if (pos >= (int64_t)k->blocks_per_seq * k->block_size)
        return mla_errorf(MLA_ERR_INVALID, "reference: sequence %d position %lld exceeds max_seq_len %d",
                          seq, (long long)pos, c->opts.max_seq_len);
    uint8_t *row = cache_row(k, seq, pos, 1);
    if (!row) return mla_errorf(MLA_ERR_NOMEM, "reference: cache block");
    switch (c->opts.profile) {
    case MLA_PROFILE_FP8KV: {
        float s = (float)c->opts.kv_scale;
        mla_dtype t = cache_fp8_type(c);
        for (int i = 0; i < C; i++) row[i] = mla_fp8_encode(t, (float)kv_c[i] / s);
        for (int i = 0; i < R; i++) row[C + i] = mla_fp8_encode(t, (float)k_pe[i] / s);
        break;
    }
    case MLA_PROFILE_FP8DS: {
        float *f = malloc((size_t)(C + R) * sizeof(float));
        if (!f) return mla_errorf(MLA_ERR_NOMEM, "reference: ds row");
        for (int i = 0; i < C; i++) f[i] = (float)kv_c[i];
        for (int i = 0; i < R; i++) f[C + i] = (float)k_pe[i];
        mla_ds_row_pack_n(C, R, f, f + C, MLA_DS_SCALE_POW2, row);
        free(f);
        break;
    }
    default: {
        double *d = (double *)row;
        memcpy(d, kv_c, (size_t)C * sizeof(double));
        memcpy(d + C, k_pe, (size_t)R * sizeof(double));
    }
    }
    return MLA_OK;
}

void ref_cache_read(const ref_ctx *c, int layer, int seq, int64_t pos, double *out)
{
    int C = c->cfg->kv_lora_rank, R = c->cfg->qk_rope_head_dim;
    const uint8_t *row = cache_row(&c->cache[layer], seq, pos, 0);
    if (!row) {
        memset(out, 0, (size_t)(C + R) * sizeof(double));
        return;
    }
    mla_kv_codec k;
    if (cache_codec(c, &k))
        mla_kv_load_row_f64(k, row, out); /* fp8 dequantized in f32, as a GPU reader does */
    else
        memcpy(out, row, (size_t)(C + R) * sizeof(double));
}
