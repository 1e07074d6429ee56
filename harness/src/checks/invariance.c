/* invariance.c: what must not change a result: running again (determinism, bitwise), the other
 * sequences of a batch (batch-invariance), and the number of KV splits (split-invariance). */
#include "checks.h"

#include "mlacheck/reseed.h"

#include <stdlib.h>

/* The same drive a second time on the same (reset) engine: never served from the drive cache. */
void chk_determinism(chk_ctx *c)
{
    int n = c->g->n;
    mla_dump **again = calloc((size_t)n, sizeof *again);
    mla_status st = again ? chk_drive_fresh(c->r, c->engine, c->prof, c->is_cand, c->g, &c->dp, again)
                          : mla_errorf(MLA_ERR_NOMEM, "determinism: %d dumps", n);
    if (st) chk_verdict_error(c->r, c->check, "prefill", st);
    else chk_compare_group(c->r, c->check, "prefill", c->pre, again, n, 1);
    if (again) chk_dumps_free(again, n);
    free(again);
}

/* A sequence's outputs must not depend on the other sequences of its batch: each sequence alone
 * (its own engine: one cache slot, identity block table) against the same sequence in the batch,
 * along the lockstep paths and, under `schedule = staggered`, the staggered schedule. */
void chk_batch_invariance(chk_ctx *c)
{
    const chk_group *g = c->g;
    if (g->n < 2) {
        chk_verdict_skip(c->r, c->check, "prefill", "needs a batch of two or more sequences");
        return;
    }
    for (int i = 0; i < g->n; i++) {
        chk_group one = {.n = 1, .cap = 1, .tok = &g->tok[i], .len = &g->len[i]};
        mla_dump **solo;
        mla_status st = chk_dumps(c->r, c->engine, c->prof, c->is_cand, &one, &c->dp, &solo);
        if (st) {
            chk_verdict_error(c->r, c->check, "prefill", st);
            return;
        }
        chk_compare_group(c->r, c->check, "prefill", &c->pre[i], solo, 1, 0);
        if (c->dec) {
            if ((st = chk_dumps(c->r, c->engine, c->prof, c->is_cand, &one, &c->dd, &solo))) {
                chk_verdict_error(c->r, c->check, "decode", st);
                return;
            }
            chk_compare_group(c->r, c->check, "decode", &c->dec[i], solo, 1, 0);
        }
    }
    if (c->r->cs->schedule != 1) return;
    /* the staggered schedule: each sequence amid the others (different context lengths, prefill
     * chunks beside decodes, empty entries) against the same sequence alone under the same plan
     * (its chunks and decoded tail depend on its tokens only: mla_sched_plan_of) */
    mla_drive_opts ds = chk_staggered_opts(c);
    mla_dump **stag, **solo;
    mla_status st = chk_dumps(c->r, c->engine, c->prof, c->is_cand, g, &ds, &stag);
    for (int i = 0; !st && i < g->n; i++) {
        chk_group one = {.n = 1, .cap = 1, .tok = &g->tok[i], .len = &g->len[i]};
        if (!(st = chk_dumps(c->r, c->engine, c->prof, c->is_cand, &one, &ds, &solo)))
            chk_compare_group(c->r, c->check, "staggered", &stag[i], solo, 1, 0);
    }
    if (st) chk_verdict_error(c->r, c->check, "staggered", st);
}

mla_drive_opts chk_staggered_opts(const chk_ctx *c)
{
    mla_drive_opts d = c->dp;
    d.path = MLA_PATH_STAGGERED;
    d.chunk = c->dc.chunk;
    d.sched_seed = (int)mla_reseed_seed(c->r->cs->seed, c->r->o->reseed); /* --reseed K: other arrivals */
    return d;
}

/* Decode with one KV split (no LSE combine) against three (uneven; at short lengths some nearly or
 * wholly empty). Not against the engine's own choice: that is one split below 512 keys
 * (gpu_decode_splits), so the check compared a drive with itself at every gpu-suite length (rel L2 0
 * in all seven rows, H200 2026-12-02). */
void chk_split_invariance(chk_ctx *c)
{
    if (!c->dec) return;
    mla_dump **one = NULL, **three = NULL;
    c->r->kv_splits = 1;
    mla_status st = chk_dumps(c->r, c->engine, c->prof, c->is_cand, c->g, &c->dd, &one);
    c->r->kv_splits = 3;
    if (!st) st = chk_dumps(c->r, c->engine, c->prof, c->is_cand, c->g, &c->dd, &three);
    c->r->kv_splits = 0;
    if (st) chk_verdict_error(c->r, c->check, "decode", st);
    else chk_compare_group(c->r, c->check, "decode", one, three, c->g->n, 0);
}
