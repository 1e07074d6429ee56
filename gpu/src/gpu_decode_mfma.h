/* gpu_decode_mfma.h: the fragment arithmetic of the AMD tensor-core decode (gpu_decode_mfma.hip: CDNA's
 * v_mfma_f32_16x16x16 bf16, wave64), as host-and-device functions so that a host emulation of the
 * instruction checks the kernel's shared-memory addressing in CI (gpu/tests/test_decode_mfma.cpp).
 *
 * The layout assumed for v_mfma_f32_16x16x16bf16_1k (d = a . b + c, 16 x 16 x 16; AMD's matrix
 * instruction tables, as LLVM's and composable_kernel's users read them): lane l (0 .. 63) holds
 *   a: row l % 16, k = 4 (l / 16) .. + 3      (four bf16)
 *   b: column l % 16, k = 4 (l / 16) .. + 3   (four bf16)
 *   c, d: column l % 16, rows 4 (l / 16) .. + 3 (four f32)
 * Never run on an AMD GPU (none was available): the emulation proves the addressing against this
 * layout, not the layout against the hardware. */
#ifndef MLA_GPU_DECODE_MFMA_H
#define MLA_GPU_DECODE_MFMA_H

#include <stdint.h>

#include "gpu_dtype.h"

#define MF_LANES 64
#define MF_HM 16              /* heads a block: the MFMA's 16 rows */
#define MF_KR 32              /* cache rows in shared memory at a time */
#define MF_CMAX 512           /* kv_lora_rank, at most: 8 blocks of 16 output dims a wave */
#define MF_LMAX 576           /* kv_lora_rank + rope dim, at most */
#define MF_THREADS 256        /* four waves */
#define MF_PLD (64 + 8)       /* row stride of P (bf16): keys of a tile of at most 64 */

/* Lane's four bf16 of the 16 x 16 block at column k0 of a row-major matrix m (row stride ld): row
 * lane % 16, columns k0 + 4 (lane / 16) .. + 3. The a fragment of S = Q K^T (Q's rows are heads) and
 * of O += P V (P's rows are heads); also the b fragment of S (K's rows are keys, S's columns). */
MLA_HD void mf_frag_rows(const uint16_t *m, int ld, int k0, int lane, uint16_t f[4])
{
    const uint16_t *p = m + (lane % 16) * ld + k0 + 4 * (lane / 16);
    for (int j = 0; j < 4; j++) f[j] = p[j];
}

/* Lane's four bf16 of the 16 x 16 block of a row-major matrix m whose rows are k: rows k0 + 4 (lane /
 * 16) .. + 3, column c0 + lane % 16. The b fragment of O += P V (V's rows are keys). */
MLA_HD void mf_frag_cols(const uint16_t *m, int ld, int k0, int c0, int lane, uint16_t f[4])
{
    for (int j = 0; j < 4; j++) f[j] = m[(k0 + 4 * (lane / 16) + j) * ld + c0 + lane % 16];
}

/* Row and column of element i (0 .. 3) of lane's c / d fragment. */
MLA_HD int mf_d_row(int lane, int i) { return 4 * (lane / 16) + i; }
MLA_HD int mf_d_col(int lane) { return lane % 16; }

/* Shared memory of one block, in uint16_t units from its start: Q [16][ldk], K [32][ldk], P [16][MF_PLD]
 * bf16, then f32: scores [16][64], m [16], l [16], corr [16]. */
MLA_HD int mf_ldk(int lp) { return lp + 8; } /* 16-byte rows, shifted a bank group a row */
MLA_HD int mf_off_k(int ldk) { return MF_HM * ldk; }
MLA_HD int mf_off_p(int ldk) { return (MF_HM + MF_KR) * ldk; }
MLA_HD int mf_off_f32(int ldk) { return ((MF_HM + MF_KR) * ldk + MF_HM * MF_PLD + 1) / 2; } /* in floats */
MLA_HD int mf_shm_bytes(int ldk) { return 4 * (mf_off_f32(ldk) + MF_HM * 64 + 3 * MF_HM); }

#endif
