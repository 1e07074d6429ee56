/* mla_gpu.h: the GPU engine (HIP API; built with hipcc for AMD or nvcc for NVIDIA).
 * Implements the backend vtable of mla/backend.h. Profiles bf16, fp8kv, fp8ds, fp8w; fp64 is not
 * supported (supports() answers 0 and the harness skips it). */
#ifndef MLA_GPU_H
#define MLA_GPU_H

#include "mla/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The GPU engine's vtable ("gpu"). create() fails with MLA_ERR_NO_DEVICE when there is no device. */
const mla_backend_ops *mla_gpu_backend(void);

/* Describe the device the engine would use ("NVIDIA H200, sm_90, 132 SMs, 139 GiB, CUDA runtime
 * 13000, driver 13000, warp 32") into desc[n]: name, architecture, runtime and driver versions. MLA_ERR_NO_DEVICE (detail says why) when there is none. */
mla_status mla_gpu_probe(char *desc, size_t n);

#ifdef __cplusplus
}
#endif
#endif
