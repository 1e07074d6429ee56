/* gpu_bench.hip: times the GPU engine's attention kernels (gpu_attn_decode: split-KV absorbed decode
 * over the paged latent cache plus its LSE combine; gpu_attn_prefill: naive-form causal prefill) on
 * the workloads of shared/docs/performance.md (D1, D4, D5, P1 subsets), with device events, medians,
 * the L2 flushed before every timed launch, random (never zero) inputs, and a check of sampled rows
 * against the library's reference operator (mla_ref_attn_ops: float64 inside, over the same paged
 * cache and the same keys) before any timing is trusted.
 *
 * Decode workloads run with the kernels --kernels names (default mma): "decode" (the first kernel),
 * "decode-t" (gpu_decode_tile.h, MLA_GPU_DECODE=tiled), "decode-m" (gpu_decode_mma.hip, tensor cores,
 * MLA_GPU_DECODE=mma); "/v" marks variable lengths. Prefill: "prefill-t" (gpu_prefill_tile.h) and
 * "prefill-m" (gpu_prefill_mma.hip, tensor cores).
 * gpu/bench/torch_side_by_side.py times torch at the shapes of the --tsv file (device_suite.sh bench).
 * Counting follows FlashMLA / FA3: decode FLOPs = 2 s_q sum(s_k) h (576 + 512), bytes = sum(s_k) x
 * row bytes (K and V share storage) + Q + O; prefill FLOPs = 2 b h s (s / 2) (192 + 128), causal.
 * Percentages are of the ceilings measured on this H200 (performance.md): 4,144 GB/s device copy and
 * 784 TFLOP/s dense bf16 GEMM. --gemm times the projection GEMMs instead (gpu_bench_gemm.hip).
 * Exit: 0, 1 when a check failed, 2 usage, 3 device error, 77 no GPU. */
#include "gpu_bench.h"
#include "gpu_kv.h"
#include "mla/attn_op.h"
#include "mla_core/rng.h"
#include "mla_ref/ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 64

__global__ void k_fill_bf16(uint16_t *p, int64_t n, uint64_t seed, float amp)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = gd_f32_to_bf16(amp * bn_uniform(seed, (uint64_t)i));
}

/* f32 operands that hold bf16 values (the engine's decode query). */
__global__ void k_fill_f32(float *p, int64_t n, uint64_t seed, float amp)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = gd_round_bf16(amp * bn_uniform(seed, (uint64_t)i));
}

/* Every physical row of the pool: [kv_c | k_pe] values in [-1, 1), stored in the row format (mla/kv.h).
 * fp8 scales are powers of two that keep |v| / scale inside the e4m3 range. */
__global__ void k_fill_kv(uint8_t *pool, int64_t rows, int row_bytes, mla_kv_format fmt, int c, int r, uint64_t seed)
{
    int64_t n = rows * (c + r);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = i / (c + r);
        int e = (int)(i % (c + r));
        uint8_t *p = pool + row * row_bytes;
        float v = bn_uniform(seed, (uint64_t)i);
        if (fmt == MLA_KV_BF16) {
            uint16_t b = gd_f32_to_bf16(v);
            memcpy(p + 2 * e, &b, 2);
        } else if (fmt == MLA_KV_FP8) {
            p[e] = gd_f32_to_e4m3(v * 256.0f, 0); /* kv_scale 1/256 */
        } else if (e < c) {
            p[e] = gd_f32_to_e4m3(v * 256.0f, 0);
            if (e % MLA_KV_DS_TILE == 0) {
                float s = 1.0f / 256.0f;
                memcpy(p + c + 4 * (e / MLA_KV_DS_TILE), &s, 4);
            }
        } else {
            uint16_t b = gd_f32_to_bf16(v);
            memcpy(p + c + 4 * (c / MLA_KV_DS_TILE) + 2 * (e - c), &b, 2);
        }
    }
}

void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    BN_CHECK(hipMalloc(&p, bytes ? bytes : 1));
    return p;
}

void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "mla_gpu_bench: out of host memory (%zu bytes)\n", bytes);
        exit(3);
    }
    return p;
}

/* FNV-1a over a device buffer's bytes: kernels said to be bit-identical (gpu/bench/KERNELS.md) must
 * print the same digest of the same workload's output. */
static uint64_t bn_digest(uint64_t h, const void *dev, size_t bytes)
{
    uint8_t *p = (uint8_t *)host_alloc(bytes);
    BN_CHECK(hipMemcpy(p, dev, bytes, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    free(p);
    return h;
}
#define BN_DIGEST0 0xcbf29ce484222325ull

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

float time_launch(bench_env *env, launch_fn fn, const void *args)
{
    float t[64];
    int n = env->reps < 64 ? env->reps : 64;
    for (int i = 0; i < 2; i++)
        if (fn(env->st, args) != MLA_OK) {
            fprintf(stderr, "mla_gpu_bench: %s\n", mla_last_error());
            exit(3);
        }
    for (int i = 0; i < n; i++) {
        BN_CHECK(hipMemsetAsync(env->flush, i & 0xff, env->flush_bytes, env->st));
        BN_CHECK(hipEventRecord(env->e0, env->st));
        if (fn(env->st, args) != MLA_OK) {
            fprintf(stderr, "mla_gpu_bench: %s\n", mla_last_error());
            exit(3);
        }
        BN_CHECK(hipEventRecord(env->e1, env->st));
        BN_CHECK(hipEventSynchronize(env->e1));
        BN_CHECK(hipEventElapsedTime(&t[i], env->e0, env->e1));
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_float);
    return t[n / 2];
}

static mla_status launch_decode(hipStream_t st, const void *a) { return gpu_attn_decode(st, (const gpu_decode_args *)a); }
static mla_status launch_prefill(hipStream_t st, const void *a) { return gpu_attn_prefill(st, (const gpu_prefill_args *)a); }

static const char *const fmt_names[] = {
#define BN_KV_NAME(e, n) n,
    MLA_KV_FORMAT_LIST(BN_KV_NAME)
#undef BN_KV_NAME
};

/* rel L2 of a bf16 output row against the reference operator's row. */
static double row_error(const uint16_t *got, const float *want, int n)
{
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        double d = (double)gd_bf16_to_f32(got[i]) - want[i];
        num += d * d;
        den += (double)want[i] * want[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

/* The reference operator, or exit 3 with its message (a check that cannot run is not a pass). */
static void ref_call(mla_status st, const char *what)
{
    if (st == MLA_OK) return;
    fprintf(stderr, "mla_gpu_bench: reference operator (%s): %s: %s\n", what, mla_strerror(st), mla_last_error());
    exit(3);
}

/* Sampled (token, head) pairs of one kernel check: the kernel's bf16 output rows and LSEs, the
 * operator's rows and LSEs, in [sample][head] order. */
enum { BN_NT_MAX = 4, BN_NH = 2, BN_DMAX = 512 };
typedef struct bn_samples {
    int nt, d;                                   /* samples, output width */
    uint16_t got[BN_NT_MAX][BN_NH][BN_DMAX];
    float got_lse[BN_NT_MAX][BN_NH];
    float want[BN_NT_MAX][BN_NH][BN_DMAX];
    float want_lse[BN_NT_MAX][BN_NH];
} bn_samples;

/* Worst rel L2 and |lse| error over the samples. The control compares each head's output with the
 * other sampled head's reference: it must exceed the gate, or the check could not fail. */
static void bn_score(const bn_samples *sm, double *worst, double *worst_lse, double *control)
{
    *worst = *worst_lse = 0;
    *control = INFINITY;
    for (int i = 0; i < sm->nt; i++)
        for (int k = 0; k < BN_NH; k++) {
            double e = row_error(sm->got[i][k], sm->want[i][k], sm->d);
            double el = fabs((double)sm->got_lse[i][k] - sm->want_lse[i][k]);
            double ec = row_error(sm->got[i][k], sm->want[i][1 - k], sm->d);
            *worst = e > *worst ? e : *worst;
            *worst_lse = el > *worst_lse ? el : *worst_lse;
            *control = ec < *control ? ec : *control;
        }
}

#define CHECK_REL_L2 6e-3 /* bf16 output rounding (2^-9 relative) plus fp32 accumulation */
#define CHECK_LSE 2e-3

typedef struct result_row {
    char what[16], kv[8];
    int b, s_k, h, s_q, splits;
    float ms;
    double gbs, tflops, worst_rel, worst_lse;
    double control; /* rel L2 against the other head's reference: must fail the gate */
    int ok;
    uint64_t digest; /* bn_digest of the output and lse of the checked launch */
} result_row;

/* The decode check: each sampled token is one sequence of the operator's batch, cut at the token's
 * position (s_q 1, seq_len = position + 1, the same block-table row), over a host copy of the pool;
 * heads 0 and h-1 of its query. */
static void check_decode(const gpu_kv_desc *kv, int n_blocks, int64_t pool_bytes, const int32_t *tables,
                         const gpu_seq *seqs, const int32_t *tok_seq, int T, int h, float scale, const float *qa,
                         const float *qp, const uint16_t *olat, const float *lse, bn_samples *sm)
{
    const int C = kv->codec.c, R = kv->codec.r, bps = kv->blocks_per_seq, NT = 3;
    const int samples_t[3] = {0, T / 2, T - 1}, samples_h[BN_NH] = {0, h - 1};
    uint8_t *hpool = (uint8_t *)host_alloc((size_t)pool_bytes);
    BN_CHECK(hipMemcpy(hpool, kv->pool, (size_t)pool_bytes, hipMemcpyDeviceToHost));
    float *q = (float *)host_alloc((size_t)NT * BN_NH * (C + R) * sizeof(float));
    int32_t cu[4], seq_lens[3], *btab = (int32_t *)host_alloc((size_t)NT * bps * 4);
    for (int i = 0; i < NT; i++) {
        int t = samples_t[i];
        const gpu_seq sq = seqs[tok_seq[t]];
        cu[i] = i;
        seq_lens[i] = sq.n_past + (t - sq.tok0) + 1;
        memcpy(btab + (size_t)i * bps, tables + (size_t)sq.slot * bps, (size_t)bps * 4);
        for (int k = 0; k < BN_NH; k++) {
            int64_t th = (int64_t)t * h + samples_h[k];
            float *qr = q + ((size_t)i * BN_NH + k) * (C + R);
            BN_CHECK(hipMemcpy(qr, qa + th * C, (size_t)C * 4, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(qr + C, qp + th * R, (size_t)R * 4, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(sm->got[i][k], olat + th * C, (size_t)C * 2, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(&sm->got_lse[i][k], lse + th, 4, hipMemcpyDeviceToHost));
        }
    }
    cu[NT] = NT;
    float *want = (float *)host_alloc((size_t)NT * BN_NH * C * sizeof(float)), want_lse[3 * BN_NH];
    const mla_mqa_args m = {.batch = NT,
                            .num_heads = BN_NH,
                            .kv_lora_rank = C,
                            .rope_dim = R,
                            .total_q = NT,
                            .cu_seqlens_q = cu,
                            .seq_lens = seq_lens,
                            .softmax_scale = scale,
                            .q = q,
                            .kv = {.format = kv->codec.format,
                                   .fp8_fnuz = kv->codec.fp8_fnuz,
                                   .data = hpool,
                                   .num_blocks = n_blocks,
                                   .page_size = kv->block_size,
                                   .k_scale = kv->codec.k_scale,
                                   .block_table = btab,
                                   .max_blocks_per_seq = bps},
                            .out = want,
                            .lse = want_lse};
    ref_call(mla_ref_attn_ops()->mqa(&m), "mqa");
    sm->nt = NT;
    sm->d = C;
    for (int i = 0; i < NT; i++)
        for (int k = 0; k < BN_NH; k++) {
            memcpy(sm->want[i][k], want + ((size_t)i * BN_NH + k) * C, (size_t)C * sizeof(float));
            sm->want_lse[i][k] = want_lse[i * BN_NH + k];
        }
    free(hpool);
    free(q);
    free(btab);
    free(want);
}

static const char *const kernel_names[] = {"decode", "decode-t", "decode-m"}; /* gpu_decode_kernel */

/* Sequence i's kv length: s_k, or with varlen a spread over [s_k / 2, 3 s_k / 2) (mean ~s_k). */
static int seq_len_of(int i, int s_k, int varlen)
{
    return varlen ? s_k / 2 + (int)(mla_rng_stream(99, (uint64_t)i) % (uint64_t)s_k) : s_k;
}

static void bench_decode(bench_env *env, mla_kv_format fmt, int b, int s_k, int h, int s_q, gpu_decode_kernel kern,
                         int varlen, result_row *res)
{
    const int C = 512, R = 64;
    const int row_bytes = (int)mla_kv_row_bytes(fmt, C, R);
    int max_len = 0;
    for (int i = 0; i < b; i++) max_len = seq_len_of(i, s_k, varlen) > max_len ? seq_len_of(i, s_k, varlen) : max_len;
    int bps = (max_len + PAGE - 1) / PAGE, n_blocks = b * bps, T = b * s_q;
    int64_t rows = (int64_t)n_blocks * PAGE;
    int32_t *tables = (int32_t *)host_alloc((size_t)n_blocks * 4);
    for (int i = 0; i < n_blocks; i++) tables[i] = i;
    mla_rng_shuffle_i32(tables, n_blocks, 12345); /* shuffled block tables, as a paged allocator leaves them */
    gpu_seq *seqs = (gpu_seq *)host_alloc((size_t)b * sizeof(gpu_seq));
    int32_t *tok_seq = (int32_t *)host_alloc((size_t)T * 4);
    for (int i = 0; i < b; i++) {
        seqs[i] = gpu_seq{.slot = i, .n_past = seq_len_of(i, s_k, varlen) - s_q, .n_new = s_q, .tok0 = i * s_q, .ws0 = 0};
        for (int k = 0; k < s_q; k++) tok_seq[i * s_q + k] = i;
    }
    const mla_kv_codec codec = {.format = fmt, .fp8_fnuz = 0, .c = C, .r = R,
                                .k_scale = fmt == MLA_KV_FP8 ? 1.0f / 256.0f : 1.0f};
    const gpu_kv_desc kv0 = {.pool = NULL, .tables = NULL, .blocks_per_seq = bps, .block_size = PAGE,
                             .row_bytes = row_bytes, .codec = codec};
    kern = gpu_decode_pick(kern, &kv0, h);
    int *tot = (int *)host_alloc((size_t)T * sizeof(int)); /* the keys each decode token attends */
    for (int i = 0; i < T; i++) tot[i] = seqs[tok_seq[i]].n_past + i % s_q + 1;
    const gpu_split_plan plan = gpu_decode_plan(tot, T, gpu_decode_blocks(1, h, kern, &kv0), env->n_sm, kern);
    const int splits = plan.splits;
    free(tot);
    if (plan.split_len > 0) /* the table's splits column is the count; the run length only here */
        fprintf(stderr, "mla_gpu_bench: b %d s_k %d h %d%s: %d splits of %d keys from key 0\n", b, s_k, h, varlen ? " varlen" : "",
                splits, plan.split_len);
    uint8_t *pool = (uint8_t *)dev_alloc((size_t)rows * row_bytes);
    int32_t *d_tables = (int32_t *)dev_alloc((size_t)n_blocks * 4), *d_ts = (int32_t *)dev_alloc((size_t)T * 4);
    gpu_seq *d_seqs = (gpu_seq *)dev_alloc((size_t)b * sizeof(gpu_seq));
    float *qa = (float *)dev_alloc((size_t)T * h * C * 4), *qp = (float *)dev_alloc((size_t)T * h * R * 4);
    float *po = (float *)dev_alloc((size_t)T * h * splits * C * 4), *pl = (float *)dev_alloc((size_t)T * h * splits * 4);
    uint16_t *olat = (uint16_t *)dev_alloc((size_t)T * h * C * 2);
    float *lse = (float *)dev_alloc((size_t)T * h * 4);
    BN_CHECK(hipMemcpy(d_tables, tables, (size_t)n_blocks * 4, hipMemcpyHostToDevice));
    BN_CHECK(hipMemcpy(d_ts, tok_seq, (size_t)T * 4, hipMemcpyHostToDevice));
    BN_CHECK(hipMemcpy(d_seqs, seqs, (size_t)b * sizeof(gpu_seq), hipMemcpyHostToDevice));
    k_fill_kv<<<1024, 256, 0, env->st>>>(pool, rows, row_bytes, fmt, C, R, 7);
    k_fill_f32<<<1024, 256, 0, env->st>>>(qa, (int64_t)T * h * C, 8, 1.0f);
    k_fill_f32<<<1024, 256, 0, env->st>>>(qp, (int64_t)T * h * R, 9, 1.0f);
    BN_CHECK(hipGetLastError());
    const gpu_kv_desc kv = {.pool = pool, .tables = d_tables, .blocks_per_seq = bps, .block_size = PAGE,
                            .row_bytes = row_bytes, .codec = codec};
    float scale = 0.25f / sqrtf(192.0f); /* keeps softmax away from one-hot and from uniform */
    const gpu_decode_args a = {.q_abs = qa, .q_pe = qp, .kv = kv, .tok_seq = d_ts, .seqs = d_seqs, .part_o = po,
                               .part_lse = pl, .o_lat = olat, .lse = lse, .t = T, .h = h, .splits = splits,
                               .split_len = plan.split_len, .scale = scale, .causal_plus = 0, .lse_bf16 = 0, .q_div = 1.0f, .kernel = kern};
    if (gpu_attn_decode(env->st, &a) != MLA_OK) {
        fprintf(stderr, "mla_gpu_bench: %s\n", mla_last_error());
        exit(3);
    }
    BN_CHECK(hipStreamSynchronize(env->st));
    res->digest = bn_digest(bn_digest(BN_DIGEST0, olat, (size_t)T * h * C * 2), lse, (size_t)T * h * 4);

    bn_samples *sm = (bn_samples *)host_alloc(sizeof(bn_samples));
    check_decode(&kv, n_blocks, rows * row_bytes, tables, seqs, tok_seq, T, h, scale, qa, qp, olat, lse, sm);
    double worst, worst_lse, control;
    bn_score(sm, &worst, &worst_lse, &control);
    free(sm);

    float ms = time_launch(env, launch_decode, &a);
    double sum_sk = 0;
    for (int i = 0; i < b; i++) sum_sk += seq_len_of(i, s_k, varlen);
    double flops = 2.0 * s_q * sum_sk * h * (576 + 512);
    double bytes = sum_sk * row_bytes + (double)T * h * ((C + R) * 4 + C * 2);
    snprintf(res->what, sizeof res->what, "%s%s", kernel_names[kern], varlen ? "/v" : "");
    snprintf(res->kv, sizeof res->kv, "%s", fmt_names[fmt]);
    res->b = b; res->s_k = s_k; res->h = h; res->s_q = s_q; res->splits = splits; res->ms = ms;
    res->gbs = bytes / (ms * 1e-3) / 1e9;
    res->tflops = flops / (ms * 1e-3) / 1e12;
    res->worst_rel = worst;
    res->worst_lse = worst_lse;
    res->control = control;
    res->ok = worst < CHECK_REL_L2 && worst_lse < CHECK_LSE && control > CHECK_REL_L2;
    BN_CHECK(hipFree(pool)); BN_CHECK(hipFree(d_tables)); BN_CHECK(hipFree(d_ts)); BN_CHECK(hipFree(d_seqs));
    BN_CHECK(hipFree(qa)); BN_CHECK(hipFree(qp)); BN_CHECK(hipFree(po)); BN_CHECK(hipFree(pl));
    BN_CHECK(hipFree(olat)); BN_CHECK(hipFree(lse));
    free(tables); free(seqs); free(tok_seq);
}

/* Per head, K_nope | V = kv_c . W_kvb^T with W_kvb a signed selection (bn_sel): every product is
 * exact, so the kernel's bf16 kvx and the operator's f64 expansion of the same kv_c hold the same
 * keys and values; heads select different columns, so no two heads see the same keys. */
MLA_HD int bn_sel(int hh, int i, int c) { return (i + 131 * hh) % c; }
MLA_HD int bn_neg(int hh, int i) { return ((i ^ hh) & 1) != 0; }

__global__ void k_expand_kvx(const uint16_t *kv_c, uint16_t *kvx, int64_t t, int h, int pv, int c)
{
    int64_t n = t * h * pv;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t tok = i / ((int64_t)h * pv);
        int hh = (int)((i / pv) % h), e = (int)(i % pv);
        uint16_t v = kv_c[tok * c + bn_sel(hh, e, c)];
        kvx[i] = bn_neg(hh, e) ? (uint16_t)(v ^ 0x8000u) : v; /* exact negation of a bf16 */
    }
}

/* The prefill check: each sampled token is one sequence of the operator's MHA batch with its earlier
 * tokens as cached context (a bf16 paged pool of [kv_c | k_pe], one page per prompt) and itself as
 * the new token; heads 0 and h-1, with their rows of W_kvb. */
static void check_prefill(int b, int s, int h, int P, int R, int V, int C, float scale, const uint16_t *qn,
                          const uint16_t *qp, const uint16_t *kv_c, const uint16_t *kpe, const uint16_t *out,
                          const float *lse, bn_samples *sm)
{
    const int T = b * s, NT = 4;
    const int samples_t[4] = {0, s / 2, s - 1, T - 1}, samples_h[BN_NH] = {0, h - 1};
    const size_t rb = mla_kv_row_bytes(MLA_KV_BF16, C, R);
    uint16_t *hc = (uint16_t *)host_alloc((size_t)T * C * 2), *hp = (uint16_t *)host_alloc((size_t)T * R * 2);
    BN_CHECK(hipMemcpy(hc, kv_c, (size_t)T * C * 2, hipMemcpyDeviceToHost));
    BN_CHECK(hipMemcpy(hp, kpe, (size_t)T * R * 2, hipMemcpyDeviceToHost));
    uint8_t *pool = (uint8_t *)host_alloc((size_t)T * rb); /* row t = token t: page i = prompt i */
    for (int64_t t = 0; t < T; t++) {
        memcpy(pool + t * rb, hc + t * C, (size_t)C * 2);
        memcpy(pool + t * rb + (size_t)C * 2, hp + t * R, (size_t)R * 2);
    }
    float *w = (float *)host_alloc((size_t)BN_NH * (P + V) * C * sizeof(float));
    memset(w, 0, (size_t)BN_NH * (P + V) * C * sizeof(float));
    for (int k = 0; k < BN_NH; k++)
        for (int i = 0; i < P + V; i++)
            w[((size_t)k * (P + V) + i) * C + bn_sel(samples_h[k], i, C)] = bn_neg(samples_h[k], i) ? -1.0f : 1.0f;
    float q[4 * BN_NH * 192], c_new[4 * 512], pe_new[4 * 64];
    int32_t cu[5], seq_lens[4], btab[4];
    for (int i = 0; i < NT; i++) {
        int t = samples_t[i];
        cu[i] = i;
        seq_lens[i] = t % s + 1;
        btab[i] = t / s;
        for (int e = 0; e < C; e++) c_new[i * C + e] = gd_bf16_to_f32(hc[(int64_t)t * C + e]);
        for (int e = 0; e < R; e++) pe_new[i * R + e] = gd_bf16_to_f32(hp[(int64_t)t * R + e]);
        for (int k = 0; k < BN_NH; k++) {
            int64_t th = (int64_t)t * h + samples_h[k];
            uint16_t qb[192];
            BN_CHECK(hipMemcpy(qb, qn + th * P, (size_t)P * 2, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(qb + P, qp + th * R, (size_t)R * 2, hipMemcpyDeviceToHost));
            for (int e = 0; e < P + R; e++) q[(i * BN_NH + k) * (P + R) + e] = gd_bf16_to_f32(qb[e]);
            BN_CHECK(hipMemcpy(sm->got[i][k], out + th * V, (size_t)V * 2, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(&sm->got_lse[i][k], lse + th, 4, hipMemcpyDeviceToHost));
        }
    }
    cu[NT] = NT;
    float want[4 * BN_NH * 128], want_lse[4 * BN_NH];
    const mla_mha_args m = {.batch = NT,
                            .num_heads = BN_NH,
                            .kv_lora_rank = C,
                            .rope_dim = R,
                            .nope_dim = P,
                            .v_dim = V,
                            .total_q = NT,
                            .cu_seqlens_q = cu,
                            .seq_lens = seq_lens,
                            .softmax_scale = scale,
                            .q = q,
                            .kv_c = c_new,
                            .k_pe = pe_new,
                            .w_kv_b = w,
                            .kv = {.format = MLA_KV_BF16,
                                   .fp8_fnuz = 0,
                                   .data = pool,
                                   .num_blocks = b,
                                   .page_size = s,
                                   .k_scale = 1.0f,
                                   .block_table = btab,
                                   .max_blocks_per_seq = 1},
                            .out = want,
                            .lse = want_lse};
    ref_call(mla_ref_attn_ops()->mha(&m), "mha");
    sm->nt = NT;
    sm->d = V;
    for (int i = 0; i < NT; i++)
        for (int k = 0; k < BN_NH; k++) {
            memcpy(sm->want[i][k], want + (i * BN_NH + k) * V, (size_t)V * sizeof(float));
            sm->want_lse[i][k] = want_lse[i * BN_NH + k];
        }
    free(hc); free(hp); free(pool); free(w);
}

/* Causal prefill of b sequences of s tokens with no cached context (MHA form, d_qk 192, d_v 128). */
static void bench_prefill(bench_env *env, int b, int s, int h, gpu_prefill_kernel kern, result_row *res)
{
    const int P = 128, R = 64, V = 128, C = 512;
    int T = b * s;
    gpu_seq *seqs = (gpu_seq *)host_alloc((size_t)b * sizeof(gpu_seq));
    int32_t *tok_seq = (int32_t *)host_alloc((size_t)T * 4);
    for (int i = 0; i < b; i++) {
        seqs[i] = gpu_seq{.slot = i, .n_past = 0, .n_new = s, .tok0 = i * s, .ws0 = i * s};
        for (int k = 0; k < s; k++) tok_seq[i * s + k] = i;
    }
    uint16_t *qn = (uint16_t *)dev_alloc((size_t)T * h * P * 2), *qp = (uint16_t *)dev_alloc((size_t)T * h * R * 2);
    uint16_t *kvx = (uint16_t *)dev_alloc((size_t)T * h * (P + V) * 2), *kpe = (uint16_t *)dev_alloc((size_t)T * R * 2);
    uint16_t *kv_c = (uint16_t *)dev_alloc((size_t)T * C * 2);
    uint16_t *out = (uint16_t *)dev_alloc((size_t)T * h * V * 2);
    float *lse = (float *)dev_alloc((size_t)T * h * 4);
    int32_t *d_ts = (int32_t *)dev_alloc((size_t)T * 4);
    gpu_seq *d_seqs = (gpu_seq *)dev_alloc((size_t)b * sizeof(gpu_seq));
    BN_CHECK(hipMemcpy(d_ts, tok_seq, (size_t)T * 4, hipMemcpyHostToDevice));
    BN_CHECK(hipMemcpy(d_seqs, seqs, (size_t)b * sizeof(gpu_seq), hipMemcpyHostToDevice));
    k_fill_bf16<<<1024, 256, 0, env->st>>>(qn, (int64_t)T * h * P, 11, 1.0f);
    k_fill_bf16<<<1024, 256, 0, env->st>>>(qp, (int64_t)T * h * R, 12, 1.0f);
    k_fill_bf16<<<1024, 256, 0, env->st>>>(kv_c, (int64_t)T * C, 13, 1.0f);
    k_fill_bf16<<<1024, 256, 0, env->st>>>(kpe, (int64_t)T * R, 14, 1.0f);
    k_expand_kvx<<<1024, 256, 0, env->st>>>(kv_c, kvx, T, h, P + V, C);
    BN_CHECK(hipGetLastError());
    float scale = 0.5f / sqrtf(192.0f);
    const gpu_prefill_args a = {.q_nope = qn, .q_pe = qp, .kvx = kvx, .ws_kpe = kpe, .tok_seq = d_ts, .seqs = d_seqs,
                                .out = out, .lse = lse, .t = T, .h = h, .p = P, .r = R, .v = V, .scale = scale,
                                .causal_plus = 0, .lse_bf16 = 0, .n_seqs = b, .max_new = s, .max_keys = s, .kernel = kern};
    if (gpu_attn_prefill(env->st, &a) != MLA_OK) {
        fprintf(stderr, "mla_gpu_bench: %s\n", mla_last_error());
        exit(3);
    }
    BN_CHECK(hipStreamSynchronize(env->st));
    res->digest = bn_digest(bn_digest(BN_DIGEST0, out, (size_t)T * h * V * 2), lse, (size_t)T * h * 4);

    /* rows of the first and last sequence at the start, middle and end of the prompt */
    bn_samples *sm = (bn_samples *)host_alloc(sizeof(bn_samples));
    check_prefill(b, s, h, P, R, V, C, scale, qn, qp, kv_c, kpe, out, lse, sm);
    double worst, worst_lse, control;
    bn_score(sm, &worst, &worst_lse, &control);
    free(sm);

    float ms = time_launch(env, launch_prefill, &a);
    double flops = 2.0 * b * h * (double)s * (s / 2.0) * (192 + 128);
    double bytes = (double)T * h * (P + R + P + V + V) * 2 + (double)T * R * 2;
    static const char *const names[] = {"prefill", "prefill-t", "prefill-m"}; /* gpu_prefill_kernel */
    snprintf(res->what, sizeof res->what, "%s", names[kern]);
    snprintf(res->kv, sizeof res->kv, "bf16");
    res->b = b; res->s_k = s; res->h = h; res->s_q = s; res->splits = 1; res->ms = ms;
    res->gbs = bytes / (ms * 1e-3) / 1e9;
    res->tflops = flops / (ms * 1e-3) / 1e12;
    res->worst_rel = worst;
    res->worst_lse = worst_lse;
    res->control = control;
    res->ok = worst < CHECK_REL_L2 && worst_lse < CHECK_LSE && control > CHECK_REL_L2;
    BN_CHECK(hipFree(qn)); BN_CHECK(hipFree(qp)); BN_CHECK(hipFree(kvx)); BN_CHECK(hipFree(kpe));
    BN_CHECK(hipFree(kv_c)); BN_CHECK(hipFree(out)); BN_CHECK(hipFree(lse)); BN_CHECK(hipFree(d_ts));
    BN_CHECK(hipFree(d_seqs));
    free(seqs); free(tok_seq);
}

static void print_row(FILE *f, const result_row *r)
{
    fprintf(f, "| %-7s | %-6s | %3d | %5d | %3d | %4d | %3d | %10.1f | %7.1f | %5.1f%% | %7.2f | %5.2f%% | %.1e / %.1e "
               "(control %.1e) %s | %016llx |\n",
            r->what, r->kv, r->b, r->s_k, r->h, r->s_q, r->splits, r->ms * 1e3, r->gbs, 100 * r->gbs / CEIL_GBS,
            r->tflops, 100 * r->tflops / CEIL_TFLOPS, r->worst_rel, r->worst_lse, r->control, r->ok ? "ok" : "FAIL",
            (unsigned long long)r->digest);
}

static void usage(void)
{
    fprintf(stderr, "usage: mla_gpu_bench [--quick] [--kernels first,tiled,mma] [--only N | --only-prefill N] [--reps N]\n"
                    "                     [--tsv FILE]\n"
                    "       mla_gpu_bench --gemm [--quick]\n"
                    "  times the GPU attention kernels on the performance.md workloads (see gpu/NOTES.md);\n"
                    "  --kernels: decode kernels to time (default mma), --only: decode workload N alone (profiling),\n"
                    "  --only-prefill: P1 workload N alone on the mma prefill kernel,\n"
                    "  --reps: timed launches a row (default 20, --quick 5; 1 under a sanitizer),\n"
                    "  --tsv: every row as tab-separated values,\n"
                    "  --gemm: the projection GEMMs (SIMT and tensor-core kernels) on DeepSeek-V3 shapes instead\n");
}

static void write_tsv(FILE *f, const result_row *r, int n)
{
    fprintf(f, "kernel\tkv\tb\ts_k\th\ts_q\tsplits\tmedian_us\tgbs\ttflops\trel_l2\tlse_err\tcontrol\tok\tdigest\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.1f\t%.2f\t%.3e\t%.3e\t%.3e\t%d\t%016llx\n", r[i].what, r[i].kv, r[i].b,
                r[i].s_k, r[i].h, r[i].s_q, r[i].splits, r[i].ms * 1e3, r[i].gbs, r[i].tflops, r[i].worst_rel,
                r[i].worst_lse, r[i].control, r[i].ok, (unsigned long long)r[i].digest);
}

int main(int argc, char **argv)
{
    int quick = 0, only = -1, only_p = -1, want[3] = {0, 0, 1}, gemm = 0, reps = 0;
    const char *tsv = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--gemm")) {
            gemm = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = atoi(argv[++i]); /* one decode workload (its row of dw), no prefill: for profilers */
        } else if (!strcmp(argv[i], "--only-prefill") && i + 1 < argc) {
            only_p = atoi(argv[++i]); /* one P1 workload (its row of p1), mma prefill only, no decode */
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--tsv") && i + 1 < argc) {
            tsv = argv[++i];
        } else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) {
            want[0] = want[1] = want[2] = 0;
            char buf[64];
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            for (char *k = strtok(buf, ","); k; k = strtok(NULL, ",")) {
                if (!strcmp(k, "first")) want[GPU_DECODE_FIRST] = 1;
                else if (!strcmp(k, "tiled")) want[GPU_DECODE_TILED] = 1;
                else if (!strcmp(k, "mma")) want[GPU_DECODE_MMA] = 1;
                else {
                    fprintf(stderr, "mla_gpu_bench: --kernels: unknown kernel '%s' (expected first, tiled, mma)\n", k);
                    return 2;
                }
            }
        } else {
            usage();
            return 2;
        }
    }
    int ndev = 0;
    if (hipGetDeviceCount(&ndev) != hipSuccess || ndev == 0) {
        fprintf(stderr, "mla_gpu_bench: no GPU device: skipped\n");
        return 77;
    }
    bench_env env;
    memset(&env, 0, sizeof env);
    hipDeviceProp_t p;
    BN_CHECK(hipGetDeviceProperties(&p, 0));
    env.n_sm = p.multiProcessorCount;
    env.reps = reps ? reps : quick ? (gemm ? 10 : 5) : 20; /* --gemm: a median of at least 10 */
    env.flush_bytes = (size_t)256 << 20;
    env.flush = dev_alloc(env.flush_bytes);
    BN_CHECK(hipStreamCreate(&env.st));
    BN_CHECK(hipEventCreate(&env.e0));
    BN_CHECK(hipEventCreate(&env.e1));
    printf("mla_gpu_bench: %s, %d SMs; median of %d launches after 2 warm-ups, 256 MiB L2 flush before each\n",
           p.name, env.n_sm, env.reps);
    if (gemm) {
        int rc = bench_gemm(&env);
        BN_CHECK(hipFree(env.flush));
        return rc;
    }

    /* decode workloads (performance.md): {kv format, b, s_k, h, s_q, varlen}; quick: the first 6 */
    static const int dw[][6] = {
        {MLA_KV_BF16, 128, 8192, 16, 1, 0}, {MLA_KV_BF16, 128, 8192, 128, 1, 0}, {MLA_KV_FP8_DS, 128, 8192, 16, 1, 0},
        {MLA_KV_FP8, 128, 8192, 64, 1, 0},  {MLA_KV_BF16, 128, 4096, 128, 2, 0}, {MLA_KV_BF16, 1, 65536, 128, 1, 0},
        {MLA_KV_BF16, 128, 8192, 32, 1, 0}, {MLA_KV_BF16, 128, 8192, 64, 1, 0},  {MLA_KV_BF16, 128, 4096, 16, 1, 0},
        {MLA_KV_BF16, 128, 4096, 32, 1, 0}, {MLA_KV_BF16, 128, 4096, 64, 1, 0},  {MLA_KV_BF16, 128, 4096, 128, 1, 0},
        {MLA_KV_BF16, 128, 4096, 16, 2, 0}, {MLA_KV_BF16, 128, 4096, 64, 2, 0},  {MLA_KV_BF16, 128, 8192, 128, 2, 0},
        {MLA_KV_BF16, 128, 4096, 16, 1, 1}, {MLA_KV_BF16, 128, 4096, 128, 1, 1}, {MLA_KV_FP8, 128, 8192, 16, 1, 0},
        {MLA_KV_FP8_DS, 128, 8192, 64, 1, 0}, {MLA_KV_FP8_DS, 128, 8192, 128, 1, 0}, {MLA_KV_FP8, 128, 8192, 128, 1, 0},
        {MLA_KV_BF16, 4, 32768, 16, 1, 0},  {MLA_KV_BF16, 16, 32768, 128, 1, 0}, {MLA_KV_FP8, 128, 8192, 32, 1, 0},
        {MLA_KV_FP8_DS, 128, 8192, 32, 1, 0},
    };
    const int n_dw = (int)(sizeof dw / sizeof dw[0]);
    result_row rows[128];
    int n = 0;
    for (int w = 0; w < (quick ? 6 : n_dw); w++)
        for (int k = 0; k < 3; k++)
            if (want[k] && only_p < 0 && (only < 0 || only == w)) {
                bench_decode(&env, (mla_kv_format)dw[w][0], dw[w][1], dw[w][2], dw[w][3], dw[w][4],
                             (gpu_decode_kernel)k, dw[w][5], &rows[n]);
                print_row(stdout, &rows[n++]);
                fflush(stdout);
            }
    int saved_reps = env.reps;
    env.reps = reps ? reps : quick ? 3 : 5; /* prefill launches take up to seconds */
    static const int p1[][3] = {{1, 4096, 128}, {1, 8192, 128}, {16, 1024, 128}, {1, 16384, 128},
                                {4, 4096, 128},  {1, 8192, 64},   {1, 8192, 16}}; /* P1 (b, s, h) */
    for (int k = 0; k < (only >= 0 ? 0 : quick ? 1 : 7); k++)
        for (int pk = 1; pk < 3; pk++) /* the query-tiled SIMT kernel (the old best) on the first 3 only */
            if ((pk == GPU_PREFILL_MMA || k < 3) && (only_p < 0 || (only_p == k && pk == GPU_PREFILL_MMA))) {
                bench_prefill(&env, p1[k][0], p1[k][1], p1[k][2], (gpu_prefill_kernel)pk, &rows[n]);
                print_row(stdout, &rows[n++]);
                fflush(stdout);
            }
    env.reps = saved_reps;

    int fails = 0;
    printf("\n| kernel | kv | b | s_k | h | s_q | splits | median us | GB/s | %% of %.0f | TFLOP/s | %% of %.0f | check rel L2 / lse (control) | output digest |\n",
           CEIL_GBS, CEIL_TFLOPS);
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        print_row(stdout, &rows[i]);
        fails += !rows[i].ok;
    }
    printf("%d of %d checks failed (limits: rel L2 %.0e of the bf16 output, |lse| %.0e, against mla_ref_attn_ops; "
           "the control must exceed the rel L2 limit)\n", fails, n, CHECK_REL_L2, CHECK_LSE);
    if (tsv) {
        FILE *f = fopen(tsv, "w");
        if (!f) {
            fprintf(stderr, "mla_gpu_bench: %s: cannot write\n", tsv);
            return 3;
        }
        write_tsv(f, rows, n);
        if (fclose(f) != 0) {
            fprintf(stderr, "mla_gpu_bench: %s: write failed\n", tsv);
            return 3;
        }
    }
    BN_CHECK(hipFree(env.flush));
    return fails ? 1 : 0;
}
