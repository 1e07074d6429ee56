/* gpu_bench_gemm.hip: mla_gpu_bench --gemm, the projection GEMMs: the SIMT and tensor-core (NVIDIA)
 * kernels of gpu_gemm_bf16 and of the block-fp8 gpu_gemm_fp8 on DeepSeek-V3 shapes. Each output is
 * checked on sampled elements against float64 sums of the same inputs before it is timed (device events,
 * median, 256 MiB L2 flush before each launch, as the attention rows). The mma rows also say how far they
 * are from the SIMT output (rounding: another summation order) and whether the rows of calls with m / 2,
 * m / 2 - 1 and rows 3 .. m - 1 are bitwise those of the full call (batch invariance). FLOPs = 2 batch m n k. */
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

__global__ void k_bg_fill8(uint8_t *p, int64_t n, uint64_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = gd_f32_to_e4m3(448.0f * bn_uniform(seed, (uint64_t)i), 0);
}

/* block scales as act_quant leaves them: amax / 448 for amax in [1, 2) */
__global__ void k_bg_scales(float *p, int64_t n, uint64_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = (1.5f + 0.5f * bn_uniform(seed, (uint64_t)i)) / 448.0f;
}

/* One GEMM of the table: bf16 (the call in a) or block fp8 (codes and scales here; y, ldy, m, n, k in a). */
typedef struct bg_case {
    const bg_shape *s;
    int fp8;
    gpu_gemm_args a;
    const uint8_t *xq, *wq;
    const float *xs, *ws;
} bg_case;

static mla_status bg_simt(hipStream_t st, const void *p)
{
    const bg_case *c = (const bg_case *)p;
    return c->fp8 ? gpu_gemm_fp8_simt(st, c->xq, c->xs, c->wq, c->ws, (uint16_t *)c->a.y, c->a.ldy, c->a.m, c->a.n,
                                      c->a.k)
                  : gpu_gemm_bf16_simt(st, &c->a);
}
static mla_status bg_mma(hipStream_t st, const void *p)
{
    const bg_case *c = (const bg_case *)p;
    return c->fp8 ? gpu_gemm_fp8_mma(st, c->xq, c->xs, c->wq, c->ws, (uint16_t *)c->a.y, c->a.ldy, c->a.m, c->a.n,
                                     c->a.k)
                  : gpu_gemm_bf16_mma(st, &c->a);
}
static int bg_fits(const bg_case *c)
{
    return c->fp8 ? gpu_gemm_fp8_mma_fits(c->xq, c->wq, c->a.k) : gpu_gemm_mma_fits(&c->a);
}

/* One sampled output (b, i, j): the float64 sum and its gate, and those of column j + 1 (the control). */
typedef struct bg_sample {
    int b, i, j;
    double ref, tol, ref_c, tol_c;
} bg_sample;

static void *bg_fetch(const void *dev, size_t bytes)
{
    void *h = host_alloc(bytes);
    BN_CHECK(hipMemcpy(h, dev, bytes, hipMemcpyDeviceToHost));
    return h;
}

/* sum_k x w over row i of X and row j of W (batch b; fp8: each 128-block's sum times its two scales),
 * and the gate: bf16 rounding of the output (2^-8 relative) plus the accumulation (bf16 operands: 2^-14
 * of sum |x w|, a dropped 32-deep k slice is ~20x that; fp8: 2^-11, the tensor cores' fp8 sums keep
 * fewer bits than fp32 over a 128-block) */
static void bg_ref(const bg_case *c, int b, int i, int j, double *ref, double *tol)
{
    const gpu_gemm_args *a = &c->a;
    double s = 0, abs_s = 0;
    if (c->fp8) {
        const int kb = a->k / 128;
        uint8_t *xr = (uint8_t *)bg_fetch(c->xq + (int64_t)i * a->k, (size_t)a->k);
        uint8_t *wr = (uint8_t *)bg_fetch(c->wq + (int64_t)j * a->k, (size_t)a->k);
        float *sx = (float *)bg_fetch(c->xs + (int64_t)i * kb, (size_t)kb * 4);
        float *sw = (float *)bg_fetch(c->ws + (int64_t)(j / 128) * kb, (size_t)kb * 4);
        for (int k = 0; k < a->k; k++) {
            double p = (double)gd_e4m3_to_f32(xr[k], 0) * gd_e4m3_to_f32(wr[k], 0) * sx[k / 128] * sw[k / 128];
            s += p;
            abs_s += fabs(p);
        }
        free(xr);
        free(wr);
        free(sx);
        free(sw);
    } else {
        uint16_t *xr = (uint16_t *)bg_fetch(a->x + (int64_t)b * a->x_bs + (int64_t)i * a->ldx, (size_t)a->k * 2);
        uint16_t *wr = (uint16_t *)bg_fetch(a->w + (int64_t)b * a->w_bs + (int64_t)j * a->ldw, (size_t)a->k * 2);
        for (int k = 0; k < a->k; k++) {
            double p = (double)gd_bf16_to_f32(xr[k]) * gd_bf16_to_f32(wr[k]);
            s += p;
            abs_s += fabs(p);
        }
        free(xr);
        free(wr);
    }
    *ref = s;
    *tol = ldexp(fabs(s), -8) + ldexp(abs_s, c->fp8 ? -11 : -14) + 1e-30;
}

static void bg_samples(const bg_case *c, bg_sample *s)
{
    const gpu_gemm_args *a = &c->a;
    for (int q = 0; q < BG_SAMPLES; q++) {
        bg_sample *p = &s[q];
        uint64_t r = mla_rng_stream(4242, (uint64_t)q);
        p->b = q == 0 ? 0 : q == 1 ? a->batch - 1 : (int)(r % (uint64_t)a->batch); /* corners first */
        p->i = q == 0 ? 0 : q == 1 ? a->m - 1 : (int)((r >> 8) % (uint64_t)a->m);
        p->j = q == 0 ? 0 : q == 1 ? a->n - 1 : (int)((r >> 24) % (uint64_t)a->n);
        bg_ref(c, p->b, p->i, p->j, &p->ref, &p->tol);
        bg_ref(c, p->b, p->i, (p->j + 1) % a->n, &p->ref_c, &p->tol_c);
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

static void bg_run(bench_env *env, launch_fn fn, const bg_case *c)
{
    if (fn(env->st, c) != MLA_OK) {
        fprintf(stderr, "mla_gpu_bench: %s\n", mla_last_error());
        exit(3);
    }
    BN_CHECK(hipStreamSynchronize(env->st));
}

/* Batch invariance: the mma kernel over m / 2 and m / 2 - 1 rows (a ragged last tile), and over rows
 * 3 .. m - 1 (X from row 3: every row at another place in its tiles and fragments), into y (poisoned
 * first): are its rows bitwise the full call's (full, on the host)? */
static int bg_invariant(bench_env *env, const bg_case *c0, uint16_t *y, const uint16_t *full)
{
    const int m = c0->a.m, rows[3] = {m / 2, m / 2 - 1, m - 3}, shift[3] = {0, 0, 3};
    const size_t ld = (size_t)c0->a.ldy; /* rows [0, r) of every batch entry are the first r ldy elements */
    uint16_t *h = (uint16_t *)host_alloc((size_t)m * ld * 2);
    int same = 1;
    for (int v = 0; v < 3; v++) {
        if (rows[v] <= 0) continue;
        bg_case c = *c0;
        c.a.m = rows[v];
        c.a.y = y;
        if (c.fp8) {
            c.xq += (int64_t)shift[v] * c.a.k;
            c.xs += (int64_t)shift[v] * (c.a.k / 128);
        } else {
            c.a.x += (int64_t)shift[v] * c.a.ldx;
        }
        BN_CHECK(hipMemset(y, 0xff, (size_t)m * ld * 2));
        bg_run(env, bg_mma, &c);
        BN_CHECK(hipMemcpy(h, y, (size_t)rows[v] * ld * 2, hipMemcpyDeviceToHost));
        same &= !memcmp(h, full + (size_t)shift[v] * ld, (size_t)rows[v] * ld * 2);
    }
    free(h);
    return same;
}

static void bg_print(const bg_case *c, const char *kernel, float ms, double worst, double control, int ok,
                     const char *vs_simt, const char *inv)
{
    const bg_shape *s = c->s;
    double tf = 2.0 * s->batch * s->m * s->n * (double)s->k / (ms * 1e-3) / 1e12;
    printf("| %-8s | %-4s | %3d | %5d | %5d | %5d | %-4s | %10.1f | %6.1f | %5.1f%% | %.3f (control %.3g) %s | %s | %s |\n",
           s->name, c->fp8 ? "fp8" : "bf16", s->batch, s->m, s->n, s->k, kernel, ms * 1e3, tf, 100 * tf / CEIL_TFLOPS,
           worst, control, ok ? "ok" : "FAIL", vs_simt, inv);
    fflush(stdout);
}

/* One shape in one format: both kernels checked, compared and timed; returns the number of failed checks. */
static int bg_shape_run(bench_env *env, const bg_shape *s, int fp8)
{
    const int64_t nx = (int64_t)s->m * s->batch * s->k, nw = (int64_t)s->batch * s->n * s->k;
    const int64_t nxs = (int64_t)s->m * (s->k / 128), nws = (int64_t)((s->n + 127) / 128) * (s->k / 128);
    const size_t ny = (size_t)s->m * s->batch * s->n, esz = fp8 ? 1 : 2;
    void *x = dev_alloc((size_t)nx * esz), *w = dev_alloc((size_t)nw * esz);
    float *xs = fp8 ? (float *)dev_alloc((size_t)nxs * 4) : NULL, *ws = fp8 ? (float *)dev_alloc((size_t)nws * 4) : NULL;
    uint16_t *ys = (uint16_t *)dev_alloc(ny * 2), *ym = (uint16_t *)dev_alloc(ny * 2);
    if (fp8) {
        k_bg_fill8<<<1024, 256, 0, env->st>>>((uint8_t *)x, nx, 31);
        k_bg_fill8<<<1024, 256, 0, env->st>>>((uint8_t *)w, nw, 32);
        k_bg_scales<<<256, 256, 0, env->st>>>(xs, nxs, 33);
        k_bg_scales<<<256, 256, 0, env->st>>>(ws, nws, 34);
    } else {
        k_bg_fill<<<1024, 256, 0, env->st>>>((uint16_t *)x, nx, 21);
        k_bg_fill<<<1024, 256, 0, env->st>>>((uint16_t *)w, nw, 22);
    }
    BN_CHECK(hipGetLastError());
    BN_CHECK(hipStreamSynchronize(env->st));
    bg_case c = {.s = s, .fp8 = fp8,
                 .a = {.x = (const uint16_t *)x, .ldx = (int64_t)s->batch * s->k, .x_bs = s->k, .w = (const uint16_t *)w,
                       .ldw = s->k, .w_bs = (int64_t)s->n * s->k, .y = ys, .ldy = (int64_t)s->batch * s->n,
                       .y_bs = s->n, .m = s->m, .n = s->n, .k = s->k, .batch = s->batch, .y_f32 = 0},
                 .xq = (const uint8_t *)x, .wq = (const uint8_t *)w, .xs = xs, .ws = ws};
    bg_sample *smp = (bg_sample *)host_alloc(BG_SAMPLES * sizeof(bg_sample));
    bg_samples(&c, smp);
    uint16_t *hs = (uint16_t *)host_alloc(ny * 2), *hm = (uint16_t *)host_alloc(ny * 2);
    double worst, control;
    int fails = 0;

    bg_run(env, bg_simt, &c);
    BN_CHECK(hipMemcpy(hs, ys, ny * 2, hipMemcpyDeviceToHost));
    bg_score(&c.a, smp, hs, &worst, &control);
    int ok = worst <= 1.0 && control > 1.0;
    fails += !ok;
    bg_print(&c, "simt", time_launch(env, bg_simt, &c), worst, control, ok, "-", "-");

    if (!bg_fits(&c)) {
        printf("| %-8s | %-4s | %3d | %5d | %5d | %5d | mma  | - | - | - | not available on this device | - | - |\n",
               s->name, fp8 ? "fp8" : "bf16", s->batch, s->m, s->n, s->k);
    } else {
        c.a.y = ym;
        bg_run(env, bg_mma, &c);
        BN_CHECK(hipMemcpy(hm, ym, ny * 2, hipMemcpyDeviceToHost));
        bg_score(&c.a, smp, hm, &worst, &control);
        size_t differ = 0;
        int max_ulp = 0;
        for (size_t e = 0; e < ny; e++) {
            int d = abs(bg_ord(hs[e]) - bg_ord(hm[e]));
            differ += d != 0;
            max_ulp = d > max_ulp ? d : max_ulp;
        }
        char vs[96];
        snprintf(vs, sizeof vs, "%zu of %zu differ, max %d ulp", differ, ny, max_ulp);
        const int inv = bg_invariant(env, &c, ys, hm);
        ok = worst <= 1.0 && control > 1.0;
        fails += !ok + !inv;
        bg_print(&c, "mma", time_launch(env, bg_mma, &c), worst, control, ok, vs, inv ? "bitwise equal" : "DIFFER");
    }
    free(smp);
    free(hs);
    free(hm);
    BN_CHECK(hipFree(x));
    BN_CHECK(hipFree(w));
    if (fp8) {
        BN_CHECK(hipFree(xs));
        BN_CHECK(hipFree(ws));
    }
    BN_CHECK(hipFree(ys));
    BN_CHECK(hipFree(ym));
    return fails;
}

int bench_gemm(bench_env *env)
{
    const int n = (int)(sizeof bg_shapes / sizeof bg_shapes[0]);
    printf("\nY[b][m, n] = X[b][m, k] . W[b][n, k]^T, fp32 accumulation, Y bf16; bf16 operands, or fp8: e4m3 codes "
           "with 1x128 (X) and 128x128 (W) block scales (batch 1 shapes); %% of %.0f TFLOP/s (cuBLAS bf16 on "
           "this H200)\n\n", CEIL_TFLOPS);
    printf("| shape | in | b | m | n | k | kernel | median us | TFLOP/s | %% of %.0f | check worst / 1 (control > 1) | "
           "bf16 out vs simt | rows of m/2, m/2-1, 3.. |\n", CEIL_TFLOPS);
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int fails = 0;
    for (int fp8 = 0; fp8 < 2; fp8++)
        for (int i = 0; i < n; i++)
            if (!fp8 || (bg_shapes[i].batch == 1 && bg_shapes[i].k % 128 == 0))
                fails += bg_shape_run(env, &bg_shapes[i], fp8);
    printf("\n%d failed checks (gate per sampled output: |y - ref| <= 2^-8 |ref| + 2^-14 (fp8: 2^-11) sum_k |x w|, "
           "ref in float64 from the same inputs, %d samples a kernel and shape, the worst printed as a fraction of "
           "its gate; control: the median error against the next column's reference must exceed the gate; batch "
           "invariance: rows bitwise equal)\n", fails, BG_SAMPLES);
    return fails ? 1 : 0;
}
