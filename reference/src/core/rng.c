/* rng.c: splitmix64, its uniforms and Box-Muller normals (mla/rng.h). */
#include "mla_core/rng.h"

#include <math.h>

uint64_t mla_rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t mla_rng_next(uint64_t *state) { return mla_rng_mix(*state += 0x9e3779b97f4a7c15ull); }

uint64_t mla_rng_stream(uint64_t seed, uint64_t index) { return mla_rng_mix(seed ^ mla_rng_mix(index + 1)); }

double mla_rng_uniform(uint64_t *state) { return (double)(mla_rng_next(state) >> 11) * 0x1p-53; }

double mla_rng_uniform_pos(uint64_t *state) { return ((double)(mla_rng_next(state) >> 11) + 1.0) * 0x1p-53; }

double mla_rng_uniform_mid(uint64_t *state) { return ((double)(mla_rng_next(state) >> 11) + 0.5) * 0x1p-53; }

uint64_t mla_rng_below(uint64_t *state, uint64_t n) { return mla_rng_next(state) % n; }

void mla_rng_shuffle_i32(int32_t *v, int64_t n, uint64_t seed)
{
    uint64_t s = mla_rng_stream(seed, 0);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)mla_rng_below(&s, (uint64_t)(i + 1));
        int32_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

double mla_box_muller(double u1, double u2, double *other)
{
    double rad = sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
    if (other) *other = rad * sin(a);
    return rad * cos(a);
}

double mla_rng_normal(mla_rng_normal_state *r)
{
    if (r->have) {
        r->have = 0;
        return r->spare;
    }
    double u1 = mla_rng_uniform_pos(&r->s);
    double u2 = mla_rng_uniform(&r->s);
    r->have = 1;
    return mla_box_muller(u1, u2, &r->spare);
}
