/* gpu_types.h: the plain-data types the kernels share with host code (batch metadata, paged-cache
 * descriptors). No runtime header: host-only tests of the kernel logic include it too. */
#ifndef MLA_GPU_TYPES_H
#define MLA_GPU_TYPES_H

#include <stdint.h>

#include "mla/kv.h"

/* Per-sequence metadata of one call, on the device. */
typedef struct gpu_seq {
    int slot, n_past, n_new, tok0, ws0;
} gpu_seq;

/* Everything a kernel needs to find and decode a cache row; passed by value. */
typedef struct gpu_kv_desc {
    const uint8_t *pool;   /* [n_blocks * block_size, row_bytes] of one layer */
    const int32_t *tables; /* [max_seqs, blocks_per_seq] */
    int blocks_per_seq, block_size, row_bytes;
    mla_kv_codec codec;    /* row format, C (codec.c), R (codec.r): decoded by mla_kv_load */
} gpu_kv_desc;

#endif
