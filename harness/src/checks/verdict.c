/* verdict.c: verdict bookkeeping (one verdict per (check, path) of a (case, profile)), the failure
 * list handed back to the caller, and the inputs that reproduce a failing comparison. */
#include "checks.h"

#include "mlacheck/failure.h"
#include "mlacheck/h5io.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Counts an error that the bookkeeping itself hit (out of memory), so the run cannot pass. */
static void note_nomem(chk_run *r, const char *what)
{
    mla_status st = mla_errorf(MLA_ERR_NOMEM, "runner: %s", what);
    r->tot->error++;
    r->tot->fail++;
    if (!r->tot->first_error[0]) {
        r->tot->first_error_status = st;
        snprintf(r->tot->first_error, sizeof r->tot->first_error, "%s: %s", mla_strerror(st), mla_last_error());
    }
}

/* The verdict of (check, path), created on first use; NULL only when out of memory (counted). */
static chk_verdict *verdict_get(chk_run *r, const char *check, const char *path)
{
    for (int i = 0; i < r->nv; i++)
        if (!strcmp(r->v[i].check, check) && !strcmp(r->v[i].path, path)) return &r->v[i];
    if (chk_grow(&r->v, &r->cap_v, r->nv, sizeof *r->v, 64)) {
        note_nomem(r, "verdict list");
        return NULL;
    }
    chk_verdict *v = &r->v[r->nv++];
    memset(v, 0, sizeof *v);
    snprintf(v->check, sizeof v->check, "%s", check);
    snprintf(v->path, sizeof v->path, "%s", path);
    v->first_layer = -1;
    return v;
}

void chk_verdict_note(chk_run *r, const char *check, const char *path, const mla_dcmp_result *res, const char *extra)
{
    chk_verdict *v = verdict_get(r, check, path);
    if (!v) return;
    v->any = 1;
    if (res->n_failed && !v->fail) {
        v->fail = 1;
        v->first_layer = res->first_layer;
        snprintf(v->first_tap, sizeof v->first_tap, "%s", res->first_tap);
        if (res->first_layer >= 0)
            snprintf(v->msg, sizeof v->msg, "first divergence: layer %d tap %s: %s%s%s", res->first_layer,
                     res->first_tap, res->first_why, extra ? "; " : "", extra ? extra : "");
        else
            snprintf(v->msg, sizeof v->msg, "first divergence: tap %s: %s%s%s", res->first_tap,
                     res->first_why, extra ? "; " : "", extra ? extra : "");
    } else if (!v->fail && !v->msg[0]) {
        snprintf(v->msg, sizeof v->msg, "worst headroom %.3g at %s (%d taps)%s%s", res->worst_headroom,
                 res->worst_tap, res->n_compared, extra ? "; " : "", extra ? extra : "");
    }
}

void chk_verdict_error(chk_run *r, const char *check, const char *path, mla_status st)
{
    chk_verdict *v = verdict_get(r, check, path);
    if (v) {
        v->any = 1;
        if (!v->fail) {
            v->fail = 1;
            v->error = 1;
            snprintf(v->msg, sizeof v->msg, "error: %s: %s", mla_strerror(st), mla_last_error());
        }
    }
    r->tot->error++;
    if (!r->tot->first_error[0]) {
        r->tot->first_error_status = st;
        snprintf(r->tot->first_error, sizeof r->tot->first_error, "%s: %s", mla_strerror(st), mla_last_error());
    }
}

void chk_verdict_skip(chk_run *r, const char *check, const char *path, const char *why)
{
    chk_verdict *v = verdict_get(r, check, path);
    if (!v || v->any) return;
    v->skip = 1;
    snprintf(v->msg, sizeof v->msg, "%s", why);
}

/* Appends a failed verdict to the caller's failure list. */
static void failure_add(chk_run *r, const chk_verdict *v)
{
    mla_runner_totals *t = r->tot;
    if (chk_grow(&t->failures, &t->cap_failures, t->n_failures, sizeof *t->failures, 16)) {
        note_nomem(r, "failure list");
        return;
    }
    mla_runner_failure *f = &t->failures[t->n_failures];
    memset(f, 0, sizeof *f);
    if (!(f->case_name = strdup(r->cs->name))) {
        note_nomem(r, "failure list");
        return;
    }
    snprintf(f->check, sizeof f->check, "%s", v->check);
    snprintf(f->profile, sizeof f->profile, "%s", r->profile);
    snprintf(f->path, sizeof f->path, "%s", v->path);
    f->first_layer = v->first_layer;
    snprintf(f->first_tap, sizeof f->first_tap, "%s", v->first_tap);
    snprintf(f->message, sizeof f->message, "%s", v->msg);
    f->is_error = v->error;
    t->n_failures++;
}

void chk_verdicts_flush(chk_run *r)
{
    for (int i = 0; i < r->nv; i++) {
        chk_verdict *v = &r->v[i];
        mla_rep_verdict k = v->fail ? MLA_REP_FAIL : (v->any ? MLA_REP_PASS : MLA_REP_SKIP);
        if (k == MLA_REP_FAIL) {
            r->tot->fail++;
            failure_add(r, v);
        } else if (k == MLA_REP_PASS) {
            r->tot->pass++;
        } else {
            r->tot->skip++;
        }
        if (r->rep &&
            mla_rep_add_check(r->rep, r->cs->name, v->check, r->profile, v->path, k, v->msg,
                              v->fail ? v->first_layer : -1, v->fail && v->first_tap[0] ? v->first_tap : NULL) == MLA_OK)
            mla_rep_set_check_seconds(r->rep, v->seconds);
    }
    r->nv = 0;
}

void chk_verdict_time(chk_run *r, const char *check, double seconds)
{
    int n = 0;
    for (int i = 0; i < r->nv; i++) n += !strcmp(r->v[i].check, check);
    for (int i = 0; i < r->nv && n; i++)
        if (!strcmp(r->v[i].check, check)) r->v[i].seconds += seconds / n;
}

/* 1 when name was not kept yet; then it is added to the kept names (0 when that fails). */
static int saved_fresh(chk_run *r, const char *name)
{
    for (size_t i = 0; i < r->n_saved; i++)
        if (!strcmp(r->saved[i], name)) return 0;
    if (r->n_saved == r->cap_saved) {
        size_t cap = r->cap_saved ? 2 * r->cap_saved : 32;
        char **ns = realloc(r->saved, cap * sizeof *ns);
        if (!ns) return 0;
        r->saved = ns;
        r->cap_saved = cap;
    }
    if (!(r->saved[r->n_saved] = strdup(name))) return 0;
    r->n_saved++;
    return 1;
}

/* Saves what reproduces a failing comparison: the case, profile, path, engine options and tokens. */
void chk_save_input(chk_run *r, const char *check, const char *path, const mla_dump *d)
{
    if (!r->rep || !d || !d->tokens) return;
    char name[200];
    snprintf(name, sizeof name, "%s-%s-%s-%s", r->cs->name, check, r->profile, path);
    for (char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
            *p = '_';
    mla_failure in = {.suite = r->suite->name, .case_name = r->cs->name, .check = check, .profile = r->profile,
                      .path = path, .model = r->cs->model, .block_size = r->cs->block_size > 0 ? r->cs->block_size : 64,
                      .prefill_len = r->cs->prefill_len, .chunk = r->cs->chunk, .faults = r->o->faults | r->cs->faults,
                      .tokens = d->tokens->data, .n_tokens = d->tokens->shape[0]};
    char *t = NULL;
    if (mla_failure_format(&in, &t)) return;
    /* the first failure of a name also keeps the candidate's dump, for `mlacheck bisect --replay` */
    mla_rep_add_input(r->rep, name, t);
    free(t);
    if (!saved_fresh(r, name)) return;
    char tmp[] = "/tmp/mlacheck-failure-XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0) return;
    close(fd);
    char file[220];
    snprintf(file, sizeof file, "%s.h5", name);
    if (mla_h5_write(tmp, d) == MLA_OK) mla_rep_add_input_file(r->rep, file, tmp);
    else unlink(tmp);
}
