/* opcheck_export.c: the operator cases without the C library on the kernel's machine
 * (opcheck.h: mla_opcheck_export, mla_opcheck_judge_dir). Every case's inputs go to DIR/<case>.h5
 * in the kernel's native dtypes, an index to DIR/cases.json; the user's script writes
 * DIR/<case>.out.h5, and the judge regenerates the case from its seed and hands the outputs to the
 * same opcheck_judge that `mlacheck ops` runs. The format is documented in harness/python/README.md. */
#include "opcheck_internal.h"

#include "mla/dtype.h"
#include "mlacheck/h5io.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define OPX_SCHEMA 1
#define OPX_KIND "mlacheck-op-case"
#define OPX_INDEX_KIND "mlacheck-op-export"

#ifdef MLA_HAVE_HDF5
#include <hdf5.h>

static const char *const opx_kv_names[] = {
#define OPX_KV_NAME(e, name) name,
    MLA_KV_FORMAT_LIST(OPX_KV_NAME)
#undef OPX_KV_NAME
};


/* ---- writing ----------------------------------------------------------------------------------- */

static mla_status opx_h5err(const char *path, const char *what)
{
    return mla_errorf(MLA_ERR_IO, "%s: cannot write %s", path, what);
}

/* A scalar (n == 0) or 1-D attribute of n values. */
static mla_status opx_attr(const char *path, hid_t loc, const char *name, hid_t type, int n, const void *v)
{
    hsize_t d = (hsize_t)n;
    hid_t sp = n ? H5Screate_simple(1, &d, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = sp >= 0 ? H5Acreate2(loc, name, type, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
    herr_t w = a >= 0 ? H5Awrite(a, type, v) : -1;
    if (a >= 0) H5Aclose(a);
    if (sp >= 0) H5Sclose(sp);
    return w < 0 ? opx_h5err(path, name) : MLA_OK;
}

static mla_status opx_attr_str(const char *path, hid_t loc, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
        if (t >= 0) H5Tclose(t);
        return opx_h5err(path, name);
    }
    mla_status st = opx_attr(path, loc, name, t, 0, &v);
    H5Tclose(t);
    return st;
}

static mla_status opx_attr_i32(const char *path, hid_t f, const char *name, int32_t v)
{
    return opx_attr(path, f, name, H5T_NATIVE_INT32, 0, &v);
}

/* A dataset with the golden schema's two attributes: dtype (the element's name) and crc32 (of the
 * stored little-endian bytes). */
static mla_status opx_dset(const char *path, hid_t f, const char *name, hid_t ftype, hid_t mtype, size_t esize,
                           int ndim, const int64_t *shape, const void *data, const char *dtype)
{
    hsize_t d[4];
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        d[i] = (hsize_t)shape[i];
        n *= (size_t)shape[i];
    }
    hid_t sp = H5Screate_simple(ndim, d, NULL);
    hid_t ds = sp >= 0 ? H5Dcreate2(f, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
    herr_t w = ds >= 0 && n ? H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : ds >= 0 ? 0 : -1;
    uint32_t crc = mla_h5_crc32(0, data, n * esize);
    mla_status st = w < 0 ? opx_h5err(path, name) : MLA_OK;
    if (!st) st = opx_attr_str(path, ds, "dtype", dtype);
    if (!st) st = opx_attr(path, ds, "crc32", H5T_NATIVE_UINT32, 0, &crc);
    if (ds >= 0) H5Dclose(ds);
    if (sp >= 0) H5Sclose(sp);
    return st;
}

/* f32 values that are bf16-representable (every generated input is) as their bf16 bits. */
static mla_status opx_bf16(const char *path, hid_t f, const char *name, int ndim, const int64_t *shape,
                           const float *v)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    uint16_t *b = malloc((size_t)(n ? n : 1) * sizeof *b);
    if (!b) return mla_errorf(MLA_ERR_NOMEM, "%s: %s", path, name);
    for (int64_t i = 0; i < n; i++) b[i] = mla_f32_to_bf16(v[i]);
    mla_status st = opx_dset(path, f, name, H5T_STD_U16LE, H5T_NATIVE_UINT16, 2, ndim, shape, b, "bf16");
    free(b);
    return st;
}

static mla_status opx_cache(const char *path, hid_t f, const mla_opcase *c, const op_inputs *in)
{
    int64_t sh[3] = {in->kv.num_blocks, in->kv.page_size, in->C + in->R};
    switch (c->kv_format) {
    case MLA_KV_BF16:
        return opx_dset(path, f, "kv_cache", H5T_STD_U16LE, H5T_NATIVE_UINT16, 2, 3, sh, in->pool, "bf16");
    case MLA_KV_F32:
        return opx_dset(path, f, "kv_cache", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, 3, sh, in->pool, "f32");
    case MLA_KV_FP8:
        return opx_dset(path, f, "kv_cache", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 3, sh, in->pool,
                        c->fp8_fnuz ? "e4m3fnuz" : "e4m3fn");
    case MLA_KV_FP8_DS:
        sh[2] = (int64_t)mla_kv_row_bytes(c->kv_format, in->C, in->R);
        return opx_dset(path, f, "kv_cache", H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 3, sh, in->pool, "fp8_ds_mla");
    default: return mla_errorf(MLA_ERR_INVALID, "%s: kv format %d", path, (int)c->kv_format);
    }
}

static mla_status opx_case_attrs(const char *path, hid_t f, const char *suite, const mla_opcase *c,
                                 const op_inputs *in, char feats[][48], int nf)
{
    const char *fv[OPCHECK_MAX_FEATURES];
    for (int i = 0; i < nf; i++) fv[i] = feats[i];
    hid_t vs = H5Tcopy(H5T_C_S1);
    if (vs < 0 || H5Tset_size(vs, H5T_VARIABLE) < 0 || H5Tset_cset(vs, H5T_CSET_UTF8) < 0) {
        if (vs >= 0) H5Tclose(vs);
        return opx_h5err(path, "features");
    }
    mla_status st = opx_attr(path, f, "features", vs, nf, fv);
    H5Tclose(vs);
    int32_t s_q[MLA_OPCASE_MAX_BATCH];
    for (int b = 0; b < c->batch; b++) s_q[b] = c->s_q[b];
    if (!st) st = opx_attr_i32(path, f, "schema_version", OPX_SCHEMA);
    if (!st) st = opx_attr_str(path, f, "kind", OPX_KIND);
    if (!st) st = opx_attr_str(path, f, "suite", suite);
    if (!st) st = opx_attr_str(path, f, "id", c->name);
    if (!st) st = opx_attr_str(path, f, "form", c->kind == MLA_OP_MQA ? "mqa" : "mha");
    if (!st) st = opx_attr_str(path, f, "model", c->model);
    if (!st) st = opx_attr_str(path, f, "kv_format", opx_kv_names[c->kv_format]);
    if (!st) st = opx_attr_i32(path, f, "fp8_fnuz", c->fp8_fnuz);
    if (!st) st = opx_attr(path, f, "k_scale", H5T_NATIVE_FLOAT, 0, &c->k_scale);
    if (!st) st = opx_attr(path, f, "softmax_scale", H5T_NATIVE_DOUBLE, 0, &in->scale);
    if (!st) st = opx_attr_i32(path, f, "batch", in->B);
    if (!st) st = opx_attr_i32(path, f, "num_heads", in->H);
    if (!st) st = opx_attr_i32(path, f, "kv_lora_rank", in->C);
    if (!st) st = opx_attr_i32(path, f, "rope_dim", in->R);
    if (!st) st = opx_attr_i32(path, f, "nope_dim", in->P);
    if (!st) st = opx_attr_i32(path, f, "v_dim", in->V);
    if (!st) st = opx_attr_i32(path, f, "total_q", in->T);
    if (!st) st = opx_attr_i32(path, f, "page_size", in->kv.page_size);
    if (!st) st = opx_attr_i32(path, f, "num_blocks", in->kv.num_blocks);
    if (!st) st = opx_attr_i32(path, f, "max_blocks_per_seq", in->kv.max_blocks_per_seq);
    if (!st && c->batch) st = opx_attr(path, f, "s_q", H5T_NATIVE_INT32, c->batch, s_q);
    return st;
}

static mla_status opx_write_case(const char *path, const char *suite, const mla_opcase *c, const op_inputs *in,
                                 char feats[][48], int nf)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return mla_errorf(MLA_ERR_IO, "%s: cannot create", path);
    int mqa = c->kind == MLA_OP_MQA, B = in->B;
    int64_t sq[3] = {in->T, in->H, mqa ? in->C + in->R : in->P + in->R};
    int64_t sb[2] = {B, in->kv.max_blocks_per_seq}, sl[1] = {B}, scu[1] = {B + 1};
    mla_status st = opx_case_attrs(path, f, suite, c, in, feats, nf);
    if (!st) st = opx_bf16(path, f, "q", 3, sq, in->q);
    if (!st) st = opx_cache(path, f, c, in);
    if (!st) st = opx_dset(path, f, "block_table", H5T_STD_I32LE, H5T_NATIVE_INT32, 4, 2, sb, in->table, "i32");
    if (!st) st = opx_dset(path, f, "seq_lens", H5T_STD_I32LE, H5T_NATIVE_INT32, 4, 1, sl, in->seq_lens, "i32");
    if (!st) st = opx_dset(path, f, "cu_seqlens_q", H5T_STD_I32LE, H5T_NATIVE_INT32, 4, 1, scu, in->cu, "i32");
    if (!mqa) {
        int64_t skc[2] = {in->T, in->C}, skp[2] = {in->T, in->R}, sw[2] = {(int64_t)in->H * (in->P + in->V), in->C};
        if (!st) st = opx_bf16(path, f, "kv_c", 2, skc, in->kv_c);
        if (!st) st = opx_bf16(path, f, "k_pe", 2, skp, in->k_pe);
        if (!st) st = opx_bf16(path, f, "w_kv_b", 2, sw, in->w_kv_b);
    }
    if (H5Fclose(f) < 0 && !st) st = mla_errorf(MLA_ERR_IO, "%s: cannot close", path);
    return st;
}

static json_t *opx_index_entry(const mla_opcase *c, const op_inputs *in, char feats[][48], int nf)
{
    json_t *e = json_object(), *fa = json_array(), *sq = json_array(), *sl = json_array();
    char file[128], out[128];
    snprintf(file, sizeof file, "%s.h5", c->name);
    snprintf(out, sizeof out, "%s.out.h5", c->name);
    for (int i = 0; i < nf; i++) json_array_append_new(fa, json_string(feats[i]));
    for (int b = 0; b < c->batch; b++) {
        json_array_append_new(sq, json_integer(c->s_q[b]));
        json_array_append_new(sl, json_integer(c->seq_len[b]));
    }
    if (!e || !fa || !sq || !sl ||
        json_object_set_new(e, "id", json_string(c->name)) || json_object_set_new(e, "file", json_string(file)) ||
        json_object_set_new(e, "out_file", json_string(out)) ||
        json_object_set_new(e, "form", json_string(c->kind == MLA_OP_MQA ? "mqa" : "mha")) ||
        json_object_set_new(e, "model", json_string(c->model)) || json_object_set_new(e, "features", fa) ||
        json_object_set_new(e, "kv_format", json_string(opx_kv_names[c->kv_format])) ||
        json_object_set_new(e, "fp8_fnuz", json_integer(c->fp8_fnuz)) ||
        json_object_set_new(e, "page_size", json_integer(c->page_size)) ||
        json_object_set_new(e, "num_heads", json_integer(c->num_heads)) ||
        json_object_set_new(e, "s_q", sq) || json_object_set_new(e, "seq_lens", sl) ||
        json_object_set_new(e, "softmax_scale", json_real(in->scale))) {
        json_decref(e);
        return NULL;
    }
    return e;
}

static int opx_selected(const mla_opcase *c, const mla_opcheck_opts *o)
{
    return (o->kv_format < 0 || (int)c->kv_format == o->kv_format) && (!o->filter || strstr(c->name, o->filter));
}

mla_status mla_opcheck_export(const char *suite, const char *dir, const mla_opcheck_opts *o, int *n_written)
{
    *n_written = 0;
    mla_opcheck_opts def;
    if (!o) {
        mla_opcheck_opts_default(&def);
        o = &def;
    }
    if (!dir || !dir[0]) return mla_errorf(MLA_ERR_INVALID, "opcheck export: no folder given");
    if (mkdir(dir, 0777) && errno != EEXIST)
        return mla_errorf(MLA_ERR_IO, "%s: cannot create the export folder: %s", dir, strerror(errno));
    mla_opcase *cases;
    int n;
    mla_status st = mla_opcheck_cases(suite, &cases, &n);
    if (st) return st;
    json_t *root = json_object(), *list = json_array();
    if (!root || !list || json_object_set_new(root, "schema_version", json_integer(OPX_SCHEMA)) ||
        json_object_set_new(root, "kind", json_string(OPX_INDEX_KIND)) ||
        json_object_set_new(root, "suite", json_string(suite)) || json_object_set(root, "cases", list))
        st = mla_errorf(MLA_ERR_NOMEM, "%s: index", dir);
    char path[4096];
    for (int i = 0; !st && i < n; i++) {
        const mla_opcase *c = &cases[i];
        if (!opx_selected(c, o)) continue;
        op_inputs in;
        if ((st = opcheck_inputs_make(c, &in))) break;
        char feats[OPCHECK_MAX_FEATURES][48];
        int nf = opcheck_features(c, &in, feats);
        snprintf(path, sizeof path, "%s/%s.h5", dir, c->name);
        st = opx_write_case(path, suite, c, &in, feats, nf);
        json_t *e = st ? NULL : opx_index_entry(c, &in, feats, nf);
        if (!st && (!e || json_array_append_new(list, e))) st = mla_errorf(MLA_ERR_NOMEM, "%s: index", dir);
        opcheck_inputs_free(&in);
        if (!st) ++*n_written;
    }
    free(cases);
    if (!st && *n_written == 0)
        st = mla_errorf(MLA_ERR_INVALID, "opcheck export %s: no case matches the filters (format %d, name '%s')",
                        suite, o->kv_format, o->filter ? o->filter : "");
    /* the index last, through a temporary name: a folder with cases.json is a complete export */
    char tmp[4096 + 8];
    snprintf(path, sizeof path, "%s/cases.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!st && (json_dump_file(root, tmp, JSON_INDENT(1)) || rename(tmp, path)))
        st = mla_errorf(MLA_ERR_IO, "%s: cannot write the index", path);
    json_decref(list);
    json_decref(root);
    return st;
}

/* ---- judging ----------------------------------------------------------------------------------- */

/* Reads float32 dataset name of shape [shape...] from f into a new array; every mismatch names the
 * file, the dataset and what was expected. */
static mla_status opx_read_f32(const char *path, hid_t f, const char *name, int ndim, const int64_t *shape,
                               float **out)
{
    *out = NULL;
    char want[96];
    int k = snprintf(want, sizeof want, "float32 [");
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        k += snprintf(want + k, sizeof want - (size_t)k, "%s%lld", i ? ", " : "", (long long)shape[i]);
        n *= shape[i];
    }
    snprintf(want + k, sizeof want - (size_t)k, "]");
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0)
        return mla_errorf(MLA_ERR_FORMAT, "%s: dataset %s is missing: expected %s", path, name, want);
    hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t t = ds >= 0 ? H5Dget_type(ds) : -1, sp = ds >= 0 ? H5Dget_space(ds) : -1;
    mla_status st = MLA_OK;
    hsize_t d[8] = {0};
    int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    if (ds < 0 || t < 0 || sp < 0 || nd < 0 || nd > 8) {
        st = mla_errorf(MLA_ERR_FORMAT, "%s: dataset %s cannot be read: expected %s", path, name, want);
        goto done;
    }
    if (H5Tget_class(t) != H5T_FLOAT || H5Tget_size(t) != 4) {
        st = mla_errorf(MLA_ERR_FORMAT, "%s: dataset %s: %s of %zu bytes, expected %s (a bf16 kernel widens its "
                        "result to float32)", path, name, H5Tget_class(t) == H5T_FLOAT ? "float" : "not a float",
                        H5Tget_size(t), want);
        goto done;
    }
    H5Sget_simple_extent_dims(sp, d, NULL);
    int same = nd == ndim;
    for (int i = 0; same && i < ndim; i++) same = (int64_t)d[i] == shape[i];
    if (!same) {
        char got[96];
        int g = snprintf(got, sizeof got, "[");
        for (int i = 0; i < nd; i++)
            g += snprintf(got + g, sizeof got - (size_t)g, "%s%llu", i ? ", " : "", (unsigned long long)d[i]);
        snprintf(got + g, sizeof got - (size_t)g, "]");
        st = mla_errorf(MLA_ERR_SHAPE, "%s: dataset %s has shape %s, expected %s", path, name, got, want);
        goto done;
    }
    *out = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!*out) {
        st = mla_errorf(MLA_ERR_NOMEM, "%s: %s", path, name);
        goto done;
    }
    if (n && H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        st = mla_errorf(MLA_ERR_FORMAT, "%s: dataset %s cannot be read: expected %s", path, name, want);
        goto done;
    }
    /* a crc32 attribute, when the writer gave one (mlacheck's Python package does), must match */
    if (H5Aexists(ds, "crc32") > 0) {
        hid_t a = H5Aopen(ds, "crc32", H5P_DEFAULT);
        uint32_t want_crc = 0;
        if (a < 0 || H5Aread(a, H5T_NATIVE_UINT32, &want_crc) < 0)
            st = mla_errorf(MLA_ERR_FORMAT, "%s: dataset %s: unreadable crc32 attribute", path, name);
        else if (mla_h5_crc32(0, *out, (size_t)n * 4) != want_crc)
            st = mla_errorf(MLA_ERR_CHECKSUM, "%s: dataset %s: crc32 does not match its data", path, name);
        if (a >= 0) H5Aclose(a);
    }
done:
    if (st) {
        free(*out);
        *out = NULL;
    }
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
    if (ds >= 0) H5Dclose(ds);
    return st;
}

/* A string attribute of the root group into buf; 0 when absent, 1 when read, -1 when unreadable. */
static int opx_root_str(hid_t f, const char *name, char *buf, size_t cap)
{
    if (H5Aexists(f, name) <= 0) return 0;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : -1, mt = H5Tcopy(H5T_C_S1);
    int ok = -1;
    if (t >= 0 && mt >= 0 && H5Tget_class(t) == H5T_STRING && H5Tset_cset(mt, H5Tget_cset(t)) >= 0) {
        if (H5Tis_variable_str(t) > 0) {
            char *p = NULL;
            if (H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Aread(a, mt, &p) >= 0) {
                snprintf(buf, cap, "%s", p ? p : "");
                H5free_memory(p);
                ok = 1;
            }
        } else {
            size_t sz = H5Tget_size(t);
            char *p = calloc(sz + 1, 1);
            if (p && H5Tset_size(mt, sz) >= 0 && H5Aread(a, mt, p) >= 0) {
                snprintf(buf, cap, "%s", p);
                ok = 1;
            }
            free(p);
        }
    }
    if (mt >= 0) H5Tclose(mt);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return ok;
}

/* One case's outputs: judged with opcheck_judge, or SKIP when the file says skipped = reason. */
static mla_status opx_judge_case(const char *dir, const mla_opcase *c, const mla_opcheck_opts *o,
                                 mla_opcase_result *r)
{
    memset(r, 0, sizeof *r);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.out.h5", dir, c->name);
    struct stat sb;
    if (stat(path, &sb))
        return mla_errorf(MLA_ERR_IO, "%s: missing: expected the outputs of case %s (datasets out and lse, float32, "
                          "or a root attribute skipped = \"reason\")", path, c->name);
    H5E_auto2_t fn;
    void *fd;
    H5Eget_auto2(H5E_DEFAULT, &fn, &fd);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our messages name the file; HDF5's stack would only repeat it */
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    mla_status st = MLA_OK;
    op_inputs in;
    int have_in = 0;
    float *out = NULL, *lse = NULL;
    char why[256];
    char id[sizeof c->name];
    int sk = f >= 0 ? opx_root_str(f, "skipped", why, sizeof why) : 0;
    int has_id = f >= 0 ? opx_root_str(f, "id", id, sizeof id) : 0;
    if (f < 0) st = mla_errorf(MLA_ERR_FORMAT, "%s: not an HDF5 file", path);
    else if (has_id > 0 && strcmp(id, c->name))
        st = mla_errorf(MLA_ERR_FORMAT, "%s: attribute id is '%s', expected '%s' (outputs of another case)", path, id,
                        c->name);
    else if (sk < 0) st = mla_errorf(MLA_ERR_FORMAT, "%s: attribute skipped: expected a string (the reason)", path);
    else if (sk > 0) {
        r->verdict = MLA_OPCASE_SKIP;
        snprintf(r->why, sizeof r->why, "skipped by the kernel: %s", why[0] ? why : "(no reason given)");
    } else if (!(st = opcheck_inputs_make(c, &in))) {
        have_in = 1;
        int64_t so[3] = {in.T, in.H, c->kind == MLA_OP_MQA ? in.C : in.V};
        if (!(st = opx_read_f32(path, f, "out", 3, so, &out)) && !(st = opx_read_f32(path, f, "lse", 2, so, &lse))) {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            st = opcheck_judge(c, &in, out, lse, o, r);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            r->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec); /* the reference */
        }
    }
    if (f >= 0) H5Fclose(f);
    H5Eset_auto2(H5E_DEFAULT, fn, fd);
    free(out);
    free(lse);
    if (have_in) opcheck_inputs_free(&in);
    return st;
}

/* cases.json: its suite and its list of case ids. */
static mla_status opx_index_load(const char *dir, json_t **root, const char **suite, json_t **list)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.json", dir);
    json_error_t je;
    *root = json_load_file(path, 0, &je);
    if (!*root)
        return mla_errorf(MLA_ERR_IO, "%s: cannot read the export index (%s): expected the folder written by "
                          "mlacheck ops --export", path, je.text);
    json_t *v = json_object_get(*root, "schema_version"), *s = json_object_get(*root, "suite");
    *list = json_object_get(*root, "cases");
    if (!json_is_integer(v) || json_integer_value(v) != OPX_SCHEMA)
        return mla_errorf(MLA_ERR_VERSION, "%s: schema_version: expected %d (export again)", path, OPX_SCHEMA);
    if (!json_is_string(s) || !json_is_array(*list))
        return mla_errorf(MLA_ERR_FORMAT, "%s: expected a string \"suite\" and an array \"cases\"", path);
    *suite = json_string_value(s);
    return MLA_OK;
}

mla_status mla_opcheck_export_suite(const char *dir, char *buf, size_t n)
{
    json_t *root = NULL, *list = NULL;
    const char *suite = NULL;
    mla_status st = opx_index_load(dir, &root, &suite, &list);
    if (!st && n) snprintf(buf, n, "%s", suite);
    json_decref(root);
    return st;
}

mla_status mla_opcheck_judge_dir(const char *dir, const mla_opcheck_opts *o, mla_opcheck_summary *s)
{
    memset(s, 0, sizeof *s);
    mla_opcheck_opts def;
    if (!o) {
        mla_opcheck_opts_default(&def);
        o = &def;
    }
    json_t *root = NULL, *list = NULL;
    const char *suite = NULL;
    mla_opcase *cases = NULL;
    int n = 0;
    mla_status st = opx_index_load(dir, &root, &suite, &list);
    if (!st) st = mla_opcheck_cases(suite, &cases, &n);
    char first_skip[320] = "";
    for (size_t i = 0; !st && i < json_array_size(list); i++) {
        const char *id = json_string_value(json_object_get(json_array_get(list, i), "id"));
        const mla_opcase *c = NULL;
        for (int k = 0; id && k < n && !c; k++)
            if (!strcmp(cases[k].name, id)) c = &cases[k];
        if (!c) {
            st = mla_errorf(MLA_ERR_FORMAT, "%s/cases.json: case %zu: id '%s' is not a case of suite %s", dir, i,
                            id ? id : "(none)", suite);
            break;
        }
        if (!opx_selected(c, o)) continue;
        mla_opcase_result r;
        if ((st = opx_judge_case(dir, c, o, &r))) break;
        opcheck_tally(s, c, &r, first_skip, sizeof first_skip);
        if (o->on_case) o->on_case(o->user, c, &r);
    }
    if (!st) st = opcheck_close(suite, "the kernel", o, s, first_skip);
    free(cases);
    json_decref(root);
    return st;
}

#else /* a build without HDF5 (a GPU machine without libhdf5-dev) says so */

mla_status mla_opcheck_export(const char *suite, const char *dir, const mla_opcheck_opts *o, int *n_written)
{
    (void)suite; (void)o;
    *n_written = 0;
    return mla_errorf(MLA_ERR_UNSUPPORTED, "%s: this build has no HDF5 (install libhdf5-dev and reconfigure)",
                      dir ? dir : "(no folder)");
}

mla_status mla_opcheck_export_suite(const char *dir, char *buf, size_t n)
{
    if (n) buf[0] = '\0';
    return mla_errorf(MLA_ERR_UNSUPPORTED, "%s: this build has no HDF5 (install libhdf5-dev and reconfigure)",
                      dir ? dir : "(no folder)");
}

mla_status mla_opcheck_judge_dir(const char *dir, const mla_opcheck_opts *o, mla_opcheck_summary *s)
{
    (void)o;
    memset(s, 0, sizeof *s);
    return mla_errorf(MLA_ERR_UNSUPPORTED, "%s: this build has no HDF5 (install libhdf5-dev and reconfigure)",
                      dir ? dir : "(no folder)");
}
#endif
