/* runner.c: the suite runner: the loop case x profile x prompt group x engine over the checks table
 * (MLA_SUITE_CHECK_LIST, the checks in harness/src/checks/). Each check records one verdict per
 * (case, check, profile, path). */
#include "mlacheck/runner.h"

#include "checks/checks.h"
#include "mla_core/hash.h"
#include "mla_core/rng.h"
#include "mlacheck/journal.h"
#include "mlacheck/progress.h"
#include "mlacheck/reseed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---------- prompts and golden names ---------- */

/* Bytes in an open file; -1 when it cannot be told (a pipe). */
static long file_size(FILE *f)
{
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    return fseek(f, 0, SEEK_SET) == 0 ? n : -1;
}

/* text: the bytes [offset, offset+len) of a file as token ids, after the BOS token when given; under
 * --reseed K another window of the same span inside the same file (mla_reseed_offset). */
static mla_status text_tokens(const mla_suite_prompt *p, const char *path, int vocab, unsigned reseed,
                              int32_t **tokens, int *n)
{
    int nb = p->len - (p->bos >= 0);
    if (vocab < 256 || p->bos >= vocab)
        return mla_errorf(MLA_ERR_INVALID, "%s: text prompt needs a byte-level vocabulary (>= 256 and > bos %d), got %d",
                          path, p->bos, vocab);
    FILE *f = fopen(path, "rb");
    if (!f) return mla_errorf(MLA_ERR_IO, "text prompt file %s: %s", path, strerror(errno));
    long offset = reseed ? mla_reseed_offset(p->offset, nb, file_size(f), reseed) : p->offset;
    unsigned char *b = malloc((size_t)nb);
    int32_t *t = malloc((size_t)p->len * sizeof(int32_t));
    size_t got = 0;
    if (b && t && fseek(f, offset, SEEK_SET) == 0) got = fread(b, 1, (size_t)nb, f);
    fclose(f);
    if (!b || !t) {
        free(b);
        free(t);
        return mla_errorf(MLA_ERR_NOMEM, "text prompt");
    }
    if (got != (size_t)nb) {
        free(b);
        free(t);
        return mla_errorf(MLA_ERR_FORMAT, "text prompt file %s: offset %ld + len %d: expected that many bytes, "
                          "the file has %zu from there", path, offset, nb, got);
    }
    int k = 0;
    if (p->bos >= 0) t[k++] = p->bos;
    for (int i = 0; i < nb; i++) t[k++] = b[i];
    free(b);
    *tokens = t;
    *n = k;
    return MLA_OK;
}

mla_status mla_runner_prompt_tokens(const mla_suite_prompt *p, const char *suite_origin, int vocab, unsigned reseed,
                                    int32_t **tokens, int *n)
{
    *tokens = NULL;
    *n = 0;
    if (p->kind == MLA_PROMPT_RANDOM) {
        int32_t *t = malloc((size_t)(p->len + 1) * sizeof(int32_t));
        if (!t) return mla_errorf(MLA_ERR_NOMEM, "prompt");
        uint64_t s = mla_reseed_seed(p->seed, reseed);
        for (int i = 0; i < p->len; i++) t[i] = (int32_t)mla_rng_below(&s, (uint64_t)vocab);
        *tokens = t;
        *n = p->len;
        return MLA_OK;
    }
    if (p->kind == MLA_PROMPT_TOKENS) {
        int32_t *t = malloc((size_t)(p->len + 1) * sizeof(int32_t));
        if (!t) return mla_errorf(MLA_ERR_NOMEM, "prompt");
        for (int i = 0; i < p->len; i++) {
            if (p->tokens[i] < 0 || p->tokens[i] >= vocab) {
                free(t);
                return mla_errorf(MLA_ERR_INVALID, "%s: token %d out of range for vocabulary %d",
                                  suite_origin, p->tokens[i], vocab);
            }
            t[i] = p->tokens[i];
        }
        *tokens = t;
        *n = p->len;
        return MLA_OK;
    }
    /* file, text: relative to the suite file's folder */
    char path[1024];
    const char *slash = strrchr(suite_origin, '/');
    if (p->file[0] != '/' && slash)
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - suite_origin), suite_origin, p->file);
    else
        snprintf(path, sizeof path, "%s", p->file);
    if (p->kind == MLA_PROMPT_TEXT) return text_tokens(p, path, vocab, reseed, tokens, n);
    /* file: whitespace separated ids */
    FILE *f = fopen(path, "r");
    if (!f) return mla_errorf(MLA_ERR_IO, "%s: prompt file %s: %s", suite_origin, path, strerror(errno));
    int cap = 256, k = 0;
    int32_t *t = malloc((size_t)cap * sizeof(int32_t));
    long v;
    while (t && fscanf(f, "%ld", &v) == 1) {
        if (v < 0 || v >= vocab) {
            fclose(f);
            free(t);
            return mla_errorf(MLA_ERR_INVALID, "%s: token %ld out of range for vocabulary %d", path, v, vocab);
        }
        if (k == cap) {
            int32_t *nt = realloc(t, (size_t)(cap *= 2) * sizeof(int32_t));
            if (!nt) break;
            t = nt;
        }
        t[k++] = (int32_t)v;
    }
    int bad = !feof(f);
    fclose(f);
    if (!t) return mla_errorf(MLA_ERR_NOMEM, "prompt file");
    if (bad || k == 0) {
        free(t);
        return mla_errorf(MLA_ERR_FORMAT, "%s: expected whitespace-separated token ids", path);
    }
    *tokens = t;
    *n = k;
    return MLA_OK;
}

/* A case's model: a built-in name, or an HF folder relative to the repository root (the suite
 * folder's parent, so a suite runs from any working folder), else to the working folder. The case
 * keeps the name as written: dumps and goldens record it. */
static mla_status open_case_model(const char *model, const char *suite_origin, mla_model **m)
{
    const char *slash = strrchr(suite_origin, '/');
    char path[2048];
    struct stat sb;
    if (strchr(model, '/') && model[0] != '/' && slash &&
        snprintf(path, sizeof path, "%.*s/../%s", (int)(slash - suite_origin), suite_origin, model) < (int)sizeof path &&
        stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return mla_model_open(path, m);
    return mla_model_open(model, m);
}

void mla_runner_golden_path(const char *golden_dir, const char *model, const char *profile,
                            const char *path, const int32_t *tokens, int n, char *out, size_t size)
{
    uint64_t h = MLA_FNV1A_INIT;
    for (int i = 0; i < n; i++) h = mla_fnv1a_u32(h, (uint32_t)tokens[i]);
    const char *base = strrchr(model, '/');
    base = base ? base + 1 : model;
    snprintf(out, size, "%s/%s/%s/%s-%d-%08x.h5", golden_dir, base, profile, path, n, (unsigned)(h & 0xffffffffu));
}

/* The group's own drives along the paths the case's checks need, in the order prefill, decode,
 * chunked; 0 when one failed (its verdict "run" is recorded and the checks that need it are left out). */
static int base_drives(chk_ctx *c, unsigned needs)
{
    chk_run *r = c->r;
    const mla_suite_case *cs = r->cs;
    int dec = (needs & MLA_CHECK_NEEDS_DECODE_ALWAYS) ||
              ((needs & MLA_CHECK_NEEDS_DECODE) && mla_suite_case_has_path(cs, MLA_SUITE_PATH_DECODE));
    int chk = (needs & MLA_CHECK_NEEDS_CHUNKED) && mla_suite_case_has_path(cs, MLA_SUITE_PATH_CHUNKED);
    const struct {
        int want;
        const mla_drive_opts *d;
        mla_dump ***out;
    } drives[] = {{(needs & MLA_CHECK_NEEDS_PREFILL) != 0, &c->dp, &c->pre}, {dec, &c->dd, &c->dec}, {chk, &c->dc, &c->chk}};
    for (size_t i = 0; i < sizeof drives / sizeof drives[0]; i++) {
        if (!drives[i].want) continue;
        mla_status st = chk_dumps(r, c->engine, c->prof, c->is_cand, c->g, drives[i].d, drives[i].out);
        if (st) {
            char check[80];
            chk_name(check, sizeof check, "run", c->engine);
            chk_verdict_error(r, check, mla_path_name(drives[i].d->path), st);
            return 0;
        }
    }
    return 1;
}

/* 1 when the row runs in the current (case, profile) for engine: the case has it, -k selects it and,
 * writing goldens, it is the golden check or cross-engine (the only ones run then). */
static int row_runs(const chk_run *r, const chk_row *row, const char *engine)
{
    if (!chk_case_has(r->cs, row->check)) return 0;
    if (r->o->write_golden && row->check != MLA_CHECK_GOLDEN && row->check != MLA_CHECK_CROSS_ENGINE) return 0;
    char name[80];
    chk_name(name, sizeof name, row->name, engine);
    return mla_runner_selected(r->o->select, r->o->n_select, r->cs->name, name, r->profile);
}

/* The drives a row needs: none for the golden check under --reseed, which only records skips. */
static unsigned row_needs(const chk_run *r, const chk_row *row)
{
    return row->check == MLA_CHECK_GOLDEN && chk_golden_reseeded(r) ? 0 : row->needs;
}

/* The check calls planned for a (case, profile): each selected check on each group and engine. */
static int64_t unit_work(chk_run *r, const mla_suite_case *cs, const char *profile)
{
    const mla_suite_case *keep_cs = r->cs;
    const char *keep_prof = r->profile;
    r->cs = cs;
    r->profile = profile;
    int64_t n = 0, ngroups = cs->batch > 1 ? 1 : cs->n_prompts;
    int n_eng = r->o->engine ? 1 : cs->n_engines;
    for (int ei = 0; ei < n_eng; ei++)
        for (int k = 0; k < MLA_CHECK_COUNT; k++)
            n += row_runs(r, &chk_table[k], r->o->engine ? r->o->engine : cs->engines[ei]) ? ngroups : 0;
    r->cs = keep_cs;
    r->profile = keep_prof;
    return n;
}

/* The verdicts of check (every check when NULL) to the progress lines; a check is done after its
 * call on the last prompt group. */
static void progress_verdicts(chk_run *r, const char *check)
{
    mla_progress *pg = r->o->progress_to;
    if (!pg) return;
    for (int i = 0; i < r->nv; i++) {
        const chk_verdict *v = &r->v[i];
        if (check && strcmp(v->check, check)) continue;
        mla_progress_verdict(pg, v->check, v->path, v->fail ? MLA_REP_FAIL : v->any ? MLA_REP_PASS : MLA_REP_SKIP,
                             v->error, v->msg);
    }
    mla_progress_flush(pg);
}

/* Every check of the case for one engine on one prompt group, in the table's order. */
static void run_engine(chk_run *r, mla_profile prof, const char *engine, const chk_group *g, int last_engine,
                       int last_group)
{
    const mla_suite_case *cs = r->cs;
    chk_ctx c = {.r = r, .prof = prof, .engine = engine, .is_cand = 1, .g = g, .last_engine = last_engine};
    c.dp = chk_path_opts(r, MLA_PATH_PREFILL);
    c.dd = chk_path_opts(r, MLA_PATH_DECODE);
    c.dc = chk_path_opts(r, MLA_PATH_CHUNKED);
    if (chk_case_has(cs, MLA_CHECK_SWEEP) && cs->n_kv_lens > 0 && cs->kv_lens[0] > 1) {
        /* decode from one step before the first length, so its window holds a full step of tokens */
        int step = cs->n_kv_lens > 1 && cs->kv_lens[1] > cs->kv_lens[0] ? cs->kv_lens[1] - cs->kv_lens[0] : 1;
        c.dd.prefill_len = cs->kv_lens[0] - step > 0 ? cs->kv_lens[0] - step : 1;
    }
    unsigned needs = 0;
    for (int k = 0; k < MLA_CHECK_COUNT; k++)
        if (row_runs(r, &chk_table[k], engine)) needs |= row_needs(r, &chk_table[k]);
    mla_progress *pg = r->o->progress_to;
    chk_name(c.check, sizeof c.check, "run", engine);
    mla_progress_enter(pg, c.check);
    int driven = base_drives(&c, needs);
    mla_progress_leave(pg, 0);
    for (int k = 0; k < MLA_CHECK_COUNT; k++) {
        const chk_row *row = &chk_table[k];
        if (!row_runs(r, row, engine)) continue;
        if (row_needs(r, row) && !driven) continue;
        chk_name(c.check, sizeof c.check, row->name, engine);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        mla_progress_enter(pg, c.check);
        row->fn(&c);
        mla_progress_leave(pg, 1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        chk_verdict_time(r, c.check, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        if (last_group) progress_verdicts(r, c.check);
    }
    chk_drives_trim(r);
}

/* The prompt groups of a case: one batch of all prompts, or each prompt alone. */
static mla_status groups_build(chk_run *r, int vocab, chk_group **out, int *n_out)
{
    const mla_suite_case *cs = r->cs;
    int ngroups = cs->batch > 1 ? 1 : cs->n_prompts;
    chk_group *groups = calloc((size_t)(ngroups > 0 ? ngroups : 1), sizeof *groups);
    if (!groups) return mla_errorf(MLA_ERR_NOMEM, "runner: %d prompt groups", ngroups);
    *out = groups;
    *n_out = ngroups;
    for (int p = 0; p < cs->n_prompts; p++) {
        chk_group *g = &groups[cs->batch > 1 ? 0 : p];
        if (g->n == g->cap) {
            int cap = g->cap ? 2 * g->cap : 8;
            int32_t **nt = realloc(g->tok, (size_t)cap * sizeof *nt);
            if (nt) g->tok = nt;
            int *nl = nt ? realloc(g->len, (size_t)cap * sizeof *nl) : NULL;
            if (nl) g->len = nl;
            if (!nt || !nl) return mla_errorf(MLA_ERR_NOMEM, "runner: a group of %d prompts", cap);
            g->cap = cap;
        }
        mla_status st = mla_runner_prompt_tokens(&cs->prompts[p], r->suite->origin, vocab, r->o->reseed, &g->tok[g->n],
                                                 &g->len[g->n]);
        if (st) return st;
        g->n++;
    }
    return MLA_OK;
}

static void groups_free(chk_group *groups, int n)
{
    if (!groups) return;
    for (int gi = 0; gi < n; gi++) {
        for (int k = 0; k < groups[gi].n; k++) free(groups[gi].tok[k]);
        free(groups[gi].tok);
        free(groups[gi].len);
    }
    free(groups);
}

/* The engine must support the profile, else its checks are skipped. Opening it with the group's
 * options also loads the engine the checks will use (the drive cache keeps it). 0: skip it. */
static int engine_usable(chk_run *r, mla_profile prof, const char *eng, const chk_group *g)
{
    mla_run_opts ro;
    chk_run_opts(r, prof, 1, g, &ro);
    mla_engine *e;
    mla_status st = chk_engine_get(r, eng, &ro, &e);
    if (!st) {
        if (r->rep) mla_rep_add_prop(r->rep, "engine", eng); /* provenance; "gpu" adds its device */
        return 1;
    }
    char check[80];
    chk_name(check, sizeof check, "engine", eng);
    if (st == MLA_ERR_UNSUPPORTED || st == MLA_ERR_NO_DEVICE) chk_verdict_skip(r, check, "-", mla_last_error());
    else chk_verdict_error(r, check, "-", st);
    return 0;
}

/* Journal part: a case/profile unit has finished (its verdicts are flushed to the report): it is
 * synced to the journal. 1 when the run must stop here: a signal asked for it (o->stop), or the
 * journal cannot be written (*jst; a run whose results cannot be kept is not run further). */
static int unit_done(const mla_runner_opts *o, int *done, int add, mla_status *jst)
{
    *done += add;
    if (o->journal && !*jst) *jst = mla_jnl_sync(o->journal, *done);
    return *jst || (o->stop && *o->stop);
}

static int units_planned(const mla_suite *s, const mla_runner_opts *o)
{
    int n = 0;
    for (int c = 0; c < s->n_cases; c++)
        if (!o->only_case || !strcmp(o->only_case, s->cases[c].name)) n += s->cases[c].n_profiles;
    return n;
}

void mla_runner_totals_free(mla_runner_totals *t)
{
    for (int i = 0; i < t->n_failures; i++) free(t->failures[i].case_name);
    free(t->failures);
    t->failures = NULL;
    t->n_failures = t->cap_failures = 0;
}

mla_status mla_runner_run(const mla_suite *s, const mla_rules *rules, const mla_runner_opts *o,
                          mla_rep_run *rep, mla_runner_totals *tot)
{
    memset(tot, 0, sizeof *tot);
    /* progress = 1 without a sink: a live line of our own, as before sinks existed */
    mla_runner_opts oo = *o;
    mla_progress_opts po = {.mode = MLA_PROGRESS_LIVE};
    mla_progress *own = NULL;
    if (!o->progress_to && o->progress && mla_progress_new(&po, &own) == MLA_OK) oo.progress_to = own;
    o = &oo;
    mla_progress *pg = o->progress_to;
    chk_run r;
    chk_run_init(&r, s, rules, o, rep, tot);
    if (rep) { /* provenance: a reseeded run's failure is reproduced with the same K */
        char k[16];
        snprintf(k, sizeof k, "%u", o->reseed);
        mla_rep_add_prop(rep, "reseed", k);
    }
    int64_t total_work = 0;
    for (int c = 0; c < s->n_cases; c++)
        for (int pi = 0; pi < s->cases[c].n_profiles; pi++)
            if (!o->only_case || !strcmp(o->only_case, s->cases[c].name))
                total_work += unit_work(&r, &s->cases[c], mla_profile_name(s->cases[c].profiles[pi]));
    mla_progress_begin(pg, total_work);
    int jdone = 0, stop = 0; /* journal part: units synced; 1 once the run must end */
    mla_status jst = o->journal ? mla_jnl_set_units(o->journal, units_planned(s, o)) : MLA_OK;
    for (int c = 0; c < s->n_cases && !jst && !stop; c++) {
        const mla_suite_case *cs = &s->cases[c];
        if (o->only_case && strcmp(o->only_case, cs->name)) continue;
        int64_t case_work = 0;
        for (int pi = 0; pi < cs->n_profiles; pi++) case_work += unit_work(&r, cs, mla_profile_name(cs->profiles[pi]));
        if (case_work == 0) continue; /* -k selects none of its checks: not even the model is opened */
        r.cs = cs;
        mla_model *m = NULL;
        mla_status st = open_case_model(cs->model, s->origin, &m);
        if (st) {
            r.profile = "-";
            mla_progress_unit(pg, cs->name, "-", case_work);
            chk_verdict_error(&r, "model", "-", st);
            progress_verdicts(&r, NULL);
            chk_verdicts_flush(&r);
            mla_progress_unit_end(pg);
            stop = unit_done(o, &jdone, cs->n_profiles, &jst);
            continue;
        }
        chk_run_set_case(&r, cs, m);
        if (rep) mla_rep_add_prop(rep, "model", cs->model);
        chk_group *groups = NULL;
        int ngroups = 0;
        if ((st = groups_build(&r, mla_model_config(m)->vocab_size, &groups, &ngroups))) {
            r.profile = "-";
            mla_progress_unit(pg, cs->name, "-", case_work);
            chk_verdict_error(&r, "prompts", "-", st);
            progress_verdicts(&r, NULL);
        }
        int pi = 0;
        for (; pi < cs->n_profiles && !st && !stop; pi++) {
            mla_profile prof = cs->profiles[pi];
            r.profile = mla_profile_name(prof);
            int64_t work = unit_work(&r, cs, r.profile);
            if (work == 0) continue;
            mla_progress_unit(pg, cs->name, r.profile, work);
            int n_eng = o->engine ? 1 : cs->n_engines;
            for (int gi = 0; gi < ngroups; gi++) {
                for (int ei = 0; ei < n_eng; ei++) {
                    const char *eng = o->engine ? o->engine : cs->engines[ei];
                    if (engine_usable(&r, prof, eng, &groups[gi]))
                        run_engine(&r, prof, eng, &groups[gi], ei == n_eng - 1, gi == ngroups - 1);
                }
            }
            /* engines serve one profile (the profile is in their key; another profile's drives that a
             * check needs, as fp8-vs-bf16's bf16 side, are usually cached dumps by then) */
            chk_engines_close(&r);
            progress_verdicts(&r, NULL);
            chk_verdicts_flush(&r);
            mla_progress_unit_end(pg);
            stop = unit_done(o, &jdone, 1, &jst);
        }
        if (st) {
            chk_verdicts_flush(&r);
            mla_progress_unit_end(pg);
            stop = unit_done(o, &jdone, cs->n_profiles - pi, &jst);
        }
        groups_free(groups, ngroups);
        chk_drives_flush(&r);
        chk_engines_close(&r);
        mla_model_free(m);
    }
    tot->engine_loads = r.n_loads;
    chk_run_free(&r);
    mla_progress_free(own);
    return jst;
}
