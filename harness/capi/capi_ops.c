/* capi_ops.c: libmlacheck's operator cases (capi.h): version and sizes, a suite's cases and their
 * generated inputs as borrowed arrays (opcheck's own: opcheck_inputs_make, opcheck_features), the
 * cache decoder. The judge is capi_judge.c. */
#include "mlacheck/capi.h"

#include "capi_internal.h"
#include "mla/dtype.h"
#include "mla/kv.h"
#include "mlacheck/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const capi_kv_names[] = {
#define CAPI_KV_NAME(e, name) name,
    MLA_KV_FORMAT_LIST(CAPI_KV_NAME)
#undef CAPI_KV_NAME
};

uint32_t mlacheck_capi_version(void) { return MLACHECK_CAPI_VERSION; }
const char *mlacheck_last_error(void) { return mla_last_error(); }
const char *mlacheck_status_text(int32_t status) { return mla_strerror((mla_status)status); }

int32_t mlacheck_set_error(int32_t status, const char *message)
{
    return mla_errorf((mla_status)status, "%s", message ? message : "");
}

int32_t mlacheck_capi_sizes(mlacheck_sizes *o)
{
    if (!o || o->struct_size != sizeof *o)
        return mla_errorf(MLA_ERR_VERSION, "mlacheck_capi_sizes: struct_size %u, expected %zu",
                          o ? o->struct_size : 0u, sizeof *o);
    *o = (mlacheck_sizes){
        .struct_size = sizeof *o,
        .attn_ops = sizeof(mla_attn_ops),
        .mqa_args = sizeof(mla_mqa_args),
        .mha_args = sizeof(mla_mha_args),
        .attn_cache = sizeof(mla_attn_cache),
        .case_info = sizeof(mlacheck_case_info),
        .array = sizeof(mlacheck_array),
        .metrics = sizeof(mlacheck_metrics),
        .verdict = sizeof(mlacheck_verdict),
        .run_opts = sizeof(mlacheck_run_opts),
        .run_result = sizeof(mlacheck_run_result),
    };
    return MLA_OK;
}

int64_t mlacheck_kv_row_bytes(int32_t format, int32_t C, int32_t R)
{
    if (format < 0 || format >= (int32_t)(sizeof capi_kv_names / sizeof capi_kv_names[0]) || C < 0 || R < 0) return 0;
    return (int64_t)mla_kv_row_bytes((mla_kv_format)format, C, R);
}

/* The one row decoder (mla/kv.h) over n rows. */
static void kv_rows_f32(mla_kv_codec k, const uint8_t *data, int64_t n, float *out)
{
    size_t rb = mla_kv_row_bytes(k.format, k.c, k.r);
    int L = k.c + k.r;
    for (int64_t r = 0; r < n; r++)
        for (int j = 0; j < L; j++) out[r * L + j] = mla_kv_load(k, data + (size_t)r * rb, j);
}

int32_t mlacheck_kv_decode(int32_t format, int32_t fnuz, int32_t C, int32_t R, float k_scale, const void *data,
                           int64_t n_rows, float *out)
{
    if (mlacheck_kv_row_bytes(format, C, R) == 0)
        return mla_errorf(MLA_ERR_INVALID, "mlacheck_kv_decode: format %d, C %d, R %d: expected a mla_kv_format and "
                          "C, R > 0", format, C, R);
    if ((!data || !out) && n_rows > 0) return mla_errorf(MLA_ERR_INVALID, "mlacheck_kv_decode: NULL data or out");
    mla_kv_codec k = {.format = (mla_kv_format)format, .fp8_fnuz = fnuz, .c = C, .r = R, .k_scale = k_scale};
    kv_rows_f32(k, data, n_rows, out);
    return MLA_OK;
}

/* A struct the caller passes must be the size this library was built with (capi.h: versioning). */
mla_status capi_size_ok(const char *fn, uint32_t got, size_t want)
{
    if (got == want) return MLA_OK;
    return mla_errorf(MLA_ERR_VERSION, "%s: struct_size %u, expected %zu (a binding for another capi.h version)", fn,
                      got, want);
}

/* ---- suites ------------------------------------------------------------------------------------ */

int32_t mlacheck_ops_open(const char *suite, const char *rules_path, mlacheck_suite **out)
{
    if (!out) return mla_errorf(MLA_ERR_INVALID, "mlacheck_ops_open: out is NULL");
    *out = NULL;
    mlacheck_suite *s = calloc(1, sizeof *s);
    if (!s) return mla_errorf(MLA_ERR_NOMEM, "mlacheck_ops_open: suite");
    s->refs = 1;
    if (rules_path) snprintf(s->rules_path, sizeof s->rules_path, "%s", rules_path);
    else snprintf(s->rules_path, sizeof s->rules_path, "%s/suites/rules.tol", MLA_SOURCE_DIR);
    mla_status st = mla_opcheck_cases(suite, &s->cases, &s->n);
    if (!st && (st = mla_rules_load(s->rules_path, &s->rules)))
        st = mla_errorf(st, "operator suite %s: rules %s: %s (pass rules_path, or MLACHECK_RULES in Python)", suite,
                        s->rules_path, mla_last_error());
    if (st) {
        mlacheck_ops_close(s);
        return st;
    }
    *out = s;
    return MLA_OK;
}

void mlacheck_ops_close(mlacheck_suite *s)
{
    if (!s || --s->refs > 0) return;
    free(s->cases);
    mla_rules_free(s->rules);
    free(s);
}

int32_t mlacheck_ops_count(const mlacheck_suite *s) { return s ? s->n : 0; }
const char *mlacheck_ops_rules_path(const mlacheck_suite *s) { return s ? s->rules_path : ""; }

static mla_status case_at(const mlacheck_suite *s, int32_t i, const char *fn)
{
    if (!s) return mla_errorf(MLA_ERR_INVALID, "%s: suite is NULL", fn);
    if (i < 0 || i >= s->n) return mla_errorf(MLA_ERR_INVALID, "%s: case index %d, expected 0..%d", fn, i, s->n - 1);
    return MLA_OK;
}

static void info_fill(const mla_opcase *c, const op_inputs *in, mlacheck_case_info *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    snprintf(o->name, sizeof o->name, "%s", c->name);
    snprintf(o->model, sizeof o->model, "%s", c->model);
    snprintf(o->form, sizeof o->form, "%s", c->kind == MLA_OP_MQA ? "mqa" : "mha");
    snprintf(o->kv_format, sizeof o->kv_format, "%s", capi_kv_names[c->kv_format]);
    snprintf(o->profile, sizeof o->profile, "%s", mla_opcheck_profile_name(c->kv_format));
    o->kv_format_id = (int32_t)c->kv_format;
    o->fp8_fnuz = c->fp8_fnuz;
    o->batch = in->B;
    o->num_heads = in->H;
    o->kv_lora_rank = in->C;
    o->rope_dim = in->R;
    o->nope_dim = in->P;
    o->v_dim = in->V;
    o->total_q = in->T;
    o->page_size = c->page_size;
    o->num_blocks = in->kv.num_blocks;
    o->max_blocks_per_seq = in->kv.max_blocks_per_seq;
    o->row_bytes = (int32_t)mla_kv_row_bytes(c->kv_format, in->C, in->R);
    o->realistic = c->realistic;
    o->k_scale = c->k_scale;
    o->softmax_scale = in->scale;
    for (int b = 0; b < in->B && b < MLACHECK_MAX_BATCH; b++) {
        o->s_q[b] = c->s_q[b];
        o->seq_lens[b] = in->seq_lens[b];
    }
    o->out_dim = c->kind == MLA_OP_MQA ? in->C : in->V;
    o->n_features = opcheck_features(c, in, o->features);
}

int32_t mlacheck_ops_case_info(const mlacheck_suite *s, int32_t i, mlacheck_case_info *out)
{
    mla_status st = case_at(s, i, "mlacheck_ops_case_info");
    if (st) return st;
    if (!out) return mla_errorf(MLA_ERR_INVALID, "mlacheck_ops_case_info: out is NULL");
    if ((st = capi_size_ok("mlacheck_ops_case_info", out->struct_size, sizeof *out))) return st;
    /* the inputs are generated for the pool's size and the features: the metadata is theirs */
    op_inputs in;
    if ((st = opcheck_inputs_make(&s->cases[i], &in))) return st;
    info_fill(&s->cases[i], &in, out);
    opcheck_inputs_free(&in);
    return MLA_OK;
}

const char *mlacheck_ops_case_name(const mlacheck_suite *s, int32_t i)
{
    return s && i >= 0 && i < s->n ? s->cases[i].name : NULL;
}

/* ---- one case ---------------------------------------------------------------------------------- */

int32_t mlacheck_case_make(mlacheck_suite *s, int32_t i, mlacheck_case **out)
{
    mla_status st = case_at(s, i, "mlacheck_case_make");
    if (st) return st;
    if (!out) return mla_errorf(MLA_ERR_INVALID, "mlacheck_case_make: out is NULL");
    *out = NULL;
    mlacheck_case *c = calloc(1, sizeof *c);
    if (!c) return mla_errorf(MLA_ERR_NOMEM, "mlacheck_case_make: case %s", s->cases[i].name);
    c->c = s->cases[i];
    c->rules = s->rules;
    if ((st = opcheck_inputs_make(&c->c, &c->in))) {
        free(c);
        return st;
    }
    c->suite = s;
    s->refs++;
    *out = c;
    return MLA_OK;
}

int32_t mlacheck_case_get_info(const mlacheck_case *c, mlacheck_case_info *out)
{
    if (!c || !out) return mla_errorf(MLA_ERR_INVALID, "mlacheck_case_get_info: NULL argument");
    mla_status st = capi_size_ok("mlacheck_case_get_info", out->struct_size, sizeof *out);
    if (st) return st;
    info_fill(&c->c, &c->in, out);
    return MLA_OK;
}

void mlacheck_case_free(mlacheck_case *c)
{
    if (!c) return;
    opcheck_inputs_free(&c->in);
    for (int i = 0; i < CAPI_NF32; i++) free(c->bf16[i]);
    free(c->kv_f32);
    mlacheck_ops_close(c->suite); /* the case's hold on it */
    free(c);
}

static void arr_set(mlacheck_array *a, int dtype, const void *data, int ndim, int64_t d0, int64_t d1, int64_t d2)
{
    static const int64_t esize[] = {4, 2, 1, 4};
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->dtype = dtype;
    a->ndim = ndim;
    int64_t d[3] = {d0, d1, d2}, n = 1;
    for (int k = 0; k < ndim; k++) {
        a->shape[k] = d[k];
        n *= d[k];
    }
    a->nbytes = n * esize[dtype];
    a->data = data;
}

/* The bf16 bits of an f32 array of bf16-representable values (exact). */
static mla_status bf16_of(mlacheck_case *c, int which, const float *src, int64_t n, uint16_t **out)
{
    if (!c->bf16[which]) {
        uint16_t *b = malloc((size_t)(n + 1) * sizeof *b);
        if (!b) return mla_errorf(MLA_ERR_NOMEM, "case %s: bf16 copy of %lld values", c->c.name, (long long)n);
        for (int64_t i = 0; i < n; i++) b[i] = mla_f32_to_bf16(src[i]);
        c->bf16[which] = b;
    }
    *out = c->bf16[which];
    return MLA_OK;
}

static mla_status kv_decoded(mlacheck_case *c, float **out)
{
    const op_inputs *in = &c->in;
    int L = in->C + in->R;
    int64_t rows = (int64_t)in->kv.num_blocks * in->kv.page_size;
    if (!c->kv_f32) {
        float *f = malloc((size_t)(rows * L + 1) * sizeof *f);
        if (!f) return mla_errorf(MLA_ERR_NOMEM, "case %s: decoded cache of %lld rows", c->c.name, (long long)rows);
        mla_kv_codec k = {.format = in->kv.format, .fp8_fnuz = in->kv.fp8_fnuz, .c = in->C, .r = in->R,
                          .k_scale = in->kv.k_scale};
        kv_rows_f32(k, in->pool, rows, f);
        c->kv_f32 = f;
    }
    *out = c->kv_f32;
    return MLA_OK;
}

int32_t mlacheck_case_array(mlacheck_case *c, const char *name, mlacheck_array *a)
{
    if (!c || !name || !a) return mla_errorf(MLA_ERR_INVALID, "mlacheck_case_array: NULL argument");
    mla_status st = capi_size_ok("mlacheck_case_array", a->struct_size, sizeof *a);
    if (st) return st;
    const op_inputs *in = &c->in;
    int mha = c->c.kind == MLA_OP_MHA, Dq = mha ? in->P + in->R : in->C + in->R;
    int64_t T = in->T, H = in->H, C = in->C, R = in->R, W = in->P + in->V;
    int64_t nb = in->kv.num_blocks, pg = in->kv.page_size;
    size_t len = strlen(name);
    int bf = len > 5 && !strcmp(name + len - 5, "_bf16");
    char base[32];
    snprintf(base, sizeof base, "%.*s", (int)(bf ? len - 5 : len), name);
    const float *src = NULL;
    int which = -1;
    int64_t d0 = 0, d1 = 0, d2 = 0;
    int nd = 0;
    if (!strcmp(base, "q")) { src = in->q; which = CAPI_Q; nd = 3; d0 = T; d1 = H; d2 = Dq; }
    else if (mha && !strcmp(base, "kv_c")) { src = in->kv_c; which = CAPI_KV_C; nd = 2; d0 = T; d1 = C; }
    else if (mha && !strcmp(base, "k_pe")) { src = in->k_pe; which = CAPI_K_PE; nd = 2; d0 = T; d1 = R; }
    else if (mha && !strcmp(base, "w_kv_b")) { src = in->w_kv_b; which = CAPI_W; nd = 2; d0 = H * W; d1 = C; }
    if (src) {
        if (!bf) {
            arr_set(a, MLACHECK_DT_F32, src, nd, d0, d1, d2);
            return MLA_OK;
        }
        uint16_t *b = NULL;
        if ((st = bf16_of(c, which, src, nd == 3 ? d0 * d1 * d2 : d0 * d1, &b))) return st;
        arr_set(a, MLACHECK_DT_BF16, b, nd, d0, d1, d2);
        return MLA_OK;
    }
    if (!bf && !strcmp(name, "kv_cache")) {
        switch (in->kv.format) {
        case MLA_KV_BF16: arr_set(a, MLACHECK_DT_BF16, in->pool, 3, nb, pg, C + R); break;
        case MLA_KV_FP8: arr_set(a, MLACHECK_DT_U8, in->pool, 3, nb, pg, C + R); break;
        case MLA_KV_F32: arr_set(a, MLACHECK_DT_F32, in->pool, 3, nb, pg, C + R); break;
        default: arr_set(a, MLACHECK_DT_U8, in->pool, 3, nb, pg, (int64_t)mla_kv_row_bytes(in->kv.format, C, R));
        }
        return MLA_OK;
    }
    if (!bf && !strcmp(name, "kv_cache_f32")) {
        float *f = NULL;
        if ((st = kv_decoded(c, &f))) return st;
        arr_set(a, MLACHECK_DT_F32, f, 3, nb, pg, C + R);
        return MLA_OK;
    }
    if (!bf && !strcmp(name, "block_table")) {
        arr_set(a, MLACHECK_DT_I32, in->table, 2, in->B, in->kv.max_blocks_per_seq, 0);
        return MLA_OK;
    }
    if (!bf && !strcmp(name, "seq_lens")) {
        arr_set(a, MLACHECK_DT_I32, in->seq_lens, 1, in->B, 0, 0);
        return MLA_OK;
    }
    if (!bf && !strcmp(name, "cu_seqlens_q")) {
        arr_set(a, MLACHECK_DT_I32, in->cu, 1, in->B + 1, 0, 0);
        return MLA_OK;
    }
    return mla_errorf(MLA_ERR_NOT_FOUND, "case %s: no array '%s': expected q, %skv_cache, kv_cache_f32, block_table, "
                      "seq_lens, cu_seqlens_q (q%s with _bf16 for bf16 bits)", c->c.name, name,
                      mha ? "kv_c, k_pe, w_kv_b, " : "", mha ? ", kv_c, k_pe, w_kv_b" : "");
}
