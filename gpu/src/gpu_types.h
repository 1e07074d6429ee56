/* gpu_types.h: the plain-data types the kernels share with host code (batch metadata, paged-cache
 * descriptors). No runtime header: host-only tests of the kernel logic include it too. */
#ifndef MLA_GPU_TYPES_H
#define MLA_GPU_TYPES_H

#include <stdint.h>

/* Per-sequence metadata of one call, on the device. */
typedef struct gpu_seq {
    int slot, n_past, n_new, tok0, ws0;
} gpu_seq;

/* KV cache row formats. */
typedef enum { GPU_KV_BF16 = 0, GPU_KV_FP8 = 1, GPU_KV_DS = 2 } gpu_kv_fmt;

/* Everything a kernel needs to find and decode a cache row; passed by value. */
typedef struct gpu_kv_desc {
    const uint8_t *pool;   /* [n_blocks * block_size, row_bytes] of one layer */
    const int32_t *tables; /* [max_seqs, blocks_per_seq] */
    int blocks_per_seq, block_size, row_bytes;
    int fmt, fnuz;
    int c, r;              /* kv_lora_rank, rope dim */
    float kv_scale;        /* fp8kv dequant multiplier */
} gpu_kv_desc;

#endif
