/* report.c: the run object, provenance, the atomic results folder, summary.json, metrics.tsv and
 * limits.tsv, and re-rendering. summary.md, junit.xml and index.html are in report_text.c, plots in
 * report_plots.c.
 * summary.json + metrics.tsv are the source of truth: everything else can be re-rendered from them
 * (mla_rep_render), so a report can be restyled without rerunning a suite. */
#include "report_internal.h"

#include "mlacheck/buildinfo.h"
#include "mlacheck/fileio.h"
#include "mlacheck/metrics.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef MLA_HAVE_GPU
#include "mla_gpu.h"
#endif

const char *const mla_rep_verdict_names[3] = {"pass", "fail", "skip"};

static char *dup0(const char *s) { return strdup(s ? s : ""); }

/* ---- run object ------------------------------------------------------------------------------ */

/* The run owns the strings of its rows (copies made by mla_rep_add_metric). */
static void row_clear(rep_row *w)
{
    free((char *)w->case_name); free((char *)w->check); free((char *)w->profile); free((char *)w->path);
    free((char *)w->tap); free((char *)w->worst); free((char *)w->why);
}

static void check_clear(rep_check *c)
{
    free(c->case_name); free(c->check); free(c->profile); free(c->path);
    free(c->message); free(c->first_tap); free(c->worst);
}

void mla_rep_free(mla_rep_run *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_rows; i++) row_clear(&r->rows[i]);
    for (size_t i = 0; i < r->n_checks; i++) check_clear(&r->checks[i]);
    for (size_t i = 0; i < r->n_inputs; i++) {
        free(r->inputs[i]);
        free(r->input_texts[i]);
    }
    free(r->inputs); free(r->input_texts);
    for (size_t i = 0; i < r->n_input_files; i++) {
        unlink(r->input_files[i]); /* still there only when finish did not run */
        free(r->input_files[i]);
        free(r->input_file_names[i]);
    }
    free(r->input_files); free(r->input_file_names);
    for (size_t i = 0; i < r->n_props; i++) {
        free(r->props[i].key);
        free(r->props[i].value);
    }
    free(r->props);
    free(r->rows); free(r->checks); free(r->kl);
    free(r->results_dir); free(r->suite); free(r->run_id); free(r->git_sha); free(r->created);
    free(r->incomplete);
    free(r);
}

mla_status mla_rep_set_incomplete(mla_rep_run *r, const char *why)
{
    char *d = why ? strdup(why) : NULL;
    if (why && !d) return MLA_ERR_NOMEM;
    free(r->incomplete);
    r->incomplete = d;
    return MLA_OK;
}

static mla_status mkdir_p(const char *dir)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return mla_errorf(MLA_ERR_INVALID, "%s: results path too long", dir);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return mla_errorf(MLA_ERR_IO, "%s: cannot create folder: %s", buf, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return mla_errorf(MLA_ERR_IO, "%s: not a folder", dir);
    return MLA_OK;
}

static unsigned random16(void)
{
    uint16_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint16_t)(ts.tv_nsec ^ (long)getpid() * 2654435761u);
    }
    return v;
}

/* ---- provenance ------------------------------------------------------------------------------ */

static rep_prop *prop_find(const mla_rep_run *r, const char *key)
{
    for (size_t i = 0; i < r->n_props; i++)
        if (!strcmp(r->props[i].key, key)) return &r->props[i];
    return NULL;
}

const char *mla_rep_prop(const mla_rep_run *r, const char *key)
{
    const rep_prop *p = r ? prop_find(r, key) : NULL;
    return p ? p->value : "";
}

/* Replaces key's value (adds the key when new). */
static mla_status prop_set(mla_rep_run *r, const char *key, const char *value)
{
    rep_prop *p = prop_find(r, key);
    char *v = strdup(value ? value : "");
    if (!v) return MLA_ERR_NOMEM;
    if (p) {
        free(p->value);
        p->value = v;
        return MLA_OK;
    }
    rep_prop *np = realloc(r->props, (r->n_props + 1) * sizeof *np);
    char *k = strdup(key);
    if (!np || !k) {
        if (np) r->props = np;
        free(v);
        free(k);
        return MLA_ERR_NOMEM;
    }
    r->props = np;
    r->props[r->n_props++] = (rep_prop){k, v};
    return MLA_OK;
}

mla_status mla_rep_add_prop(mla_rep_run *r, const char *key, const char *value)
{
    if (!r || !key || !*key) return mla_errorf(MLA_ERR_INVALID, "mla_rep_add_prop: NULL run or empty key");
    for (const char *c = key; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '.'))
            return mla_errorf(MLA_ERR_INVALID, "provenance key '%s': expected letters, digits, '_' or '.'", key);
    if (!value || !*value) return MLA_OK;
    rep_prop *p = prop_find(r, key);
    if (p) {
        /* already there as one of the ", "-separated values? */
        size_t n = strlen(value);
        for (const char *q = p->value; (q = strstr(q, value)) != NULL; q += n)
            if ((q == p->value || (q >= p->value + 2 && q[-2] == ',' && q[-1] == ' ')) && (q[n] == '\0' || q[n] == ','))
                return MLA_OK;
        size_t len = strlen(p->value) + 2 + n + 1;
        char *v = malloc(len);
        if (!v) return MLA_ERR_NOMEM;
        snprintf(v, len, "%s%s%s", p->value, *p->value ? ", " : "", value);
        free(p->value);
        p->value = v;
    } else if (prop_set(r, key, value)) {
        return MLA_ERR_NOMEM;
    }
#ifdef MLA_HAVE_GPU
    if (!strcmp(key, "engine") && !strcmp(value, "gpu") && !*mla_rep_prop(r, "device")) {
        char desc[256];
        if (mla_gpu_probe(desc, sizeof desc) == MLA_OK) return prop_set(r, "device", desc);
    }
#endif
    return MLA_OK;
}

/* What every run knows about itself: the git id, the compiler, the BLAS and HDF5 libraries. */
static int default_props(mla_rep_run *r)
{
    return prop_set(r, "git", r->git_sha) || prop_set(r, "compiler", mla_build_compiler()) ||
           prop_set(r, "blas", mla_build_blas()) || prop_set(r, "hdf5", mla_build_hdf5());
}

mla_status mla_rep_new(const char *results_dir, const char *suite_name, mla_rep_run **out)
{
    if (!results_dir || !out) return mla_errorf(MLA_ERR_INVALID, "mla_rep_new: NULL argument");
    mla_status st = mkdir_p(results_dir);
    if (st != MLA_OK) return st;
    mla_rep_run *r = calloc(1, sizeof *r);
    if (!r) return MLA_ERR_NOMEM;
    /* The suite name becomes part of a folder name: keep it to safe characters. */
    char safe[64];
    const char *s = suite_name && *suite_name ? suite_name : "run";
    size_t k = 0;
    for (; *s && k < sizeof safe - 1; s++) {
        char c = *s;
        safe[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ? c : '-';
    }
    safe[k] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char stamp[32], created[32], id[128];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(id, sizeof id, "%s-%s-%04x", stamp, safe, random16());
    const char *sha = getenv("MLA_GIT_SHA");
    if (!sha || !*sha) sha = getenv("GITHUB_SHA");
    if (!sha || !*sha) sha = mla_build_git_id();
    r->results_dir = strdup(results_dir);
    r->suite = dup0(suite_name);
    r->run_id = strdup(id);
    r->created = strdup(created);
    r->git_sha = strdup(sha && *sha ? sha : "unknown");
    if (!r->results_dir || !r->suite || !r->run_id || !r->created || !r->git_sha || default_props(r)) {
        mla_rep_free(r);
        return MLA_ERR_NOMEM;
    }
    *out = r;
    return MLA_OK;
}

const char *mla_rep_run_id(const mla_rep_run *r) { return r ? r->run_id : ""; }
const char *mla_rep_note(const mla_rep_run *r) { return r ? r->note : ""; }

mla_status mla_rep_set_git_sha(mla_rep_run *r, const char *sha)
{
    char *d = dup0(sha);
    if (!d) return MLA_ERR_NOMEM;
    free(r->git_sha);
    r->git_sha = d;
    return prop_set(r, "git", d);
}

static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    void *nv = realloc(*v, nc * elem);
    if (!nv) return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

mla_status mla_rep_add_metric(mla_rep_run *r, const mla_rep_row *in)
{
    if (!r || !in) return mla_errorf(MLA_ERR_INVALID, "mla_rep_add_metric: NULL argument");
    if (grow((void **)&r->rows, &r->cap_rows, r->n_rows, sizeof *r->rows)) return MLA_ERR_NOMEM;
    rep_row *w = &r->rows[r->n_rows];
    *w = *in; /* the numbers; the strings are replaced by the run's own copies */
    w->case_name = dup0(in->case_name); w->check = dup0(in->check); w->profile = dup0(in->profile);
    w->path = dup0(in->path); w->tap = dup0(in->tap); w->why = dup0(in->why);
    w->worst = dup0(in->worst ? in->worst : "rel_l2");
    if (!w->case_name || !w->check || !w->profile || !w->path || !w->tap || !w->why || !w->worst) {
        row_clear(w);
        return MLA_ERR_NOMEM;
    }
    w->pass = in->pass ? 1 : 0;
    r->n_rows++;
    return MLA_OK;
}

mla_status mla_rep_add_check(mla_rep_run *r, const char *case_name, const char *check, const char *profile,
                             const char *path, mla_rep_verdict v, const char *message, int first_layer,
                             const char *first_tap)
{
    if (!r) return mla_errorf(MLA_ERR_INVALID, "mla_rep_add_check: NULL run");
    if ((unsigned)v > MLA_REP_SKIP) return mla_errorf(MLA_ERR_INVALID, "mla_rep_add_check: verdict %d; expected pass, fail or skip", (int)v);
    if (grow((void **)&r->checks, &r->cap_checks, r->n_checks, sizeof *r->checks)) return MLA_ERR_NOMEM;
    rep_check *c = &r->checks[r->n_checks];
    memset(c, 0, sizeof *c);
    c->case_name = dup0(case_name); c->check = dup0(check); c->profile = dup0(profile); c->path = dup0(path);
    c->message = dup0(message); c->first_tap = dup0(first_tap); c->worst = dup0("");
    if (!c->case_name || !c->check || !c->profile || !c->path || !c->message || !c->first_tap || !c->worst) {
        check_clear(c);
        return MLA_ERR_NOMEM;
    }
    c->v = v;
    c->first_layer = first_layer;
    c->worst_value = c->headroom = c->seconds = NAN;
    r->n_checks++;
    return MLA_OK;
}

void mla_rep_set_check_seconds(mla_rep_run *r, double seconds)
{
    if (r && r->n_checks) r->checks[r->n_checks - 1].seconds = seconds;
}

mla_status mla_rep_add_kl(mla_rep_run *r, double kl)
{
    if (!r) return mla_errorf(MLA_ERR_INVALID, "mla_rep_add_kl: NULL run");
    if (grow((void **)&r->kl, &r->cap_kl, r->n_kl, sizeof *r->kl)) return MLA_ERR_NOMEM;
    r->kl[r->n_kl++] = kl;
    return MLA_OK;
}

void mla_rep_counts(const mla_rep_run *r, int *pass, int *fail, int *skip)
{
    int c[3] = {0, 0, 0};
    for (size_t i = 0; r && i < r->n_checks; i++) c[r->checks[i].v]++;
    if (pass) *pass = c[0];
    if (fail) *fail = c[1];
    if (skip) *skip = c[2];
}

/* The largest limit use of each check over its metric rows; NaN counts as the largest. */
static void summarize_checks(mla_rep_run *r)
{
    for (size_t i = 0; i < r->n_checks; i++) {
        rep_check *c = &r->checks[i];
        const rep_row *best = NULL;
        for (size_t j = 0; j < r->n_rows; j++) {
            const rep_row *w = &r->rows[j];
            if (strcmp(w->case_name, c->case_name) || strcmp(w->check, c->check) || strcmp(w->profile, c->profile) ||
                strcmp(w->path, c->path))
                continue;
            if (!best || isnan(w->headroom) || (!isnan(best->headroom) && w->headroom > best->headroom)) best = w;
        }
        if (!best) continue;
        char *wn = strdup(best->worst);
        if (wn) {
            free(c->worst);
            c->worst = wn;
        }
        c->worst_value = mla_rep_row_metric(best, best->worst);
        c->headroom = best->headroom;
    }
}

/* ---- escaping -------------------------------------------------------------------------------- */

void mla_rep_xml_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            /* XML 1.0 forbids other control characters even as references. */
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') fputs("&#xFFFD;", f);
            else fputc(c, f);
        }
    }
}

void mla_rep_md_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '|') fputs("\\|", f);
        else if (c == '<') fputs("&lt;", f);
        else if (c == '>') fputs("&gt;", f);
        else if (c == '&') fputs("&amp;", f);
        else if (c < 0x20) fputc(' ', f);
        else fputc(c, f);
    }
}

/* ---- summary.json ---------------------------------------------------------------------------- */

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }

json_t *mla_rep_check_to_json(const rep_check *c)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:i,s:s,s:o}", "case", c->case_name, "check", c->check,
                     "profile", c->profile, "path", c->path, "verdict", mla_rep_verdict_names[c->v], "message",
                     c->message, "worst_metric", c->worst, "worst_value", jnum(c->worst_value), "limit_use",
                     jnum(c->headroom), "first_layer", c->first_layer, "first_tap", c->first_tap, "seconds",
                     jnum(c->seconds));
}

int mla_rep_n_cases(const mla_rep_run *r)
{
    int n = 0;
    for (size_t i = 0; i < r->n_checks; i++) {
        size_t j = 0;
        while (j < i && strcmp(r->checks[j].case_name, r->checks[i].case_name) != 0) j++;
        n += j == i;
    }
    return n;
}

static mla_status write_json(const mla_rep_run *r, const char *dir)
{
    int pass, fail, skip;
    mla_rep_counts(r, &pass, &fail, &skip);
    size_t rows_failed = 0;
    for (size_t i = 0; i < r->n_rows; i++) rows_failed += !r->rows[i].pass;
    json_t *root = json_object(), *checks = json_array(), *kl = json_array();
    if (!root || !checks || !kl) goto nomem;
    /* 2: "limit_use" replaced "headroom", "provenance" and per-check "seconds" added */
    json_object_set_new(root, "schema_version", json_integer(2));
    json_object_set_new(root, "run_id", json_string(r->run_id));
    json_object_set_new(root, "suite", json_string(r->suite));
    json_object_set_new(root, "git_sha", json_string(r->git_sha));
    json_object_set_new(root, "created", json_string(r->created));
    json_object_set_new(root, "wall_seconds", jnum(r->wall));
    /* an interrupted run is never read as a pass: its verdict is "incomplete" whatever it held */
    json_object_set_new(root, "verdict", json_string(r->incomplete ? "incomplete" : fail ? "fail" : "pass"));
    json_object_set_new(root, "complete", json_boolean(!r->incomplete));
    if (r->incomplete) json_object_set_new(root, "incomplete", json_string(r->incomplete));
    json_object_set_new(root, "counts", json_pack("{s:i,s:i,s:i,s:i,s:i,s:I,s:I}", "checks", (int)r->n_checks,
                                                  "pass", pass, "fail", fail, "skip", skip, "cases", mla_rep_n_cases(r),
                                                  "metrics", (json_int_t)r->n_rows, "metrics_failed", (json_int_t)rows_failed));
    json_object_set_new(root, "note", json_string(r->note));
    json_t *prov = json_object();
    if (!prov) goto nomem;
    for (size_t i = 0; i < r->n_props; i++) json_object_set_new(prov, r->props[i].key, json_string(r->props[i].value));
    json_object_set_new(root, "provenance", prov);
    for (size_t i = 0; i < r->n_checks; i++) {
        json_t *o = mla_rep_check_to_json(&r->checks[i]);
        if (!o || json_array_append_new(checks, o)) goto nomem;
    }
    for (size_t i = 0; i < r->n_kl; i++)
        if (json_array_append_new(kl, jnum(r->kl[i]))) goto nomem;
    json_object_set_new(root, "checks", checks);
    json_object_set_new(root, "logits_kl", kl);
    checks = kl = NULL;
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/summary.json", dir)) {
        json_decref(root);
        return MLA_ERR_INVALID;
    }
    if (json_dump_file(root, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0) {
        json_decref(root);
        return mla_errorf(MLA_ERR_IO, "%s: cannot write", path);
    }
    json_decref(root);
    return MLA_OK;
nomem:
    json_decref(root);
    json_decref(checks);
    json_decref(kl);
    return mla_errorf(MLA_ERR_NOMEM, "summary.json: out of memory");
}

/* ---- metrics.tsv ----------------------------------------------------------------------------- */

static mla_status write_tsv(const mla_rep_run *r, const char *dir)
{
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/metrics.tsv", dir)) return MLA_ERR_INVALID;
    return mla_metrics_write(path, r->rows, r->n_rows);
}

/* limits.tsv: the rule limits of each metrics.tsv row, line for line (0: not checked), so that a
 * re-render draws the same limit lines; metrics.tsv keeps its columns. */
#define LIMITS_HEADER "lim_max_abs\tlim_max_rel\tlim_cos_diff\tlim_rel_l2\tlim_ulp_p99"

static mla_status write_limits(const mla_rep_run *r, const char *dir)
{
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/limits.tsv", dir)) return MLA_ERR_INVALID;
    FILE *f = fopen(path, "w");
    if (!f) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    fputs(LIMITS_HEADER "\n", f);
    for (size_t i = 0; i < r->n_rows; i++) {
        const rep_row *w = &r->rows[i];
        fprintf(f, "%.17g\t%.17g\t%.17g\t%.17g\t%.17g\n", w->lim_max_abs, w->lim_max_rel, w->lim_cos_diff,
                w->lim_rel_l2, w->lim_ulp_p99);
    }
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    return MLA_OK;
}

/* Reads limits.tsv into the rows when it is there and has one line per row (older folders have
 * none: their plots draw no limits). Errors: MLA_ERR_FORMAT naming path:line. */
static mla_status load_limits(mla_rep_run *r, const char *dir)
{
    char path[4200], line[512];
    if (mla_rep_pathf(path, sizeof path, "%s/limits.tsv", dir)) return MLA_ERR_INVALID;
    FILE *f = fopen(path, "r");
    if (!f) return MLA_OK;
    mla_status st = MLA_OK;
    size_t i = 0;
    int ln = 0;
    while (!st && fgets(line, sizeof line, f)) {
        if (++ln == 1) {
            if (strncmp(line, LIMITS_HEADER, strlen(LIMITS_HEADER)))
                st = mla_errorf(MLA_ERR_FORMAT, "%s:1: expected the header %s", path, LIMITS_HEADER);
            continue;
        }
        double v[5];
        if (i >= r->n_rows || sscanf(line, "%lf %lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3], &v[4]) != 5) {
            st = mla_errorf(MLA_ERR_FORMAT, "%s:%d: expected 5 numbers for metrics.tsv row %zu of %zu", path, ln, i + 1,
                            r->n_rows);
            break;
        }
        rep_row *w = &r->rows[i++];
        w->lim_max_abs = v[0], w->lim_max_rel = v[1], w->lim_cos_diff = v[2], w->lim_rel_l2 = v[3], w->lim_ulp_p99 = v[4];
    }
    fclose(f);
    if (!st && i != r->n_rows)
        st = mla_errorf(MLA_ERR_FORMAT, "%s: %zu rows; metrics.tsv has %zu", path, i, r->n_rows);
    return st;
}

/* ---- finish / render ------------------------------------------------------------------------- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    remove(p);
    return 0;
}

static mla_status render(mla_rep_run *r, const char *dir, int with_junit)
{
    char note[512] = "";
    mla_status st = mla_rep_write_plots(r, dir, note, sizeof note);
    if (st != MLA_OK) return st;
    snprintf(r->note, sizeof r->note, "%s", note);
    if ((st = mla_rep_write_md(r, dir)) != MLA_OK) return st;
    if (with_junit && (st = mla_rep_write_junit(r, dir)) != MLA_OK) return st;
    return mla_rep_write_html(r, dir);
}

mla_status mla_rep_add_input(mla_rep_run *r, const char *name, const char *text)
{
    for (size_t i = 0; i < r->n_inputs; i++)
        if (!strcmp(r->inputs[i], name)) return MLA_OK; /* first failure of a case is enough */
    char **a = realloc(r->inputs, (r->n_inputs + 1) * sizeof *a);
    if (!a) return mla_errorf(MLA_ERR_NOMEM, "report: failing inputs");
    r->inputs = a;
    char **b = realloc(r->input_texts, (r->n_inputs + 1) * sizeof *b);
    if (!b) return mla_errorf(MLA_ERR_NOMEM, "report: failing inputs");
    r->input_texts = b;
    r->inputs[r->n_inputs] = strdup(name);
    r->input_texts[r->n_inputs] = strdup(text);
    if (!r->inputs[r->n_inputs] || !r->input_texts[r->n_inputs]) return mla_errorf(MLA_ERR_NOMEM, "report: inputs");
    r->n_inputs++;
    return MLA_OK;
}

mla_status mla_rep_add_input_file(mla_rep_run *r, const char *name, const char *src)
{
    char **a = realloc(r->input_files, (r->n_input_files + 1) * sizeof *a);
    if (!a) return mla_errorf(MLA_ERR_NOMEM, "report: failing inputs");
    r->input_files = a;
    char **b = realloc(r->input_file_names, (r->n_input_files + 1) * sizeof *b);
    if (!b) return mla_errorf(MLA_ERR_NOMEM, "report: failing inputs");
    r->input_file_names = b;
    r->input_files[r->n_input_files] = strdup(src);
    r->input_file_names[r->n_input_files] = strdup(name);
    if (!r->input_files[r->n_input_files] || !r->input_file_names[r->n_input_files])
        return mla_errorf(MLA_ERR_NOMEM, "report: inputs");
    r->n_input_files++;
    return MLA_OK;
}

static mla_status write_inputs(const mla_rep_run *r, const char *dir)
{
    if (!r->n_inputs && !r->n_input_files) return MLA_OK;
    char path[4400];
    if (mla_rep_pathf(path, sizeof path, "%s/failures", dir)) return MLA_ERR_INVALID;
    if (mkdir(path, 0755) != 0) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    for (size_t i = 0; i < r->n_input_files; i++) {
        if (mla_rep_pathf(path, sizeof path, "%s/failures/%s", dir, r->input_file_names[i])) return MLA_ERR_INVALID;
        mla_status st = mla_fio_move(r->input_files[i], path); /* EXDEV (/tmp to results/): copy + unlink */
        if (st) return st;
    }
    for (size_t i = 0; i < r->n_inputs; i++) {
        if (mla_rep_pathf(path, sizeof path, "%s/failures/%s.txt", dir, r->inputs[i])) return MLA_ERR_INVALID;
        FILE *f = fopen(path, "w");
        if (!f) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        fputs(r->input_texts[i], f);
        if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    }
    return MLA_OK;
}

/* Every entry of folder src renamed into dst (replacing what has its name), then src removed. */
static mla_status move_entries(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    if (!d) return mla_errorf(MLA_ERR_IO, "%s: cannot read: %s", src, strerror(errno));
    mla_status st = MLA_OK;
    struct dirent *e;
    char a[4400], b[4400];
    while (st == MLA_OK && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (mla_rep_pathf(a, sizeof a, "%s/%s", src, e->d_name) || mla_rep_pathf(b, sizeof b, "%s/%s", dst, e->d_name)) {
            st = MLA_ERR_INVALID;
            break;
        }
        struct stat sb;
        if (lstat(b, &sb) == 0 && S_ISDIR(sb.st_mode)) nftw(b, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        if (rename(a, b) != 0) st = mla_errorf(MLA_ERR_IO, "%s: cannot rename to %s: %s", a, b, strerror(errno));
    }
    closedir(d);
    if (st == MLA_OK && rmdir(src) != 0) st = mla_errorf(MLA_ERR_IO, "%s: cannot remove: %s", src, strerror(errno));
    return st;
}

mla_status mla_rep_finish(mla_rep_run *r, double wall_seconds, char *out_dir, size_t n)
{
    if (!r) return mla_errorf(MLA_ERR_INVALID, "mla_rep_finish: NULL run");
    r->wall = wall_seconds;
    summarize_checks(r);
    if (gethostname(r->hostname, sizeof r->hostname - 1) != 0 || !*r->hostname) snprintf(r->hostname, sizeof r->hostname, "unknown");
    if (prop_set(r, "host", r->hostname)) return mla_errorf(MLA_ERR_NOMEM, "report: provenance");
    char tmp[4200], final[4200];
    if (mla_rep_pathf(final, sizeof final, "%s/%s", r->results_dir, r->run_id) ||
        mla_rep_pathf(tmp, sizeof tmp, "%s/%s.tmp-XXXXXX", r->results_dir, r->run_id))
        return MLA_ERR_INVALID;
    if (!mkdtemp(tmp)) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    chmod(tmp, 0755); /* mkdtemp makes it 0700; results are meant to be read */
    mla_status st = render(r, tmp, 1); /* plots first: the note they leave goes into the JSON */
    if (st == MLA_OK) st = write_tsv(r, tmp);
    if (st == MLA_OK) st = write_limits(r, tmp);
    if (st == MLA_OK) st = write_json(r, tmp);
    if (st == MLA_OK) st = write_inputs(r, tmp);
    if (st == MLA_OK && rename(tmp, final) != 0) {
        /* the run folder exists when a journal (journal.c) kept it during the run: the files move in */
        if (errno == ENOTEMPTY || errno == EEXIST) st = move_entries(tmp, final);
        else st = mla_errorf(MLA_ERR_IO, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
    }
    if (st != MLA_OK) {
        nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return st;
    }
    if (out_dir && n) snprintf(out_dir, n, "%s", final);
    return MLA_OK;
}

/* Loading a run folder back (for mla_rep_render). */

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static double jdbl(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

mla_status mla_rep_check_from_json(mla_rep_run *r, json_t *c, const char *where, size_t i)
{
    const char *v = jstr(c, "verdict");
    int vi = strcmp(v, "pass") == 0 ? 0 : strcmp(v, "fail") == 0 ? 1 : strcmp(v, "skip") == 0 ? 2 : -1;
    if (vi < 0) return mla_errorf(MLA_ERR_FORMAT, "%s: checks[%zu].verdict '%s'; expected pass, fail or skip", where, i, v);
    json_t *fl = json_object_get(c, "first_layer");
    mla_status st = mla_rep_add_check(r, jstr(c, "case"), jstr(c, "check"), jstr(c, "profile"), jstr(c, "path"),
                                      (mla_rep_verdict)vi, jstr(c, "message"),
                                      json_is_integer(fl) ? (int)json_integer_value(fl) : -1, jstr(c, "first_tap"));
    if (st != MLA_OK) return st;
    rep_check *rc = &r->checks[r->n_checks - 1];
    char *wn = strdup(jstr(c, "worst_metric"));
    if (!wn) return MLA_ERR_NOMEM;
    free(rc->worst);
    rc->worst = wn;
    rc->worst_value = jdbl(c, "worst_value");
    /* schema 1 folders call the limit use "headroom" */
    rc->headroom = json_object_get(c, "limit_use") ? jdbl(c, "limit_use") : jdbl(c, "headroom");
    rc->seconds = jdbl(c, "seconds");
    return MLA_OK;
}

static mla_status load_tsv(mla_rep_run *r, const char *path)
{
    mla_metrics m;
    mla_status st = mla_metrics_load(path, &m);
    for (size_t i = 0; !st && i < m.n_rows; i++) st = mla_rep_add_metric(r, &m.rows[i]);
    mla_metrics_free(&m);
    return st;
}

mla_status mla_rep_render(const char *dir, char *note, size_t n)
{
    if (!dir) return mla_errorf(MLA_ERR_INVALID, "mla_rep_render: NULL folder");
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/summary.json", dir)) return MLA_ERR_INVALID;
    if (access(path, R_OK) != 0)
        return mla_errorf(MLA_ERR_NOT_FOUND, "%s: cannot read (%s); expected a results folder", path, strerror(errno));
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) return mla_errorf(MLA_ERR_FORMAT, "%s:%d: %s", path, jerr.line, jerr.text);
    mla_status st = MLA_OK;
    mla_rep_run *r = calloc(1, sizeof *r);
    if (!r) {
        json_decref(root);
        return MLA_ERR_NOMEM;
    }
    json_t *checks = json_object_get(root, "checks");
    if (!json_is_object(root) || !json_is_array(checks) || !json_is_string(json_object_get(root, "run_id")))
        st = mla_errorf(MLA_ERR_FORMAT, "%s: expected an object with run_id and a checks array", path);
    r->results_dir = strdup(dir);
    r->suite = strdup(jstr(root, "suite"));
    r->run_id = strdup(jstr(root, "run_id"));
    r->git_sha = strdup(jstr(root, "git_sha"));
    r->created = strdup(jstr(root, "created"));
    r->wall = jdbl(root, "wall_seconds");
    if (!r->results_dir || !r->suite || !r->run_id || !r->git_sha || !r->created) st = MLA_ERR_NOMEM;
    size_t i;
    json_t *c;
    if (st == MLA_OK) json_array_foreach(checks, i, c) {
        if ((st = mla_rep_check_from_json(r, c, path, i)) != MLA_OK) break;
    }
    const char *inc = json_string_value(json_object_get(root, "incomplete"));
    if (st == MLA_OK && inc) st = mla_rep_set_incomplete(r, inc);
    json_t *prov = json_object_get(root, "provenance"), *pv;
    const char *pk;
    if (st == MLA_OK && json_is_object(prov)) json_object_foreach(prov, pk, pv) {
        if (json_is_string(pv) && (st = prop_set(r, pk, json_string_value(pv))) != MLA_OK) break;
    }
    if (st == MLA_OK && !*mla_rep_prop(r, "git") && prop_set(r, "git", r->git_sha)) st = MLA_ERR_NOMEM;
    snprintf(r->hostname, sizeof r->hostname, "%s", *mla_rep_prop(r, "host") ? mla_rep_prop(r, "host") : "unknown");
    json_t *kl = json_object_get(root, "logits_kl"), *k;
    if (st == MLA_OK && json_is_array(kl)) json_array_foreach(kl, i, k) {
        if ((st = mla_rep_add_kl(r, json_is_number(k) ? json_number_value(k) : NAN)) != MLA_OK) break;
    }
    json_decref(root);
    if (st == MLA_OK && mla_rep_pathf(path, sizeof path, "%s/metrics.tsv", dir)) st = MLA_ERR_INVALID;
    if (st == MLA_OK) st = load_tsv(r, path);
    if (st == MLA_OK) st = load_limits(r, dir);
    if (st == MLA_OK) st = render(r, dir, 0);
    if (st == MLA_OK && note && n) snprintf(note, n, "%s", r->note);
    mla_rep_free(r);
    return st;
}
