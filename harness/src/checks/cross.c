/* cross.c: cross-engine: every engine against the `against` engine (or the reference), same
 * profile, along every path the case lists; the decode path's decoded rows are also judged alone. */
#include "checks.h"

#include <string.h>

static int is_engine_name(const char *s)
{
    return !strcmp(s, "ref") || !strcmp(s, "gpu") || !strncmp(s, "plugin:", 7);
}

const char *chk_cross_base(const mla_suite_case *cs) { return is_engine_name(cs->against) ? cs->against : "ref"; }

/* The decode path's decoded rows judged on their own (verdict path "decoded", kv_len = prompt length):
 * after a long prefill they are a small share of the prompt's rows, and an error confined to the
 * absorbed-form decode would be diluted in the whole-prompt statistic. */
static void compare_decoded(chk_ctx *c, mla_dump **a, mla_dump **b)
{
    chk_run *r = c->r;
    int lo = r->cs->prefill_len;
    for (int i = 0; lo > 0 && i < c->g->n; i++) {
        int rows = a[i]->tokens ? (int)a[i]->tokens->shape[0] : 0;
        if (lo >= rows) continue;
        mla_dcmp_ctx dc = {.rules = r->rules, .model = r->m, .on_row = mla_rep_on_dcmp_row, .user = r->rep, .case_name = r->cs->name, .check = c->check,
                           .profile = r->profile, .path = "decoded", .row_lo = lo, .row_hi = rows, .kv_len = rows};
        mla_dcmp_result res;
        mla_status st = mla_dcmp(&dc, a[i], b[i], &res);
        if (st) {
            chk_verdict_error(r, c->check, "decoded", st);
            continue;
        }
        if (res.n_failed) chk_save_input(r, c->check, "decoded", b[i]);
        char extra[96];
        snprintf(extra, sizeof extra, "rows %d..%d", lo, rows - 1);
        chk_verdict_note(r, c->check, "decoded", &res, extra);
    }
}

void chk_cross_engine(chk_ctx *c)
{
    chk_run *r = c->r;
    const char *base = chk_cross_base(r->cs);
    if (!strcmp(base, c->engine)) return;
    for (int p = 0; p < MLA_SUITE_PATH_COUNT; p++) {
        if (!mla_suite_case_has_path(r->cs, (mla_suite_path)p)) continue;
        const char *path = mla_path_name((mla_path)p);
        mla_drive_opts d = chk_path_opts(r, (mla_path)p);
        mla_dump **a, **b;
        mla_status st = chk_dumps(r, base, c->prof, 0, c->g, &d, &a);
        if (!st) st = chk_dumps(r, c->engine, c->prof, 1, c->g, &d, &b);
        if (st) {
            if (st == MLA_ERR_UNSUPPORTED || st == MLA_ERR_NO_DEVICE)
                chk_verdict_skip(r, c->check, path, mla_last_error());
            else
                chk_verdict_error(r, c->check, path, st);
            continue;
        }
        chk_compare_group(r, c->check, path, a, b, c->g->n, 0);
        if (p == MLA_SUITE_PATH_DECODE) compare_decoded(c, a, b);
        /* cross-engine runs last: the candidate's dumps of this path serve nobody after it (unless
         * they are the group's own, which the runner holds), nor the baseline's once no other engine
         * follows; at long kv lengths a path's dumps are gigabytes */
        if (b != c->pre && b != c->dec && b != c->chk) chk_drives_release(r, b);
        if (c->last_engine) chk_drives_release(r, a);
    }
}
