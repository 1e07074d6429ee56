/* driver.c: schedules (prefill / decode / chunked / staggered) over a backend, gathering every tap
 * of every call by position.
 *
 * The staggered schedule and vLLM. vLLM's scheduler builds each step from the running requests
 * (decodes, one token each) and the waiting ones (prefills, cut into chunks under the step's token
 * budget: chunked prefill), so one forward call holds requests at different context lengths, and
 * its persistent batch keeps slots whose request has nothing scheduled. Its MLA layer then splits
 * the step's tokens: prefill tokens through the naive (MHA) form, decode tokens through the absorbed
 * (MQA) form over the paged latent cache, on the same cache. Under backend.h a call runs one form
 * over the whole model, so a step is two calls on the same engine state: forward_mha over the
 * step's prefill chunks, then forward_mqa over its decodes; every other slot is listed with
 * n_new == 0 (rule 4), in an order that rotates per step so that no sequence is always first. The
 * per-row products are the same either way (the reference's fixed 8-row products, NUMERICS.md), so
 * only the attention of each sequence over its own cache tells the two apart, which is the point. */
#include "mlacheck/driver.h"

#include "mla_core/hash.h"
#include "mla_core/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const path_names[] = {"prefill", "decode", "chunked", "staggered"};

const char *mla_path_name(mla_path p) { return (unsigned)p < 4 ? path_names[p] : "?"; }

int mla_path_from_name(const char *name, mla_path *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, path_names[i]) == 0) {
            *out = (mla_path)i;
            return 0;
        }
    return -1;
}

/* Copy rows [r0, r0+n) of the call tap src (rows for this sequence start at src_row) into dst. */
static void copy_rows(mla_tensor *dst, int64_t r0, const mla_tensor *src, int64_t src_row, int64_t n)
{
    int64_t per = mla_tensor_numel(src) / (src->shape[0] ? src->shape[0] : 1);
    size_t ds = mla_dtype_size(dst->dtype), ss = mla_dtype_size(src->dtype);
    for (int64_t i = 0; i < n * per; i++) {
        const char *sp = (const char *)src->data + (size_t)(src_row * per + i) * ss;
        char *dp = (char *)dst->data + (size_t)(r0 * per + i) * ds;
        if (dst->dtype == src->dtype)
            memcpy(dp, sp, ds);
        else
            mla_store_f64(dst->dtype, dp, mla_load_f64(src->dtype, sp));
    }
}

/* A tap an engine returned, checked before a byte of it is copied: plugins are outside our control,
 * and copy_rows trusts the row count and the row width. */
static mla_status check_tap(const mla_engine *e, const mla_config *cfg, int layer, mla_tap tap,
                            const mla_tensor *t, int64_t ntok)
{
    /* what an engine returns that the driver cannot use is the engine's fault, not the input's:
     * MLA_ERR_DEVICE (exit 3), naming the tap, what came and what was expected */
    char tn[96]; /* "layer 3 tap attn_core", or "global tap logits" */
    if (layer < 0) snprintf(tn, sizeof tn, "global tap %s", mla_tap_name(tap));
    else snprintf(tn, sizeof tn, "layer %d tap %s", layer, mla_tap_name(tap));
    int64_t want[MLA_MAX_DIMS];
    int nd = mla_tap_shape(tap, cfg, ntok, want);
    char ws[160] = "", gs[160] = "";
    for (int i = 0; i < nd; i++) {
        size_t k = strlen(ws);
        snprintf(ws + k, sizeof ws - k, "%s%lld", i ? "," : "", (long long)want[i]);
    }
    if (!t)
        return mla_errorf(MLA_ERR_DEVICE, "engine %s: %s: read_tap returned OK and no tensor, expected one of shape [%s]",
                          e->name, tn, ws);
    if ((unsigned)t->dtype >= MLA_DTYPE_COUNT || !t->data)
        return mla_errorf(MLA_ERR_DEVICE, "engine %s: %s: read_tap returned dtype %d%s, expected a tensor with data of a "
                          "known dtype", e->name, tn, (int)t->dtype, t->data ? "" : " and no data");
    int bad = t->ndim != nd;
    for (int i = 0; !bad && i < nd; i++) bad = t->shape[i] != want[i];
    if (!bad) return MLA_OK;
    for (int i = 0; i < t->ndim && i < MLA_MAX_DIMS; i++) {
        size_t k = strlen(gs);
        snprintf(gs + k, sizeof gs - k, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    }
    return mla_errorf(MLA_ERR_DEVICE, "engine %s: %s: expected shape [%s] (%lld rows, the call's new tokens), got [%s] (rank %d)",
                      e->name, tn, ws, (long long)ntok, gs, t->ndim);
}

/* Per sequence bookkeeping: which rows of each tap some call produced. */
typedef struct {
    mla_dump *d;
    unsigned char **have; /* [slots] NULL until the tap is first produced, then [len] 1 per row produced */
} drive_seq;

static mla_status gather_call(mla_engine *e, const mla_config *cfg, drive_seq *seqs, const mla_batch *b,
                              const int *lens)
{
    int L = cfg->num_hidden_layers;
    int64_t ntok = mla_batch_tokens(b);
    if (ntok == 0) return MLA_OK; /* every entry empty: nothing computed */
    for (int layer = -1; layer < L; layer++) {
        for (int tap = 0; tap < MLA_TAP_COUNT; tap++) {
            if ((layer < 0) == mla_tap_is_layer((mla_tap)tap)) continue;
            if (layer >= 0 && !mla_tap_in_layer((mla_tap)tap, cfg, layer)) continue;
            int slot = (layer < 0 ? 0 : layer + 1) * MLA_TAP_COUNT + tap;
            mla_tensor *t = NULL;
            mla_status st = e->ops->read_tap(e->ctx, layer < 0 ? 0 : layer, (mla_tap)tap, &t);
            if (st == MLA_ERR_UNSUPPORTED) { /* this call did not make it: its rows stay absent */
                mla_clear_error();
                continue;
            }
            if (st) return st;
            if ((st = check_tap(e, cfg, layer, (mla_tap)tap, t, ntok))) {
                mla_tensor_free(t);
                return st;
            }
            int64_t row = 0;
            for (int s = 0; s < b->n_seqs; s++) {
                int k = b->seq_ids[s];
                drive_seq *q = &seqs[k];
                if (b->n_new[s] == 0) continue;
                mla_tensor **dst = mla_dump_slot(q->d, layer < 0 ? 0 : layer, (mla_tap)tap);
                if (!*dst) {
                    int64_t shape[MLA_MAX_DIMS];
                    memcpy(shape, t->shape, sizeof shape);
                    shape[0] = lens[k];
                    q->have[slot] = calloc((size_t)lens[k] + 1, 1);
                    st = q->have[slot] ? mla_tensor_new(dst, t->dtype, t->ndim, shape, mla_tap_name((mla_tap)tap))
                                       : mla_errorf(MLA_ERR_NOMEM, "driver: rows of tap %s", mla_tap_name((mla_tap)tap));
                    if (st) {
                        mla_tensor_free(t);
                        return st;
                    }
                }
                copy_rows(*dst, b->n_past[s], t, row, b->n_new[s]);
                memset(q->have[slot] + b->n_past[s], 1, (size_t)b->n_new[s]);
                row += b->n_new[s];
            }
            mla_tensor_free(t);
        }
    }
    return MLA_OK;
}

mla_sched_plan mla_sched_plan_of(int sched_seed, int index, const int32_t *tokens, int len, int base_chunk)
{
    /* from the tokens alone, not the seed: `bisect --replay` reruns one sequence from its saved
     * tokens and the case's chunk, and must compute the same calls */
    uint64_t own = mla_rng_stream(mla_fnv1a(MLA_FNV1A_INIT, tokens, (size_t)len * 4), 0);
    mla_sched_plan p;
    /* chunks of base .. base+4 tokens cross the cache's pages and the kernels' tiles at varied offsets */
    p.chunk = (base_chunk > 0 ? base_chunk : 7) + (int)mla_rng_below(&own, 5);
    /* a decoded tail of 4 .. 24 tokens (never the whole prompt: the first token is prefilled) */
    int tail = 4 + (int)mla_rng_below(&own, 21);
    p.prompt = len - (tail < len - 1 ? tail : len - 1);
    if (p.prompt < 1) p.prompt = len;
    uint64_t arr = mla_rng_stream((uint64_t)(uint32_t)sched_seed, 0);
    p.arrive = 0;
    for (int k = 1; k <= index; k++) p.arrive += 1 + (int)mla_rng_below(&arr, 3);
    return p;
}

/* The batch state of one drive: per sequence, tokens run (prog) and its plan (staggered). */
typedef struct {
    mla_engine *e;
    const mla_config *cfg;
    drive_seq *seqs;
    const int32_t *const *tokens;
    const int *lens;
    int n;
    int32_t *ids, *past, *nnew, *prog, *tok;
} drive_state;

/* One forward call over m entries (ids/past/nnew already set; tokens gathered here), then its taps. */
static mla_status call(drive_state *x, int m, int mha)
{
    int64_t nt = 0;
    for (int i = 0; i < m; i++) {
        memcpy(x->tok + nt, x->tokens[x->ids[i]] + x->past[i], (size_t)x->nnew[i] * sizeof(int32_t));
        nt += x->nnew[i];
    }
    mla_batch b = {.n_seqs = m, .seq_ids = x->ids, .n_past = x->past, .n_new = x->nnew, .tokens = x->tok};
    mla_status st = mha ? x->e->ops->forward_mha(x->e->ctx, &b) : x->e->ops->forward_mqa(x->e->ctx, &b);
    if (!st) st = gather_call(x->e, x->cfg, x->seqs, &b, x->lens);
    if (!st)
        for (int i = 0; i < m; i++) x->prog[x->ids[i]] += x->nnew[i];
    return st;
}

/* The lockstep paths: every unfinished sequence steps in every call, the same way. */
static mla_status run_lockstep(drive_state *x, const mla_drive_opts *o)
{
    for (int first = 1;; first = 0) {
        int m = 0;
        for (int s = 0; s < x->n; s++) {
            int left = x->lens[s] - x->prog[s], take;
            if (left <= 0) continue;
            if (o->path == MLA_PATH_PREFILL)
                take = left;
            else if (o->path == MLA_PATH_CHUNKED)
                take = o->chunk > 0 ? o->chunk : 7;
            else if (first && o->prefill_len > 0)
                take = o->prefill_len;
            else
                take = o->decode_step > 0 ? o->decode_step : 1;
            x->ids[m] = s;
            x->past[m] = x->prog[s];
            x->nnew[m++] = take > left ? left : take;
        }
        if (m == 0) return MLA_OK;
        int prefill_call = o->path != MLA_PATH_DECODE || (first && o->prefill_len > 0);
        mla_status st = call(x, m, prefill_call && !o->absorbed_only);
        if (st) return st;
    }
}

/* The staggered schedule (the file's comment): per step, the prefill chunks of the arrived
 * sequences still in their prompt through forward_mha, then the decodes through forward_mqa; every
 * other slot listed with n_new == 0, the list rotated by the step. */
static mla_status run_staggered(drive_state *x, const mla_drive_opts *o)
{
    mla_sched_plan *pl = malloc((size_t)x->n * sizeof *pl);
    unsigned char *in_prompt = malloc((size_t)x->n); /* at the step's start: a sequence that finishes its
                                                       * prompt in a step decodes from the next one, as in vLLM */
    if (!pl || !in_prompt) {
        free(pl);
        free(in_prompt);
        return mla_errorf(MLA_ERR_NOMEM, "driver: %d schedule plans", x->n);
    }
    for (int s = 0; s < x->n; s++) pl[s] = mla_sched_plan_of(o->sched_seed, s, x->tokens[s], x->lens[s], o->chunk);
    mla_status st = MLA_OK;
    for (int step = 0; !st; step++) {
        int left = 0;
        for (int s = 0; s < x->n; s++) left += x->prog[s] < x->lens[s];
        if (!left) break;
        for (int s = 0; s < x->n; s++) in_prompt[s] = x->prog[s] < pl[s].prompt;
        for (int form = 0; form < 2 && !st; form++) { /* 0: prefill chunks (mha), 1: decodes (mqa) */
            int m = 0, busy = 0;
            for (int r = 0; r < x->n; r++) {
                int s = (r + step) % x->n, take = 0;
                int run = step >= pl[s].arrive && x->prog[s] < x->lens[s];
                int rest = pl[s].prompt - x->prog[s];
                if (run && form == 0 && in_prompt[s]) take = rest < pl[s].chunk ? rest : pl[s].chunk;
                if (run && form == 1 && !in_prompt[s]) take = 1;
                x->ids[m] = s;
                x->past[m] = x->prog[s];
                x->nnew[m++] = take;
                busy += take > 0;
            }
            if (busy) st = call(x, m, form == 0 && !o->absorbed_only);
        }
    }
    free(pl);
    free(in_prompt);
    return st;
}

mla_status mla_drive(mla_engine *e, const mla_config *cfg, int n_seqs, const int32_t *const *tokens,
                     const int *lens, const mla_drive_opts *o, mla_dump **dumps)
{
    int L = cfg->num_hidden_layers, slots = (L + 1) * MLA_TAP_COUNT;
    mla_status st = MLA_OK;
    drive_seq *seqs = calloc((size_t)n_seqs, sizeof *seqs);
    int64_t total = 0;
    for (int s = 0; s < n_seqs; s++) total += lens[s];
    drive_state x = {.e = e, .cfg = cfg, .seqs = seqs, .tokens = tokens, .lens = lens, .n = n_seqs,
                     .ids = malloc((size_t)n_seqs * sizeof(int32_t)),
                     .past = calloc((size_t)n_seqs, sizeof(int32_t)),
                     .nnew = malloc((size_t)n_seqs * sizeof(int32_t)),
                     .prog = calloc((size_t)n_seqs, sizeof(int32_t)),
                     .tok = malloc((size_t)(total + 1) * sizeof(int32_t))};
    if (!seqs || !x.ids || !x.past || !x.prog || !x.nnew || !x.tok) {
        st = mla_errorf(MLA_ERR_NOMEM, "driver: buffers");
        goto done;
    }
    if ((st = e->ops->reset(e->ctx))) goto done;
    for (int s = 0; s < n_seqs; s++) {
        dumps[s] = NULL;
        if ((st = mla_dump_new(&seqs[s].d, cfg))) goto done;
        seqs[s].have = calloc((size_t)slots, sizeof *seqs[s].have);
        if (!seqs[s].have) {
            st = mla_errorf(MLA_ERR_NOMEM, "driver: buffers");
            goto done;
        }
        int64_t sh = lens[s];
        if ((st = mla_tensor_new(&seqs[s].d->tokens, MLA_I32, 1, &sh, "tokens"))) goto done;
        memcpy(seqs[s].d->tokens->data, tokens[s], (size_t)lens[s] * sizeof(int32_t));
        seqs[s].d->meta.prefill_len = o->path == MLA_PATH_DECODE ? o->prefill_len : 0;
        seqs[s].d->meta.chunk = o->path == MLA_PATH_CHUNKED ? (o->chunk > 0 ? o->chunk : 7) : 0;
        snprintf(seqs[s].d->meta.path, sizeof seqs[s].d->meta.path, "%s", mla_path_name(o->path));
        /* the dump's attribute keeps its 64 bytes (a long plugin path is cut, as before) */
        snprintf(seqs[s].d->meta.engine, sizeof seqs[s].d->meta.engine, "%.*s", (int)sizeof seqs[s].d->meta.engine - 1,
                 e->name);
    }
    st = o->path == MLA_PATH_STAGGERED ? run_staggered(&x, o) : run_lockstep(&x, o);
    if (st) goto done;
    for (int s = 0; s < n_seqs; s++) {
        for (int i = 0; i < slots; i++) {
            unsigned char *h = seqs[s].have[i];
            if (!h) continue;
            int full = 1;
            for (int r = 0; r < lens[s] && full; r++) full = h[r];
            seqs[s].have[i] = NULL;
            int layer = i < MLA_TAP_COUNT ? 0 : i / MLA_TAP_COUNT - 1;
            if (full) free(h);
            else mla_dump_set_rows(seqs[s].d, layer, (mla_tap)(i % MLA_TAP_COUNT), h);
        }
        dumps[s] = seqs[s].d;
        seqs[s].d = NULL;
    }
done:
    if (seqs)
        for (int s = 0; s < n_seqs; s++) {
            mla_dump_free(seqs[s].d);
            if (seqs[s].have)
                for (int i = 0; i < slots; i++) free(seqs[s].have[i]);
            free(seqs[s].have);
        }
    free(seqs);
    free(x.ids);
    free(x.past);
    free(x.prog);
    free(x.nnew);
    free(x.tok);
    return st;
}
