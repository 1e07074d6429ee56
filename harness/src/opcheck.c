/* opcheck.c: operator-level checks (opcheck.h): golden inputs from a case's seed, the candidate and
 * the f64 reference operator on the same inputs, compare out and lse, suites. */
#include "mlacheck/opcheck.h"
#include "opcheck_internal.h"
#include "mlacheck/engine_registry.h"
#include "mla/dtype.h"
#include "mla_model/model.h"
#include "mla/quant.h"
#include "mla_core/rng.h"
#include "mla_ref/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OP_GUARD OPCHECK_GUARD
#define OP_GUARD_BITS 0x7FA5A5A5u /* a NaN payload no kernel computes */

/* ---- random inputs --------------------------------------------------------------------------- */

/* N(0,1) from the one PRNG (mla/rng.h): both uniforms at the grid midpoints, only the cos value
 * kept, as the op suites' inputs always have been drawn (the cases' data depend on it). */
static double op_normal(uint64_t *s)
{
    double u = mla_rng_uniform_mid(s), v = mla_rng_uniform_mid(s);
    return mla_box_muller(u, v, NULL);
}

/* A value as a bf16 kernel would receive it: std * N(0,1), clamped to [-1, 1] in the FlashMLA
 * style when small, rounded to bf16. */
static float op_value(uint64_t *s, double std, int clamp)
{
    double x = std * op_normal(s);
    if (clamp) x = x < -1.0 ? -1.0 : x > 1.0 ? 1.0 : x;
    return (float)mla_round_bf16(x);
}

void opcheck_inputs_free(op_inputs *in)
{
    free(in->q); free(in->kv_c); free(in->k_pe); free(in->w_kv_b); free(in->pool); free(in->table);
    memset(in, 0, sizeof *in);
}

/* The NaN pattern of one row in format f (every element a NaN, every ds scale too). */
static void row_nan(mla_kv_format f, int fnuz, int C, int R, uint8_t *row)
{
    switch (f) {
    case MLA_KV_BF16:
        for (int i = 0; i < C + R; i++) { row[2 * i] = 0xC0; row[2 * i + 1] = 0x7F; }
        break;
    case MLA_KV_FP8: memset(row, fnuz ? 0x80 : 0x7F, (size_t)(C + R)); break;
    case MLA_KV_FP8_DS: {
        int tiles = (C + 127) / 128;
        float nan = NAN;
        memset(row, fnuz ? 0x80 : 0x7F, (size_t)C);
        for (int t = 0; t < tiles; t++) memcpy(row + C + 4 * t, &nan, 4);
        for (int i = 0; i < R; i++) { row[C + 4 * tiles + 2 * i] = 0xC0; row[C + 4 * tiles + 2 * i + 1] = 0x7F; }
        break;
    }
    case MLA_KV_F32: {
        float nan = NAN;
        for (int i = 0; i < C + R; i++) memcpy(row + 4 * i, &nan, 4);
        break;
    }
    default: break;
    }
}

static void row_write(const mla_opcase *c, int C, int R, const float *lat, const float *pe, uint8_t *row)
{
    mla_dtype t8 = c->fp8_fnuz ? MLA_E4M3FNUZ : MLA_E4M3FN;
    switch (c->kv_format) {
    case MLA_KV_BF16:
        for (int i = 0; i < C + R; i++) {
            uint16_t u = mla_f32_to_bf16(i < C ? lat[i] : pe[i - C]);
            memcpy(row + 2 * i, &u, 2);
        }
        break;
    case MLA_KV_FP8:
        for (int i = 0; i < C + R; i++) row[i] = mla_fp8_encode(t8, (i < C ? lat[i] : pe[i - C]) / c->k_scale);
        break;
    case MLA_KV_FP8_DS: mla_ds_row_pack_n(C, R, lat, pe, MLA_DS_SCALE_POW2, row); break;
    case MLA_KV_F32:
        memcpy(row, lat, (size_t)C * 4);
        memcpy(row + 4 * C, pe, (size_t)R * 4);
        break;
    default: break;
    }
}

mla_status opcheck_inputs_make(const mla_opcase *c, op_inputs *in)
{
    memset(in, 0, sizeof *in);
    mla_config cfg;
    if (mla_config_preset(c->model, &cfg) != MLA_OK) { /* DeepSeek-V3's attention dims */
        memset(&cfg, 0, sizeof cfg);
        cfg.kv_lora_rank = 512; cfg.qk_rope_head_dim = 64; cfg.qk_nope_head_dim = 128; cfg.v_head_dim = 128;
    }
    in->C = cfg.kv_lora_rank; in->R = cfg.qk_rope_head_dim; in->P = cfg.qk_nope_head_dim;
    in->V = cfg.v_head_dim; in->H = c->num_heads; in->B = c->batch;
    in->scale = cfg.num_attention_heads ? mla_config_softmax_scale(&cfg) : 1.0 / sqrt(192.0);
    if (c->batch < 0 || c->batch > MLA_OPCASE_MAX_BATCH || c->num_heads < 1 || c->page_size < 1)
        return mla_errorf(MLA_ERR_INVALID, "opcheck case %s: batch %d / heads %d / page %d out of range",
                          c->name, c->batch, c->num_heads, c->page_size);
    int C = in->C, R = in->R, L = C + R, H = in->H, page = c->page_size;
    uint64_t rng = c->seed * 0x2545F4914F6CDD1Dull + 17;
    int clamp = !c->realistic;
    double sd = c->realistic ? 1.0 : 0.1;

    /* pool: every sequence's blocks + spare NaN blocks, in a random order */
    int max_nb = 0, used = 0;
    in->cu[0] = 0;
    for (int b = 0; b < in->B; b++) {
        if (c->s_q[b] < 0 || c->seq_len[b] < c->s_q[b])
            return mla_errorf(MLA_ERR_INVALID, "opcheck case %s: sequence %d: s_q %d, seq_len %d", c->name, b,
                              c->s_q[b], c->seq_len[b]);
        in->cu[b + 1] = in->cu[b] + c->s_q[b];
        in->seq_lens[b] = c->seq_len[b];
        int nb = (c->seq_len[b] + page - 1) / page;
        used += nb;
        max_nb = nb > max_nb ? nb : max_nb;
    }
    in->T = in->cu[in->B];
    int spare = 2 + used / 8, nblocks = used + spare, mbps = max_nb + 1;
    size_t rb = mla_kv_row_bytes(c->kv_format, C, R);
    int T = in->T, Dq = c->kind == MLA_OP_MQA ? L : in->P + R, W = in->P + in->V;
    in->pool = malloc((size_t)nblocks * (size_t)page * rb);
    in->table = malloc((size_t)(in->B ? in->B : 1) * (size_t)mbps * sizeof(int32_t));
    int32_t *perm = malloc((size_t)nblocks * sizeof(int32_t));
    float *lat = malloc((size_t)L * sizeof(float));
    in->q = malloc((size_t)T * H * Dq * sizeof(float) + 1);
    if (c->kind == MLA_OP_MHA) {
        in->kv_c = malloc((size_t)T * C * sizeof(float) + 1);
        in->k_pe = malloc((size_t)T * R * sizeof(float) + 1);
        in->w_kv_b = malloc((size_t)H * W * C * sizeof(float));
    }
    if (!in->pool || !in->table || !perm || !lat || !in->q ||
        (c->kind == MLA_OP_MHA && (!in->kv_c || !in->k_pe || !in->w_kv_b))) {
        free(perm); free(lat);
        opcheck_inputs_free(in);
        return mla_errorf(MLA_ERR_NOMEM, "opcheck case %s: inputs", c->name);
    }
    for (int64_t r = 0; r < (int64_t)nblocks * page; r++) row_nan(c->kv_format, c->fp8_fnuz, C, R, in->pool + r * rb);
    for (int i = 0; i < nblocks; i++) perm[i] = i;
    for (int i = nblocks - 1; i > 0; i--) {
        int j = (int)mla_rng_below(&rng, (uint64_t)(i + 1));
        int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    /* latent rows: kv_c ~ RMSNorm output (unit scale) when realistic; k_pe likewise */
    for (int b = 0, next = 0; b < in->B; b++) {
        int nb = (c->seq_len[b] + page - 1) / page;
        for (int i = 0; i < mbps; i++) /* unused entries point at spare (NaN) blocks */
            in->table[b * mbps + i] =
                i < nb ? perm[next + i] : perm[used + (int)mla_rng_below(&rng, (uint64_t)spare)];
        next += nb;
        int ctx = c->seq_len[b] - c->s_q[b];
        for (int j = 0; j < c->seq_len[b]; j++) {
            for (int k = 0; k < L; k++) lat[k] = op_value(&rng, sd, clamp);
            int32_t pb = in->table[b * mbps + j / page];
            row_write(c, C, R, lat, lat + C, in->pool + ((int64_t)pb * page + j % page) * rb);
            if (c->kind == MLA_OP_MHA && j >= ctx) { /* the new tokens, unquantized */
                int t = in->cu[b] + (j - ctx);
                memcpy(in->kv_c + (int64_t)t * C, lat, (size_t)C * sizeof(float));
                memcpy(in->k_pe + (int64_t)t * R, lat + C, (size_t)R * sizeof(float));
            }
        }
    }
    /* queries: the absorbed q_nope.W_UK has std ~ sqrt(P/C) with W ~ N(0,1)/sqrt(C) */
    for (int64_t i = 0; i < (int64_t)T * H; i++)
        for (int k = 0; k < Dq; k++) {
            int nope = c->kind == MLA_OP_MQA ? k < C : k < in->P;
            double s = c->realistic && nope && c->kind == MLA_OP_MQA ? sqrt((double)in->P / C) : sd;
            in->q[i * Dq + k] = op_value(&rng, s, clamp);
        }
    if (c->kind == MLA_OP_MHA) { /* W_kvb: uniform with the std of N(0,1)/sqrt(C), cheaper for 16M values */
        double a = sqrt(3.0 / C);
        for (int64_t i = 0; i < (int64_t)H * W * C; i++)
            in->w_kv_b[i] = (float)mla_round_bf16(a * (2.0 * mla_rng_uniform_mid(&rng) - 1.0));
    }
    free(perm);
    free(lat);
    in->kv = (mla_attn_cache){.format = c->kv_format, .fp8_fnuz = c->fp8_fnuz, .data = in->pool,
                              .num_blocks = nblocks, .page_size = page, .k_scale = c->k_scale,
                              .block_table = in->table, .max_blocks_per_seq = mbps};
    return MLA_OK;
}

/* ---- one case -------------------------------------------------------------------------------- */

const char *mla_opcase_verdict_name(mla_opcase_verdict v)
{
    static const char *const n[] = {"PASS", "FAIL", "SKIP", "ERROR"};
    return (unsigned)v < 4 ? n[v] : "?";
}

const char *mla_opcheck_profile_name(mla_kv_format f)
{
    switch (f) {
    case MLA_KV_BF16: return "bf16";
    case MLA_KV_FP8: return "fp8kv";
    case MLA_KV_FP8_DS: return "fp8ds";
    case MLA_KV_F32: return "f32";
    default: return "?";
    }
}

void mla_opcheck_opts_default(mla_opcheck_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kv_format = -1;
}

/* The features a case asks of a kernel, in the order supports() is asked: the one table behind
 * opcheck_declined() and the export's feature list. */
typedef struct { mla_attn_feature f; int64_t v; const char *name; } op_feature;

static int feature_list(const mla_opcase *c, const op_inputs *in, op_feature q[OPCHECK_MAX_FEATURES])
{
    int mqa = c->kind == MLA_OP_MQA, multi = 0, ctx = 0, n = 0;
    for (int b = 0; b < c->batch; b++) {
        multi |= c->s_q[b] > 1;
        ctx |= c->s_q[b] > 0 && c->seq_len[b] > c->s_q[b];
    }
    q[n++] = (op_feature){mqa ? MLA_ATTN_FEAT_MQA : MLA_ATTN_FEAT_MHA, 0, mqa ? "mqa" : "mha"};
    q[n++] = (op_feature){MLA_ATTN_FEAT_KV_FORMAT, c->kv_format, "kv format"};
    if (c->fp8_fnuz) q[n++] = (op_feature){MLA_ATTN_FEAT_FP8_FNUZ, 1, "e4m3fnuz"};
    q[n++] = (op_feature){MLA_ATTN_FEAT_PAGE_SIZE, c->page_size, "page size"};
    q[n++] = (op_feature){MLA_ATTN_FEAT_NUM_HEADS, c->num_heads, "num heads"};
    q[n++] = (op_feature){MLA_ATTN_FEAT_KV_LORA_RANK, in->C, "kv_lora_rank"};
    q[n++] = (op_feature){MLA_ATTN_FEAT_ROPE_DIM, in->R, "rope dim"};
    if (mqa && multi) q[n++] = (op_feature){MLA_ATTN_FEAT_MULTI_TOKEN_DECODE, 1, "multi-token decode"};
    if (!mqa && ctx) q[n++] = (op_feature){MLA_ATTN_FEAT_MHA_CONTEXT, 1, "mha over cached context"};
    return n;
}

/* How a declined feature is named: "kv format bf16", "page size 64", "e4m3fnuz". */
static void feature_name(const mla_opcase *c, const op_feature *q, char *buf, size_t n)
{
    if (q->f == MLA_ATTN_FEAT_KV_FORMAT)
        snprintf(buf, n, "kv format %s", mla_opcheck_profile_name(c->kv_format));
    else if (q->v > 1)
        snprintf(buf, n, "%s %lld", q->name, (long long)q->v);
    else
        snprintf(buf, n, "%s", q->name);
}

int opcheck_features(const mla_opcase *c, const op_inputs *in, char names[][48])
{
    op_feature q[OPCHECK_MAX_FEATURES];
    int n = feature_list(c, in, q);
    for (int i = 0; i < n; i++) feature_name(c, &q[i], names[i], 48);
    return n;
}

const char *opcheck_declined(const mla_opcase *c, const op_inputs *in, const mla_attn_ops *cand)
{
    static _Thread_local char buf[96];
    op_feature q[OPCHECK_MAX_FEATURES];
    int n = feature_list(c, in, q);
    int mqa = c->kind == MLA_OP_MQA;
    if (mqa ? !cand->mqa || !cand->supports(MLA_ATTN_FEAT_MQA, 0) : !cand->mha || !cand->supports(MLA_ATTN_FEAT_MHA, 0))
        return mqa ? "mqa" : "mha";
    for (int i = 1; i < n; i++)
        if (!cand->supports(q[i].f, q[i].v)) {
            feature_name(c, &q[i], buf, sizeof buf);
            return buf;
        }
    return NULL;
}

/* Runs one operator on in, into fresh out/lse with NaN-filled payload and guard words. */
mla_status opcheck_call(const mla_opcase *c, const op_inputs *in, const mla_attn_ops *ops, float *out,
                          float *lse)
{
    if (c->kind == MLA_OP_MQA) {
        mla_mqa_args a = {.batch = in->B, .num_heads = in->H, .kv_lora_rank = in->C, .rope_dim = in->R,
                          .total_q = in->T, .cu_seqlens_q = in->cu, .seq_lens = in->seq_lens,
                          .softmax_scale = in->scale, .q = in->q, .kv = in->kv, .out = out, .lse = lse};
        return ops->mqa(&a);
    }
    mla_mha_args a = {.batch = in->B, .num_heads = in->H, .kv_lora_rank = in->C, .rope_dim = in->R,
                      .nope_dim = in->P, .v_dim = in->V, .total_q = in->T, .cu_seqlens_q = in->cu,
                      .seq_lens = in->seq_lens, .softmax_scale = in->scale, .q = in->q, .kv_c = in->kv_c,
                      .k_pe = in->k_pe, .w_kv_b = in->w_kv_b, .kv = in->kv, .out = out, .lse = lse};
    return ops->mha(&a);
}

float *opcheck_buf_new(int64_t n)
{
    float *p = malloc((size_t)(n + OP_GUARD) * sizeof(float));
    if (!p) return NULL;
    uint32_t g = OP_GUARD_BITS;
    float nan = NAN;
    for (int64_t i = 0; i < n; i++) memcpy(p + i, &nan, 4); /* unwritten outputs stay NaN */
    for (int64_t i = n; i < n + OP_GUARD; i++) memcpy(p + i, &g, 4);
    return p;
}

static int guard_ok(const float *p, int64_t n)
{
    for (int64_t i = n; i < n + OP_GUARD; i++) {
        uint32_t u;
        memcpy(&u, p + i, 4);
        if (u != OP_GUARD_BITS) return 0;
    }
    return 1;
}

void opcheck_limits(const mla_opcheck_opts *o, const char *tap, const char *profile, int is_lse,
                    mla_cmp_limits *lim)
{
    memset(lim, 0, sizeof *lim);
    const mla_rule_limits *r = o && o->rules ? mla_rules_match(o->rules, tap, profile, MLA_OPCHECK_CHECK) : NULL;
    if (r) {
        *lim = r->lim;
        return;
    }
    /* FlashMLA check_is_allclose (tests/test_flash_mla_dense_decoding.py) */
    if (is_lse) {
        lim->max_abs = 1e-6;
        lim->max_rel = 8.01 / 65536;
    } else {
        lim->max_abs = 8e-4;
        lim->max_rel = 2.01 / 128;
        lim->cos_diff = 5e-6;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The judging step (opcheck_internal.h), shared by `mlacheck ops` and `mlacheck ops --judge`. */
mla_status opcheck_judge(const mla_opcase *c, const op_inputs *in, const float *co, const float *cl,
                         const mla_opcheck_opts *o, mla_opcase_result *r)
{
    int D = c->kind == MLA_OP_MQA ? in->C : in->V;
    int64_t n_out = (int64_t)in->T * in->H * D, n_lse = (int64_t)in->T * in->H;
    float *ro = opcheck_buf_new(n_out), *rl = opcheck_buf_new(n_lse);
    mla_tensor *ta = NULL, *tb = NULL, *la = NULL, *lb = NULL;
    mla_status st = MLA_OK;
    if (!ro || !rl) {
        st = mla_errorf(MLA_ERR_NOMEM, "opcheck case %s: reference outputs", c->name);
        goto done;
    }
    if ((st = opcheck_call(c, in, mla_ref_attn_ops(), ro, rl))) goto done;
    const char *tap = c->kind == MLA_OP_MQA ? "mqa_out" : "mha_out";
    const char *prof = mla_opcheck_profile_name(c->kv_format);
    int64_t so[3] = {in->T, in->H, D}, sl[2] = {in->T, in->H};
    /* the views only read the candidate's arrays; mla_tensor_view takes a mutable pointer */
    if ((st = mla_tensor_view(&ta, MLA_F32, 3, so, ro, tap)) ||
        (st = mla_tensor_view(&tb, MLA_F32, 3, so, (float *)co, tap)) ||
        (st = mla_tensor_view(&la, MLA_F32, 2, sl, rl, "lse")) ||
        (st = mla_tensor_view(&lb, MLA_F32, 2, sl, (float *)cl, "lse")))
        goto done;
    mla_cmp_limits lo, ll;
    opcheck_limits(o, tap, prof, 0, &lo);
    opcheck_limits(o, "lse", prof, 1, &ll);
    if ((st = mla_cmp_tensor(ta, tb, &lo, &r->out)) || (st = mla_cmp_tensor(la, lb, &ll, &r->lse))) goto done;
    r->verdict = r->out.pass && r->lse.pass ? MLA_OPCASE_PASS : MLA_OPCASE_FAIL;
    if (!r->out.pass)
        snprintf(r->why, sizeof r->why, "%s: %.150s (worst [%lld,%lld,%lld] ref %.6g cand %.6g)", tap, r->out.why,
                 (long long)r->out.worst_coord[0], (long long)r->out.worst_coord[1],
                 (long long)r->out.worst_coord[2], r->out.worst_ref, r->out.worst_cand);
    else if (!r->lse.pass)
        snprintf(r->why, sizeof r->why, "lse: %.150s (worst [%lld,%lld] ref %.9g cand %.9g)", r->lse.why,
                 (long long)r->lse.worst_coord[0], (long long)r->lse.worst_coord[1], r->lse.worst_ref,
                 r->lse.worst_cand);
done:
    mla_tensor_free(ta); mla_tensor_free(tb); mla_tensor_free(la); mla_tensor_free(lb);
    free(ro); free(rl);
    return st;
}

void opcheck_sizes(const mla_opcase *c, const op_inputs *in, int64_t *n_out, int64_t *n_lse)
{
    int D = c->kind == MLA_OP_MQA ? in->C : in->V;
    *n_out = (int64_t)in->T * in->H * D;
    *n_lse = (int64_t)in->T * in->H;
}

/* The candidate's step in this process: its declines, then its call (opcheck_cand_fn). */
static mla_status cand_inproc(void *u, const mla_opcase *c, const op_inputs *in, float *co, float *cl,
                              mla_opcase_result *r)
{
    const mla_attn_ops *cand = u;
    const char *name = cand->name ? cand->name : "candidate";
    const char *no = opcheck_declined(c, in, cand);
    if (no) {
        r->verdict = MLA_OPCASE_SKIP;
        snprintf(r->why, sizeof r->why, "%s declines %s", name, no);
        return MLA_OK;
    }
    mla_clear_error();
    mla_status cs = opcheck_call(c, in, cand, co, cl);
    if (cs) {
        r->verdict = MLA_OPCASE_ERROR;
        r->status = cs;
        snprintf(r->why, sizeof r->why, "%s returned %s: %s", name, mla_strerror(cs), mla_last_error());
    }
    return MLA_OK;
}

mla_status opcheck_run_case_with(const mla_opcase *c, opcheck_cand_fn cand, void *u, const mla_opcheck_opts *o,
                                 mla_opcase_result *r)
{
    memset(r, 0, sizeof *r);
    op_inputs in;
    mla_status st = opcheck_inputs_make(c, &in);
    if (st) return st;
    int64_t n_out, n_lse;
    opcheck_sizes(c, &in, &n_out, &n_lse);
    float *co = opcheck_buf_new(n_out), *cl = opcheck_buf_new(n_lse);
    if (!co || !cl) {
        st = mla_errorf(MLA_ERR_NOMEM, "opcheck case %s: outputs", c->name);
        goto done;
    }
    double t0 = now_s();
    if ((st = cand(u, c, &in, co, cl, r)) || r->verdict != MLA_OPCASE_PASS) goto timed;
    if (!guard_ok(co, n_out) || !guard_ok(cl, n_lse)) {
        r->verdict = MLA_OPCASE_FAIL;
        snprintf(r->why, sizeof r->why, "wrote past the end of %s", guard_ok(co, n_out) ? "lse" : "out");
        goto timed;
    }
    st = opcheck_judge(c, &in, co, cl, o, r);
timed:
    r->seconds = now_s() - t0; /* an error's too: a hang shows as the time limit it ran into */
done:
    free(co); free(cl);
    opcheck_inputs_free(&in);
    return st;
}

mla_status mla_opcheck_run_case(const mla_opcase *c, const mla_attn_ops *cand, const mla_opcheck_opts *o,
                                mla_opcase_result *r)
{
    memset(r, 0, sizeof *r);
    if (!c || !cand || !cand->supports) return mla_errorf(MLA_ERR_INVALID, "opcheck: case or candidate is NULL");
    return opcheck_run_case_with(c, cand_inproc, (void *)cand, o, r);
}

/* Counts one verdict into the summary (the first FAIL/ERROR and the first SKIP remembered). */
void opcheck_tally(mla_opcheck_summary *s, const mla_opcase *c, const mla_opcase_result *r, char *first_skip,
                   size_t cap)
{
    s->n_cases++;
    switch (r->verdict) {
    case MLA_OPCASE_PASS: s->n_pass++; break;
    case MLA_OPCASE_SKIP:
        s->n_skip++;
        if (!first_skip[0]) snprintf(first_skip, cap, "%.90s: %.220s", c->name, r->why);
        break;
    default:
        r->verdict == MLA_OPCASE_FAIL ? s->n_fail++ : s->n_error++;
        if (r->verdict == MLA_OPCASE_ERROR && !s->first_error_status)
            s->first_error_status = r->status ? r->status : MLA_ERR_DEVICE;
        if (!s->first_fail[0]) {
            snprintf(s->first_fail, sizeof s->first_fail, "%s", c->name);
            snprintf(s->first_why, sizeof s->first_why, "%s", r->why);
        }
    }
}

mla_status opcheck_close(const char *which, const char *cand, const mla_opcheck_opts *o,
                         const mla_opcheck_summary *s, const char *first_skip)
{
    if (s->n_cases == 0)
        return mla_errorf(MLA_ERR_INVALID, "opcheck %s: no case matches the filters (format %d, name '%s')", which,
                          o->kv_format, o->filter ? o->filter : "");
    if (s->n_skip == s->n_cases)
        return mla_errorf(MLA_ERR_UNSUPPORTED, "opcheck %s: %s supports none of the %d cases (first: %s)", which,
                          cand, s->n_cases, first_skip);
    return MLA_OK;
}

mla_status opcheck_run_suite_with(const char *which, opcheck_cand_fn cand, void *u, const char *cand_name,
                                  const mla_opcheck_opts *o, mla_opcheck_summary *s, mla_opcase_result **results)
{
    memset(s, 0, sizeof *s);
    if (results) *results = NULL;
    mla_opcheck_opts def;
    if (!o) {
        mla_opcheck_opts_default(&def);
        o = &def;
    }
    mla_opcase *cases;
    int n;
    mla_status st = mla_opcheck_cases(which, &cases, &n);
    if (st) return st;
    mla_opcase_result *res = calloc((size_t)n + 1, sizeof *res);
    if (!res) {
        free(cases);
        return mla_errorf(MLA_ERR_NOMEM, "opcheck %s: results", which);
    }
    char first_skip[320] = "";
    for (int i = 0; i < n; i++) {
        const mla_opcase *c = &cases[i];
        if (o->kv_format >= 0 && (int)c->kv_format != o->kv_format) continue;
        if (o->filter && !strstr(c->name, o->filter)) continue;
        mla_opcase_result *r = &res[s->n_cases];
        if ((st = opcheck_run_case_with(c, cand, u, o, r))) break;
        opcheck_tally(s, c, r, first_skip, sizeof first_skip);
        if (o->on_case) o->on_case(o->user, c, r);
    }
    free(cases);
    if (!st) st = opcheck_close(which, cand_name, o, s, first_skip);
    if (results) *results = res;
    else free(res);
    return st;
}

mla_status mla_opcheck_run_suite(const char *which, const mla_attn_ops *cand, const mla_opcheck_opts *o,
                                 mla_opcheck_summary *s, mla_opcase_result **results)
{
    if (!cand || !cand->supports) {
        memset(s, 0, sizeof *s);
        if (results) *results = NULL;
        return mla_errorf(MLA_ERR_INVALID, "opcheck %s: candidate is NULL", which ? which : "");
    }
    return opcheck_run_suite_with(which, cand_inproc, (void *)cand, cand->name ? cand->name : "candidate", o, s,
                                  results);
}

/* ---- loading --------------------------------------------------------------------------------- */

/* The registry opens every engine (engine_registry.h): one rule for the operator's vtable. */
mla_status mla_opcheck_open(const char *engine, const mla_attn_ops **out)
{
    return mla_registry_attn_ops(engine, out);
}
