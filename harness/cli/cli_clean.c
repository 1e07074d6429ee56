/* cli_clean.c: `mlacheck clean --keep N [--results DIR] [--dry-run]`: remove all but the newest N run
 * folders of a results folder.
 *
 * A run folder is a directory (never a symlink: lstat) named by the run id mla_rep_new gives it,
 * <YYYYMMDD>T<HHMMSS>Z-<suite>-<4 hex> (results/README.md). Anything else stays: staging folders of a
 * run in progress (<id>.tmp-XXXXXX), published/, a run folder renamed by hand to keep it, files.
 * "Newest" is the UTC start time in the id (ties: by name). Removal walks each folder without
 * following symlinks (nftw FTW_PHYS: a link is unlinked, its target untouched) and without crossing
 * into another file system. --dry-run only lists what would go. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The run-id shape: 8 digits, T, 6 digits, Z, '-', a suite of [A-Za-z0-9_-], '-', 4 lowercase hex. */
static int is_run_id(const char *s)
{
    static const char stamp[] = "ddddddddTddddddZ-";
    size_t n = strlen(s);
    if (n < sizeof stamp - 1 + 1 + 5) return 0;
    for (size_t i = 0; i < sizeof stamp - 1; i++)
        if (stamp[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != stamp[i]) return 0;
    const char *tail = s + n - 5; /* "-xxxx" */
    if (tail[0] != '-') return 0;
    for (int i = 1; i < 5; i++)
        if (!((tail[i] >= '0' && tail[i] <= '9') || (tail[i] >= 'a' && tail[i] <= 'f'))) return 0;
    for (const char *c = s + sizeof stamp - 1; c < tail; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
            return 0;
    return 1;
}

static int cmp_newest_first(const void *a, const void *b) { return strcmp(*(char *const *)b, *(char *const *)a); }

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_NS || flag == FTW_DNR) {
        fprintf(stderr, "mlacheck clean: %s: cannot read: %s\n", path, strerror(errno));
        return -1;
    }
    if (remove(path) != 0) {
        fprintf(stderr, "mlacheck clean: %s: cannot remove: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int cli_clean(int argc, char **argv)
{
    const char *results = NULL;
    int keep = -1, dry = 0;
    cli_parser p;
    cli_parser_init(&p, "clean", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        switch (c) {
        case 'k':
            if (cli_parse_int("clean", "--keep", optarg, 0, 1000000, &keep)) return CLI_EXIT_USAGE;
            break;
        case 'r': results = optarg; break;
        case 'n': dry = 1; break;
        default: return cli_unhandled(&p, c);
        }
    }
    if (cli_positional(&p, 0)) return CLI_EXIT_USAGE;
    if (keep < 0) {
        fprintf(stderr, "mlacheck clean: --keep N is required (the number of newest run folders to keep)\n");
        return CLI_EXIT_USAGE;
    }
    char rd[4096];
    if (!results) results = cli_dir("results", rd, sizeof rd);
    DIR *d = opendir(results);
    if (!d) {
        fprintf(stderr, "mlacheck clean: %s: cannot open results folder: %s\n", results, strerror(errno));
        return cli_exit_for(MLA_ERR_IO);
    }
    char **runs = NULL;
    size_t n = 0, cap = 0;
    int code = CLI_EXIT_PASS;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!is_run_id(de->d_name)) continue;
        char path[8192];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", results, de->d_name);
        if (lstat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue; /* symlinks and files stay */
        if (n == cap) {
            char **nr = realloc(runs, (cap = cap ? 2 * cap : 64) * sizeof *runs);
            if (!nr) {
                code = cli_exit_for(MLA_ERR_NOMEM);
                break;
            }
            runs = nr;
        }
        if (!(runs[n] = strdup(de->d_name))) {
            code = cli_exit_for(MLA_ERR_NOMEM);
            break;
        }
        n++;
    }
    closedir(d);
    if (code != CLI_EXIT_PASS) {
        fprintf(stderr, "mlacheck clean: out of memory listing %s\n", results);
    } else {
        qsort(runs, n, sizeof *runs, cmp_newest_first);
        size_t drop = n > (size_t)keep ? n - (size_t)keep : 0, removed = 0;
        for (size_t i = (size_t)keep; i < n; i++) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", results, runs[i]);
            if (dry) {
                printf("would remove %s\n", path);
                continue;
            }
            if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0) {
                code = cli_exit_for(MLA_ERR_IO); /* named on stderr; the rest are still tried */
                continue;
            }
            printf("removed %s\n", path);
            removed++;
        }
        printf("clean: %s: %zu run folders, kept %zu, %s %zu\n", results, n, n - drop, dry ? "would remove" : "removed",
               dry ? drop : removed);
    }
    for (size_t i = 0; i < n; i++) free(runs[i]);
    free(runs);
    return code;
}
