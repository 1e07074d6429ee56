/* gpu_bench.hip: times the GPU engine's attention kernels (gpu_attn_decode: split-KV absorbed decode
 * over the paged latent cache plus its LSE combine; gpu_attn_prefill: naive-form causal prefill) on
 * the workloads of shared/docs/performance.md (D1, D4, D5, P1 subsets), with device events, medians,
 * the L2 flushed before every timed launch, random (never zero) inputs, and a check of sampled rows
 * against a float64 host computation before any timing is trusted.
 *
 * Each workload runs with the engine's first kernel ("decode", "prefill") and the tiled one
 * ("decode-t": gpu_decode_tile.h, MLA_GPU_DECODE=tiled in the engine; "prefill-t": gpu_prefill_tile.h,
 * MLA_GPU_PREFILL=tiled).
 * Counting follows FlashMLA / FA3: decode FLOPs = 2 s_q sum(s_k) h (576 + 512), bytes = sum(s_k) x
 * row bytes (K and V share storage) + Q + O; prefill FLOPs = 2 b h s (s / 2) (192 + 128), causal.
 * Percentages are of the ceilings measured on this H200 (performance.md): 4,144 GB/s device copy and
 * 784 TFLOP/s dense bf16 GEMM. Exit: 0, 1 when a check failed, 2 usage, 3 device error, 77 no GPU. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CEIL_GBS 4144.0
#define CEIL_TFLOPS 784.0
#define PAGE 64

/* Deterministic uniform [-1, 1) from (seed, index): the same on host and device. */
MLA_HD float bn_uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

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

/* Every physical row of the pool: [kv_c | k_pe] values in [-1, 1), stored in the row format. fp8
 * scales are powers of two that keep |v| / scale inside the e4m3 range. */
__global__ void k_fill_kv(uint8_t *pool, int64_t rows, int row_bytes, int fmt, int c, int r, uint64_t seed)
{
    int64_t n = rows * (c + r);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t row = i / (c + r);
        int e = (int)(i % (c + r));
        uint8_t *p = pool + row * row_bytes;
        float v = bn_uniform(seed, (uint64_t)i);
        if (fmt == GPU_KV_BF16) {
            uint16_t b = gd_f32_to_bf16(v);
            memcpy(p + 2 * e, &b, 2);
        } else if (fmt == GPU_KV_FP8) {
            p[e] = gd_f32_to_e4m3(v * 256.0f, 0); /* kv_scale 1/256 */
        } else if (e < c) {
            p[e] = gd_f32_to_e4m3(v * 256.0f, 0);
            if (e % 128 == 0) {
                float s = 1.0f / 256.0f;
                memcpy(p + c + 4 * (e / 128), &s, 4);
            }
        } else {
            uint16_t b = gd_f32_to_bf16(v);
            memcpy(p + c + 4 * (c / 128) + 2 * (e - c), &b, 2);
        }
    }
}

#define BN_CHECK(call)                                                                             \
    do {                                                                                           \
        hipError_t e_ = (call);                                                                    \
        if (e_ != hipSuccess) {                                                                    \
            fprintf(stderr, "mla_gpu_bench: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                    hipGetErrorString(e_));                                                        \
            exit(3);                                                                               \
        }                                                                                          \
    } while (0)

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    BN_CHECK(hipMalloc(&p, bytes ? bytes : 1));
    return p;
}

static void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "mla_gpu_bench: out of host memory (%zu bytes)\n", bytes);
        exit(3);
    }
    return p;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct bench_env {
    hipStream_t st;
    hipEvent_t e0, e1;
    void *flush; /* written before each timed launch so inputs come from HBM, not L2 */
    size_t flush_bytes;
    int n_sm;
    int reps;
} bench_env;

typedef mla_status (*launch_fn)(hipStream_t st, const void *args);

/* Median of env->reps timed launches (ms), after two warm-up launches. */
static float time_launch(bench_env *env, launch_fn fn, const void *args)
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

static const char *const fmt_names[] = {"bf16", "fp8", "fp8_ds"};

/* Float64 attention of one (token, head) of the decode over host copies of the pool and tables. */
static void host_decode_row(const gpu_kv_desc *kv, int slot, int s_k, const float *q, float scale, double *o,
                            double *lse)
{
    int c = kv->c, r = kv->r;
    double *s = (double *)host_alloc((size_t)s_k * sizeof(double)), mx = -INFINITY, sum = 0;
    for (int j = 0; j < s_k; j++) {
        const uint8_t *row = kv_row(*kv, slot, j);
        double d = 0;
        for (int e = 0; e < c + r; e++) d += (double)q[e] * kv_load(*kv, row, e);
        s[j] = d * scale;
        mx = s[j] > mx ? s[j] : mx;
    }
    for (int e = 0; e < c; e++) o[e] = 0;
    for (int j = 0; j < s_k; j++) {
        double p = exp(s[j] - mx);
        sum += p;
        const uint8_t *row = kv_row(*kv, slot, j);
        for (int e = 0; e < c; e++) o[e] += p * kv_load(*kv, row, e);
    }
    for (int e = 0; e < c; e++) o[e] /= sum;
    *lse = mx + log(sum);
    free(s);
}

/* rel L2 of a bf16 output row against float64, and |lse difference|. */
static double row_error(const uint16_t *got, const double *want, int n)
{
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        double d = gd_bf16_to_f32(got[i]) - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

#define CHECK_REL_L2 6e-3 /* bf16 output rounding (2^-9 relative) plus fp32 accumulation */
#define CHECK_LSE 2e-3

typedef struct result_row {
    char what[16], kv[8];
    int b, s_k, h, s_q, splits;
    float ms;
    double gbs, tflops, worst_rel, worst_lse;
    int ok;
} result_row;

static void bench_decode(bench_env *env, int fmt, int b, int s_k, int h, int s_q, int tiled, result_row *res)
{
    const int C = 512, R = 64;
    int row_bytes = fmt == GPU_KV_BF16 ? 2 * (C + R) : fmt == GPU_KV_FP8 ? C + R : C + 4 * (C / 128) + 2 * R;
    int bps = (s_k + PAGE - 1) / PAGE, n_blocks = b * bps, T = b * s_q;
    int64_t rows = (int64_t)n_blocks * PAGE;
    int32_t *tables = (int32_t *)host_alloc((size_t)n_blocks * 4);
    for (int i = 0; i < n_blocks; i++) tables[i] = i;
    uint64_t rs = 12345; /* shuffled block tables, as a paged allocator leaves them */
    for (int i = n_blocks - 1; i > 0; i--) {
        rs = rs * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((rs >> 33) % (uint64_t)(i + 1)), t = tables[i];
        tables[i] = tables[j];
        tables[j] = t;
    }
    gpu_seq *seqs = (gpu_seq *)host_alloc((size_t)b * sizeof(gpu_seq));
    int32_t *tok_seq = (int32_t *)host_alloc((size_t)T * 4);
    for (int i = 0; i < b; i++) {
        seqs[i] = gpu_seq{i, s_k - s_q, s_q, i * s_q, 0};
        for (int k = 0; k < s_q; k++) tok_seq[i * s_q + k] = i;
    }
    int splits = gpu_decode_splits(gpu_decode_blocks(T, h, tiled, C, R), s_k, env->n_sm);
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
    gpu_kv_desc kv = {pool, d_tables, bps, PAGE, row_bytes, fmt, 0, C, R, fmt == GPU_KV_FP8 ? 1.0f / 256.0f : 1.0f};
    float scale = 0.25f / sqrtf(192.0f); /* keeps softmax away from one-hot and from uniform */
    gpu_decode_args a = {qa, qp, kv, d_ts, d_seqs, po, pl, olat, lse, T, h, splits, scale, 0, 0, tiled};
    if (gpu_attn_decode(env->st, &a) != MLA_OK) {
        fprintf(stderr, "mla_gpu_bench: %s\n", mla_last_error());
        exit(3);
    }
    BN_CHECK(hipStreamSynchronize(env->st));

    /* check sampled (token, head) rows against float64 on the host */
    uint8_t *hpool = (uint8_t *)host_alloc((size_t)rows * row_bytes);
    BN_CHECK(hipMemcpy(hpool, pool, (size_t)rows * row_bytes, hipMemcpyDeviceToHost));
    gpu_kv_desc hkv = kv;
    hkv.pool = hpool;
    hkv.tables = tables;
    int samples_t[3] = {0, T / 2, T - 1}, samples_h[2] = {0, h - 1};
    double worst = 0, worst_lse = 0, *o = (double *)host_alloc((size_t)C * sizeof(double));
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            int t = samples_t[i], hh = samples_h[k];
            float q[C + R];
            uint16_t got[C];
            float got_lse;
            BN_CHECK(hipMemcpy(q, qa + ((int64_t)t * h + hh) * C, C * 4, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(q + C, qp + ((int64_t)t * h + hh) * R, R * 4, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(got, olat + ((int64_t)t * h + hh) * C, C * 2, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(&got_lse, lse + (int64_t)t * h + hh, 4, hipMemcpyDeviceToHost));
            const gpu_seq sq = seqs[tok_seq[t]];
            double want_lse;
            host_decode_row(&hkv, sq.slot, sq.n_past + (t - sq.tok0) + 1, q, scale, o, &want_lse);
            double e = row_error(got, o, C), el = fabs(got_lse - want_lse);
            worst = e > worst ? e : worst;
            worst_lse = el > worst_lse ? el : worst_lse;
        }
    free(hpool);
    free(o);

    float ms = time_launch(env, launch_decode, &a);
    double sum_sk = 0;
    for (int i = 0; i < b; i++) sum_sk += s_k;
    double flops = 2.0 * s_q * sum_sk * h * (576 + 512);
    double bytes = sum_sk * row_bytes + (double)T * h * ((C + R) * 4 + C * 2);
    snprintf(res->what, sizeof res->what, tiled ? "decode-t" : "decode");
    snprintf(res->kv, sizeof res->kv, "%s", fmt_names[fmt]);
    res->b = b; res->s_k = s_k; res->h = h; res->s_q = s_q; res->splits = splits; res->ms = ms;
    res->gbs = bytes / (ms * 1e-3) / 1e9;
    res->tflops = flops / (ms * 1e-3) / 1e12;
    res->worst_rel = worst;
    res->worst_lse = worst_lse;
    res->ok = worst < CHECK_REL_L2 && worst_lse < CHECK_LSE;
    BN_CHECK(hipFree(pool)); BN_CHECK(hipFree(d_tables)); BN_CHECK(hipFree(d_ts)); BN_CHECK(hipFree(d_seqs));
    BN_CHECK(hipFree(qa)); BN_CHECK(hipFree(qp)); BN_CHECK(hipFree(po)); BN_CHECK(hipFree(pl));
    BN_CHECK(hipFree(olat)); BN_CHECK(hipFree(lse));
    free(tables); free(seqs); free(tok_seq);
}

/* Causal prefill of b sequences of s tokens with no cached context (MHA form, d_qk 192, d_v 128). */
static void bench_prefill(bench_env *env, int b, int s, int h, int tiled, result_row *res)
{
    const int P = 128, R = 64, V = 128;
    int T = b * s;
    gpu_seq *seqs = (gpu_seq *)host_alloc((size_t)b * sizeof(gpu_seq));
    int32_t *tok_seq = (int32_t *)host_alloc((size_t)T * 4);
    for (int i = 0; i < b; i++) {
        seqs[i] = gpu_seq{i, 0, s, i * s, i * s};
        for (int k = 0; k < s; k++) tok_seq[i * s + k] = i;
    }
    uint16_t *qn = (uint16_t *)dev_alloc((size_t)T * h * P * 2), *qp = (uint16_t *)dev_alloc((size_t)T * h * R * 2);
    uint16_t *kvx = (uint16_t *)dev_alloc((size_t)T * h * (P + V) * 2), *kpe = (uint16_t *)dev_alloc((size_t)T * R * 2);
    uint16_t *out = (uint16_t *)dev_alloc((size_t)T * h * V * 2);
    float *lse = (float *)dev_alloc((size_t)T * h * 4);
    int32_t *d_ts = (int32_t *)dev_alloc((size_t)T * 4);
    gpu_seq *d_seqs = (gpu_seq *)dev_alloc((size_t)b * sizeof(gpu_seq));
    BN_CHECK(hipMemcpy(d_ts, tok_seq, (size_t)T * 4, hipMemcpyHostToDevice));
    BN_CHECK(hipMemcpy(d_seqs, seqs, (size_t)b * sizeof(gpu_seq), hipMemcpyHostToDevice));
    k_fill_bf16<<<1024, 256, 0, env->st>>>(qn, (int64_t)T * h * P, 11, 1.0f);
    k_fill_bf16<<<1024, 256, 0, env->st>>>(qp, (int64_t)T * h * R, 12, 1.0f);
    k_fill_bf16<<<1024, 256, 0, env->st>>>(kvx, (int64_t)T * h * (P + V), 13, 1.0f);
    k_fill_bf16<<<1024, 256, 0, env->st>>>(kpe, (int64_t)T * R, 14, 1.0f);
    BN_CHECK(hipGetLastError());
    float scale = 0.5f / sqrtf(192.0f);
    gpu_prefill_args a = {qn, qp, kvx, kpe, d_ts, d_seqs, out, lse, T, h, P, R, V, scale, 0, 0, b, s, tiled};
    if (gpu_attn_prefill(env->st, &a) != MLA_OK) {
        fprintf(stderr, "mla_gpu_bench: %s\n", mla_last_error());
        exit(3);
    }
    BN_CHECK(hipStreamSynchronize(env->st));

    /* check rows of the first and last sequence at the start, middle and end of the prompt */
    uint16_t *hkvx = (uint16_t *)host_alloc((size_t)T * h * (P + V) * 2), *hkpe = (uint16_t *)host_alloc((size_t)T * R * 2);
    BN_CHECK(hipMemcpy(hkvx, kvx, (size_t)T * h * (P + V) * 2, hipMemcpyDeviceToHost));
    BN_CHECK(hipMemcpy(hkpe, kpe, (size_t)T * R * 2, hipMemcpyDeviceToHost));
    int samples_t[4] = {0, s / 2, s - 1, T - 1}, samples_h[2] = {0, h - 1};
    double worst = 0, worst_lse = 0, o[128];
    double *sc = (double *)host_alloc((size_t)s * sizeof(double));
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++) {
            int t = samples_t[i], hh = samples_h[k], sq = t / s, pos = t % s;
            uint16_t q[192], got[128];
            float got_lse;
            BN_CHECK(hipMemcpy(q, qn + ((int64_t)t * h + hh) * P, P * 2, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(q + P, qp + ((int64_t)t * h + hh) * R, R * 2, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(got, out + ((int64_t)t * h + hh) * V, V * 2, hipMemcpyDeviceToHost));
            BN_CHECK(hipMemcpy(&got_lse, lse + (int64_t)t * h + hh, 4, hipMemcpyDeviceToHost));
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j <= pos; j++) {
                const uint16_t *kr = hkvx + ((int64_t)(sq * s + j) * h + hh) * (P + V), *kp = hkpe + (int64_t)(sq * s + j) * R;
                double d = 0;
                for (int e = 0; e < P; e++) d += (double)gd_bf16_to_f32(q[e]) * gd_bf16_to_f32(kr[e]);
                for (int e = 0; e < R; e++) d += (double)gd_bf16_to_f32(q[P + e]) * gd_bf16_to_f32(kp[e]);
                sc[j] = d * scale;
                mx = sc[j] > mx ? sc[j] : mx;
            }
            for (int e = 0; e < V; e++) o[e] = 0;
            for (int j = 0; j <= pos; j++) {
                double p = exp(sc[j] - mx);
                sum += p;
                const uint16_t *vr = hkvx + ((int64_t)(sq * s + j) * h + hh) * (P + V) + P;
                for (int e = 0; e < V; e++) o[e] += p * gd_bf16_to_f32(vr[e]);
            }
            for (int e = 0; e < V; e++) o[e] /= sum;
            double e1 = row_error(got, o, V), el = fabs(got_lse - (mx + log(sum)));
            worst = e1 > worst ? e1 : worst;
            worst_lse = el > worst_lse ? el : worst_lse;
        }
    free(hkvx); free(hkpe); free(sc);

    float ms = time_launch(env, launch_prefill, &a);
    double flops = 2.0 * b * h * (double)s * (s / 2.0) * (192 + 128);
    double bytes = (double)T * h * (P + R + P + V + V) * 2 + (double)T * R * 2;
    snprintf(res->what, sizeof res->what, tiled ? "prefill-t" : "prefill");
    snprintf(res->kv, sizeof res->kv, "bf16");
    res->b = b; res->s_k = s; res->h = h; res->s_q = s; res->splits = 1; res->ms = ms;
    res->gbs = bytes / (ms * 1e-3) / 1e9;
    res->tflops = flops / (ms * 1e-3) / 1e12;
    res->worst_rel = worst;
    res->worst_lse = worst_lse;
    res->ok = worst < CHECK_REL_L2 && worst_lse < CHECK_LSE;
    BN_CHECK(hipFree(qn)); BN_CHECK(hipFree(qp)); BN_CHECK(hipFree(kvx)); BN_CHECK(hipFree(kpe));
    BN_CHECK(hipFree(out)); BN_CHECK(hipFree(lse)); BN_CHECK(hipFree(d_ts)); BN_CHECK(hipFree(d_seqs));
    free(seqs); free(tok_seq);
}

static void print_row(FILE *f, const result_row *r)
{
    fprintf(f, "| %-7s | %-6s | %3d | %5d | %3d | %4d | %3d | %10.1f | %7.1f | %5.1f%% | %7.2f | %5.2f%% | %.1e / %.1e %s |\n",
            r->what, r->kv, r->b, r->s_k, r->h, r->s_q, r->splits, r->ms * 1e3, r->gbs, 100 * r->gbs / CEIL_GBS,
            r->tflops, 100 * r->tflops / CEIL_TFLOPS, r->worst_rel, r->worst_lse, r->ok ? "ok" : "FAIL");
}

int main(int argc, char **argv)
{
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else {
            fprintf(stderr, "usage: mla_gpu_bench [--quick]\n  times the GPU attention kernels (see gpu/NOTES.md)\n");
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
    env.reps = quick ? 5 : 20;
    env.flush_bytes = (size_t)256 << 20;
    env.flush = dev_alloc(env.flush_bytes);
    BN_CHECK(hipStreamCreate(&env.st));
    BN_CHECK(hipEventCreate(&env.e0));
    BN_CHECK(hipEventCreate(&env.e1));
    printf("mla_gpu_bench: %s, %d SMs; median of %d launches after 2 warm-ups, 256 MiB L2 flush before each\n",
           p.name, env.n_sm, env.reps);

    result_row rows[64]; /* at most 12 x 2 + 4 decode and 3 x 2 prefill rows */
    int n = 0;
    static const int d1_h[] = {16, 128};
    static const int d1_s[] = {4096, 8192};
    /* each decode workload with the first kernel (decode) and the head-grouped one (decode-t) */
    for (int fmt = 0; fmt < 3; fmt++) /* D1 / D5: b 128, page 64 */
        for (int si = 0; si < 2 - quick; si++)
            for (int hi = 0; hi < 2; hi++)
                for (int tiled = 0; tiled < 2; tiled++) {
                    bench_decode(&env, fmt, 128, d1_s[si], d1_h[hi], 1, tiled, &rows[n]);
                    print_row(stdout, &rows[n++]);
                    fflush(stdout);
                }
    for (int tiled = 0; tiled < 2; tiled++) {
        bench_decode(&env, GPU_KV_BF16, 128, 4096, 128, 2, tiled, &rows[n]); /* MTP s_q = 2 */
        print_row(stdout, &rows[n++]);
        bench_decode(&env, GPU_KV_BF16, 1, 65536, 128, 1, tiled, &rows[n]); /* D4: one long sequence */
        print_row(stdout, &rows[n++]);
    }
    int saved_reps = env.reps;
    env.reps = quick ? 3 : 5; /* prefill launches take up to seconds */
    static const int p1[3][2] = {{1, 4096}, {1, 8192}, {16, 1024}}; /* P1 (b, s) at h 128 */
    for (int k = 0; k < (quick ? 1 : 3); k++)
        for (int tiled = 0; tiled < 2; tiled++) {
            bench_prefill(&env, p1[k][0], p1[k][1], 128, tiled, &rows[n]);
            print_row(stdout, &rows[n++]);
        }
    env.reps = saved_reps;

    int fails = 0;
    printf("\n| kernel | kv | b | s_k | h | s_q | splits | median us | GB/s | %% of %.0f | TFLOP/s | %% of %.0f | check rel L2 / lse |\n",
           CEIL_GBS, CEIL_TFLOPS);
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        print_row(stdout, &rows[i]);
        fails += !rows[i].ok;
    }
    printf("%d of %d checks failed (limits: rel L2 %.0e of the bf16 output, |lse| %.0e)\n", fails, n, CHECK_REL_L2, CHECK_LSE);
    BN_CHECK(hipFree(env.flush));
    return fails ? 1 : 0;
}
