/* hf_writer.c: write a model as a Hugging Face folder: config.json + model.safetensors, or shards
 * model-0000i-of-0000n.safetensors with model.safetensors.index.json.
 *
 * dtype MLA_F64 keeps every tensor's source dtype and bytes (fp8 weights with their _scale_inv).
 * MLA_F32 / MLA_BF16 convert every float tensor once from its double value (fp8 weights are
 * dequantized and their scales dropped, the config loses quantization_config), except
 * e_score_correction_bias, which stays F32 as in real checkpoints. Files are written to a .tmp name
 * and renamed when complete. */
#include "model_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const char *name;
    mla_dtype src, dst;
    int dequant; /* fp8 weight with scales: converted through mla_model_tensor_f64 */
    int skip;    /* scale of a dequantized weight */
    size_t bytes;
    int shard;
} plan_item;

static int ends_with(const char *s, const char *sfx)
{
    size_t n = strlen(s), k = strlen(sfx);
    return n >= k && !strcmp(s + n - k, sfx);
}

static mla_status write_all(FILE *f, const char *path, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, f) != n) return mla_errorf(MLA_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return MLA_OK;
}

/* Finish path.tmp -> path. */
static mla_status close_rename(FILE *f, const char *tmp, const char *path, mla_status st)
{
    if (fclose(f) && !st) st = mla_errorf(MLA_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    if (!st && rename(tmp, path)) st = mla_errorf(MLA_ERR_IO, "%s: rename failed: %s", path, strerror(errno));
    if (st) unlink(tmp);
    return st;
}

static mla_status write_text(const char *dir, const char *name, const char *text)
{
    char path[4096], tmp[4110];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    mla_status st = write_all(f, tmp, text, strlen(text));
    if (!st) st = write_all(f, tmp, "\n", 1);
    return close_rename(f, tmp, path, st);
}

/* One tensor's bytes in its output dtype. */
static mla_status write_tensor(mla_model *m, FILE *f, const char *path, const plan_item *it)
{
    const mla_tensor *t;
    mla_status st = mla_model_tensor(m, it->name, &t);
    if (st) return st;
    if (!it->dequant && it->src == it->dst) return write_all(f, path, t->data, it->bytes);
    double *v;
    int64_t n;
    st = mla_model_tensor_f64(m, it->name, &v, &n);
    if (st) return st;
    size_t es = mla_dtype_size(it->dst);
    uint8_t *buf = malloc(it->bytes ? it->bytes : 1);
    if (!buf) {
        free(v);
        return mla_errorf(MLA_ERR_NOMEM, "%s: tensor %s: %zu bytes", path, it->name, it->bytes);
    }
    for (int64_t i = 0; i < n; i++) mla_store_f64(it->dst, buf + (size_t)i * es, v[i]);
    st = write_all(f, path, buf, it->bytes);
    free(buf);
    free(v);
    return st;
}

static mla_status write_shard(mla_model *m, const char *dir, const char *fname, const plan_item *plan, int n,
                              int shard)
{
    json_t *h = json_object();
    json_t *meta = json_object();
    json_object_set_new(meta, "format", json_string("pt"));
    json_object_set_new(h, "__metadata__", meta);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const plan_item *it = &plan[i];
        if (it->skip || it->shard != shard) continue;
        const mla_tensor *t;
        mla_status st = mla_model_tensor(m, it->name, &t);
        if (st) {
            json_decref(h);
            return st;
        }
        json_t *e = json_object(), *shape = json_array(), *offs = json_array();
        json_object_set_new(e, "dtype", json_string(st_dtype_name(it->dst)));
        for (int d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer(t->shape[d]));
        json_object_set_new(e, "shape", shape);
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_array_append_new(offs, json_integer((json_int_t)(off + it->bytes)));
        json_object_set_new(e, "data_offsets", offs);
        json_object_set_new(h, it->name, e);
        off += it->bytes;
    }
    char *text = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    if (!text) return mla_errorf(MLA_ERR_NOMEM, "%s/%s: header", dir, fname);
    size_t hl = strlen(text), padded = (hl + 7) / 8 * 8; /* data starts 8-byte aligned */
    char path[4096], tmp[4110];
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(text);
        return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    }
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    mla_status st = write_all(f, tmp, len, 8);
    if (!st) st = write_all(f, tmp, text, hl);
    for (size_t i = hl; i < padded && !st; i++) st = write_all(f, tmp, " ", 1);
    free(text);
    for (int i = 0; i < n && !st; i++)
        if (!plan[i].skip && plan[i].shard == shard) st = write_tensor(m, f, tmp, &plan[i]);
    return close_rename(f, tmp, path, st);
}

static void shard_name(char *buf, size_t n, int i, int count)
{
    if (count == 1) snprintf(buf, n, "model.safetensors");
    else snprintf(buf, n, "model-%05d-of-%05d.safetensors", i + 1, count);
}

static mla_status write_index(const char *dir, const plan_item *plan, int n, int count, uint64_t total)
{
    json_t *root = json_object(), *meta = json_object(), *wm = json_object();
    json_object_set_new(meta, "total_size", json_integer((json_int_t)total));
    json_object_set_new(root, "metadata", meta);
    char fname[64];
    for (int i = 0; i < n; i++) {
        if (plan[i].skip) continue;
        shard_name(fname, sizeof fname, plan[i].shard, count);
        json_object_set_new(wm, plan[i].name, json_string(fname));
    }
    json_object_set_new(root, "weight_map", wm);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) return mla_errorf(MLA_ERR_NOMEM, "%s/model.safetensors.index.json: text", dir);
    mla_status st = write_text(dir, "model.safetensors.index.json", text);
    free(text);
    return st;
}

static mla_status make_plan(mla_model *m, mla_dtype dtype, plan_item *plan)
{
    for (int i = 0; i < m->n_entries; i++) {
        model_entry *e = &m->entries[i];
        plan_item *it = &plan[i];
        it->name = e->name;
        it->src = it->dst = e->t.dtype;
        char sname[600];
        snprintf(sname, sizeof sname, "%s_scale_inv", e->name);
        if (dtype != MLA_F64 && (mla_dtype_is_packed_float(e->t.dtype) || e->t.dtype == MLA_F32 ||
                                 e->t.dtype == MLA_F64)) {
            it->dst = ends_with(e->name, "e_score_correction_bias") ? MLA_F32 : dtype;
            it->dequant = e->t.dtype == MLA_E4M3FN && model_find(m, sname) != NULL;
            if (ends_with(e->name, "_scale_inv")) {
                char base[600];
                size_t k = strlen(e->name) - strlen("_scale_inv");
                snprintf(base, sizeof base, "%.*s", (int)k, e->name);
                model_entry *w = model_find(m, base);
                it->skip = w && w->t.dtype == MLA_E4M3FN;
            }
        }
        if (!st_dtype_name(it->dst))
            return mla_errorf(MLA_ERR_UNSUPPORTED, "%s: tensor %s: dtype %s has no safetensors name", m->source,
                              e->name, mla_dtype_name(it->dst));
        it->bytes = (size_t)mla_tensor_numel(&e->t) * mla_dtype_size(it->dst);
    }
    return MLA_OK;
}

mla_status mla_model_write_hf(mla_model *m, const char *dir, mla_dtype dtype, size_t shard_bytes)
{
    if (!m || !dir) return mla_errorf(MLA_ERR_INVALID, "mla_model_write_hf: null argument");
    if (dtype != MLA_F32 && dtype != MLA_BF16 && dtype != MLA_F64)
        return mla_errorf(MLA_ERR_INVALID, "%s: dtype %s: expected f32, bf16 or f64 (source dtypes)", dir,
                          mla_dtype_name(dtype));
    if (strlen(dir) > 3000) return mla_errorf(MLA_ERR_INVALID, "%s: path too long", dir);
    if (mkdir(dir, 0777) && errno != EEXIST)
        return mla_errorf(MLA_ERR_IO, "%s: cannot create folder: %s", dir, strerror(errno));
    plan_item *plan = calloc((size_t)m->n_entries + 1, sizeof *plan);
    if (!plan) return mla_errorf(MLA_ERR_NOMEM, "%s: plan", dir);
    mla_status st = make_plan(m, dtype, plan);
    /* Greedy shards of at most shard_bytes (a larger tensor gets one of its own). */
    int count = 0;
    size_t cur = 0;
    uint64_t total = 0;
    for (int i = 0; i < m->n_entries && !st; i++) {
        if (plan[i].skip) continue;
        if (count == 0 || (shard_bytes > 0 && cur > 0 && cur + plan[i].bytes > shard_bytes)) {
            count++;
            cur = 0;
        }
        plan[i].shard = count - 1;
        cur += plan[i].bytes;
        total += plan[i].bytes;
    }
    if (count == 0) count = 1;
    mla_config cfg = m->cfg;
    if (dtype != MLA_F64) cfg.fp8_weights = 0;
    char *cj = st ? NULL : mla_config_to_json(&cfg);
    if (!st && !cj) st = mla_errorf(MLA_ERR_NOMEM, "%s/config.json: text", dir);
    if (!st) st = write_text(dir, "config.json", cj);
    free(cj);
    char fname[64], path[4096];
    for (int s = 0; s < count && !st; s++) {
        shard_name(fname, sizeof fname, s, count);
        st = write_shard(m, dir, fname, plan, m->n_entries, s);
    }
    /* The loader prefers model.safetensors over an index: leave only the layout just written. */
    if (!st && count > 1) {
        st = write_index(dir, plan, m->n_entries, count, total);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        unlink(path);
    } else if (!st) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        unlink(path);
    }
    free(plan);
    return st;
}
