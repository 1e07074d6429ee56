/* journal.c: the run journal (mlacheck/journal.h). The report object stays the one place results
 * are held during a run; the journal appends what it gained, in the report's own formats (metric
 * rows through mla_metrics_put, checks through mla_rep_check_to_json), so a rebuilt report and a
 * finished one are written by the same code from the same facts. */
#include "mlacheck/journal.h"

#include "mla_core/hash.h"
#include "mlacheck/metrics.h"
#include "report_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct mla_jnl {
    mla_rep_run *rep;
    char dir[4200];
    int fd_rows, fd_lines;
    size_t rows_done, checks_done, kl_done; /* what of rep the journal holds */
    uint64_t props_hash;                    /* of the provenance last written (0: none yet) */
    int units_total, units_done;
    double t0;
    mla_status err; /* sticky: the first write that failed */
    char errmsg[600];
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The whole buffer to fd, then fsync: 0, or -1 with errno. */
static int write_all(int fd, const char *b, size_t n)
{
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        b += k;
        n -= (size_t)k;
    }
    return fsync(fd);
}

static mla_status fail_io(mla_jnl *j, const char *file, const char *what)
{
    mla_status st = mla_errorf(MLA_ERR_IO, "%s/%s: cannot %s the run journal: %s", j->dir, file, what, strerror(errno));
    if (!j->err) {
        j->err = st;
        snprintf(j->errmsg, sizeof j->errmsg, "%s", mla_last_error());
    }
    return st;
}

/* A small file written and fsync'd (the marker). */
static mla_status put_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    int bad = write_all(fd, text, strlen(text));
    int e = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad) return mla_errorf(MLA_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    return MLA_OK;
}

static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* One JSON line appended to journal.jsonl (o is consumed). */
static mla_status put_line(mla_jnl *j, json_t *o)
{
    if (j->err) {
        json_decref(o);
        return j->err;
    }
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!s) return mla_errorf(MLA_ERR_NOMEM, "%s/%s: a journal line", j->dir, MLA_JNL_LINES);
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return mla_errorf(MLA_ERR_NOMEM, "%s/%s: a journal line", j->dir, MLA_JNL_LINES);
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    int bad = write_all(j->fd_lines, line, n + 1);
    free(line);
    return bad ? fail_io(j, MLA_JNL_LINES, "append to") : MLA_OK;
}

static mla_status marker_text(const char *dir, const char *why)
{
    char path[4300], text[1400];
    if (mla_rep_pathf(path, sizeof path, "%s/%s", dir, MLA_JNL_MARKER)) return MLA_ERR_INVALID;
    snprintf(text, sizeof text,
             "This run folder does not hold a whole run: %s.\n"
             "journal.tsv and journal.jsonl hold every check that finished; `mlacheck report %s` rebuilds\n"
             "summary.json, metrics.tsv, summary.md, junit.xml and index.html from them.\n",
             why, dir);
    return put_file(path, text);
}

mla_status mla_jnl_open(mla_rep_run *rep, mla_jnl **out)
{
    *out = NULL;
    mla_jnl *j = calloc(1, sizeof *j);
    if (!j) return mla_errorf(MLA_ERR_NOMEM, "run journal");
    j->rep = rep;
    j->fd_rows = j->fd_lines = -1;
    j->t0 = now_s();
    if (mla_rep_pathf(j->dir, sizeof j->dir, "%s/%s", rep->results_dir, rep->run_id)) {
        free(j);
        return MLA_ERR_INVALID;
    }
    if (mkdir(j->dir, 0755) != 0) {
        mla_status st = mla_errorf(MLA_ERR_IO, "%s: cannot create the run folder: %s", j->dir, strerror(errno));
        free(j);
        return st;
    }
    char path[4300];
    mla_status st = marker_text(j->dir, "the run is in progress, or ended before writing its report");
    if (!st && mla_rep_pathf(path, sizeof path, "%s/%s", j->dir, MLA_JNL_ROWS)) st = MLA_ERR_INVALID;
    if (!st && (j->fd_rows = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644)) < 0) st = fail_io(j, MLA_JNL_ROWS, "create");
    if (!st && mla_rep_pathf(path, sizeof path, "%s/%s", j->dir, MLA_JNL_LINES)) st = MLA_ERR_INVALID;
    if (!st && (j->fd_lines = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644)) < 0) st = fail_io(j, MLA_JNL_LINES, "create");
    if (!st) {
        char *hdr = NULL;
        size_t hn = 0;
        FILE *m = open_memstream(&hdr, &hn);
        if (!m) st = mla_errorf(MLA_ERR_NOMEM, "run journal header");
        else {
            mla_metrics_put(m, NULL, 0, 1);
            fclose(m);
            if (write_all(j->fd_rows, hdr, hn)) st = fail_io(j, MLA_JNL_ROWS, "write");
            free(hdr);
        }
    }
    if (!st)
        st = put_line(j, json_pack("{s:i,s:s,s:s,s:s,s:s}", "journal", 1, "run_id", rep->run_id, "suite", rep->suite,
                                   "git_sha", rep->git_sha, "created", rep->created));
    if (st) {
        mla_jnl_close(j);
        return st;
    }
    sync_dir(j->dir);
    sync_dir(rep->results_dir);
    *out = j;
    return MLA_OK;
}

mla_status mla_jnl_set_units(mla_jnl *j, int units)
{
    j->units_total = units;
    return put_line(j, json_pack("{s:i}", "units", units));
}

/* The provenance (engine, model, device, reseed, ... as the run adds them) as one line whenever it
 * changed, so a rebuilt report names what the run ran on. */
static mla_status put_props(mla_jnl *j)
{
    const mla_rep_run *r = j->rep;
    uint64_t h = MLA_FNV1A_INIT; /* each string with its NUL, so key and value cannot run together */
    for (size_t i = 0; i < r->n_props; i++) {
        h = mla_fnv1a(h, r->props[i].key, strlen(r->props[i].key) + 1);
        h = mla_fnv1a(h, r->props[i].value, strlen(r->props[i].value) + 1);
    }
    if (!r->n_props || h == j->props_hash) return MLA_OK;
    json_t *o = json_object();
    for (size_t i = 0; o && i < r->n_props; i++) json_object_set_new(o, r->props[i].key, json_string(r->props[i].value));
    mla_status st = put_line(j, json_pack("{s:o}", "props", o));
    if (!st) j->props_hash = h;
    return st;
}

mla_status mla_jnl_sync(mla_jnl *j, int units_done)
{
    if (j->err) return j->err;
    mla_rep_run *r = j->rep;
    if (r->n_rows > j->rows_done) {
        char *buf = NULL;
        size_t bn = 0;
        FILE *m = open_memstream(&buf, &bn);
        if (!m) return mla_errorf(MLA_ERR_NOMEM, "run journal rows");
        mla_metrics_put(m, r->rows + j->rows_done, r->n_rows - j->rows_done, 0);
        fclose(m);
        int bad = write_all(j->fd_rows, buf, bn); /* one write: a torn row needs a crash mid-call */
        free(buf);
        if (bad) return fail_io(j, MLA_JNL_ROWS, "append to");
        j->rows_done = r->n_rows;
    }
    mla_status st = MLA_OK;
    for (; !st && j->checks_done < r->n_checks; j->checks_done++)
        st = put_line(j, json_pack("{s:o}", "check", mla_rep_check_to_json(&r->checks[j->checks_done])));
    for (; !st && j->kl_done < r->n_kl; j->kl_done++) {
        double k = r->kl[j->kl_done];
        st = put_line(j, json_pack("{s:o}", "kl", isfinite(k) ? json_real(k) : json_null()));
    }
    if (!st) st = put_props(j);
    if (st) return st;
    j->units_done = units_done;
    return put_line(j, json_pack("{s:i,s:f}", "done", units_done, "wall", now_s() - j->t0));
}

void mla_jnl_progress(const mla_jnl *j, int *units_done, int *units_total, int *checks)
{
    if (units_done) *units_done = j ? j->units_done : 0;
    if (units_total) *units_total = j ? j->units_total : 0;
    if (checks) *checks = j ? (int)j->checks_done : 0;
}

const char *mla_jnl_dir(const mla_jnl *j) { return j ? j->dir : ""; }

/* The report written into dir, the marker removed or rewritten: the last step of a run and of a
 * rebuild. */
static mla_status finish_report(mla_rep_run *r, const char *dir, double wall, const char *why, char *out, size_t n)
{
    mla_status st = mla_rep_set_incomplete(r, why);
    if (!st) st = mla_rep_finish(r, wall, out, n);
    if (st) return st;
    if (why) {
        st = marker_text(dir, why);
    } else {
        char path[4300];
        if (mla_rep_pathf(path, sizeof path, "%s/%s", dir, MLA_JNL_MARKER)) return MLA_ERR_INVALID;
        if (unlink(path) != 0 && errno != ENOENT)
            st = mla_errorf(MLA_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    }
    sync_dir(dir);
    return st;
}

mla_status mla_jnl_finish(mla_jnl *j, double wall, const char *why, char *out, size_t n)
{
    mla_status js = mla_jnl_sync(j, j->units_done);
    char jmsg[600] = "";
    if (js) snprintf(jmsg, sizeof jmsg, "%s", mla_last_error());
    mla_status st = finish_report(j->rep, j->dir, wall, why, out, n);
    if (!st) st = put_line(j, json_pack("{s:s}", "end", why ? why : "complete"));
    if (!st && js) st = mla_errorf(js, "%s", jmsg); /* the report is there, the journal is short */
    return st;
}

void mla_jnl_close(mla_jnl *j)
{
    if (!j) return;
    if (j->fd_rows >= 0) close(j->fd_rows);
    if (j->fd_lines >= 0) close(j->fd_lines);
    free(j);
}

int mla_jnl_is_incomplete(const char *dir)
{
    char path[4300];
    if (mla_rep_pathf(path, sizeof path, "%s/%s", dir, MLA_JNL_MARKER)) return 0;
    return access(path, F_OK) == 0;
}

/* ---- rebuild --------------------------------------------------------------------------------- */

/* journal.tsv ends on a whole row: a row torn by a crash mid-write is cut off (it was never synced). */
static mla_status cut_torn_row(const char *path, int *cut)
{
    *cut = 0;
    int fd = open(path, O_RDWR);
    if (fd < 0) return mla_errorf(errno == ENOENT ? MLA_ERR_NOT_FOUND : MLA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    off_t end = lseek(fd, 0, SEEK_END), k = end;
    char c = '\n';
    while (k > 0 && pread(fd, &c, 1, k - 1) == 1 && c != '\n') k--;
    mla_status st = MLA_OK;
    if (k < end) {
        if (ftruncate(fd, k) != 0) st = mla_errorf(MLA_ERR_IO, "%s: cannot cut a torn last row: %s", path, strerror(errno));
        else *cut = 1;
    }
    close(fd);
    return st;
}

static const char *jget(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

mla_status mla_jnl_rebuild(const char *dir_in, char *msg, size_t n)
{
    char dir[4200];
    if (mla_rep_pathf(dir, sizeof dir, "%s", dir_in)) return MLA_ERR_INVALID;
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dir[--dl] = '\0';
    char path[4300];
    if (mla_rep_pathf(path, sizeof path, "%s/%s", dir, MLA_JNL_LINES)) return MLA_ERR_INVALID;
    FILE *f = fopen(path, "r");
    if (!f)
        return mla_errorf(errno == ENOENT ? MLA_ERR_NOT_FOUND : MLA_ERR_IO, "%s: cannot read: %s; expected a run journal",
                          path, strerror(errno));
    mla_rep_run *r = calloc(1, sizeof *r);
    if (!r) {
        fclose(f);
        return MLA_ERR_NOMEM;
    }
    const char *slash = strrchr(dir, '/');
    r->results_dir = slash ? strndup(dir, (size_t)(slash - dir) ? (size_t)(slash - dir) : 1) : strdup(".");
    r->run_id = strdup(slash ? slash + 1 : dir);
    mla_status st = r->results_dir && r->run_id ? MLA_OK : MLA_ERR_NOMEM;
    char *line = NULL, *end = NULL;
    size_t cap = 0, lineno = 0;
    int units = 0, done = 0, torn = 0;
    double wall = NAN;
    ssize_t k;
    while (!st && (k = getline(&line, &cap, f)) > 0) {
        lineno++;
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        if (!o || !json_is_object(o)) {
            json_decref(o);
            if (line[k - 1] != '\n') { /* a last line torn by a crash: never synced as a whole */
                torn = 1;
                break;
            }
            st = mla_errorf(MLA_ERR_FORMAT, "%s:%zu: expected one JSON object a line (%s)", path, lineno, je.text);
            break;
        }
        json_t *v;
        if (lineno == 1) {
            if (!json_is_integer(json_object_get(o, "journal")))
                st = mla_errorf(MLA_ERR_FORMAT, "%s:1: expected the journal header {\"journal\":1, ...}", path);
            r->suite = strdup(jget(o, "suite"));
            r->git_sha = strdup(jget(o, "git_sha"));
            r->created = strdup(jget(o, "created"));
            if (!st && (!r->suite || !r->git_sha || !r->created)) st = MLA_ERR_NOMEM;
        } else if ((v = json_object_get(o, "check"))) {
            st = mla_rep_check_from_json(r, v, path, lineno);
        } else if ((v = json_object_get(o, "kl"))) {
            st = mla_rep_add_kl(r, json_is_number(v) ? json_number_value(v) : NAN);
        } else if ((v = json_object_get(o, "props")) && json_is_object(v)) {
            const char *key;
            json_t *pv;
            json_object_foreach(v, key, pv) if (!st && json_is_string(pv)) st = mla_rep_add_prop(r, key, json_string_value(pv));
        } else if ((v = json_object_get(o, "units"))) {
            units = (int)json_integer_value(v);
        } else if ((v = json_object_get(o, "done"))) {
            done = (int)json_integer_value(v);
            wall = json_number_value(json_object_get(o, "wall"));
        } else if ((v = json_object_get(o, "end"))) {
            free(end);
            end = strdup(json_string_value(v) ? json_string_value(v) : "");
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    int cut = 0;
    if (!st && lineno == 0) st = mla_errorf(MLA_ERR_FORMAT, "%s: empty; expected the journal header", path);
    if (!st && mla_rep_pathf(path, sizeof path, "%s/%s", dir, MLA_JNL_ROWS)) st = MLA_ERR_INVALID;
    if (!st) st = cut_torn_row(path, &cut);
    if (!st) {
        mla_metrics m = {0};
        st = mla_metrics_load(path, &m);
        for (size_t i = 0; !st && i < m.n_rows; i++) st = mla_rep_add_metric(r, &m.rows[i]);
        mla_metrics_free(&m);
    }
    char why[600];
    const char *w = NULL;
    if (!st) {
        if (end && strcmp(end, "complete") != 0) w = end;
        else if (!end) {
            snprintf(why, sizeof why,
                     "the run stopped after %d of %d case/profile units (%zu checks recorded) without writing its "
                     "report (killed or crashed); rebuilt from the journal",
                     done, units, r->n_checks);
            w = why;
        }
        st = finish_report(r, dir, wall, w, NULL, 0);
    }
    if (!st && msg && n)
        snprintf(msg, n, "rebuilt %s from its journal: %zu checks, %zu metric rows%s; %s", dir, r->n_checks, r->n_rows,
                 torn || cut ? " (a torn last line dropped)" : "", w ? w : "the run was complete");
    mla_rep_free(r);
    free(end);
    return st;
}
