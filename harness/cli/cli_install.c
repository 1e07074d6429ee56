/* cli_install.c: where an installed mlacheck finds its data. The folder MLA_INSTALL_DATA_REL
 * (../share/mlacheck, set by cmake/mlacheckInstall.cmake) is taken relative to the executable's own
 * path (/proc/self/exe), not to a prefix compiled in, so `cmake --install --prefix P`, DESTDIR and a
 * moved prefix all work. A build-tree binary has no such folder beside it and keeps the source tree. */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MLA_INSTALL_DATA_REL
#define MLA_INSTALL_DATA_REL "../share/mlacheck"
#endif

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

const char *cli_install_dir(const char *name, char *buf, size_t n)
{
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return NULL;
    exe[k] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return NULL;
    *slash = '\0';
    char data[4096 + 64];
    snprintf(data, sizeof data, "%s/%s", exe, MLA_INSTALL_DATA_REL);
    char suites[sizeof data + 16];
    snprintf(suites, sizeof suites, "%s/suites", data);
    if (!is_dir(suites)) return NULL; /* not an installed mlacheck */
    /* the prefix may be read-only and belongs to no run: results go to the working folder */
    if (!strcmp(name, "results")) snprintf(buf, n, "%s", name);
    else if (snprintf(buf, n, "%s/%s", data, name) >= (int)n) return NULL;
    return buf;
}
