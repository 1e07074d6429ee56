/* gpu_forward.hip: one forward call of the GPU engine as a flat list of launches (llm.c style),
 * both MLA forms, MoE, taps, and read_tap / read_kv. Rounding points follow reference/NUMERICS.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_dtype.h"
#include "gpu_internal.h"

mla_status gpu_forward_mha(void *vctx, const mla_batch *b);
mla_status gpu_forward_mqa(void *vctx, const mla_batch *b);
mla_status gpu_read_tap(void *vctx, int layer, mla_tap tap, mla_tensor **out);
mla_status gpu_read_kv(void *vctx, int layer, int seq_id, mla_tensor **out);

#define TRY(x)                                                                                     \
    do {                                                                                           \
        mla_status st_ = (x);                                                                      \
        if (st_ != MLA_OK) return st_;                                                             \
    } while (0)

static size_t tap_elem(mla_tap t)
{
    (void)t;
    return t == MLA_TAP_LSE || t == MLA_TAP_ROUTER_LOGITS || t == MLA_TAP_TOPK_IDS || t == MLA_TAP_TOPK_WEIGHTS ||
                   t == MLA_TAP_LOGITS
               ? 4
               : 2;
}

/* The device buffer of a tap for this call (marked valid). */
static mla_status tap_buf(gpu_ctx *c, int layer, mla_tap t, void **p)
{
    int64_t shape[MLA_MAX_DIMS];
    int nd = mla_tap_shape(t, &c->cfg, c->ntok, shape);
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    int li = mla_tap_is_layer(t) ? layer : c->cfg.num_hidden_layers;
    gpu_tap *tp = &c->taps[li * MLA_TAP_COUNT + t];
    TRY(gpu_buf_ensure(&tp->buf, (size_t)n * tap_elem(t)));
    tp->valid = 1;
    *p = tp->buf.p;
    return MLA_OK;
}

#define TAP(layer, t, ptr) TRY(tap_buf(c, (layer), (t), (void **)&(ptr)))
/* ptr = scratch buffer `buf` (gpu_scratch.h), grown to at least `bytes`. */
#define SCR(buf, bytes, ptr)                                                                       \
    do {                                                                                           \
        TRY(gpu_buf_ensure(&c->scratch.buf, (size_t)(bytes)));                                     \
        (ptr) = (decltype(ptr))c->scratch.buf.p;                                                   \
    } while (0)

/* y [m, n] (row stride ldy) = x [m, k] . W^T; fp8w linears quantize x per 1x128 group first. */
static mla_status lin(gpu_ctx *c, const gpu_linear *l, const uint16_t *x, int64_t ldx, int m, uint16_t *y,
                      int64_t ldy)
{
    if (l->q) {
        uint8_t *xq;
        float *xs;
        SCR(act_q8, (size_t)m * l->k, xq);
        SCR(act_q8_scale, (size_t)m * ((l->k + 127) / 128) * 4, xs);
        TRY(gpu_act_quant(c->stream, x, ldx, m, l->k, xq, xs));
        return gpu_gemm_fp8(c->stream, xq, xs, l->q, l->s, y, ldy, m, l->n, l->k);
    }
    const gpu_gemm_args a = {.x = x, .ldx = ldx, .x_bs = 0, .w = l->w, .ldw = l->k, .w_bs = 0, .y = y, .ldy = ldy,
                             .y_bs = 0, .m = m, .n = l->n, .k = l->k, .batch = 1, .y_f32 = 0};
    return gpu_gemm_bf16(c->stream, &a);
}

/* y [m, D] = down(bf16(silu(gate x) * up x)); every intermediate rounded to bf16. */
static mla_status mlp(gpu_ctx *c, const gpu_mlp *p, const uint16_t *x, int m, uint16_t *y)
{
    int I = p->gate.n, D = c->cfg.hidden_size;
    uint16_t *g, *u, *a;
    SCR(mlp_gate, (size_t)m * I * 2, g);
    SCR(mlp_up, (size_t)m * I * 2, u);
    SCR(mlp_act, (size_t)m * I * 2, a);
    TRY(lin(c, &p->gate, x, D, m, g, I));
    TRY(lin(c, &p->up, x, D, m, u, I));
    TRY(gpu_silu_mul(c->stream, g, u, a, (int64_t)m * I));
    return lin(c, &p->down, a, I, m, y, D);
}

static mla_status moe(gpu_ctx *c, int li, const uint16_t *xn, int T, uint16_t *out)
{
    const mla_config *g = &c->cfg;
    const gpu_layer *ly = &c->layers[li];
    int D = g->hidden_size, E = g->n_routed_experts, K = g->num_experts_per_tok;
    float *logits, *w;
    int32_t *ids;
    TAP(li, MLA_TAP_ROUTER_LOGITS, logits);
    TAP(li, MLA_TAP_TOPK_IDS, ids);
    TAP(li, MLA_TAP_TOPK_WEIGHTS, w);
    TRY(gpu_router_logits(c->stream, xn, ly->gate, T, E, D, logits));
    const gpu_route_args ra = {.logits = logits,
                               .bias = ly->bias,
                               .ids = ids,
                               .w = w,
                               .t = T,
                               .e = E,
                               .k = K,
                               .n_group = g->n_group,
                               .topk_group = g->topk_group,
                               .sigmoid = g->scoring_func == MLA_SCORE_SIGMOID,
                               .group_limited = g->topk_method != MLA_TOPK_GREEDY,
                               .norm = g->norm_topk_prob,
                               .apply_scaling = !(c->opts.faults & MLA_FAULT(MLA_FAULT_ROUTED_SCALING)),
                               .scaling = (float)g->routed_scaling_factor};
    TRY(gpu_route(c->stream, &ra));
    /* Group tokens by expert on the host (one sync per MoE layer; speed is a later issue). */
    size_t nk = (size_t)T * K;
    /* h_ids/h_w: the routing as computed; h_rows/h_rw: the same pairs grouped by expert */
    int32_t *h_ids = (int32_t *)malloc(nk * 4), *h_rows = (int32_t *)malloc(nk * 4);
    float *h_w = (float *)malloc(nk * 4), *h_rw = (float *)malloc(nk * 4);
    int *cnt = (int *)calloc((size_t)E + 1, sizeof(int));
    mla_status st = (h_ids && h_rows && h_w && h_rw && cnt) ? MLA_OK : mla_errorf(MLA_ERR_NOMEM, "gpu: moe staging");
    if (st == MLA_OK && (hipMemcpyAsync(h_ids, ids, nk * 4, hipMemcpyDeviceToHost, c->stream) != hipSuccess ||
                         hipMemcpyAsync(h_w, w, nk * 4, hipMemcpyDeviceToHost, c->stream) != hipSuccess ||
                         hipStreamSynchronize(c->stream) != hipSuccess))
        st = mla_errorf(MLA_ERR_DEVICE, "gpu: layer %d: copying routing back failed: %s", li,
                        hipGetErrorString(hipGetLastError()));
    if (st == MLA_OK) {
        for (size_t i = 0; i < nk; i++) {
            if (h_ids[i] < 0 || h_ids[i] >= E) {
                st = mla_errorf(MLA_ERR_DEVICE, "gpu: layer %d: routed expert id %d out of [0, %d)", li, h_ids[i], E);
                break;
            }
            cnt[h_ids[i] + 1]++;
        }
    }
    int32_t *d_rows = NULL;
    float *d_rw = NULL, *acc = NULL;
    uint16_t *xg = NULL, *yg = NULL;
    if (st == MLA_OK) {
        for (int e = 0; e < E; e++) cnt[e + 1] += cnt[e];
        int *fill = (int *)calloc((size_t)E, sizeof(int));
        if (!fill) st = mla_errorf(MLA_ERR_NOMEM, "gpu: moe staging");
        for (size_t i = 0; st == MLA_OK && i < nk; i++) {
            int e = h_ids[i], at = cnt[e] + fill[e]++;
            h_rows[at] = (int32_t)(i / K);
            h_rw[at] = h_w[i];
        }
        free(fill);
    }
    gpu_scratch *sc = &c->scratch;
    if (st == MLA_OK) st = gpu_buf_ensure(&sc->moe_rows, nk * 4);
    if (st == MLA_OK) st = gpu_buf_ensure(&sc->moe_weight, nk * 4);
    if (st == MLA_OK) {
        d_rows = (int32_t *)sc->moe_rows.p;
        d_rw = (float *)sc->moe_weight.p;
        if (hipMemcpyAsync(d_rows, h_rows, nk * 4, hipMemcpyHostToDevice, c->stream) != hipSuccess ||
            hipMemcpyAsync(d_rw, h_rw, nk * 4, hipMemcpyHostToDevice, c->stream) != hipSuccess ||
            hipStreamSynchronize(c->stream) != hipSuccess)
            st = mla_errorf(MLA_ERR_DEVICE, "gpu: layer %d: uploading expert rows failed", li);
    }
    if (st == MLA_OK) st = gpu_buf_ensure(&sc->moe_acc, (size_t)T * D * 4);
    if (st == MLA_OK) st = gpu_buf_ensure(&sc->moe_x, (size_t)T * D * 2);
    if (st == MLA_OK) st = gpu_buf_ensure(&sc->moe_y, (size_t)T * D * 2);
    if (st == MLA_OK) {
        acc = (float *)sc->moe_acc.p;
        xg = (uint16_t *)sc->moe_x.p;
        yg = (uint16_t *)sc->moe_y.p;
        st = gpu_acc_init(c->stream, acc, (int64_t)T * D);
    }
    for (int e = 0; e < E && st == MLA_OK; e++) {
        int n = cnt[e + 1] - cnt[e];
        if (n == 0) continue;
        st = gpu_gather_rows(c->stream, xn, d_rows + cnt[e], n, D, xg);
        if (st == MLA_OK) st = mlp(c, &ly->experts[e], xg, n, yg);
        if (st == MLA_OK)
            st = gpu_scatter_acc(c->stream, yg, d_rows + cnt[e], d_rw + cnt[e], n, D, acc);
    }
    free(h_ids);
    free(h_rows);
    free(h_w);
    free(h_rw);
    free(cnt);
    if (st != MLA_OK) return st;
    const uint16_t *shared = NULL;
    if (ly->shared.gate.n > 0) {
        TRY(mlp(c, &ly->shared, xn, T, out));
        shared = out;
    }
    return gpu_acc_finish(c->stream, acc, shared, out, (int64_t)T * D);
}

/* The decode's split plan: kv_splits equal runs when the options fix it, else gpu_decode_plan over the
 * keys each decode token attends (plus: the causal-off-by-one fault's extra key). */
static mla_status choose_splits(const gpu_ctx *c, const mla_batch *b, int T, const gpu_kv_desc *kv, int plus,
                                gpu_split_plan *p)
{
    p->split_len = 0;
    p->splits = c->opts.kv_splits;
    if (p->splits > 0) return MLA_OK;
    int *tot = (int *)malloc((size_t)T * sizeof(int)), t = 0;
    if (!tot) return mla_errorf(MLA_ERR_NOMEM, "gpu: decode split plan");
    for (int i = 0; i < b->n_seqs; i++)
        for (int j = 0; j < b->n_new[i] && t < T; j++, t++) {
            const int all = b->n_past[i] + b->n_new[i], k = b->n_past[i] + j + 1 + plus;
            tot[t] = k < all ? k : all;
        }
    const int H = c->cfg.num_attention_heads;
    const gpu_decode_kernel k = gpu_decode_pick(c->decode_kernel, kv, H);
    *p = gpu_decode_plan(tot, t, gpu_decode_blocks(1, H, k, kv), c->n_sm, k);
    free(tot);
    return MLA_OK;
}

/* The batch contract of backend.h (mla_batch_validate), against this engine's cache. */
static mla_status validate(gpu_ctx *c, const mla_batch *b)
{
    if (!c || !c->loaded) return mla_errorf(MLA_ERR_INVALID, "gpu: forward before load");
    mla_batch_limits lim; /* C++17: named fields one per line instead of designated initialisers */
    lim.max_seqs = c->opts.max_seqs;
    lim.max_seq_len = c->opts.max_seq_len;
    lim.vocab_size = c->cfg.vocab_size;
    lim.cached = c->seq_len;
    return mla_batch_validate("gpu", b, &lim);
}

/* A validated batch without empty entries (forward_nonempty). */
static mla_status forward(gpu_ctx *c, const mla_batch *b, int absorbed)
{
    const mla_config *g = &c->cfg;
    const unsigned F = c->opts.faults;
    int T = (int)mla_batch_tokens(b), L = g->num_hidden_layers, D = g->hidden_size, H = g->num_attention_heads;
    int P = g->qk_nope_head_dim, R = g->qk_rope_head_dim, V = g->v_head_dim, C = g->kv_lora_rank, Lq = g->q_lora_rank;
    int N = g->vocab_size, S = b->n_seqs;
    float eps = (float)g->rms_norm_eps;
    hipStream_t st = c->stream;
    c->ntok = T;
    for (int i = 0; i < (L + 1) * MLA_TAP_COUNT; i++) c->taps[i].valid = 0;

    /* per-call metadata */
    gpu_seq *hs = (gpu_seq *)malloc((size_t)S * sizeof(gpu_seq));
    int32_t *hts = (int32_t *)malloc((size_t)T * 4);
    if (!hs || !hts) {
        free(hs);
        free(hts);
        return mla_errorf(MLA_ERR_NOMEM, "gpu: batch metadata");
    }
    int tok = 0, ws = 0;
    for (int i = 0; i < S; i++) {
        hs[i].slot = b->seq_ids[i];
        hs[i].n_past = b->n_past[i];
        hs[i].n_new = b->n_new[i];
        hs[i].tok0 = tok;
        hs[i].ws0 = ws;
        for (int j = 0; j < b->n_new[i]; j++) hts[tok + j] = i;
        tok += b->n_new[i];
        ws += b->n_past[i] + b->n_new[i];
    }
    int n_ws = ws;
    int32_t *d_tok, *d_ts;
    gpu_seq *d_seqs;
    gpu_scratch *sc = &c->scratch;
    mla_status ms = gpu_buf_ensure(&sc->tokens, (size_t)T * 4);
    if (ms == MLA_OK) ms = gpu_buf_ensure(&sc->tok_seq, (size_t)T * 4);
    if (ms == MLA_OK) ms = gpu_buf_ensure(&sc->seqs, (size_t)S * sizeof(gpu_seq));
    if (ms == MLA_OK &&
        (hipMemcpyAsync(sc->tokens.p, b->tokens, (size_t)T * 4, hipMemcpyHostToDevice, st) != hipSuccess ||
         hipMemcpyAsync(sc->tok_seq.p, hts, (size_t)T * 4, hipMemcpyHostToDevice, st) != hipSuccess ||
         hipMemcpyAsync(sc->seqs.p, hs, (size_t)S * sizeof(gpu_seq), hipMemcpyHostToDevice, st) != hipSuccess ||
         hipStreamSynchronize(st) != hipSuccess))
        ms = mla_errorf(MLA_ERR_DEVICE, "gpu: uploading batch metadata failed");
    free(hs);
    free(hts);
    TRY(ms);
    d_tok = (int32_t *)sc->tokens.p;
    d_ts = (int32_t *)sc->tok_seq.p;
    d_seqs = (gpu_seq *)sc->seqs.p;

    double scale = (F & MLA_FAULT(MLA_FAULT_NO_MSCALE)) ? 1.0 / sqrt((double)(P + R)) : mla_config_softmax_scale(g);
    int half = (F & MLA_FAULT(MLA_FAULT_ROPE_PAIRING)) ? 1 : 0;
    int plus = (F & MLA_FAULT(MLA_FAULT_CAUSAL_OFF_BY_ONE)) ? 1 : 0;
    int lse16 = (F & MLA_FAULT(MLA_FAULT_LSE_BF16)) ? 1 : 0;
    float af = (float)mla_config_rope_attn_factor(g);

    uint16_t *x;
    TAP(0, MLA_TAP_EMBED, x);
    TRY(gpu_embed(st, d_tok, c->embed, T, D, x));
    for (int li = 0; li < L; li++) {
        const gpu_layer *ly = &c->layers[li];
        const gpu_kv_desc kv = {.pool = c->kv_pool[li],
                                .tables = c->d_tables,
                                .blocks_per_seq = c->blocks_per_seq,
                                .block_size = c->opts.block_size,
                                .row_bytes = c->row_bytes,
                                .codec = c->kv_codec};
        uint16_t *xn, *q, *qn, *qpe, *kva, *kvc, *kpe, *core, *ao, *h, *fn, *fo, *out;
        float *lse;
        TAP(li, MLA_TAP_ATTN_NORM, xn);
        TRY(gpu_rmsnorm(st, x, D, ly->attn_norm, T, D, eps, xn, D));
        /* queries */
        SCR(q_proj, (size_t)T * H * (P + R) * 2, q);
        if (Lq > 0) {
            uint16_t *cq, *cqn;
            SCR(q_a, (size_t)T * Lq * 2, cq);
            SCR(q_a_normed, (size_t)T * Lq * 2, cqn);
            TRY(lin(c, &ly->q_a, xn, D, T, cq, Lq));
            TRY(gpu_rmsnorm(st, cq, Lq, ly->q_a_norm, T, Lq, eps, cqn, Lq));
            TRY(lin(c, &ly->q_b, cqn, Lq, T, q, H * (P + R)));
        } else {
            TRY(lin(c, &ly->q, xn, D, T, q, H * (P + R)));
        }
        TAP(li, MLA_TAP_Q_NOPE, qn);
        TAP(li, MLA_TAP_Q_PE, qpe);
        /* q_pe = rope(q[:, :, P:]), q_nope = q[:, :, :P] */
        const gpu_rope_args ra = {.in = q, .ld_in = P + R, .off_in = P, .heads = H, .r = R, .nope = P, .out = qpe,
                                  .nope_out = qn, .tok_seq = d_ts, .seqs = d_seqs, .inv_freq = c->inv_freq,
                                  .attn_factor = af, .half_split = half, .t = T};
        TRY(gpu_rope(st, &ra));
        /* latent */
        SCR(kv_a, (size_t)T * (C + R) * 2, kva);
        TRY(lin(c, &ly->kv_a, xn, D, T, kva, C + R));
        TAP(li, MLA_TAP_KV_C, kvc);
        TAP(li, MLA_TAP_K_PE, kpe);
        TRY(gpu_rmsnorm(st, kva, C + R, ly->kv_a_norm, T, C, eps, kvc, C));
        /* k_pe = rope(kv_a[:, C:]), one head */
        const gpu_rope_args rk = {.in = kva, .ld_in = C + R, .off_in = C, .heads = 1, .r = R, .nope = 0, .out = kpe,
                                  .nope_out = NULL, .tok_seq = d_ts, .seqs = d_seqs, .inv_freq = c->inv_freq,
                                  .attn_factor = af, .half_split = half, .t = T};
        TRY(gpu_rope(st, &rk));
        TRY(gpu_cache_write(st, kv, kvc, kpe, d_ts, d_seqs, T));
        TAP(li, MLA_TAP_ATTN_CORE, core);
        TAP(li, MLA_TAP_LSE, lse);
        if (!absorbed) {
            uint16_t *wkc, *wkp, *kvx;
            SCR(ws_kv_c, (size_t)n_ws * C * 2, wkc);
            SCR(ws_k_pe, (size_t)n_ws * R * 2, wkp);
            SCR(ws_k_nope_v, (size_t)n_ws * H * (P + V) * 2, kvx);
            TRY(gpu_gather_ws(st, kv, kvc, kpe, d_seqs, S, n_ws, wkc, wkp));
            /* kvx [n_ws, H (P+V)] = ws_kv_c . W_kvb^T */
            const gpu_gemm_args ka = {.x = wkc, .ldx = C, .x_bs = 0, .w = ly->kv_b.w, .ldw = C, .w_bs = 0, .y = kvx,
                                      .ldy = H * (P + V), .y_bs = 0, .m = n_ws, .n = H * (P + V), .k = C, .batch = 1,
                                      .y_f32 = 0};
            TRY(gpu_gemm_bf16(st, &ka));
            int max_new = 0, max_keys = 0;
            for (int i = 0; i < S; i++) {
                max_new = b->n_new[i] > max_new ? b->n_new[i] : max_new;
                max_keys = b->n_past[i] + b->n_new[i] > max_keys ? b->n_past[i] + b->n_new[i] : max_keys;
            }
            const gpu_prefill_args pa = {.q_nope = qn, .q_pe = qpe, .kvx = kvx, .ws_kpe = wkp, .tok_seq = d_ts,
                                         .seqs = d_seqs, .out = core, .lse = lse, .t = T, .h = H, .p = P, .r = R,
                                         .v = V, .scale = (float)scale, .causal_plus = plus, .lse_bf16 = lse16,
                                         .n_seqs = S, .max_new = max_new, .max_keys = max_keys,
                                         .kernel = c->prefill_kernel};
            TRY(gpu_attn_prefill(st, &pa));
        } else {
            uint16_t *qa, *olat;
            float *qaf, *qpf, *po, *pl;
            TAP(li, MLA_TAP_Q_ABSORBED, qa);
            /* q_absorbed[t, h, :] = q_nope[t, h, :] . W_UK^T[h] (per-head batched GEMM) */
            const gpu_gemm_args qa_args = {.x = qn, .ldx = (int64_t)H * P, .x_bs = P, .w = ly->w_uk_t, .ldw = P,
                                           .w_bs = (int64_t)C * P, .y = qa, .ldy = (int64_t)H * C, .y_bs = C,
                                           .m = T, .n = C, .k = P, .batch = H, .y_f32 = 0};
            TRY(gpu_gemm_bf16(st, &qa_args));
            SCR(q_abs_f32, (size_t)T * H * C * 4, qaf);
            SCR(q_pe_f32, (size_t)T * H * R * 4, qpf);
            float qscale = 0.0f;
            int qfnuz = 0;
            if (c->opts.profile == MLA_PROFILE_FP8KV && c->opts.fp8_query) {
                qscale = (float)c->opts.q_scale;
                qfnuz = c->fnuz;
            } else if (F & MLA_FAULT(MLA_FAULT_FP8_Q_SATURATION)) {
                qscale = 1.0f;
            }
            TRY(gpu_quant_query(st, qa, qpe, (int64_t)T * H, C, R, qscale, qfnuz, qaf, qpf));
            gpu_split_plan plan;
            TRY(choose_splits(c, b, T, &kv, plus, &plan));
            const int splits = plan.splits;
            SCR(o_latent, (size_t)T * H * C * 2, olat);
            SCR(split_o, (size_t)T * H * splits * C * 4, po);
            SCR(split_lse, (size_t)T * H * splits * 4, pl);
            const gpu_decode_args da = {.q_abs = qaf, .q_pe = qpf, .kv = kv, .tok_seq = d_ts, .seqs = d_seqs,
                                        .part_o = po, .part_lse = pl, .o_lat = olat, .lse = lse, .t = T, .h = H,
                                        .splits = splits, .split_len = plan.split_len, .scale = (float)scale,
                                        .causal_plus = plus,
                                        .lse_bf16 = lse16, .q_div = qscale > 0.0f ? qscale : 1.0f,
                                        .kernel = c->decode_kernel};
            TRY(gpu_attn_decode(st, &da));
            /* attn_core[t, h, :] = o_latent[t, h, :] . W_UV[h]^T */
            const gpu_gemm_args uv = {.x = olat, .ldx = (int64_t)H * C, .x_bs = C, .w = ly->kv_b.w + (size_t)P * C,
                                      .ldw = C, .w_bs = (int64_t)(P + V) * C, .y = core, .ldy = (int64_t)H * V,
                                      .y_bs = V, .m = T, .n = V, .k = C, .batch = H, .y_f32 = 0};
            TRY(gpu_gemm_bf16(st, &uv));
        }
        TAP(li, MLA_TAP_ATTN_OUT, ao);
        TRY(lin(c, &ly->o, core, H * V, T, ao, D));
        SCR(resid_attn, (size_t)T * D * 2, h);
        TRY(gpu_add(st, x, ao, h, (int64_t)T * D));
        TAP(li, MLA_TAP_FFN_NORM, fn);
        TRY(gpu_rmsnorm(st, h, D, ly->ffn_norm, T, D, eps, fn, D));
        TAP(li, MLA_TAP_FFN_OUT, fo);
        if (ly->moe)
            TRY(moe(c, li, fn, T, fo));
        else
            TRY(mlp(c, &ly->mlp, fn, T, fo));
        TAP(li, MLA_TAP_OUT, out);
        TRY(gpu_add(st, h, fo, out, (int64_t)T * D));
        x = out;
    }
    uint16_t *fnm;
    float *logits;
    TAP(0, MLA_TAP_FINAL_NORM, fnm);
    TRY(gpu_rmsnorm(st, x, D, c->final_norm, T, D, eps, fnm, D));
    TAP(0, MLA_TAP_LOGITS, logits);
    const gpu_gemm_args la = {.x = fnm, .ldx = D, .x_bs = 0, .w = c->lm_head, .ldw = D, .w_bs = 0, .y = logits,
                              .ldy = N, .y_bs = 0, .m = T, .n = N, .k = D, .batch = 1, .y_f32 = 1};
    TRY(gpu_gemm_bf16(st, &la));
    MLA_HIP_CHECK(hipStreamSynchronize(st));
    MLA_HIP_CHECK(hipGetLastError());
    for (int i = 0; i < S; i++) c->seq_len[b->seq_ids[i]] = b->n_past[i] + b->n_new[i];
    return MLA_OK;
}

/* n_new == 0 entries are no-ops (backend.h rule 4): validated with the others, then dropped so the
 * kernels' per-sequence metadata never holds an empty sequence; an all-empty batch leaves no tap. */
static mla_status forward_nonempty(gpu_ctx *c, const mla_batch *b, int absorbed)
{
    TRY(validate(c, b));
    mla_batch nb;
    int32_t *buf;
    TRY(mla_batch_drop_empty(b, &nb, &buf));
    mla_status s = MLA_OK;
    if (nb.n_seqs == 0) {
        for (int i = 0; i < (c->cfg.num_hidden_layers + 1) * MLA_TAP_COUNT; i++) c->taps[i].valid = 0;
        c->ntok = 0;
    } else {
        s = forward(c, &nb, absorbed);
    }
    free(buf);
    return s;
}

mla_status gpu_forward_mha(void *vctx, const mla_batch *b) { return forward_nonempty((gpu_ctx *)vctx, b, 0); }
mla_status gpu_forward_mqa(void *vctx, const mla_batch *b) { return forward_nonempty((gpu_ctx *)vctx, b, 1); }

mla_status gpu_read_tap(void *vctx, int layer, mla_tap tap, mla_tensor **out)
{
    gpu_ctx *c = (gpu_ctx *)vctx;
    *out = NULL;
    if (!c || !c->loaded) return mla_errorf(MLA_ERR_INVALID, "gpu: read_tap before load");
    if ((unsigned)tap >= MLA_TAP_COUNT) return mla_errorf(MLA_ERR_INVALID, "gpu: read_tap: tap %d unknown", (int)tap);
    int L = c->cfg.num_hidden_layers;
    if (mla_tap_is_layer(tap) && (layer < 0 || layer >= L))
        return mla_errorf(MLA_ERR_INVALID, "gpu: read_tap %s: layer %d, expected [0, %d)", mla_tap_name(tap), layer, L);
    int li = mla_tap_is_layer(tap) ? layer : L;
    gpu_tap *tp = &c->taps[li * MLA_TAP_COUNT + tap];
    if (!tp->valid)
        return mla_errorf(MLA_ERR_UNSUPPORTED, "gpu: tap %s of layer %d was not produced by the last forward call",
                          mla_tap_name(tap), layer);
    int64_t shape[MLA_MAX_DIMS];
    int nd = mla_tap_shape(tap, &c->cfg, c->ntok, shape);
    mla_dtype dt = tap == MLA_TAP_TOPK_IDS ? MLA_I32 : MLA_F32;
    TRY(mla_tensor_new(out, dt, nd, shape, mla_tap_name(tap)));
    int64_t n = mla_tensor_numel(*out);
    size_t es = tap_elem(tap);
    void *h = malloc((size_t)n * es + 1);
    if (!h) {
        mla_tensor_free(*out);
        *out = NULL;
        return mla_errorf(MLA_ERR_NOMEM, "gpu: read_tap staging");
    }
    hipError_t e = hipMemcpy(h, tp->buf.p, (size_t)n * es, hipMemcpyDeviceToHost);
    if (e != hipSuccess) {
        free(h);
        mla_tensor_free(*out);
        *out = NULL;
        return mla_errorf(MLA_ERR_DEVICE, "gpu: read_tap %s: copy failed: %s", mla_tap_name(tap), hipGetErrorString(e));
    }
    if (es == 4)
        memcpy((*out)->data, h, (size_t)n * 4);
    else
        for (int64_t i = 0; i < n; i++) ((float *)(*out)->data)[i] = gd_bf16_to_f32(((uint16_t *)h)[i]);
    free(h);
    return MLA_OK;
}

mla_status gpu_read_kv(void *vctx, int layer, int seq_id, mla_tensor **out)
{
    gpu_ctx *c = (gpu_ctx *)vctx;
    *out = NULL;
    if (!c || !c->loaded) return mla_errorf(MLA_ERR_INVALID, "gpu: read_kv before load");
    if (layer < 0 || layer >= c->cfg.num_hidden_layers || seq_id < 0 || seq_id >= c->opts.max_seqs)
        return mla_errorf(MLA_ERR_INVALID, "gpu: read_kv: layer %d / seq %d out of range", layer, seq_id);
    int len = c->seq_len[seq_id], C = c->cfg.kv_lora_rank, R = c->cfg.qk_rope_head_dim, bs = c->opts.block_size;
    int64_t shape[2] = {len, C + R};
    TRY(mla_tensor_new(out, MLA_F64, 2, shape, "kv"));
    uint8_t *rowbuf = (uint8_t *)malloc((size_t)bs * c->row_bytes);
    if (!rowbuf) {
        mla_tensor_free(*out);
        *out = NULL;
        return mla_errorf(MLA_ERR_NOMEM, "gpu: read_kv staging");
    }
    double *o = (double *)(*out)->data;
    for (int p0 = 0; p0 < len; p0 += bs) {
        int blk = c->h_tables[seq_id * c->blocks_per_seq + p0 / bs], n = len - p0 < bs ? len - p0 : bs;
        hipError_t e = hipMemcpy(rowbuf, c->kv_pool[layer] + (size_t)blk * bs * c->row_bytes, (size_t)n * c->row_bytes,
                                 hipMemcpyDeviceToHost);
        if (e != hipSuccess) {
            free(rowbuf);
            mla_tensor_free(*out);
            *out = NULL;
            return mla_errorf(MLA_ERR_DEVICE, "gpu: read_kv copy failed: %s", hipGetErrorString(e));
        }
        for (int i = 0; i < n; i++) {
            const uint8_t *row = rowbuf + (size_t)i * c->row_bytes;
            mla_kv_load_row_f64(c->kv_codec, row, o + (int64_t)(p0 + i) * (C + R)); /* as the kernels decode */
        }
    }
    free(rowbuf);
    return MLA_OK;
}
