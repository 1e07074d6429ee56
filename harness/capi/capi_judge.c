/* capi_judge.c: libmlacheck's judge (capi.h mlacheck_case_judge): a candidate's (out, lse) for a
 * case through opcheck_judge, the judging step `mlacheck ops` runs (the f64 reference operator on the
 * same inputs, the suite's rules), and the verdict as a POD struct: the first failing tensor and its
 * first failing metric with its limit, in the order compare.c judges them. */
#include "capi_internal.h"

#include <stdio.h>
#include <string.h>

static void metrics_of(const mla_cmp_result *r, mlacheck_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->n = r->n;
    m->n_mismatch = r->n_mismatch;
    m->nonfinite_mismatch = r->nonfinite_mismatch;
    m->max_abs = r->max_abs;
    m->max_rel = r->max_rel;
    m->nmse = r->nmse;
    m->cos_diff = r->cos_diff;
    m->rel_l2 = r->rel_l2;
    m->headroom = r->headroom;
    for (int k = 0; k < 3; k++) m->worst_coord[k] = r->worst_coord[k];
    m->worst_ref = r->worst_ref;
    m->worst_cand = r->worst_cand;
    m->pass = r->pass;
}

/* The first failing metric of r under lim, in the order compare.c judges them. */
static void first_failing(const mla_cmp_result *r, const mla_cmp_limits *lim, mlacheck_verdict *v)
{
    v->max_abs_limit = lim->max_abs;
    v->max_rel_limit = lim->max_rel;
    if (r->nonfinite_mismatch) {
        snprintf(v->metric, sizeof v->metric, "nonfinite");
        v->value = (double)r->nonfinite_mismatch;
        v->limit = 0;
        return;
    }
    double allowed = lim->mismatch_frac > 0 ? lim->mismatch_frac : 0, frac = r->n ? (double)r->n_mismatch / r->n : 0;
    if ((lim->max_abs > 0 || lim->max_rel > 0) && (allowed > 0 ? frac > allowed : r->n_mismatch > 0)) {
        snprintf(v->metric, sizeof v->metric, "allclose");
        v->value = frac;
        v->limit = allowed;
        return;
    }
    const struct { const char *name; double val, lim; } m[] = {
        {"nmse", r->nmse, lim->nmse}, {"cos_diff", r->cos_diff, lim->cos_diff},
        {"rel_l2", r->rel_l2, lim->rel_l2}, {"ulp_p99", r->ulp_p99, lim->ulp_p99}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i].lim > 0 && !(m[i].val <= m[i].lim)) {
            snprintf(v->metric, sizeof v->metric, "%s", m[i].name);
            v->value = m[i].val;
            v->limit = m[i].lim;
            return;
        }
}

int32_t mlacheck_case_judge(mlacheck_case *c, const float *out, int64_t n_out, const float *lse, int64_t n_lse,
                            mlacheck_verdict *v)
{
    if (!c || !v) return mla_errorf(MLA_ERR_INVALID, "mlacheck_case_judge: NULL case or verdict");
    mla_status st = capi_size_ok("mlacheck_case_judge", v->struct_size, sizeof *v);
    if (st) return st;
    const op_inputs *in = &c->in;
    int mqa = c->c.kind == MLA_OP_MQA, D = mqa ? in->C : in->V;
    const char *tap = mqa ? "mqa_out" : "mha_out";
    int64_t want_out = (int64_t)in->T * in->H * D, want_lse = (int64_t)in->T * in->H;
    if (!out || !lse)
        return mla_errorf(MLA_ERR_INVALID, "case %s: %s is missing: expected float32 [%d, %d%s]", c->c.name,
                          !out ? "out" : "lse", in->T, in->H, !out ? (mqa ? ", C]" : ", V]") : "");
    if (n_out != want_out)
        return mla_errorf(MLA_ERR_SHAPE, "case %s: out has %lld values, expected float32 [%d, %d, %d] = %lld",
                          c->c.name, (long long)n_out, in->T, in->H, D, (long long)want_out);
    if (n_lse != want_lse)
        return mla_errorf(MLA_ERR_SHAPE, "case %s: lse has %lld values, expected float32 [%d, %d] = %lld", c->c.name,
                          (long long)n_lse, in->T, in->H, (long long)want_lse);
    uint32_t size = v->struct_size;
    memset(v, 0, sizeof *v);
    v->struct_size = size;
    mla_opcheck_opts o;
    mla_opcheck_opts_default(&o);
    o.rules = c->rules;
    mla_opcase_result r;
    memset(&r, 0, sizeof r);
    if ((st = opcheck_judge(&c->c, in, out, lse, &o, &r))) return st;
    v->verdict = r.verdict == MLA_OPCASE_PASS ? MLACHECK_PASS : MLACHECK_FAIL;
    metrics_of(&r.out, &v->out);
    metrics_of(&r.lse, &v->lse);
    snprintf(v->why, sizeof v->why, "%s", r.why);
    if (v->verdict == MLACHECK_FAIL) {
        const char *prof = mla_opcheck_profile_name(c->c.kv_format);
        const char *t = !r.out.pass ? tap : "lse";
        const mla_rule_limits *rl = mla_rules_match(c->rules, t, prof, MLA_OPCHECK_CHECK);
        mla_cmp_limits none;
        memset(&none, 0, sizeof none);
        snprintf(v->tensor, sizeof v->tensor, "%s", t);
        first_failing(!r.out.pass ? &r.out : &r.lse, rl ? &rl->lim : &none, v);
        if (!v->metric[0]) snprintf(v->metric, sizeof v->metric, "other"); /* a rule outside this list: see why */
    }
    return MLA_OK;
}
