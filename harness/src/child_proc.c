/* child_proc.c: a child process for a plugin's code and the caller's deadline I/O (child_proc.h). */
#include "child_proc.h"

#include "mla/attn_op.h"
#include "mla/plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the child's side ------------------------------------------------------------------------ */

int mla_cproc_send(int fd, const void *buf, size_t n)
{
    const char *b = buf;
    while (n) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

int mla_cproc_recv(int fd, void *buf, size_t n)
{
    char *b = buf;
    while (n) {
        ssize_t k = recv(fd, b, n, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

void mla_cproc_stage(char *stage, const char *entry)
{
    /* written before the call, read by the caller only after the child is gone: no race */
    snprintf(stage, MLA_CPROC_STAGE_MAX, "%s", entry);
}

void mla_cproc_stage_plugin(char *stage, const char *name)
{
    if (strncmp(name, "plugin:", 7) != 0) return;
    mla_cproc_stage(stage, "dlopen (the library's constructors)");
    void *h = dlopen(name + 7, RTLD_NOW | RTLD_LOCAL);
    if (!h) return; /* the registry's dlopen says why */
    mla_cproc_stage(stage, dlsym(h, MLA_PLUGIN_SYMBOL) ? MLA_PLUGIN_SYMBOL : MLA_ATTN_PLUGIN_SYMBOL);
    /* the handle stays open: the registry's dlopen of the same path takes this one */
}

/* ---- the caller's side ----------------------------------------------------------------------- */

double mla_cproc_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double mla_cproc_deadline(const mla_cproc *p) { return mla_cproc_now() + p->timeout_s; }

static mla_status timeout_from_env(int *out)
{
    *out = MLA_PCHILD_TIMEOUT_DEFAULT;
    const char *s = getenv(MLA_PCHILD_TIMEOUT_ENV);
    if (!s || !*s) return MLA_OK;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*end || errno || v < 1 || v > 86400)
        return mla_errorf(MLA_ERR_INVALID, "environment %s '%s': expected whole seconds in [1, 86400]",
                          MLA_PCHILD_TIMEOUT_ENV, s);
    *out = (int)v;
    return MLA_OK;
}

mla_status mla_cproc_spawn(mla_cproc *p, const char *name, mla_cproc_body body, void *arg)
{
    memset(p, 0, sizeof *p);
    p->fd = -1;
    snprintf(p->name, sizeof p->name, "%s", name);
    mla_status st = timeout_from_env(&p->timeout_s);
    if (st) return st;
    p->stage = mmap(NULL, MLA_CPROC_STAGE_MAX, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p->stage == MAP_FAILED) {
        p->stage = NULL;
        return mla_errorf(MLA_ERR_NOMEM, "engine %s: a shared page: %s", name, strerror(errno));
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        st = mla_errorf(MLA_ERR_IO, "engine %s: socketpair: %s", name, strerror(errno));
        mla_cproc_free(p);
        return st;
    }
    fflush(NULL); /* the child must not write the caller's buffered output a second time */
    pid_t pid = fork();
    if (pid < 0) {
        st = mla_errorf(MLA_ERR_NOMEM, "engine %s: fork: %s", name, strerror(errno));
        close(sv[0]);
        close(sv[1]);
        mla_cproc_free(p);
        return st;
    }
    if (pid == 0) {
        close(sv[0]);
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(STDERR_FILENO, STDOUT_FILENO);
        mla_clear_error();
        body(sv[1], p->stage, arg);
        _exit(0);
    }
    close(sv[1]);
    p->fd = sv[0];
    p->pid = pid;
    return MLA_OK;
}

int mla_cproc_io(mla_cproc *p, void *buf, size_t n, double deadline, int out)
{
    char *b = buf;
    while (n) {
        double left = deadline - mla_cproc_now();
        if (left <= 0) return -2;
        struct pollfd pf = {.fd = p->fd, .events = out ? POLLOUT : POLLIN};
        int k = poll(&pf, 1, left > 3600 ? 3600000 : (int)(left * 1000) + 1);
        if (k < 0 && errno == EINTR) continue; /* a signal for the caller: the call goes on */
        if (k < 0) return -1;
        if (k == 0) continue;
        ssize_t m = out ? send(p->fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT) : recv(p->fd, b, n, MSG_DONTWAIT);
        if (m < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (m <= 0) return -1;
        b += m;
        n -= (size_t)m;
    }
    return 0;
}

mla_status mla_cproc_dead(mla_cproc *p, const char *entry, int timed_out)
{
    int status = 0, reaped = 0;
    if (timed_out) kill(p->pid, SIGKILL);
    /* an EOF is the child exiting: give it a moment to finish dying, then make sure */
    for (int i = 0; i < 200 && !reaped; i++) {
        pid_t w = waitpid(p->pid, &status, WNOHANG);
        if (w == p->pid) reaped = 1;
        else if (w < 0 && errno != EINTR) break;
        else usleep(10000);
    }
    if (!reaped) {
        kill(p->pid, SIGKILL);
        reaped = waitpid(p->pid, &status, 0) == p->pid;
    }
    char how[300], where[MLA_CPROC_STAGE_MAX];
    snprintf(where, sizeof where, "%s", entry ? entry : p->stage && p->stage[0] ? p->stage : "(starting)");
    if (timed_out)
        snprintf(how, sizeof how, "did not return within %d s (%s), so the plugin process was killed", p->timeout_s,
                 MLA_PCHILD_TIMEOUT_ENV);
    else if (reaped && WIFSIGNALED(status))
        snprintf(how, sizeof how, "crashed: the plugin process died of signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else if (reaped && WIFEXITED(status))
        snprintf(how, sizeof how, "ended the plugin process with exit status %d (a plugin must return a status, never exit)",
                 WEXITSTATUS(status));
    else
        snprintf(how, sizeof how, "lost the plugin process (no exit status)");
    snprintf(p->dead_msg, sizeof p->dead_msg, "engine %s: %s %s", p->name, where, how);
    p->dead = 1;
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
    return mla_errorf(MLA_ERR_DEVICE, "%s", p->dead_msg);
}

void mla_cproc_reap(mla_cproc *p)
{
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR) {}
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
}

void mla_cproc_free(mla_cproc *p)
{
    if (p->stage) munmap(p->stage, MLA_CPROC_STAGE_MAX);
    p->stage = NULL;
}
