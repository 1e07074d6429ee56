/* progress.c: the progress lines of a suite run (progress.h): per-check lines and heartbeats for a
 * log, a live line for a terminal. One lock guards the state; the heartbeat thread and the runner
 * both print under it, so lines never interleave. */
#include "mlacheck/progress.h"

#include "mlacheck/report.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

/* A check of the current (case, profile): its time and the worst of its verdicts. */
typedef struct {
    char check[80];
    double secs;
    int has_verdict, verdict, error, printed, pending;
    char path[16], msg[512]; /* the first failing (else first) path and its message */
} pg_check;

/* One verdict kept for the verbose per-path lines. */
typedef struct {
    int check; /* index into checks */
    char path[16];
    int verdict, error;
    char msg[512];
} pg_path;

struct mla_progress {
    mla_progress_opts o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int thread_on, stop, begun;
    double t0, last_beat;
    int64_t total, done, unit_base;
    char case_name[128], profile[16], running[80];
    double running_t0;
    pg_check *checks;
    int n_checks, cap_checks;
    pg_path *paths;
    int n_paths, cap_paths;
    int live_shown; /* a live line is on the screen */
};

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* m:ss or h:mm:ss */
static void fmt_dur(char *out, size_t n, double s)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600) snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(out, n, "%ld:%02ld", t / 60, t % 60);
}

static double fraction(const mla_progress *p)
{
    return p->total > 0 ? (double)p->done / (double)p->total : 0;
}

/* "ETA 3:40", or "ETA unknown" before any work is done */
static void fmt_eta(const mla_progress *p, double elapsed, char *out, size_t n)
{
    double f = fraction(p);
    char d[32];
    if (f <= 0 || f > 1) {
        snprintf(out, n, "ETA unknown");
        return;
    }
    fmt_dur(d, sizeof d, elapsed * (1 - f) / f);
    snprintf(out, n, "ETA %s", d);
}

/* "run" / "run@gpu": the engine drives the checks share, not a check */
static int is_drive(const char *name)
{
    return !strncmp(name, "run", 3) && (name[3] == 0 || name[3] == '@');
}

static void live_clear(mla_progress *p)
{
    if (p->live_shown) fputs("\r\033[K", p->o.out);
    p->live_shown = 0;
}

static void live_draw(mla_progress *p)
{
    if (p->o.mode != MLA_PROGRESS_LIVE || !p->begun) return;
    double el = mono_now() - p->t0;
    char e[32], eta[40];
    fmt_dur(e, sizeof e, el);
    fmt_eta(p, el, eta, sizeof eta);
    /* cut to the terminal's width: a wrapped line cannot be redrawn in place */
    char line[512];
    struct winsize ws;
    int w = ioctl(fileno(p->o.out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 ? ws.ws_col - 1 : 79;
    snprintf(line, sizeof line, "[%s %3d%% %s] %s / %s%s%s%s", e, (int)(100 * fraction(p)), eta, p->case_name,
             p->profile, p->running[0] ? " / " : "", p->running, is_drive(p->running) ? " (engine drives)" : "");
    if (w < (int)sizeof line) line[w] = 0;
    fprintf(p->o.out, "\r\033[K%s", line);
    fflush(p->o.out);
    p->live_shown = 1;
}

/* The "[1:02  23%] " every line starts with. */
static void line_head(mla_progress *p)
{
    char e[32];
    fmt_dur(e, sizeof e, mono_now() - p->t0);
    live_clear(p);
    fprintf(p->o.out, "[%s %3d%%] ", e, (int)(100 * fraction(p)));
}

static const char *verdict_word(int verdict, int error)
{
    return verdict == MLA_REP_FAIL ? (error ? "ERROR" : "FAIL") : verdict == MLA_REP_PASS ? "PASS" : "SKIP";
}

static void heartbeat(mla_progress *p)
{
    double now = mono_now(), el = now - p->t0;
    char e[32], eta[40];
    fmt_dur(e, sizeof e, el);
    fmt_eta(p, el, eta, sizeof eta);
    line_head(p);
    fprintf(p->o.out, "heartbeat: %s elapsed, %lld of %lld check calls done, %s; running %s / %s", e,
            (long long)p->done, (long long)p->total, eta, p->case_name[0] ? p->case_name : "-",
            p->profile[0] ? p->profile : "-");
    if (p->running[0])
        fprintf(p->o.out, " / %s%s for %.0f s", p->running, is_drive(p->running) ? " (engine drives)" : "",
                now - p->running_t0);
    fputc('\n', p->o.out);
    fflush(p->o.out);
    p->last_beat = now;
}

static void *beat_thread(void *u)
{
    mla_progress *p = u;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        /* live: redraw each second (the clock moves); lines: wake often enough to keep the interval */
        double wait = p->o.mode == MLA_PROGRESS_LIVE ? 1.0 : p->o.heartbeat_s < 1 ? p->o.heartbeat_s : 1.0;
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        long ns = dl.tv_nsec + (long)(wait * 1e9);
        dl.tv_sec += ns / 1000000000L;
        dl.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&p->cv, &p->mu, &dl);
        if (p->stop || !p->begun) continue;
        if (p->o.mode == MLA_PROGRESS_LIVE) live_draw(p);
        else if (mono_now() - p->last_beat >= p->o.heartbeat_s) heartbeat(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mla_status mla_progress_new(const mla_progress_opts *o, mla_progress **out)
{
    *out = NULL;
    if (!o || o->mode == MLA_PROGRESS_OFF) return MLA_OK;
    mla_progress *p = calloc(1, sizeof *p);
    if (!p) return mla_errorf(MLA_ERR_NOMEM, "progress");
    p->o = *o;
    if (!p->o.out) p->o.out = stderr;
    if (!(p->o.heartbeat_s > 0)) p->o.heartbeat_s = 10;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->t0 = p->last_beat = mono_now();
    /* without the thread the lines still come, only the heartbeats do not */
    p->thread_on = pthread_create(&p->thread, NULL, beat_thread, p) == 0;
    *out = p;
    return MLA_OK;
}

void mla_progress_free(mla_progress *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (p->thread_on) pthread_join(p->thread, NULL);
    live_clear(p);
    fflush(p->o.out);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->checks);
    free(p->paths);
    free(p);
}

void mla_progress_begin(mla_progress *p, int64_t total_work)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->total = total_work;
    p->done = p->unit_base = 0;
    p->t0 = p->last_beat = mono_now();
    p->begun = 1;
    pthread_mutex_unlock(&p->mu);
}

void mla_progress_unit(mla_progress *p, const char *case_name, const char *profile, int64_t planned)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    snprintf(p->case_name, sizeof p->case_name, "%s", case_name);
    snprintf(p->profile, sizeof p->profile, "%s", profile);
    p->running[0] = 0;
    p->n_checks = p->n_paths = 0;
    p->unit_base = p->done + planned;
    live_draw(p);
    pthread_mutex_unlock(&p->mu);
}

/* The entry of check in the current unit, created on first use; NULL when out of memory (the line
 * is then left out: progress never fails a run). */
static pg_check *check_get(mla_progress *p, const char *check, int *index)
{
    for (int i = 0; i < p->n_checks; i++)
        if (!strcmp(p->checks[i].check, check)) {
            if (index) *index = i;
            return &p->checks[i];
        }
    if (p->n_checks == p->cap_checks) {
        int cap = p->cap_checks ? 2 * p->cap_checks : 16;
        pg_check *n = realloc(p->checks, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        p->checks = n;
        p->cap_checks = cap;
    }
    pg_check *c = &p->checks[p->n_checks];
    memset(c, 0, sizeof *c);
    snprintf(c->check, sizeof c->check, "%s", check);
    if (index) *index = p->n_checks;
    p->n_checks++;
    return c;
}

void mla_progress_enter(mla_progress *p, const char *check)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    snprintf(p->running, sizeof p->running, "%s", check);
    p->running_t0 = mono_now();
    live_draw(p);
    pthread_mutex_unlock(&p->mu);
}

void mla_progress_leave(mla_progress *p, int64_t work)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    if (p->running[0]) {
        pg_check *c = check_get(p, p->running, NULL);
        if (c) c->secs += mono_now() - p->running_t0;
    }
    p->running[0] = 0;
    p->done += work;
    if (p->done > p->unit_base) p->done = p->unit_base; /* more calls than planned: the plan is the cap */
    pthread_mutex_unlock(&p->mu);
}

/* fail beats pass beats skip: a check's line shows its worst path */
static int verdict_rank(int v)
{
    return v == MLA_REP_FAIL ? 2 : v == MLA_REP_PASS ? 1 : 0;
}

/* Keeps a verdict for the verbose per-path lines (left out when out of memory). */
static void path_add(mla_progress *p, int ci, const char *path, int verdict, int error, const char *msg)
{
    if (p->n_paths == p->cap_paths) {
        int cap = p->cap_paths ? 2 * p->cap_paths : 16;
        pg_path *n = realloc(p->paths, (size_t)cap * sizeof *n);
        if (!n) return;
        p->paths = n;
        p->cap_paths = cap;
    }
    pg_path *w = &p->paths[p->n_paths++];
    w->check = ci;
    snprintf(w->path, sizeof w->path, "%s", path);
    w->verdict = verdict;
    w->error = error;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
}

void mla_progress_verdict(mla_progress *p, const char *check, const char *path, int verdict, int error,
                          const char *msg)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    int ci = 0;
    pg_check *c = check_get(p, check, &ci);
    if (c && !c->printed) {
        if (!c->has_verdict || verdict_rank(verdict) > verdict_rank(c->verdict)) {
            c->verdict = verdict;
            c->error = error;
            snprintf(c->path, sizeof c->path, "%s", path);
            snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "");
        }
        c->has_verdict = c->pending = 1;
        if (p->o.verbose) path_add(p, ci, path, verdict, error, msg);
    }
    pthread_mutex_unlock(&p->mu);
}

/* The line of one check: "[1:02  23%] PASS  case / check / profile  1.2 s", a failure's path and
 * message after it; verbose: each path below. Live mode prints only failures (and all when verbose). */
static void check_line(mla_progress *p, int ci)
{
    pg_check *c = &p->checks[ci];
    c->printed = 1;
    c->pending = 0;
    int bad = c->verdict == MLA_REP_FAIL;
    if (p->o.mode == MLA_PROGRESS_LIVE && !bad && !p->o.verbose) return;
    line_head(p);
    fprintf(p->o.out, "%-5s %s / %s / %s  %.2f s", verdict_word(c->verdict, c->error), p->case_name, c->check,
            p->profile, c->secs);
    if (bad || c->verdict == MLA_REP_SKIP) fprintf(p->o.out, "  %s: %s", c->path, c->msg);
    fputc('\n', p->o.out);
    if (p->o.verbose)
        for (int i = 0; i < p->n_paths; i++)
            if (p->paths[i].check == ci)
                fprintf(p->o.out, "        %-8s %-5s %s\n", p->paths[i].path,
                        verdict_word(p->paths[i].verdict, p->paths[i].error), p->paths[i].msg);
}

void mla_progress_flush(mla_progress *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n_checks; i++)
        if (p->checks[i].pending && !p->checks[i].printed) check_line(p, i);
    fflush(p->o.out);
    live_draw(p);
    pthread_mutex_unlock(&p->mu);
}

void mla_progress_unit_end(mla_progress *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < p->n_checks; i++) {
        pg_check *c = &p->checks[i];
        if (c->has_verdict && !c->printed) check_line(p, i);
        else if (!c->has_verdict && p->o.verbose && c->secs > 0) {
            /* time with no verdict of its own: the engine drives the checks shared */
            line_head(p);
            fprintf(p->o.out, "      %s / %s / %s  %.2f s (engine drives)\n", p->case_name, c->check, p->profile,
                    c->secs);
        }
    }
    p->done = p->unit_base;
    p->n_checks = p->n_paths = 0;
    p->running[0] = 0;
    fflush(p->o.out);
    live_draw(p);
    pthread_mutex_unlock(&p->mu);
}
