/* golden.c: the golden check: each engine's prefill and decode dumps against the committed goldens
 * (golden/<model>/<profile>/<path>-<len>-<fnv8>.h5), or, under `mlacheck golden`, written as new
 * golden candidates. */
#include "checks.h"

#include "mlacheck/h5io.h"
#include "mlacheck/reseed.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void mkdirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
}

/* Narrow every f64 tap to bf16 or f32 when that is lossless (the low-precision profiles store
 * bf16/f32 values): goldens stay small and keep every bit. */
static mla_status dump_compact(mla_dump *d)
{
    for (int i = -1; i < d->n_layers * MLA_TAP_COUNT; i++)
        for (int g = 0; g < (i < 0 ? MLA_TAP_COUNT : 1); g++) {
            mla_tensor **slot = i < 0 ? &d->global[g] : &d->layer[i];
            mla_tensor *t = *slot;
            if (!t || t->dtype != MLA_F64) continue;
            int64_t n = mla_tensor_numel(t);
            const double *v = t->data;
            int bf = 1, f32 = 1;
            for (int64_t k = 0; k < n && (bf || f32); k++) {
                if (v[k] != v[k]) bf = f32 = 0; /* NaN: keep f64, the payload is the point */
                bf &= mla_round_bf16(v[k]) == v[k];
                f32 &= mla_round_f32(v[k]) == v[k];
            }
            if (!bf && !f32) continue;
            mla_tensor *nt;
            mla_status st = mla_tensor_new(&nt, bf ? MLA_BF16 : MLA_F32, t->ndim, t->shape, t->name);
            if (st) return st;
            for (int64_t k = 0; k < n; k++)
                mla_store_f64(nt->dtype, (char *)nt->data + (size_t)k * mla_dtype_size(nt->dtype), v[k]);
            mla_tensor_free(t);
            *slot = nt;
        }
    return MLA_OK;
}

/* A golden stands for the case only when its provenance says so: the model name and weights hash of
 * its /meta (when it stores them; files from other tools may not) match the candidate's, so do its
 * profile and path, and its tokens are the prompt's. Anything else would compare two different runs. */
static mla_status golden_matches(const char *gp, const mla_dump *gd, const mla_dump *cand, const char *profile,
                                 const char *path, const int32_t *tok, int len)
{
    if (gd->meta.profile[0] && strcmp(gd->meta.profile, profile))
        return mla_errorf(MLA_ERR_FORMAT, "%s: /meta profile: '%s', expected '%s'", gp, gd->meta.profile, profile);
    if (gd->meta.path[0] && strcmp(gd->meta.path, path))
        return mla_errorf(MLA_ERR_FORMAT, "%s: /meta path: '%s', expected '%s'", gp, gd->meta.path, path);
    if (gd->meta.model[0] && strcmp(gd->meta.model, cand->meta.model))
        return mla_errorf(MLA_ERR_FORMAT, "%s: /meta model: '%s', expected '%s' (the case's model)", gp, gd->meta.model,
                          cand->meta.model);
    if (gd->meta.weights_hash[0] && cand->meta.weights_hash[0] && strcmp(gd->meta.weights_hash, cand->meta.weights_hash))
        return mla_errorf(MLA_ERR_FORMAT, "%s: /meta weights_hash: %s, expected %s (the case's model weights)", gp,
                          gd->meta.weights_hash, cand->meta.weights_hash);
    /* A golden without these predates them: it was made at kv_scale 1 with e4m3fn, the only choice then. */
    double gs = gd->meta.kv_scale > 0 ? gd->meta.kv_scale : 1.0, cs = cand->meta.kv_scale > 0 ? cand->meta.kv_scale : 1.0;
    if (gs != cs)
        return mla_errorf(MLA_ERR_FORMAT, "%s: /meta kv_scale: %.17g, expected %.17g (the case's kv_scale)", gp, gs, cs);
    const char *gk = gd->meta.e4m3[0] ? gd->meta.e4m3 : "e4m3fn", *ck = cand->meta.e4m3[0] ? cand->meta.e4m3 : "e4m3fn";
    if (strcmp(gk, ck))
        return mla_errorf(MLA_ERR_FORMAT, "%s: /meta e4m3: '%s', expected '%s' (the case's e4m3)", gp, gk, ck);
    if (gd->n_layers != cand->n_layers)
        return mla_errorf(MLA_ERR_FORMAT, "%s: /meta model_config num_hidden_layers: %d, expected %d", gp, gd->n_layers,
                          cand->n_layers);
    if (!gd->tokens || gd->tokens->shape[0] != len)
        return mla_errorf(MLA_ERR_FORMAT, "%s: /tokens: %lld tokens, expected the prompt's %d", gp,
                          gd->tokens ? (long long)gd->tokens->shape[0] : 0LL, len);
    const int32_t *gt = gd->tokens->data;
    for (int k = 0; k < len; k++)
        if (gt[k] != tok[k])
            return mla_errorf(MLA_ERR_FORMAT, "%s: /tokens[%d]: %d, expected the prompt's %d", gp, k, (int)gt[k],
                              (int)tok[k]);
    return MLA_OK;
}

/* golden check or golden writing for one engine's path dumps. Writing changes the dumps (provenance,
 * narrowed dtypes, values unchanged); under `mlacheck golden` no other check of the group runs after
 * it but cross-engine, which compares values only. */
static void golden_path(chk_ctx *c, const char *path, mla_dump **d)
{
    chk_run *r = c->r;
    for (int i = 0; i < c->g->n; i++) {
        char gp[1024];
        mla_runner_golden_path(r->o->write_golden ? r->o->write_golden : r->o->golden_dir, r->cs->model,
                               r->profile, path, c->g->tok[i], c->g->len[i], gp, sizeof gp);
        if (r->o->write_golden) {
            mkdirs(gp);
            snprintf(d[i]->meta.producer, sizeof d[i]->meta.producer, "mlacheck golden --suite %s (case %s)",
                     r->suite->name, r->cs->name);
            if (r->o->git_sha) snprintf(d[i]->meta.git_sha, sizeof d[i]->meta.git_sha, "%s", r->o->git_sha);
            mla_status st = dump_compact(d[i]);
            if (!st) st = mla_h5_write(gp, d[i]);
            if (st) chk_verdict_error(r, c->check, path, st);
            continue;
        }
        mla_dump *gd = NULL;
        mla_status st = mla_h5_read(gp, &gd);
        if (st) {
            chk_verdict_error(r, c->check, path, st);
            continue;
        }
        if ((st = golden_matches(gp, gd, d[i], r->profile, path, c->g->tok[i], c->g->len[i]))) {
            chk_verdict_error(r, c->check, path, st);
            mla_dump_free(gd);
            continue;
        }
        mla_dump *one[1] = {gd}, *cand[1] = {d[i]};
        chk_compare_group(r, c->check, path, one, cand, 1, 0);
        mla_dump_free(gd);
    }
}

int chk_golden_reseeded(const chk_run *r) { return r->o->reseed != 0; }

void chk_golden(chk_ctx *c)
{
    const mla_suite_case *cs = c->r->cs;
    if (strcmp(cs->against, "golden")) return;
    int pre = mla_suite_case_has_path(cs, MLA_SUITE_PATH_PREFILL);
    int dec = mla_suite_case_has_path(cs, MLA_SUITE_PATH_DECODE);
    if (chk_golden_reseeded(c->r)) {
        char why[96];
        mla_reseed_golden_why(c->r->o->reseed, why, sizeof why);
        if (pre) chk_verdict_skip(c->r, c->check, "prefill", why);
        if (dec) chk_verdict_skip(c->r, c->check, "decode", why);
        return;
    }
    if (pre) golden_path(c, "prefill", c->pre);
    if (dec) golden_path(c, "decode", c->dec);
}
