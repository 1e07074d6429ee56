/* report_rows.c: the adapter from the comparison's row callback (dumpcmp.h) to the report's metric
 * rows, so that dumpcmp never names the report. */
#include "mlacheck/dumpcmp.h"
#include "mlacheck/report.h"
#include "mlacheck/rules.h"
#include "mla_model/model.h"

#include <stdio.h>

/* The limits of the rule the comparison applied to this tap (dumpcmp.c's rule_for: the same key,
 * profile, check and model), for the plots' limit lines. */
static void row_limits(mla_rep_row *w, const mla_dcmp_ctx *c, int layer, const char *tap)
{
    if (!c->rules) return;
    char key[64];
    if (layer >= 0) snprintf(key, sizeof key, "L%d/%s", layer, tap);
    else snprintf(key, sizeof key, "%s", tap);
    const mla_rule_limits *rl = mla_rules_match_model(c->rules, key, c->profile, c->check,
                                                      c->model ? mla_model_source(c->model) : NULL);
    if (!rl) return;
    w->lim_max_abs = rl->lim.max_abs;
    w->lim_max_rel = rl->lim.max_rel;
    w->lim_cos_diff = rl->lim.cos_diff;
    w->lim_rel_l2 = rl->lim.rel_l2;
    w->lim_ulp_p99 = rl->lim.ulp_p99;
}

mla_status mla_rep_on_dcmp_row(void *rep, const struct mla_dcmp_row *row)
{
    if (!rep) return MLA_OK;
    const mla_dcmp_ctx *c = row->ctx;
    const mla_cmp_result *r = row->r;
    mla_rep_row w = {.case_name = c->case_name, .check = c->check, .profile = c->profile, .path = c->path,
                     .layer = row->layer, .tap = row->tap, .kv_len = c->kv_len, .n = r->n, .max_abs = r->max_abs,
                     .max_rel = r->max_rel, .nmse_db = r->nmse_db, .cos_diff = r->cos_diff, .rel_l2 = r->rel_l2,
                     .ulp_p99 = r->ulp_p99, .headroom = r->headroom, .worst = row->worst, .pass = r->pass,
                     .why = r->why};
    row_limits(&w, c, row->layer, row->tap);
    mla_status st = mla_rep_add_metric(rep, &w);
    if (!st && row->has_kl) st = mla_rep_add_kl(rep, row->kl_mean);
    return st;
}
