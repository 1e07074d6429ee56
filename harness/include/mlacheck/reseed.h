/* reseed.h: `mlacheck run --reseed K`: another valid workload under the same limits. The engines and
 * the reference are deterministic, so repeating a suite as written proves nothing about false
 * alarms; K derives new random prompts, new text windows and new staggered arrivals from the suite's
 * own, while the models (their weights) and explicit prompts (tokens:, file:) stay. K = 0 is the
 * suite as written, bit for bit: every function below returns its input unchanged then. */
#ifndef MLACHECK_RESEED_H
#define MLACHECK_RESEED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A suite seed (random:...,seed=S prompts, a case's staggered-arrival seed) under K: S when K = 0,
 * else sub-stream K of S (mla_rng_stream), folded to 32 bits. */
unsigned mla_reseed_seed(unsigned seed, unsigned k);

/* The start of a text window of span bytes in a file of file_size bytes under K: offset when K = 0,
 * else a start in [0, file_size - span] drawn from sub-stream K of offset, so the window stays
 * inside the file. When the window cannot fit (span > file_size, or span < 0) offset is returned,
 * so the reader reports the short file as it does without K. */
long mla_reseed_offset(long offset, long span, long file_size, unsigned k);

/* Why a check against dumps made from the suite's own prompts (the goldens) cannot run under K:
 * "--reseed K changes the prompts the goldens were made from", into buf. */
const char *mla_reseed_golden_why(unsigned k, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
