/* common.c: what every check shares: the run state, check names, the drive cache and the group
 * comparison.
 *
 * The drive cache. An engine is opened and loaded once per (name, run options) within a (case,
 * profile) and reset before each drive (mla_drive does), instead of once per drive: loading converts or uploads
 * every weight. The run options hold everything that changes what an engine computes (profile,
 * injected faults, kv splits, max_seq_len, block size, batch size, block shuffling, seed), so a
 * drive with other options gets its own engine. The dumps of one drive are kept within the case,
 * keyed by (engine, run options, drive options, sequences), so that a check asking for a drive
 * another check already made (cross-engine's reference side, noise-floor's emulation and oracle,
 * fp8-vs-bf16's bf16 side) gets the same dumps instead of a second run; between engines they are
 * trimmed to CHK_DUMP_BUDGET. Determinism asks for a fresh drive instead. */
#include "checks.h"

#include <stdlib.h>
#include <string.h>

/* Engines kept open per (case, profile): up to CHK_MAX_ENGINES, enough for every engine of one profile of the
 * gpu suite's tiny-v3-gpu (the batch, four single sequences, one kv split, the reference), while
 * their weights (counted in double, the reference's resident form) fit CHK_ENGINE_BUDGET; always at
 * least two, the candidate and its baseline. tiny-v3 (34 MB) keeps 8, v3-layer (1.8 GB) keeps 2. */
#define CHK_MAX_ENGINES 8
#define CHK_MIN_ENGINES 2
#define CHK_ENGINE_BUDGET ((int64_t)2 << 30)

/* Dumps kept between engines and prompt groups of a case (so that fp8-vs-bf16 in each fp8 profile
 * reuses the bf16 drives, noise-floor the fp64 oracle); beyond this the least recently used go. */
#define CHK_DUMP_BUDGET ((int64_t)1 << 30)

int chk_grow(void *arr, int *cap, int n, size_t elem, int first)
{
    if (n < *cap) return 0;
    int c = *cap ? 2 * *cap : first;
    void *p; /* arr is a T **: its pointer moved through memcpy, not a void ** lvalue */
    memcpy(&p, arr, sizeof p);
    void *q = realloc(p, (size_t)c * elem);
    if (!q) return -1;
    memcpy(arr, &q, sizeof q);
    *cap = c;
    return 0;
}

void chk_run_init(chk_run *r, const mla_suite *s, const mla_rules *rules, const mla_runner_opts *o,
                  mla_rep_run *rep, mla_runner_totals *tot)
{
    memset(r, 0, sizeof *r);
    r->suite = s;
    r->rules = rules;
    r->o = o;
    r->rep = rep;
    r->tot = tot;
    r->max_eng = CHK_MAX_ENGINES;
}

void chk_run_free(chk_run *r)
{
    chk_drives_flush(r);
    chk_engines_close(r);
    free(r->eng);
    free(r->drv);
    free(r->v);
    for (size_t i = 0; i < r->n_saved; i++) free(r->saved[i]);
    free(r->saved);
    memset(r, 0, sizeof *r);
}

/* The model's weights in double (the reference's resident form), from the config's shapes. */
static int64_t model_f64_bytes(mla_model *m)
{
    const mla_config *cfg = mla_model_config(m);
    int64_t total = 0;
    for (int i = 0; i < mla_model_tensor_count(m); i++) {
        int nd = 0;
        int64_t shape[MLA_MAX_DIMS], n = 1;
        if (mla_config_tensor_shape(cfg, mla_model_tensor_name(m, i), &nd, shape)) continue;
        for (int k = 0; k < nd; k++) n *= shape[k];
        total += n * (int64_t)sizeof(double);
    }
    return total;
}

void chk_run_set_case(chk_run *r, const mla_suite_case *cs, mla_model *m)
{
    chk_drives_flush(r);
    chk_engines_close(r);
    r->cs = cs;
    r->m = m;
    int64_t bytes = model_f64_bytes(m);
    int64_t fit = bytes > 0 ? CHK_ENGINE_BUDGET / bytes : CHK_MAX_ENGINES;
    r->max_eng = fit > CHK_MAX_ENGINES ? CHK_MAX_ENGINES : fit < CHK_MIN_ENGINES ? CHK_MIN_ENGINES : (int)fit;
}

void chk_engines_close(chk_run *r)
{
    for (int i = 0; i < r->n_eng; i++) {
        mla_engine_close(&r->eng[i].e);
        free(r->eng[i].name);
    }
    r->n_eng = 0;
}

void chk_dumps_free(mla_dump **d, int n)
{
    for (int i = 0; i < n; i++) {
        mla_dump_free(d[i]);
        d[i] = NULL;
    }
}

static void drive_free(chk_drive *x)
{
    chk_dumps_free(x->dumps, x->n);
    free(x->dumps);
    free(x->tok);
    free(x->len);
    free(x->engine);
}

void chk_drives_release(chk_run *r, mla_dump **dumps)
{
    for (int i = 0; i < r->n_drv; i++)
        if (r->drv[i].dumps == dumps) {
            r->drv_bytes -= r->drv[i].bytes;
            drive_free(&r->drv[i]);
            r->drv[i] = r->drv[--r->n_drv];
            return;
        }
}

void chk_drives_trim(chk_run *r)
{
    while (r->n_drv > 0 && r->drv_bytes > CHK_DUMP_BUDGET) {
        int lru = 0;
        for (int i = 1; i < r->n_drv; i++)
            if (r->drv[i].used < r->drv[lru].used) lru = i;
        chk_drives_release(r, r->drv[lru].dumps);
    }
}

void chk_drives_flush(chk_run *r)
{
    for (int i = 0; i < r->n_drv; i++) drive_free(&r->drv[i]);
    r->n_drv = 0;
    r->drv_bytes = 0;
}

int chk_case_has(const mla_suite_case *c, mla_suite_check k) { return mla_suite_case_has_check(c, k); }

void chk_name(char *out, size_t n, const char *check, const char *engine)
{
    if (strcmp(engine, "ref") == 0)
        snprintf(out, n, "%s", check);
    else
        snprintf(out, n, "%s@%s", check, strncmp(engine, "plugin:", 7) == 0 ? "plugin" : engine);
}

mla_drive_opts chk_path_opts(const chk_run *r, mla_path p)
{
    mla_drive_opts d = {.path = p, .prefill_len = r->cs->prefill_len, .chunk = r->cs->chunk > 0 ? r->cs->chunk : 7};
    return d;
}

void chk_run_opts(const chk_run *r, mla_profile prof, int faults, const chk_group *g, mla_run_opts *ro)
{
    mla_run_opts_default(ro);
    ro->profile = prof;
    ro->block_size = r->cs->block_size > 0 ? r->cs->block_size : 64;
    ro->max_seqs = g->n;
    int mx = 0;
    for (int i = 0; i < g->n; i++) mx = g->len[i] > mx ? g->len[i] : mx;
    ro->max_seq_len = mx + 1;
    ro->fp8_kind = r->cs->e4m3_fnuz ? MLA_FP8_FNUZ : MLA_FP8_FN;
    ro->kv_scale = r->cs->kv_scale > 0 ? r->cs->kv_scale : 1.0;
    ro->faults = faults ? r->o->faults | r->cs->faults : 0; /* injected into candidates only */
    ro->kv_splits = r->kv_splits > 0 ? r->kv_splits : r->o->kv_splits;
    ro->seed = r->cs->seed;
    ro->attn_tc = r->cs->attn_tc;
    ro->shuffle_blocks = g->n > 1; /* batches also exercise non-identity block tables */
}

/* Field by field: the struct has padding, so memcmp could tell equal options apart. */
_Static_assert(sizeof(mla_run_opts) == 72, "a new mla_run_opts field must join run_opts_same");
static int run_opts_same(const mla_run_opts *a, const mla_run_opts *b)
{
    return a->profile == b->profile && a->block_size == b->block_size && a->max_seqs == b->max_seqs &&
           a->max_seq_len == b->max_seq_len && a->fp8_kind == b->fp8_kind && a->kv_scale == b->kv_scale &&
           a->fp8_query == b->fp8_query && a->q_scale == b->q_scale && a->kv_splits == b->kv_splits &&
           a->shuffle_blocks == b->shuffle_blocks && a->faults == b->faults && a->seed == b->seed &&
           a->attn_tc == b->attn_tc;
}

_Static_assert(sizeof(mla_drive_opts) == 6 * sizeof(int), "a new mla_drive_opts field must join drive_opts_same");
static int drive_opts_same(const mla_drive_opts *a, const mla_drive_opts *b)
{
    return a->path == b->path && a->prefill_len == b->prefill_len && a->decode_step == b->decode_step &&
           a->chunk == b->chunk && a->absorbed_only == b->absorbed_only && a->sched_seed == b->sched_seed;
}

static void engine_evict(chk_run *r, int i)
{
    mla_engine_close(&r->eng[i].e);
    free(r->eng[i].name);
    r->eng[i] = r->eng[--r->n_eng];
}

mla_status chk_engine_get(chk_run *r, const char *name, const mla_run_opts *ro, mla_engine **out)
{
    *out = NULL;
    for (int i = 0; i < r->n_eng; i++)
        if (!strcmp(r->eng[i].name, name) && run_opts_same(&r->eng[i].ro, ro)) {
            r->eng[i].used = ++r->clock;
            *out = &r->eng[i].e;
            return MLA_OK;
        }
    if (r->n_eng >= r->max_eng) { /* close the least recently used engine */
        int lru = 0;
        for (int i = 1; i < r->n_eng; i++)
            if (r->eng[i].used < r->eng[lru].used) lru = i;
        engine_evict(r, lru);
    }
    if (chk_grow(&r->eng, &r->cap_eng, r->n_eng, sizeof *r->eng, 4))
        return mla_errorf(MLA_ERR_NOMEM, "runner: engine cache of %d entries", 2 * r->cap_eng);
    chk_engine *x = &r->eng[r->n_eng];
    memset(x, 0, sizeof *x);
    if (!(x->name = strdup(name))) return mla_errorf(MLA_ERR_NOMEM, "runner: engine name");
    mla_status st = mla_engine_open(name, r->m, ro, &x->e);
    if (st) {
        free(x->name);
        return st;
    }
    r->n_loads++;
    x->ro = *ro;
    x->used = ++r->clock;
    r->n_eng++;
    *out = &x->e;
    return MLA_OK;
}

/* One drive on the cached engine; a failed drive also closes the engine, whose state is then
 * unknown (a device error may have left it unusable), so that the next drive starts afresh. */
static mla_status drive(chk_run *r, const char *engine, const mla_run_opts *ro, const chk_group *g,
                        const mla_drive_opts *d, mla_dump **dumps)
{
    mla_engine *e;
    mla_status st = chk_engine_get(r, engine, ro, &e);
    if (st) return st;
    const mla_config *cfg = mla_model_config(r->m);
    st = mla_drive(e, cfg, g->n, (const int32_t *const *)g->tok, g->len, d, dumps);
    if (st) {
        for (int i = 0; i < r->n_eng; i++)
            if (&r->eng[i].e == e) engine_evict(r, i);
        return st;
    }
    for (int i = 0; i < g->n; i++) {
        mla_dump *x = dumps[i];
        snprintf(x->meta.profile, sizeof x->meta.profile, "%s", mla_profile_name(ro->profile));
        snprintf(x->meta.model, sizeof x->meta.model, "%s", r->cs->model);
        x->meta.seed = r->cs->seed;
        x->meta.kv_scale = ro->kv_scale;
        snprintf(x->meta.e4m3, sizeof x->meta.e4m3, "%s", ro->fp8_kind == MLA_FP8_FNUZ ? "e4m3fnuz" : "e4m3fn");
        free(x->meta.model_config_json);
        x->meta.model_config_json = mla_config_to_json(cfg);
        mla_model_weights_hash(r->m, x->meta.weights_hash);
    }
    return MLA_OK;
}

mla_status chk_drive_fresh(chk_run *r, const char *engine, mla_profile prof, int faults, const chk_group *g,
                           const mla_drive_opts *d, mla_dump **dumps)
{
    mla_run_opts ro;
    chk_run_opts(r, prof, faults, g, &ro);
    return drive(r, engine, &ro, g, d, dumps);
}

static int64_t tensor_bytes(const mla_tensor *t)
{
    return t ? mla_tensor_numel(t) * (int64_t)mla_dtype_size(t->dtype) : 0;
}

static int64_t dump_bytes(const mla_dump *d)
{
    int64_t n = tensor_bytes(d->tokens);
    for (int t = 0; t < MLA_TAP_COUNT; t++) n += tensor_bytes(d->global[t]);
    for (int i = 0; i < d->n_layers * MLA_TAP_COUNT; i++) n += tensor_bytes(d->layer[i]);
    return n;
}

static int drive_same(const chk_drive *x, const char *engine, const mla_run_opts *ro, const mla_drive_opts *d,
                      const chk_group *g)
{
    if (x->n != g->n || strcmp(x->engine, engine) || !run_opts_same(&x->ro, ro) || !drive_opts_same(&x->d, d))
        return 0;
    for (int i = 0; i < g->n; i++)
        if (x->tok[i] != g->tok[i] || x->len[i] != g->len[i]) return 0;
    return 1;
}

mla_status chk_dumps(chk_run *r, const char *engine, mla_profile prof, int faults, const chk_group *g,
                     const mla_drive_opts *d, mla_dump ***out)
{
    *out = NULL;
    mla_run_opts ro;
    chk_run_opts(r, prof, faults, g, &ro);
    for (int i = 0; i < r->n_drv; i++)
        if (drive_same(&r->drv[i], engine, &ro, d, g)) {
            r->drv[i].used = ++r->clock;
            *out = r->drv[i].dumps;
            return MLA_OK;
        }
    if (chk_grow(&r->drv, &r->cap_drv, r->n_drv, sizeof *r->drv, 8))
        return mla_errorf(MLA_ERR_NOMEM, "runner: drive cache of %d entries", 2 * r->cap_drv);
    chk_drive x = {.ro = ro, .d = *d, .n = g->n};
    x.engine = strdup(engine);
    x.tok = malloc((size_t)g->n * sizeof *x.tok);
    x.len = malloc((size_t)g->n * sizeof *x.len);
    x.dumps = calloc((size_t)g->n, sizeof *x.dumps);
    mla_status st = MLA_OK;
    if (!x.engine || !x.tok || !x.len || !x.dumps) st = mla_errorf(MLA_ERR_NOMEM, "runner: drive cache entry");
    if (!st) {
        memcpy(x.tok, g->tok, (size_t)g->n * sizeof *x.tok);
        memcpy(x.len, g->len, (size_t)g->n * sizeof *x.len);
        st = drive(r, engine, &ro, g, d, x.dumps);
    }
    if (st) {
        free(x.engine);
        free(x.tok);
        free(x.len);
        free(x.dumps);
        return st;
    }
    for (int i = 0; i < x.n; i++) x.bytes += dump_bytes(x.dumps[i]);
    x.used = ++r->clock;
    r->drv_bytes += x.bytes;
    r->drv[r->n_drv++] = x;
    *out = x.dumps;
    return MLA_OK;
}

void chk_compare_group(chk_run *r, const char *check, const char *path, mla_dump *const *a, mla_dump *const *b,
                       int n, int bitwise)
{
    for (int i = 0; i < n; i++) {
        mla_dcmp_ctx c = {.rules = r->rules, .model = r->m, .on_row = mla_rep_on_dcmp_row, .user = r->rep, .case_name = r->cs->name, .check = check,
                          .profile = r->profile, .path = path, .kv_len = -1};
        mla_dcmp_result res;
        mla_status st = bitwise ? mla_dcmp_bitwise(&c, a[i], b[i], &res) : mla_dcmp(&c, a[i], b[i], &res);
        if (st) {
            chk_verdict_error(r, check, path, st);
            continue;
        }
        if (res.n_failed) chk_save_input(r, check, path, b[i]);
        char extra[96] = "";
        if (res.flipped_tokens) snprintf(extra, sizeof extra, "%lld routing flips masked", (long long)res.flipped_tokens);
        chk_verdict_note(r, check, path, &res, extra[0] ? extra : NULL);
    }
}
