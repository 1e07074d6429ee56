/* safetensors.c: a Hugging Face checkpoint folder: config.json + model.safetensors, or the shards
 * listed by model.safetensors.index.json. Each file is memory-mapped and its header validated in
 * full; tensors are views into the mapping (nothing is converted at open, so a checkpoint larger
 * than memory in f64 can still run layer by layer).
 *
 * safetensors layout: u64 little-endian header length N, N bytes of JSON
 * {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the data; offsets
 * are relative to the first data byte. */
#include "model_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER (100u << 20) /* the safetensors format's own limit */

static const struct { const char *st; mla_dtype t; } st_dtypes[] = {
    { "F64", MLA_F64 },     { "F32", MLA_F32 },     { "BF16", MLA_BF16 },     { "F16", MLA_F16 },
    { "F8_E4M3", MLA_E4M3FN }, { "F8_E5M2", MLA_E5M2 }, { "F8_E8M0", MLA_UE8M0 }, { "I64", MLA_I64 },
    { "I32", MLA_I32 },     { "U8", MLA_U8 },
};
#define N_ST_DTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

const char *st_dtype_name(mla_dtype t)
{
    for (size_t i = 0; i < N_ST_DTYPES; i++)
        if (st_dtypes[i].t == t) return st_dtypes[i].st;
    return NULL;
}

int st_dtype_from_name(const char *s, mla_dtype *out)
{
    for (size_t i = 0; i < N_ST_DTYPES; i++)
        if (!strcmp(st_dtypes[i].st, s)) {
            *out = st_dtypes[i].t;
            return 0;
        }
    return -1;
}

static char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static mla_status open_error(const char *path)
{
    int e = errno;
    return mla_errorf(e == ENOENT ? MLA_ERR_NOT_FOUND : MLA_ERR_IO, "%s: cannot open: %s", path, strerror(e));
}

/* Whole file as a NUL-terminated string; caller frees. */
static mla_status read_text(const char *path, char **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return open_error(path);
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 4096) {
            cap = cap ? 2 * cap : 65536;
            char *b = realloc(buf, cap + 1);
            if (!b) {
                free(buf);
                fclose(f);
                return mla_errorf(MLA_ERR_NOMEM, "%s: %zu bytes", path, cap);
            }
            buf = b;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return mla_errorf(MLA_ERR_IO, "%s: read error", path);
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        free(buf);
        return mla_errorf(MLA_ERR_FORMAT, "%s: expected JSON text, found a NUL byte", path);
    }
    *out = buf;
    return MLA_OK;
}

/* Entries being collected while the files are parsed. */
typedef struct {
    model_entry *v;
    int n, cap;
} entry_vec;

static mla_status vec_push(entry_vec *ev, const char *path, model_entry **out)
{
    if (ev->n == ev->cap) {
        int cap = ev->cap ? 2 * ev->cap : 256;
        model_entry *v = realloc(ev->v, (size_t)cap * sizeof *v);
        if (!v) return mla_errorf(MLA_ERR_NOMEM, "%s: %d tensor entries", path, cap);
        ev->v = v;
        ev->cap = cap;
    }
    *out = &ev->v[ev->n++];
    memset(*out, 0, sizeof **out);
    return MLA_OK;
}

typedef struct {
    uint64_t begin, end;
    const char *name;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* One header entry `name: val` of file `path` (data block of dlen bytes at data). */
static mla_status st_tensor(const char *path, const char *name, const json_t *val, const uint8_t *data,
                            uint64_t dlen, int file, entry_vec *ev, span *sp)
{
    if (!json_is_object(val))
        return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: expected an object {dtype, shape, data_offsets}", path,
                          name);
    const json_t *jd = json_object_get(val, "dtype");
    mla_dtype dt;
    if (!json_is_string(jd) || st_dtype_from_name(json_string_value(jd), &dt))
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: tensor %s: field dtype: expected F32, BF16, F16, F8_E4M3 or F64, got %s%s%s", path,
                          name, json_is_string(jd) ? "\"" : "", json_is_string(jd) ? json_string_value(jd)
                                                                                  : jd ? "a non-string" : "nothing",
                          json_is_string(jd) ? "\"" : "");
    const json_t *js = json_object_get(val, "shape");
    if (!json_is_array(js) || json_array_size(js) > MLA_MAX_DIMS)
        return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: field shape: expected an array of at most %d integers",
                          path, name, MLA_MAX_DIMS);
    int nd = (int)json_array_size(js);
    int64_t shape[MLA_MAX_DIMS];
    uint64_t numel = 1;
    for (int i = 0; i < nd; i++) {
        const json_t *x = json_array_get(js, (size_t)i);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: field shape[%d]: expected a non-negative integer",
                              path, name, i);
        shape[i] = json_integer_value(x);
        if (__builtin_mul_overflow(numel, (uint64_t)shape[i], &numel))
            return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: field shape: element count overflows", path, name);
    }
    const json_t *jo = json_object_get(val, "data_offsets");
    if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(json_array_get(jo, 0)) ||
        !json_is_integer(json_array_get(jo, 1)) || json_integer_value(json_array_get(jo, 0)) < 0 ||
        json_integer_value(json_array_get(jo, 1)) < 0)
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: tensor %s: field data_offsets: expected [begin, end], non-negative integers", path,
                          name);
    uint64_t b = (uint64_t)json_integer_value(json_array_get(jo, 0));
    uint64_t e = (uint64_t)json_integer_value(json_array_get(jo, 1));
    if (b > e)
        return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: field data_offsets: begin %llu > end %llu", path, name,
                          (unsigned long long)b, (unsigned long long)e);
    if (e > dlen)
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: tensor %s: field data_offsets: [%llu, %llu] out of range, the data block has %llu bytes",
                          path, name, (unsigned long long)b, (unsigned long long)e, (unsigned long long)dlen);
    size_t es = mla_dtype_size(dt);
    uint64_t want;
    if (__builtin_mul_overflow(numel, (uint64_t)es, &want) || want != e - b)
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s: tensor %s: field data_offsets: %llu bytes, expected %llu elements x %zu bytes (%s)",
                          path, name, (unsigned long long)(e - b), (unsigned long long)numel, es,
                          json_string_value(jd));
    model_entry *en = NULL;
    mla_status st = vec_push(ev, path, &en);
    if (st) return st;
    en->file = file;
    en->name = strdup(name);
    if (!en->name) return mla_errorf(MLA_ERR_NOMEM, "%s: tensor name", path);
    mla_tensor *t = &en->t;
    t->dtype = dt;
    t->ndim = nd;
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->strides[i] = s;
        s *= shape[i];
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    const uint8_t *p = data + b;
    if ((uintptr_t)p % es) {
        /* Misaligned for its element type (headers are not always padded): keep an aligned copy. */
        en->owned = malloc(want ? want : 1);
        if (!en->owned) return mla_errorf(MLA_ERR_NOMEM, "%s: tensor %s: %llu bytes", path, name,
                                          (unsigned long long)want);
        memcpy(en->owned, p, want);
        p = en->owned;
    }
    t->data = (void *)p;
    sp->begin = b;
    sp->end = e;
    sp->name = en->name;
    return MLA_OK;
}

/* Map file path (files[file]) and append its tensors to ev. */
static mla_status st_parse_file(st_file *f, int file, entry_vec *ev)
{
    const char *path = f->path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return open_error(path);
    struct stat sb;
    if (fstat(fd, &sb)) {
        close(fd);
        return mla_errorf(MLA_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    }
    size_t size = (size_t)sb.st_size;
    if (size < 8) {
        close(fd);
        return mla_errorf(MLA_ERR_FORMAT, "%s: field header length: file has %zu bytes, expected at least 8",
                          path, size);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return mla_errorf(MLA_ERR_IO, "%s: cannot mmap: %s", path, strerror(errno));
    f->map = map;
    f->size = size;
    const uint8_t *u = map;
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (uint64_t)u[i] << (8 * i);
    if (hlen > size - 8)
        return mla_errorf(MLA_ERR_FORMAT, "%s: field header length: %llu bytes past end of file (%zu bytes)",
                          path, (unsigned long long)hlen, size);
    if (hlen > ST_MAX_HEADER)
        return mla_errorf(MLA_ERR_FORMAT, "%s: field header length: %llu bytes, expected at most %u", path,
                          (unsigned long long)hlen, ST_MAX_HEADER);
    json_error_t err;
    json_t *h = json_loadb((const char *)u + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &err);
    if (!h)
        return mla_errorf(MLA_ERR_FORMAT, "%s: header: invalid JSON at column %d: %s", path, err.column, err.text);
    mla_status st = MLA_OK;
    span *spans = NULL;
    if (!json_is_object(h)) {
        st = mla_errorf(MLA_ERR_FORMAT, "%s: header: expected a JSON object, got %s", path,
                        json_is_array(h) ? "an array" : "a scalar");
        goto done;
    }
    spans = malloc((json_object_size(h) + 1) * sizeof *spans);
    if (!spans) {
        st = mla_errorf(MLA_ERR_NOMEM, "%s: header of %zu entries", path, json_object_size(h));
        goto done;
    }
    const uint8_t *data = u + 8 + hlen;
    uint64_t dlen = size - 8 - hlen;
    size_t ns = 0;
    const char *key;
    json_t *val;
    json_object_foreach(h, key, val) {
        if (!strcmp(key, "__metadata__")) {
            if (!json_is_object(val)) {
                st = mla_errorf(MLA_ERR_FORMAT, "%s: header field __metadata__: expected an object", path);
                goto done;
            }
            continue;
        }
        st = st_tensor(path, key, val, data, dlen, file, ev, &spans[ns]);
        if (st) goto done;
        if (spans[ns].end > spans[ns].begin) ns++;
    }
    qsort(spans, ns, sizeof *spans, span_cmp);
    for (size_t i = 1; i < ns; i++)
        if (spans[i].begin < spans[i - 1].end) {
            st = mla_errorf(MLA_ERR_FORMAT,
                            "%s: field data_offsets: tensors %s [%llu, %llu] and %s [%llu, %llu] overlap", path,
                            spans[i - 1].name, (unsigned long long)spans[i - 1].begin,
                            (unsigned long long)spans[i - 1].end, spans[i].name,
                            (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end);
            goto done;
        }
done:
    free(spans);
    json_decref(h);
    return st;
}

static mla_status add_file(mla_model *m, const char *dir, const char *name)
{
    for (int i = 0; i < m->n_files; i++) {
        const char *p = strrchr(m->files[i].path, '/');
        if (!strcmp(p ? p + 1 : m->files[i].path, name)) return MLA_OK;
    }
    st_file *f = realloc(m->files, (size_t)(m->n_files + 1) * sizeof *f);
    if (!f) return mla_errorf(MLA_ERR_NOMEM, "%s: file list", dir);
    m->files = f;
    memset(&f[m->n_files], 0, sizeof *f);
    f[m->n_files].path = path_join(dir, name);
    if (!f[m->n_files].path) return mla_errorf(MLA_ERR_NOMEM, "%s: path", dir);
    m->n_files++;
    return MLA_OK;
}

/* model.safetensors.index.json: adds the shards to m->files; returns the parsed weight_map in *wm. */
static mla_status read_index(mla_model *m, const char *dir, const char *ipath, json_t **wm)
{
    char *text;
    mla_status st = read_text(ipath, &text);
    if (st) return st;
    json_error_t err;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    free(text);
    if (!root)
        return mla_errorf(MLA_ERR_FORMAT, "%s: invalid JSON at line %d column %d: %s", ipath, err.line, err.column,
                          err.text);
    json_t *map = json_object_get(root, "weight_map");
    if (!json_is_object(root) || !json_is_object(map)) {
        json_decref(root);
        return mla_errorf(MLA_ERR_FORMAT, "%s: field weight_map: expected an object {tensor: file}", ipath);
    }
    const char *key;
    json_t *val;
    json_object_foreach(map, key, val) {
        const char *fn = json_string_value(val);
        if (!fn || !*fn || strchr(fn, '/') || !strcmp(fn, "..") || !strcmp(fn, ".")) {
            st = mla_errorf(MLA_ERR_FORMAT, "%s: field weight_map.%s: expected a file name in the folder", ipath,
                            key);
            json_decref(root);
            return st;
        }
        st = add_file(m, dir, fn);
        if (st) {
            json_decref(root);
            return st;
        }
    }
    *wm = json_incref(map);
    json_decref(root);
    return MLA_OK;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* NaN or Inf in a weight or scale: bad input (exit 2) naming the tensor and the first index, found
 * at open so that no engine computes on it and no dump compares it PASS against itself. Bit tests
 * for the common dtypes (an exponent of all ones; E4M3FN has no Inf, NaN is S.1111.111). */
static mla_status st_check_finite(const char *fp, const model_entry *e)
{
    const mla_tensor *t = &e->t;
    int64_t n = mla_tensor_numel(t), bad = -1;
    if (t->dtype == MLA_BF16 || t->dtype == MLA_F16) {
        const uint16_t *u = t->data;
        uint16_t m = t->dtype == MLA_BF16 ? 0x7f80 : 0x7c00;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if ((u[i] & m) == m) bad = i;
    } else if (t->dtype == MLA_F32) {
        const uint32_t *u = t->data;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if ((u[i] & 0x7f800000u) == 0x7f800000u) bad = i;
    } else if (t->dtype == MLA_E4M3FN) {
        const uint8_t *u = t->data;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if ((u[i] & 0x7f) == 0x7f) bad = i;
    } else if (t->dtype == MLA_F64) {
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (!isfinite(((const double *)t->data)[i])) bad = i;
    } else {
        return MLA_OK;
    }
    if (bad < 0) return MLA_OK;
    double v = mla_tensor_get_f64(t, bad);
    return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: %s at flat index %lld, expected finite weights", fp, e->name,
                      isnan(v) ? "NaN" : "Inf", (long long)bad);
}

/* The config's size against what the files hold, before anything is built from the config (the
 * required-name list grows with num_hidden_layers x n_routed_experts): every parameter the config
 * implies is one element of a tensor in the files, every tensor one header entry. A config claiming
 * far more (num_hidden_layers 61 over a 3-layer checkpoint) is refused here, naming the sizes; the
 * tensors present were checked against the config before (check_tensors). */
static mla_status check_size_against_files(const mla_model *m, const char *cfg_path)
{
    uint64_t params, tensors, held = 0;
    config_param_count(&m->cfg, &params, &tensors);
    if (m->cfg.tie_word_embeddings && tensors > 0) tensors--; /* no lm_head.weight */
    for (int i = 0; i < m->n_entries; i++) held += (uint64_t)mla_tensor_numel(&m->entries[i].t);
    /* twice the files plus a margin: a checkpoint missing a few tensors still gets the message that
     * names the first missing one (check_tensors); a config far larger than its files stops here */
    if (params <= 2 * held + 4096 && tensors <= 2 * (uint64_t)m->n_entries + 8) return MLA_OK;
    const mla_config *c = &m->cfg;
    return mla_errorf(MLA_ERR_FORMAT,
                      "%s: field num_hidden_layers: %d layers (hidden_size %d, vocab_size %d, n_routed_experts %d, "
                      "intermediate_size %d, moe_intermediate_size %d) describe %llu%s parameters in %llu tensors, "
                      "expected about what the safetensors files hold: %llu in %d tensors", cfg_path,
                      c->num_hidden_layers, c->hidden_size, c->vocab_size, c->n_routed_experts, c->intermediate_size,
                      c->moe_intermediate_size, (unsigned long long)params, params == UINT64_MAX ? "+" : "",
                      (unsigned long long)tensors, (unsigned long long)held, m->n_entries);
}

/* Names, dtypes and shapes against the config; fp8 weights need their scales. */
static mla_status check_tensors(mla_model *m, const char *cfg_path)
{
    const mla_config *c = &m->cfg;
    for (int i = 0; i < m->n_entries; i++) {
        model_entry *e = &m->entries[i];
        const char *fp = m->files[e->file].path;
        if (i > 0 && !strcmp(e->name, m->entries[i - 1].name))
            return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: also in %s", fp, e->name,
                              m->files[m->entries[i - 1].file].path);
        int nd;
        int64_t shape[MLA_MAX_DIMS];
        char got[96], want[96];
        if (mla_config_tensor_shape(c, e->name, &nd, shape) == 0) {
            mla_tensor w = { .ndim = nd };
            memcpy(w.shape, shape, (size_t)nd * sizeof *shape);
            if (!mla_tensor_same_shape(&w, &e->t))
                return mla_errorf(MLA_ERR_SHAPE, "%s: tensor %s: field shape: %s, expected %s from %s", fp, e->name,
                                  mla_tensor_shape_str(&e->t, got, sizeof got), mla_tensor_shape_str(&w, want, sizeof want),
                                  cfg_path);
            if (!mla_dtype_is_packed_float(e->t.dtype) && e->t.dtype != MLA_F32 && e->t.dtype != MLA_F64)
                return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: field dtype: expected a float type, got %s", fp,
                                  e->name, st_dtype_name(e->t.dtype));
        }
        if (e->t.dtype == MLA_E5M2)
            return mla_errorf(MLA_ERR_FORMAT,
                              "%s: tensor %s: field dtype: F8_E5M2 is not supported, expected F8_E4M3 (the block "
                              "scales are applied to E4M3 weights only; an E5M2 weight's scales would be ignored)",
                              fp, e->name);
        mla_status fst = st_check_finite(fp, e);
        if (fst) return fst;
        if (e->t.dtype != MLA_E4M3FN) continue;
        if (e->t.ndim != 2)
            return mla_errorf(MLA_ERR_SHAPE, "%s: tensor %s: F8_E4M3 weight: expected 2 dimensions, got %d", fp,
                              e->name, e->t.ndim);
        char sname[600];
        snprintf(sname, sizeof sname, "%s_scale_inv", e->name);
        model_entry *s = model_find(m, sname);
        if (!s)
            return mla_errorf(MLA_ERR_NOT_FOUND, "%s: tensor %s: F8_E4M3 weight without its %s", fp, e->name, sname);
        int64_t B = c->weight_block_size > 0 ? c->weight_block_size : 128;
        mla_tensor w = { .ndim = 2, .shape = { (e->t.shape[0] + B - 1) / B, (e->t.shape[1] + B - 1) / B } };
        if (s->t.dtype != MLA_F32)
            return mla_errorf(MLA_ERR_FORMAT, "%s: tensor %s: field dtype: expected F32, got %s",
                              m->files[s->file].path, sname, st_dtype_name(s->t.dtype));
        if (!mla_tensor_same_shape(&w, &s->t))
            return mla_errorf(MLA_ERR_SHAPE, "%s: tensor %s: field shape: %s, expected %s (%lldx%lld blocks)",
                              m->files[s->file].path, sname, mla_tensor_shape_str(&s->t, got, sizeof got),
                              mla_tensor_shape_str(&w, want, sizeof want), (long long)B, (long long)B);
    }
    mla_status st = check_size_against_files(m, cfg_path);
    if (st) return st;
    name_list req;
    st = model_required_names(c, &req);
    if (st) return st;
    for (int i = 0; i < req.n; i++)
        if (!model_find(m, req.v[i])) {
            st = mla_errorf(MLA_ERR_NOT_FOUND, "%s: tensor %s: missing (required by %s)",
                            m->n_files == 1 ? m->files[0].path : m->source, req.v[i], cfg_path);
            break;
        }
    name_list_free(&req);
    return st;
}

static mla_status hf_load(mla_model *m, const char *dir)
{
    char *cpath = path_join(dir, "config.json");
    char *spath = path_join(dir, "model.safetensors");
    char *ipath = path_join(dir, "model.safetensors.index.json");
    char *text = NULL;
    json_t *wm = NULL;
    entry_vec ev = { 0 };
    mla_status st = MLA_OK;
    if (!cpath || !spath || !ipath) {
        st = mla_errorf(MLA_ERR_NOMEM, "%s: paths", dir);
        goto done;
    }
    if ((st = read_text(cpath, &text))) goto done;
    if ((st = mla_config_from_json(text, cpath, &m->cfg))) goto done;
    struct stat sb;
    if (stat(spath, &sb) == 0) {
        st = add_file(m, dir, "model.safetensors");
    } else if (stat(ipath, &sb) == 0) {
        st = read_index(m, dir, ipath, &wm);
    } else {
        st = mla_errorf(MLA_ERR_NOT_FOUND, "%s: expected model.safetensors or model.safetensors.index.json", dir);
    }
    if (st) goto done;
    for (int i = 0; i < m->n_files && !st; i++) st = st_parse_file(&m->files[i], i, &ev);
    if (st == MLA_ERR_NOT_FOUND && wm) {
        char msg[768];
        snprintf(msg, sizeof msg, "%s", mla_last_error());
        mla_errorf(st, "%s (a shard listed in %s)", msg, ipath);
    }
    m->entries = ev.v; /* the model owns them from here, also on failure */
    m->n_entries = ev.n;
    if (st) goto done;
    /* qsort and bsearch take no NULL, even for 0 entries (a header "{}") */
    if (m->n_entries > 0) qsort(m->entries, (size_t)m->n_entries, sizeof *m->entries, model_entry_cmp);
    if (wm) {
        const char *key;
        json_t *val;
        json_object_foreach(wm, key, val) {
            model_entry *e = model_find(m, key);
            if (!e || strcmp(base_name(m->files[e->file].path), json_string_value(val))) {
                st = mla_errorf(MLA_ERR_NOT_FOUND, "%s: field weight_map.%s: tensor not found in %s", ipath, key,
                                json_string_value(val));
                goto done;
            }
        }
    }
    st = check_tensors(m, cpath);
done:
    json_decref(wm);
    free(text);
    free(cpath);
    free(spath);
    free(ipath);
    return st;
}

mla_status hf_open(const char *dir, mla_model **out)
{
    mla_model *m = model_alloc(dir);
    if (!m) return mla_errorf(MLA_ERR_NOMEM, "%s: model", dir);
    mla_status st = hf_load(m, dir);
    if (st) {
        mla_model_free(m);
        return st;
    }
    *out = m;
    return MLA_OK;
}
