/* mla_core/rng.h: the one pseudo-random generator of mlacheck: splitmix64 (Steele, Lea and Flood, 2014), its
 * 53-bit uniforms and Box-Muller normals. Built-in model weights, op-check inputs, random prompts,
 * benchmark tokens and tests all draw from it, so a stream is defined here once; where a stream
 * feeds stored data (weights hash, goldens, op suites) its exact draws are part of that data.
 *
 * A stream is a uint64_t state. mla_rng_next walks it; mla_rng_stream(seed, index) is the state of
 * sub-stream `index` of a seed, so independent pieces (a tensor's chunks, a suite's cases) draw
 * without walking each other's streams and without depending on the order they are generated in. */
#ifndef MLA_RNG_H
#define MLA_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* splitmix64's output function: a bijective mix of 64 bits. */
uint64_t mla_rng_mix(uint64_t z);
/* One splitmix64 step: the state advances by the golden gamma 0x9e3779b97f4a7c15, the mixed state
 * is returned. */
uint64_t mla_rng_next(uint64_t *state);
/* The starting state of sub-stream index of seed: mix(seed ^ mix(index + 1)). */
uint64_t mla_rng_stream(uint64_t seed, uint64_t index);

/* Uniform doubles on the 2^-53 grid from the next output's top 53 bits, in the three placements the
 * stored streams use: */
double mla_rng_uniform(uint64_t *state);      /* [0, 1): k * 2^-53 */
double mla_rng_uniform_pos(uint64_t *state);  /* (0, 1]: (k + 1) * 2^-53, safe for log */
double mla_rng_uniform_mid(uint64_t *state);  /* (0, 1): (k + 0.5) * 2^-53, safe for log */
/* An integer in [0, n) (n > 0) from the next output (modulo: bias < n / 2^64). */
uint64_t mla_rng_below(uint64_t *state, uint64_t n);
/* Fisher-Yates permutation of v[n] from sub-stream 0 of seed: the shuffled block tables of the
 * reference cache, the GPU cache and the benchmark (a paged allocator's order, as in serving). */
void mla_rng_shuffle_i32(int32_t *v, int64_t n, uint64_t seed);

/* Box-Muller: u1 in (0, 1], u2 in [0, 1) give sqrt(-2 ln u1) cos(2 pi u2); *other (when not NULL)
 * receives the paired sqrt(-2 ln u1) sin(2 pi u2). */
double mla_box_muller(double u1, double u2, double *other);

/* N(0, 1) stream that uses both Box-Muller values: u1 = uniform_pos, u2 = uniform, the cos value
 * first, then the sin value. */
typedef struct mla_rng_normal_state {
    uint64_t s;
    int have;
    double spare;
} mla_rng_normal_state;
double mla_rng_normal(mla_rng_normal_state *r);

#ifdef __cplusplus
}
#endif
#endif
