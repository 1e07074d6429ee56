/* cli_names.c: every name the user types (engine, plugin path, profile, path, model, check, case,
 * -k pattern) checked before any work is done or folder written, naming the option, what was
 * expected and the closest known name. */
#include "cli.h"

#include "mla_model/model.h"
#include "mlacheck/driver.h"
#include "mlacheck/runner.h"
#include "mlacheck/suite.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cli_did_you_mean(const char *word, const char *const *cands, int n, char *buf, size_t size)
{
    const char *s = mla_suite_suggest(word, cands, n);
    if (s) snprintf(buf, size, " (did you mean '%s'?)", s);
    else if (size) buf[0] = 0;
    return buf;
}

int cli_check_engine(const char *cmd, const char *engine)
{
    if (!strcmp(engine, "ref") || !strcmp(engine, "gpu")) return 0; /* gpu without a device: skipped, 77 */
    if (!strncmp(engine, "plugin:", 7)) {
        struct stat sb;
        const char *path = engine + 7;
        if (path[0] && !strchr(path, '/')) {
            /* a bare name: dlopen searches the library path for it, so ask dlopen */
            void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
            if (h) {
                dlclose(h);
                return 0;
            }
            fprintf(stderr, "mlacheck %s: --engine %s: cannot load '%s': %s\n", cmd, engine, path, dlerror());
            return -1;
        }
        if (!path[0] || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || access(path, R_OK) != 0) {
            fprintf(stderr, "mlacheck %s: --engine %s: plugin library '%s' %s\n", cmd, engine, path,
                    !path[0] ? "is empty: expected plugin:PATH.so" : "is not a readable file");
            return -1;
        }
        return 0;
    }
    static const char *const known[] = {"ref", "gpu", "plugin"};
    char sug[128];
    fprintf(stderr, "mlacheck %s: --engine '%s': expected ref, gpu or plugin:PATH.so%s\n", cmd, engine,
            cli_did_you_mean(engine, known, 3, sug, sizeof sug));
    return -1;
}

int cli_check_profile(const char *cmd, const char *opt, const char *name)
{
    mla_profile p;
    if (mla_profile_from_name(name, &p) == 0) return 0;
    const char *cands[MLA_PROFILE_COUNT];
    for (int i = 0; i < MLA_PROFILE_COUNT; i++) cands[i] = mla_profile_name((mla_profile)i);
    char sug[128];
    fprintf(stderr, "mlacheck %s: %s '%s': expected one of", cmd, opt, name);
    for (int i = 0; i < MLA_PROFILE_COUNT; i++) fprintf(stderr, " %s", cands[i]);
    fprintf(stderr, "%s\n", cli_did_you_mean(name, cands, MLA_PROFILE_COUNT, sug, sizeof sug));
    return -1;
}

int cli_check_path(const char *cmd, const char *name)
{
    mla_path p;
    if (mla_path_from_name(name, &p) == 0) return 0;
    static const char *const cands[] = {"prefill", "decode", "chunked"};
    char sug[128];
    fprintf(stderr, "mlacheck %s: --path '%s': expected prefill, decode or chunked%s\n", cmd, name,
            cli_did_you_mean(name, cands, 3, sug, sizeof sug));
    return -1;
}

/* A built-in name or an existing folder; a word close to a built-in is taken for a typo of it. */
int cli_check_model(const char *cmd, const char *model)
{
    const char *const *b = mla_builtin_models();
    int n = 0;
    while (b[n]) n++;
    for (int i = 0; i < n; i++)
        if (!strcmp(b[i], model)) return 0;
    struct stat sb;
    if (stat(model, &sb) == 0) return 0; /* a folder (the loader says what is wrong inside) */
    char sug[128];
    cli_did_you_mean(model, b, n, sug, sizeof sug);
    if (!sug[0] && strchr(model, '/')) return 0; /* a path: the loader names the missing file */
    fprintf(stderr, "mlacheck %s: --model '%s': expected a built-in model (mlacheck list) or a Hugging Face "
                    "folder%s\n", cmd, model, sug);
    return -1;
}

int cli_check_check(const char *cmd, const char *name)
{
    const char *cands[MLA_CHECK_COUNT + 1];
    int n = 0;
    for (int k = 0; k < MLA_CHECK_COUNT; k++) cands[n++] = mla_suite_check_name((mla_suite_check)k);
    cands[n++] = "oracle"; /* rules.tol's key for the transformers oracle, no suite check of its own */
    for (int i = 0; i < n; i++)
        if (!strcmp(cands[i], name)) return 0;
    char sug[128];
    fprintf(stderr, "mlacheck %s: --check '%s': expected a check (mlacheck list) or oracle%s\n", cmd, name,
            cli_did_you_mean(name, cands, n, sug, sizeof sug));
    return -1;
}

int cli_check_case(const char *cmd, const mla_suite *s, const char *name)
{
    if (mla_suite_find_case(s, name)) return 0;
    const char **cands = malloc((size_t)(s->n_cases + 1) * sizeof *cands);
    for (int i = 0; cands && i < s->n_cases; i++) cands[i] = s->cases[i].name;
    char sug[160] = "";
    if (cands) cli_did_you_mean(name, cands, s->n_cases, sug, sizeof sug);
    free(cands);
    fprintf(stderr, "mlacheck %s: --case '%s': suite %s has no such case%s (mlacheck list names the suites; the "
                    "suite file its cases)\n", cmd, name, s->name, sug);
    return -1;
}

int cli_check_select(const char *cmd, const mla_suite *s, const char *only_case, const char *const *pats, int n)
{
    for (int i = 0; i < n; i++) {
        int hit = 0;
        for (int c = 0; c < s->n_cases && !hit; c++) {
            const mla_suite_case *cs = &s->cases[c];
            if (only_case && strcmp(only_case, cs->name)) continue;
            for (int pi = 0; pi < cs->n_profiles && !hit; pi++)
                for (int k = 0; k < cs->n_checks && !hit; k++)
                    hit = mla_runner_selected(&pats[i], 1, cs->name, mla_suite_check_name(cs->checks[k]),
                                              mla_profile_name(cs->profiles[pi]));
        }
        if (hit) continue;
        /* the closest case, check or profile name to the pattern (or its first component) */
        int cap = s->n_cases + MLA_CHECK_COUNT + MLA_PROFILE_COUNT, m = 0;
        const char **cands = malloc((size_t)cap * sizeof *cands);
        for (int c = 0; cands && c < s->n_cases; c++) cands[m++] = s->cases[c].name;
        for (int k = 0; cands && k < MLA_CHECK_COUNT; k++) cands[m++] = mla_suite_check_name((mla_suite_check)k);
        for (int k = 0; cands && k < MLA_PROFILE_COUNT; k++) cands[m++] = mla_profile_name((mla_profile)k);
        char word[128], sug[160] = "";
        snprintf(word, sizeof word, "%.*s", (int)strcspn(pats[i], "/"), pats[i]);
        if (cands) cli_did_you_mean(word, cands, m, sug, sizeof sug);
        free(cands);
        fprintf(stderr, "mlacheck %s: -k '%s': selects no check of suite %s%s%s%s (a glob over case/check/profile)\n",
                cmd, pats[i], s->name, only_case ? " case " : "", only_case ? only_case : "", sug);
        return -1;
    }
    return 0;
}
