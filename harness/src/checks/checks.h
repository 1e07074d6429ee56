/* checks.h: the suite checks (private to the runner). One function per check, listed once in
 * MLA_SUITE_CHECK_LIST (suite.h) with the paths it needs; the runner (runner.c) calls every listed
 * check of a case for each (profile, prompt group, engine), in the list's order.
 *
 * A check receives a chk_ctx: the run (rules, report, verdicts, drive cache), the engine under test,
 * the profile, the prompt group and the group's dumps along the paths the row asked for. It drives
 * whatever else it needs through chk_dumps (cached: each dump is made once per key) or
 * chk_drive_fresh (a new drive, never cached), compares, and records verdicts (verdict.c). It never
 * frees a dump it got from chk_dumps. Adding a check: one row in MLA_SUITE_CHECK_LIST and one file
 * here (check_example.c is a commented template). */
#ifndef MLA_CHECKS_H
#define MLA_CHECKS_H

#include "mlacheck/dumpcmp.h"
#include "mlacheck/runner.h"

#include <stdint.h>

/* Prompts run together: one batch of all the case's prompts, or one prompt alone. */
typedef struct chk_group {
    int n;              /* sequences */
    int cap;            /* allocated entries of tok and len */
    int32_t **tok;      /* [n] tokens of each sequence (owned by the runner's group, borrowed by views) */
    int *len;           /* [n] */
} chk_group;

/* One verdict per (check, path) of a (case, profile); flushed to the report per profile. */
typedef struct chk_verdict {
    char check[64], path[16];
    int fail, skip, any, error;
    int first_layer;
    char first_tap[32], msg[512];
    double seconds; /* time of the check functions that judged it (junit.xml) */
} chk_verdict;

/* An open engine of the drive cache: kept across the checks of a (case, profile), reset before each drive. */
typedef struct chk_engine {
    char *name;
    mla_run_opts ro;   /* the key with name: every option that changes what the engine computes */
    mla_engine e;
    uint64_t used;     /* LRU clock */
} chk_engine;

/* A cached drive: the dumps of one (engine, run options, drive options, sequences). */
typedef struct chk_drive {
    char *engine;
    mla_run_opts ro;
    mla_drive_opts d;
    int n;
    int32_t **tok;     /* [n] the sequences' token arrays (pointers, borrowed) */
    int *len;          /* [n] */
    mla_dump **dumps;  /* [n] owned by the cache */
    int64_t bytes;     /* the dumps' tensor bytes */
    uint64_t used;     /* LRU clock */
} chk_drive;

/* The state of one suite run. */
typedef struct chk_run {
    const mla_suite *suite;
    const mla_suite_case *cs;
    const mla_rules *rules;
    const mla_runner_opts *o;
    mla_rep_run *rep;
    mla_runner_totals *tot;
    const char *profile;
    mla_model *m;                 /* the case's model */
    chk_verdict *v;
    int nv, cap_v;
    int kv_splits;                /* > 0: overrides the option for the next drives (split-invariance) */
    char **saved;                 /* failures whose dump was kept */
    size_t n_saved, cap_saved;
    chk_engine *eng;              /* the drive cache: open engines (LRU, at most max_eng) */
    int n_eng, cap_eng, max_eng;
    uint64_t clock;
    chk_drive *drv;               /* the drive cache: dumps of the current case */
    int n_drv, cap_drv;
    int64_t drv_bytes;            /* their tensor bytes */
    int64_t n_loads;              /* engines opened (and loaded) so far */
} chk_run;

/* Room for one more element in *arr (n used of *cap, elem bytes each): doubles the capacity, first
 * when empty. 0 ok, -1 out of memory (*arr and *cap unchanged). */
int chk_grow(void *arr, int *cap, int n, size_t elem, int first);

/* What one check receives. */
typedef struct chk_ctx {
    chk_run *r;
    mla_profile prof;
    const char *engine;           /* the engine under test */
    int is_cand;                  /* 1: the engine gets the injected faults */
    const chk_group *g;
    int last_engine;              /* 1: no other engine runs on this group after this one */
    char check[80];               /* the check's name for this engine: "name" or "name@engine" */
    mla_drive_opts dp, dd, dc;    /* the group's prefill, decode and chunked drive options */
    mla_dump **pre, **dec, **chk; /* the group's dumps along each path; NULL when not driven */
} chk_ctx;

/* A check: records its verdicts in c->r; drive errors become failed verdicts, not a return value. */
typedef void (*chk_fn)(chk_ctx *c);

#define X(e, n, d, needs, fn) void fn(chk_ctx *c);
MLA_SUITE_CHECK_LIST(X)
#undef X
void chk_example(chk_ctx *c); /* check_example.c: the commented template, in no row of the list */

/* The rows of MLA_SUITE_CHECK_LIST, in run order (table.c). */
typedef struct chk_row {
    mla_suite_check check;
    const char *name;
    unsigned needs; /* MLA_CHECK_NEEDS_* */
    chk_fn fn;
} chk_row;
extern const chk_row chk_table[MLA_CHECK_COUNT];

/* ---- common.c: run state, names, drives, comparisons ---- */
void chk_run_init(chk_run *r, const mla_suite *s, const mla_rules *rules, const mla_runner_opts *o,
                  mla_rep_run *rep, mla_runner_totals *tot);
void chk_run_free(chk_run *r);
/* Starts a case on model m (borrowed until chk_engines_close): sets how many engines may stay open. */
void chk_run_set_case(chk_run *r, const mla_suite_case *cs, mla_model *m);
/* Closes every cached engine (end of a profile; the case's model is about to go). */
void chk_engines_close(chk_run *r);
/* Frees every cached dump (end of a case: the keys name the case's prompts). */
void chk_drives_flush(chk_run *r);
/* Frees the cached drive whose dumps chk_dumps returned, before the group ends: for dumps no later
 * check can ask for (the caller must hold no other pointer to them). */
void chk_drives_release(chk_run *r, mla_dump **dumps);
/* Frees the least recently used cached drives while they hold more than the dump budget; only
 * between engines, when no check holds a cached dump. */
void chk_drives_trim(chk_run *r);

int chk_case_has(const mla_suite_case *c, mla_suite_check k);
/* "check" for the reference, "check@gpu", "check@plugin" for the others. */
void chk_name(char *out, size_t n, const char *check, const char *engine);
mla_drive_opts chk_path_opts(const chk_run *r, mla_path p);

/* The engine run options of a drive: faults = 1 injects the suite's and the command's faults. */
void chk_run_opts(const chk_run *r, mla_profile prof, int faults, const chk_group *g, mla_run_opts *ro);
/* The cached engine for (name, options), opened and loaded on first use. */
mla_status chk_engine_get(chk_run *r, const char *name, const mla_run_opts *ro, mla_engine **out);
/* The dumps of one drive, made once per (engine, profile, faults, options, sequences) and kept until
 * chk_drives_trim or chk_drives_flush: *out is borrowed ([g->n] dumps), never freed or changed by the caller. */
mla_status chk_dumps(chk_run *r, const char *engine, mla_profile prof, int faults, const chk_group *g,
                     const mla_drive_opts *d, mla_dump ***out);
/* A new drive on the cached engine, never served from the cache (determinism): dumps[g->n] are
 * the caller's to free. */
mla_status chk_drive_fresh(chk_run *r, const char *engine, mla_profile prof, int faults, const chk_group *g,
                           const mla_drive_opts *d, mla_dump **dumps);
void chk_dumps_free(mla_dump **d, int n);

/* Compare a[i] vs b[i] of a group under c's check name (bitwise: every byte); rows go to the
 * report, failures keep their inputs (save_input). */
void chk_compare_group(chk_run *r, const char *check, const char *path, mla_dump *const *a, mla_dump *const *b,
                       int n, int bitwise);

/* ---- paths.c, invariance.c: the staggered schedule (suite key schedule) ---- */
/* The group's staggered drive options: the case's chunk as the base chunk, its seed (under --reseed K
 * mixed with K, mla_reseed_seed) as the schedule's. */
mla_drive_opts chk_staggered_opts(const chk_ctx *c);
/* Views of the group's prefill dumps (c->pre) with q_absorbed borrowed from the absorbed prefill
 * (absorbed_only; the naive form makes none), so a path's q_absorbed has a whole-prefill side; free
 * with chk_whole_views_free (the views only: every tensor is borrowed). */
mla_status chk_whole_views(chk_ctx *c, mla_dump ***out);
void chk_whole_views_free(mla_dump **v, int n);

/* ---- cross.c ---- */
/* The engine cross-engine compares against: the case's `against` when it names an engine, else ref. */
const char *chk_cross_base(const mla_suite_case *cs);

/* ---- golden.c ---- */
/* 1 when the golden check only records skips: under --reseed K (mla_runner_opts.reseed) the prompts
 * are not the ones the goldens were made from, and a golden of other tokens is neither a pass nor a
 * fail. The runner drives nothing for it then. */
int chk_golden_reseeded(const chk_run *r);

/* ---- precision.c: the noise floor, exposed for the tests (test_checks.c) ---- */
/* Routing of layer (topk_ids) of the oracle a against the candidate b, each flip judged by a's margins
 * under the rules' route_noise_k for (r->profile, check); margins unknown (no rule, bias or router
 * logits): every flip clear. */
mla_status chk_noise_floor_route(const chk_run *r, const char *check, const mla_dump *a, const mla_dump *b,
                                 int layer, mla_cmp_routing_result *rr);
/* One sequence of noise-floor (r->rep may be NULL: no rows): every tap of the candidate b and of the
 * emulating reference e against the oracle a, in computation order; the first tap over k x the floor
 * fails, and so does a clear routing flip at topk_ids. After a benign flip the later taps are not
 * judged and extra[n_extra] says so ("" otherwise). */
mla_status chk_noise_floor_seq(chk_run *r, const char *check, double k, const mla_dump *a, const mla_dump *b,
                               const mla_dump *e, mla_dcmp_result *res, char *extra, size_t n_extra);

/* ---- verdict.c: verdicts and failing inputs ---- */
void chk_verdict_note(chk_run *r, const char *check, const char *path, const mla_dcmp_result *res, const char *extra);
void chk_verdict_error(chk_run *r, const char *check, const char *path, mla_status st);
void chk_verdict_skip(chk_run *r, const char *check, const char *path, const char *why);
/* Adds the verdicts of the current (case, profile) to the report and the totals, then clears them. */
void chk_verdicts_flush(chk_run *r);
/* Adds seconds (a check function's run) to the verdicts of check, split evenly over its paths. */
void chk_verdict_time(chk_run *r, const char *check, double seconds);
/* Keeps what reproduces a failing comparison (the text, and the candidate's dump once per name). */
void chk_save_input(chk_run *r, const char *check, const char *path, const mla_dump *d);

#endif
