/* report_rows.c: the adapter from the comparison's row callback (dumpcmp.h) to the report's metric
 * rows, so that dumpcmp never names the report. */
#include "mlacheck/dumpcmp.h"
#include "mlacheck/report.h"

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
    mla_status st = mla_rep_add_metric(rep, &w);
    if (!st && row->has_kl) st = mla_rep_add_kl(rep, row->kl_mean);
    return st;
}
