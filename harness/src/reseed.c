/* reseed.c: the workloads of `mlacheck run --reseed K` (reseed.h). Every derivation is a pure
 * function of the suite's value and K, so a reseeded failure is reproduced by running the same K. */
#include "mlacheck/reseed.h"

#include "mla_core/rng.h"

#include <stdio.h>

unsigned mla_reseed_seed(unsigned seed, unsigned k)
{
    if (k == 0) return seed;
    /* the top half: splitmix64's output bits are equally good, and sub-stream K of distinct seeds
     * stays distinct (mix is a bijection) up to the 32-bit fold */
    return (unsigned)(mla_rng_stream(seed, k) >> 32);
}

long mla_reseed_offset(long offset, long span, long file_size, unsigned k)
{
    if (k == 0 || span < 0 || span > file_size) return offset;
    uint64_t starts = (uint64_t)(file_size - span) + 1; /* every start whose window ends inside the file */
    return (long)(mla_rng_stream((uint64_t)offset, k) % starts);
}

const char *mla_reseed_golden_why(unsigned k, char *buf, size_t size)
{
    snprintf(buf, size, "--reseed %u changes the prompts the goldens were made from", k);
    return buf;
}
