/* report_internal.h: the run object shared by report.c (data, JSON, TSV), report_text.c (md, junit,
 * html) and report_plots.c (gnuplot). Not installed. */
#ifndef MLACHECK_REPORT_INTERNAL_H
#define MLACHECK_REPORT_INTERNAL_H

#include "mlacheck/report.h"

#include <stdarg.h>
#include <string.h>

/* snprintf for file paths: 0, or -1 (with an MLA_ERR_INVALID detail) when the path does not fit. */
static inline int mla_rep_pathf(char *out, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline int mla_rep_pathf(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) {
        mla_errorf(MLA_ERR_INVALID, "path too long (over %zu bytes): %.200s...", n, out);
        return -1;
    }
    return 0;
}

/* A stored metric row: the strings are the run's own copies (never NULL; worst defaulted). */
typedef mla_rep_row rep_row;

/* A row's value of a metric by name (nmse is nmse_db); rel_l2 for any other name. */
static inline double mla_rep_row_metric(const rep_row *w, const char *name)
{
    if (strcmp(name, "max_abs") == 0) return w->max_abs;
    if (strcmp(name, "max_rel") == 0) return w->max_rel;
    if (strcmp(name, "nmse_db") == 0 || strcmp(name, "nmse") == 0) return w->nmse_db;
    if (strcmp(name, "cos_diff") == 0) return w->cos_diff;
    if (strcmp(name, "ulp_p99") == 0) return w->ulp_p99;
    return w->rel_l2;
}

typedef struct rep_check {
    char *case_name, *check, *profile, *path, *message, *first_tap, *worst;
    int first_layer;
    mla_rep_verdict v;
    double worst_value, headroom; /* headroom: the limit use (report.h); NAN when no metric rows */
    double seconds;               /* NAN when not timed */
} rep_check;

/* One provenance property ("git", "compiler", "engine", ...), written into every output. */
typedef struct rep_prop {
    char *key, *value;
} rep_prop;

struct mla_rep_run {
    char *results_dir, *suite, *run_id, *git_sha, *created;
    double wall;
    rep_row *rows;
    size_t n_rows, cap_rows;
    rep_check *checks;
    size_t n_checks, cap_checks;
    double *kl;
    size_t n_kl, cap_kl;
    char note[512];
    char *incomplete;     /* NULL: the run completed; else why not (mla_rep_set_incomplete) */
    char **inputs;        /* failures/<name>.txt: the exact inputs of failing cases */
    char **input_texts;
    size_t n_inputs;
    char **input_files;   /* failures/<name>.h5 moved in at finish: the candidate's dump */
    char **input_file_names;
    size_t n_input_files;
    rep_prop *props;
    size_t n_props;
    char hostname[256];
};

/* One check as summary.json's "checks" array holds it, and back (the run journal writes and reads
 * the same objects, journal.c). from_json names where[i] in its errors. */
struct json_t;
struct json_t *mla_rep_check_to_json(const rep_check *c);
mla_status mla_rep_check_from_json(mla_rep_run *r, struct json_t *c, const char *where, size_t i);
extern const char *const mla_rep_verdict_names[3]; /* "pass", "fail", "skip" */
int mla_rep_n_cases(const mla_rep_run *r);          /* distinct case names among the checks */
/* The text outputs (report_text.c), each into dir; errors are I/O (naming the file) or memory. */
mla_status mla_rep_write_md(const mla_rep_run *r, const char *dir);
mla_status mla_rep_write_junit(const mla_rep_run *r, const char *dir);
mla_status mla_rep_write_html(const mla_rep_run *r, const char *dir);

/* Writes plots/ under dir (data, scripts, PNG, SVG). A missing gnuplot or a failing script is a
 * note, not an error; errors are I/O only. */
mla_status mla_rep_write_plots(const mla_rep_run *r, const char *dir, char *note, size_t n);
/* plots/plots.txt lists the plots that were produced, one "name<TAB>title" a line; index.html
 * shows those (plots/<name>.svg, linking plots/<name>.png). */
#define MLA_REP_PLOT_LIST "plots.txt"
/* Runs gnuplot gp on NAME.gp inside pdir; its chatter goes to gnuplot.log. 0 when NAME.png and
 * NAME.svg both exist. */
int mla_rep_run_gnuplot(const char *gp, const char *pdir, const char *name);

#endif
