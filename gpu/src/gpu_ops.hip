/* gpu_ops.hip: element-wise and row kernels: embedding, RMSNorm, RoPE, residual add, SwiGLU,
 * paged-cache writes and the naive-form workspace gather. Each rounds once to bf16 where
 * NUMERICS.md says the reference rounds. */
#include "gpu_internal.h"
#include "gpu_kv.h"

#define OPS_THREADS 256

static dim3 ops_grid(int64_t n) { return dim3((unsigned)((n + OPS_THREADS - 1) / OPS_THREADS), 1, 1); }

__global__ void k_embed(const int32_t *tok, const uint16_t *table, int d, uint16_t *y)
{
    int t = blockIdx.x;
    const uint16_t *src = table + (int64_t)tok[t] * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x) y[(int64_t)t * d + i] = src[i];
}

extern "C" mla_status gpu_embed(hipStream_t st, const int32_t *tok, const uint16_t *table, int t, int d,
                                uint16_t *y)
{
    if (t <= 0) return MLA_OK;
    k_embed<<<t, OPS_THREADS, 0, st>>>(tok, table, d, y);
    MLA_HIP_LAUNCHED("k_embed");
    return MLA_OK;
}

__global__ void k_rmsnorm(const uint16_t *x, int64_t ldx, const float *g, int n, float eps, uint16_t *y,
                          int64_t ldy)
{
    __shared__ float red[OPS_THREADS / MLA_WARP + 1];
    const uint16_t *xr = x + (int64_t)blockIdx.x * ldx;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = gd_bf16_to_f32(xr[i]);
        ss += v * v;
    }
    ss = mla_block_sum(ss, red);
    float r = rsqrtf(ss / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        y[(int64_t)blockIdx.x * ldy + i] = gd_f32_to_bf16(g[i] * (gd_bf16_to_f32(xr[i]) * r));
}

extern "C" mla_status gpu_rmsnorm(hipStream_t st, const uint16_t *x, int64_t ldx, const float *g, int t, int n,
                                  float eps, uint16_t *y, int64_t ldy)
{
    if (t <= 0) return MLA_OK;
    k_rmsnorm<<<t, OPS_THREADS, 0, st>>>(x, ldx, g, n, eps, y, ldy);
    MLA_HIP_LAUNCHED("k_rmsnorm");
    return MLA_OK;
}

/* grid (T, heads); the angle is pos * inv_freq in fp32, cos/sin in fp32, one bf16 rounding. */
__global__ void k_rope(gpu_rope_args a)
{
    int t = blockIdx.x, h = blockIdx.y;
    int pos = tok_pos(a.tok_seq, a.seqs, t, NULL);
    const uint16_t *in = a.in + ((int64_t)t * a.heads + h) * a.ld_in;
    uint16_t *out = a.out + ((int64_t)t * a.heads + h) * a.r;
    int half = a.r / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float ang = (float)pos * a.inv_freq[i];
        float c = cosf(ang) * a.attn_factor, s = sinf(ang) * a.attn_factor;
        int i0 = a.half_split ? i : 2 * i, i1 = a.half_split ? i + half : 2 * i + 1;
        float x0 = gd_bf16_to_f32(in[a.off_in + i0]), x1 = gd_bf16_to_f32(in[a.off_in + i1]);
        out[i0] = gd_f32_to_bf16(x0 * c - x1 * s);
        out[i1] = gd_f32_to_bf16(x0 * s + x1 * c);
    }
    if (a.nope > 0) {
        uint16_t *no = a.nope_out + ((int64_t)t * a.heads + h) * a.nope;
        for (int i = threadIdx.x; i < a.nope; i += blockDim.x) no[i] = in[i];
    }
}

extern "C" mla_status gpu_rope(hipStream_t st, const gpu_rope_args *a)
{
    if (a->t <= 0) return MLA_OK;
    dim3 grid(a->t, a->heads, 1);
    k_rope<<<grid, 64, 0, st>>>(*a);
    MLA_HIP_LAUNCHED("k_rope");
    return MLA_OK;
}

__global__ void k_add(const uint16_t *a, const uint16_t *b, uint16_t *y, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = gd_f32_to_bf16(gd_bf16_to_f32(a[i]) + gd_bf16_to_f32(b[i]));
}

extern "C" mla_status gpu_add(hipStream_t st, const uint16_t *a, const uint16_t *b, uint16_t *y, int64_t n)
{
    if (n <= 0) return MLA_OK;
    k_add<<<ops_grid(n), OPS_THREADS, 0, st>>>(a, b, y, n);
    MLA_HIP_LAUNCHED("k_add");
    return MLA_OK;
}

__global__ void k_silu_mul(const uint16_t *g, const uint16_t *u, uint16_t *a, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gv = gd_bf16_to_f32(g[i]);
    a[i] = gd_f32_to_bf16(gv / (1.0f + expf(-gv)) * gd_bf16_to_f32(u[i]));
}

extern "C" mla_status gpu_silu_mul(hipStream_t st, const uint16_t *g, const uint16_t *u, uint16_t *a, int64_t n)
{
    if (n <= 0) return MLA_OK;
    k_silu_mul<<<ops_grid(n), OPS_THREADS, 0, st>>>(g, u, a, n);
    MLA_HIP_LAUNCHED("k_silu_mul");
    return MLA_OK;
}

/* One block of 128 threads per new token. fp8_ds_mla: thread i owns element i of each 128 tile.
 * The layouts are mla/kv.h's (the engine's fp8_ds_mla codes are e4m3fn, as the reference's). */
__global__ void k_cache_write(gpu_kv_desc kv, const uint16_t *kv_c, const uint16_t *k_pe,
                              const int32_t *tok_seq, const gpu_seq *seqs)
{
    __shared__ float red[128 / MLA_WARP + 1];
    const int C = kv.codec.c, R = kv.codec.r;
    int t = blockIdx.x, slot;
    int pos = tok_pos(tok_seq, seqs, t, &slot);
    uint8_t *row = (uint8_t *)kv_row(kv, slot, pos);
    const uint16_t *c = kv_c + (int64_t)t * C, *p = k_pe + (int64_t)t * R;
    if (kv.codec.format == MLA_KV_BF16) {
        for (int i = threadIdx.x; i < C + R; i += blockDim.x) {
            uint16_t b = i < C ? c[i] : p[i - C];
            memcpy(row + 2 * i, &b, 2);
        }
    } else if (kv.codec.format == MLA_KV_FP8) {
        for (int i = threadIdx.x; i < C + R; i += blockDim.x) {
            float v = gd_bf16_to_f32(i < C ? c[i] : p[i - C]);
            row[i] = gd_f32_to_e4m3(v / kv.codec.k_scale, kv.codec.fp8_fnuz);
        }
    } else {
        const int tiles = C / MLA_KV_DS_TILE; /* load() admits only C % 128 == 0 */
        for (int tile = 0; tile < tiles; tile++) {
            int i = tile * MLA_KV_DS_TILE + threadIdx.x;
            float v = gd_bf16_to_f32(c[i]);
            float amax = mla_block_max(fabsf(v), red);
            float s = gd_pow2_ceil(fmaxf(amax / 448.0f, 1e-4f));
            row[i] = gd_f32_to_e4m3(v / s, 0);
            if (threadIdx.x == 0) memcpy(row + C + 4 * tile, &s, 4);
        }
        uint8_t *rp = row + C + 4 * tiles;
        for (int i = threadIdx.x; i < R; i += blockDim.x) memcpy(rp + 2 * i, &p[i], 2);
    }
}

extern "C" mla_status gpu_cache_write(hipStream_t st, gpu_kv_desc kv, const uint16_t *kv_c, const uint16_t *k_pe,
                                      const int32_t *tok_seq, const gpu_seq *seqs, int t)
{
    if (t <= 0) return MLA_OK;
    k_cache_write<<<t, 128, 0, st>>>(kv, kv_c, k_pe, tok_seq, seqs);
    MLA_HIP_LAUNCHED("k_cache_write");
    return MLA_OK;
}

__global__ void k_gather_ws(gpu_kv_desc kv, const uint16_t *kv_c, const uint16_t *k_pe, const gpu_seq *seqs,
                            int n_seqs, uint16_t *ws_kvc, uint16_t *ws_kpe)
{
    const int C = kv.codec.c, R = kv.codec.r;
    int j = blockIdx.x, s = 0;
    while (s + 1 < n_seqs && j >= seqs[s + 1].ws0) s++;
    gpu_seq q = seqs[s];
    int i = j - q.ws0;
    uint16_t *oc = ws_kvc + (int64_t)j * C, *op = ws_kpe + (int64_t)j * R;
    if (i < q.n_past) {
        const uint8_t *row = kv_row(kv, q.slot, i);
        for (int e = threadIdx.x; e < C + R; e += blockDim.x) {
            uint16_t b = gd_f32_to_bf16(kv_load(kv, row, e));
            if (e < C)
                oc[e] = b;
            else
                op[e - C] = b;
        }
    } else {
        int t = q.tok0 + i - q.n_past;
        for (int e = threadIdx.x; e < C; e += blockDim.x) oc[e] = kv_c[(int64_t)t * C + e];
        for (int e = threadIdx.x; e < R; e += blockDim.x) op[e] = k_pe[(int64_t)t * R + e];
    }
}

extern "C" mla_status gpu_gather_ws(hipStream_t st, gpu_kv_desc kv, const uint16_t *kv_c, const uint16_t *k_pe,
                                    const gpu_seq *seqs, int n_seqs, int n_ws, uint16_t *ws_kvc, uint16_t *ws_kpe)
{
    if (n_ws <= 0) return MLA_OK;
    k_gather_ws<<<n_ws, 128, 0, st>>>(kv, kv_c, k_pe, seqs, n_seqs, ws_kvc, ws_kpe);
    MLA_HIP_LAUNCHED("k_gather_ws");
    return MLA_OK;
}

/* Rows of [q_abs (C) | q_pe (R)] to f32; with scale > 0 each element goes through e4m3(x / scale)
 * and back (times scale), the fp8 decode query. */
__global__ void k_prep_query(const uint16_t *q_abs, const uint16_t *q_pe, int c, int r, float scale, int fnuz,
                             float *qa, float *qp)
{
    int64_t row = blockIdx.x;
    for (int i = threadIdx.x; i < c + r; i += blockDim.x) {
        float v = gd_bf16_to_f32(i < c ? q_abs[row * c + i] : q_pe[row * r + i - c]);
        if (scale > 0.0f) v = gd_e4m3_to_f32(gd_f32_to_e4m3(v / scale, fnuz), fnuz) * scale;
        if (i < c)
            qa[row * c + i] = v;
        else
            qp[row * r + i - c] = v;
    }
}

extern "C" mla_status gpu_quant_query(hipStream_t st, uint16_t *q_abs, const uint16_t *q_pe, int64_t rows, int c,
                                      int r, float scale, int fnuz, float *q_abs_f, float *q_pe_f)
{
    if (rows <= 0) return MLA_OK;
    k_prep_query<<<(unsigned)rows, 128, 0, st>>>(q_abs, q_pe, c, r, scale, fnuz, q_abs_f, q_pe_f);
    MLA_HIP_LAUNCHED("k_prep_query");
    return MLA_OK;
}

__global__ void k_gather_rows(const uint16_t *x, const int32_t *rows, int d, uint16_t *y)
{
    int i = blockIdx.x;
    const uint16_t *src = x + (int64_t)rows[i] * d;
    for (int e = threadIdx.x; e < d; e += blockDim.x) y[(int64_t)i * d + e] = src[e];
}

extern "C" mla_status gpu_gather_rows(hipStream_t st, const uint16_t *x, const int32_t *rows, int n, int d,
                                      uint16_t *y)
{
    if (n <= 0) return MLA_OK;
    k_gather_rows<<<n, OPS_THREADS, 0, st>>>(x, rows, d, y);
    MLA_HIP_LAUNCHED("k_gather_rows");
    return MLA_OK;
}

__global__ void k_scatter_acc(const uint16_t *y, const int32_t *rows, const float *w, int d, float *acc)
{
    int i = blockIdx.x;
    float wi = w[i];
    float *dst = acc + (int64_t)rows[i] * d;
    for (int e = threadIdx.x; e < d; e += blockDim.x) dst[e] += wi * gd_bf16_to_f32(y[(int64_t)i * d + e]);
}

extern "C" mla_status gpu_scatter_acc(hipStream_t st, const uint16_t *y, const int32_t *rows, const float *w,
                                      int n, int d, float *acc)
{
    if (n <= 0) return MLA_OK;
    k_scatter_acc<<<n, OPS_THREADS, 0, st>>>(y, rows, w, d, acc);
    MLA_HIP_LAUNCHED("k_scatter_acc");
    return MLA_OK;
}

extern "C" mla_status gpu_acc_init(hipStream_t st, float *acc, int64_t n)
{
    MLA_HIP_CHECK(hipMemsetAsync(acc, 0, (size_t)n * sizeof(float), st));
    return MLA_OK;
}

__global__ void k_acc_finish(const float *acc, const uint16_t *shared, uint16_t *y, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = gd_f32_to_bf16(acc[i] + (shared ? gd_bf16_to_f32(shared[i]) : 0.0f));
}

extern "C" mla_status gpu_acc_finish(hipStream_t st, const float *acc, const uint16_t *shared, uint16_t *y,
                                     int64_t n)
{
    if (n <= 0) return MLA_OK;
    k_acc_finish<<<ops_grid(n), OPS_THREADS, 0, st>>>(acc, shared, y, n);
    MLA_HIP_LAUNCHED("k_acc_finish");
    return MLA_OK;
}
