/* runner.c: the suite runner. For each case x profile x prompt group it drives the engines along the
 * paths the checks need, compares dumps under the rules and records one verdict per
 * (case, check, profile, path). */
#include "mlacheck/runner.h"

#include "mlacheck/dumpcmp.h"
#include "mlacheck/failure.h"
#include "mlacheck/h5io.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_MAX_SEQS 64

/* ---------- prompts and golden names ---------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

mla_status mla_runner_prompt_tokens(const mla_suite_prompt *p, const char *suite_origin, int vocab,
                                    int32_t **tokens, int *n)
{
    *tokens = NULL;
    *n = 0;
    if (p->kind == MLA_PROMPT_RANDOM) {
        int32_t *t = malloc((size_t)(p->len + 1) * sizeof(int32_t));
        if (!t) return mla_errorf(MLA_ERR_NOMEM, "prompt");
        uint64_t s = p->seed;
        for (int i = 0; i < p->len; i++) t[i] = (int32_t)(splitmix64(&s) % (uint64_t)vocab);
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
    /* file: whitespace separated ids, relative to the suite file's folder */
    char path[1024];
    const char *slash = strrchr(suite_origin, '/');
    if (p->file[0] != '/' && slash)
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - suite_origin), suite_origin, p->file);
    else
        snprintf(path, sizeof path, "%s", p->file);
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

void mla_runner_golden_path(const char *golden_dir, const char *model, const char *profile,
                            const char *path, const int32_t *tokens, int n, char *out, size_t size)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) {
        uint32_t v = (uint32_t)tokens[i];
        for (int b = 0; b < 4; b++) {
            h ^= (v >> (8 * b)) & 0xFF;
            h *= 0x100000001b3ull;
        }
    }
    const char *base = strrchr(model, '/');
    base = base ? base + 1 : model;
    snprintf(out, size, "%s/%s/%s/%s-%d-%08x.h5", golden_dir, base, profile, path, n, (unsigned)(h & 0xffffffffu));
}

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

/* ---------- verdict bookkeeping ---------- */

typedef struct verdict {
    char check[64], path[16];
    int fail, skip, any;
    int first_layer;
    char first_tap[32], msg[512];
} verdict;

typedef struct run_state {
    const mla_suite *suite;
    const mla_suite_case *cs;
    const mla_rules *rules;
    const mla_runner_opts *o;
    mla_rep_run *rep;
    mla_runner_totals *tot;
    const char *profile;
    verdict v[64];
    int nv;
    int kv_splits; /* > 0: overrides the option for the next drives (split-invariance) */
    char saved[32][200]; /* failures whose dump was kept */
    size_t n_saved;
} run_state;

static verdict *verdict_get(run_state *r, const char *check, const char *path)
{
    for (int i = 0; i < r->nv; i++)
        if (!strcmp(r->v[i].check, check) && !strcmp(r->v[i].path, path)) return &r->v[i];
    if (r->nv == 64) return &r->v[63];
    verdict *v = &r->v[r->nv++];
    memset(v, 0, sizeof *v);
    snprintf(v->check, sizeof v->check, "%s", check);
    snprintf(v->path, sizeof v->path, "%s", path);
    v->first_layer = -1;
    return v;
}

static void verdict_note(run_state *r, const char *check, const char *path, const mla_dcmp_result *res,
                         const char *extra)
{
    verdict *v = verdict_get(r, check, path);
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

static void verdict_error(run_state *r, const char *check, const char *path, mla_status st)
{
    verdict *v = verdict_get(r, check, path);
    v->any = 1;
    if (!v->fail) {
        v->fail = 1;
        snprintf(v->msg, sizeof v->msg, "error: %s: %s", mla_strerror(st), mla_last_error());
    }
    r->tot->error++;
    if (!r->tot->first_error[0]) {
        r->tot->first_error_status = st;
        snprintf(r->tot->first_error, sizeof r->tot->first_error, "%s: %s", mla_strerror(st), mla_last_error());
    }
}

static void verdict_skip(run_state *r, const char *check, const char *path, const char *why)
{
    verdict *v = verdict_get(r, check, path);
    if (v->any) return;
    v->skip = 1;
    snprintf(v->msg, sizeof v->msg, "%s", why);
}

static void verdicts_flush(run_state *r)
{
    for (int i = 0; i < r->nv; i++) {
        verdict *v = &r->v[i];
        mla_rep_verdict k = v->fail ? MLA_REP_FAIL : (v->any ? MLA_REP_PASS : MLA_REP_SKIP);
        if (k == MLA_REP_FAIL) r->tot->fail++;
        else if (k == MLA_REP_PASS) r->tot->pass++;
        else r->tot->skip++;
        if (r->rep)
            mla_rep_add_check(r->rep, r->cs->name, v->check, r->profile, v->path, k, v->msg,
                              v->fail ? v->first_layer : -1, v->fail && v->first_tap[0] ? v->first_tap : NULL);
    }
    r->nv = 0;
}

/* ---------- engines and drives ---------- */

typedef struct group {
    int n;                     /* sequences */
    int32_t *tok[RUN_MAX_SEQS];
    int len[RUN_MAX_SEQS];
} group;

static mla_status drive(run_state *r, mla_model *m, const char *engine, mla_profile prof, int faults,
                        const group *g, const mla_drive_opts *d, mla_dump **dumps)
{
    mla_run_opts ro;
    mla_run_opts_default(&ro);
    ro.profile = prof;
    ro.block_size = r->cs->block_size > 0 ? r->cs->block_size : 64;
    ro.max_seqs = g->n;
    int mx = 0;
    for (int i = 0; i < g->n; i++) mx = g->len[i] > mx ? g->len[i] : mx;
    ro.max_seq_len = mx + 1;
    ro.fp8_kind = r->cs->e4m3_fnuz ? MLA_FP8_FNUZ : MLA_FP8_FN;
    ro.faults = faults ? r->o->faults | r->cs->faults : 0; /* injected into candidates only */
    ro.kv_splits = r->kv_splits > 0 ? r->kv_splits : r->o->kv_splits;
    ro.seed = r->cs->seed;
    ro.shuffle_blocks = g->n > 1; /* batches also exercise non-identity block tables */
    mla_engine e;
    mla_status st = mla_engine_open(engine, m, &ro, &e);
    if (st) return st;
    const mla_config *cfg = mla_model_config(m);
    st = mla_drive(&e, cfg, g->n, (const int32_t *const *)g->tok, g->len, d, dumps);
    mla_engine_close(&e);
    if (st) return st;
    for (int i = 0; i < g->n; i++) {
        mla_dump *x = dumps[i];
        snprintf(x->meta.profile, sizeof x->meta.profile, "%s", mla_profile_name(prof));
        snprintf(x->meta.model, sizeof x->meta.model, "%s", r->cs->model);
        x->meta.seed = r->cs->seed;
        free(x->meta.model_config_json);
        x->meta.model_config_json = mla_config_to_json(cfg);
        mla_model_weights_hash(m, x->meta.weights_hash);
    }
    return MLA_OK;
}

static void dumps_free(mla_dump **d, int n)
{
    for (int i = 0; i < n; i++) {
        mla_dump_free(d[i]);
        d[i] = NULL;
    }
}

static mla_drive_opts path_opts(const run_state *r, mla_path p)
{
    mla_drive_opts d = {.path = p, .prefill_len = r->cs->prefill_len, .chunk = r->cs->chunk > 0 ? r->cs->chunk : 7};
    return d;
}

/* Saves what reproduces a failing comparison: the case, profile, path, engine options and tokens. */
static void save_input(run_state *r, const char *check, const char *path, const mla_dump *d)
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
    int fresh = 1;
    for (size_t i = 0; i < r->n_saved; i++) fresh &= strcmp(r->saved[i], name) != 0;
    mla_rep_add_input(r->rep, name, t);
    free(t);
    if (!fresh || r->n_saved >= 32) return;
    snprintf(r->saved[r->n_saved++], sizeof r->saved[0], "%s", name);
    char tmp[] = "/tmp/mlacheck-failure-XXXXXX";
    int fd = mkstemp(tmp);
    if (fd < 0) return;
    close(fd);
    char file[220];
    snprintf(file, sizeof file, "%s.h5", name);
    if (mla_h5_write(tmp, d) == MLA_OK) mla_rep_add_input_file(r->rep, file, tmp);
    else unlink(tmp);
}

/* Compare dumps a[i] vs b[i] of a group under one check name; rows go to the report. */
static void compare_group(run_state *r, const char *check, const char *path, mla_dump **a, mla_dump **b, int n,
                          int bitwise)
{
    for (int i = 0; i < n; i++) {
        mla_dcmp_ctx c = {.rules = r->rules, .on_row = mla_rep_on_dcmp_row, .user = r->rep, .case_name = r->cs->name,
                          .check = check, .profile = r->profile, .path = path, .kv_len = -1};
        mla_dcmp_result res;
        mla_status st = bitwise ? mla_dcmp_bitwise(&c, a[i], b[i], &res) : mla_dcmp(&c, a[i], b[i], &res);
        if (st) {
            verdict_error(r, check, path, st);
            continue;
        }
        if (res.n_failed) save_input(r, check, path, b[i]);
        char extra[96] = "";
        if (res.flipped_tokens) snprintf(extra, sizeof extra, "%lld routing flips masked", (long long)res.flipped_tokens);
        verdict_note(r, check, path, &res, extra[0] ? extra : NULL);
    }
}

static void check_name(char *out, size_t n, const char *check, const char *engine)
{
    if (strcmp(engine, "ref") == 0)
        snprintf(out, n, "%s", check);
    else
        snprintf(out, n, "%s@%s", check, strncmp(engine, "plugin:", 7) == 0 ? "plugin" : engine);
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

/* golden check or golden writing for one engine's path dumps */
static void golden_group(run_state *r, const char *engine, const char *path, mla_dump **d, const group *g)
{
    char check[80];
    check_name(check, sizeof check, "golden", engine);
    for (int i = 0; i < g->n; i++) {
        char gp[1024];
        mla_runner_golden_path(r->o->write_golden ? r->o->write_golden : r->o->golden_dir, r->cs->model,
                               r->profile, path, g->tok[i], g->len[i], gp, sizeof gp);
        if (r->o->write_golden) {
            mkdirs(gp);
            snprintf(d[i]->meta.producer, sizeof d[i]->meta.producer, "mlacheck golden --suite %s (case %s)",
                     r->suite->name, r->cs->name);
            if (r->o->git_sha) snprintf(d[i]->meta.git_sha, sizeof d[i]->meta.git_sha, "%s", r->o->git_sha);
            mla_status st = dump_compact(d[i]);
            if (!st) st = mla_h5_write(gp, d[i]);
            if (st) verdict_error(r, check, path, st);
            continue;
        }
        mla_dump *gd = NULL;
        mla_status st = mla_h5_read(gp, &gd);
        if (st) {
            verdict_error(r, check, path, st);
            continue;
        }
        mla_dump *one[1] = {gd}, *cand[1] = {d[i]};
        compare_group(r, check, path, one, cand, 1, 0);
        mla_dump_free(gd);
    }
}

static int case_has(const mla_suite_case *c, mla_suite_check k) { return mla_suite_case_has_check(c, k); }

/* Sweep: decode along the prompt, compare each decoded position (in kv_lens) to the prefill row. */
static void sweep_group(run_state *r, const char *check, mla_dump **pre, mla_dump **dec, const group *g,
                        int first_decoded)
{
    const mla_suite_case *cs = r->cs;
    for (int i = 0; i < g->n; i++) {
        int first_bad = -1, prev = first_decoded;
        for (int k = 0; k < cs->n_kv_lens; k++) {
            int kv = cs->kv_lens[k];
            if (kv < 1 || kv > g->len[i]) continue;
            /* the decoded positions since the previous length: a window, so that the routing-flip
             * fraction and the error statistics are over more than one token */
            int lo = prev > kv - 1 ? kv - 1 : prev;
            prev = kv;
            mla_dcmp_ctx c = {.rules = r->rules, .case_name = cs->name, .check = check,
                              .profile = r->profile, .path = "decode", .row_lo = lo, .row_hi = kv,
                              .kv_len = kv};
            /* record only the end-of-layer taps per length, to keep metrics.tsv readable */
            mla_dcmp_result res;
            mla_status st = mla_dcmp(&c, pre[i], dec[i], &res);
            if (st) {
                verdict_error(r, check, "decode", st);
                return;
            }
            const mla_tensor *la = mla_dump_get(pre[i], 0, MLA_TAP_LOGITS);
            if (r->rep && la) {
                mla_rep_row row = {.case_name = cs->name, .check = check, .profile = r->profile, .path = "decode",
                                   .layer = -1, .tap = "worst", .kv_len = kv, .n = 1,
                                   .rel_l2 = res.worst_headroom, .headroom = res.worst_headroom,
                                   .worst = "headroom", .pass = res.n_failed == 0, .why = res.first_why};
                mla_rep_add_metric(r->rep, &row);
            }
            if (res.n_failed && first_bad < 0) {
                first_bad = kv;
                char extra[64];
                snprintf(extra, sizeof extra, "first failing kv length %d", kv);
                verdict_note(r, check, "decode", &res, extra);
            }
        }
        if (first_bad < 0) {
            mla_dcmp_result ok = {.n_compared = cs->n_kv_lens, .first_layer = -1};
            snprintf(ok.worst_tap, sizeof ok.worst_tap, "all lengths");
            verdict_note(r, check, "decode", &ok, "no length fails");
        }
    }
}

static void run_engine_group(run_state *r, mla_model *m, mla_profile prof, const char *engine, int is_cand,
                             const group *g)
{
    const mla_suite_case *cs = r->cs;
    mla_dump *pre[RUN_MAX_SEQS] = {0}, *dec[RUN_MAX_SEQS] = {0}, *chk[RUN_MAX_SEQS] = {0};
    mla_dump *tmp[RUN_MAX_SEQS] = {0}, *base[RUN_MAX_SEQS] = {0};
    char check[80];
    mla_status st;
    int n = g->n;
    int need_pre = 1;
    int need_dec = mla_suite_case_has_path(cs, MLA_SUITE_PATH_DECODE) || case_has(cs, MLA_CHECK_SWEEP);
    int need_chk = mla_suite_case_has_path(cs, MLA_SUITE_PATH_CHUNKED) && case_has(cs, MLA_CHECK_CHUNKED_VS_WHOLE);
    mla_drive_opts dp = path_opts(r, MLA_PATH_PREFILL), dd = path_opts(r, MLA_PATH_DECODE),
                   dc = path_opts(r, MLA_PATH_CHUNKED);
    if (case_has(cs, MLA_CHECK_SWEEP) && cs->n_kv_lens > 0 && cs->kv_lens[0] > 1) {
        /* decode from one step before the first length, so its window holds a full step of tokens */
        int step = cs->n_kv_lens > 1 && cs->kv_lens[1] > cs->kv_lens[0] ? cs->kv_lens[1] - cs->kv_lens[0] : 1;
        dd.prefill_len = cs->kv_lens[0] - step > 0 ? cs->kv_lens[0] - step : 1;
    }
    if (need_pre && (st = drive(r, m, engine, prof, is_cand, g, &dp, pre))) {
        check_name(check, sizeof check, "run", engine);
        verdict_error(r, check, "prefill", st);
        goto done;
    }
    if (need_dec && (st = drive(r, m, engine, prof, is_cand, g, &dd, dec))) {
        check_name(check, sizeof check, "run", engine);
        verdict_error(r, check, "decode", st);
        goto done;
    }
    if (need_chk && (st = drive(r, m, engine, prof, is_cand, g, &dc, chk))) {
        check_name(check, sizeof check, "run", engine);
        verdict_error(r, check, "chunked", st);
        goto done;
    }
    if (case_has(cs, MLA_CHECK_GOLDEN) && !strcmp(cs->against, "golden")) {
        if (mla_suite_case_has_path(cs, MLA_SUITE_PATH_PREFILL)) golden_group(r, engine, "prefill", pre, g);
        if (mla_suite_case_has_path(cs, MLA_SUITE_PATH_DECODE)) golden_group(r, engine, "decode", dec, g);
    }
    if (r->o->write_golden) goto done;
    if (case_has(cs, MLA_CHECK_DECODE_VS_PREFILL) && need_dec) {
        check_name(check, sizeof check, "decode-vs-prefill", engine);
        compare_group(r, check, "decode", pre, dec, n, 0);
    }
    if (case_has(cs, MLA_CHECK_CHUNKED_VS_WHOLE) && need_chk) {
        check_name(check, sizeof check, "chunked-vs-whole", engine);
        compare_group(r, check, "chunked", pre, chk, n, 0);
    }
    if (case_has(cs, MLA_CHECK_SWEEP) && need_dec) {
        check_name(check, sizeof check, "sweep", engine);
        sweep_group(r, check, pre, dec, g, dd.prefill_len);
    }
    if (case_has(cs, MLA_CHECK_ABSORBED_VS_NAIVE)) {
        mla_drive_opts da = dp;
        da.absorbed_only = 1;
        check_name(check, sizeof check, "absorbed-vs-naive", engine);
        if ((st = drive(r, m, engine, prof, is_cand, g, &da, tmp))) verdict_error(r, check, "prefill", st);
        else compare_group(r, check, "prefill", pre, tmp, n, 0);
        dumps_free(tmp, n);
    }
    if (case_has(cs, MLA_CHECK_DETERMINISM)) {
        check_name(check, sizeof check, "determinism", engine);
        if ((st = drive(r, m, engine, prof, is_cand, g, &dp, tmp))) verdict_error(r, check, "prefill", st);
        else compare_group(r, check, "prefill", pre, tmp, n, 1);
        dumps_free(tmp, n);
    }
    if (case_has(cs, MLA_CHECK_BATCH_INVARIANCE)) {
        /* a sequence's outputs must not depend on the other sequences of its batch */
        check_name(check, sizeof check, "batch-invariance", engine);
        if (n < 2) {
            verdict_skip(r, check, "prefill", "needs a batch of two or more sequences");
        } else {
            for (int i = 0; i < n && !st; i++) {
                group one = {.n = 1};
                one.tok[0] = g->tok[i];
                one.len[0] = g->len[i];
                mla_dump *solo[1] = {0};
                if ((st = drive(r, m, engine, prof, is_cand, &one, &dp, solo))) {
                    verdict_error(r, check, "prefill", st);
                    break;
                }
                compare_group(r, check, "prefill", &pre[i], solo, 1, 0);
                dumps_free(solo, 1);
                if (need_dec) {
                    if ((st = drive(r, m, engine, prof, is_cand, &one, &dd, solo))) {
                        verdict_error(r, check, "decode", st);
                        break;
                    }
                    compare_group(r, check, "decode", &dec[i], solo, 1, 0);
                    dumps_free(solo, 1);
                }
            }
            st = MLA_OK;
        }
    }
    if (case_has(cs, MLA_CHECK_SPLIT_INVARIANCE) && need_dec) {
        /* decode with a single KV split (no LSE combine) against the engine's own split choice */
        check_name(check, sizeof check, "split-invariance", engine);
        r->kv_splits = 1;
        st = drive(r, m, engine, prof, is_cand, g, &dd, tmp);
        r->kv_splits = 0;
        if (st) verdict_error(r, check, "decode", st);
        else compare_group(r, check, "decode", dec, tmp, n, 0);
        dumps_free(tmp, n);
        st = MLA_OK;
    }
    if (case_has(cs, MLA_CHECK_FP8_VS_BF16)) {
        check_name(check, sizeof check, "fp8-vs-bf16", engine);
        if (prof == MLA_PROFILE_FP8KV || prof == MLA_PROFILE_FP8DS || prof == MLA_PROFILE_FP8W) {
            if ((st = drive(r, m, engine, MLA_PROFILE_BF16, is_cand, g, &dp, tmp))) verdict_error(r, check, "prefill", st);
            else compare_group(r, check, "prefill", tmp, pre, n, 0);
            dumps_free(tmp, n);
            if (need_dec) {
                if ((st = drive(r, m, engine, MLA_PROFILE_BF16, is_cand, g, &dd, tmp))) verdict_error(r, check, "decode", st);
                else compare_group(r, check, "decode", tmp, dec, n, 0);
                dumps_free(tmp, n);
            }
        } else {
            verdict_skip(r, check, "prefill", "not an fp8 profile");
        }
    }
    if (case_has(cs, MLA_CHECK_NOISE_FLOOR) && prof != MLA_PROFILE_FP64) {
        /* candidate error vs the fp64 oracle within k x the bf16-emulated reference's own error */
        check_name(check, sizeof check, "noise-floor", engine);
        mla_dump *emu[RUN_MAX_SEQS] = {0};
        if ((st = drive(r, m, "ref", MLA_PROFILE_FP64, 0, g, &dp, base)) ||
            (st = drive(r, m, "ref", prof, 0, g, &dp, emu))) {
            verdict_error(r, check, "prefill", st);
        } else {
            const mla_rule_limits *kl = mla_rules_match(r->rules, "noise-floor-k", r->profile, check);
            double k = kl && kl->lim.max_rel > 0 ? kl->lim.max_rel : 3.0;
            for (int i = 0; i < n; i++) {
                mla_dcmp_result res = {0};
                int bad = 0;
                char why[320] = "";
                for (int l = -1; l < pre[i]->n_layers && !bad; l++)
                    for (int t = 0; t < MLA_TAP_COUNT && !bad; t++) {
                        if ((l < 0) == mla_tap_is_layer((mla_tap)t) || t == MLA_TAP_TOPK_IDS) continue;
                        const mla_tensor *a = mla_dump_get(base[i], l < 0 ? 0 : l, (mla_tap)t);
                        const mla_tensor *b = mla_dump_get(pre[i], l < 0 ? 0 : l, (mla_tap)t);
                        const mla_tensor *e = mla_dump_get(emu[i], l < 0 ? 0 : l, (mla_tap)t);
                        if (!a || !b || !e) continue;
                        mla_cmp_limits none = {0};
                        mla_cmp_result rb, re;
                        if (mla_cmp_tensor(a, b, &none, &rb) || mla_cmp_tensor(a, e, &none, &re)) continue;
                        int ok = mla_cmp_noise_floor(rb.rel_l2, re.rel_l2, k, 1e-12);
                        res.n_compared++;
                        double hr = re.rel_l2 > 0 ? rb.rel_l2 / (k * re.rel_l2) : (rb.rel_l2 > 1e-12 ? INFINITY : 0);
                        if (r->rep) {
                            mla_rep_row row = {.case_name = cs->name, .check = check, .profile = r->profile,
                                               .path = "prefill", .layer = l, .tap = mla_tap_name((mla_tap)t),
                                               .kv_len = -1, .n = rb.n, .rel_l2 = rb.rel_l2, .headroom = hr,
                                               .worst = "noise-floor", .pass = ok, .why = ""};
                            mla_rep_add_metric(r->rep, &row);
                        }
                        if (!ok) {
                            bad = 1;
                            res.n_failed = 1;
                            res.first_layer = l;
                            snprintf(res.first_tap, sizeof res.first_tap, "%s", mla_tap_name((mla_tap)t));
                            snprintf(why, sizeof why, "error vs fp64 %.3g > %.3g x reference's %.3g", rb.rel_l2, k,
                                     re.rel_l2);
                            snprintf(res.first_why, sizeof res.first_why, "%s", why);
                        }
                    }
                verdict_note(r, check, "prefill", &res, NULL);
            }
        }
        dumps_free(base, n);
        dumps_free(emu, n);
    }
done:
    dumps_free(pre, n);
    dumps_free(dec, n);
    dumps_free(chk, n);
}

/* The decode path's decoded rows judged on their own (verdict path "decoded", kv_len = prompt length):
 * after a long prefill they are a small share of the prompt's rows, and an error confined to the
 * absorbed-form decode would be diluted in the whole-prompt statistic. */
static void compare_decoded(run_state *r, const char *check, mla_dump **a, mla_dump **b, int n)
{
    int lo = r->cs->prefill_len;
    for (int i = 0; lo > 0 && i < n; i++) {
        int rows = a[i]->tokens ? (int)a[i]->tokens->shape[0] : 0;
        if (lo >= rows) continue;
        mla_dcmp_ctx c = {.rules = r->rules, .on_row = mla_rep_on_dcmp_row, .user = r->rep, .case_name = r->cs->name,
                          .check = check, .profile = r->profile, .path = "decoded", .row_lo = lo, .row_hi = rows,
                          .kv_len = rows};
        mla_dcmp_result res;
        mla_status st = mla_dcmp(&c, a[i], b[i], &res);
        if (st) {
            verdict_error(r, check, "decoded", st);
            continue;
        }
        if (res.n_failed) save_input(r, check, "decoded", b[i]);
        char extra[96];
        snprintf(extra, sizeof extra, "rows %d..%d", lo, rows - 1);
        verdict_note(r, check, "decoded", &res, extra);
    }
}

/* cross-engine: every engine against the `against` engine (or the first), same profile, same paths */
static void cross_group(run_state *r, mla_model *m, mla_profile prof, const char *base_engine, const char *cand,
                        const group *g)
{
    mla_dump *a[RUN_MAX_SEQS] = {0}, *b[RUN_MAX_SEQS] = {0};
    char check[80];
    check_name(check, sizeof check, "cross-engine", cand);
    for (int p = 0; p < MLA_SUITE_PATH_COUNT; p++) {
        if (!mla_suite_case_has_path(r->cs, (mla_suite_path)p)) continue;
        mla_drive_opts d = path_opts(r, (mla_path)p);
        mla_status st;
        if ((st = drive(r, m, base_engine, prof, 0, g, &d, a)) || (st = drive(r, m, cand, prof, 1, g, &d, b))) {
            if (st == MLA_ERR_UNSUPPORTED || st == MLA_ERR_NO_DEVICE)
                verdict_skip(r, check, mla_path_name((mla_path)p), mla_last_error());
            else
                verdict_error(r, check, mla_path_name((mla_path)p), st);
        } else {
            compare_group(r, check, mla_path_name((mla_path)p), a, b, g->n, 0);
            if (p == MLA_SUITE_PATH_DECODE) compare_decoded(r, check, a, b, g->n);
        }
        dumps_free(a, g->n);
        dumps_free(b, g->n);
    }
}

static int is_engine_name(const char *s)
{
    return !strcmp(s, "ref") || !strcmp(s, "gpu") || !strncmp(s, "plugin:", 7);
}

mla_status mla_runner_run(const mla_suite *s, const mla_rules *rules, const mla_runner_opts *o,
                          mla_rep_run *rep, mla_runner_totals *tot)
{
    memset(tot, 0, sizeof *tot);
    run_state r = {.suite = s, .rules = rules, .o = o, .rep = rep, .tot = tot};
    int total_units = 0, done_units = 0;
    for (int c = 0; c < s->n_cases; c++) total_units += s->cases[c].n_profiles;
    for (int c = 0; c < s->n_cases; c++) {
        const mla_suite_case *cs = &s->cases[c];
        if (o->only_case && strcmp(o->only_case, cs->name)) continue;
        r.cs = cs;
        mla_model *m = NULL;
        mla_status st = mla_model_open(cs->model, &m);
        if (st) {
            r.profile = "-";
            verdict_error(&r, "model", "-", st);
            verdicts_flush(&r);
            continue;
        }
        const mla_config *cfg = mla_model_config(m);
        /* prompt groups: one batch of all prompts, or each prompt alone */
        int ngroups = cs->batch > 1 ? 1 : cs->n_prompts;
        group *groups = calloc((size_t)ngroups, sizeof *groups);
        for (int p = 0; p < cs->n_prompts && groups; p++) {
            group *g = &groups[cs->batch > 1 ? 0 : p];
            if (g->n == RUN_MAX_SEQS) break;
            if ((st = mla_runner_prompt_tokens(&cs->prompts[p], s->origin, cfg->vocab_size, &g->tok[g->n],
                                                &g->len[g->n]))) {
                r.profile = "-";
                verdict_error(&r, "prompts", "-", st);
                break;
            }
            g->n++;
        }
        for (int pi = 0; pi < cs->n_profiles && groups && !st; pi++) {
            mla_profile prof = cs->profiles[pi];
            r.profile = mla_profile_name(prof);
            if (o->progress)
                fprintf(stderr, "\r[%d/%d] %s %s%-20s", ++done_units, total_units, cs->name, r.profile, "");
            int n_eng = o->engine ? 1 : cs->n_engines;
            for (int gi = 0; gi < ngroups; gi++) {
                for (int ei = 0; ei < n_eng; ei++) {
                    const char *eng = o->engine ? o->engine : cs->engines[ei];
                    /* the engine must support the profile, else skip its checks */
                    mla_engine probe;
                    mla_run_opts ro;
                    mla_run_opts_default(&ro);
                    ro.profile = prof;
                    ro.max_seqs = 1;
                    ro.max_seq_len = 1;
                    mla_status ps = mla_engine_open(eng, m, &ro, &probe);
                    if (ps == MLA_ERR_UNSUPPORTED || ps == MLA_ERR_NO_DEVICE) {
                        char check[80];
                        check_name(check, sizeof check, "engine", eng);
                        verdict_skip(&r, check, "-", mla_last_error());
                        continue;
                    }
                    if (ps) {
                        char check[80];
                        check_name(check, sizeof check, "engine", eng);
                        verdict_error(&r, check, "-", ps);
                        continue;
                    }
                    mla_engine_close(&probe);
                    run_engine_group(&r, m, prof, eng, 1, &groups[gi]);
                    if (case_has(cs, MLA_CHECK_CROSS_ENGINE)) {
                        const char *base = is_engine_name(cs->against) ? cs->against : "ref";
                        if (strcmp(base, eng)) cross_group(&r, m, prof, base, eng, &groups[gi]);
                    }
                }
            }
            verdicts_flush(&r);
        }
        if (st) verdicts_flush(&r);
        if (groups)
            for (int gi = 0; gi < ngroups; gi++)
                for (int k = 0; k < groups[gi].n; k++) free(groups[gi].tok[k]);
        free(groups);
        mla_model_free(m);
    }
    if (o->progress) fprintf(stderr, "\r%-60s\r", "");
    return MLA_OK;
}
