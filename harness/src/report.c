/* report.c: the run object, the atomic results folder, and the text outputs
 * (summary.json, metrics.tsv, summary.md, junit.xml, index.html). Plots are in report_plots.c.
 * summary.json + metrics.tsv are the source of truth: everything else can be re-rendered from them
 * (mla_rep_render), so a report can be restyled without rerunning a suite. */
#include "report_internal.h"

#include "mlacheck/buildinfo.h"
#include "mlacheck/fileio.h"
#include "mlacheck/metrics.h"

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

#define MD_MAX_ROWS 500 /* GitHub step summaries are capped at 1 MiB */

static const char *const verdict_names[] = {"pass", "fail", "skip"};

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
    free(r);
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

static int n_cases(const mla_rep_run *r)
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
    json_object_set_new(root, "verdict", json_string(fail ? "fail" : "pass"));
    json_object_set_new(root, "counts", json_pack("{s:i,s:i,s:i,s:i,s:i,s:I,s:I}", "checks", (int)r->n_checks,
                                                  "pass", pass, "fail", fail, "skip", skip, "cases", n_cases(r),
                                                  "metrics", (json_int_t)r->n_rows, "metrics_failed", (json_int_t)rows_failed));
    json_object_set_new(root, "note", json_string(r->note));
    json_t *prov = json_object();
    if (!prov) goto nomem;
    for (size_t i = 0; i < r->n_props; i++) json_object_set_new(prov, r->props[i].key, json_string(r->props[i].value));
    json_object_set_new(root, "provenance", prov);
    for (size_t i = 0; i < r->n_checks; i++) {
        const rep_check *c = &r->checks[i];
        json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:i,s:s,s:o}", "case", c->case_name, "check", c->check,
                              "profile", c->profile, "path", c->path, "verdict", verdict_names[c->v], "message",
                              c->message, "worst_metric", c->worst, "worst_value", jnum(c->worst_value), "limit_use",
                              jnum(c->headroom), "first_layer", c->first_layer, "first_tap", c->first_tap, "seconds",
                              jnum(c->seconds));
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

/* ---- failures grouped by first divergence ---------------------------------------------------- */

/* The root-cause key of a failing check: its first divergence (layer and tap), or for a failure
 * that names none (an error) its message, so one cause makes one group. */
static void group_key(const rep_check *c, char *out, size_t n)
{
    if (c->first_layer >= 0 && *c->first_tap) snprintf(out, n, "layer %d tap %s", c->first_layer, c->first_tap);
    else if (*c->first_tap) snprintf(out, n, "tap %s", c->first_tap);
    else snprintf(out, n, "%.160s", *c->message ? c->message : "no divergence located");
}

/* Failing checks in groups: order[] holds check indices group by group (groups in order of first
 * appearance), start[g] the first index of group g in order[], *n_groups. Caller frees both. */
static int failure_groups(const mla_rep_run *r, size_t **order_out, size_t **start_out, size_t *n_groups)
{
    size_t *order = malloc((r->n_checks + 1) * sizeof *order), *start = malloc((r->n_checks + 2) * sizeof *start);
    if (!order || !start) {
        free(order);
        free(start);
        return -1;
    }
    size_t k = 0, g = 0;
    char ki[200], kj[200];
    for (size_t i = 0; i < r->n_checks; i++) {
        if (r->checks[i].v != MLA_REP_FAIL) continue;
        group_key(&r->checks[i], ki, sizeof ki);
        int seen = 0; /* this key's group already emitted? */
        for (size_t q = 0; q < k && !seen; q++) {
            group_key(&r->checks[order[q]], kj, sizeof kj);
            seen = !strcmp(ki, kj);
        }
        if (seen) continue;
        start[g++] = k;
        for (size_t j = i; j < r->n_checks; j++) {
            if (r->checks[j].v != MLA_REP_FAIL) continue;
            group_key(&r->checks[j], kj, sizeof kj);
            if (!strcmp(ki, kj)) order[k++] = j;
        }
    }
    start[g] = k;
    *order_out = order;
    *start_out = start;
    *n_groups = g;
    return 0;
}

/* ---- summary.md ------------------------------------------------------------------------------ */

static void fmt_g(char *buf, size_t n, double x)
{
    if (isnan(x)) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.3g", x);
}

static void md_check_row(FILE *f, const rep_check *c, int with_detail)
{
    char wv[32], hr[32];
    fmt_g(wv, sizeof wv, c->worst_value);
    fmt_g(hr, sizeof hr, c->headroom);
    fputs("| ", f); mla_rep_md_escape(f, c->case_name);
    fputs(" | ", f); mla_rep_md_escape(f, c->check);
    fputs(" | ", f); mla_rep_md_escape(f, c->profile);
    fputs(" | ", f); mla_rep_md_escape(f, c->path);
    fprintf(f, " | %s | ", c->v == MLA_REP_PASS ? "pass" : c->v == MLA_REP_FAIL ? "**FAIL**" : "skip");
    if (*c->worst) { mla_rep_md_escape(f, c->worst); fprintf(f, " %s", wv); }
    fprintf(f, " | %s |", hr);
    if (with_detail) {
        fputc(' ', f);
        mla_rep_md_escape(f, c->message);
        fputs(" |", f);
    }
    fputc('\n', f);
}

#define LIMIT_USE_DEF "limit use = measured / limit of the metric nearest its limit (0 exact, 1 at the limit, above 1 fails)"

static mla_status write_md(const mla_rep_run *r, const char *dir)
{
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/summary.md", dir)) return MLA_ERR_INVALID;
    size_t *order = NULL, *start = NULL, ng = 0;
    if (failure_groups(r, &order, &start, &ng)) return mla_errorf(MLA_ERR_NOMEM, "summary.md: out of memory");
    FILE *f = fopen(path, "w");
    if (!f) {
        free(order);
        free(start);
        return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    int pass, fail, skip;
    mla_rep_counts(r, &pass, &fail, &skip);
    fprintf(f, "## mlacheck %s: %s\n\n", r->suite, fail ? "FAIL" : "PASS");
    fprintf(f, "%s**%d failed**, %d passed, %d skipped of %zu checks in %d cases; %zu tensors compared; wall %.1f s; "
               "git `%s`; run `%s`\n\n",
            fail ? ":x: " : ":white_check_mark: ", fail, pass, skip, r->n_checks, n_cases(r), r->n_rows, r->wall,
            r->git_sha, r->run_id);
    if (*r->note) {
        fputs("> ", f);
        mla_rep_md_escape(f, r->note);
        fputs("\n\n", f);
    }
    fputs("| provenance | |\n|---|---|\n", f);
    for (size_t i = 0; i < r->n_props; i++) {
        fputs("| ", f);
        mla_rep_md_escape(f, r->props[i].key);
        fputs(" | ", f);
        mla_rep_md_escape(f, r->props[i].value);
        fputs(" |\n", f);
    }
    fputc('\n', f);
    if (fail) {
        fprintf(f, "### Failures by first divergence: %zu cause%s, %d failing checks\n\n", ng, ng == 1 ? "" : "s", fail);
        char key[200];
        for (size_t g = 0; g < ng; g++) {
            group_key(&r->checks[order[start[g]]], key, sizeof key);
            size_t n = start[g + 1] - start[g];
            fprintf(f, "#### %zu. ", g + 1);
            mla_rep_md_escape(f, key);
            fprintf(f, " (%zu check%s)\n\n| case | check | profile | path | result | worst | limit use | message |\n"
                       "|---|---|---|---|---|---|---|---|\n", n, n == 1 ? "" : "s");
            for (size_t q = start[g]; q < start[g + 1]; q++) md_check_row(f, &r->checks[order[q]], 1);
            fputc('\n', f);
        }
    }
    fprintf(f, "<details><summary>All checks (%zu)</summary>\n\n| case | check | profile | path | result | worst | limit use |\n"
               "|---|---|---|---|---|---|---|\n", r->n_checks);
    for (size_t i = 0; i < r->n_checks && i < MD_MAX_ROWS; i++) md_check_row(f, &r->checks[i], 0);
    if (r->n_checks > MD_MAX_ROWS) fprintf(f, "\n%zu more checks in summary.json\n", r->n_checks - MD_MAX_ROWS);
    fputs("\n</details>\n\n" LIMIT_USE_DEF ".\n", f);
    free(order);
    free(start);
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    return MLA_OK;
}

/* ---- junit.xml ------------------------------------------------------------------------------- */

/* One line of s (newlines and tabs as spaces), escaped. */
static void xml_line(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        char c = *s == '\n' || *s == '\r' || *s == '\t' ? ' ' : *s;
        char one[2] = {c, 0};
        mla_rep_xml_escape(f, one);
    }
}

static void xml_prop(FILE *f, const char *name, const char *value)
{
    fputs("      <property name=\"", f);
    mla_rep_xml_escape(f, name);
    fputs("\" value=\"", f);
    xml_line(f, value);
    fputs("\"/>\n", f);
}

/* The failure's type attribute: what kind of failure, for reporters that group by it. */
static const char *failure_type(const rep_check *c)
{
    if (!strncmp(c->message, "error:", 6)) return "error";
    if (*c->first_tap) return "divergence";
    return "failure";
}

static double secs0(double s) { return isfinite(s) && s > 0 ? s : 0.0; }

static mla_status write_junit(const mla_rep_run *r, const char *dir)
{
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/junit.xml", dir)) return MLA_ERR_INVALID;
    FILE *f = fopen(path, "w");
    if (!f) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    int pass, fail, skip;
    mla_rep_counts(r, &pass, &fail, &skip);
    /* The JUnit schema's timestamp is ISO 8601 without a zone: ours is UTC. */
    char stamp[32];
    snprintf(stamp, sizeof stamp, "%.19s", r->created);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mlacheck ", f);
    mla_rep_xml_escape(f, r->suite);
    fprintf(f, "\" tests=\"%zu\" failures=\"%d\" skipped=\"%d\" errors=\"0\" time=\"%.3f\" timestamp=\"%s\">\n",
            r->n_checks, fail, skip, secs0(r->wall), stamp);
    /* One testsuite per case, in order of first appearance. */
    int id = 0;
    for (size_t i = 0; i < r->n_checks; i++) {
        const char *cname = r->checks[i].case_name;
        size_t j = 0;
        while (j < i && strcmp(r->checks[j].case_name, cname) != 0) j++;
        if (j < i) continue;
        int t = 0, cf = 0, cs = 0;
        double secs = 0;
        char profiles[256] = "";
        for (size_t k = i; k < r->n_checks; k++)
            if (strcmp(r->checks[k].case_name, cname) == 0) {
                t++;
                cf += r->checks[k].v == MLA_REP_FAIL;
                cs += r->checks[k].v == MLA_REP_SKIP;
                secs += secs0(r->checks[k].seconds);
                const char *pf = r->checks[k].profile;
                size_t pl = strlen(profiles), n = strlen(pf);
                int have = 0;
                for (const char *q = profiles; (q = strstr(q, pf)) != NULL; q += n)
                    have |= (q == profiles || q[-1] == ' ') && (q[n] == '\0' || q[n] == ',');
                if (!have && strcmp(pf, "-") && pl + n + 3 < sizeof profiles)
                    snprintf(profiles + pl, sizeof profiles - pl, "%s%s", pl ? ", " : "", pf);
            }
        fputs("  <testsuite name=\"", f);
        mla_rep_xml_escape(f, cname);
        fprintf(f, "\" id=\"%d\" package=\"", id++);
        mla_rep_xml_escape(f, r->suite);
        fputs("\" hostname=\"", f);
        mla_rep_xml_escape(f, r->hostname);
        fprintf(f, "\" timestamp=\"%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" errors=\"0\" time=\"%.3f\">\n"
                   "    <properties>\n", stamp, t, cf, cs, secs);
        xml_prop(f, "git_sha", r->git_sha);
        xml_prop(f, "run_id", r->run_id);
        xml_prop(f, "profile", profiles);
        for (size_t q = 0; q < r->n_props; q++)
            if (strcmp(r->props[q].key, "git")) xml_prop(f, r->props[q].key, r->props[q].value);
        fputs("    </properties>\n", f);
        for (size_t k = i; k < r->n_checks; k++) {
            const rep_check *c = &r->checks[k];
            if (strcmp(c->case_name, cname) != 0) continue;
            fputs("    <testcase classname=\"", f);
            mla_rep_xml_escape(f, r->suite);
            fputc('.', f);
            mla_rep_xml_escape(f, cname);
            fputs("\" name=\"", f);
            mla_rep_xml_escape(f, c->check);
            fputc('/', f);
            mla_rep_xml_escape(f, c->profile);
            fputc('/', f);
            mla_rep_xml_escape(f, c->path);
            fprintf(f, "\" time=\"%.3f\"", secs0(c->seconds));
            if (c->v == MLA_REP_PASS) {
                fputs("/>\n", f);
                continue;
            }
            if (c->v == MLA_REP_SKIP) {
                fputs(">\n      <skipped message=\"", f);
                xml_line(f, c->message);
                fputs("\"/>\n    </testcase>\n", f);
                continue;
            }
            fprintf(f, ">\n      <failure type=\"%s\" message=\"", failure_type(c));
            xml_line(f, c->message);
            fputs("\">", f);
            fprintf(f, "worst %s = %.6g, limit use %.6g", c->worst, c->worst_value, c->headroom);
            if (c->first_layer >= 0) fprintf(f, "; first diverging: layer %d", c->first_layer);
            if (*c->first_tap) {
                fputs(c->first_layer >= 0 ? " tap " : "; first diverging tap ", f);
                mla_rep_xml_escape(f, c->first_tap);
            }
            /* The failing tensors of this check, in the order of computation. */
            int shown = 0;
            for (size_t q = 0; q < r->n_rows && shown < 20; q++) {
                const rep_row *w = &r->rows[q];
                if (w->pass || strcmp(w->case_name, c->case_name) || strcmp(w->check, c->check) ||
                    strcmp(w->profile, c->profile) || strcmp(w->path, c->path))
                    continue;
                fprintf(f, "\nlayer %d ", w->layer);
                mla_rep_xml_escape(f, w->tap);
                if (w->kv_len >= 0) fprintf(f, " kv_len %d", w->kv_len);
                fprintf(f, ": max_abs %.3g max_rel %.3g nmse %.1f dB cos_diff %.3g rel_l2 %.3g ulp_p99 %.3g limit use %.3g ",
                        w->max_abs, w->max_rel, w->nmse_db, w->cos_diff, w->rel_l2, w->ulp_p99, w->headroom);
                mla_rep_xml_escape(f, w->why);
                shown++;
            }
            fputs("</failure>\n    </testcase>\n", f);
        }
        fputs("    <system-out/>\n    <system-err/>\n  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    return MLA_OK;
}

/* ---- index.html ------------------------------------------------------------------------------ */

static void html_cell(FILE *f, const char *s)
{
    fputs("<td>", f);
    mla_rep_xml_escape(f, s);
    fputs("</td>", f);
}

static void html_check_row(FILE *f, const rep_check *c)
{
    char wv[48], hr[32], fl[128], num[32];
    fmt_g(hr, sizeof hr, c->headroom);
    fmt_g(num, sizeof num, c->worst_value);
    snprintf(wv, sizeof wv, "%s %s", c->worst, *c->worst ? num : "");
    if (c->first_layer >= 0) snprintf(fl, sizeof fl, "layer %d %s", c->first_layer, c->first_tap);
    else snprintf(fl, sizeof fl, "%s", c->first_tap);
    fprintf(f, "<tr class=\"%s\">", verdict_names[c->v]);
    html_cell(f, c->case_name); html_cell(f, c->check); html_cell(f, c->profile); html_cell(f, c->path);
    html_cell(f, verdict_names[c->v]); html_cell(f, wv); html_cell(f, hr); html_cell(f, fl);
    html_cell(f, c->message);
    fputs("</tr>\n", f);
}

#define HTML_CHECK_HEAD "<table><tr><th>case</th><th>check</th><th>profile</th><th>path</th><th>result</th>" \
    "<th>worst</th><th>limit use</th><th>first divergence</th><th>message</th></tr>\n"

static mla_status write_html(const mla_rep_run *r, const char *dir)
{
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/index.html", dir)) return MLA_ERR_INVALID;
    size_t *order = NULL, *start = NULL, ng = 0;
    if (failure_groups(r, &order, &start, &ng)) return mla_errorf(MLA_ERR_NOMEM, "index.html: out of memory");
    FILE *f = fopen(path, "w");
    if (!f) {
        free(order);
        free(start);
        return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    int pass, fail, skip;
    mla_rep_counts(r, &pass, &fail, &skip);
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>mlacheck ", f);
    mla_rep_xml_escape(f, r->run_id);
    /* Plots take the page's width (at least 600 px, at most their 1200 px); a click opens the SVG. */
    fputs("</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}tr.fail{background:#fdd}tr.skip{color:#888}"
          "figure.plot{display:block;margin:1.5em 0}figure.plot img{display:block;width:100%;min-width:600px;"
          "max-width:1200px;border:1px solid #eee}figcaption{font-size:90%;color:#444}</style></head><body>\n<h1>mlacheck ", f);
    mla_rep_xml_escape(f, r->suite);
    fprintf(f, ": %s</h1>\n<p>%d failed, %d passed, %d skipped of %zu checks; %zu tensors compared; wall %.1f s; git <code>",
            fail ? "FAIL" : "PASS", fail, pass, skip, r->n_checks, r->n_rows, r->wall);
    mla_rep_xml_escape(f, r->git_sha);
    fputs("</code>; run <code>", f);
    mla_rep_xml_escape(f, r->run_id);
    fputs("</code>; <a href=\"summary.json\">summary.json</a>, <a href=\"metrics.tsv\">metrics.tsv</a>, "
          "<a href=\"junit.xml\">junit.xml</a>, <a href=\"summary.md\">summary.md</a></p>\n", f);
    if (*r->note) {
        fputs("<p><em>", f);
        mla_rep_xml_escape(f, r->note);
        fputs("</em></p>\n", f);
    }
    fputs("<table class=\"provenance\">", f);
    for (size_t i = 0; i < r->n_props; i++) {
        fputs("<tr><th>", f);
        mla_rep_xml_escape(f, r->props[i].key);
        fputs("</th>", f);
        html_cell(f, r->props[i].value);
        fputs("</tr>", f);
    }
    fputs("</table>\n<p>" LIMIT_USE_DEF ".</p>\n", f);
    if (fail) {
        fprintf(f, "<h2>Failures by first divergence: %zu cause%s, %d failing checks</h2>\n", ng, ng == 1 ? "" : "s", fail);
        char key[200];
        for (size_t g = 0; g < ng; g++) {
            group_key(&r->checks[order[start[g]]], key, sizeof key);
            size_t n = start[g + 1] - start[g];
            fprintf(f, "<h3>%zu. ", g + 1);
            mla_rep_xml_escape(f, key);
            fprintf(f, " (%zu check%s)</h3>\n" HTML_CHECK_HEAD, n, n == 1 ? "" : "s");
            for (size_t q = start[g]; q < start[g + 1]; q++) html_check_row(f, &r->checks[order[q]]);
            fputs("</table>\n", f);
        }
    }
    fputs("<h2>Plots</h2>\n", f);
    char lpath[4300];
    FILE *lf = mla_rep_pathf(lpath, sizeof lpath, "%s/plots/%s", dir, MLA_REP_PLOT_LIST) ? NULL : fopen(lpath, "r");
    int shown = 0;
    if (lf) {
        char line[512];
        while (fgets(line, sizeof line, lf)) {
            line[strcspn(line, "\r\n")] = '\0';
            char *tab = strchr(line, '\t');
            if (!tab) continue;
            *tab = '\0';
            fputs("<figure class=\"plot\"><a href=\"plots/", f);
            mla_rep_xml_escape(f, line);
            fputs(".svg\"><img src=\"plots/", f);
            mla_rep_xml_escape(f, line);
            fputs(".svg\" alt=\"", f);
            mla_rep_xml_escape(f, tab + 1);
            fputs("\"></a><figcaption>", f);
            mla_rep_xml_escape(f, tab + 1);
            fputs(" (<a href=\"plots/", f);
            mla_rep_xml_escape(f, line);
            fputs(".png\">PNG</a>)</figcaption></figure>\n", f);
            shown++;
        }
        fclose(lf);
    }
    if (!shown) fputs("<p>No plots.</p>\n", f);
    fprintf(f, "<h2>All checks (%zu)</h2>\n" HTML_CHECK_HEAD, r->n_checks);
    for (size_t i = 0; i < r->n_checks; i++) html_check_row(f, &r->checks[i]);
    fputs("</table>\n</body></html>\n", f);
    free(order);
    free(start);
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    return MLA_OK;
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
    if ((st = write_md(r, dir)) != MLA_OK) return st;
    if (with_junit && (st = write_junit(r, dir)) != MLA_OK) return st;
    return write_html(r, dir);
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
    if (st == MLA_OK && rename(tmp, final) != 0)
        st = mla_errorf(MLA_ERR_IO, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
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
        const char *v = jstr(c, "verdict");
        int vi = strcmp(v, "pass") == 0 ? 0 : strcmp(v, "fail") == 0 ? 1 : strcmp(v, "skip") == 0 ? 2 : -1;
        if (vi < 0) {
            st = mla_errorf(MLA_ERR_FORMAT, "%s: checks[%zu].verdict '%s'; expected pass, fail or skip", path, i, v);
            break;
        }
        json_t *fl = json_object_get(c, "first_layer");
        st = mla_rep_add_check(r, jstr(c, "case"), jstr(c, "check"), jstr(c, "profile"), jstr(c, "path"),
                               (mla_rep_verdict)vi, jstr(c, "message"), json_is_integer(fl) ? (int)json_integer_value(fl) : -1,
                               jstr(c, "first_tap"));
        if (st != MLA_OK) break;
        rep_check *rc = &r->checks[r->n_checks - 1];
        char *wn = strdup(jstr(c, "worst_metric"));
        if (!wn) {
            st = MLA_ERR_NOMEM;
            break;
        }
        free(rc->worst);
        rc->worst = wn;
        rc->worst_value = jdbl(c, "worst_value");
        /* schema 1 folders call the limit use "headroom" */
        rc->headroom = json_object_get(c, "limit_use") ? jdbl(c, "limit_use") : jdbl(c, "headroom");
        rc->seconds = jdbl(c, "seconds");
    }
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
