/* dump.h: one engine's recorded outputs for one sequence (a prompt), tap by tap, with provenance.
 * This is the in-memory form of a golden HDF5 file (golden/README.md). Tensors are per position
 * of the sequence: row t of every tap belongs to token t, whatever path produced it. */
#ifndef MLACHECK_DUMP_H
#define MLACHECK_DUMP_H

#include "mla/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_DUMP_SCHEMA_VERSION 1

typedef struct mla_dump_meta {
    int schema_version;
    char producer[512];     /* the command line that made it */
    char engine[64];        /* ref, gpu, plugin:<name>, hf-transformers, ... */
    char profile[16];       /* fp64, bf16, fp8kv, fp8ds, fp8w */
    char path[16];          /* prefill, decode, chunked */
    int prefill_len;        /* decode path: tokens prefilled before decoding */
    int chunk;              /* chunked path: chunk size */
    char git_sha[48];
    unsigned seed;
    char model[256];        /* built-in name or folder */
    char *model_config_json;/* owned */
    char weights_hash[24];
    char created[32];       /* ISO-8601 UTC */
    double kv_scale;        /* fp8kv cache scale of the run; 0 = not recorded (read as 1.0) */
    char e4m3[16];          /* "e4m3fn" or "e4m3fnuz", the fp8 kind of the run; "" = not recorded (e4m3fn) */
} mla_dump_meta;

typedef struct mla_dump {
    mla_dump_meta meta;
    mla_config cfg;         /* parsed from meta.model_config_json when read */
    int n_layers;
    mla_tensor *tokens;     /* i32 [S] */
    mla_tensor *global[MLA_TAP_COUNT];  /* embed, final_norm, logits (others NULL) */
    mla_tensor **layer;     /* [n_layers * MLA_TAP_COUNT], NULL where absent */
    /* [(1 + n_layers) * MLA_TAP_COUNT] (global taps, then layer by layer): NULL where every row of
     * the tap holds data (the usual case), else [S] bytes, 1 where row t was produced. A path whose
     * calls do not all make a tap keeps the rows that did: q_absorbed on the decode path holds the
     * decoded rows only (the prefill call is forward_mha). Not stored in HDF5 (h5io skips such taps). */
    unsigned char **rows;
} mla_dump;

mla_status mla_dump_new(mla_dump **out, const mla_config *cfg);
void mla_dump_free(mla_dump *d);
/* The slot for (layer, tap); layer ignored for global taps. */
mla_tensor **mla_dump_slot(mla_dump *d, int layer, mla_tap tap);
const mla_tensor *mla_dump_get(const mla_dump *d, int layer, mla_tap tap);
/* Takes ownership of t. Replaces an existing tensor (and forgets its row set: every row of t holds data). */
void mla_dump_set(mla_dump *d, int layer, mla_tap tap, mla_tensor *t);
/* The rows of (layer, tap) that hold data: NULL when every row does (see mla_dump.rows). */
const unsigned char *mla_dump_rows(const mla_dump *d, int layer, mla_tap tap);
/* Takes ownership of rows ([S] bytes, malloc'd; NULL: every row holds data). */
void mla_dump_set_rows(mla_dump *d, int layer, mla_tap tap, unsigned char *rows);

#ifdef __cplusplus
}
#endif
#endif
