/* test_gemm_tile.cpp: the bf16 tensor-core GEMM's data movement (gpu/src/gpu_gemm_tile.h: the block
 * raster, the copies' chunk validity and swizzle, the ldmatrix lane addresses) run on the host, in CI,
 * with ldmatrix x4 and mma.sync m16n8k16 emulated from the PTX ISA's fragment tables (gpu_mma.h's header)
 * and the kernel's epilogue positions; every output against float64 sums of the same bf16 inputs, each
 * written once. Inputs' padding past k holds NaN, so a read past k shows. A planted unswizzled reader
 * must fail, so the comparison can. Not checked here: the GPU's memory model and pipeline (the H200 runs
 * mla_gpu_bench --gemm for that). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "gpu_gemm_tile.h"

namespace {

uint64_t rng = 0x9e3779b97f4a7c15ull;
float uni() /* [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

double bf(uint16_t v) { return gd_bf16_to_f32(v); }

/* ldmatrix x4: lanes 8q .. 8q + 7 give the row addresses of matrix q; lane t receives the 32-bit word of
 * row t / 4 at byte 4 (t % 4) of each matrix, register q. */
void ldsm4(const uint8_t *smem, const uint32_t (&addr)[32], uint32_t (&reg)[32][4])
{
    for (int t = 0; t < 32; t++)
        for (int q = 0; q < 4; q++) memcpy(&reg[t][q], smem + addr[8 * q + t / 4] + 4 * (t % 4), 4);
}

uint16_t half(uint32_t w, int hi) { return (uint16_t)(hi ? w >> 16 : w & 0xffff); }

/* d (per lane: c0 c1 at (g, 2t, 2t + 1), c2 c3 at (g + 8, ...)) += A (16 x 16, a0 (g, 2t..), a1 (g + 8,
 * 2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..)) . B (16 x 8, b0 (k 2t.., n g), b1 (k 2t + 8.., n g)) */
void mma(double (&d)[32][4], const uint32_t (&a)[32][4], const uint32_t (&b0)[32], const uint32_t (&b1)[32])
{
    double A[16][16], B[16][8];
    for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        for (int e = 0; e < 2; e++) {
            A[g][2 * t + e] = bf(half(a[l][0], e));
            A[g + 8][2 * t + e] = bf(half(a[l][1], e));
            A[g][2 * t + 8 + e] = bf(half(a[l][2], e));
            A[g + 8][2 * t + 8 + e] = bf(half(a[l][3], e));
            B[2 * t + e][g] = bf(half(b0[l], e));
            B[2 * t + 8 + e][g] = bf(half(b1[l], e));
        }
    }
    for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        for (int e = 0; e < 4; e++) {
            const int i = g + 8 * (e / 2), j = 2 * t + e % 2;
            for (int k = 0; k < 16; k++) d[l][e] += A[i][k] * B[k][j];
        }
    }
}

/* One GEMM Y = X W^T (m x k, n x k, rows ld apart) through the kernel's tiles; returns the worst error
 * over the outputs as a fraction of 1e-9 sum |x w| (and 1 for an output written other than once). */
double run(int m, int n, int k, int unswizzled)
{
    const int ld = (k + 7) / 8 * 8 + 8; /* 16-byte rows, with padding past k that must not be read */
    std::vector<uint16_t> x((size_t)m * ld, 0x7fc0), w((size_t)n * ld, 0x7fc0);
    for (int i = 0; i < m; i++)
        for (int c = 0; c < k; c++) x[(size_t)i * ld + c] = gd_f32_to_bf16(uni());
    for (int j = 0; j < n; j++)
        for (int c = 0; c < k; c++) w[(size_t)j * ld + c] = gd_f32_to_bf16(uni());
    std::vector<double> y((size_t)m * n, 0.0);
    std::vector<int> writes((size_t)m * n, 0), tiles;
    const int gx = (n + GG_BN - 1) / GG_BN, gy = (m + GG_BM - 1) / GG_BM, ntk = (k + 31) / 32;
    tiles.assign((size_t)gx * gy, 0);
    std::vector<uint8_t> sx(GG_STAGE), sw(GG_STAGE);
    static double acc[8][4][4][32][4];
    for (int pid = 0; pid < gx * gy; pid++) {
        int tm, tn;
        gg_tile_of(pid, gx, gy, tm, tn);
        if (tm < 0 || tm >= gy || tn < 0 || tn >= gx) return 1e30;
        tiles[(size_t)tm * gx + tn]++;
        const int m0 = tm * GG_BM, n0 = tn * GG_BN;
        memset(acc, 0, sizeof acc);
        for (int kt = 0; kt < ntk; kt++) {
            const int k0 = 32 * kt;
            /* the copies (gg_load): two 16-byte chunks a thread, zero past the rows and past k */
            auto load = [&](std::vector<uint8_t> &st, const std::vector<uint16_t> &src, int r0, int rows) {
                st.assign(GG_STAGE, 0);
                for (int tid = 0; tid < GG_THREADS; tid++)
                    for (int i = 0; i < 2; i++) {
                        const int e = tid + i * GG_THREADS, r = e >> 2, c = e & 3;
                        const int valid = gg_valid(r, c, rows - r0, 2 * (k - k0));
                        const uint32_t off = unswizzled ? (uint32_t)(r * 64 + 16 * c) : gg_off(r, c);
                        if (valid) memcpy(&st[off], &src[(size_t)(r0 + r) * ld + k0 + 8 * c], valid);
                    }
            };
            load(sx, x, m0, m);
            load(sw, w, n0, n);
            for (int warp = 0; warp < 8; warp++) {
                const int wm = warp >> 2, wn = warp & 3;
                for (int ks = 0; ks < 2; ks++) {
                    uint32_t aa[4][32], ba[2][32];
                    for (int lane = 0; lane < 32; lane++) {
                        uint32_t a_lane, b_lane;
                        gg_lanes(lane, wm, wn, a_lane, b_lane);
                        for (int mt = 0; mt < 4; mt++) aa[mt][lane] = (a_lane ^ (uint32_t)(ks << 5)) + mt * 16 * 64;
                        for (int np = 0; np < 2; np++) ba[np][lane] = (b_lane ^ (uint32_t)(ks << 5)) + np * 16 * 64;
                    }
                    uint32_t af[4][32][4], bfr[2][32][4];
                    for (int mt = 0; mt < 4; mt++) ldsm4(sx.data(), aa[mt], af[mt]);
                    for (int np = 0; np < 2; np++) ldsm4(sw.data(), ba[np], bfr[np]);
                    for (int mt = 0; mt < 4; mt++)
                        for (int nt = 0; nt < 4; nt++) {
                            uint32_t b0[32], b1[32];
                            for (int l = 0; l < 32; l++) {
                                b0[l] = bfr[nt >> 1][l][2 * (nt & 1)];
                                b1[l] = bfr[nt >> 1][l][2 * (nt & 1) + 1];
                            }
                            mma(acc[warp][mt][nt], af[mt], b0, b1);
                        }
                }
            }
        }
        /* the epilogue's positions (gpu_gemm_mma.hip) */
        for (int warp = 0; warp < 8; warp++)
            for (int lane = 0; lane < 32; lane++) {
                const int wm = warp >> 2, wn = warp & 3, g = lane >> 2, t = lane & 3;
                for (int mt = 0; mt < 4; mt++)
                    for (int h = 0; h < 2; h++)
                        for (int nt = 0; nt < 4; nt++)
                            for (int e = 0; e < 2; e++) {
                                const int row = m0 + wm * 64 + mt * 16 + g + 8 * h, col = n0 + wn * 32 + nt * 8 + 2 * t + e;
                                if (row >= m || col >= n) continue;
                                y[(size_t)row * n + col] = acc[warp][mt][nt][lane][2 * h + e];
                                writes[(size_t)row * n + col]++;
                            }
            }
    }
    double worst = 0;
    for (int v : tiles)
        if (v != 1) return 1e30;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            if (writes[(size_t)i * n + j] != 1) return 1e30;
            double s = 0, sa = 0;
            for (int c = 0; c < k; c++) {
                const double p = bf(x[(size_t)i * ld + c]) * bf(w[(size_t)j * ld + c]);
                s += p;
                sa += fabs(p);
            }
            const double e = fabs(y[(size_t)i * n + j] - s) / (1e-9 * sa + 1e-300);
            worst = isnan(e) || e > worst ? (isnan(e) ? 1e30 : e) : worst;
        }
    return worst;
}

} // namespace

int main()
{
    /* ragged tiles and k; one tile; a raster whose last group of m-tiles is partial (gy 10, GG_GROUP 8) */
    const int shapes[][3] = {{200, 136, 77}, {128, 128, 32}, {33, 300, 520}, {1200, 200, 16}, {1, 9, 8}};
    int fails = 0;
    for (const auto &s : shapes) {
        const double e = run(s[0], s[1], s[2], 0);
        const int ok = e <= 1.0;
        printf("m %4d n %4d k %4d: worst %.3g of the gate (1e-9 sum |x w|, each output written once) %s\n", s[0], s[1],
               s[2], e, ok ? "ok" : "FAIL");
        fails += !ok;
    }
    const double c = run(200, 136, 77, 1); /* the control: copies without the swizzle the readers assume */
    printf("control (copies unswizzled): worst %.3g, %s\n", c, c > 1.0 ? "caught" : "NOT caught");
    fails += !(c > 1.0);
    return fails ? 1 : 0;
}
