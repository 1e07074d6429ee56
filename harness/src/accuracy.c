/* accuracy.c: the cost of each numerics profile in model quality (accuracy.h). All windows of the
 * text run as one batch through each (engine, profile); the reference's fp64 run is the baseline
 * every other row is measured against, so an engine is judged on the same tokens and positions. */
#include "mlacheck/accuracy.h"

#include "mlacheck/compare.h"
#include "mlacheck/driver.h"
#include "mla_model/model.h"
#include "report_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The windows as token arrays: BOS (when given) then window bytes, evenly spaced over the file. */
static mla_status read_windows(const mla_acc_opts *o, int vocab, int32_t ***tok, int *T)
{
    if (o->window < 2 || o->n_windows < 1)
        return mla_errorf(MLA_ERR_INVALID, "accuracy: window %d, windows %d; expected >= 2 and >= 1", o->window,
                          o->n_windows);
    if (vocab < 256 || o->bos >= vocab)
        return mla_errorf(MLA_ERR_INVALID, "accuracy: %s: vocabulary %d; expected a byte-level model (>= 256, > bos %d)",
                          o->model, vocab, o->bos);
    FILE *f = fopen(o->text, "rb");
    if (!f) return mla_errorf(MLA_ERR_IO, "accuracy: text %s: %s", o->text, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || sb.st_size < o->window) {
        fclose(f);
        return mla_errorf(MLA_ERR_FORMAT, "accuracy: text %s: %lld bytes; expected at least one window of %d",
                          o->text, (long long)sb.st_size, o->window);
    }
    long stride = o->n_windows > 1 ? (long)((sb.st_size - o->window) / (o->n_windows - 1)) : 0;
    *T = o->window + (o->bos >= 0);
    int32_t **t = calloc((size_t)o->n_windows, sizeof *t);
    unsigned char *b = malloc((size_t)o->window);
    mla_status st = t && b ? MLA_OK : mla_errorf(MLA_ERR_NOMEM, "accuracy: windows");
    for (int k = 0; !st && k < o->n_windows; k++) {
        t[k] = malloc((size_t)*T * sizeof(int32_t));
        if (!t[k]) st = mla_errorf(MLA_ERR_NOMEM, "accuracy: windows");
        else if (fseek(f, stride * k, SEEK_SET) != 0 || fread(b, 1, (size_t)o->window, f) != (size_t)o->window)
            st = mla_errorf(MLA_ERR_IO, "accuracy: text %s: reading %d bytes at %ld", o->text, o->window, stride * k);
        else {
            int j = 0;
            if (o->bos >= 0) t[k][j++] = o->bos;
            for (int i = 0; i < o->window; i++) t[k][j++] = b[i];
        }
    }
    free(b);
    fclose(f);
    if (st && t)
        for (int k = 0; k < o->n_windows; k++) free(t[k]);
    if (st) free(t);
    else *tok = t;
    return st;
}

static void free_dumps(mla_dump **d, int n)
{
    if (!d) return;
    for (int k = 0; k < n; k++) mla_dump_free(d[k]);
    free(d);
}

static mla_status drive_all(const mla_acc_opts *o, const char *engine, mla_model *m, mla_profile prof, int32_t **tok,
                            int n, int T, mla_dump ***out)
{
    mla_run_opts ro;
    mla_run_opts_default(&ro);
    ro.profile = prof;
    ro.max_seqs = n;
    ro.max_seq_len = T + 1;
    mla_engine e;
    mla_status st = mla_engine_open(engine, m, &ro, &e);
    if (st) return st;
    mla_dump **d = calloc((size_t)n, sizeof *d);
    int *lens = malloc((size_t)n * sizeof *lens);
    if (!d || !lens) st = mla_errorf(MLA_ERR_NOMEM, "accuracy: dumps");
    for (int k = 0; !st && k < n; k++) lens[k] = T;
    mla_drive_opts dopt = {.path = (mla_path)o->path, .prefill_len = o->prefill_len, .chunk = o->chunk};
    if (!st) st = mla_drive(&e, mla_model_config(m), n, (const int32_t *const *)tok, lens, &dopt, d);
    mla_engine_close(&e);
    free(lens);
    if (st) free_dumps(d, n);
    else *out = d;
    return st;
}

/* Sums for a pooled rel L2: sum (b - a)^2 and sum a^2 over a tensor pair. */
static mla_status add_sq(const mla_tensor *a, const mla_tensor *b, const char *what, double *dd, double *aa)
{
    if (!a || !b || !mla_tensor_same_shape(a, b))
        return mla_errorf(MLA_ERR_SHAPE, "accuracy: tap %s missing or of another shape in one of the runs", what);
    int64_t n = mla_tensor_numel(a);
    for (int64_t i = 0; i < n; i++) {
        double x = mla_tensor_get_f64(a, i), y = mla_tensor_get_f64(b, i);
        *dd += (y - x) * (y - x);
        *aa += x * x;
    }
    return MLA_OK;
}

/* The row's metrics from its dumps against the baseline's (base may equal cand: the fp64 row). */
static mla_status score(mla_acc_row *row, mla_dump **base, mla_dump **cand, int32_t **tok, int n, int T, int L,
                        int64_t *n_pred)
{
    const mla_tensor *l0 = mla_dump_get(base[0], -1, MLA_TAP_LOGITS);
    if (!l0 || l0->ndim != 2) return mla_errorf(MLA_ERR_FORMAT, "accuracy: the baseline has no logits [T, V]");
    int64_t V = l0->shape[1];
    double *x = malloc((size_t)V * sizeof *x), *lpa = malloc((size_t)V * sizeof *lpa),
           *lpb = malloc((size_t)V * sizeof *lpb);
    double *ld = calloc((size_t)L * 2, sizeof *ld);
    if (!x || !lpa || !lpb || !ld) {
        free(x), free(lpa), free(lpb), free(ld);
        return mla_errorf(MLA_ERR_NOMEM, "accuracy: scratch");
    }
    double bits = 0, kl = 0, klmax = 0, gd = 0, ga = 0;
    int64_t agree = 0, rows = 0, pred = 0;
    mla_status st = MLA_OK;
    for (int k = 0; !st && k < n; k++) {
        const mla_tensor *la = mla_dump_get(base[k], -1, MLA_TAP_LOGITS), *lb = mla_dump_get(cand[k], -1, MLA_TAP_LOGITS);
        st = add_sq(la, lb, "logits", &gd, &ga);
        for (int l = 0; !st && l < L; l++)
            st = add_sq(mla_dump_get(base[k], l, MLA_TAP_OUT), mla_dump_get(cand[k], l, MLA_TAP_OUT), "out",
                        &ld[2 * l], &ld[2 * l + 1]);
        for (int t = 0; !st && t < T; t++) {
            for (int64_t v = 0; v < V; v++) x[v] = mla_tensor_get_f64(la, t * V + v);
            int bad = mla_cmp_log_softmax(x, V, lpa);
            for (int64_t v = 0; v < V; v++) x[v] = mla_tensor_get_f64(lb, t * V + v);
            bad |= mla_cmp_log_softmax(x, V, lpb);
            if (bad) {
                st = mla_errorf(MLA_ERR_NONFINITE, "accuracy: %s %s: window %d token %d: logits without a finite value",
                                row->engine, mla_profile_name(row->profile), k, t);
                break;
            }
            int64_t ia = 0, ib = 0;
            double d = 0;
            for (int64_t v = 0; v < V; v++) {
                double p = exp(lpa[v]);
                if (p > 0) d += p * (lpa[v] - lpb[v]);
                if (lpa[v] > lpa[ia]) ia = v;
                if (lpb[v] > lpb[ib]) ib = v;
            }
            d = d > 0 ? d : 0; /* negatives are rounding */
            kl += d;
            klmax = d > klmax ? d : klmax;
            agree += ia == ib;
            rows++;
            if (t + 1 < T) {
                bits -= lpb[tok[k][t + 1]] / log(2.0);
                pred++;
            }
        }
    }
    if (!st) {
        row->bits_per_byte = bits / (double)pred;
        row->kl_mean = kl / (double)rows;
        row->kl_max = klmax;
        row->top1 = (double)agree / (double)rows;
        row->logits_rel_l2 = ga > 0 ? sqrt(gd / ga) : 0;
        for (int l = 0; l < L; l++) row->layer_rel_l2[l] = ld[2 * l + 1] > 0 ? sqrt(ld[2 * l] / ld[2 * l + 1]) : 0;
        *n_pred = pred;
    }
    free(x), free(lpa), free(lpb), free(ld);
    return st;
}

mla_status mla_accuracy_run(const mla_acc_opts *o, mla_acc_result *out)
{
    memset(out, 0, sizeof *out);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mla_model *m = NULL;
    mla_status st = mla_model_open(o->model, &m);
    if (st) return st;
    const mla_config *cfg = mla_model_config(m);
    int32_t **tok = NULL;
    int T = 0, n = o->n_windows, L = cfg->num_hidden_layers;
    st = read_windows(o, cfg->vocab_size, &tok, &T);
    mla_dump **base = NULL;
    if (!st) st = drive_all(o, "ref", m, MLA_PROFILE_FP64, tok, n, T, &base);
    out->n_layers = L;
    out->rows = st ? NULL : calloc((size_t)o->n_profiles + 1, sizeof *out->rows);
    if (!st && !out->rows) st = mla_errorf(MLA_ERR_NOMEM, "accuracy: rows");
    for (int r = 0; !st && r <= o->n_profiles; r++) {
        mla_acc_row *row = &out->rows[r];
        row->profile = r ? o->profiles[r - 1] : MLA_PROFILE_FP64;
        snprintf(row->engine, sizeof row->engine, "%s", r ? o->engine : "ref");
        row->layer_rel_l2 = calloc((size_t)L, sizeof(double));
        if (!row->layer_rel_l2) {
            st = mla_errorf(MLA_ERR_NOMEM, "accuracy: rows");
            break;
        }
        out->n_rows = r + 1;
        mla_dump **cand = base;
        if (r) st = drive_all(o, o->engine, m, row->profile, tok, n, T, &cand);
        if (!st) st = score(row, base, cand, tok, n, T, L, &out->n_predicted);
        if (cand != base) free_dumps(cand, n);
    }
    free_dumps(base, n);
    if (tok)
        for (int k = 0; k < n; k++) free(tok[k]);
    free(tok);
    mla_model_free(m);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (st) mla_accuracy_free(out);
    return st;
}

void mla_accuracy_free(mla_acc_result *r)
{
    for (int i = 0; r->rows && i < r->n_rows; i++) free(r->rows[i].layer_rel_l2);
    free(r->rows);
    memset(r, 0, sizeof *r);
}

/* ---------- files ---------- */

static FILE *open_in(const char *dir, const char *name, char *path, size_t n)
{
    if (mla_rep_pathf(path, n, "%s/%s", dir, name)) return NULL;
    return fopen(path, "w");
}

static mla_status close_checked(FILE *f, const char *path)
{
    if (!f) return mla_errorf(MLA_ERR_IO, "accuracy: %s: %s", path, strerror(errno));
    if (ferror(f) | (fclose(f) != 0)) return mla_errorf(MLA_ERR_IO, "accuracy: writing %s failed", path);
    return MLA_OK;
}

static void write_plot(const mla_acc_result *r, const char *dir)
{
    char path[4400];
    FILE *f = open_in(dir, "growth.dat", path, sizeof path);
    if (!f) return;
    fprintf(f, "# layer");
    for (int i = 1; i < r->n_rows; i++) fprintf(f, "\t%s/%s", r->rows[i].engine, mla_profile_name(r->rows[i].profile));
    fprintf(f, "\n");
    for (int l = 0; l < r->n_layers; l++) {
        fprintf(f, "%d", l);
        for (int i = 1; i < r->n_rows; i++) fprintf(f, "\t%.6e", r->rows[i].layer_rel_l2[l]);
        fprintf(f, "\n");
    }
    if (fclose(f) != 0) return;
    f = open_in(dir, "growth.gp", path, sizeof path);
    if (!f) return;
    fprintf(f, "# generated by mlacheck accuracy; run from this folder: gnuplot growth.gp\n"
               "set title 'error of each layer output against fp64 (pooled rel L2)'\n"
               "set xlabel 'layer'\nset ylabel 'rel L2 vs fp64'\nset logscale y\nset format y '%%.0e'\n"
               "set xtics 1\nset grid\nset key outside right\nset style data linespoints\n"
               "set terminal pngcairo size 1000,600\nset output 'growth.png'\nplot ");
    for (int i = 1; i < r->n_rows; i++)
        fprintf(f, "%s'growth.dat' using 1:%d title '%s/%s' lw 2 pt 7", i > 1 ? ", " : "", i + 1, r->rows[i].engine,
                mla_profile_name(r->rows[i].profile));
    fprintf(f, "\nset terminal svg size 1000,600 dynamic\nset output 'growth.svg'\nreplot\nunset output\n");
    if (fclose(f) != 0) return;
    const char *gp = mla_rep_find_gnuplot();
    if (gp && r->n_rows > 1) (void)mla_rep_run_gnuplot(gp, dir, "growth");
}

mla_status mla_accuracy_write(const mla_acc_result *r, const mla_acc_opts *o, const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return mla_errorf(MLA_ERR_IO, "accuracy: folder %s: %s", dir, strerror(errno));
    char path[4400];
    FILE *f = open_in(dir, "accuracy.tsv", path, sizeof path);
    if (f) {
        fprintf(f, "engine\tprofile\tbits_per_byte\tkl_mean\tkl_max\ttop1_agree\tlogits_rel_l2");
        for (int l = 0; l < r->n_layers; l++) fprintf(f, "\tL%d_out_rel_l2", l);
        fprintf(f, "\n");
        for (int i = 0; i < r->n_rows; i++) {
            const mla_acc_row *w = &r->rows[i];
            fprintf(f, "%s\t%s\t%.6f\t%.6e\t%.6e\t%.6f\t%.6e", w->engine, mla_profile_name(w->profile), w->bits_per_byte,
                    w->kl_mean, w->kl_max, w->top1, w->logits_rel_l2);
            for (int l = 0; l < r->n_layers; l++) fprintf(f, "\t%.6e", w->layer_rel_l2[l]);
            fprintf(f, "\n");
        }
    }
    mla_status st = close_checked(f, path);
    if (st) return st;
    f = open_in(dir, "accuracy.md", path, sizeof path);
    if (f) {
        fprintf(f, "# Accuracy of each numerics profile: %s\n\n", o->model);
        fprintf(f, "Text: `%s`, %d windows of %d bytes%s, %lld predicted bytes per row; path %s", o->text, o->n_windows,
                o->window, o->bos >= 0 ? " after BOS" : "", (long long)r->n_predicted, mla_path_name((mla_path)o->path));
        if (o->path == MLA_PATH_DECODE) fprintf(f, " (%d tokens prefilled, the rest decoded one at a time)", o->prefill_len);
        if (o->path == MLA_PATH_CHUNKED) fprintf(f, " (chunks of %d)", o->chunk);
        fprintf(f, "; baseline: the reference engine in fp64 on the same path. %.1f s.\n\n", r->seconds);
        fprintf(f, "| engine | profile | bits/byte | Δ bits/byte | KL mean (nats) | KL max | top-1 agree | logits rel L2 |");
        for (int l = 0; l < r->n_layers; l++) fprintf(f, " L%d out |", l);
        fprintf(f, "\n|---|---|---|---|---|---|---|---|");
        for (int l = 0; l < r->n_layers; l++) fprintf(f, "---|");
        fprintf(f, "\n");
        for (int i = 0; i < r->n_rows; i++) {
            const mla_acc_row *w = &r->rows[i];
            fprintf(f, "| %s | %s | %.4f | %+.4f | %.3e | %.3e | %.4f | %.3e |", w->engine, mla_profile_name(w->profile),
                    w->bits_per_byte, w->bits_per_byte - r->rows[0].bits_per_byte, w->kl_mean, w->kl_max, w->top1,
                    w->logits_rel_l2);
            for (int l = 0; l < r->n_layers; l++) fprintf(f, " %.2e |", w->layer_rel_l2[l]);
            fprintf(f, "\n");
        }
        fprintf(f, "\nLayer columns: rel L2 of each layer's output against fp64 over all windows; their ratio from "
                   "one layer to the next is the error growth (growth.svg).\n");
    }
    st = close_checked(f, path);
    if (!st) write_plot(r, dir);
    return st;
}
