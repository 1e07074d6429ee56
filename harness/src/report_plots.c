/* report_plots.c: gnuplot data, scripts and images for a results folder (plots/).
 * Each plot is NAME.dat (blocks separated by two blank lines, one per line of the plot) and NAME.gp,
 * which writes NAME.png and NAME.svg when run from plots/. Every metric plot draws the metric
 * itself on a log axis with its rule's limit (one dashed line, or each line's own), exact zeros on
 * a tick labelled "0 (exact)" a decade under the smallest value, failing points ringed in red and
 * the first divergence of failing checks as a red vertical line; a one-layer model gets bars. The scripts are kept even when gnuplot
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

/* ---- series: points under a name ------------------------------------------------------------- */

/* One point of a line: the worst tensor at x. y 0 is an exact match (drawn at the plot's floor);
 * limit is that tensor's limit for the plotted metric (NAN when not known); fail: some tensor at x
 * failed its rule. */
typedef struct {
    double x, y, limit;
    int fail;
} point;

typedef struct {
    char name[64];
    int order; /* sort key: tap order for taps, first appearance otherwise */
    point *p;
    int n, cap;
} series;

typedef struct {
    series *s;
    int n, cap;
} series_set;

static void set_free(series_set *ss)
{
    for (int i = 0; i < ss->n; i++) free(ss->s[i].p);
    free(ss->s);
    memset(ss, 0, sizeof *ss);
}

/* Keeps the largest y per x (a line shows the worst tensor there) with its limit; a failure at x
 * marks the point whichever tensor it was. Non-finite or negative y is dropped (log axes; a NaN
 * shows in the tables). Returns -1 on allocation failure. */
static int set_add(series_set *ss, const char *name, int order, double x, double y, double limit, int fail)
{
    if (!isfinite(y) || y < 0) return 0;
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
        if (s->p[i].x == x) {
            point *q = &s->p[i];
            if (y > q->y || (y == q->y && isnan(q->limit))) {
                q->y = y;
                if (!isnan(limit)) q->limit = limit;
            }
            q->fail |= fail;
            return 0;
        }
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 16;
        point *np = realloc(s->p, sizeof *np * (size_t)nc);
        if (!np) return -1;
        s->p = np;
        s->cap = nc;
    }
    s->p[s->n++] = (point){x, y, limit, fail ? 1 : 0};
    return 0;
}

static int cmp_series(const void *a, const void *b)
{
    const series *p = a, *q = b;
    return p->order != q->order ? (p->order < q->order ? -1 : 1) : strcmp(p->name, q->name);
}

static int cmp_point(const void *a, const void *b)
{
    const point *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x;
}

static int tap_order(const char *name)
{
    mla_tap t;
    return mla_tap_from_name(name, &t) == 0 ? (int)t : 1000;
}

/* The limit of w's rule for metric (limits.tsv); NAN when not checked, not known, or a bitwise
 * limit (1e-300: "equal", which no axis can show). */
static double row_limit(const rep_row *w, const char *metric)
{
    double l = !strcmp(metric, "max_abs")  ? w->lim_max_abs
             : !strcmp(metric, "max_rel")  ? w->lim_max_rel
             : !strcmp(metric, "cos_diff") ? w->lim_cos_diff
             : !strcmp(metric, "ulp_p99")  ? w->lim_ulp_p99
                                           : w->lim_rel_l2;
    return l > 1e-200 && isfinite(l) ? l : NAN;
}

/* The metric a plot shows: the one that sets the limit use of most of its rows, among those a log
 * axis can show; rel_l2 when none does. */
typedef int (*row_filter)(const rep_row *w, const void *arg);

static const char *plot_metric(const mla_rep_run *r, row_filter keep, const void *arg)
{
    static const char *const names[] = {"rel_l2", "max_abs", "max_rel", "cos_diff", "ulp_p99"};
    size_t count[5] = {0};
    for (size_t i = 0; i < r->n_rows; i++) {
        if (!keep(&r->rows[i], arg)) continue;
        for (int k = 0; k < 5; k++)
            if (strcmp(r->rows[i].worst, names[k]) == 0) count[k]++;
    }
    int best = 0;
    for (int k = 1; k < 5; k++)
        if (count[k] > count[best]) best = k;
    return names[best];
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

/* Colours told apart by eye and by the common colour-vision deficiencies (Okabe-Ito, then Paul
 * Tol's muted set); red is kept for failures. Point types differ too, so 13 taps stay distinct. */
static const char *const palette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#332288", "#999933",
                                      "#882255", "#44AA99", "#AA4499", "#117733", "#DDAA33", "#6699CC", "#000000"};
#define N_PALETTE ((int)(sizeof palette / sizeof *palette))
static const int point_types[] = {7, 5, 9, 11, 13, 15, 1, 2, 3, 4, 6, 8, 10, 12};
#define FAIL_COLOUR "#E41A1C"

typedef struct {
    double x;
    char text[96];
} plot_mark;

typedef struct {
    const char *name, *title, *xlabel;
    const char *metric; /* the y axis: a metric name, log scale, with limits and exact zeros */
    int int_x;          /* x is a layer index: integer ticks */
    int allow_bars;     /* one x value only (one-layer model): bars per series instead of lines */
    const plot_mark *marks; /* vertical markers (first divergence) */
    int n_marks;
} plot_spec;

#define PLOT_W 1200
#define PLOT_H 640

static void gp_terminals(FILE *f, const char *name)
{
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n  set terminal pngcairo size %d,%d noenhanced\n"
               "} else {\n  set terminal png size %d,%d\n}\nset output \"%s.png\"\n",
            PLOT_W, PLOT_H, PLOT_W, PLOT_H, name);
}

static void gp_finish(FILE *f, const char *name)
{
    fprintf(f, "\nset terminal svg size %d,%d dynamic noenhanced\nset output \"%s.svg\"\nreplot\nunset output\n",
            PLOT_W, PLOT_H, name);
}

/* Writes NAME.dat and NAME.gp; returns 1 when written, 0 when there is nothing to plot, -1 on I/O.
 * Data columns: x, y (exact zeros at the floor), failed (0/1), limit (NaN unknown), colour. */
static int write_plot(const char *pdir, const plot_spec *p, series_set *ss)
{
    int npts = 0;
    double minpos = INFINITY, maxv = 0, x0 = INFINITY, x1 = -INFINITY, lim0 = NAN;
    int zeros = 0, fails = 0, many_limits = 0, n_limits = 0;
    for (int i = 0; i < ss->n; i++) {
        series *s = &ss->s[i];
        qsort(s->p, (size_t)s->n, sizeof *s->p, cmp_point);
        for (int k = 0; k < s->n; k++) {
            const point *q = &s->p[k];
            npts++;
            x0 = fmin(x0, q->x);
            x1 = fmax(x1, q->x);
            if (q->y > 0) minpos = fmin(minpos, q->y);
            else zeros++;
            maxv = fmax(maxv, q->y);
            fails += q->fail;
            if (!isnan(q->limit)) {
                minpos = fmin(minpos, q->limit);
                maxv = fmax(maxv, q->limit);
                if (!n_limits++) lim0 = q->limit;
                else if (fabs(q->limit - lim0) > 1e-9 * fabs(lim0)) many_limits = 1;
            }
        }
    }
    if (npts == 0) return 0;
    qsort(ss->s, (size_t)ss->n, sizeof *ss->s, cmp_series);
    /* Exact zeros sit one decade under the smallest value drawn, on their own labelled tick. */
    double floor_y = isfinite(minpos) ? pow(10, floor(log10(minpos)) - 1) : 1e-20;
    if (!(maxv > 0)) maxv = floor_y * 100;
    int bars = p->allow_bars && x0 == x1 && ss->n > 1;

    char path[4400];
    if (mla_rep_pathf(path, sizeof path, "%s/%s.dat", pdir, p->name)) return -1;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    if (bars) { /* one block: a bar per series at 0, 1, 2, ... */
        fprintf(f, "# bar y failed limit colour label (all at %s %g)\n", p->xlabel, x0);
        for (int i = 0; i < ss->n; i++) {
            const point *q = &ss->s[i].p[0];
            fprintf(f, "%d %.17g %d %.17g %ld \"%s\"\n", i, q->y > 0 ? q->y : floor_y, q->fail, q->limit,
                    strtol(palette[i % N_PALETTE] + 1, NULL, 16), ss->s[i].name);
        }
    } else {
        for (int i = 0; i < ss->n; i++) {
            series *s = &ss->s[i];
            fprintf(f, "%s# %s: x y failed limit\n", i ? "\n\n" : "", s->name);
            for (int k = 0; k < s->n; k++)
                fprintf(f, "%.17g %.17g %d %.17g\n", s->p[k].x, s->p[k].y > 0 ? s->p[k].y : floor_y, s->p[k].fail,
                        s->p[k].limit);
        }
    }
    if (fclose(f) != 0) return -1;

    if (mla_rep_pathf(path, sizeof path, "%s/%s.gp", pdir, p->name)) return -1;
    if (!(f = fopen(path, "w"))) return -1;
    fprintf(f, "# generated by mlacheck; run from this folder: gnuplot %s.gp\n", p->name);
    gp_terminals(f, p->name);
    char title[320];
    if (bars) snprintf(title, sizeof title, "%s; one %s (%g): a bar per line", p->title, p->xlabel, x0);
    else snprintf(title, sizeof title, "%s", p->title);
    fputs("set title ", f);
    gp_string(f, title);
    fputs(" noenhanced\nset xlabel ", f);
    gp_string(f, bars ? "tap" : p->xlabel);
    fputs(" noenhanced\nset ylabel ", f);
    gp_string(f, p->metric);
    fputs(" noenhanced\nset grid\nset key outside right top noenhanced\nset datafile missing \"NaN\"\n"
          "set logscale y\nset format y \"%.0e\"\n", f);
    fprintf(f, "set yrange [%.17g:%.17g]\n", floor_y / 3, maxv * 5);
    if (zeros) {
        /* exact zeros have no place on a log axis: they sit on this line */
        fprintf(f, "set ytics add (\"0 (exact)\" %.17g)\n", floor_y);
        fprintf(f, "set arrow from graph 0, first %.17g to graph 1, first %.17g nohead lc rgb \"#888888\" dt 3\n",
                floor_y, floor_y);
    }
    if (bars) {
        fprintf(f, "set xrange [-0.6:%d.6]\nset xtics rotate by -35 scale 0\nset style fill solid 0.7 border -1\n"
                   "set boxwidth 0.7\n", ss->n - 1);
    } else if (p->int_x) {
        int span = (int)(x1 - x0), step = span > 24 ? (span + 23) / 24 : 1;
        fprintf(f, "set xrange [%g:%g]\nset xtics %d\nset mxtics 1\nset format x \"%%.0f\"\n", x0 - 0.5, x1 + 0.5, step);
    } else if (x1 > x0) {
        fprintf(f, "set xrange [%g:%g]\n", x0 - 0.02 * (x1 - x0), x1 + 0.02 * (x1 - x0));
    }
    if (p->n_marks) fputs("set style textbox opaque noborder\n", f);
    for (int m = 0; m < p->n_marks; m++) {
        const plot_mark *k = &p->marks[m];
        double x = k->x;
        if (bars) { /* the failing tap's bar */
            x = NAN;
            size_t lt = strlen(k->text);
            for (int i = 0; i < ss->n; i++) { /* the text ends in " <tap>" */
                size_t ln = strlen(ss->s[i].name);
                if (ln + 1 <= lt && k->text[lt - ln - 1] == ' ' && !strcmp(k->text + lt - ln, ss->s[i].name)) x = i;
            }
            if (isnan(x)) continue;
        }
        fprintf(f, "set arrow from %g, graph 0 to %g, graph 1 nohead lc rgb \"%s\" lw 2 dt 4\n", x, x, FAIL_COLOUR);
        fprintf(f, "set label ");
        gp_string(f, k->text);
        /* low in the plot on an opaque box: the diverged values are high, the limits lower down */
        fprintf(f, " at %g, graph %.2f offset 0.6,0 tc rgb \"%s\" front boxed noenhanced\n", x, 0.06 + 0.06 * m,
                FAIL_COLOUR);
    }
    fputs("plot ", f);
    const char *sep = "";
    if (bars) {
        fprintf(f, "\"%s.dat\" using 1:2:5:xtic(6) with boxes lc rgb variable title ", p->name);
        gp_string(f, p->metric);
        sep = ", \\\n     ";
        if (n_limits) {
            fprintf(f, "%s\"%s.dat\" using 1:4:(0.45) with xerrorbars pt 0 lw 3 lc rgb \"#000000\" title ", sep, p->name);
            char t[96];
            snprintf(t, sizeof t, "limit (%s)", p->metric);
            gp_string(f, t);
        }
        if (fails)
            fprintf(f, "%s\"%s.dat\" using 1:($3>0?$2:NaN) with points pt 6 ps 3 lw 2 lc rgb \"%s\" title \"fails its limit\"",
                    sep, p->name, FAIL_COLOUR);
    } else {
        for (int i = 0; i < ss->n; i++) {
            fprintf(f, "%s\"%s.dat\" index %d using 1:2 with linespoints lw 1.5 pt %d ps 1.2 lc rgb \"%s\" title ", sep,
                    p->name, i, point_types[i % 14], palette[i % N_PALETTE]);
            gp_string(f, ss->s[i].name);
            sep = ", \\\n     ";
        }
        if (n_limits && !many_limits) {
            char t[96];
            snprintf(t, sizeof t, "limit: %s = %.3g", p->metric, lim0);
            fprintf(f, "%s%.17g with lines dt 2 lw 2 lc rgb \"#000000\" title ", sep, lim0);
            gp_string(f, t);
        } else if (n_limits) {
            /* limits differ per line: each line's limit dashed in its colour */
            for (int i = 0; i < ss->n; i++) {
                int known = 0;
                for (int k = 0; k < ss->s[i].n; k++) known |= !isnan(ss->s[i].p[k].limit);
                if (known)
                    fprintf(f, "%s\"%s.dat\" index %d using 1:4 with lines dt 2 lw 1.2 lc rgb \"%s\" notitle", sep,
                            p->name, i, palette[i % N_PALETTE]);
            }
            char t[96];
            snprintf(t, sizeof t, "dashed: each line's %s limit", p->metric);
            fprintf(f, "%sNaN with lines dt 2 lw 1.2 lc rgb \"#000000\" title ", sep);
            gp_string(f, t);
        }
        int titled = 0;
        for (int i = 0; i < ss->n && fails; i++) {
            int any = 0;
            for (int k = 0; k < ss->s[i].n; k++) any |= ss->s[i].p[k].fail;
            if (!any) continue;
            fprintf(f, "%s\"%s.dat\" index %d using 1:($3>0?$2:NaN) with points pt 6 ps 3 lw 2 lc rgb \"%s\" %s", sep,
                    p->name, i, FAIL_COLOUR, titled++ ? "notitle" : "title \"fails its limit\"");
        }
    }
    gp_finish(f, p->name);
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
    char title[200];
} made_plot;

typedef struct {
    const char *check, *profile;
} layer_key;

static int is_layer_row(const rep_row *w, const void *arg)
{
    const layer_key *k = arg;
    return w->layer >= 0 && w->kv_len < 0 && !strcmp(w->check, k->check) && !strcmp(w->profile, k->profile);
}

static int is_fp8_row(const rep_row *w, const void *arg)
{
    (void)arg;
    return w->layer >= 0 && strcmp(w->check, "fp8-vs-bf16") == 0;
}

static int is_sweep_row(const rep_row *w, const void *arg)
{
    (void)arg;
    return w->kv_len >= 0;
}

/* The first divergences of the failing checks of (check, profile), distinct, as plot marks. */
static int first_marks(const mla_rep_run *r, const char *check, const char *profile, plot_mark *out, int cap)
{
    int n = 0;
    for (size_t i = 0; i < r->n_checks && n < cap; i++) {
        const rep_check *c = &r->checks[i];
        if (c->v != MLA_REP_FAIL || c->first_layer < 0 || strcmp(c->check, check) || strcmp(c->profile, profile))
            continue;
        char text[96];
        snprintf(text, sizeof text, "first divergence: layer %d %s", c->first_layer, c->first_tap);
        int dup = 0;
        for (int k = 0; k < n; k++) dup |= strcmp(out[k].text, text) == 0;
        if (dup) continue;
        out[n].x = c->first_layer;
        snprintf(out[n].text, sizeof out[n].text, "%s", text);
        n++;
    }
    return n;
}

/* Writes the KL histogram over log10(KL) (exact zeros in a bar of their own); 1 written, 0 none,
 * -1 on I/O. */
static int write_kl(const mla_rep_run *r, const char *pdir, made_plot *m)
{
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
    if (!(lo <= hi) && !zeros) return 0;
    if (!(lo <= hi)) lo = hi = -20;
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
    snprintf(m->name, sizeof m->name, "logits_kl");
    snprintf(m->title, sizeof m->title, "logits KL divergence per token (%zu tokens, %zu exactly 0)", r->n_kl, zeros);
    char path[4400];
    if (mla_rep_pathf(path, sizeof path, "%s/%s.dat", pdir, m->name)) return -1;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    double zx = lo - 2 * width; /* the exact-zero bar, apart from the others */
    fprintf(f, "# log10(KL) bin centre, tokens\n");
    if (zeros) fprintf(f, "%.17g %zu\n", zx, zeros);
    for (int b = 0; b < KL_BINS; b++)
        if (count[b] > 0) fprintf(f, "%.17g %.17g\n", lo + (b + 0.5) * width, count[b]);
    if (fclose(f) != 0) return -1;
    if (mla_rep_pathf(path, sizeof path, "%s/%s.gp", pdir, m->name)) return -1;
    if (!(f = fopen(path, "w"))) return -1;
    fprintf(f, "# generated by mlacheck; run from this folder: gnuplot %s.gp\n", m->name);
    gp_terminals(f, m->name);
    fputs("set title ", f);
    gp_string(f, m->title);
    fputs(" noenhanced\nset xlabel \"log10 KL\"\nset ylabel \"tokens\"\nset grid\nset key off\n"
          "set style fill solid 0.6 border -1\nset yrange [0:*]\n", f);
    fprintf(f, "set boxwidth %.17g\n", width * 0.9);
    if (zeros) fprintf(f, "set xtics add (\"0 (exact)\" %.17g)\n", zx);
    fprintf(f, "plot \"%s.dat\" using 1:2 with boxes lc rgb \"%s\"", m->name, palette[0]);
    gp_finish(f, m->name);
    return fclose(f) == 0 ? 1 : -1;
}

mla_status mla_rep_write_plots(const mla_rep_run *r, const char *dir, char *note, size_t n)
{
    char pdir[4300];
    if (mla_rep_pathf(pdir, sizeof pdir, "%s/plots", dir)) return MLA_ERR_INVALID;
    if (mkdir(pdir, 0777) != 0 && errno != EEXIST)
        return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", pdir, strerror(errno));
    made_plot made[MAX_LAYER_PLOTS + 4];
    int n_made = 0, oom = 0, rc;
    series_set ss = {0};
    plot_mark marks[4];

    /* 1. per (check, profile): the plotted metric per layer, one line per tap (bars for one layer). */
    for (size_t i = 0; i < r->n_rows && n_made < MAX_LAYER_PLOTS; i++) {
        const rep_row *w = &r->rows[i];
        layer_key key = {w->check, w->profile};
        if (!is_layer_row(w, &key)) continue;
        size_t j = 0; /* first row of this (check, profile)? */
        while (j < i && !is_layer_row(&r->rows[j], &key)) j++;
        if (j < i) continue;
        const char *metric = plot_metric(r, is_layer_row, &key);
        for (size_t k = i; k < r->n_rows; k++) {
            const rep_row *v = &r->rows[k];
            if (!is_layer_row(v, &key)) continue;
            oom |= set_add(&ss, v->tap, tap_order(v->tap), v->layer, mla_rep_row_metric(v, metric), row_limit(v, metric),
                           !v->pass);
        }
        made_plot *m = &made[n_made];
        safe_name(m->name, sizeof m->name, w->check, w->profile);
        snprintf(m->title, sizeof m->title, "%s per layer: %s, %s (worst over cases and paths)", metric, w->check,
                 w->profile);
        plot_spec p = {m->name, m->title, "layer", metric, 1, 1, marks, first_marks(r, w->check, w->profile, marks, 4)};
        rc = write_plot(pdir, &p, &ss);
        set_free(&ss);
        if (rc < 0) return mla_errorf(MLA_ERR_IO, "%s/%s: cannot write plot files", pdir, m->name);
        n_made += rc;
    }

    /* 2. fp8 vs bf16 per layer, one line per fp8 profile (its worst tap per layer). */
    const char *metric = plot_metric(r, is_fp8_row, NULL);
    for (size_t i = 0; i < r->n_rows; i++) {
        const rep_row *w = &r->rows[i];
        if (is_fp8_row(w, NULL))
            oom |= set_add(&ss, w->profile, 0, w->layer, mla_rep_row_metric(w, metric), row_limit(w, metric), !w->pass);
    }
    made_plot *m = &made[n_made];
    snprintf(m->name, sizeof m->name, "fp8_vs_bf16");
    snprintf(m->title, sizeof m->title, "FP8 vs BF16: %s per layer (worst tap)", metric);
    plot_spec p2 = {m->name, m->title, "layer", metric, 1, 1, NULL, 0};
    rc = write_plot(pdir, &p2, &ss);
    set_free(&ss);
    if (rc < 0) return mla_errorf(MLA_ERR_IO, "%s/%s: cannot write plot files", pdir, m->name);
    n_made += rc;

    /* 3. decode vs prefill along the kv length (sweep rows: the tap nearest its limit per length),
     * one line per profile, the metric itself with its limit. */
    metric = plot_metric(r, is_sweep_row, NULL);
    for (size_t i = 0; i < r->n_rows; i++) {
        const rep_row *w = &r->rows[i];
        if (is_sweep_row(w, NULL))
            oom |= set_add(&ss, w->profile, 0, w->kv_len, mla_rep_row_metric(w, metric), row_limit(w, metric), !w->pass);
    }
    m = &made[n_made];
    snprintf(m->name, sizeof m->name, "sweep_kv_len");
    snprintf(m->title, sizeof m->title, "decode vs prefill: %s along kv length (the tap nearest its limit)", metric);
    plot_spec p3 = {m->name, m->title, "kv length", metric, 0, 0, NULL, 0};
    rc = write_plot(pdir, &p3, &ss);
    set_free(&ss);
    if (rc < 0) return mla_errorf(MLA_ERR_IO, "%s/%s: cannot write plot files", pdir, m->name);
    n_made += rc;

    /* 4. logits KL histogram. */
    rc = write_kl(r, pdir, &made[n_made]);
    if (rc < 0) return mla_errorf(MLA_ERR_IO, "%s/logits_kl: cannot write plot files", pdir);
    n_made += rc;
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
