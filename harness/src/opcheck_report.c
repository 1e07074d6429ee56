/* opcheck_report.c: an operator case as one check of a results folder (report.h), so `mlacheck ops`
 * and `mlacheck ops --judge` leave the same summary.json / summary.md / junit.xml / metrics.tsv as
 * `mlacheck run`: check "op", profile = the cache format's profile, path = mqa | mha, one metric row
 * per compared tensor (the output, then lse). */
#include "opcheck_internal.h"

#include "mlacheck/report.h"

#include <math.h>
#include <string.h>

/* The metric that set a tensor's headroom (the report's "worst" column): the largest of the
 * whole-tensor metrics over their limits, or the element check (named max_rel, the metric it
 * reports, when that limit is set) when it is the larger. */
static const char *worst_metric(const mla_cmp_result *m, const mla_cmp_limits *lim)
{
    const char *elem = lim->max_rel > 0 ? "max_rel" : lim->max_abs > 0 ? "max_abs" : NULL, *name = NULL;
    double best = -1;
    const struct { const char *n; double v, l; } t[] = {{"nmse_db", m->nmse, lim->nmse},
                                                       {"cos_diff", m->cos_diff, lim->cos_diff},
                                                       {"rel_l2", m->rel_l2, lim->rel_l2},
                                                       {"ulp_p99", m->ulp_p99, lim->ulp_p99}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        double h = t[i].v / t[i].l;
        if (!(t[i].l > 0)) continue;
        if (isnan(h)) h = INFINITY;
        if (h > best) {
            best = h;
            name = t[i].n;
        }
    }
    if (elem && (!name || m->headroom > best)) return elem; /* the element ratio set the headroom */
    return name ? name : "rel_l2";
}

static mla_status add_row(mla_rep_run *rep, const mla_opcase *c, const char *tap, const mla_cmp_result *m,
                          const mla_cmp_limits *lim)
{
    mla_rep_row w = {.case_name = c->name, .check = MLA_OPCHECK_CHECK,
                     .profile = mla_opcheck_profile_name(c->kv_format), .path = c->kind == MLA_OP_MQA ? "mqa" : "mha",
                     .layer = -1, .tap = tap, .kv_len = -1, .n = m->n, .max_abs = m->max_abs, .max_rel = m->max_rel,
                     .nmse_db = m->nmse_db, .cos_diff = m->cos_diff, .rel_l2 = m->rel_l2, .ulp_p99 = m->ulp_p99,
                     .headroom = m->headroom, .worst = worst_metric(m, lim), .pass = m->pass, .why = m->why};
    return mla_rep_add_metric(rep, &w);
}

mla_status mla_opcheck_report_case(mla_rep_run *rep, const mla_opcase *c, const mla_opcase_result *r,
                                   const mla_opcheck_opts *o)
{
    if (!rep || !c || !r) return mla_errorf(MLA_ERR_INVALID, "mla_opcheck_report_case: NULL argument");
    const char *tap = c->kind == MLA_OP_MQA ? "mqa_out" : "mha_out";
    const char *prof = mla_opcheck_profile_name(c->kv_format), *path = c->kind == MLA_OP_MQA ? "mqa" : "mha";
    /* A guard-word failure compared nothing (both results zero): no metric rows, the tensor named. */
    int compared = r->verdict == MLA_OPCASE_PASS || (r->verdict == MLA_OPCASE_FAIL && (r->out.n || r->lse.n));
    mla_status st = MLA_OK;
    if (compared) {
        mla_cmp_limits lo, ll;
        opcheck_limits(o, tap, prof, 0, &lo);
        opcheck_limits(o, "lse", prof, 1, &ll);
        if ((st = add_row(rep, c, tap, &r->out, &lo)) || (st = add_row(rep, c, "lse", &r->lse, &ll))) return st;
    }
    const char *first = NULL;
    char msg[sizeof r->why + 16];
    mla_rep_verdict v = MLA_REP_PASS;
    switch (r->verdict) {
    case MLA_OPCASE_PASS: snprintf(msg, sizeof msg, "pass"); break;
    case MLA_OPCASE_SKIP: v = MLA_REP_SKIP; snprintf(msg, sizeof msg, "%s", r->why); break;
    case MLA_OPCASE_FAIL:
        v = MLA_REP_FAIL;
        first = compared ? (!r->out.pass ? tap : "lse") : strstr(r->why, "lse") ? "lse" : tap;
        snprintf(msg, sizeof msg, "%s", r->why);
        break;
    default: /* the report has no error verdict: an operator that returned an error fails, said so */
        v = MLA_REP_FAIL;
        snprintf(msg, sizeof msg, "ERROR: %s", r->why);
        break;
    }
    return mla_rep_add_check(rep, c->name, MLA_OPCHECK_CHECK, prof, path, v, msg, -1, first);
}
