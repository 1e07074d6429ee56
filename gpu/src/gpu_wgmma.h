/* gpu_wgmma.h: Hopper warpgroup MMA (wgmma, sm_90a) as the wgmma kernels use it: bf16 operands from
 * shared memory in 128-byte-swizzled tiles, fp32 accumulators. NVIDIA only.
 *
 * Tiles: an atom is 64 bf16 columns x rows of 128 bytes, 16-byte chunk c of row r stored at chunk
 * c ^ (r % 8) (wg_sw128); wider tiles are atoms side by side (a 64 x 576 tile: 9 atoms of 8 KB).
 * K-major operand (rows are M or N, columns K): descriptor SBO = 1024 (eight rows), LBO unused, a k16
 * step adds 32 bytes to the start address inside an atom. N-major operand (rows are K: V's rows are
 * keys), read with the transpose bit: LBO = the stride between atoms along N, SBO = 1024 between
 * eight-row groups along K (CUTLASS's canonical MN-major SW128 layout; gpu/bench/wgmma_probe.cu checks
 * both encodings on the device).
 * Accumulator of m64nNk16: warp w of the warpgroup holds rows 16 w + g and 16 w + g + 8 (lane 4 g + q);
 * d[4 j + e] is column 8 j + 2 q + (e % 2) of row 16 w + g + 8 (e / 2). */
#ifndef MLA_GPU_WGMMA_H
#define MLA_GPU_WGMMA_H

#include <stdint.h>

#define WG_ATOM_ROW 128 /* bytes in a row of an atom */
#ifndef WG_MN_LBO_IS_ATOM /* N-major: LBO is the atom stride (0: SBO is); wgmma_probe decides */
#define WG_MN_LBO_IS_ATOM 1
#endif

/* Byte offset of element (r, k), k < 64, inside a 128-byte-swizzled atom. */
__host__ __device__ __forceinline__ int wg_sw128(int r, int k) { return r * 128 + (((k / 8) ^ (r % 8)) * 16) + (k % 8) * 2; }

/* The first 1024-byte-aligned shared address at or after mem (an extern __shared__ array), as pointer
 * arithmetic on mem: a round trip through an integer loses the address space, and every access through
 * the result became a generic ld / st (ncu of gpu_decode_wf.hip, 2026-12-04: ST.E, long-scoreboard
 * stalls on the widening's loads). */
__device__ __forceinline__ uint8_t *wg_align1024(uint8_t *mem)
{
    return mem + ((1024u - ((uint32_t)__cvta_generic_to_shared(mem) & 1023u)) & 1023u);
}

/* Matrix descriptor: start >> 4 in [0, 14), LBO >> 4 in [16, 30), SBO >> 4 in [32, 46), layout in [62, 64)
 * (1: 128-byte swizzle). */
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3ffff) >> 4) | (uint64_t)((lbo & 0x3ffff) >> 4) << 16 |
           (uint64_t)((sbo & 0x3ffff) >> 4) << 32 | (uint64_t)1 << 62;
}
/* The descriptor of addr + bytes (a multiple of 16) from addr's: one add instead of the masks and shifts
 * of wg_desc per instruction (ptx of gpu_decode_wt.hip, 2026-12-02: five instructions a wgmma). The start
 * field holds (addr >> 4) in 14 bits and shared addresses stay below 2^18, so it never carries: the add
 * is on the low word only (a 64-bit add was two instructions, ncu of the prefill 2026-12-04). */
__device__ __forceinline__ uint64_t wg_desc_add(uint64_t d, uint32_t bytes)
{
    return (d & 0xffffffff00000000ull) | (uint32_t)((uint32_t)d + (bytes >> 4));
}
/* K-major and N-major descriptors of the layouts above; atom: bytes between atoms along N. */
__device__ __forceinline__ uint64_t wg_desc_k(uint32_t addr) { return wg_desc(addr, 16, 1024); }
__device__ __forceinline__ uint64_t wg_desc_n(uint32_t addr, uint32_t atom)
{
    return WG_MN_LBO_IS_ATOM ? wg_desc(addr, atom, 1024) : wg_desc(addr, 1024, atom);
}

/* This thread's warpgroup (threadIdx.x / 128), broadcast from lane 0 so that the compiler knows it is
 * warp-uniform: descriptors built from it then live in uniform registers (ncu of the prefill,
 * 2026-12-04: four R2UR a wgmma otherwise). */
__device__ __forceinline__ int wg_index() { return __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0); }

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
/* Shared-memory writes of the generic proxy (st.shared, cp.async) made visible to wgmma's reads. */
__device__ __forceinline__ void wg_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* Named barrier id (1 .. 15; 0 is __syncthreads') over n threads (a multiple of 32): wg_bar_sync waits
 * until n threads have arrived, wg_bar_arrive counts this thread and goes on (a producer's signal: the
 * memory operations before it are ordered before those after the consumers' wg_bar_sync). */
__device__ __forceinline__ void wg_bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void wg_bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }

/* mbarriers (8 bytes of shared memory each, at shared address bar): a phase completes when count
 * arrivals have been made; wg_mb_wait(bar, n & 1) waits for the completion of phase n (the parity of
 * the phase index tells them apart while no waiter falls two phases behind). wg_mb_cp_arrive is one
 * arrival made when this thread's cp.async copies issued so far have landed (the noinc form: count
 * includes it). The wait acquires, the arrive releases (CTA scope). */
__device__ __forceinline__ void wg_mb_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void wg_mb_arrive(uint32_t bar)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void wg_mb_cp_arrive(uint32_t bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void wg_mb_wait(uint32_t bar, int parity)
{
    asm volatile("{\n.reg .pred p;\nWG_MB_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WG_MB_WAIT;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* One arrival on bar that also expects bytes more of transaction (bulk copies completing on it). */
__device__ __forceinline__ void wg_mb_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
/* bytes (a multiple of 16, both addresses 16-byte aligned) from global src to shared dst by the copy
 * engine (one instruction), completing its bytes on the mbarrier bar. */
__device__ __forceinline__ void wg_bulk_copy(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* Pins registers in flight for a wgmma group to the program order of the waits: after wg_wait, an empty
 * asm that "writes" them keeps the compiler from moving their reads above the wait, or from reusing
 * them (an A operand read from registers) for other values before it (CUTLASS's
 * warpgroup_fence_operand). */
template <int N> __device__ __forceinline__ void wg_fence_operand(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N, int M> __device__ __forceinline__ void wg_fence_operand(float (&d)[N][M])
{
#pragma unroll
    for (int i = 0; i < N; i++) wg_fence_operand(d[i]);
}
template <int N, int M> __device__ __forceinline__ void wg_fence_operand(uint32_t (&d)[N][M])
{
#pragma unroll
    for (int i = 0; i < N; i++)
#pragma unroll
        for (int j = 0; j < M; j++) asm volatile("" : "+r"(d[i][j])::"memory");
}

#define WG_F8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_F16(d, i) WG_F8(d, i), WG_F8(d, i + 8)
#define WG_F64(d, i) WG_F16(d, i), WG_F16(d, i + 16), WG_F16(d, i + 32), WG_F16(d, i + 48)

/* d (64 x N) += A . B^T for N = 8, 16, 32 (overloaded on d's size), B K-major; A K-major (TA 0: S = Q K^T
 * over 32 keys; S^T = K Q^T) or M-major, read with the transpose bit (TA 1: O^T += V^T P^T, V's rows are
 * keys: the same layout as an N-major B, gpu_decode_wt.hip). ACC 0: d = A . B^T (scale-d 0, d unread). */
template <int TA = 0, int ACC = 1> __device__ __forceinline__ void wg_m64_ss(float (&d)[4], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %7, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, %6, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(da), "l"(db), "n"(TA), "n"(ACC));
}
template <int TA = 0, int ACC = 1> __device__ __forceinline__ void wg_m64_ss(float (&d)[8], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %11, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, %10, 0;\n}\n"
                 : WG_F8(d, 0)
                 : "l"(da), "l"(db), "n"(TA), "n"(ACC));
}
template <int TA = 0, int ACC = 1> __device__ __forceinline__ void wg_m64_ss(float (&d)[16], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %19, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, %18, 0;\n}\n"
                 : WG_F16(d, 0)
                 : "l"(da), "l"(db), "n"(TA), "n"(ACC));
}

/* d (64 x 256) += A . B, A K-major, B N-major (O += P V over 256 output columns). */
__device__ __forceinline__ void wg_m64n256_ss_tb(float (&d)[128], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,"
                 "%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,"
                 "%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,"
                 "%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,"
                 "%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,"
                 "%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
                 : WG_F64(d, 0), WG_F64(d, 64)
                 : "l"(da), "l"(db));
}

/* d (64 x 64) += A . B^T (ACC 0: d = A . B^T, d's old values unread), both K-major (prefill S = Q K^T
 * over 64 keys). */
template <int ACC = 1> __device__ __forceinline__ void wg_m64n64_ss(float (&d)[32], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,"
                 "%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : WG_F16(d, 0), WG_F16(d, 16)
                 : "l"(da), "l"(db), "n"(ACC));
}

/* d (64 x 128) += A . B^T (ACC 0: d = A . B^T), both K-major, d as two halves: d0 columns 0-63, d1
 * columns 64-127 (the accumulator's d[4 j + e] for j < 8, then j >= 8). */
template <int ACC = 1>
__device__ __forceinline__ void wg_m64n128_ss(float (&d0)[32], float (&d1)[32], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,"
                 "%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,"
                 "%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : WG_F16(d0, 0), WG_F16(d0, 16), WG_F16(d1, 0), WG_F16(d1, 16)
                 : "l"(da), "l"(db), "n"(ACC));
}

/* d (64 x 128) += A . B, A from registers (mma.sync's A fragment per warp: the S accumulator of
 * columns 16 kk.. repacked as bf16 pairs), B N-major (prefill O += P V). */
__device__ __forceinline__ void wg_m64n128_rs_tb(float (&d)[64], const uint32_t (&a)[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,"
                 "%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,"
                 "%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
                 : WG_F64(d, 0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}


/* d (64 x 256) += A . B, A from registers (the m64k16 A fragment: the S accumulator of columns
 * 16 kk.. repacked as bf16 pairs), B N-major (decode O += P V over 256 output columns). */
__device__ __forceinline__ void wg_m64n256_rs_tb(float (&d)[128], const uint32_t (&a)[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,"
                 "%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,"
                 "%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,"
                 "%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,"
                 "%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,"
                 "%121,%122,%123,%124,%125,%126,%127}, {%128,%129,%130,%131}, %132, p, 1, 1, 1;\n}\n"
                 : WG_F64(d, 0), WG_F64(d, 64)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

#endif
