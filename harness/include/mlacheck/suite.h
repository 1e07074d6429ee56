/* suite.h: suite files (suites/<name>.suite), a small declarative line format.
 *
 *   # comment (also after a value)
 *   [defaults]                 keys here apply to every case that follows, unless the case sets them
 *   description = ...
 *   [case tiny-v3-decode]      one block per case; names are unique in a file
 *   model    = tiny-v3         built-in name or HF folder (relative to the suite folder's parent,
 *                              the repository root, else to the working folder)     (required)
 *   prompts  = random:len=37,seed=1 ; tokens:3,1,4,1,5 ; file:p.txt             (required)
 *              text:PATH,offset=O,len=N[,bos=T]: N bytes of a text file as tokens (byte-level
 *              models), after token T when given; PATH relative to the suite like file:
 *   batch    = 1               sequences run together
 *   engines  = ref, gpu, plugin:path.so                                          (required)
 *   against  = golden          golden | ref-fp64 | one of engines
 *   paths    = prefill, decode, chunked
 *   prefill_len = 5            decode path: tokens prefilled before decoding one at a time
 *   chunk    = 7               chunked path: chunk size
 *   profiles = fp64, bf16      mla_profile_from_name                             (required)
 *   checks   = golden, decode-vs-prefill, ...                                    (required)
 *   kv_lens  = 64..4096 step 64, 5000   sweep lengths
 *   faults   = none            injected faults (mla/faults.h MLA_FAULT_LIST), to prove a check fails
 *   schedule = staggered       lockstep (default) | staggered: batch-invariance and chunked-vs-whole
 *                              also drive the batch as a serving scheduler would (driver.h,
 *                              MLA_PATH_STAGGERED): arrivals drawn from seed, each sequence's
 *                              chunks (chunk .. chunk+4) and decoded tail from its tokens
 *   seed, block_size, e4m3 (fn|fnuz), description
 *   kv_scale = 0.37            fp8kv per-tensor cache scale (vLLM k_scale: code = value / scale), 1.0
 *                              by default; recorded in every dump's /meta with the e4m3 kind, and a
 *                              golden made under another scale or kind is refused
 *   attn     = tc              exact (default) | tc: attention rounds as tensor-core kernels do (P
 *                              bf16 per key tile, mla_run_opts.attn_tc): the GPU engine runs its mma
 *                              kernels and the reference emulates them (reference/NUMERICS.md)
 *
 * Lists take commas (prompts take ';' because a prompt has commas inside). Every error is
 * MLA_ERR_FORMAT with "origin:line: what (did you mean 'x'?)" in mla_last_error(). */
#ifndef MLACHECK_SUITE_H
#define MLACHECK_SUITE_H

#include "mla/backend.h" /* the fault list */
#include <stdio.h>

#include "mla/mla.h"
#include "mla_model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_SUITE_EXT ".suite"

/* X(enum, name) */
#define MLA_SUITE_PATH_LIST(X)          \
    X(MLA_SUITE_PATH_PREFILL, "prefill") \
    X(MLA_SUITE_PATH_DECODE, "decode")   \
    X(MLA_SUITE_PATH_CHUNKED, "chunked")

typedef enum {
#define MLA_SUITE_PATH_ENUM(e, n) e,
    MLA_SUITE_PATH_LIST(MLA_SUITE_PATH_ENUM)
#undef MLA_SUITE_PATH_ENUM
        MLA_SUITE_PATH_COUNT
} mla_suite_path;

/* What a check reads from the group's own drives of the engine under test; the runner drives each
 * needed path once, before the first check (harness/src/checks/common.c), and hands the dumps to
 * every check that needs them. A check may drive more (other engines, profiles, options) itself. */
enum {
    MLA_CHECK_NEEDS_PREFILL = 1,       /* the prefill path */
    MLA_CHECK_NEEDS_DECODE = 2,        /* the decode path, when the case lists it */
    MLA_CHECK_NEEDS_CHUNKED = 4,       /* the chunked path, when the case lists it */
    MLA_CHECK_NEEDS_DECODE_ALWAYS = 8  /* the decode path even when the case does not list it */
};

/* The checks, in the order they run for each (case, profile, prompt group, engine).
 * X(enum, name, what it compares, needs, function)
 *   name      also the rule key: rules.tol's check column matches "name" (reference engine) or
 *             "name@engine";
 *   needs     MLA_CHECK_NEEDS_* bits;
 *   function  the check, in harness/src/checks/ (checks.h says what it receives).
 * Adding a check: one row here and one file in harness/src/checks/ (see check_example.c). */
#define MLA_CHECK_NEEDS_PD (MLA_CHECK_NEEDS_PREFILL | MLA_CHECK_NEEDS_DECODE)
#define MLA_SUITE_CHECK_LIST(X)                                                                                 \
    X(MLA_CHECK_GOLDEN, "golden", "each engine against the baseline named by 'against'",                       \
      MLA_CHECK_NEEDS_PD, chk_golden)                                                                           \
    X(MLA_CHECK_DECODE_VS_PREFILL, "decode-vs-prefill", "decode path against prefill, same tokens",             \
      MLA_CHECK_NEEDS_PD, chk_decode_vs_prefill)                                                                \
    X(MLA_CHECK_CHUNKED_VS_WHOLE, "chunked-vs-whole", "chunked prefill against one-shot prefill",               \
      MLA_CHECK_NEEDS_PREFILL | MLA_CHECK_NEEDS_CHUNKED, chk_chunked_vs_whole)                                  \
    X(MLA_CHECK_SWEEP, "sweep", "decode against prefill along kv_lens",                                       \
      MLA_CHECK_NEEDS_PREFILL | MLA_CHECK_NEEDS_DECODE_ALWAYS, chk_sweep)                                       \
    X(MLA_CHECK_ABSORBED_VS_NAIVE, "absorbed-vs-naive", "absorbed (MQA) form against naive (MHA)",              \
      MLA_CHECK_NEEDS_PREFILL, chk_absorbed_vs_naive)                                                           \
    X(MLA_CHECK_DETERMINISM, "determinism", "the same run twice, bitwise",                                    \
      MLA_CHECK_NEEDS_PREFILL, chk_determinism)                                                                 \
    X(MLA_CHECK_BATCH_INVARIANCE, "batch-invariance", "each sequence alone against the same sequence in the batch", \
      MLA_CHECK_NEEDS_PD, chk_batch_invariance)                                                                 \
    X(MLA_CHECK_SPLIT_INVARIANCE, "split-invariance", "decode with one KV split against three",                 \
      MLA_CHECK_NEEDS_PD, chk_split_invariance)                                                                 \
    X(MLA_CHECK_FP8_VS_BF16, "fp8-vs-bf16", "each fp8 profile against bf16",                                  \
      MLA_CHECK_NEEDS_PD, chk_fp8_vs_bf16)                                                                      \
    X(MLA_CHECK_NOISE_FLOOR, "noise-floor", "error vs fp64 within k times the bf16 reference's",               \
      MLA_CHECK_NEEDS_PREFILL, chk_noise_floor)                                                                 \
    X(MLA_CHECK_CROSS_ENGINE, "cross-engine", "every engine against the first engine", 0, chk_cross_engine)

typedef enum {
#define MLA_SUITE_CHECK_ENUM(e, n, d, needs, fn) e,
    MLA_SUITE_CHECK_LIST(MLA_SUITE_CHECK_ENUM)
#undef MLA_SUITE_CHECK_ENUM
        MLA_CHECK_COUNT
} mla_suite_check;

typedef enum {
    MLA_PROMPT_RANDOM = 0, /* len tokens drawn from seed (uniform over the vocabulary) */
    MLA_PROMPT_TOKENS = 1, /* explicit token ids */
    MLA_PROMPT_FILE = 2,   /* token ids (whitespace separated) in a file, relative to the suite */
    MLA_PROMPT_TEXT = 3    /* bytes [offset, offset+len) of a file, optionally after a BOS token */
} mla_suite_prompt_kind;

typedef struct mla_suite_prompt {
    mla_suite_prompt_kind kind;
    int len;          /* random: tokens; tokens: n_tokens; file: 0 (unknown until read); text: bytes + bos */
    unsigned seed;    /* random */
    int32_t *tokens;  /* tokens: [len], owned */
    char *file;       /* file, text: path as written, owned */
    long offset;      /* text: first byte */
    int bos;          /* text: token before the bytes, -1 = none */
} mla_suite_prompt;

typedef struct mla_suite_case {
    char *name;
    const char *origin; /* the suite's origin (borrowed from mla_suite) */
    int line;           /* line of the [case ...] header */
    char *description;  /* "" when absent */
    char *model;
    mla_suite_prompt *prompts; int n_prompts;
    int batch;                       /* default 1 */
    char **engines; int n_engines;   /* "ref", "gpu", "plugin:<path>" */
    char *against;                   /* default "golden" */
    mla_suite_path *paths; int n_paths;        /* default prefill */
    int prefill_len;                 /* default 1 */
    int chunk;                       /* 0 = unset */
    mla_profile *profiles; int n_profiles;
    mla_suite_check *checks; int n_checks;
    int *kv_lens; int n_kv_lens;     /* expanded, in the order written */
    unsigned faults;                 /* MLA_FAULT(...) bits of mla/backend.h; 0 = none (default) */
    unsigned seed;                   /* default 0 */
    int block_size;                  /* paged cache block; 0 = engine default */
    int e4m3_fnuz;                   /* 0 = e4m3fn (default), 1 = e4m3fnuz */
    int schedule;                    /* 0 = lockstep (default), 1 = staggered */
    double kv_scale;                 /* fp8kv cache scale, > 0; default 1.0 */
    int attn_tc;                     /* attn = tc: mla_run_opts.attn_tc */
} mla_suite_case;

typedef struct mla_suite {
    char *name;        /* file stem, or origin for parsed text */
    char *origin;      /* path or label used in messages */
    char *description; /* from [defaults] description, "" when absent */
    mla_suite_case *cases; int n_cases;
} mla_suite;

/* Parses suite text; origin names it in messages. *out is set only on MLA_OK; free with
 * mla_suite_free. Never crashes on any input (fuzzed). */
mla_status mla_suite_parse(const char *text, const char *origin, mla_suite **out);
/* Reads <dir>/<name>.suite (name may also be a path ending in .suite). */
mla_status mla_suite_load(const char *dir, const char *name, mla_suite **out);
void mla_suite_free(mla_suite *s);

/* Sorted suite names (file stems) in dir; caller frees with mla_suite_list_free. */
mla_status mla_suite_list(const char *dir, char ***names, int *n);
void mla_suite_list_free(char **names, int n);

const mla_suite_case *mla_suite_find_case(const mla_suite *s, const char *name);
int mla_suite_case_has_check(const mla_suite_case *c, mla_suite_check k);
int mla_suite_case_has_path(const mla_suite_case *c, mla_suite_path p);
int mla_suite_case_has_profile(const mla_suite_case *c, mla_profile p);

const char *mla_suite_check_name(mla_suite_check k);
const char *mla_suite_check_what(mla_suite_check k);
int mla_suite_check_from_name(const char *name, mla_suite_check *out); /* 0 ok, -1 unknown */
const char *mla_suite_path_name(mla_suite_path p);
int mla_suite_path_from_name(const char *name, mla_suite_path *out);

/* Reads all of f (and closes it) into *out (NUL-terminated; caller frees); a NUL byte inside is
 * MLA_ERR_FORMAT. path names the file in messages. Shared with rules.c. */
mla_status mla_suite_read_text(FILE *f, const char *path, char **out);

/* Levenshtein distance (bytes), for "did you mean" suggestions; shared with rules.c. */
int mla_suite_edit_distance(const char *a, const char *b);
/* The candidate closest to word when close enough to be a likely typo, else NULL. */
const char *mla_suite_suggest(const char *word, const char *const *candidates, int n);

#ifdef __cplusplus
}
#endif
#endif
