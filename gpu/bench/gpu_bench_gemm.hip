/* gpu_bench_gemm.hip: mla_gpu_bench --gemm, the projection GEMMs: gpu_gemm_bf16's SIMT kernel and its
 * tensor-core kernel (NVIDIA) on DeepSeek-V3 shapes. Each output is checked on sampled elements against
 * float64 sums of the same bf16 inputs before it is timed (device events, median, 256 MiB L2 flush
 * before each launch, as the attention rows). The mma rows also say how far they are from the SIMT
 * output (rounding: different summation order) and whether rows of a call with m / 2 and m / 2 - 1 rows
 * are bitwise those of the full call (batch invariance). FLOPs = 2 batch m n k. */
#include "gpu_bench.h"
#include "mla_core/rng.h"

#include <math.h>
#include <string.h>

typedef struct bg_shape {
    const char *name;
    int batch, m, n, k;
} bg_shape;

/* q_a, q_b, kv_a, o_proj at 1024 and 4096 tokens; the absorbed decode's per-head q_nope . W_UK (128
 * heads as the batch, strides as gpu_forward.hip's: x [m, batch, k], y [m, batch, n]); 8192^3, the
 * shape of the 784 TFLOP/s ceiling */
static const bg_shape bg_shapes[] = {
    {"q_a", 1, 1024, 1536, 7168},    {"q_a", 1, 4096, 1536, 7168},    {"q_b", 1, 1024, 24576, 1536},
    {"q_b", 1, 4096, 24576, 1536},   {"kv_a", 1, 1024, 576, 7168},    {"kv_a", 1, 4096, 576, 7168},
    {"o_proj", 1, 1024, 7168, 16384}, {"o_proj", 1, 4096, 7168, 16384}, {"kv_b_abs", 128, 128, 512, 128},
    {"ceiling", 1, 8192, 8192, 8192},
};

#define BG_SAMPLES 64

__global__ void k_bg_fill(uint16_t *p, int64_t n, uint64_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = gd_f32_to_bf16(bn_uniform(seed, (uint64_t)i));
}

/* One sampled output (b, i, j): the float64 sum and its gate, and those of column j + 1 (the control). */
typedef struct bg_sample {
    int b, i, j;
    double ref, tol, ref_c, tol_c;
} bg_sample;

/* sum_k x w over row i of X and row j of W (batch b), and the gate: bf16 rounding of the output
 * (2^-8 relative) plus fp32 accumulation (2^-14 of sum |x w|; a dropped 32-deep k slice is ~20x that) */
static void bg_ref(const gpu_gemm_args *a, int b, int i, int j, double *ref, double *tol)
{
    uint16_t *xr = (uint16_t *)host_alloc((size_t)a->k * 2), *wr = (uint16_t *)host_alloc((size_t)a->k * 2);
    BN_CHECK(hipMemcpy(xr, a->x + (int64_t)b * a->x_bs + (int64_t)i * a->ldx, (size_t)a->k * 2, hipMemcpyDeviceToHost));
    BN_CHECK(hipMemcpy(wr, a->w + (int64_t)b * a->w_bs + (int64_t)j * a->ldw, (size_t)a->k * 2, hipMemcpyDeviceToHost));
    double s = 0, abs_s = 0;
    for (int k = 0; k < a->k; k++) {
        double p = (double)gd_bf16_to_f32(xr[k]) * gd_bf16_to_f32(wr[k]);
        s += p;
        abs_s += fabs(p);
    }
    *ref = s;
    *tol = ldexp(fabs(s), -8) + ldexp(abs_s, -14) + 1e-30;
    free(xr);
    free(wr);
}

static void bg_samples(const gpu_gemm_args *a, bg_sample *s)
{
    for (int q = 0; q < BG_SAMPLES; q++) {
        bg_sample *p = &s[q];
        uint64_t r = mla_rng_stream(4242, (uint64_t)q);
        p->b = q == 0 ? 0 : q == 1 ? a->batch - 1 : (int)(r % (uint64_t)a->batch); /* corners first */
        p->i = q == 0 ? 0 : q == 1 ? a->m - 1 : (int)((r >> 8) % (uint64_t)a->m);
        p->j = q == 0 ? 0 : q == 1 ? a->n - 1 : (int)((r >> 24) % (uint64_t)a->n);
        bg_ref(a, p->b, p->i, p->j, &p->ref, &p->tol);
        bg_ref(a, p->b, p->i, (p->j + 1) % a->n, &p->ref_c, &p->tol_c);
    }
}

static int bg_cmp(const void *x, const void *y)
{
    double u = *(const double *)x, v = *(const double *)y;
    return (u > v) - (u < v);
}

/* Worst |y - ref| / tol over the samples (NaN counts as failing), and the control: the median of each
 * sample's error against its neighbour column's reference, which must exceed 1 or the check could
 * not fail. */
static void bg_score(const gpu_gemm_args *a, const bg_sample *s, const uint16_t *y, double *worst, double *control)
{
    double c[BG_SAMPLES];
    *worst = 0;
    for (int q = 0; q < BG_SAMPLES; q++) {
        double v = gd_bf16_to_f32(y[(int64_t)s[q].b * a->y_bs + (int64_t)s[q].i * a->ldy + s[q].j]);
        double e = fabs(v - s[q].ref) / s[q].tol, ec = fabs(v - s[q].ref_c) / s[q].tol_c;
        *worst = isnan(e) || e > *worst ? (isnan(e) ? INFINITY : e) : *worst;
        c[q] = isnan(ec) ? INFINITY : ec;
    }
    qsort(c, BG_SAMPLES, sizeof c[0], bg_cmp);
    *control = c[BG_SAMPLES / 2];
}

/* bf16 bit patterns on one integer line (-0 and +0 both 0), so a difference counts ulps */
static int bg_ord(uint16_t v) { return (v & 0x8000) ? -(int)(v & 0x7fff) : (int)v; }

static mla_status bg_simt(hipStream_t st, const void *a) { return gpu_gemm_bf16_simt(st, (const gpu_gemm_args *)a); }
static mla_status bg_mma(hipStream_t st, const void *a) { return gpu_gemm_bf16_mma(st, (const gpu_gemm_args *)a); }

static void bg_run(bench_env *env, launch_fn fn, const gpu_gemm_args *a)
{
    if (fn(env->st, a) != MLA_OK) {
        fprintf(stderr, "mla_gpu_bench: %s\n", mla_last_error());
        exit(3);
    }
    BN_CHECK(hipStreamSynchronize(env->st));
}

/* The mma kernel with m / 2 and m / 2 - 1 rows (a ragged last tile) into y (poisoned first): are its
 * rows bitwise the full call's (full, on the host)? */
static int bg_invariant(bench_env *env, gpu_gemm_args a, uint16_t *y, const uint16_t *full)
{
    const int m = a.m;
    const size_t row = (size_t)a.ldy; /* rows [0, m2) of every batch entry are the first m2 ldy elements */
    uint16_t *h = (uint16_t *)host_alloc((size_t)(m / 2) * row * 2);
    int same = 1;
    for (int d = 0; d < 2 && m / 2 - d > 0; d++) {
        a.m = m / 2 - d;
        a.y = y;
        BN_CHECK(hipMemset(y, 0xff, (size_t)m * row * 2));
        bg_run(env, bg_mma, &a);
        BN_CHECK(hipMemcpy(h, y, (size_t)a.m * row * 2, hipMemcpyDeviceToHost));
        same &= !memcmp(h, full, (size_t)a.m * row * 2);
    }
    free(h);
    return same;
}

static void bg_print(const bg_shape *s, const char *kernel, float ms, double worst, double control, int ok,
                     const char *vs_simt, const char *inv)
{
    double tf = 2.0 * s->batch * s->m * s->n * (double)s->k / (ms * 1e-3) / 1e12;
    printf("| %-8s | %3d | %5d | %5d | %5d | %-4s | %10.1f | %6.1f | %5.1f%% | %.3f (control %.3g) %s | %s | %s |\n",
           s->name, s->batch, s->m, s->n, s->k, kernel, ms * 1e3, tf, 100 * tf / CEIL_TFLOPS, worst, control,
           ok ? "ok" : "FAIL", vs_simt, inv);
    fflush(stdout);
}

/* One shape: both kernels checked, compared and timed; returns the number of failed checks. */
static int bg_shape_run(bench_env *env, const bg_shape *s)
{
    const int64_t nx = (int64_t)s->m * s->batch * s->k, nw = (int64_t)s->batch * s->n * s->k;
    const size_t ny = (size_t)s->m * s->batch * s->n;
    uint16_t *x = (uint16_t *)dev_alloc((size_t)nx * 2), *w = (uint16_t *)dev_alloc((size_t)nw * 2);
    uint16_t *ys = (uint16_t *)dev_alloc(ny * 2), *ym = (uint16_t *)dev_alloc(ny * 2);
    k_bg_fill<<<1024, 256, 0, env->st>>>(x, nx, 21);
    k_bg_fill<<<1024, 256, 0, env->st>>>(w, nw, 22);
    BN_CHECK(hipGetLastError());
    BN_CHECK(hipStreamSynchronize(env->st));
    gpu_gemm_args a = {.x = x, .ldx = (int64_t)s->batch * s->k, .x_bs = s->k, .w = w, .ldw = s->k,
                       .w_bs = (int64_t)s->n * s->k, .y = ys, .ldy = (int64_t)s->batch * s->n, .y_bs = s->n,
                       .m = s->m, .n = s->n, .k = s->k, .batch = s->batch, .y_f32 = 0};
    bg_sample *smp = (bg_sample *)host_alloc(BG_SAMPLES * sizeof(bg_sample));
    bg_samples(&a, smp);
    uint16_t *hs = (uint16_t *)host_alloc(ny * 2), *hm = (uint16_t *)host_alloc(ny * 2);
    double worst, control;
    int fails = 0;

    bg_run(env, bg_simt, &a);
    BN_CHECK(hipMemcpy(hs, ys, ny * 2, hipMemcpyDeviceToHost));
    bg_score(&a, smp, hs, &worst, &control);
    int ok = worst <= 1.0 && control > 1.0;
    fails += !ok;
    bg_print(s, "simt", time_launch(env, bg_simt, &a), worst, control, ok, "-", "-");

    if (!gpu_gemm_mma_fits(&a)) {
        printf("| %-8s | %3d | %5d | %5d | %5d | mma  | - | - | - | not available on this device | - | - |\n",
               s->name, s->batch, s->m, s->n, s->k);
    } else {
        a.y = ym;
        bg_run(env, bg_mma, &a);
        BN_CHECK(hipMemcpy(hm, ym, ny * 2, hipMemcpyDeviceToHost));
        bg_score(&a, smp, hm, &worst, &control);
        size_t differ = 0;
        int max_ulp = 0;
        for (size_t e = 0; e < ny; e++) {
            int d = abs(bg_ord(hs[e]) - bg_ord(hm[e]));
            differ += d != 0;
            max_ulp = d > max_ulp ? d : max_ulp;
        }
        char vs[96];
        snprintf(vs, sizeof vs, "%zu of %zu differ, max %d ulp", differ, ny, max_ulp);
        const int inv = bg_invariant(env, a, ys, hm);
        ok = worst <= 1.0 && control > 1.0;
        fails += !ok + !inv;
        a.y = ym;
        bg_print(s, "mma", time_launch(env, bg_mma, &a), worst, control, ok, vs, inv ? "bitwise equal" : "DIFFER");
    }
    free(smp);
    free(hs);
    free(hm);
    BN_CHECK(hipFree(x));
    BN_CHECK(hipFree(w));
    BN_CHECK(hipFree(ys));
    BN_CHECK(hipFree(ym));
    return fails;
}

int bench_gemm(bench_env *env)
{
    const int n = (int)(sizeof bg_shapes / sizeof bg_shapes[0]);
    printf("\nY[b][m, n] = X[b][m, k] . W[b][n, k]^T, bf16 in and out, fp32 accumulation; %% of %.0f TFLOP/s "
           "(cuBLAS bf16 on this H200)\n\n", CEIL_TFLOPS);
    printf("| shape | b | m | n | k | kernel | median us | TFLOP/s | %% of %.0f | check worst / 1 (control > 1) | "
           "bf16 vs simt | rows of m/2, m/2-1 |\n", CEIL_TFLOPS);
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int fails = 0;
    for (int i = 0; i < n; i++) fails += bg_shape_run(env, &bg_shapes[i]);
    printf("\n%d failed checks (gate per sampled output: |y - ref| <= 2^-8 |ref| + 2^-14 sum_k |x w|, ref in "
           "float64 from the same bf16 inputs, %d samples a kernel and shape, the worst printed as a fraction of "
           "its gate; control: the median error against the next column's reference must exceed the gate; batch "
           "invariance: rows bitwise equal)\n", fails, BG_SAMPLES);
    return fails ? 1 : 0;
}
