/* paths.c: one engine against itself along other paths: decode vs prefill, chunked vs whole
 * prefill, the decode sweep along kv_lens, and the absorbed form against the naive one. */
#include "checks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void chk_whole_views_free(mla_dump **v, int n)
{
    if (!v) return;
    for (int i = 0; i < n; i++)
        if (v[i]) {
            free(v[i]->layer);
            free(v[i]->rows);
            free(v[i]);
        }
    free(v);
}

/* 1 when the absorbed prefill's layer-l q_nope (the input of its q_absorbed) passes this check
 * against the whole prefill's at that tap's own limits. Past layer 0 the absorbed prefill's
 * q_absorbed depends on its own attention upstream, which this check does not compare: when that
 * attention is wrong (measured: mutant 05, an absorbed kernel without the causal mask inside a
 * multi-token call, L0 attn_core 0.8 off), its L1 q_absorbed is 0.39 off and the decode path was
 * named at L1 q_absorbed, a tap the decode path computes right. Such a tap is not borrowed
 * (q_absorbed stays uncompared there, as for an engine without the absorbed prefill);
 * absorbed-vs-naive names the absorbed prefill's own divergence. */
static int same_query_input(const chk_ctx *c, const mla_dump *whole, const mla_dump *abs, int l)
{
    const mla_tensor *a = mla_dump_get(whole, l, MLA_TAP_Q_NOPE), *b = mla_dump_get(abs, l, MLA_TAP_Q_NOPE);
    if (!a || !b || mla_dump_rows(whole, l, MLA_TAP_Q_NOPE) || mla_dump_rows(abs, l, MLA_TAP_Q_NOPE)) return 0;
    char key[32];
    snprintf(key, sizeof key, "L%d/q_nope", l);
    const mla_rule_limits *rule = mla_rules_match_model(c->r->rules, key, c->r->profile, c->check,
                                                        c->r->m ? mla_model_source(c->r->m) : NULL);
    if (!rule) return 0;
    mla_cmp_result res;
    if (mla_cmp_tensor(a, b, &rule->lim, &res)) {
        mla_clear_error();
        return 0;
    }
    return res.pass;
}

mla_status chk_whole_views(chk_ctx *c, mla_dump ***out)
{
    int n = c->g->n;
    *out = NULL;
    mla_drive_opts da = c->dp;
    da.absorbed_only = 1;
    mla_dump **abs;
    if (chk_dumps(c->r, c->engine, c->prof, c->is_cand, c->g, &da, &abs)) {
        mla_clear_error(); /* an engine without the absorbed prefill: q_absorbed stays uncompared (optional) */
        abs = NULL;
    }
    mla_dump **v = calloc((size_t)n, sizeof *v);
    if (!v) return mla_errorf(MLA_ERR_NOMEM, "whole-prefill views of %d dumps", n);
    for (int i = 0; i < n; i++) {
        const mla_dump *p = c->pre[i];
        size_t slots = (size_t)p->n_layers * MLA_TAP_COUNT;
        if (!(v[i] = malloc(sizeof *v[i]))) {
            chk_whole_views_free(v, n);
            return mla_errorf(MLA_ERR_NOMEM, "whole-prefill view");
        }
        *v[i] = *p; /* borrows every tensor of the prefill dump */
        v[i]->layer = malloc((slots ? slots : 1) * sizeof *v[i]->layer);
        v[i]->rows = calloc(slots + MLA_TAP_COUNT, sizeof *v[i]->rows);
        if (!v[i]->layer || !v[i]->rows) {
            free(v[i]->layer);
            free(v[i]->rows);
            free(v[i]);
            v[i] = NULL;
            chk_whole_views_free(v, n);
            return mla_errorf(MLA_ERR_NOMEM, "whole-prefill view");
        }
        for (size_t k = 0; k < slots; k++) v[i]->layer[k] = p->layer[k];
        for (int l = 0; abs && l < p->n_layers && l < abs[i]->n_layers; l++)
            if (!mla_dump_rows(abs[i], l, MLA_TAP_Q_ABSORBED) && same_query_input(c, p, abs[i], l))
                v[i]->layer[(size_t)l * MLA_TAP_COUNT + MLA_TAP_Q_ABSORBED] =
                    (mla_tensor *)mla_dump_get(abs[i], l, MLA_TAP_Q_ABSORBED);
    }
    *out = v;
    return MLA_OK;
}

/* The decode path against the whole prefill, whose q_absorbed comes from the absorbed prefill
 * (chk_whole_views), so that a decode-only bug in the absorbed query is named at q_absorbed. */
void chk_decode_vs_prefill(chk_ctx *c)
{
    if (!c->dec) return;
    mla_dump **w;
    mla_status st = chk_whole_views(c, &w);
    if (st) {
        chk_verdict_error(c->r, c->check, "decode", st);
        return;
    }
    chk_compare_group(c->r, c->check, "decode", w, c->dec, c->g->n, 0);
    chk_whole_views_free(w, c->g->n);
}

/* Chunked prefill against the whole prefill; under `schedule = staggered` also the staggered
 * schedule (chunked prefill then decode, mixed with the other sequences) at the same limits. */
void chk_chunked_vs_whole(chk_ctx *c)
{
    if (c->chk) chk_compare_group(c->r, c->check, "chunked", c->pre, c->chk, c->g->n, 0);
    if (c->r->cs->schedule != 1) return;
    mla_drive_opts ds = chk_staggered_opts(c);
    mla_dump **stag, **w = NULL;
    mla_status st = chk_dumps(c->r, c->engine, c->prof, c->is_cand, c->g, &ds, &stag);
    if (!st) st = chk_whole_views(c, &w);
    if (st) {
        chk_verdict_error(c->r, c->check, "staggered", st);
        return;
    }
    chk_compare_group(c->r, c->check, "staggered", w, stag, c->g->n, 0);
    chk_whole_views_free(w, c->g->n);
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

/* The compared tap nearest its limit (largest limit use, NaN first), with its own metrics: a
 * sweep records one row per length, and the report plots the metric itself along the length. */
typedef struct {
    int have, layer;
    char tap[32], worst[32];
    mla_cmp_result r;
} sweep_worst;

static mla_status sweep_keep_worst(void *user, const mla_dcmp_row *row)
{
    sweep_worst *w = user;
    double h = row->r->headroom;
    if (w->have && !isnan(w->r.headroom) && !isnan(h) && h <= w->r.headroom) return MLA_OK;
    if (w->have && isnan(w->r.headroom)) return MLA_OK;
    w->have = 1;
    w->layer = row->layer;
    snprintf(w->tap, sizeof w->tap, "%s", row->tap);
    snprintf(w->worst, sizeof w->worst, "%s", row->worst ? row->worst : "rel_l2");
    w->r = *row->r;
    return MLA_OK;
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
            /* record only the tap nearest its limit per length, to keep metrics.tsv readable */
            sweep_worst sw = {0};
            dc.on_row = sweep_keep_worst;
            dc.user = &sw;
            mla_dcmp_result res;
            mla_status st = mla_dcmp(&dc, c->pre[i], c->dec[i], &res);
            if (st) {
                chk_verdict_error(r, c->check, "decode", st);
                return;
            }
            const mla_tensor *la = mla_dump_get(c->pre[i], 0, MLA_TAP_LOGITS);
            if (r->rep && la && sw.have) { /* the report's own adapter: the tap's metrics and rule limits */
                mla_dcmp_row row = {.ctx = &dc, .layer = sw.layer, .tap = sw.tap, .r = &sw.r, .worst = sw.worst};
                mla_rep_on_dcmp_row(r->rep, &row);
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
