/* test_rng.c: the one PRNG (mla/rng.h) and the one hash (mla/hash.h) against published vectors, and
 * the built-in models' weights hashes, which pin every draw of the weight streams: builtin.c's
 * weights come from these functions, so a change to either shows up here first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mla_core/hash.h"
#include "mla_model/model.h"
#include "mla_core/rng.h"

/* splitmix64.c (Vigna) seeded with 1234567. */
static void test_splitmix64_vector(void **state)
{
    (void)state;
    uint64_t s = 1234567;
    assert_true(mla_rng_next(&s) == 6457827717110365317ull);
    assert_true(mla_rng_next(&s) == 3203168211198807973ull);
    assert_true(mla_rng_next(&s) == 9817491932198370423ull);
    assert_true(s == 1234567 + 3 * 0x9e3779b97f4a7c15ull);
    /* a sub-stream's state is the mix of the seed and the mixed index */
    assert_true(mla_rng_stream(42, 7) == mla_rng_mix(42 ^ mla_rng_mix(8)));
    assert_true(mla_rng_stream(42, 7) != mla_rng_stream(42, 8));
}

/* The three uniform placements of one output k = x >> 11. */
static void test_uniforms(void **state)
{
    (void)state;
    uint64_t s0 = 99, s1 = 99, s2 = 99, s3 = 99;
    uint64_t k = mla_rng_next(&s0) >> 11;
    assert_true(mla_rng_uniform(&s1) == (double)k * 0x1p-53);
    assert_true(mla_rng_uniform_pos(&s2) == ((double)k + 1.0) * 0x1p-53);
    assert_true(mla_rng_uniform_mid(&s3) == ((double)k + 0.5) * 0x1p-53);
    uint64_t s = 5;
    double lo = 1, hi = 0;
    for (int i = 0; i < 100000; i++) {
        double u = mla_rng_uniform_pos(&s);
        assert_true(u > 0 && u <= 1);
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
    }
    assert_true(lo < 1e-3 && hi > 1 - 1e-3);
    for (int i = 0; i < 1000; i++) assert_true(mla_rng_below(&s, 7) < 7);
}

/* Box-Muller pairs and the pair-using normal stream: cos first, then sin, moments near N(0,1). */
static void test_normals(void **state)
{
    (void)state;
    double other;
    double z = mla_box_muller(0.25, 0.125, &other);
    double rad = sqrt(-2.0 * log(0.25));
    assert_true(fabs(z - rad * cos(0.25 * M_PI)) < 1e-15);
    assert_true(fabs(other - rad * sin(0.25 * M_PI)) < 1e-15);
    uint64_t s = 3;
    double u1 = mla_rng_uniform_pos(&s), u2 = mla_rng_uniform(&s), pair;
    double first = mla_box_muller(u1, u2, &pair);
    mla_rng_normal_state r = {3, 0, 0.0};
    assert_true(mla_rng_normal(&r) == first);
    assert_true(mla_rng_normal(&r) == pair);
    double sum = 0, sq = 0;
    int n = 200000;
    for (int i = 0; i < n; i++) {
        double x = mla_rng_normal(&r);
        sum += x;
        sq += x * x;
    }
    assert_true(fabs(sum / n) < 0.01);
    assert_true(fabs(sq / n - 1.0) < 0.02);
}

static void test_fnv1a_vectors(void **state)
{
    (void)state;
    assert_true(mla_fnv1a_str(MLA_FNV1A_INIT, "") == 0xcbf29ce484222325ull);
    assert_true(mla_fnv1a_str(MLA_FNV1A_INIT, "a") == 0xaf63dc4c8601ec8cull);
    assert_true(mla_fnv1a_str(MLA_FNV1A_INIT, "foobar") == 0x85944171f73967e8ull);
    assert_true(mla_fnv1a(MLA_FNV1A_INIT, "foobar", 6) == 0x85944171f73967e8ull);
    const uint8_t le32[4] = {0x78, 0x56, 0x34, 0x12};
    assert_true(mla_fnv1a_u32(7, 0x12345678u) == mla_fnv1a(7, le32, 4));
    const uint8_t le64[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    assert_true(mla_fnv1a_u64(7, 0x0102030405060708ull) == mla_fnv1a(7, le64, 8));
}

/* The block-table shuffle is a permutation, moves most entries, and depends on its seed. */
static void test_shuffle(void **state)
{
    (void)state;
    enum { N = 64 };
    int32_t a[N], b[N], seen[N] = {0};
    for (int i = 0; i < N; i++) a[i] = b[i] = i;
    mla_rng_shuffle_i32(a, N, 7);
    mla_rng_shuffle_i32(b, N, 8);
    int moved = 0, differ = 0;
    for (int i = 0; i < N; i++) {
        assert_true(a[i] >= 0 && a[i] < N);
        seen[a[i]]++;
        moved += a[i] != i;
        differ += a[i] != b[i];
    }
    for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);
    assert_true(moved > N / 2);
    assert_true(differ > N / 2);
}

/* The weights of the built-in models, drawn by builtin.c from the streams above, as recorded before
 * the generator moved into rng.c (commit 9aca4e1). */
static void test_builtin_weights_hash(void **state)
{
    (void)state;
    static const struct {
        const char *model, *hash;
    } want[] = {{"tiny-v3", "feb88bcb54ccaa94"}, {"tiny-v2-lite", "505ff3e6fef55bdf"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        mla_model *m = NULL;
        assert_int_equal(mla_model_open(want[i].model, &m), MLA_OK);
        char h[17];
        assert_int_equal(mla_model_weights_hash(m, h), MLA_OK);
        if (strcmp(h, want[i].hash)) fail_msg("%s: weights hash %s, expected %s", want[i].model, h, want[i].hash);
        mla_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_splitmix64_vector), cmocka_unit_test(test_uniforms),
        cmocka_unit_test(test_normals),           cmocka_unit_test(test_fnv1a_vectors),
        cmocka_unit_test(test_shuffle),            cmocka_unit_test(test_builtin_weights_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
