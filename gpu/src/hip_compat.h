/* hip_compat.h: the one place that knows which GPU runtime we build against.
 *
 * The engine is written in the HIP API spelling. With hipcc (AMD) this header includes the real HIP
 * runtime. With nvcc it maps the hip* names the engine uses onto the CUDA runtime directly, because
 * Debian's HIP-on-NVIDIA headers do not build against CUDA 13. Keep the list to what the engine uses.
 *
 * Also here: the warp (wavefront) size as a compile-time constant, a 64-bit lane-mask type, shuffle
 * reductions and the error-check macros that record file and line. */
#ifndef MLA_GPU_HIP_COMPAT_H
#define MLA_GPU_HIP_COMPAT_H

#include <stdint.h>

#include "mla/mla.h"

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#define MLA_GPU_HIP 1
#else
#include <cuda_runtime.h>
#define MLA_GPU_CUDA 1

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipMalloc cudaMalloc
#define hipMemGetInfo cudaMemGetInfo
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipStreamCreate cudaStreamCreate
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipGetLastError cudaGetLastError
#define hipGetErrorString cudaGetErrorString
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipFuncSetAttribute(f, a, v) cudaFuncSetAttribute((f), (a), (v))
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipDriverGetVersion cudaDriverGetVersion
#endif

/* Warp / wavefront size: 32 on NVIDIA, 64 on CDNA (gfx90a, gfx94x). A compile-time constant so
 * reductions unroll; RDNA (wave32) is not a target. */
#if defined(MLA_GPU_HIP)
#define MLA_WARP 64
#else
#define MLA_WARP 32
#endif

/* Lane masks are 64 bits wide so the same code holds a full CDNA wavefront. */
typedef uint64_t mla_lane_mask;

#if defined(__CUDACC__) || defined(__HIPCC__)
__device__ __forceinline__ float mla_shfl_xor(float v, int m)
{
#if defined(MLA_GPU_HIP)
    return __shfl_xor(v, m, MLA_WARP);
#else
    return __shfl_xor_sync(0xffffffffu, v, m, MLA_WARP);
#endif
}

__device__ __forceinline__ float mla_warp_sum(float v)
{
#pragma unroll
    for (int m = MLA_WARP / 2; m > 0; m >>= 1) v += mla_shfl_xor(v, m);
    return v;
}

__device__ __forceinline__ float mla_warp_max(float v)
{
#pragma unroll
    for (int m = MLA_WARP / 2; m > 0; m >>= 1) v = fmaxf(v, mla_shfl_xor(v, m));
    return v;
}

/* Block-wide reductions; red holds at least blockDim.x / MLA_WARP floats. Every thread gets the result.
 * The order is fixed by the launch shape, so results are deterministic run to run. */
__device__ __forceinline__ float mla_block_sum(float v, float *red)
{
    int lane = threadIdx.x % MLA_WARP, w = threadIdx.x / MLA_WARP, nw = (blockDim.x + MLA_WARP - 1) / MLA_WARP;
    v = mla_warp_sum(v);
    __syncthreads();
    if (lane == 0) red[w] = v;
    __syncthreads();
    float s = 0.0f;
    for (int i = 0; i < nw; i++) s += red[i];
    return s;
}

__device__ __forceinline__ float mla_block_max(float v, float *red)
{
    int lane = threadIdx.x % MLA_WARP, w = threadIdx.x / MLA_WARP, nw = (blockDim.x + MLA_WARP - 1) / MLA_WARP;
    v = mla_warp_max(v);
    __syncthreads();
    if (lane == 0) red[w] = v;
    __syncthreads();
    float s = red[0];
    for (int i = 1; i < nw; i++) s = fmaxf(s, red[i]);
    return s;
}
#endif

/* Error checks: every runtime call and every launch. The detail names file, line and the call. */
#define MLA_HIP_CHECK(call)                                                                        \
    do {                                                                                           \
        hipError_t mla_e_ = (call);                                                                \
        if (mla_e_ != hipSuccess)                                                                  \
            return mla_errorf(MLA_ERR_DEVICE, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call,   \
                              hipGetErrorString(mla_e_));                                          \
    } while (0)

#define MLA_HIP_LAUNCHED(what)                                                                     \
    do {                                                                                           \
        hipError_t mla_e_ = hipGetLastError();                                                     \
        if (mla_e_ != hipSuccess)                                                                  \
            return mla_errorf(MLA_ERR_DEVICE, "%s:%d: launch of %s failed: %s", __FILE__, __LINE__, \
                              what, hipGetErrorString(mla_e_));                                    \
    } while (0)

#endif
