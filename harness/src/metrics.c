/* metrics.c: the one writer and the one reader of metrics.tsv (format in metrics.h), both expanded
 * from MLA_METRICS_COLUMN_LIST. */
#include "mlacheck/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const column_names[] = {
#define X(name, field, kind) name,
    MLA_METRICS_COLUMN_LIST(X)
#undef X
};
#define N_COLUMNS ((int)(sizeof column_names / sizeof column_names[0]))

/* Text fields must not break the table. */
static void put_text(FILE *f, const char *s)
{
    for (; s && *s; s++) fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

#define PUT_TEXT(f, v) put_text(f, v)
#define PUT_INT(f, v) fprintf(f, "%d", v)
#define PUT_I64(f, v) fprintf(f, "%lld", (long long)(v))
#define PUT_F64(f, v) fprintf(f, "%.17g", v)

void mla_metrics_put(FILE *f, const mla_rep_row *rows, size_t n, int header)
{
    if (header) {
        for (int c = 0; c < N_COLUMNS; c++) fprintf(f, "%s%s", c ? "\t" : "", column_names[c]);
        fputc('\n', f);
    }
    for (size_t i = 0; i < n; i++) {
        const mla_rep_row *w = &rows[i];
        int c = 0;
#define X(name, field, kind)          \
    if (c++) fputc('\t', f);          \
    PUT_##kind(f, w->field);
        MLA_METRICS_COLUMN_LIST(X)
#undef X
        fputc('\n', f);
    }
}

mla_status mla_metrics_write(const char *path, const mla_rep_row *rows, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    mla_metrics_put(f, rows, n, 1);
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    return MLA_OK;
}

/* Parsers: 0 on success; the text must be a whole number. */
static int get_TEXT(char *s, const char **out)
{
    *out = s;
    return 0;
}

static int get_INT(char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < -2147483647L - 1 || v > 2147483647L) return -1;
    *out = (int)v;
    return 0;
}

static int get_I64(char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno) return -1;
    *out = v;
    return 0;
}

static int get_F64(char *s, double *out)
{
    char *end;
    *out = strtod(s, &end); /* "inf" and "nan" included: %.17g writes them */
    return !*s || *end ? -1 : 0;
}

static mla_status read_all(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return mla_errorf(errno == ENOENT ? MLA_ERR_NOT_FOUND : MLA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t n = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    mla_status st = buf ? MLA_OK : mla_errorf(MLA_ERR_NOMEM, "%s: out of memory", path);
    while (!st) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                st = mla_errorf(MLA_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, cap * 2);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - 1 - n, f);
        n += k;
        if (k == 0) {
            if (ferror(f)) st = mla_errorf(MLA_ERR_IO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (st) {
        free(buf);
        return st;
    }
    if (memchr(buf, '\0', n)) {
        free(buf);
        return mla_errorf(MLA_ERR_FORMAT, "%s: a NUL byte; expected a text table", path);
    }
    buf[n] = '\0';
    *out = buf;
    return MLA_OK;
}

/* Splits line at tabs into col[N_COLUMNS]; the number of fields found (> N_COLUMNS: too many). */
static int split(char *line, char **col)
{
    int nc = 0;
    for (char *p = line;; nc++) {
        char *t = strchr(p, '\t');
        if (nc < N_COLUMNS) col[nc] = p;
        if (!t) return nc + 1;
        *t = '\0';
        p = t + 1;
    }
}

mla_status mla_metrics_load(const char *path, mla_metrics *out)
{
    memset(out, 0, sizeof *out);
    mla_status st = read_all(path, &out->text);
    if (st) return st;
    size_t cap = 0;
    int ln = 0;
    for (char *at = out->text; *at && !st;) {
        char *line = at;
        size_t len = strcspn(at, "\n");
        at += len + (at[len] == '\n');
        line[len] = '\0';
        if (len && line[len - 1] == '\r') line[len - 1] = '\0';
        ln++;
        char *col[N_COLUMNS];
        int nc = split(line, col);
        if (nc != N_COLUMNS) {
            st = mla_errorf(MLA_ERR_FORMAT, "%s:%d: %d columns; expected %d", path, ln, nc, N_COLUMNS);
            break;
        }
        if (ln == 1) {
            for (int c = 0; c < N_COLUMNS && !st; c++)
                /* runs written before the rename call the limit use "headroom" */
                if (strcmp(col[c], column_names[c]) && !(!strcmp(column_names[c], "limit_use") && !strcmp(col[c], "headroom")))
                    st = mla_errorf(MLA_ERR_FORMAT, "%s:1: column %d is '%s'; expected '%s' (a metrics.tsv header)",
                                    path, c + 1, col[c], column_names[c]);
            continue;
        }
        if (out->n_rows == cap) {
            size_t nc2 = cap ? 2 * cap : 256;
            mla_rep_row *nr = realloc(out->rows, nc2 * sizeof *nr);
            if (!nr) {
                st = mla_errorf(MLA_ERR_NOMEM, "%s: out of memory (%zu rows)", path, nc2);
                break;
            }
            out->rows = nr;
            cap = nc2;
        }
        mla_rep_row *w = &out->rows[out->n_rows];
        memset(w, 0, sizeof *w);
        int c = 0;
#define X(name, field, kind)                                                                             \
    if (!st && get_##kind(col[c], &w->field))                                                            \
        st = mla_errorf(MLA_ERR_FORMAT, "%s:%d: column %s = '%s'; expected " #kind " (metrics.h)", path, ln, \
                        name, col[c]);                                                                   \
    c++;
        MLA_METRICS_COLUMN_LIST(X)
#undef X
        if (!st) out->n_rows++;
    }
    if (!st && ln == 0) st = mla_errorf(MLA_ERR_FORMAT, "%s: empty; expected a metrics.tsv header", path);
    if (st) mla_metrics_free(out);
    return st;
}

void mla_metrics_free(mla_metrics *m)
{
    if (!m) return;
    free(m->rows);
    free(m->text);
    memset(m, 0, sizeof *m);
}
