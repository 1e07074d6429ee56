/* select.c: `-k PATTERN` selection of a suite's checks (mla_runner_selected, runner.h). */
#include "mlacheck/runner.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

static int one(const char *pat, const char *case_name, const char *check, const char *profile)
{
    char whole[512];
    snprintf(whole, sizeof whole, "%s/%s/%s", case_name, check, profile);
    if (!fnmatch(pat, whole, 0)) return 1;
    if (strchr(pat, '/')) return 0;
    return !fnmatch(pat, case_name, 0) || !fnmatch(pat, check, 0) || !fnmatch(pat, profile, 0);
}

int mla_runner_selected(const char *const *patterns, int n, const char *case_name, const char *check,
                        const char *profile)
{
    if (!patterns || n <= 0) return 1;
    char base[128];
    snprintf(base, sizeof base, "%.*s", (int)strcspn(check, "@"), check);
    for (int i = 0; i < n; i++)
        if (one(patterns[i], case_name, check, profile) ||
            (strcmp(base, check) && one(patterns[i], case_name, base, profile)))
            return 1;
    return 0;
}
