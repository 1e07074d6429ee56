/* accuracy.h: what a numerics profile costs in model quality, on a byte-level model and real text
 * (issue 10 item 8): bits per byte, KL divergence and top-1 agreement against the reference's
 * fp64, and the growth of the error layer by layer. Each window of the text is prefilled once per
 * (engine, profile) along one path; the fp64 reference engine on the same path is the baseline. */
#ifndef MLACHECK_ACCURACY_H
#define MLACHECK_ACCURACY_H

#include "mla/config.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mla_acc_opts {
    const char *model;            /* built-in name or HF folder (byte-level: vocab >= 256) */
    const char *text;             /* file whose bytes are the tokens */
    int bos;                      /* token before every window, -1 = none */
    int window;                   /* bytes per window */
    int n_windows;                /* windows evenly spaced over the file */
    const char *engine;           /* "ref", "gpu", "plugin:<path.so>" */
    int path;                     /* mla_path (driver.h): decode by default, since a prefill reads the
                                   * new tokens' own K/V, never the (fp8) cache */
    int prefill_len;              /* decode: tokens prefilled before decoding one at a time */
    int chunk;                    /* chunked: tokens per forward_mha call */
    const mla_profile *profiles;  /* the candidate profiles (fp64 of the reference is the baseline) */
    int n_profiles;
} mla_acc_opts;

typedef struct mla_acc_row {
    char engine[64];
    mla_profile profile;
    double bits_per_byte;  /* mean -log2 p(next byte) over every predicted byte */
    double kl_mean, kl_max; /* KL(fp64 || this) per token, nats */
    double top1;           /* fraction of tokens whose argmax equals fp64's */
    double logits_rel_l2;  /* pooled over windows: ||d|| / ||fp64|| */
    double *layer_rel_l2;  /* [n_layers], layer output ("out" tap), pooled the same way */
} mla_acc_row;

typedef struct mla_acc_result {
    int n_rows;            /* rows[0] is the baseline (ref, fp64) */
    mla_acc_row *rows;
    int n_layers;
    int64_t n_predicted;   /* bytes predicted per row */
    double seconds;
} mla_acc_result;

mla_status mla_accuracy_run(const mla_acc_opts *o, mla_acc_result *out);
/* accuracy.tsv, accuracy.md (the one-page summary) and growth.{dat,gp,svg,png} (with gnuplot) in dir. */
mla_status mla_accuracy_write(const mla_acc_result *r, const mla_acc_opts *o, const char *dir);
void mla_accuracy_free(mla_acc_result *r);

#ifdef __cplusplus
}
#endif
#endif
