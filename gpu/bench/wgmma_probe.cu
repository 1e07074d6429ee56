/* wgmma_probe.cu: which shared-memory layouts and descriptor encodings Hopper's wgmma reads the way
 * the next decode/prefill kernels assume (written without a device in session 6: run it first).
 *   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o /tmp/wgmma_probe gpu/bench/wgmma_probe.cu && /tmp/wgmma_probe
 * One warpgroup computes D (64 x 128, f32) = A (64 x 64) . B^T with four m64n128k16 bf16 wgmmas, A and B
 * from shared memory, for each candidate layout:
 *   kmaj-sw128   A and B K-major, 128-byte swizzle (rows of 64 bf16, 16-byte chunk c of row r at
 *                chunk c ^ (r % 8)), SBO 1024 (eight rows), k step = +32 bytes on the start address
 *   kmaj-none    K-major, no swizzle: 8 x 8 core matrices of 128 contiguous bytes, LBO/SBO both ways
 *   mn-sw128     B given N-major: element (k, n) of B^T in atom n / 64 (8192 bytes apart), row k of 64
 *                n values, swizzled; read with the transpose bit: the P . V operand of attention (V rows
 *                are keys, one tile of 64 keys x 576 serves Q K^T K-major and P V N-major); two N atoms,
 *                so the LBO/SBO pair that names the atom stride and the 8-row stride is told apart
 *   rA           A from registers (the S accumulator reused as P, FA3 style), B K-major sw128
 *   mn-sw128 A   A given M-major (row k of 64 m values, swizzled), read with the transpose bit: the
 *                V^T operand of the transposed decode (gpu_decode_wt.hip)
 * Values are small integers, so every correct layout gives D exactly (max |err| 0); a wrong one is
 * O(1). Prints one line per variant; exit 0 when the layouts the kernels will use (kmaj-sw128,
 * rA, one mn-sw128 encoding, mn-sw128 A) are exact. */
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define M 64
#define N 128
#define K 64

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* sm_90 matrix descriptor: start >> 4 in [0, 14), LBO >> 4 in [16, 30), SBO >> 4 in [32, 46),
 * layout in [62, 64) (0 none, 1 128-byte, 2 64-byte, 3 32-byte swizzle). */
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t layout)
{
    return (uint64_t)((addr & 0x3ffff) >> 4) | (uint64_t)((lbo & 0x3ffff) >> 4) << 16 |
           (uint64_t)((sbo & 0x3ffff) >> 4) << 32 | (uint64_t)layout << 62;
}

#define F8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_D64(d) F8(d, 0), F8(d, 8), F8(d, 16), F8(d, 24), F8(d, 32), F8(d, 40), F8(d, 48), F8(d, 56)
#define WG_REGS64                                                                                                     \
    "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
    "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"

template <int TA, int TB> __device__ __forceinline__ void wg_ss(float (&d)[64], uint64_t da, uint64_t db)
{
    /* operands: d, a-desc, b-desc, scale-d (a predicate: accumulate), scale-a, scale-b, trans-a, trans-b */
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " WG_REGS64 ", %64, %65, p, 1, 1, %66, %67;\n}\n"
                 : WG_D64(d)
                 : "l"(da), "l"(db), "n"(TA), "n"(TB));
}

__device__ __forceinline__ void wg_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db)
{
    /* A from registers: no trans-a operand */
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " WG_REGS64
                 ", {%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"
                 : WG_D64(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* byte offset of element (r, k) of a rows x 64 K-major tile, 128-byte swizzle */
__host__ __device__ int off_sw128(int r, int k) { return r * 128 + ((((k / 8) ^ (r % 8)) * 16) + (k % 8) * 2); }
/* no swizzle: core matrix (r / 8, k / 8) at r / 8 * sbo + k / 8 * lbo, 8 rows of 16 bytes inside */
__host__ __device__ int off_core(int r, int k, int lbo, int sbo) { return r / 8 * sbo + k / 8 * lbo + (r % 8) * 16 + (k % 8) * 2; }

enum { V_KSW, V_KNONE_A, V_KNONE_B, V_MN1, V_MN2, V_RA, V_MNA, NV };
static const char *vname[NV] = {"kmaj-sw128 (SBO 1024)", "kmaj-none LBO 128 SBO 1024", "kmaj-none LBO 1024|2048 SBO 128",
                                "mn-sw128 LBO 8192 SBO 1024", "mn-sw128 LBO 1024 SBO 8192", "rA + kmaj-sw128 B",
                                "mn-sw128 A (trans-a) + kmaj B"};

/* byte offset of element (k, n) of an N-major B^T (K = 64 rows): atom n / 64, row k, swizzled */
__host__ __device__ int off_mn(int k, int n) { return n / 64 * (K * 128) + off_sw128(k, n % 64); }

__global__ void probe(const float *a, const float *b, float *out, int variant)
{
    __shared__ __align__(1024) uint8_t sa[M * K * 2];
    __shared__ __align__(1024) uint8_t sb[N * K * 2];
    const int tid = threadIdx.x;
    for (int i = tid; i < M * K; i += 128) {
        int r = i / K, k = i % K, oa;
        __nv_bfloat16 va = __float2bfloat16(a[i]);
        if (variant == V_KNONE_A) oa = off_core(r, k, 128, 1024);
        else if (variant == V_KNONE_B) oa = off_core(r, k, 1024, 128);
        else if (variant == V_MNA) oa = off_sw128(k, r); /* M-major: row k holds the 64 m values (one atom) */
        else oa = off_sw128(r, k);
        memcpy(sa + oa, &va, 2);
    }
    for (int i = tid; i < N * K; i += 128) {
        /* B^T element (n, k): K-major at row n; N-major in off_mn */
        int r = i / K, k = i % K, ob;
        __nv_bfloat16 vb = __float2bfloat16(b[i]);
        if (variant == V_KNONE_A) ob = off_core(r, k, 128, 1024);
        else if (variant == V_KNONE_B) ob = off_core(r, k, N / 8 * 128, 128); /* K columns of N / 8 cores */
        else if (variant == V_MN1 || variant == V_MN2) ob = off_mn(k, r);
        else ob = off_sw128(r, k);
        memcpy(sb + ob, &vb, 2);
    }
    proxy_fence();
    __syncthreads();
    float d[64];
    for (int i = 0; i < 64; i++) d[i] = 0.0f;
    const uint32_t a0 = smem_u32(sa), b0 = smem_u32(sb);
    const int warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
    wg_fence();
    for (int ks = 0; ks < K / 16; ks++) {
        uint64_t da, db;
        if (variant == V_KNONE_A) {
            da = desc(a0 + ks * 2 * 128, 128, 1024, 0);
            db = desc(b0 + ks * 2 * 128, 128, 1024, 0);
        } else if (variant == V_KNONE_B) {
            da = desc(a0 + ks * 2 * 1024, 1024, 128, 0);
            db = desc(b0 + ks * 2 * (N / 8 * 128), N / 8 * 128, 128, 0);
        } else {
            da = desc(a0 + ks * 32, 16, 1024, 1);
            db = desc(b0 + ks * 32, 16, 1024, 1);
        }
        if (variant == V_MN1 || variant == V_MN2) {
            /* N-major B: the k step moves 16 rows of 128 bytes */
            db = variant == V_MN1 ? desc(b0 + ks * 16 * 128, 8192, 1024, 1) : desc(b0 + ks * 16 * 128, 1024, 8192, 1);
            wg_ss<0, 1>(d, da, db);
        } else if (variant == V_MNA) {
            /* M-major A, M = 64 in one atom: the k step moves 16 rows; the transposed decode's V^T */
            wg_ss<1, 0>(d, desc(a0 + ks * 16 * 128, 8192, 1024, 1), db);
        } else if (variant == V_RA) {
            /* A fragment of rows 16 warp + g (+ 8), columns 16 ks + 2 q (+ 1, + 8, + 9): mma.sync's */
            uint32_t ar[4];
            const int r0 = 16 * warp + g, c0 = 16 * ks + 2 * q;
            const int rr[4] = {r0, r0 + 8, r0, r0 + 8}, cc[4] = {c0, c0, c0 + 8, c0 + 8};
            for (int j = 0; j < 4; j++) {
                __nv_bfloat162 p = __floats2bfloat162_rn(a[rr[j] * K + cc[j]], a[rr[j] * K + cc[j] + 1]);
                memcpy(&ar[j], &p, 4);
            }
            wg_rs(d, ar, db);
        } else {
            wg_ss<0, 0>(d, da, db);
        }
    }
    wg_commit();
    wg_wait0();
    /* D fragment: per 8 columns j, d[4j], d[4j + 1] at (16 warp + g, 8j + 2q (+1)), d[4j + 2..3] at row + 8 */
    for (int j = 0; j < N / 8; j++)
        for (int e = 0; e < 4; e++) {
            int r = 16 * warp + g + 8 * (e / 2), c = 8 * j + 2 * q + (e % 2);
            out[r * N + c] = d[4 * j + e];
        }
}

int main(void)
{
    static float a[M * K], b[N * K], ref[M * N], out[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7 + 3) % 5 - 2);
    for (int i = 0; i < N * K; i++) b[i] = (float)((i * 11 + 1) % 7 - 3);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[m * K + k] * b[n * K + k];
            ref[m * N + n] = (float)s;
        }
    float *da, *db, *dout;
    if (cudaMalloc(&da, sizeof a) || cudaMalloc(&db, sizeof b) || cudaMalloc(&dout, sizeof out)) {
        fprintf(stderr, "wgmma_probe: no device memory\n");
        return 77;
    }
    cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice);
    int exact[NV];
    for (int v = 0; v < NV; v++) {
        cudaMemset(dout, 0, sizeof out);
        probe<<<1, 128>>>(da, db, dout, v);
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            printf("%-32s launch failed: %s\n", vname[v], cudaGetErrorString(e));
            return 3;
        }
        cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost);
        double worst = 0;
        for (int i = 0; i < M * N; i++) worst = fmax(worst, fabs((double)out[i] - ref[i]));
        exact[v] = worst == 0;
        printf("%-32s max |err| %g%s\n", vname[v], worst, exact[v] ? "  (exact)" : "");
    }
    int mn = exact[V_MN1] || exact[V_MN2];
    return exact[V_KSW] && exact[V_RA] && exact[V_MNA] && mn ? 0 : 1;
}
