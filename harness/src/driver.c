/* driver.c: schedules (prefill / decode / chunked) over a backend, gathering taps by position. */
#include "mlacheck/driver.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const path_names[] = {"prefill", "decode", "chunked"};

const char *mla_path_name(mla_path p) { return (unsigned)p < 3 ? path_names[p] : "?"; }

int mla_path_from_name(const char *name, mla_path *out)
{
    for (int i = 0; i < 3; i++)
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
    char tn[96]; /* "layer 3 tap attn_core", or "global tap logits" */
    if (layer < 0) snprintf(tn, sizeof tn, "global tap %s", mla_tap_name(tap));
    else snprintf(tn, sizeof tn, "layer %d tap %s", layer, mla_tap_name(tap));
    if (!t) return mla_errorf(MLA_ERR_FORMAT, "engine %s: %s: read_tap returned OK and no tensor", e->name, tn);
    if ((unsigned)t->dtype >= MLA_DTYPE_COUNT || !t->data)
        return mla_errorf(MLA_ERR_FORMAT, "engine %s: %s: expected a tensor with data of a known dtype, got dtype %d%s",
                          e->name, tn, (int)t->dtype, t->data ? "" : " and no data");
    int64_t want[MLA_MAX_DIMS];
    int nd = mla_tap_shape(tap, cfg, ntok, want);
    char ws[160] = "", gs[160] = "";
    int bad = t->ndim != nd;
    for (int i = 0; i < nd; i++) {
        size_t k = strlen(ws);
        snprintf(ws + k, sizeof ws - k, "%s%lld", i ? "," : "", (long long)want[i]);
        if (!bad && t->shape[i] != want[i]) bad = 1;
    }
    if (!bad) return MLA_OK;
    for (int i = 0; i < t->ndim && i < MLA_MAX_DIMS; i++) {
        size_t k = strlen(gs);
        snprintf(gs + k, sizeof gs - k, "%s%lld", i ? "," : "", (long long)t->shape[i]);
    }
    return mla_errorf(MLA_ERR_FORMAT, "engine %s: %s: expected shape [%s] (%lld rows, the call's new tokens), got [%s] (rank %d)",
                      e->name, tn, ws, (long long)ntok, gs, t->ndim);
}

/* Per sequence bookkeeping: which taps every call so far produced. */
typedef struct {
    mla_dump *d;
    unsigned char *lost;  /* [slots] 1 when some call lacked it */
} drive_seq;

static mla_status gather_call(mla_engine *e, const mla_config *cfg, drive_seq *seqs, const mla_batch *b,
                              const int *lens)
{
    int L = cfg->num_hidden_layers;
    int64_t ntok = 0;
    for (int s = 0; s < b->n_seqs; s++) ntok += b->n_new[s];
    for (int layer = -1; layer < L; layer++) {
        for (int tap = 0; tap < MLA_TAP_COUNT; tap++) {
            if ((layer < 0) == mla_tap_is_layer((mla_tap)tap)) continue;
            if (layer >= 0 && !mla_tap_in_layer((mla_tap)tap, cfg, layer)) continue;
            int slot = (layer < 0 ? 0 : layer + 1) * MLA_TAP_COUNT + tap;
            mla_tensor *t = NULL;
            mla_status st = e->ops->read_tap(e->ctx, layer < 0 ? 0 : layer, (mla_tap)tap, &t);
            if (st == MLA_ERR_UNSUPPORTED) {
                for (int s = 0; s < b->n_seqs; s++) seqs[b->seq_ids[s]].lost[slot] = 1;
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
                drive_seq *q = &seqs[b->seq_ids[s]];
                if (!q->lost[slot]) {
                    mla_tensor **dst = mla_dump_slot(q->d, layer < 0 ? 0 : layer, (mla_tap)tap);
                    if (!*dst) {
                        int64_t shape[MLA_MAX_DIMS];
                        memcpy(shape, t->shape, sizeof shape);
                        shape[0] = lens[b->seq_ids[s]];
                        if ((st = mla_tensor_new(dst, t->dtype, t->ndim, shape, mla_tap_name((mla_tap)tap)))) {
                            mla_tensor_free(t);
                            return st;
                        }
                    }
                    copy_rows(*dst, b->n_past[s], t, row, b->n_new[s]);
                }
                row += b->n_new[s];
            }
            mla_tensor_free(t);
        }
    }
    return MLA_OK;
}

mla_status mla_drive(mla_engine *e, const mla_config *cfg, int n_seqs, const int32_t *const *tokens,
                     const int *lens, const mla_drive_opts *o, mla_dump **dumps)
{
    int L = cfg->num_hidden_layers, slots = (L + 1) * MLA_TAP_COUNT;
    mla_status st = MLA_OK;
    drive_seq *seqs = calloc((size_t)n_seqs, sizeof *seqs);
    int32_t *ids = malloc((size_t)n_seqs * sizeof(int32_t));
    int32_t *past = calloc((size_t)n_seqs, sizeof(int32_t));
    int32_t *prog = calloc((size_t)n_seqs, sizeof(int32_t));
    int32_t *nnew = malloc((size_t)n_seqs * sizeof(int32_t));
    int64_t total = 0;
    for (int s = 0; s < n_seqs; s++) total += lens[s];
    int32_t *tok = malloc((size_t)(total + 1) * sizeof(int32_t));
    if (!seqs || !ids || !past || !prog || !nnew || !tok) {
        st = mla_errorf(MLA_ERR_NOMEM, "driver: buffers");
        goto done;
    }
    if ((st = e->ops->reset(e->ctx))) goto done;
    for (int s = 0; s < n_seqs; s++) {
        dumps[s] = NULL;
        if ((st = mla_dump_new(&seqs[s].d, cfg))) goto done;
        seqs[s].lost = calloc((size_t)slots, 1);
        if (!seqs[s].lost) {
            st = mla_errorf(MLA_ERR_NOMEM, "driver: buffers");
            goto done;
        }
        int64_t sh = lens[s];
        if ((st = mla_tensor_new(&seqs[s].d->tokens, MLA_I32, 1, &sh, "tokens"))) goto done;
        memcpy(seqs[s].d->tokens->data, tokens[s], (size_t)lens[s] * sizeof(int32_t));
        seqs[s].d->meta.prefill_len = o->path == MLA_PATH_DECODE ? o->prefill_len : 0;
        seqs[s].d->meta.chunk = o->path == MLA_PATH_CHUNKED ? (o->chunk > 0 ? o->chunk : 7) : 0;
        snprintf(seqs[s].d->meta.path, sizeof seqs[s].d->meta.path, "%s", mla_path_name(o->path));
        snprintf(seqs[s].d->meta.engine, sizeof seqs[s].d->meta.engine, "%s", e->name);
    }
    int first = 1;
    for (;;) { /* one forward call per iteration; prog[s] = tokens of sequence s already run */
        int m = 0;
        int64_t nt = 0;
        for (int s = 0; s < n_seqs; s++) {
            int left = lens[s] - prog[s], take;
            if (left <= 0) continue;
            if (o->path == MLA_PATH_PREFILL)
                take = left;
            else if (o->path == MLA_PATH_CHUNKED)
                take = o->chunk > 0 ? o->chunk : 7;
            else if (first && o->prefill_len > 0)
                take = o->prefill_len;
            else
                take = o->decode_step > 0 ? o->decode_step : 1;
            if (take > left) take = left;
            ids[m] = s;
            past[m] = prog[s];
            nnew[m] = take;
            memcpy(tok + nt, tokens[s] + prog[s], (size_t)take * sizeof(int32_t));
            nt += take;
            m++;
        }
        if (m == 0) break;
        mla_batch b = {.n_seqs = m, .seq_ids = ids, .n_past = past, .n_new = nnew, .tokens = tok};
        int prefill_call = o->path != MLA_PATH_DECODE || (first && o->prefill_len > 0);
        int mha = prefill_call && !o->absorbed_only;
        st = mha ? e->ops->forward_mha(e->ctx, &b) : e->ops->forward_mqa(e->ctx, &b);
        if (!st) st = gather_call(e, cfg, seqs, &b, lens);
        if (st) goto done;
        for (int i = 0; i < m; i++) prog[ids[i]] += nnew[i];
        first = 0;
    }
    for (int s = 0; s < n_seqs; s++) {
        for (int i = 0; i < slots; i++)
            if (seqs[s].lost[i]) {
                mla_tensor **p = i < MLA_TAP_COUNT ? &seqs[s].d->global[i]
                                                   : &seqs[s].d->layer[(i / MLA_TAP_COUNT - 1) * MLA_TAP_COUNT + i % MLA_TAP_COUNT];
                mla_tensor_free(*p);
                *p = NULL;
            }
        dumps[s] = seqs[s].d;
        seqs[s].d = NULL;
    }
done:
    if (seqs)
        for (int s = 0; s < n_seqs; s++) {
            mla_dump_free(seqs[s].d);
            free(seqs[s].lost);
        }
    free(seqs);
    free(ids);
    free(past);
    free(prog);
    free(nnew);
    free(tok);
    return st;
}
