/* capi_run.c: libmlacheck's whole-model run (capi.h mlacheck_run_model): `mlacheck run` with an
 * attention operator of this process. The operator is registered with the engine registry as
 * "plugin:inproc:<name>" for the one run, so the runner opens it exactly as it opens an attention-only
 * plugin (the reference model around it, checks "<check>@plugin"); a form the operator lacks is the
 * reference's own attention (mla_ref_set_attn_ops_partial). */
#include "mlacheck/capi.h"

#include "mlacheck/engine_registry.h"
#include "mlacheck/fileio.h"
#include "mlacheck/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The operator's name as an engine name: letters, digits, '-', '_', '.' kept, the rest '_'. */
static void engine_token(const char *name, char *out, size_t n)
{
    size_t k = 0;
    for (const char *p = name && name[0] ? name : "operator"; *p && k + 1 < n; p++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                 ch == '_' || ch == '.';
        out[k++] = ok ? ch : '_';
    }
    out[k] = '\0';
}

static void first_failure(const mla_runner_totals *t, char *buf, size_t n)
{
    if (t->n_failures == 0) return;
    const mla_runner_failure *f = &t->failures[0];
    char layer[32] = "";
    if (f->first_layer >= 0) snprintf(layer, sizeof layer, "layer %d ", f->first_layer);
    snprintf(buf, n, "%s | %s | %s | %s | %s%s: %s", f->case_name, f->check, f->profile, f->path, layer,
             f->first_tap[0] ? f->first_tap : "-", f->message);
}

/* The run proper, once the operator is registered as engine. */
static mla_status run_registered(const mlacheck_run_opts *o, const char *engine, mlacheck_run_result *r)
{
    char sd[1024], gd[1024], rd[1024], rp[1100], sp[1100];
    snprintf(sd, sizeof sd, "%s", o->suites_dir ? o->suites_dir : MLA_SOURCE_DIR "/suites");
    snprintf(gd, sizeof gd, "%s", o->golden_dir ? o->golden_dir : MLA_SOURCE_DIR "/golden");
    snprintf(rd, sizeof rd, "%s", o->results_dir ? o->results_dir : MLA_SOURCE_DIR "/results");
    mla_suite *s = NULL;
    mla_rules *rules = NULL;
    mla_rep_run *rep = NULL;
    mla_status st = mla_suite_load(sd, o->suite, &s);
    if (st) return mla_errorf(st, "suite %s (in %s): %s", o->suite, sd, mla_last_error());
    snprintf(rp, sizeof rp, "%s/rules.tol", sd);
    if ((st = mla_rules_load(rp, &rules))) goto done;
    if ((st = mla_rep_new(rd, s->name, &rep))) goto done;
    mla_runner_opts ro = {.golden_dir = gd, .engine = engine, .only_case = o->only_case, .progress = o->progress};
    mla_runner_totals tot;
    double t0 = now_s();
    st = mla_runner_run(s, rules, &ro, rep, &tot);
    r->status = st;
    r->pass = tot.pass;
    r->fail = tot.fail;
    r->skip = tot.skip;
    r->error = tot.error;
    r->first_error_status = tot.first_error_status;
    snprintf(r->first_error, sizeof r->first_error, "%s", tot.first_error);
    first_failure(&tot, r->first_failure, sizeof r->first_failure);
    mla_runner_totals_free(&tot);
    char run_error[512] = "";
    if (st) snprintf(run_error, sizeof run_error, "%s", mla_last_error());
    mla_status fs = mla_rep_finish(rep, now_s() - t0, r->run_dir, sizeof r->run_dir);
    if (fs) {
        st = st ? st : fs;
        goto done;
    }
    /* who computed what: the report's engine is "plugin" whichever forms the operator has */
    char text[400];
    int k = snprintf(text, sizeof text, "engine: %s\n%s\n", engine, r->attention);
    snprintf(sp, sizeof sp, "%s/attention.txt", r->run_dir);
    if (k > 0 && (size_t)k < sizeof text && (fs = mla_fio_write_atomic(sp, text, (size_t)k))) st = st ? st : fs;
    if (st && run_error[0]) mla_errorf(st, "%s", run_error);
done:
    mla_rep_free(rep);
    mla_rules_free(rules);
    mla_suite_free(s);
    return st;
}

int32_t mlacheck_run_model(const mlacheck_run_opts *o, const mla_attn_ops *ops, mlacheck_run_result *r)
{
    if (!o || !ops || !r) return mla_errorf(MLA_ERR_INVALID, "mlacheck_run_model: NULL argument");
    if (o->struct_size != sizeof *o || r->struct_size != sizeof *r)
        return mla_errorf(MLA_ERR_VERSION, "mlacheck_run_model: struct_size %u / %u, expected %zu / %zu (a binding "
                          "for another capi.h version)", o->struct_size, r->struct_size, sizeof *o, sizeof *r);
    if (!o->suite) return mla_errorf(MLA_ERR_INVALID, "mlacheck_run_model: no suite");
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    char tok[64], engine[96];
    engine_token(ops->name, tok, sizeof tok);
    snprintf(engine, sizeof engine, "plugin:inproc:%s", tok);
    const char *nm = ops->name ? ops->name : "operator";
    snprintf(r->attention, sizeof r->attention, "mqa (decode): %.80s%s; mha (prefill): %.80s%s",
             ops->mqa ? nm : "the reference", ops->mqa ? "" : " (none given)", ops->mha ? nm : "the reference",
             ops->mha ? "" : " (none given)");
    mla_status st = mla_registry_add_inproc(tok, ops);
    if (st) return st;
    st = run_registered(o, engine, r);
    mla_registry_remove_inproc();
    return st;
}
