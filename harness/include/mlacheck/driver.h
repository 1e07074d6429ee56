/* driver.h: run prompts through any backend along a path (prefill, decode, chunked) and collect
 * every tap per position into one mla_dump per sequence. */
#ifndef MLACHECK_DRIVER_H
#define MLACHECK_DRIVER_H

#include "mlacheck/dump.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MLA_PATH_PREFILL = 0, MLA_PATH_DECODE = 1, MLA_PATH_CHUNKED = 2 } mla_path;
const char *mla_path_name(mla_path p);
int mla_path_from_name(const char *name, mla_path *out);

typedef struct mla_drive_opts {
    mla_path path;
    int prefill_len;   /* decode: tokens prefilled first (clamped to the sequence length) */
    int decode_step;   /* decode: tokens per forward_mqa call (s_q; speculative decoding > 1); 0 = 1 */
    int chunk;         /* chunked: tokens per forward_mha call; 0 = 7 */
    int absorbed_only; /* 1: every call goes through forward_mqa (the absorbed form), prefill too */
} mla_drive_opts;

/* An engine instance: its ops and its context, loaded. */
typedef struct mla_engine {
    const mla_backend_ops *ops;
    void *ctx;
    char name[64];
} mla_engine;

/* Create and load an engine by name: "ref", "gpu" (when built) or "plugin:<path.so>". */
mla_status mla_engine_open(const char *name, mla_model *model, const mla_run_opts *opts, mla_engine *out);
void mla_engine_close(mla_engine *e);

/* Sequences k = 0..n_seqs-1 (cache slots 0..n_seqs-1, reset first) with tokens[k][0..lens[k]) run
 * together along the path; dumps[k] receives a new dump (caller frees). Taps an engine does not
 * produce in every call of the path are left out of the dump. */
mla_status mla_drive(mla_engine *e, const mla_config *cfg, int n_seqs, const int32_t *const *tokens,
                     const int *lens, const mla_drive_opts *o, mla_dump **dumps);

#ifdef __cplusplus
}
#endif
#endif
