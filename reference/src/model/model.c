/* model.c: opening a model by name or folder, tensor lookup, conversion to double, the weights hash. */
#include "model_internal.h"
#include "mla_core/hash.h"
#include "mla/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

mla_model *model_alloc(const char *source)
{
    mla_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->source = strdup(source);
    if (!m->source || pthread_mutex_init(&m->lock, NULL)) {
        free(m->source);
        free(m);
        return NULL;
    }
    return m;
}

int model_entry_cmp(const void *a, const void *b)
{
    return strcmp(((const model_entry *)a)->name, ((const model_entry *)b)->name);
}

model_entry *model_find(const mla_model *m, const char *name)
{
    model_entry key;
    key.name = (char *)name;
    if (m->n_entries <= 0 || !m->entries) return NULL; /* bsearch takes no NULL base (header "{}") */
    return bsearch(&key, m->entries, (size_t)m->n_entries, sizeof *m->entries, model_entry_cmp);
}

mla_status mla_model_open(const char *name_or_path, mla_model **out)
{
    if (!out) return mla_errorf(MLA_ERR_INVALID, "mla_model_open: no output pointer");
    *out = NULL;
    if (!name_or_path || !*name_or_path) return mla_errorf(MLA_ERR_INVALID, "mla_model_open: empty model name");
    mla_config cfg;
    uint64_t seed;
    if (builtin_lookup(name_or_path, &cfg, &seed) == 0) return builtin_open(name_or_path, out);
    struct stat sb;
    if (stat(name_or_path, &sb) || !S_ISDIR(sb.st_mode))
        return mla_errorf(MLA_ERR_NOT_FOUND,
                          "%s: expected a built-in model (tiny-v2-lite, tiny-v3, asym-v3, asym-v2-lite, v3-layer, v2-lite-layer) or a Hugging Face "
                          "checkpoint folder", name_or_path);
    return hf_open(name_or_path, out);
}

void mla_model_free(mla_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_entries; i++) {
        free(m->entries[i].name);
        free(m->entries[i].owned);
    }
    free(m->entries);
    for (int i = 0; i < m->n_files; i++) {
        if (m->files[i].map) munmap(m->files[i].map, m->files[i].size);
        free(m->files[i].path);
    }
    free(m->files);
    pthread_mutex_destroy(&m->lock);
    free(m->source);
    free(m);
}

const mla_config *mla_model_config(const mla_model *m) { return &m->cfg; }
const char *mla_model_source(const mla_model *m) { return m->source; }
int mla_model_tensor_count(const mla_model *m) { return m->n_entries; }

const char *mla_model_tensor_name(const mla_model *m, int i)
{
    return i >= 0 && i < m->n_entries ? m->entries[i].name : NULL;
}

/* The entry for name, generated if it is a built-in's; a tied lm_head is the embedding. */
static mla_status model_get(mla_model *m, const char *name, model_entry **out)
{
    model_entry *e = model_find(m, name);
    if (!e && m->cfg.tie_word_embeddings && !strcmp(name, "lm_head.weight"))
        e = model_find(m, "model.embed_tokens.weight");
    if (!e) return mla_errorf(MLA_ERR_NOT_FOUND, "%s: tensor %s: not in the model", m->source, name);
    mla_status st = MLA_OK;
    if (m->builtin) {
        pthread_mutex_lock(&m->lock);
        if (!e->ready) st = builtin_generate(m, e);
        pthread_mutex_unlock(&m->lock);
    }
    *out = e;
    return st;
}

mla_status mla_model_tensor(mla_model *m, const char *hf_name, const mla_tensor **out)
{
    if (!m || !hf_name || !out) return mla_errorf(MLA_ERR_INVALID, "mla_model_tensor: null argument");
    model_entry *e;
    mla_status st = model_get(m, hf_name, &e);
    if (st) return st;
    *out = &e->t;
    return MLA_OK;
}

mla_status mla_model_tensor_f64(mla_model *m, const char *hf_name, double **out, int64_t *numel)
{
    if (!m || !hf_name || !out) return mla_errorf(MLA_ERR_INVALID, "mla_model_tensor_f64: null argument");
    *out = NULL;
    model_entry *e;
    mla_status st = model_get(m, hf_name, &e);
    if (st) return st;
    const mla_tensor *t = &e->t;
    int nd;
    int64_t shape[MLA_MAX_DIMS];
    if (mla_config_tensor_shape(&m->cfg, hf_name, &nd, shape) == 0) {
        int same = nd == t->ndim;
        for (int i = 0; same && i < nd; i++) same = shape[i] == t->shape[i];
        if (!same) {
            char got[96];
            return mla_errorf(MLA_ERR_SHAPE, "%s: tensor %s: shape %s disagrees with the config", m->source,
                              hf_name, mla_tensor_shape_str(t, got, sizeof got));
        }
    }
    int64_t n = mla_tensor_numel(t);
    double *v = malloc(n ? (size_t)n * sizeof *v : 1);
    if (!v) return mla_errorf(MLA_ERR_NOMEM, "%s: tensor %s: %lld doubles", m->source, hf_name, (long long)n);
    char sname[MLA_NAME_MAX + 16];
    snprintf(sname, sizeof sname, "%s_scale_inv", e->name);
    model_entry *s = t->dtype == MLA_E4M3FN ? model_find(m, sname) : NULL;
    if (s) {
        /* W = code * scale_inv[r/B, c/B]; shapes were checked at open. */
        int B = m->cfg.weight_block_size > 0 ? m->cfg.weight_block_size : 128;
        mla_block_dequant(t->data, s->t.data, t->shape[0], t->shape[1], B, v);
    } else {
        mla_tensor_to_f64(t, v);
    }
    *out = v;
    if (numel) *numel = n;
    return MLA_OK;
}

/* FNV-1a 64 over, per tensor in name order: name, NUL, dtype name, NUL, ndim and each dim as
 * 64-bit little-endian, then the raw bytes. */
mla_status mla_model_weights_hash(mla_model *m, char out[17])
{
    if (!m || !out) return mla_errorf(MLA_ERR_INVALID, "mla_model_weights_hash: null argument");
    pthread_mutex_lock(&m->lock);
    int cached = m->weights_hash[0] != 0;
    if (cached) memcpy(out, m->weights_hash, 17);
    pthread_mutex_unlock(&m->lock);
    if (cached) return MLA_OK; /* hashing a V3-sized layer's weights takes seconds; dumps ask per sequence */
    uint64_t h = MLA_FNV1A_INIT;
    for (int i = 0; i < m->n_entries; i++) {
        model_entry *e;
        mla_status st = model_get(m, m->entries[i].name, &e);
        if (st) return st;
        const char *dn = mla_dtype_name(e->t.dtype);
        h = mla_fnv1a(h, e->name, strlen(e->name) + 1);
        h = mla_fnv1a(h, dn, strlen(dn) + 1);
        h = mla_fnv1a_u64(h, (uint64_t)e->t.ndim);
        for (int d = 0; d < e->t.ndim; d++) h = mla_fnv1a_u64(h, (uint64_t)e->t.shape[d]);
        h = mla_fnv1a(h, e->t.data, mla_tensor_nbytes(&e->t));
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
    pthread_mutex_lock(&m->lock); /* model_get above takes the lock itself, so not held while hashing */
    memcpy(m->weights_hash, out, 17);
    pthread_mutex_unlock(&m->lock);
    return MLA_OK;
}
