/* test_decode_mfma.cpp: the AMD decode kernel's fragment addressing (gpu/src/gpu_decode_mfma.h) run on
 * the host, in CI, with v_mfma_f32_16x16x16 bf16 emulated from the layout that header states: the S
 * block (Q K^T over 576 dims, as the kernel walks it) and the P V block (P over 32 keys times V's 16
 * output dims at an offset, as the kernel's chunks do), every output against float64 sums of the same
 * bf16 inputs. Padding past the valid columns holds NaN, so a read past them shows; a planted reader
 * with lane / 16 and lane % 16 swapped must fail, so the comparison can. The shared-memory plan must fit
 * CDNA's 64 KB with its fragment reads 8-byte aligned. Not checked: the layout against the hardware
 * (no AMD GPU here), the kernel's synchronization. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "gpu_decode_mfma.h"

namespace {

uint64_t rng = 0x2545f4914f6cdd1dull;
float uni() /* [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng >> 40) * (2.0f / 16777216.0f) - 1.0f;
}
double bf(uint16_t v) { return gd_bf16_to_f32(v); }
const uint16_t NAN_BF16 = 0x7fc0;

/* d += a . b over the wave, fragments per lane as gpu_decode_mfma.h states the layout */
void mfma(double (&d)[MF_LANES][4], const uint16_t (&a)[MF_LANES][4], const uint16_t (&b)[MF_LANES][4])
{
    double A[16][16], B[16][16];
    for (int l = 0; l < MF_LANES; l++)
        for (int j = 0; j < 4; j++) {
            A[l % 16][4 * (l / 16) + j] = bf(a[l][j]);
            B[4 * (l / 16) + j][l % 16] = bf(b[l][j]);
        }
    for (int l = 0; l < MF_LANES; l++)
        for (int i = 0; i < 4; i++) {
            const int r = mf_d_row(l, i), c = mf_d_col(l);
            for (int k = 0; k < 16; k++) d[l][i] += A[r][k] * B[k][c];
        }
}

/* the planted bug: lane / 16 and lane % 16 exchanged in the row reader */
void frag_rows_swapped(const uint16_t *m, int ld, int k0, int lane, uint16_t f[4])
{
    const uint16_t *p = m + (lane / 16) * ld + k0 + 4 * (lane % 16);
    for (int j = 0; j < 4; j++) f[j] = p[j];
}

typedef void (*rows_fn)(const uint16_t *, int, int, int, uint16_t *);

/* S = Q K^T of 16 heads x 16 keys over lp dims, both in the kernel's shared-memory rows (stride ldk,
 * columns past lp NaN); the worst |error| against float64 */
double s_block(rows_fn rows, int lp, int key0)
{
    const int ldk = mf_ldk(lp);
    std::vector<uint16_t> Q(MF_HM * ldk, NAN_BF16), K(MF_KR * ldk, NAN_BF16);
    for (int r = 0; r < MF_HM; r++)
        for (int e = 0; e < lp; e++) Q[r * ldk + e] = gd_f32_to_bf16(uni());
    for (int r = 0; r < MF_KR; r++)
        for (int e = 0; e < lp; e++) K[r * ldk + e] = gd_f32_to_bf16(uni());
    double d[MF_LANES][4] = {};
    for (int k0 = 0; k0 < lp; k0 += 16) {
        uint16_t fa[MF_LANES][4], fb[MF_LANES][4];
        for (int l = 0; l < MF_LANES; l++) {
            rows(Q.data(), ldk, k0, l, fa[l]);
            rows(K.data() + key0 * ldk, ldk, k0, l, fb[l]);
        }
        mfma(d, fa, fb);
    }
    double worst = 0;
    int seen[MF_HM][16] = {};
    for (int l = 0; l < MF_LANES; l++)
        for (int i = 0; i < 4; i++) {
            const int h = mf_d_row(l, i), key = mf_d_col(l);
            double ref = 0;
            for (int e = 0; e < lp; e++) ref += bf(Q[h * ldk + e]) * bf(K[(key0 + key) * ldk + e]);
            const double err = fabs(d[l][i] - ref);
            worst = err > worst || isnan(err) ? err : worst;
            seen[h][key]++;
        }
    for (int h = 0; h < MF_HM; h++)
        for (int k = 0; k < 16; k++)
            if (seen[h][k] != 1) return INFINITY; /* every score written once */
    return worst;
}

/* O (16 heads x 16 dims at dim0) = P V over the 32 keys of a chunk, P's keys at key0 of its row: the
 * kernel's two 16-key steps; the worst |error| against float64 */
double pv_block(int lp, int key0, int dim0)
{
    const int ldk = mf_ldk(lp);
    std::vector<uint16_t> P(MF_HM * MF_PLD, NAN_BF16), V(MF_KR * ldk, NAN_BF16);
    for (int r = 0; r < MF_HM; r++)
        for (int k = 0; k < 64; k++) P[r * MF_PLD + k] = gd_f32_to_bf16(0.5f * (uni() + 1.0f));
    for (int r = 0; r < MF_KR; r++)
        for (int e = 0; e < lp; e++) V[r * ldk + e] = gd_f32_to_bf16(uni());
    double d[MF_LANES][4] = {};
    for (int kb = 0; kb < MF_KR / 16; kb++) {
        uint16_t fa[MF_LANES][4], fb[MF_LANES][4];
        for (int l = 0; l < MF_LANES; l++) {
            mf_frag_rows(P.data(), MF_PLD, key0 + 16 * kb, l, fa[l]);
            mf_frag_cols(V.data(), ldk, 16 * kb, dim0, l, fb[l]);
        }
        mfma(d, fa, fb);
    }
    double worst = 0;
    for (int l = 0; l < MF_LANES; l++)
        for (int i = 0; i < 4; i++) {
            const int h = mf_d_row(l, i), dim = dim0 + mf_d_col(l);
            double ref = 0;
            for (int k = 0; k < MF_KR; k++) ref += bf(P[h * MF_PLD + key0 + k]) * bf(V[k * ldk + dim]);
            const double err = fabs(d[l][i] - ref);
            worst = err > worst || isnan(err) ? err : worst;
        }
    return worst;
}

int failures = 0;
void expect(bool ok, const char *what, double v)
{
    printf("%-58s %s (%.3g)\n", what, ok ? "ok" : "FAIL", v);
    failures += !ok;
}

} // namespace

int main()
{
    const double tol = 1e-9; /* float64 sums of the same bf16 inputs, in another order */
    for (int lp : {576, 272, 64}) {
        char what[96];
        snprintf(what, sizeof what, "S block, lp %d, keys 0-15", lp);
        expect(s_block(mf_frag_rows, lp, 0) < tol, what, s_block(mf_frag_rows, lp, 0));
        snprintf(what, sizeof what, "S block, lp %d, keys 16-31", lp);
        const double e16 = s_block(mf_frag_rows, lp, 16);
        expect(e16 < tol, what, e16);
        for (int key0 : {0, 32})
            for (int dim0 : {0, 48, 496}) {
                if (dim0 + 16 > lp) continue;
                snprintf(what, sizeof what, "P V block, lp %d, keys %d-%d, dims %d-%d", lp, key0, key0 + 31, dim0, dim0 + 15);
                const double e = pv_block(lp, key0, dim0);
                expect(e < tol, what, e);
            }
    }
    const double planted = s_block(frag_rows_swapped, 576, 0);
    expect(!(planted < tol), "planted: a row reader with lane / 16 and lane % 16 swapped", planted);
    const int ldk = mf_ldk(576), shm = mf_shm_bytes(ldk);
    expect(shm <= 65536, "shared memory at C + R 576 within CDNA's 64 KB", shm);
    expect(ldk * 2 % 8 == 0 && mf_off_k(ldk) * 2 % 8 == 0 && mf_off_p(ldk) * 2 % 8 == 0 && MF_PLD * 2 % 8 == 0,
           "fragment rows 8-byte aligned (Q, K, P)", ldk);
    printf("test_decode_mfma: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
