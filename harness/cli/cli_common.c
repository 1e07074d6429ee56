/* cli_common.c: exit codes (the only mapping from results to them), project folders, git sha, fault lists. */
#include "cli.h"

#include "mla/backend.h"
#include "mlacheck/opcheck.h"
#include "mlacheck/progress.h"
#include "mlacheck/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MLA_SOURCE_DIR
#define MLA_SOURCE_DIR "."
#endif

int cli_exit_for(mla_status st)
{
    switch (st) {
    case MLA_OK: return CLI_EXIT_PASS;
    case MLA_ERR_UNSUPPORTED:
    case MLA_ERR_NO_DEVICE: return CLI_EXIT_SKIP;
    case MLA_ERR_DEVICE:
    case MLA_ERR_NOMEM: return CLI_EXIT_ENGINE;
    default: return CLI_EXIT_USAGE;
    }
}

int cli_exit_for_counts(mla_status st, int n_failed, int n_skipped, int n_cases)
{
    if (st) return cli_exit_for(st);
    if (n_failed) return CLI_EXIT_FAIL;
    if (n_cases > 0 && n_skipped == n_cases) return CLI_EXIT_SKIP;
    return CLI_EXIT_PASS;
}

int cli_exit_for_run(mla_status st, const mla_runner_totals *t)
{
    if (st) return cli_exit_for(st);
    if (t->fail && t->error >= t->fail) {
        /* every failure was an error, none a comparison: the engine (3) when it ran out of memory,
         * failed on the device or produced non-finite logits, else bad input (2) */
        mla_status e = t->first_error_status;
        return e == MLA_ERR_DEVICE || e == MLA_ERR_NOMEM || e == MLA_ERR_NONFINITE ? CLI_EXIT_ENGINE : CLI_EXIT_USAGE;
    }
    if (t->fail) return CLI_EXIT_FAIL;
    return t->pass == 0 ? CLI_EXIT_SKIP : CLI_EXIT_PASS;
}

int cli_exit_for_ops(mla_status st, const mla_opcheck_summary *s)
{
    if (st) return cli_exit_for(st);
    if (s->n_error && !s->n_fail) {
        /* every failure an error, as cli_exit_for_run: the engine's (3) when its process died, hung
         * or it reported a device error or ran out of memory, else bad input (2) */
        mla_status e = s->first_error_status;
        return e == MLA_ERR_DEVICE || e == MLA_ERR_NOMEM || e == MLA_ERR_NONFINITE ? CLI_EXIT_ENGINE : CLI_EXIT_USAGE;
    }
    return cli_exit_for_counts(MLA_OK, s->n_fail + s->n_error, s->n_skip, s->n_cases);
}

int cli_exit_for_golden(mla_status st, const mla_runner_totals *t)
{
    return st || t->error ? CLI_EXIT_ENGINE : CLI_EXIT_PASS;
}

int cli_exit_git_bisect(int code, int git_bisect)
{
    if (!git_bisect) return code;
    return code == CLI_EXIT_PASS ? 0 : code == CLI_EXIT_FAIL ? 1 : CLI_EXIT_BISECT_SKIP;
}

const char *cli_dir(const char *name, char *buf, size_t n)
{
    struct stat sb;
    if (stat(name, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(buf, n, "%s", name);
        return buf;
    }
    if (cli_install_dir(name, buf, n)) return buf; /* an installed mlacheck: its prefix (cli_install.c) */
    snprintf(buf, n, "%s/%s", MLA_SOURCE_DIR, name);
    return buf;
}

#include "mla_git_id.h" /* MLA_GIT_ID: generated at build time (cmake/mla_git_id.cmake) */

/* The git id of what runs, in this order: MLA_GIT_SHA from the environment (CI names the commit it
 * built), the id compiled in at build time (right for this binary even when the tree moved on, and
 * known on a copy without .git), and only when the build knew none, git describe of the source
 * folder now. */
const char *cli_git_sha(char *buf, size_t n)
{
    const char *env = getenv("MLA_GIT_SHA");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return buf;
    }
    if (strcmp(MLA_GIT_ID, "unknown") != 0) {
        snprintf(buf, n, "%s", MLA_GIT_ID);
        return buf;
    }
    snprintf(buf, n, "unknown");
    /* git run directly (no shell, so no quoting of the source path); --dirty: a report from a tree
     * with uncommitted changes must not claim the commit's name alone */
    int fd[2];
    if (pipe(fd) != 0) return buf;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return buf;
    }
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0) dup2(dn, STDERR_FILENO);
        close(fd[0]);
        close(fd[1]);
        execlp("git", "git", "-C", MLA_SOURCE_DIR, "describe", "--always", "--dirty", "--abbrev=12", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char line[64];
    ssize_t k = read(fd[0], line, sizeof line - 1);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (k > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        line[k] = 0;
        line[strcspn(line, "\r\n")] = 0;
        if (line[0]) snprintf(buf, n, "%s", line);
    }
    return buf;
}

int cli_parse_faults(const char *list, unsigned *bits)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", list);
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!strcmp(t, "none")) continue;
        if (mla_fault_from_name(t, bits) != 0) {
            const char *cands[MLA_FAULT_COUNT];
            char sug[128];
            fprintf(stderr, "mlacheck: unknown fault '%s'; known:", t);
            for (int i = 0; i < MLA_FAULT_COUNT; i++) fprintf(stderr, " %s", cands[i] = mla_fault_name(i));
            fprintf(stderr, "%s\n", cli_did_you_mean(t, cands, MLA_FAULT_COUNT, sug, sizeof sug));
            return -1;
        }
    }
    return 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "mlacheck %s: %s '%s': expected an integer in [%ld, %ld]\n", cmd, opt, s ? s : "", lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int cli_progress_open(int quiet, int verbose, struct mla_progress **out)
{
    *out = NULL;
    if (quiet) return 0;
    /* a terminal gets the live line; a log (CI) a line per check and heartbeats */
    mla_progress_opts po = {.mode = isatty(STDERR_FILENO) ? MLA_PROGRESS_LIVE : MLA_PROGRESS_LINES, .verbose = verbose};
    const char *hb = getenv("MLACHECK_HEARTBEAT_S");
    if (hb && *hb) {
        char *end = NULL;
        po.heartbeat_s = strtod(hb, &end);
        if (*end || !(po.heartbeat_s > 0) || po.heartbeat_s > 86400) {
            fprintf(stderr, "mlacheck: MLACHECK_HEARTBEAT_S '%s': expected seconds in (0, 86400]\n", hb);
            return -1;
        }
    }
    if (mla_progress_new(&po, out)) fprintf(stderr, "mlacheck: no progress lines: %s\n", mla_last_error());
    return 0;
}
