/* suite.c: the suite file parser (format in suite.h).
 * Every value is validated here, once, so the runner can trust a parsed suite: names are known,
 * numbers are in range, and cross-key requirements (sweep needs kv_lens, ...) hold. Messages carry
 * origin:line and, for a misspelt word, the closest known word. */
#include "mlacheck/suite.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KV_LENS 65536    /* a sweep over more lengths than this is a typo, not a plan */
#define MAX_PROMPT_LEN (1 << 24)

static const char *const check_names[MLA_CHECK_COUNT] = {
#define X(e, n, d, needs, fn) n,
    MLA_SUITE_CHECK_LIST(X)
#undef X
};
static const char *const check_whats[MLA_CHECK_COUNT] = {
#define X(e, n, d, needs, fn) d,
    MLA_SUITE_CHECK_LIST(X)
#undef X
};
static const char *const path_names[MLA_SUITE_PATH_COUNT] = {
#define X(e, n) n,
    MLA_SUITE_PATH_LIST(X)
#undef X
};

static int name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

const char *mla_suite_check_name(mla_suite_check k) { return (unsigned)k < MLA_CHECK_COUNT ? check_names[k] : "?"; }
const char *mla_suite_check_what(mla_suite_check k) { return (unsigned)k < MLA_CHECK_COUNT ? check_whats[k] : "?"; }
const char *mla_suite_path_name(mla_suite_path p) { return (unsigned)p < MLA_SUITE_PATH_COUNT ? path_names[p] : "?"; }

int mla_suite_check_from_name(const char *name, mla_suite_check *out)
{
    int i = name_index(check_names, MLA_CHECK_COUNT, name);
    if (i < 0) return -1;
    *out = (mla_suite_check)i;
    return 0;
}

int mla_suite_path_from_name(const char *name, mla_suite_path *out)
{
    int i = name_index(path_names, MLA_SUITE_PATH_COUNT, name);
    if (i < 0) return -1;
    *out = (mla_suite_path)i;
    return 0;
}


int mla_suite_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return INT_MAX; /* no word we suggest is that long */
    int row[65];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *mla_suite_suggest(const char *word, const char *const *candidates, int n)
{
    int limit = ((int)strlen(word) + 2) / 3;
    if (limit < 1) limit = 1;
    const char *best = NULL;
    int best_d = INT_MAX;
    for (int i = 0; i < n; i++) {
        int d = mla_suite_edit_distance(word, candidates[i]);
        if (d > 0 && d <= limit && d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best;
}

/* ---- keys -------------------------------------------------------------------------------- */

#define KEY_LIST(X) \
    X(K_DESCRIPTION, "description") X(K_MODEL, "model") X(K_PROMPTS, "prompts") X(K_BATCH, "batch") \
    X(K_ENGINES, "engines") X(K_AGAINST, "against") X(K_PATHS, "paths") X(K_PREFILL_LEN, "prefill_len") \
    X(K_CHUNK, "chunk") X(K_PROFILES, "profiles") X(K_CHECKS, "checks") X(K_KV_LENS, "kv_lens") \
    X(K_FAULTS, "faults") X(K_SEED, "seed") X(K_BLOCK_SIZE, "block_size") X(K_E4M3, "e4m3") \
    X(K_SCHEDULE, "schedule") X(K_KV_SCALE, "kv_scale") X(K_ATTN, "attn")

enum {
#define X(e, n) e,
    KEY_LIST(X)
#undef X
        K_COUNT
};
static const char *const key_names[K_COUNT] = {
#define X(e, n) n,
    KEY_LIST(X)
#undef X
};

/* A key = value line kept for [defaults], replayed into every later case. */
typedef struct {
    int key, line;
    char *value;
} entry;

typedef struct {
    const char *origin;
    mla_suite *s;
    entry defaults[K_COUNT];
    int have_default[K_COUNT];
    mla_suite_case *cur;   /* case being filled, NULL outside a case */
    unsigned cur_set;      /* keys the case itself set (duplicates are errors) */
    unsigned cur_present;  /* keys set by the case or by defaults */
    int in_defaults, in_suite;
    unsigned defaults_set;
} parser;

static mla_status perr(const parser *p, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static mla_status perr(const parser *p, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mla_errorf(MLA_ERR_FORMAT, "%s:%d: %s", p->origin, line, msg);
}

/* "expected one of: a, b, c" or "(did you mean 'x'?)" for an unknown word. */
static mla_status unknown_word(const parser *p, int line, const char *what, const char *word, const char *key,
                               const char *const *names, int n)
{
    const char *sug = mla_suite_suggest(word, names, n);
    if (sug) return perr(p, line, "unknown %s '%s'%s%s%s (did you mean '%s'?)", what, word, key ? " in '" : "",
                         key ? key : "", key ? "'" : "", sug);
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
    return perr(p, line, "unknown %s '%s'%s%s%s; expected one of: %s", what, word, key ? " in '" : "", key ? key : "",
                key ? "'" : "", list);
}

static char *xstrndup(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

/* Trims in place; returns the new start. */
static char *trim(char *s)
{
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    if (!*s || isspace((unsigned char)*s)) return -1;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Splits s (modified) at sep into trimmed items; empty items are an error (returns -1).
 * items must hold max entries; returns the count or -2 when there are more. */
static int split(char *s, char sep, char **items, int max)
{
    int n = 0;
    for (;;) {
        char *e = strchr(s, sep);
        if (e) *e = '\0';
        char *t = trim(s);
        if (!*t) return -1;
        if (n == max) return -2;
        items[n++] = t;
        if (!e) return n;
        s = e + 1;
    }
}

#define MAX_ITEMS 1024

/* ---- case lifetime ----------------------------------------------------------------------- */

static void case_clear(mla_suite_case *c)
{
    free(c->name);
    free(c->description);
    free(c->model);
    for (int i = 0; i < c->n_prompts; i++) {
        free(c->prompts[i].tokens);
        free(c->prompts[i].file);
    }
    free(c->prompts);
    for (int i = 0; i < c->n_engines; i++) free(c->engines[i]);
    free(c->engines);
    free(c->against);
    free(c->paths);
    free(c->profiles);
    free(c->checks);
    free(c->kv_lens);
    memset(c, 0, sizeof *c);
}

void mla_suite_free(mla_suite *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_cases; i++) case_clear(&s->cases[i]);
    free(s->cases);
    free(s->name);
    free(s->origin);
    free(s->description);
    free(s);
}

/* ---- value setters ----------------------------------------------------------------------- */

static mla_status set_string(const parser *p, int line, const char *key, const char *v, char **dst)
{
    if (!*v) return perr(p, line, "'%s' is empty; expected a value", key);
    char *d = strdup(v);
    if (!d) return MLA_ERR_NOMEM;
    free(*dst);
    *dst = d;
    return MLA_OK;
}

static mla_status set_int(const parser *p, int line, const char *key, const char *v, long lo, long hi, int *dst)
{
    long x;
    if (parse_long(v, lo, hi, &x) != 0)
        return perr(p, line, "'%s' = '%s'; expected an integer in [%ld, %ld]", key, v, lo, hi);
    *dst = (int)x;
    return MLA_OK;
}

/* text:PATH,offset=O,len=N[,bos=T] (the path itself may not contain a comma). */
static mla_status parse_text_prompt(const parser *p, int line, char *rest, mla_suite_prompt *pr)
{
    static const char *const tk[] = {"offset", "len", "bos"};
    char *parts[8];
    int n = split(rest, ',', parts, 8);
    if (n < 2 || !*parts[0]) return perr(p, line, "text prompt '%s'; expected text:PATH,offset=O,len=N[,bos=T]", rest);
    pr->kind = MLA_PROMPT_TEXT;
    pr->bos = -1;
    int have_len = 0;
    for (int i = 1; i < n; i++) {
        char *eq = strchr(parts[i], '=');
        long x;
        if (!eq) return perr(p, line, "text prompt parameter '%s'; expected name=value", parts[i]);
        *eq = '\0';
        char *k = trim(parts[i]), *v = trim(eq + 1);
        if (strcmp(k, "offset") == 0) {
            if (parse_long(v, 0, 1L << 40, &x) != 0)
                return perr(p, line, "text prompt offset '%s'; expected an integer >= 0", v);
            pr->offset = x;
        } else if (strcmp(k, "len") == 0) {
            if (parse_long(v, 1, MAX_PROMPT_LEN - 1, &x) != 0)
                return perr(p, line, "text prompt len '%s'; expected an integer in [1, %d]", v, MAX_PROMPT_LEN - 1);
            pr->len = (int)x;
            have_len = 1;
        } else if (strcmp(k, "bos") == 0) {
            if (parse_long(v, 0, INT32_MAX, &x) != 0)
                return perr(p, line, "text prompt bos '%s'; expected a token id", v);
            pr->bos = (int)x;
        } else {
            return unknown_word(p, line, "text prompt parameter", k, NULL, tk, 3);
        }
    }
    if (!have_len) return perr(p, line, "text prompt without len; expected text:PATH,offset=O,len=N[,bos=T]");
    pr->len += pr->bos >= 0;
    pr->file = strdup(trim(parts[0]));
    return pr->file ? MLA_OK : MLA_ERR_NOMEM;
}

/* A positive finite double; %.17g round-trips what was written into the dump /meta. */
static mla_status set_scale(const parser *p, int line, const char *key, const char *v, double *dst)
{
    char *end;
    errno = 0;
    double x = *v && !isspace((unsigned char)*v) ? strtod(v, &end) : 0.0;
    if (!*v || isspace((unsigned char)*v) || errno || *end || !isfinite(x) || !(x >= 1e-6) || x > 1e6)
        return perr(p, line, "'%s' = '%s'; expected a number in [1e-6, 1e6]", key, v);
    *dst = x;
    return MLA_OK;
}

static mla_status parse_prompt(const parser *p, int line, char *item, mla_suite_prompt *pr)
{
    memset(pr, 0, sizeof *pr);
    char *colon = strchr(item, ':');
    if (!colon) return perr(p, line, "prompt '%s'; expected random:len=N[,seed=S], tokens:a,b,..., file:PATH or text:PATH,offset=O,len=N[,bos=T]", item);
    *colon = '\0';
    char *kind = trim(item), *rest = trim(colon + 1);
    if (strcmp(kind, "random") == 0) {
        pr->kind = MLA_PROMPT_RANDOM;
        char *parts[8];
        int n = split(rest, ',', parts, 8);
        if (n < 0) return perr(p, line, "random prompt parameters '%s'; expected len=N[,seed=S]", rest);
        int have_len = 0;
        for (int i = 0; i < n; i++) {
            char *eq = strchr(parts[i], '=');
            long x;
            if (!eq) return perr(p, line, "random prompt parameter '%s'; expected name=value", parts[i]);
            *eq = '\0';
            char *k = trim(parts[i]), *v = trim(eq + 1);
            if (strcmp(k, "len") == 0) {
                if (parse_long(v, 1, MAX_PROMPT_LEN, &x) != 0)
                    return perr(p, line, "random prompt len '%s'; expected an integer in [1, %d]", v, MAX_PROMPT_LEN);
                pr->len = (int)x;
                have_len = 1;
            } else if (strcmp(k, "seed") == 0) {
                if (parse_long(v, 0, 4294967295L, &x) != 0)
                    return perr(p, line, "random prompt seed '%s'; expected an integer in [0, 4294967295]", v);
                pr->seed = (unsigned)x;
            } else {
                static const char *const rk[] = {"len", "seed"};
                return unknown_word(p, line, "random prompt parameter", k, NULL, rk, 2);
            }
        }
        if (!have_len) return perr(p, line, "random prompt without len; expected random:len=N[,seed=S]");
    } else if (strcmp(kind, "tokens") == 0) {
        pr->kind = MLA_PROMPT_TOKENS;
        int maxn = 1;
        for (const char *q = rest; *q; q++) maxn += *q == ',';
        char **parts = malloc(sizeof(char *) * (size_t)maxn);
        if (!parts) return MLA_ERR_NOMEM;
        int n = split(rest, ',', parts, maxn);
        if (n < 0) {
            free(parts);
            return perr(p, line, "token list has an empty item; expected comma-separated token ids");
        }
        pr->tokens = malloc(sizeof(int32_t) * (size_t)n);
        if (!pr->tokens) {
            free(parts);
            return MLA_ERR_NOMEM;
        }
        for (int i = 0; i < n; i++) {
            long x;
            if (parse_long(parts[i], 0, INT32_MAX, &x) != 0) {
                mla_status st = perr(p, line, "token id '%s'; expected an integer in [0, %d]", parts[i], INT32_MAX);
                free(parts);
                return st;
            }
            pr->tokens[i] = (int32_t)x;
        }
        free(parts);
        pr->len = n;
    } else if (strcmp(kind, "file") == 0) {
        pr->kind = MLA_PROMPT_FILE;
        if (!*rest) return perr(p, line, "file prompt without a path; expected file:PATH");
        pr->file = strdup(rest);
        if (!pr->file) return MLA_ERR_NOMEM;
    } else if (strcmp(kind, "text") == 0) {
        return parse_text_prompt(p, line, rest, pr);
    } else {
        static const char *const kinds[] = {"random", "tokens", "file", "text"};
        return unknown_word(p, line, "prompt kind", kind, "prompts", kinds, 4);
    }
    return MLA_OK;
}

static void free_prompts(mla_suite_prompt *pr, int n)
{
    for (int i = 0; i < n; i++) {
        free(pr[i].tokens);
        free(pr[i].file);
    }
    free(pr);
}

static mla_status set_prompts(const parser *p, int line, char *v, mla_suite_case *c)
{
    char *items[MAX_ITEMS];
    int n = split(v, ';', items, MAX_ITEMS);
    if (n < 0) return perr(p, line, "'prompts' has an empty item; expected prompts separated by ';'");
    mla_suite_prompt *pr = calloc((size_t)n, sizeof *pr);
    if (!pr) return MLA_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        mla_status st = parse_prompt(p, line, items[i], &pr[i]);
        if (st != MLA_OK) {
            free_prompts(pr, i + 1);
            return st;
        }
    }
    free_prompts(c->prompts, c->n_prompts);
    c->prompts = pr;
    c->n_prompts = n;
    return MLA_OK;
}

/* Comma list of names from a table -> enum array (as int). */
static mla_status set_enum_list(const parser *p, int line, const char *key, const char *what, char *v,
                                const char *const *names, int nnames, int **dst, int *ndst)
{
    char *items[MAX_ITEMS];
    int n = split(v, ',', items, MAX_ITEMS);
    if (n < 0) return perr(p, line, "'%s' has an empty item; expected a comma-separated list", key);
    int *arr = malloc(sizeof(int) * (size_t)n);
    if (!arr) return MLA_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        int k = name_index(names, nnames, items[i]);
        mla_status st = MLA_OK;
        if (k < 0) st = unknown_word(p, line, what, items[i], key, names, nnames);
        for (int j = 0; j < i && st == MLA_OK; j++)
            if (arr[j] == k) st = perr(p, line, "%s '%s' listed twice in '%s'", what, items[i], key);
        if (st != MLA_OK) {
            free(arr);
            return st;
        }
        arr[i] = k;
    }
    free(*dst);
    *dst = arr;
    *ndst = n;
    return MLA_OK;
}

static mla_status set_profiles(const parser *p, int line, char *v, mla_suite_case *c)
{
    const char *names[MLA_PROFILE_COUNT];
    for (int i = 0; i < MLA_PROFILE_COUNT; i++) names[i] = mla_profile_name((mla_profile)i);
    int *arr = NULL, n = 0;
    mla_status st = set_enum_list(p, line, "profiles", "profile", v, names, MLA_PROFILE_COUNT, &arr, &n);
    if (st != MLA_OK) return st;
    /* Map through the contract's own lookup, so a renamed profile cannot drift from model.h. */
    mla_profile *pa = malloc(sizeof *pa * (size_t)n);
    if (!pa) {
        free(arr);
        return MLA_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++)
        if (mla_profile_from_name(names[arr[i]], &pa[i]) != 0) {
            const char *bad = names[arr[i]];
            free(arr);
            free(pa);
            return perr(p, line, "profile '%s' not known to mla_profile_from_name", bad);
        }
    free(arr);
    free(c->profiles);
    c->profiles = pa;
    c->n_profiles = n;
    return MLA_OK;
}

static mla_status set_engines(const parser *p, int line, char *v, mla_suite_case *c)
{
    static const char *const known[] = {"ref", "gpu", "plugin:"};
    char *items[MAX_ITEMS];
    int n = split(v, ',', items, MAX_ITEMS);
    if (n < 0) return perr(p, line, "'engines' has an empty item; expected ref, gpu or plugin:PATH");
    for (int i = 0; i < n; i++) {
        const char *e = items[i];
        int ok = strcmp(e, "ref") == 0 || strcmp(e, "gpu") == 0 || (strncmp(e, "plugin:", 7) == 0 && e[7]);
        if (!ok) {
            if (strncmp(e, "plugin:", 7) == 0) return perr(p, line, "engine 'plugin:' without a path; expected plugin:PATH");
            return unknown_word(p, line, "engine", e, "engines", known, 3);
        }
        for (int j = 0; j < i; j++)
            if (strcmp(items[j], e) == 0) return perr(p, line, "engine '%s' listed twice in 'engines'", e);
    }
    char **arr = calloc((size_t)n, sizeof *arr);
    if (!arr) return MLA_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        if (!(arr[i] = strdup(items[i]))) {
            for (int j = 0; j < i; j++) free(arr[j]);
            free(arr);
            return MLA_ERR_NOMEM;
        }
    for (int i = 0; i < c->n_engines; i++) free(c->engines[i]);
    free(c->engines);
    c->engines = arr;
    c->n_engines = n;
    return MLA_OK;
}

/* One kv_lens item, modified in place: "N" or "A..B" or "A..B step S". 0 ok, -1 malformed. */
static int parse_kv_item(char *it, long *a, long *b, long *step)
{
    char *dots = strstr(it, "..");
    *step = 1;
    if (!dots) {
        if (parse_long(it, 1, INT_MAX, a) != 0) return -1;
        *b = *a;
        return 0;
    }
    *dots = '\0';
    char *hi = dots + 2, *st = strstr(hi, "step");
    if (st) {
        if (st == hi || !isspace((unsigned char)st[-1]) || !isspace((unsigned char)st[4])) return -1;
        *st = '\0';
        if (parse_long(trim(st + 4), 1, INT_MAX, step) != 0) return -1;
    }
    if (parse_long(trim(it), 1, INT_MAX, a) != 0 || parse_long(trim(hi), 1, INT_MAX, b) != 0 || *a > *b) return -1;
    return 0;
}

/* "64..4096 step 64, 5000" -> expanded list. */
static mla_status set_kv_lens(const parser *p, int line, char *v, mla_suite_case *c)
{
    char *items[MAX_ITEMS];
    int n = split(v, ',', items, MAX_ITEMS);
    if (n < 0) return perr(p, line, "'kv_lens' has an empty item; expected N or A..B [step S], comma-separated");
    int *arr = NULL, cnt = 0;
    for (int i = 0; i < n; i++) {
        long a, b, step;
        char orig[128];
        snprintf(orig, sizeof orig, "%s", items[i]);
        if (parse_kv_item(items[i], &a, &b, &step) != 0) {
            free(arr);
            return perr(p, line, "'kv_lens' item '%s'; expected N or A..B [step S] with 1 <= A <= B", orig);
        }
        long count = (b - a) / step + 1;
        if (count > MAX_KV_LENS - cnt) {
            free(arr);
            return perr(p, line, "'kv_lens' expands to more than %d lengths", MAX_KV_LENS);
        }
        int *na = realloc(arr, sizeof(int) * (size_t)(cnt + count));
        if (!na) {
            free(arr);
            return MLA_ERR_NOMEM;
        }
        arr = na;
        for (long x = a; x <= b; x += step) {
            arr[cnt++] = (int)x;
            if (x > INT_MAX - step) break;
        }
    }
    free(c->kv_lens);
    c->kv_lens = arr;
    c->n_kv_lens = cnt;
    return MLA_OK;
}

/* "none" or contract fault names (mla/backend.h) -> a bit mask. */
static mla_status set_faults(const parser *p, int line, char *v, unsigned *dst)
{
    const char *names[MLA_FAULT_COUNT + 1];
    names[0] = "none";
    for (int i = 0; i < MLA_FAULT_COUNT; i++) names[i + 1] = mla_fault_name(i);
    char *items[MAX_ITEMS];
    int n = split(v, ',', items, MAX_ITEMS);
    if (n < 0) return perr(p, line, "'faults' has an empty item; expected none or fault names, comma-separated");
    unsigned mask = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(items[i], "none") == 0) {
            if (n > 1) return perr(p, line, "'faults' lists 'none' with other faults");
            continue;
        }
        unsigned bit = 0;
        if (mla_fault_from_name(items[i], &bit) != 0)
            return unknown_word(p, line, "fault", items[i], "faults", names, MLA_FAULT_COUNT + 1);
        if (mask & bit) return perr(p, line, "fault '%s' listed twice in 'faults'", items[i]);
        mask |= bit;
    }
    *dst = mask;
    return MLA_OK;
}

static mla_status apply(parser *p, mla_suite_case *c, int key, int line, const char *value)
{
    /* Setters split in place: work on a copy so [defaults] entries can be replayed. */
    char *v = strdup(value);
    if (!v) return MLA_ERR_NOMEM;
    mla_status st = MLA_OK;
    int tmp, *ip;
    switch (key) {
    case K_DESCRIPTION: free(c->description); c->description = strdup(v); st = c->description ? MLA_OK : MLA_ERR_NOMEM; break;
    case K_MODEL: st = set_string(p, line, "model", v, &c->model); break;
    case K_PROMPTS: st = set_prompts(p, line, v, c); break;
    case K_BATCH: st = set_int(p, line, "batch", v, 1, 4096, &c->batch); break;
    case K_ENGINES: st = set_engines(p, line, v, c); break;
    case K_AGAINST: st = set_string(p, line, "against", v, &c->against); break;
    case K_PATHS:
        ip = (int *)c->paths;
        st = set_enum_list(p, line, "paths", "path", v, path_names, MLA_SUITE_PATH_COUNT, &ip, &c->n_paths);
        c->paths = (mla_suite_path *)ip;
        break;
    case K_PREFILL_LEN: st = set_int(p, line, "prefill_len", v, 0, MAX_PROMPT_LEN, &c->prefill_len); break;
    case K_CHUNK: st = set_int(p, line, "chunk", v, 1, MAX_PROMPT_LEN, &c->chunk); break;
    case K_PROFILES: st = set_profiles(p, line, v, c); break;
    case K_CHECKS:
        ip = (int *)c->checks;
        st = set_enum_list(p, line, "checks", "check", v, check_names, MLA_CHECK_COUNT, &ip, &c->n_checks);
        c->checks = (mla_suite_check *)ip;
        break;
    case K_KV_LENS: st = set_kv_lens(p, line, v, c); break;
    case K_FAULTS: st = set_faults(p, line, v, &c->faults); break;
    case K_SEED: {
        long x;
        if (parse_long(v, 0, 4294967295L, &x) != 0) st = perr(p, line, "'seed' = '%s'; expected an integer in [0, 4294967295]", v);
        else c->seed = (unsigned)x;
        break;
    }
    case K_BLOCK_SIZE: st = set_int(p, line, "block_size", v, 1, 1 << 20, &c->block_size); break;
    case K_E4M3:
        if (strcmp(v, "fn") == 0) tmp = 0;
        else if (strcmp(v, "fnuz") == 0) tmp = 1;
        else {
            static const char *const e[] = {"fn", "fnuz"};
            st = unknown_word(p, line, "e4m3 variant", v, "e4m3", e, 2);
            break;
        }
        c->e4m3_fnuz = tmp;
        break;
    case K_SCHEDULE:
        if (strcmp(v, "lockstep") == 0) c->schedule = 0;
        else if (strcmp(v, "staggered") == 0) c->schedule = 1;
        else {
            static const char *const e[] = {"lockstep", "staggered"};
            st = unknown_word(p, line, "schedule", v, "schedule", e, 2);
        }
        break;
    case K_KV_SCALE: st = set_scale(p, line, "kv_scale", v, &c->kv_scale); break;
    case K_ATTN:
        if (strcmp(v, "exact") == 0) c->attn_tc = 0;
        else if (strcmp(v, "tc") == 0) c->attn_tc = 1;
        else {
            static const char *const e[] = {"exact", "tc"};
            st = unknown_word(p, line, "attention numerics", v, "attn", e, 2);
        }
        break;
    default: st = perr(p, line, "internal: key %d", key);
    }
    free(v);
    return st;
}

static mla_status case_defaults(mla_suite_case *c)
{
    c->batch = 1;
    c->prefill_len = 1;
    c->kv_scale = 1.0;
    c->description = strdup("");
    c->against = strdup("golden");
    c->paths = malloc(sizeof *c->paths);
    if (!c->description || !c->against || !c->paths) return MLA_ERR_NOMEM;
    c->paths[0] = MLA_SUITE_PATH_PREFILL;
    c->n_paths = 1;
    return MLA_OK;
}

/* Cross-key rules, checked once the whole case is read. */
static mla_status case_validate(const parser *p, const mla_suite_case *c, unsigned present)
{
    static const int required[] = {K_MODEL, K_PROMPTS, K_ENGINES, K_PROFILES, K_CHECKS};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!(present & (1u << required[i])))
            return perr(p, c->line, "case '%s' is missing required key '%s'", c->name, key_names[required[i]]);
    if (strcmp(c->against, "golden") != 0 && strcmp(c->against, "ref-fp64") != 0) {
        int found = 0;
        for (int i = 0; i < c->n_engines; i++) found |= strcmp(c->engines[i], c->against) == 0;
        /* the reference engine is always available as a baseline */
        found |= strcmp(c->against, "ref") == 0 || strcmp(c->against, "gpu") == 0;
        if (!found)
            return perr(p, c->line, "case '%s': against = '%s'; expected golden, ref-fp64, ref, gpu or one of its engines",
                        c->name, c->against);
    }
    if (mla_suite_case_has_check(c, MLA_CHECK_SWEEP) && c->n_kv_lens == 0)
        return perr(p, c->line, "case '%s': check 'sweep' needs 'kv_lens'", c->name);
    if ((mla_suite_case_has_check(c, MLA_CHECK_CHUNKED_VS_WHOLE) || mla_suite_case_has_path(c, MLA_SUITE_PATH_CHUNKED)) &&
        c->chunk <= 0)
        return perr(p, c->line, "case '%s': chunked prefill needs 'chunk'", c->name);
    if (mla_suite_case_has_check(c, MLA_CHECK_CROSS_ENGINE) && c->n_engines < 2 &&
        !(c->n_engines == 1 && strcmp(c->against, c->engines[0]) != 0 && strcmp(c->against, "golden") != 0))
        return perr(p, c->line, "case '%s': check 'cross-engine' needs two engines or 'against' naming another",
                    c->name);
    if (mla_suite_case_has_check(c, MLA_CHECK_FP8_VS_BF16)) {
        int fp8 = mla_suite_case_has_profile(c, MLA_PROFILE_FP8KV) || mla_suite_case_has_profile(c, MLA_PROFILE_FP8DS) ||
                  mla_suite_case_has_profile(c, MLA_PROFILE_FP8W);
        if (!fp8 || !mla_suite_case_has_profile(c, MLA_PROFILE_BF16))
            return perr(p, c->line, "case '%s': check 'fp8-vs-bf16' needs profile bf16 and an fp8 profile", c->name);
    }
    if (mla_suite_case_has_path(c, MLA_SUITE_PATH_DECODE) || mla_suite_case_has_check(c, MLA_CHECK_DECODE_VS_PREFILL)) {
        if (c->prefill_len < 1) return perr(p, c->line, "case '%s': decode needs prefill_len >= 1", c->name);
        for (int i = 0; i < c->n_prompts; i++)
            if (c->prompts[i].kind != MLA_PROMPT_FILE && c->prompts[i].len <= c->prefill_len)
                return perr(p, c->line, "case '%s': prompt %d has %d tokens, not more than prefill_len = %d: nothing to decode",
                            c->name, i + 1, c->prompts[i].len, c->prefill_len);
    }
    return MLA_OK;
}

static mla_status finish_case(parser *p)
{
    if (!p->cur) return MLA_OK;
    mla_status st = case_validate(p, p->cur, p->cur_present);
    p->cur = NULL;
    return st;
}

static int valid_case_name(const char *n)
{
    if (!*n) return 0;
    for (; *n; n++)
        if (!isalnum((unsigned char)*n) && *n != '-' && *n != '_' && *n != '.') return 0;
    return 1;
}

static mla_status begin_section(parser *p, int line, char *hdr)
{
    mla_status st = finish_case(p);
    if (st != MLA_OK) return st;
    p->in_defaults = p->in_suite = 0;
    hdr = trim(hdr);
    if (strcmp(hdr, "defaults") == 0) {
        p->in_defaults = 1;
        return MLA_OK;
    }
    if (strcmp(hdr, "suite") == 0) {
        p->in_suite = 1;
        return MLA_OK;
    }
    if (strncmp(hdr, "case", 4) != 0 || (hdr[4] && !isspace((unsigned char)hdr[4]))) {
        static const char *const secs[] = {"case", "defaults", "suite"};
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)strcspn(hdr, " \t"), hdr);
        return unknown_word(p, line, "section", word, NULL, secs, 3);
    }
    char *name = trim(hdr + 4);
    if (!valid_case_name(name))
        return perr(p, line, "case name '%s'; expected letters, digits, '-', '_' or '.'", name);
    mla_suite *s = p->s;
    for (int i = 0; i < s->n_cases; i++)
        if (strcmp(s->cases[i].name, name) == 0)
            return perr(p, line, "duplicate case '%s' (first at line %d)", name, s->cases[i].line);
    mla_suite_case *nc = realloc(s->cases, sizeof *nc * (size_t)(s->n_cases + 1));
    if (!nc) return MLA_ERR_NOMEM;
    s->cases = nc;
    mla_suite_case *c = &s->cases[s->n_cases++];
    memset(c, 0, sizeof *c);
    c->origin = s->origin;
    c->line = line;
    if (!(c->name = strdup(name))) return MLA_ERR_NOMEM;
    if ((st = case_defaults(c)) != MLA_OK) return st;
    p->cur = c;
    p->cur_set = 0;
    p->cur_present = 0;
    for (int k = 0; k < K_COUNT; k++)
        if (p->have_default[k]) {
            if ((st = apply(p, c, k, p->defaults[k].line, p->defaults[k].value)) != MLA_OK) return st;
            p->cur_present |= 1u << k;
        }
    return MLA_OK;
}

static mla_status key_value(parser *p, int line, char *text)
{
    char *eq = strchr(text, '=');
    if (!eq) return perr(p, line, "'%s'; expected 'key = value' or a [section] header", text);
    *eq = '\0';
    char *key = trim(text), *value = trim(eq + 1);
    int k = name_index(key_names, K_COUNT, key);
    if (p->in_suite) {
        static const char *const sk[] = {"description"};
        if (strcmp(key, "description") != 0) return unknown_word(p, line, "key", key, "[suite]", sk, 1);
        char *d = strdup(value);
        if (!d) return MLA_ERR_NOMEM;
        free(p->s->description);
        p->s->description = d;
        return MLA_OK;
    }
    if (k < 0) return unknown_word(p, line, "key", key, NULL, key_names, K_COUNT);
    if (p->in_defaults) {
        if (p->defaults_set & (1u << k)) return perr(p, line, "key '%s' set twice in [defaults]", key);
        /* Validate now, on a scratch case, so a bad default is reported at its own line. */
        mla_suite_case scratch;
        memset(&scratch, 0, sizeof scratch);
        mla_status st = case_defaults(&scratch);
        if (st == MLA_OK) st = apply(p, &scratch, k, line, value);
        case_clear(&scratch);
        if (st != MLA_OK) return st;
        char *v = strdup(value);
        if (!v) return MLA_ERR_NOMEM;
        free(p->defaults[k].value);
        p->defaults[k] = (entry){k, line, v};
        p->have_default[k] = 1;
        p->defaults_set |= 1u << k;
        return MLA_OK;
    }
    if (!p->cur) return perr(p, line, "key '%s' outside a [case NAME] block", key);
    if (p->cur_set & (1u << k)) return perr(p, line, "key '%s' set twice in case '%s'", key, p->cur->name);
    p->cur_set |= 1u << k;
    p->cur_present |= 1u << k;
    return apply(p, p->cur, k, line, value);
}

mla_status mla_suite_parse(const char *text, const char *origin, mla_suite **out)
{
    if (!text || !out) return mla_errorf(MLA_ERR_INVALID, "mla_suite_parse: NULL argument");
    if (!origin) origin = "<suite>";
    parser p;
    memset(&p, 0, sizeof p);
    p.origin = origin;
    mla_suite *s = calloc(1, sizeof *s);
    if (!s) return MLA_ERR_NOMEM;
    s->origin = strdup(origin);
    s->name = strdup(origin);
    s->description = strdup("");
    p.s = s;
    p.origin = s->origin ? s->origin : origin;
    mla_status st = (s->origin && s->name && s->description) ? MLA_OK : MLA_ERR_NOMEM;
    const char *at = text;
    int line = 0;
    while (st == MLA_OK && *at) {
        size_t len = strcspn(at, "\n");
        line++;
        char *buf = xstrndup(at, len);
        if (!buf) {
            st = MLA_ERR_NOMEM;
            break;
        }
        at += len + (at[len] == '\n');
        char *hash = strchr(buf, '#');
        if (hash) *hash = '\0';
        char *t = trim(buf);
        if (*t == '[') {
            char *close = strchr(t, ']');
            if (!close || *trim(close + 1)) st = perr(&p, line, "'%s'; expected [case NAME], [defaults] or [suite]", t);
            else {
                *close = '\0';
                st = begin_section(&p, line, t + 1);
            }
        } else if (*t) {
            st = key_value(&p, line, t);
        }
        free(buf);
    }
    if (st == MLA_OK) st = finish_case(&p);
    if (st == MLA_OK && s->n_cases == 0) st = perr(&p, line > 0 ? line : 1, "no [case NAME] block; a suite needs at least one case");
    for (int k = 0; k < K_COUNT; k++) free(p.defaults[k].value);
    if (st != MLA_OK) {
        if (st == MLA_ERR_NOMEM) mla_errorf(st, "%s: out of memory while parsing", origin);
        mla_suite_free(s);
        return st;
    }
    *out = s;
    return MLA_OK;
}

mla_status mla_suite_read_text(FILE *f, const char *path, char **out)
{
    char *text = NULL;
    size_t len = 0, cap = 0;
    *out = NULL;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 16384;
            char *nt = realloc(text, cap);
            if (!nt) {
                free(text);
                fclose(f);
                return mla_errorf(MLA_ERR_NOMEM, "%s: out of memory", path);
            }
            text = nt;
        }
        size_t r = fread(text + len, 1, 4096, f);
        len += r;
        if (r < 4096) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(text);
        return mla_errorf(MLA_ERR_IO, "%s: read error", path);
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        free(text);
        return mla_errorf(MLA_ERR_FORMAT, "%s: contains a NUL byte; expected text", path);
    }
    *out = text;
    return MLA_OK;
}

mla_status mla_suite_load(const char *dir, const char *name, mla_suite **out)
{
    if (!name || !out) return mla_errorf(MLA_ERR_INVALID, "mla_suite_load: NULL argument");
    char path[4096];
    size_t nl = strlen(name), el = strlen(MLA_SUITE_EXT);
    int is_path = nl > el && strcmp(name + nl - el, MLA_SUITE_EXT) == 0 && strchr(name, '/');
    if (is_path || !dir) snprintf(path, sizeof path, "%s%s", name, is_path ? "" : MLA_SUITE_EXT);
    else snprintf(path, sizeof path, "%s/%s%s", dir, name, MLA_SUITE_EXT);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) {
            char **names = NULL;
            int n = 0;
            const char *sug = NULL;
            if (dir && mla_suite_list(dir, &names, &n) == MLA_OK) sug = mla_suite_suggest(name, (const char *const *)names, n);
            mla_status st = mla_errorf(MLA_ERR_NOT_FOUND, "%s: no such suite%s%s%s", path, sug ? " (did you mean '" : "",
                                       sug ? sug : "", sug ? "'?)" : "");
            mla_suite_list_free(names, n);
            return st;
        }
        return mla_errorf(MLA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    char *text = NULL;
    mla_status st = mla_suite_read_text(f, path, &text);
    if (st != MLA_OK) return st;
    mla_suite *s = NULL;
    st = mla_suite_parse(text, path, &s);
    free(text);
    if (st != MLA_OK) return st;
    /* Name = file stem. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *stem = xstrndup(base, strlen(base) - el);
    if (!stem) {
        mla_suite_free(s);
        return MLA_ERR_NOMEM;
    }
    free(s->name);
    s->name = stem;
    *out = s;
    return MLA_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

mla_status mla_suite_list(const char *dir, char ***names, int *n)
{
    if (!dir || !names || !n) return mla_errorf(MLA_ERR_INVALID, "mla_suite_list: NULL argument");
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return mla_errorf(MLA_ERR_IO, "%s: cannot open suites folder: %s", dir, strerror(errno));
    char **arr = NULL;
    int cnt = 0;
    size_t el = strlen(MLA_SUITE_EXT);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l <= el || strcmp(de->d_name + l - el, MLA_SUITE_EXT) != 0 || de->d_name[0] == '.') continue;
        char **na = realloc(arr, sizeof *na * (size_t)(cnt + 1));
        char *nm = xstrndup(de->d_name, l - el);
        if (!na || !nm) {
            free(nm);
            mla_suite_list_free(na ? na : arr, cnt);
            closedir(d);
            return mla_errorf(MLA_ERR_NOMEM, "%s: out of memory", dir);
        }
        arr = na;
        arr[cnt++] = nm;
    }
    closedir(d);
    if (cnt > 1) qsort(arr, (size_t)cnt, sizeof *arr, cmp_str);
    *names = arr;
    *n = cnt;
    return MLA_OK;
}

void mla_suite_list_free(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

const mla_suite_case *mla_suite_find_case(const mla_suite *s, const char *name)
{
    for (int i = 0; s && name && i < s->n_cases; i++)
        if (strcmp(s->cases[i].name, name) == 0) return &s->cases[i];
    return NULL;
}

int mla_suite_case_has_check(const mla_suite_case *c, mla_suite_check k)
{
    for (int i = 0; i < c->n_checks; i++)
        if (c->checks[i] == k) return 1;
    return 0;
}

int mla_suite_case_has_path(const mla_suite_case *c, mla_suite_path p)
{
    for (int i = 0; i < c->n_paths; i++)
        if (c->paths[i] == p) return 1;
    return 0;
}

int mla_suite_case_has_profile(const mla_suite_case *c, mla_profile p)
{
    for (int i = 0; i < c->n_profiles; i++)
        if (c->profiles[i] == p) return 1;
    return 0;
}
