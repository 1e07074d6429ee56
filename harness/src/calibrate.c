/* calibrate.c: the measured noise of each (check, profile, tap class) from metric rows, and the limits
 * k x max that rules.tol takes from it (calibrate.h). */
#include "mlacheck/calibrate.h"

#include "mla/taps.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One (check, profile, tap class) being collected. */
typedef struct {
    mla_calib_row row;
    int order;           /* computation order of the class (embed, L0 taps, L1+ taps, final taps) */
    double *v;
    size_t n, cap;
} calib_group;

struct mla_calib_set {
    calib_group *g;
    size_t n, cap;
    char **case_of, **model_of; /* mla_calib_set_models: case name -> model name */
    int n_cases;
    char suite[128];
};

mla_status mla_calib_begin(mla_calib_set **out)
{
    if (!(*out = calloc(1, sizeof **out))) return mla_errorf(MLA_ERR_NOMEM, "calibrate: set");
    return MLA_OK;
}

static void set_free(mla_calib_set *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) free(s->g[i].v);
    for (int i = 0; i < s->n_cases; i++) {
        free(s->case_of[i]);
        free(s->model_of[i]);
    }
    free(s->case_of);
    free(s->model_of);
    free(s->g);
    free(s);
}

/* Rows that do not measure noise: bitwise checks (their limit is equality), the noise-floor ratio,
 * and failures that are not a measurement (a missing tap, a shape, a nonfinite value). */
static int row_is_noise(const mla_rep_row *r)
{
    if (!r->check || !r->tap || !r->profile) return 0;
    if (!strncmp(r->check, "noise-floor", 11)) return 0;
    const char *w = r->worst ? r->worst : "";
    if (!strcmp(w, "bitwise") || !strcmp(w, "missing") || !strcmp(w, "shape")) return 0;
    if (!strcmp(w, "route_margin")) return isfinite(r->headroom);
    /* expert ids are not a measurement on a scale (runs before route_margin judged them by count) */
    if (!strcmp(r->tap, "topk_ids")) return 0;
    return isfinite(r->rel_l2) && r->rel_l2 >= 0;
}

/* The tap class of a row as a rules.tol tap regex, and its place in computation order. */
static int tap_class(const mla_rep_row *r, char *buf, size_t n)
{
    mla_tap t;
    int ti = mla_tap_from_name(r->tap, &t) == 0 ? (int)t : MLA_TAP_COUNT;
    if (r->layer < 0) {
        snprintf(buf, n, "%s", r->tap);
        return ti == MLA_TAP_EMBED ? 0 : 3000 + ti;
    }
    if (r->layer == 0) {
        snprintf(buf, n, "L0/%s", r->tap);
        return 1000 + ti;
    }
    snprintf(buf, n, "L[1-9][0-9]*/%s", r->tap);
    return 2000 + ti;
}

static mla_status push(calib_group *g, double x)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        double *nv = realloc(g->v, cap * sizeof *nv);
        if (!nv) return mla_errorf(MLA_ERR_NOMEM, "calibrate: %zu samples", cap);
        g->v = nv;
        g->cap = cap;
    }
    g->v[g->n++] = x;
    return MLA_OK;
}

static calib_group *find_group(mla_calib_set *s, const char *check, const char *profile, const char *tap,
                               const char *metric, int order, mla_status *st)
{
    *st = MLA_OK;
    for (size_t i = 0; i < s->n; i++) {
        mla_calib_row *r = &s->g[i].row;
        if (!strcmp(r->check, check) && !strcmp(r->profile, profile) && !strcmp(r->tap, tap) &&
            !strcmp(r->metric, metric))
            return &s->g[i];
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        calib_group *ng = realloc(s->g, cap * sizeof *ng);
        if (!ng) {
            *st = mla_errorf(MLA_ERR_NOMEM, "calibrate: %zu groups", cap);
            return NULL;
        }
        s->g = ng;
        s->cap = cap;
    }
    calib_group *g = &s->g[s->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->row.check, sizeof g->row.check, "%s", check);
    snprintf(g->row.profile, sizeof g->row.profile, "%s", profile);
    snprintf(g->row.tap, sizeof g->row.tap, "%s", tap);
    snprintf(g->row.metric, sizeof g->row.metric, "%s", metric);
    g->row.limit_now = -1;
    g->order = order;
    return g;
}

mla_status mla_calib_set_models(mla_calib_set *s, const mla_suite *suite)
{
    if (s->n_cases) return mla_errorf(MLA_ERR_INVALID, "calibrate: models already set (suite %s)", s->suite);
    int n = suite->n_cases;
    if (!(s->case_of = calloc((size_t)(n ? n : 1), sizeof *s->case_of)) ||
        !(s->model_of = calloc((size_t)(n ? n : 1), sizeof *s->model_of)))
        return mla_errorf(MLA_ERR_NOMEM, "calibrate: %d cases", n);
    for (int i = 0; i < n; i++) {
        /* the name rules.tol's model= matches: a built-in's, or an HF folder's last component */
        const char *model = suite->cases[i].model ? suite->cases[i].model : "", *slash = strrchr(model, '/');
        s->n_cases = i + 1;
        if (!(s->case_of[i] = strdup(suite->cases[i].name)) || !(s->model_of[i] = strdup(slash ? slash + 1 : model)))
            return mla_errorf(MLA_ERR_NOMEM, "calibrate: case names");
    }
    snprintf(s->suite, sizeof s->suite, "%s", suite->name);
    return MLA_OK;
}

/* The row's model by its case (mla_calib_set_models), NULL without a map; *st set when the case is unknown. */
static const char *row_model(const mla_calib_set *s, const mla_rep_row *r, mla_status *st)
{
    *st = MLA_OK;
    if (!s->n_cases) return NULL;
    for (int i = 0; i < s->n_cases; i++)
        if (r->case_name && !strcmp(s->case_of[i], r->case_name)) return s->model_of[i][0] ? s->model_of[i] : NULL;
    *st = mla_errorf(MLA_ERR_INVALID, "calibrate: metric row of case '%s' (%s, %s): suite %s has no such case, so its "
                     "model is unknown (expected the suite the runs came from)", r->case_name ? r->case_name : "",
                     r->check, r->profile, s->suite);
    return NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Adds model to a row's sorted '|'-joined list. */
static mla_status add_model(mla_calib_row *row, const char *model)
{
    char buf[sizeof row->models], *names[64];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", row->models);
    for (char *save = NULL, *t = strtok_r(buf, "|", &save); t && n < 64; t = strtok_r(NULL, "|", &save)) {
        if (!strcmp(t, model)) return MLA_OK; /* already there */
        names[n++] = t;
    }
    size_t len = strlen(row->models) + strlen(model) + 1;
    if (n == 64 || len >= sizeof row->models)
        return mla_errorf(MLA_ERR_INVALID, "calibrate: %s %s %s: more models than %zu bytes of names hold", row->check,
                          row->profile, row->tap, sizeof row->models);
    names[n++] = (char *)model;
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    char out[sizeof row->models];
    size_t o = 0;
    for (int i = 0; i < n; i++) o += (size_t)snprintf(out + o, sizeof out - o, "%s%s", i ? "|" : "", names[i]);
    memcpy(row->models, out, o + 1);
    return MLA_OK;
}

mla_status mla_calib_add(mla_calib_set *s, const mla_metrics *m, const mla_rules *rules)
{
    for (size_t i = 0; i < m->n_rows; i++) {
        const mla_rep_row *r = &m->rows[i];
        if (!row_is_noise(r)) continue;
        mla_status ms;
        const char *model = row_model(s, r, &ms);
        if (ms) return ms;
        int route = r->worst && !strcmp(r->worst, "route_margin");
        char cls[64], key[64];
        int order = tap_class(r, cls, sizeof cls);
        mla_status st;
        calib_group *g = find_group(s, r->check, r->profile, cls, route ? "route_margin" : "rel_l2", order, &st);
        if (!g) return st;
        if ((st = push(g, route ? r->headroom : r->rel_l2))) return st;
        if (model && (st = add_model(&g->row, model))) return st;
        if (!rules || route) continue;
        if (r->layer >= 0) snprintf(key, sizeof key, "L%d/%s", r->layer, r->tap);
        else snprintf(key, sizeof key, "%s", r->tap);
        const mla_rule_limits *rl = model ? mla_rules_match_model(rules, key, r->profile, r->check, model)
                                          : mla_rules_match(rules, key, r->profile, r->check);
        int line = rl ? rl->line : 0;
        if (g->n == 1) {
            g->row.rule_line = line;
            g->row.limit_now = rl ? rl->lim.rel_l2 : -1;
        } else if (line != g->row.rule_line) {
            g->row.mixed_rules = 1;
        }
    }
    return MLA_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_group(const void *a, const void *b)
{
    const calib_group *x = a, *y = b;
    int c = strcmp(x->row.check, y->row.check);
    if (!c) c = strcmp(x->row.profile, y->row.profile);
    if (!c) c = (x->order > y->order) - (x->order < y->order);
    if (!c) c = strcmp(x->row.metric, y->row.metric);
    return c;
}

double mla_calib_round_up(double x)
{
    if (!(x > 0) || !isfinite(x)) return x;
    double e = pow(10.0, floor(log10(x)) - 1); /* the second significant digit's unit */
    double m = ceil(x / e * (1 - 1e-12));      /* tolerate x already on the grid */
    return m * e;
}

mla_status mla_calib_end(mla_calib_set *s, double k, const char *source, mla_calib_table *t)
{
    memset(t, 0, sizeof *t);
    if (!(k > 0)) {
        set_free(s);
        return mla_errorf(MLA_ERR_INVALID, "calibrate: k = %g; expected > 0", k);
    }
    t->k = k;
    snprintf(t->source, sizeof t->source, "%s", source ? source : "");
    if (s->n && !(t->rows = calloc(s->n, sizeof *t->rows))) {
        size_t n = s->n;
        set_free(s);
        return mla_errorf(MLA_ERR_NOMEM, "calibrate: %zu rows", n);
    }
    if (s->n) qsort(s->g, s->n, sizeof *s->g, cmp_group); /* g is NULL when no row was noise */
    for (size_t i = 0; i < s->n; i++) {
        calib_group *g = &s->g[i];
        qsort(g->v, g->n, sizeof *g->v, cmp_double);
        mla_calib_row *r = &t->rows[i];
        *r = g->row;
        r->n = (int64_t)g->n;
        r->median = g->n % 2 ? g->v[g->n / 2] : 0.5 * (g->v[g->n / 2 - 1] + g->v[g->n / 2]);
        size_t rank = (size_t)ceil(0.99 * (double)g->n); /* nearest rank, 1-based */
        r->p99 = g->v[(rank ? rank : 1) - 1];
        r->max = g->v[g->n - 1];
        r->limit = strcmp(r->metric, "rel_l2") ? 0 : mla_calib_round_up(k * r->max);
    }
    t->n_rows = s->n;
    set_free(s);
    return MLA_OK;
}

void mla_calib_free(mla_calib_table *t)
{
    if (!t) return;
    free(t->rows);
    memset(t, 0, sizeof *t);
}

mla_status mla_calib_write_tsv(const char *path, const mla_calib_table *t)
{
    FILE *f = fopen(path, "w");
    if (!f) return mla_errorf(MLA_ERR_IO, "%s: cannot write the calibration table: %s", path, strerror(errno));
    fputs("check\tprofile\ttap\tmetric\tn\tmedian\tp99\tmax\tk\tlimit\tlimit_now\trule_line\tmodels\tsource\n", f);
    for (size_t i = 0; i < t->n_rows; i++) {
        const mla_calib_row *r = &t->rows[i];
        fprintf(f, "%s\t%s\t%s\t%s\t%lld\t%.3g\t%.3g\t%.3g\t%g\t%.2g\t%.3g\t%d%s\t%s\t%s\n", r->check, r->profile,
                r->tap, r->metric, (long long)r->n, r->median, r->p99, r->max, t->k, r->limit, r->limit_now,
                r->rule_line, r->mixed_rules ? "+" : "", r->models[0] ? r->models : "-", t->source);
    }
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return MLA_OK;
}

/* A check name as a regex matching only itself ('.' in a plugin's name, '+'). */
static void regex_escape(const char *s, char *buf, size_t n)
{
    size_t j = 0;
    for (; *s && j + 2 < n; s++) {
        if (strchr(".[]()*+?{}|^$\\", *s)) buf[j++] = '\\';
        buf[j++] = *s;
    }
    buf[j] = '\0';
}

mla_status mla_calib_write_rules(const char *path, const mla_calib_table *t, const char *tsv_name)
{
    FILE *f = fopen(path, "w");
    if (!f) return mla_errorf(MLA_ERR_IO, "%s: cannot write rules: %s", path, strerror(errno));
    fprintf(f, "# limits = %g x the largest measured sample, from %s (mlacheck calibrate: %s)\n", t->k,
            tsv_name, t->source);
    for (size_t i = 0; i < t->n_rows; i++) {
        const mla_calib_row *r = &t->rows[i];
        if (!strcmp(r->metric, "route_margin")) {
            /* routing is judged by margin against route_noise_k (rules.tol), not by a limit here: the
             * measured worst margin / bound says how close benign flips came to that bound */
            fprintf(f, "# routing %s %s %s: worst margin/bound %.3g, median %.3g over %lld rows (%s row %zu)\n",
                    r->check, r->profile, r->tap, r->max, r->median, (long long)r->n, tsv_name, i + 1);
            continue;
        }
        if (!(r->limit > 0)) continue;
        char chk[160], models[sizeof r->models * 2 + 16] = "";
        regex_escape(r->check, chk, sizeof chk);
        if (r->models[0]) { /* model=(a|b): each name escaped, the '|' kept */
            size_t o = (size_t)snprintf(models, sizeof models, " model=(");
            for (const char *p = r->models; *p;) {
                size_t len = strcspn(p, "|");
                char one[sizeof r->models], esc[sizeof r->models * 2];
                snprintf(one, sizeof one, "%.*s", (int)len, p);
                regex_escape(one, esc, sizeof esc);
                o += (size_t)snprintf(models + o, sizeof models - o, "%s%s", p == r->models ? "" : "|", esc);
                p += len + (p[len] == '|');
            }
            snprintf(models + o, sizeof models - o, ")");
        }
        fprintf(f, "%-28s %-6s %-24s rel_l2=%.2g%s   # source: %s row %zu: n=%lld median=%.2g max=%.2g (k=%g)\n",
                r->tap, r->profile, chk, r->limit, models, tsv_name, i + 1, (long long)r->n, r->median, r->max, t->k);
    }
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    return MLA_OK;
}
