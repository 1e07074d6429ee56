/* gpu_route.hip: MoE routing (mla-spec.md §d) in fp32: softmax or sigmoid scores, optional
 * e_score_correction_bias for selection, group-limited top-k (-inf fill), weights from the unbiased
 * scores, optional renormalization, routed_scaling_factor. Ties go to the lower expert index. */
#include "gpu_dtype.h"
#include "gpu_internal.h"

/* One block per token; thread 0 routes (E is a few hundred at most, this is not a hot spot). */
__global__ void k_route(gpu_route_args a)
{
    extern __shared__ float sh[];
    float *sc = sh, *sel = sh + a.e; /* unbiased scores, selection scores */
    if (threadIdx.x != 0) return;
    int t = blockIdx.x;
    const float *l = a.logits + (int64_t)t * a.e;
    if (a.sigmoid) {
        for (int i = 0; i < a.e; i++) sc[i] = 1.0f / (1.0f + expf(-l[i]));
    } else {
        float mx = -INFINITY, sum = 0.0f;
        for (int i = 0; i < a.e; i++) mx = fmaxf(mx, l[i]);
        for (int i = 0; i < a.e; i++) sum += expf(l[i] - mx);
        for (int i = 0; i < a.e; i++) sc[i] = expf(l[i] - mx) / sum;
    }
    for (int i = 0; i < a.e; i++) sel[i] = sc[i] + (a.bias ? a.bias[i] : 0.0f);
    if (a.group_limited && a.n_group > 1) {
        int gsz = a.e / a.n_group;
        unsigned long long keep = 0; /* n_group <= 64, checked at load */
        for (int pick = 0; pick < a.topk_group; pick++) {
            int best = -1;
            float bv = -INFINITY;
            for (int g = 0; g < a.n_group; g++) {
                if (keep >> g & 1ull) continue;
                float m1 = -INFINITY, m2 = -INFINITY;
                for (int i = g * gsz; i < (g + 1) * gsz; i++) {
                    float v = sel[i];
                    if (v > m1) {
                        m2 = m1;
                        m1 = v;
                    } else if (v > m2) {
                        m2 = v;
                    }
                }
                float gs = a.bias ? m1 + (gsz > 1 ? m2 : 0.0f) : m1;
                if (best < 0 || gs > bv) {
                    best = g;
                    bv = gs;
                }
            }
            keep |= 1ull << best;
        }
        for (int g = 0; g < a.n_group; g++)
            if (!(keep >> g & 1ull))
                for (int i = g * gsz; i < (g + 1) * gsz; i++) sel[i] = -INFINITY;
    }
    int32_t *ids = a.ids + (int64_t)t * a.k;
    float *w = a.w + (int64_t)t * a.k;
    float wsum = 0.0f;
    for (int k = 0; k < a.k; k++) {
        int best = -1;
        float bv = -INFINITY;
        for (int i = 0; i < a.e; i++) {
            int taken = 0;
            for (int j = 0; j < k; j++) taken |= ids[j] == i;
            if (taken) continue;
            if (best < 0 || sel[i] > bv) {
                best = i;
                bv = sel[i];
            }
        }
        ids[k] = best;
        w[k] = sc[best];
        wsum += w[k];
    }
    for (int k = 0; k < a.k; k++) {
        float v = w[k];
        if (a.norm) v = v / wsum;
        if (a.apply_scaling) v = v * a.scaling;
        w[k] = v;
    }
}

extern "C" mla_status gpu_route(hipStream_t st, const gpu_route_args *a)
{
    if (a->t <= 0) return MLA_OK;
    k_route<<<a->t, 32, 2 * (size_t)a->e * sizeof(float), st>>>(*a);
    MLA_HIP_LAUNCHED("k_route");
    return MLA_OK;
}

/* One warp per (expert, token): the gate stays f32 and is never fp8. */
__global__ void k_router_logits(const uint16_t *x, const float *w, int e, int d, float *y)
{
    int ex = blockIdx.x, t = blockIdx.y;
    const uint16_t *xr = x + (int64_t)t * d;
    const float *wr = w + (int64_t)ex * d;
    float s = 0.0f;
    for (int i = threadIdx.x; i < d; i += MLA_WARP) s += gd_bf16_to_f32(xr[i]) * wr[i];
    s = mla_warp_sum(s);
    if (threadIdx.x == 0) y[(int64_t)t * e + ex] = s;
}

extern "C" mla_status gpu_router_logits(hipStream_t st, const uint16_t *x, const float *w, int t, int e, int d,
                                        float *y)
{
    if (t <= 0) return MLA_OK;
    dim3 grid(e, t, 1);
    k_router_logits<<<grid, MLA_WARP, 0, st>>>(x, w, e, d, y);
    MLA_HIP_LAUNCHED("k_router_logits");
    return MLA_OK;
}
