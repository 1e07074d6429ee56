/* ops.c: the reference's elementwise ops and matrix products. Matrix products go through OpenBLAS
 * dgemm (deterministic for a given shape: OpenBLAS splits M/N across threads, never K); everything
 * else is scalar C in double. Rounding follows reference/NUMERICS.md. */
#include "ref_internal.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

/* Matrix products: bitwise identical whatever the thread count. OpenBLAS's own threading changes
 * which micro-kernels (FMA or not, edge kernels) produce an element, so it runs single-threaded here
 * and we split the output into column tiles of a FIXED width: each element is always computed by the
 * same single-threaded dgemm call shape, whichever thread runs it. */
#define REF_TILE_N 128
#define REF_PAR_MIN_FLOPS (1 << 22)
#define REF_ROW_PAD 8 /* rows per dgemm call of a batch product; the widest x86-64 row unroll */

/* Set on threads running ref_parallel_for tasks: nested parallel regions run serially. */
static __thread int tls_in_parallel;

static int ref_threads(void)
{
    static int n = 0;
    if (!n) {
        const char *e = getenv("MLA_REF_THREADS");
        long v = e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
        n = v < 1 ? 1 : v > 64 ? 64 : (int)v;
        openblas_set_num_threads(1);
    }
    return n;
}

typedef struct {
    void (*fn)(void *arg, int64_t i);
    void *arg;
    int64_t next, n;
    pthread_mutex_t lock;
} par_job;

static void *par_worker(void *p)
{
    par_job *j = p;
    int was = tls_in_parallel;
    tls_in_parallel = 1;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int64_t i = j->next++;
        pthread_mutex_unlock(&j->lock);
        if (i >= j->n) break;
        j->fn(j->arg, i);
    }
    tls_in_parallel = was;
    return NULL;
}

void ref_parallel_for(int64_t n, void (*fn)(void *arg, int64_t i), void *arg)
{
    par_job j = {.fn = fn, .arg = arg, .next = 0, .n = n};
    int nt = ref_threads();
    if (nt > n) nt = (int)n;
    if (nt <= 1 || tls_in_parallel) {
        for (int64_t i = 0; i < n; i++) fn(arg, i);
        return;
    }
    pthread_mutex_init(&j.lock, NULL);
    pthread_t th[64];
    int started = 0;
    for (int i = 1; i < nt; i++)
        if (pthread_create(&th[started], NULL, par_worker, &j) == 0) started++;
    par_worker(&j);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j.lock);
}

typedef struct {
    int trans_b;
    const double *a, *b;
    int64_t M, K, N, rb, tiles, rblocks;
    double *y;
} mm_job;

/* One (row block, column tile) of a product, a ref_parallel_for task: rows [r rb, (r + 1) rb),
 * columns [t REF_TILE_N, (t + 1) REF_TILE_N). A partial row block runs zero-padded to
 * REF_ROW_PAD rows (to rb rows for batch products), so dgemm never uses an edge kernel for it. */
static void mm_task(void *arg, int64_t i)
{
    const mm_job *j = arg;
    int64_t t = i / j->rblocks, r = i % j->rblocks; /* row blocks inner: a weight tile stays in cache */
    int64_t m0 = r * j->rb, mm = j->M - m0 < j->rb ? j->M - m0 : j->rb;
    int64_t n0 = t * REF_TILE_N, nn = j->N - n0 < REF_TILE_N ? j->N - n0 : REF_TILE_N;
    int64_t rows = mm % REF_ROW_PAD ? (j->rb == REF_ROW_PAD ? REF_ROW_PAD : (mm + REF_ROW_PAD - 1) / REF_ROW_PAD * REF_ROW_PAD) : mm;
    const double *a = j->a + m0 * j->K;
    double *y = j->y + m0 * j->N + n0, *ap = NULL, *yp = NULL;
    int64_t ldy = j->N;
    if (rows > mm) {
        ap = calloc((size_t)(rows * j->K), sizeof(double));
        yp = malloc((size_t)(rows * nn) * sizeof(double));
        if (ap && yp) {
            memcpy(ap, a, (size_t)(mm * j->K) * sizeof(double));
            a = ap, y = yp, ldy = nn;
        } else { /* out of memory for a pad: unpadded (correct, only not batch invariant) */
            free(ap), free(yp), ap = yp = NULL, rows = mm;
        }
    }
    if (j->trans_b) /* b[N,K]: rows n0.. */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)nn, (int)j->K, 1.0, a, (int)j->K,
                    j->b + n0 * j->K, (int)j->K, 0.0, y, (int)ldy);
    else /* b[K,N]: columns n0.. */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)nn, (int)j->K, 1.0, a, (int)j->K,
                    j->b + n0, (int)j->N, 0.0, y, (int)ldy);
    if (yp)
        for (int64_t m = 0; m < mm; m++) memcpy(j->y + (m0 + m) * j->N + n0, yp + m * nn, (size_t)nn * sizeof(double));
    free(ap);
    free(yp);
}

/* y[M,N] = a[M,K] b, in fixed column tiles. rb: rows per dgemm call; batch products pass REF_ROW_PAD
 * so every call has the same shape whatever the batch, others pass M (one call per tile: the whole
 * multiple of REF_ROW_PAD, then the padded rest). */
static void ref_matmul(int trans_b, const double *a, const double *b, int64_t M, int64_t K, int64_t N, int64_t rb,
                       double *y)
{
    if (M == 0 || N == 0) return;
    if (K == 0) {
        memset(y, 0, (size_t)(M * N) * sizeof(double));
        return;
    }
    (void)ref_threads(); /* first call: OpenBLAS's own threading off, before any dgemm */
    if (rb >= M) rb = M >= REF_ROW_PAD ? M / REF_ROW_PAD * REF_ROW_PAD : M;
    mm_job j = {.trans_b = trans_b, .a = a, .b = b, .M = M, .K = K, .N = N, .rb = rb,
                .tiles = (N + REF_TILE_N - 1) / REF_TILE_N, .rblocks = (M + rb - 1) / rb, .y = y};
    int64_t tasks = j.rblocks * j.tiles;
    if (2.0 * (double)M * (double)K * (double)N < REF_PAR_MIN_FLOPS)
        for (int64_t i = 0; i < tasks; i++) mm_task(&j, i);
    else
        ref_parallel_for(tasks, mm_task, &j);
}

void ref_matmul_nt(const double *a, const double *b, int64_t M, int64_t K, int64_t N, double *y)
{
    ref_matmul(1, a, b, M, K, N, M, y);
}

void ref_matmul_nt_batch(const double *a, const double *b, int64_t M, int64_t K, int64_t N, double *y)
{
    ref_matmul(1, a, b, M, K, N, REF_ROW_PAD, y);
}

void ref_matmul_nn(const double *a, const double *b, int64_t M, int64_t K, int64_t N, double *y)
{
    ref_matmul(0, a, b, M, K, N, M, y);
}

/* x[T,K] -> dequantized 1x128 e4m3 activations (DeepSeek act_quant), in place. */
static mla_status ref_act_quant_inplace(double *x, int64_t T, int64_t K)
{
    int64_t groups = (K + 127) / 128;
    float *xf = malloc((size_t)(K + 1) * sizeof(float));
    uint8_t *code = malloc((size_t)K + 1);
    float *scale = malloc((size_t)(groups + 1) * sizeof(float));
    mla_status st = MLA_OK;
    if (!xf || !code || !scale) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: fp8 activation quantization of a row of %lld", (long long)K);
        goto done;
    }
    for (int64_t t = 0; t < T; t++) {
        double *row = x + t * K;
        for (int64_t k = 0; k < K; k++) xf[k] = (float)row[k];
        mla_act_quant(xf, 1, K, 128, 0, code, scale);
        for (int64_t k = 0; k < K; k++)
            row[k] = (double)mla_e4m3fn_to_f32(code[k]) * (double)scale[k / 128];
    }
done:
    free(xf);
    free(code);
    free(scale);
    return st;
}

mla_status ref_linear(double *y, const double *x, const double *w, int64_t T, int64_t K, int64_t N, int fp8,
                      const ref_numerics *nm)
{
    if (fp8 && nm->fp8_linear) {
        double *xq = malloc((size_t)(T * K + 1) * sizeof(double));
        if (!xq)
            return mla_errorf(MLA_ERR_NOMEM, "reference: fp8 linear input [%lld,%lld]", (long long)T, (long long)K);
        memcpy(xq, x, (size_t)(T * K) * sizeof(double));
        mla_status st = ref_act_quant_inplace(xq, T, K);
        if (!st) ref_matmul_nt_batch(xq, w, T, K, N, y);
        free(xq);
        if (st) return st;
    } else {
        ref_matmul_nt_batch(x, w, T, K, N, y);
    }
    ref_rnd_vec(nm, y, T * N);
    return MLA_OK;
}

void ref_rmsnorm(double *y, int64_t ldy, const double *x, int64_t ldx, const double *gamma, int64_t T,
                 int64_t n, double eps, const ref_numerics *nm)
{
    for (int64_t t = 0; t < T; t++) {
        const double *xr = x + t * ldx;
        double ss = 0.0;
        for (int64_t i = 0; i < n; i++) ss += xr[i] * xr[i];
        double inv = 1.0 / sqrt(ss / (double)n + eps);
        for (int64_t i = 0; i < n; i++) y[t * ldy + i] = ref_rnd(nm, gamma[i] * (xr[i] * inv));
    }
}

/* Row-wise softmax of s[m,nk] in place over the first vis[i] entries (the rest get p = 0).
 * lse[i] = ln sum exp(s). */
/* tile > 0: the weights a tensor-core kernel applies (NUMERICS.md "tensor-core attention"): an online
 * softmax over tiles of `tile` keys from key 0, each probability rounded to bf16 relative to the
 * running maximum of the tiles so far, then carried to the final maximum; the denominator sums the
 * unrounded probabilities (as FlashAttention / FlashMLA keep the row sum in fp32). tile <= 0: one
 * tile and no rounding, the exact softmax (carry is exp(0) = 1, so the arithmetic is the plain one). */
void ref_softmax_rows_tc(double *s, double *lse, const int64_t *vis, int64_t m, int64_t nk, int64_t tile)
{
    const int round = tile > 0;
    if (!round) tile = nk > 0 ? nk : 1;
    for (int64_t i = 0; i < m; i++) {
        double *r = s + i * nk;
        int64_t v = vis[i] < nk ? vis[i] : nk;
        if (v <= 0) {
            memset(r, 0, (size_t)nk * sizeof(double));
            lse[i] = -INFINITY;
            continue;
        }
        double mf = r[0];
        for (int64_t j = 1; j < v; j++)
            if (r[j] > mf) mf = r[j];
        double run = -INFINITY, sum = 0.0;
        for (int64_t t0 = 0; t0 < v; t0 += tile) {
            int64_t t1 = t0 + tile < v ? t0 + tile : v;
            for (int64_t j = t0; j < t1; j++)
                if (r[j] > run) run = r[j];
            double carry = exp(run - mf);
            for (int64_t j = t0; j < t1; j++) {
                double p = exp(r[j] - run);
                sum += p * carry;
                r[j] = (round ? mla_round_bf16(p) : p) * carry;
            }
        }
        for (int64_t j = 0; j < v; j++) r[j] /= sum;
        for (int64_t j = v; j < nk; j++) r[j] = 0.0;
        lse[i] = mf + log(sum);
    }
}

void ref_softmax_rows(double *s, double *lse, const int64_t *vis, int64_t m, int64_t nk)
{
    ref_softmax_rows_tc(s, lse, vis, m, nk, 0);
}

void ref_rope(double *x, int64_t pos, const ref_rope_table *rope, int halfsplit, const ref_numerics *nm)
{
    int64_t half = rope->R / 2;
    /* pair i is (i * stride, i * stride + offset): interleaved (2i, 2i+1), or half-split (i, i + R/2) */
    int64_t stride = halfsplit ? 1 : 2, offset = halfsplit ? half : 1;
    for (int64_t i = 0; i < half; i++) {
        double ang = nm->rope_fp32_angle ? (double)((float)pos * (float)rope->inv_freq[i])
                                         : (double)pos * rope->inv_freq[i];
        double cs = cos(ang) * rope->mag, sn = sin(ang) * rope->mag;
        int64_t a = i * stride, b = a + offset;
        double x0 = x[a], x1 = x[b];
        x[a] = ref_rnd(nm, x0 * cs - x1 * sn);
        x[b] = ref_rnd(nm, x0 * sn + x1 * cs);
    }
}

mla_status ref_mlp(double *y, const double *x, const double *w1, const double *w2, const double *w3, int64_t T,
                   int64_t D, int64_t inter, const ref_numerics *nm)
{
    double *g = malloc((size_t)(T * inter + 1) * sizeof(double));
    double *u = malloc((size_t)(T * inter + 1) * sizeof(double));
    mla_status st = MLA_OK;
    if (!g || !u) {
        st = mla_errorf(MLA_ERR_NOMEM, "reference: MLP hidden [%lld,%lld]", (long long)T, (long long)inter);
        goto done;
    }
    if ((st = ref_linear(g, x, w1, T, D, inter, 1, nm))) goto done;
    if ((st = ref_linear(u, x, w3, T, D, inter, 1, nm))) goto done;
    for (int64_t i = 0; i < T * inter; i++) {
        double s = g[i] / (1.0 + exp(-g[i]));
        g[i] = ref_rnd(nm, s * u[i]);
    }
    st = ref_linear(y, g, w2, T, inter, D, 1, nm);
done:
    free(g);
    free(u);
    return st;
}
