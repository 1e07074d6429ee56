/* report_plots.c: gnuplot data, scripts and images for a results folder (plots/).
 * Each plot is NAME.dat (blocks separated by two blank lines, one per line of the plot) and NAME.gp,
 * which writes NAME.png and NAME.svg when run from plots/. The scripts are kept even when gnuplot
 * is missing, so a report can be plotted later on another machine. */
#include "report_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mla/taps.h"

#ifndef MLA_GNUPLOT
#define MLA_GNUPLOT ""
#endif

#define MAX_LAYER_PLOTS 24 /* one per (check, profile); more is noise in a report */
#define KL_BINS 30

static int executable(const char *p) { return p && *p && access(p, X_OK) == 0; }

const char *mla_rep_find_gnuplot(void)
{
    static _Thread_local char found[4096];
    const char *env = getenv("MLA_GNUPLOT");
    if (env) {
        /* Set (even to nowhere) overrides the configure-time path: that is how tests turn plots off. */
        if (executable(env)) return env;
    } else if (executable(MLA_GNUPLOT)) {
        return MLA_GNUPLOT;
    }
    const char *path = getenv("PATH");
    if (!path) return NULL;
    while (*path) {
        size_t len = strcspn(path, ":");
        if (len > 0 && len < sizeof found - 9) {
            snprintf(found, sizeof found, "%.*s/gnuplot", (int)len, path);
            if (executable(found)) return found;
        }
        path += len + (path[len] == ':');
    }
    return NULL;
}

/* ---- series: (x, max y) points under a name ----------------------------------------------- */

typedef struct {
    char name[64];
    int order; /* sort key: tap order for taps, first appearance otherwise */
    double *x, *y;
    int n, cap;
} series;

typedef struct {
    series *s;
    int n, cap;
} series_set;

static void set_free(series_set *ss)
{
    for (int i = 0; i < ss->n; i++) {
        free(ss->s[i].x);
        free(ss->s[i].y);
    }
    free(ss->s);
    memset(ss, 0, sizeof *ss);
}

/* Keeps the maximum y per x: a plot line shows the worst tensor at that point. Non-positive or
 * non-finite y is dropped (log axes). Returns -1 on allocation failure. */
static int set_add(series_set *ss, const char *name, int order, double x, double y)
{
    if (!(y > 0) || !isfinite(y)) return 0;
    series *s = NULL;
    for (int i = 0; i < ss->n && !s; i++)
        if (strcmp(ss->s[i].name, name) == 0) s = &ss->s[i];
    if (!s) {
        if (ss->n == ss->cap) {
            int nc = ss->cap ? ss->cap * 2 : 8;
            series *ns = realloc(ss->s, sizeof *ns * (size_t)nc);
            if (!ns) return -1;
            ss->s = ns;
            ss->cap = nc;
        }
        s = &ss->s[ss->n++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s", name);
        s->order = order;
    }
    for (int i = 0; i < s->n; i++)
        if (s->x[i] == x) {
            if (y > s->y[i]) s->y[i] = y;
            return 0;
        }
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 16;
        double *nx = realloc(s->x, sizeof *nx * (size_t)nc);
        if (!nx) return -1;
        s->x = nx;
        double *ny = realloc(s->y, sizeof *ny * (size_t)nc);
        if (!ny) return -1;
        s->y = ny;
        s->cap = nc;
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
    return 0;
}

static int cmp_series(const void *a, const void *b)
{
    const series *p = a, *q = b;
    return p->order != q->order ? (p->order < q->order ? -1 : 1) : strcmp(p->name, q->name);
}

static void sort_points(series *s)
{
    for (int i = 1; i < s->n; i++) /* insertion sort: lines are short */
        for (int j = i; j > 0 && s->x[j - 1] > s->x[j]; j--) {
            double tx = s->x[j], ty = s->y[j];
            s->x[j] = s->x[j - 1]; s->y[j] = s->y[j - 1];
            s->x[j - 1] = tx; s->y[j - 1] = ty;
        }
}

static int tap_order(const char *name)
{
    mla_tap t;
    return mla_tap_from_name(name, &t) == 0 ? (int)t : 1000;
}

/* ---- writing one plot ------------------------------------------------------------------------ */

static void gp_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
    }
    fputc('"', f);
}

typedef struct {
    const char *name, *title, *xlabel, *ylabel;
    int logy, boxes;
} plot_spec;

/* Writes NAME.dat and NAME.gp; returns 1 when written, 0 when there is nothing to plot, -1 on I/O. */
static int write_plot(const char *pdir, const plot_spec *p, series_set *ss)
{
    int npts = 0;
    for (int i = 0; i < ss->n; i++) npts += ss->s[i].n;
    if (npts == 0) return 0;
    qsort(ss->s, (size_t)ss->n, sizeof *ss->s, cmp_series);
    char path[4400];
    if (mla_rep_pathf(path, sizeof path, "%s/%s.dat", pdir, p->name)) return -1;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int block = 0;
    for (int i = 0; i < ss->n; i++) {
        series *s = &ss->s[i];
        if (!s->n) continue;
        sort_points(s);
        fprintf(f, "%s# %s\n", block ? "\n\n" : "", s->name);
        for (int k = 0; k < s->n; k++) fprintf(f, "%.17g %.17g\n", s->x[k], s->y[k]);
        block++;
    }
    if (fclose(f) != 0) return -1;
    if (mla_rep_pathf(path, sizeof path, "%s/%s.gp", pdir, p->name)) return -1;
    if (!(f = fopen(path, "w"))) return -1;
    fprintf(f, "# generated by mlacheck; run from this folder: gnuplot %s.gp\n", p->name);
    fputs("if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n  set terminal pngcairo size 1000,600 noenhanced\n"
          "} else {\n  set terminal png size 1000,600\n}\n", f);
    fprintf(f, "set output \"%s.png\"\nset title ", p->name);
    gp_string(f, p->title);
    fputs(" noenhanced\nset xlabel ", f);
    gp_string(f, p->xlabel);
    fputs(" noenhanced\nset ylabel ", f);
    gp_string(f, p->ylabel);
    fputs(" noenhanced\nset grid\nset key outside right noenhanced\n", f);
    if (p->logy) fputs("set logscale y\nset format y \"%.0e\"\n", f);
    if (p->boxes) fputs("set style fill solid 0.5\nset boxwidth 0.9 relative\nset yrange [0:*]\n", f);
    fputs("plot ", f);
    block = 0;
    for (int i = 0; i < ss->n; i++) {
        if (!ss->s[i].n) continue;
        fprintf(f, "%s\"%s.dat\" index %d using 1:2 with %s title ", block ? ", \\\n     " : "", p->name, block,
                p->boxes ? "boxes" : "linespoints");
        gp_string(f, ss->s[i].name);
        block++;
    }
    fprintf(f, "\nset terminal svg size 1000,600 dynamic\nset output \"%s.svg\"\nreplot\nunset output\n", p->name);
    return fclose(f) == 0 ? 1 : -1;
}

int mla_rep_run_gnuplot(const char *gp, const char *pdir, const char *name)
{
    char script[256];
    if (mla_rep_pathf(script, sizeof script, "%s.gp", name)) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (chdir(pdir) != 0) _exit(126);
        int fd = open("gnuplot.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
        int devnull = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (devnull >= 0) dup2(devnull, 0);
        execl(gp, gp, script, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    char img[4400];
    struct stat st;
    if (mla_rep_pathf(img, sizeof img, "%s/%s.png", pdir, name) || stat(img, &st) != 0 || st.st_size == 0) return -1;
    if (mla_rep_pathf(img, sizeof img, "%s/%s.svg", pdir, name) || stat(img, &st) != 0 || st.st_size == 0) return -1;
    return 0;
}

static void safe_name(char *out, size_t n, const char *a, const char *b)
{
    snprintf(out, n, "layers-%s-%s", a, b);
    for (char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
            *p = '_';
}

/* ---- the plots ------------------------------------------------------------------------------- */

typedef struct {
    char name[96];
    char title[160];
} made_plot;

mla_status mla_rep_write_plots(const mla_rep_run *r, const char *dir, char *note, size_t n)
{
    char pdir[4300];
    if (mla_rep_pathf(pdir, sizeof pdir, "%s/plots", dir)) return MLA_ERR_INVALID;
    if (mkdir(pdir, 0777) != 0 && errno != EEXIST)
        return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", pdir, strerror(errno));
    made_plot made[MAX_LAYER_PLOTS + 4];
    int n_made = 0, oom = 0;
    series_set ss = {0};

    /* 1. rel_l2 per layer, one line per tap, one plot per (check, profile). */
    for (size_t i = 0; i < r->n_rows && n_made < MAX_LAYER_PLOTS; i++) {
        const rep_row *w = &r->rows[i];
        if (w->layer < 0 || w->kv_len >= 0) continue;
        size_t j = 0; /* first row of this (check, profile)? */
        while (j < i && (r->rows[j].layer < 0 || r->rows[j].kv_len >= 0 || strcmp(r->rows[j].check, w->check) ||
                         strcmp(r->rows[j].profile, w->profile)))
            j++;
        if (j < i) continue;
        for (size_t k = i; k < r->n_rows; k++) {
            const rep_row *v = &r->rows[k];
            if (v->layer < 0 || v->kv_len >= 0 || strcmp(v->check, w->check) || strcmp(v->profile, w->profile)) continue;
            oom |= set_add(&ss, v->tap, tap_order(v->tap), v->layer, v->rel_l2);
        }
        made_plot *m = &made[n_made];
        safe_name(m->name, sizeof m->name, w->check, w->profile);
        snprintf(m->title, sizeof m->title, "rel_l2 per layer: %s, %s", w->check, w->profile);
        plot_spec p = {m->name, m->title, "layer", "rel_l2 (worst over cases and paths)", 1, 0};
        int rc = write_plot(pdir, &p, &ss);
        set_free(&ss);
        if (rc < 0) return mla_errorf(MLA_ERR_IO, "%s/%s: cannot write plot files", pdir, m->name);
        n_made += rc;
    }

    /* 2. fp8 vs bf16 per layer, one line per fp8 profile. */
    for (size_t i = 0; i < r->n_rows; i++) {
        const rep_row *w = &r->rows[i];
        if (w->layer >= 0 && strcmp(w->check, "fp8-vs-bf16") == 0) oom |= set_add(&ss, w->profile, 0, w->layer, w->rel_l2);
    }
    made_plot *m = &made[n_made];
    snprintf(m->name, sizeof m->name, "fp8_vs_bf16");
    snprintf(m->title, sizeof m->title, "FP8 vs BF16: rel_l2 per layer (worst tap)");
    plot_spec p2 = {m->name, m->title, "layer", "rel_l2", 1, 0};
    int rc = write_plot(pdir, &p2, &ss);
    set_free(&ss);
    if (rc < 0) return mla_errorf(MLA_ERR_IO, "%s/%s: cannot write plot files", pdir, m->name);
    n_made += rc;

    /* 3. decode vs prefill along the kv length (sweep rows), one line per profile. */
    for (size_t i = 0; i < r->n_rows; i++) {
        const rep_row *w = &r->rows[i];
        if (w->kv_len >= 0) oom |= set_add(&ss, w->profile, 0, w->kv_len, w->rel_l2);
    }
    m = &made[n_made];
    snprintf(m->name, sizeof m->name, "sweep_kv_len");
    snprintf(m->title, sizeof m->title, "decode vs prefill: rel_l2 along kv length (worst tensor)");
    plot_spec p3 = {m->name, m->title, "kv length", "rel_l2", 1, 0};
    rc = write_plot(pdir, &p3, &ss);
    set_free(&ss);
    if (rc < 0) return mla_errorf(MLA_ERR_IO, "%s/%s: cannot write plot files", pdir, m->name);
    n_made += rc;

    /* 4. logits KL histogram over log10(KL); exact zeros are counted in the title. */
    double lo = INFINITY, hi = -INFINITY;
    size_t zeros = 0;
    for (size_t i = 0; i < r->n_kl; i++) {
        double k = r->kl[i];
        if (k == 0) zeros++;
        else if (k > 0 && isfinite(k)) {
            lo = fmin(lo, log10(k));
            hi = fmax(hi, log10(k));
        }
    }
    if (lo <= hi) {
        if (hi - lo < 1e-9) {
            lo -= 0.5;
            hi += 0.5;
        }
        double width = (hi - lo) / KL_BINS, count[KL_BINS] = {0};
        for (size_t i = 0; i < r->n_kl; i++) {
            double k = r->kl[i];
            if (!(k > 0) || !isfinite(k)) continue;
            int b = (int)((log10(k) - lo) / width);
            count[b < 0 ? 0 : b >= KL_BINS ? KL_BINS - 1 : b]++;
        }
        for (int b = 0; b < KL_BINS; b++)
            if (count[b] > 0) oom |= set_add(&ss, "tokens", 0, lo + (b + 0.5) * width, count[b]);
        m = &made[n_made];
        snprintf(m->name, sizeof m->name, "logits_kl");
        snprintf(m->title, sizeof m->title, "logits KL divergence per token (%zu tokens, %zu exactly 0)", r->n_kl, zeros);
        plot_spec p4 = {m->name, m->title, "log10 KL", "tokens", 0, 1};
        rc = write_plot(pdir, &p4, &ss);
        set_free(&ss);
        if (rc < 0) return mla_errorf(MLA_ERR_IO, "%s/%s: cannot write plot files", pdir, m->name);
        n_made += rc;
    }
    if (oom) return mla_errorf(MLA_ERR_NOMEM, "%s: out of memory while plotting", pdir);

    /* Render what was written; list what rendered. */
    char lpath[4400];
    if (mla_rep_pathf(lpath, sizeof lpath, "%s/%s", pdir, MLA_REP_PLOT_LIST)) return MLA_ERR_INVALID;
    FILE *lf = fopen(lpath, "w");
    if (!lf) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", lpath, strerror(errno));
    const char *gp = mla_rep_find_gnuplot();
    int failed = 0;
    if (!gp) {
        if (note && n) snprintf(note, n, "gnuplot not found: plots skipped");
    } else {
        for (int i = 0; i < n_made; i++) {
            if (mla_rep_run_gnuplot(gp, pdir, made[i].name) != 0) {
                failed++;
                continue;
            }
            fprintf(lf, "%s\t%s\n", made[i].name, made[i].title);
        }
        if (failed && note && n) snprintf(note, n, "gnuplot failed on %d plot(s): see plots/gnuplot.log", failed);
    }
    if (fclose(lf) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", lpath);
    return MLA_OK;
}
