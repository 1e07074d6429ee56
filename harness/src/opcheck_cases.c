/* opcheck_cases.c: the built-in operator suites as data. ops-smoke is a hand-picked cover (every
 * model, head count 128/64/32/16, page size 1/16/64/128, cache format, multi-token decode, context,
 * zero-length sequences, fnuz) that runs in seconds; ops-full is the cross product
 * model x heads x page x format x {mqa, mha} with batch patterns and magnitudes rotating. */
#include "mlacheck/opcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int batch; int32_t s_q[MLA_OPCASE_MAX_BATCH], seq_len[MLA_OPCASE_MAX_BATCH]; } op_pattern;

/* decode: s_q new tokens (the last s_q of seq_len keys); {0, 0} is a zero-length sequence */
static const op_pattern mqa_patterns[] = {
    {4, {1, 1, 0, 1}, {1, 130, 0, 513}},
    {3, {2, 1, 0}, {40, 1024, 0}},
    {3, {4, 1, 1}, {77, 257, 64}},
};
/* prefill: s_q new tokens after seq_len - s_q cached ones */
static const op_pattern mha_patterns[] = {
    {3, {17, 8, 0}, {17, 108, 0}},
    {3, {5, 33, 1}, {69, 333, 1}},
    {3, {0, 64, 16}, {0, 64, 216}},
};

static const char *model_short(const char *m)
{
    return !strcmp(m, "deepseek-v3") ? "v3" : !strcmp(m, "kimi-k2") ? "k2" : "v2lite";
}

static void case_fill(mla_opcase *c, const char *model, mla_op_kind kind, int H, int page, mla_kv_format f,
                      int fnuz, int realistic, int pattern, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    snprintf(c->model, sizeof c->model, "%s", model);
    c->kind = kind;
    c->num_heads = H;
    c->page_size = page;
    c->kv_format = f;
    c->fp8_fnuz = fnuz;
    c->k_scale = realistic ? 0.0625f : 1.0f;
    const op_pattern *p = kind == MLA_OP_MQA ? &mqa_patterns[pattern] : &mha_patterns[pattern];
    c->batch = p->batch;
    memcpy(c->s_q, p->s_q, sizeof c->s_q);
    memcpy(c->seq_len, p->seq_len, sizeof c->seq_len);
    c->realistic = realistic;
    c->seed = seed;
    snprintf(c->name, sizeof c->name, "%s-%s-h%d-p%d-%s%s-%s-b%c", kind == MLA_OP_MQA ? "mqa" : "mha",
             model_short(model), H, page, mla_opcheck_profile_name(f), fnuz ? "-fnuz" : "",
             realistic ? "real" : "small", 'a' + pattern);
}

typedef struct {
    const char *model;
    mla_op_kind kind;
    int H, page;
    mla_kv_format f;
    int fnuz, realistic, pattern;
} op_smoke;

static const op_smoke smoke[] = {
    {"deepseek-v3", MLA_OP_MQA, 128, 64, MLA_KV_BF16, 0, 0, 0},
    {"deepseek-v3", MLA_OP_MQA, 128, 1, MLA_KV_FP8, 0, 1, 2},
    {"kimi-k2", MLA_OP_MQA, 64, 16, MLA_KV_FP8_DS, 0, 0, 1},
    {"deepseek-v2-lite", MLA_OP_MQA, 16, 128, MLA_KV_BF16, 0, 1, 1},
    {"deepseek-v3", MLA_OP_MQA, 32, 16, MLA_KV_FP8, 1, 0, 0},
    {"kimi-k2", MLA_OP_MQA, 16, 64, MLA_KV_F32, 0, 1, 2},
    {"deepseek-v2-lite", MLA_OP_MHA, 16, 64, MLA_KV_BF16, 0, 0, 0},
    {"deepseek-v3", MLA_OP_MHA, 128, 16, MLA_KV_FP8, 0, 1, 0},
    {"kimi-k2", MLA_OP_MHA, 32, 128, MLA_KV_FP8_DS, 0, 0, 1},
    {"deepseek-v3", MLA_OP_MHA, 16, 1, MLA_KV_BF16, 0, 1, 2},
};

static const struct { const char *model; int heads[4], nh; } full_models[] = {
    {"deepseek-v3", {128, 64, 32, 16}, 4},
    {"kimi-k2", {64, 32, 16}, 3},
    {"deepseek-v2-lite", {16}, 1},
};
static const int full_pages[] = {1, 16, 64, 128};
static const mla_kv_format full_formats[] = {MLA_KV_BF16, MLA_KV_FP8, MLA_KV_FP8_DS};

static const char *const suite_names[] = {"ops-smoke", "ops-full", NULL};

const char *const *mla_opcheck_suites(void) { return suite_names; }

mla_status mla_opcheck_cases(const char *suite, mla_opcase **out, int *n)
{
    *out = NULL;
    *n = 0;
    int full;
    if (suite && !strcmp(suite, "ops-smoke")) full = 0;
    else if (suite && !strcmp(suite, "ops-full")) full = 1;
    else return mla_errorf(MLA_ERR_NOT_FOUND, "operator suite '%s': expected ops-smoke or ops-full",
                           suite ? suite : "(null)");
    int cap = full ? 256 : (int)(sizeof smoke / sizeof smoke[0]);
    mla_opcase *v = calloc((size_t)cap, sizeof *v);
    if (!v) return mla_errorf(MLA_ERR_NOMEM, "operator suite %s", suite);
    int k = 0;
    if (!full) {
        for (; k < cap; k++) {
            const op_smoke *s = &smoke[k];
            case_fill(&v[k], s->model, s->kind, s->H, s->page, s->f, s->fnuz, s->realistic, s->pattern,
                      0x5EED0000u + (uint64_t)k);
        }
    } else {
        for (size_t m = 0; m < sizeof full_models / sizeof full_models[0]; m++)
            for (int h = 0; h < full_models[m].nh; h++)
                for (size_t p = 0; p < sizeof full_pages / sizeof full_pages[0]; p++)
                    for (size_t f = 0; f < sizeof full_formats / sizeof full_formats[0]; f++)
                        for (int kind = 0; kind < 2; kind++, k++)
                            case_fill(&v[k], full_models[m].model, (mla_op_kind)kind, full_models[m].heads[h],
                                      full_pages[p], full_formats[f], 0, (k / 3) % 2, k % 3,
                                      0xF011000u + (uint64_t)k);
        /* e4m3fnuz (MI300) codes, one per form */
        case_fill(&v[k], "deepseek-v3", MLA_OP_MQA, 64, 64, MLA_KV_FP8, 1, 1, 1, 0xF011000u + (uint64_t)k);
        k++;
        case_fill(&v[k], "deepseek-v3", MLA_OP_MHA, 16, 16, MLA_KV_FP8, 1, 0, 1, 0xF011000u + (uint64_t)k);
        k++;
    }
    *out = v;
    *n = k;
    return MLA_OK;
}
