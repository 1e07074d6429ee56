/* paths.c: one engine against itself along other paths: decode vs prefill, chunked vs whole
 * prefill, the decode sweep along kv_lens, and the absorbed form against the naive one. */
#include "checks.h"

void chk_decode_vs_prefill(chk_ctx *c)
{
    if (c->dec) chk_compare_group(c->r, c->check, "decode", c->pre, c->dec, c->g->n, 0);
}

void chk_chunked_vs_whole(chk_ctx *c)
{
    if (c->chk) chk_compare_group(c->r, c->check, "chunked", c->pre, c->chk, c->g->n, 0);
}

void chk_absorbed_vs_naive(chk_ctx *c)
{
    mla_drive_opts da = c->dp;
    da.absorbed_only = 1;
    mla_dump **abs;
    mla_status st = chk_dumps(c->r, c->engine, c->prof, c->is_cand, c->g, &da, &abs);
    if (st) chk_verdict_error(c->r, c->check, "prefill", st);
    else chk_compare_group(c->r, c->check, "prefill", c->pre, abs, c->g->n, 0);
}

/* Sweep: decode along the prompt, compare each decoded position (in kv_lens) to the prefill row. */
void chk_sweep(chk_ctx *c)
{
    chk_run *r = c->r;
    const mla_suite_case *cs = r->cs;
    if (!c->dec) return;
    int first_decoded = c->dd.prefill_len;
    for (int i = 0; i < c->g->n; i++) {
        int first_bad = -1, prev = first_decoded;
        for (int k = 0; k < cs->n_kv_lens; k++) {
            int kv = cs->kv_lens[k];
            if (kv < 1 || kv > c->g->len[i]) continue;
            /* the decoded positions since the previous length: a window, so that the routing-flip
             * fraction and the error statistics are over more than one token */
            int lo = prev > kv - 1 ? kv - 1 : prev;
            prev = kv;
            mla_dcmp_ctx dc = {.rules = r->rules, .model = r->m, .case_name = cs->name, .check = c->check,
                               .profile = r->profile, .path = "decode", .row_lo = lo, .row_hi = kv,
                               .kv_len = kv};
            /* record only the end-of-layer taps per length, to keep metrics.tsv readable */
            mla_dcmp_result res;
            mla_status st = mla_dcmp(&dc, c->pre[i], c->dec[i], &res);
            if (st) {
                chk_verdict_error(r, c->check, "decode", st);
                return;
            }
            const mla_tensor *la = mla_dump_get(c->pre[i], 0, MLA_TAP_LOGITS);
            if (r->rep && la) {
                mla_rep_row row = {.case_name = cs->name, .check = c->check, .profile = r->profile, .path = "decode",
                                   .layer = -1, .tap = "worst", .kv_len = kv, .n = 1,
                                   .rel_l2 = res.worst_headroom, .headroom = res.worst_headroom,
                                   .worst = "headroom", .pass = res.n_failed == 0, .why = res.first_why};
                mla_rep_add_metric(r->rep, &row);
            }
            if (res.n_failed && first_bad < 0) {
                first_bad = kv;
                char extra[64];
                snprintf(extra, sizeof extra, "first failing kv length %d", kv);
                chk_verdict_note(r, c->check, "decode", &res, extra);
            }
        }
        if (first_bad < 0) {
            mla_dcmp_result ok = {.n_compared = cs->n_kv_lens, .first_layer = -1};
            snprintf(ok.worst_tap, sizeof ok.worst_tap, "all lengths");
            chk_verdict_note(r, c->check, "decode", &ok, "no length fails");
        }
    }
}
