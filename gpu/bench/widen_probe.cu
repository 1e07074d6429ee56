/* widen_probe.cu: dm_e4m3x8_bf16 (gpu_decode_mma.h, the fp8 decode kernels' widening) against dm_e4m3,
 * code by code on the device: every e4m3fn code in each of the eight byte positions, times scales from
 * 2^-126 to 2^20 and 0 (up to 2^7 dm_e4m3x4_bf16's one multiply by 2^120 scale, above it the f32 route),
 * bit for bit against bf16(dm_e4m3(code) * scale) rounded from f32 (what the reference emulates); NaN
 * codes excluded (they take the f32 route). Also checks dm_e4m3x8_bf16's NaN test on the host.
 * Exercises bf16 subnormals: the codes 0x01..0x07 go through them.
 *   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -std=c++17 -Igpu/src -Igpu/include -Ireference/include \
 *        -o /tmp/widen_probe gpu/bench/widen_probe.cu && /tmp/widen_probe
 * Exit 0: no mismatch. */
#include <stdio.h>

#include "gpu_decode_mma.h"

#define NSC 12
__constant__ float probe_sc[NSC] = {0x1p-126f, 0x1p-24f, 0x1p-7f, 0.5f, 1.0f, 8.0f, 128.0f, 256.0f, 1024.0f, 0x1p20f, 0.0f, -0.25f};

/* thread (code, position, scale): out = number of mismatching codes, first = the first one */
__global__ void probe(int *bad, int *first)
{
    const int code = threadIdx.x, pos = blockIdx.x % 8, si = blockIdx.x / 8;
    if ((code & 0x7f) == 0x7f) return;
    const float sc = probe_sc[si];
    const uint32_t filler = 0x3c3c3c3cu; /* 1.5 in every other position */
    const uint32_t one = (filler & ~(0xffu << (8 * (pos % 4)))) | ((uint32_t)code << (8 * (pos % 4)));
    const uint4 v = dm_e4m3x8_bf16(pos < 4 ? make_uint2(one, filler) : make_uint2(filler, one), sc);
    const uint32_t h[4] = {v.x, v.y, v.z, v.w};
    const uint32_t got = (h[pos / 2] >> (16 * (pos % 2))) & 0xffffu;
    const uint32_t want = tc_pack(dm_e4m3((uint32_t)code, 0) * sc, 0.0f) & 0xffffu;
    const uint32_t other = (h[(pos / 2) ^ 2] & 0xffffu), want_other = tc_pack(1.5f * sc, 0.0f) & 0xffffu;
    if (got != want || other != want_other) {
        if (atomicAdd(bad, 1) == 0) *first = code | pos << 8 | si << 12 | (int)got << 16;
    }
}

int main(void)
{
    int nan_bad = 0; /* dm_e4m3x8_bf16's NaN test, one code among fillers */
    for (uint32_t c = 0; c < 256; c++) {
        uint32_t w = 0x3c3c3c00u | c;
        int flagged = (((w & 0x7f7f7f7fu) + 0x01010101u) & 0x80808080u) != 0;
        nan_bad += flagged != ((c & 0x7f) == 0x7f);
    }
    int *bad, *first, h_bad = 0, h_first = 0;
    if (cudaMalloc(&bad, sizeof(int)) || cudaMalloc(&first, sizeof(int))) {
        fprintf(stderr, "widen_probe: no device memory\n");
        return 77;
    }
    cudaMemset(bad, 0, sizeof(int));
    probe<<<8 * NSC, 256>>>(bad, first);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "widen_probe: launch failed\n");
        return 3;
    }
    cudaMemcpy(&h_bad, bad, sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(&h_first, first, sizeof(int), cudaMemcpyDeviceToHost);
    printf("widen_probe: %d of %d (code, position, scale) mismatches; NaN test wrong on %d codes\n", h_bad,
           254 * 8 * NSC, nan_bad);
    if (h_bad)
        printf("first: code 0x%02x position %d scale #%d gave bf16 0x%04x\n", h_first & 0xff, (h_first >> 8) & 0xf,
               (h_first >> 12) & 0xf, (h_first >> 16) & 0xffff);
    return h_bad || nan_bad;
}
