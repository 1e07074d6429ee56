/* driver.h: run prompts through any backend along a path (prefill, decode, chunked) and collect
 * every tap per position into one mla_dump per sequence. */
#ifndef MLACHECK_DRIVER_H
#define MLACHECK_DRIVER_H

#include "mlacheck/dump.h"

#ifdef __cplusplus
extern "C" {
#endif

/* staggered: a serving scheduler's steps (vLLM's, see driver.c): sequence k arrives some steps after
 * sequence k-1, prefills its prompt in chunks (forward_mha) and then decodes one token per step
 * (forward_mqa), so one step mixes sequences at different context lengths, prefill chunks with
 * decodes, and slots with nothing scheduled (n_new == 0 entries). */
typedef enum { MLA_PATH_PREFILL = 0, MLA_PATH_DECODE = 1, MLA_PATH_CHUNKED = 2, MLA_PATH_STAGGERED = 3 } mla_path;
const char *mla_path_name(mla_path p);
int mla_path_from_name(const char *name, mla_path *out);

typedef struct mla_drive_opts {
    mla_path path;
    int prefill_len;   /* decode: tokens prefilled first (clamped to the sequence length) */
    int decode_step;   /* decode: tokens per forward_mqa call (s_q; speculative decoding > 1); 0 = 1 */
    int chunk;         /* chunked: tokens per forward_mha call; 0 = 7 */
    int absorbed_only; /* 1: every call goes through forward_mqa (the absorbed form), prefill too */
    int sched_seed;    /* staggered: the arrivals (each sequence's chunks and decoded tail follow its tokens) */
} mla_drive_opts;

/* How the staggered schedule runs one sequence: what changes the sequence's own computation (chunk,
 * prompt) depends only on its tokens and the base chunk, so the sequence run alone (batch-invariance,
 * bit for bit; bisect --replay) computes the same calls; arrive depends on (seed, its index). */
typedef struct mla_sched_plan {
    int arrive; /* the step of its first call */
    int chunk;  /* prompt tokens per forward_mha call */
    int prompt; /* tokens prefilled; the rest (>= 0) are decoded one per forward_mqa call */
} mla_sched_plan;
mla_sched_plan mla_sched_plan_of(int sched_seed, int index, const int32_t *tokens, int len, int base_chunk);

/* An engine instance: its ops and its context, loaded. */
typedef struct mla_engine {
    const mla_backend_ops *ops;
    void *ctx;
    char name[520]; /* the engine as opened: "plugin:" and a path (messages name the whole path) */
} mla_engine;

/* Create and load an engine by name: "ref", "gpu" (when built) or "plugin:<path.so>". */
mla_status mla_engine_open(const char *name, mla_model *model, const mla_run_opts *opts, mla_engine *out);
void mla_engine_close(mla_engine *e);

/* Sequences k = 0..n_seqs-1 (cache slots 0..n_seqs-1, reset first) with tokens[k][0..lens[k]) run
 * together along the path; dumps[k] receives a new dump (caller frees). Every tap of every call is
 * kept: a tap some calls of the path do not make (q_absorbed, which forward_mha lacks) holds the rows
 * of the calls that made it, the others marked absent (mla_dump_rows); a tap no call made is absent. */
mla_status mla_drive(mla_engine *e, const mla_config *cfg, int n_seqs, const int32_t *const *tokens,
                     const int *lens, const mla_drive_opts *o, mla_dump **dumps);

#ifdef __cplusplus
}
#endif
#endif
