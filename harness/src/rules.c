/* rules.c: the tolerance rules file (format in rules.h). */
#include "mlacheck/rules.h"
#include "mlacheck/suite.h" /* edit-distance suggestions */

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    regex_t re[3]; /* tap, profile, check */
    regex_t model; /* the model=REGEX matcher, when has_model */
    int has_model;
    mla_rule_limits rl;
} rule;

struct mla_rules {
    char *origin;
    rule *v;
    int n;
};

static const char *const limit_keys[] = {
#define X(f) #f,
    MLA_CMP_LIMIT_LIST(X)
#undef X
    "ulp_dtype",
};
#define N_LIMIT_KEYS ((int)(sizeof limit_keys / sizeof limit_keys[0]))

static double *limit_field(mla_cmp_limits *l, int k)
{
    double *f[] = {
#define X(name) &l->name,
        MLA_CMP_LIMIT_LIST(X)
#undef X
    };
    return k < (int)(sizeof f / sizeof f[0]) ? f[k] : NULL;
}

void mla_rules_free(mla_rules *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        for (int j = 0; j < 3; j++) regfree(&r->v[i].re[j]);
        if (r->v[i].has_model) regfree(&r->v[i].model);
    }
    free(r->v);
    free(r->origin);
    free(r);
}

int mla_rules_count(const mla_rules *r) { return r ? r->n : 0; }
const char *mla_rules_origin(const mla_rules *r) { return r ? r->origin : ""; }

/* regcomp of "^(src)$"; 0 or the regcomp code. */
static int anchored(regex_t *re, const char *src)
{
    size_t len = strlen(src) + 5;
    char *anch = malloc(len);
    if (!anch) return REG_ESPACE;
    snprintf(anch, len, "^(%s)$", src);
    int rc = regcomp(re, anch, REG_EXTENDED | REG_NOSUB);
    free(anch);
    return rc;
}

/* Bounds checked before regcomp, which glibc lets run away (issue 12: `.*{1,1000}` took 248 s and
 * 5.4 GB, 40 stacked '+' exhausted the memory): at most MAX_RE_LEN characters, repetition counts
 * {m,n} of at most MAX_RE_REPEAT, and no quantifier directly after another. The shipped rules use
 * none of these (their longest regex is under 100 characters, no braces). NULL when fine, else why. */
#define MAX_RE_LEN 256
#define MAX_RE_REPEAT 64
static const char *regex_out_of_bounds(const char *src)
{
    if (strlen(src) > MAX_RE_LEN) return "longer than 256 characters";
    int prev_quant = 0;
    for (const char *c = src; *c; c++) {
        if (*c == '\\' && c[1]) {
            c++;
            prev_quant = 0;
            continue;
        }
        int quant = *c == '*' || *c == '+' || *c == '?' || *c == '{';
        if (quant && prev_quant) return "a quantifier directly after another (e.g. '.*+' or '+{2}')";
        if (*c == '{') {
            char *end;
            long a = strtol(c + 1, &end, 10), b = a;
            if (*end == ',') b = end[1] == '}' ? MAX_RE_REPEAT + 1 : strtol(end + 1, &end, 10);
            if (a > MAX_RE_REPEAT || b > MAX_RE_REPEAT) return "a repetition count over 64 (or an open {m,})";
            const char *close = strchr(c, '}');
            if (close) c = close;
        }
        prev_quant = quant;
    }
    return NULL;
}

/* One line (comment already stripped, non-empty) into *out. */
static mla_status parse_rule(const char *origin, int line, char *t, rule *out)
{
    static const char *const what[3] = {"tap", "profile", "check"};
    char *tok[64];
    int n = 0;
    char *save = NULL;
    for (char *s = strtok_r(t, " \t\r", &save); s; s = strtok_r(NULL, " \t\r", &save)) {
        if (n == 64) return mla_errorf(MLA_ERR_FORMAT, "%s:%d: too many fields (at most 64)", origin, line);
        tok[n++] = s;
    }
    if (n < 4)
        return mla_errorf(MLA_ERR_FORMAT,
                          "%s:%d: %d field(s); expected '<tap regex> <profile regex> <check regex> key=value...'",
                          origin, line, n);
    memset(out, 0, sizeof *out);
    out->rl.lim.ulp_dtype = MLA_F64;
    out->rl.line = line;
    unsigned seen = 0;
    int have_dtype = 0;
    const char *model_src = NULL;
    for (int i = 3; i < n; i++) {
        char *eq = strchr(tok[i], '=');
        if (!eq) return mla_errorf(MLA_ERR_FORMAT, "%s:%d: '%s'; expected key=value", origin, line, tok[i]);
        *eq = '\0';
        const char *key = tok[i], *val = eq + 1;
        if (strcmp(key, "model") == 0) { /* a matcher, not a limit: compiled after the three regexes */
            if (model_src) return mla_errorf(MLA_ERR_FORMAT, "%s:%d: key 'model' given twice", origin, line);
            if (!*val) return mla_errorf(MLA_ERR_FORMAT, "%s:%d: model = ''; expected a model-name regex", origin, line);
            model_src = val;
            continue;
        }
        int k = -1;
        for (int j = 0; j < N_LIMIT_KEYS; j++)
            if (strcmp(limit_keys[j], key) == 0) k = j;
        if (k < 0) {
            const char *sug = mla_suite_suggest(key, limit_keys, N_LIMIT_KEYS);
            if (sug) return mla_errorf(MLA_ERR_FORMAT, "%s:%d: unknown key '%s' (did you mean '%s'?)", origin, line, key, sug);
            char keys[256];
            size_t m = 0;
            for (int j = 0; j < N_LIMIT_KEYS; j++)
                m += (size_t)snprintf(keys + m, m < sizeof keys ? sizeof keys - m : 0, "%s%s", limit_keys[j],
                                      j == N_LIMIT_KEYS - 1 ? "" : j == N_LIMIT_KEYS - 2 ? " or " : ", ");
            return mla_errorf(MLA_ERR_FORMAT, "%s:%d: unknown key '%s'; expected %s", origin, line, key, keys);
        }
        if (seen & (1u << k)) return mla_errorf(MLA_ERR_FORMAT, "%s:%d: key '%s' given twice", origin, line, key);
        seen |= 1u << k;
        double *f = limit_field(&out->rl.lim, k);
        if (!f) {
            if (mla_dtype_from_name(val, &out->rl.lim.ulp_dtype) != 0)
                return mla_errorf(MLA_ERR_FORMAT, "%s:%d: ulp_dtype '%s'; expected a dtype name (f32, bf16, e4m3fn, ...)",
                                  origin, line, val);
            have_dtype = 1;
            continue;
        }
        char *end;
        errno = 0;
        double x = strtod(val, &end);
        if (!*val || *end || errno == ERANGE || !isfinite(x) || x < 0)
            return mla_errorf(MLA_ERR_FORMAT, "%s:%d: %s = '%s'; expected a finite number >= 0", origin, line, key, val);
        *f = x;
    }
    if (out->rl.lim.ulp_p99 > 0 && !have_dtype)
        return mla_errorf(MLA_ERR_FORMAT, "%s:%d: ulp_p99 needs ulp_dtype (the type the ULPs count in)", origin, line);
    for (int j = 0; j < 3 + (model_src != NULL); j++) {
        const char *src = j < 3 ? tok[j] : model_src, *why = regex_out_of_bounds(src);
        if (why) /* nothing is compiled yet */
            return mla_errorf(MLA_ERR_FORMAT, "%s:%d: %s regex '%.40s%s': %s", origin, line,
                              j < 3 ? what[j] : "model", src, strlen(src) > 40 ? "..." : "", why);
    }
    for (int j = 0; j < 3; j++) {
        int rc = anchored(&out->re[j], tok[j]);
        if (rc != 0) {
            char msg[128];
            regerror(rc, &out->re[j], msg, sizeof msg);
            for (int k = 0; k < j; k++) regfree(&out->re[k]);
            return mla_errorf(MLA_ERR_FORMAT, "%s:%d: %s regex '%s': %s", origin, line, what[j], tok[j], msg);
        }
    }
    if (model_src) {
        int rc = anchored(&out->model, model_src);
        if (rc != 0) {
            char msg[128];
            regerror(rc, &out->model, msg, sizeof msg);
            for (int k = 0; k < 3; k++) regfree(&out->re[k]);
            return mla_errorf(MLA_ERR_FORMAT, "%s:%d: model regex '%s': %s", origin, line, model_src, msg);
        }
        out->has_model = 1;
    }
    return MLA_OK;
}

mla_status mla_rules_parse(const char *text, const char *origin, mla_rules **out)
{
    if (!text || !out) return mla_errorf(MLA_ERR_INVALID, "mla_rules_parse: NULL argument");
    if (!origin) origin = "<rules>";
    mla_rules *r = calloc(1, sizeof *r);
    if (!r || !(r->origin = strdup(origin))) {
        free(r);
        return mla_errorf(MLA_ERR_NOMEM, "%s: out of memory", origin);
    }
    mla_status st = MLA_OK;
    int line = 0;
    for (const char *at = text; *at && st == MLA_OK;) {
        size_t len = strcspn(at, "\n");
        line++;
        char *buf = malloc(len + 1);
        if (!buf) {
            st = MLA_ERR_NOMEM;
            break;
        }
        memcpy(buf, at, len);
        buf[len] = '\0';
        at += len + (at[len] == '\n');
        char *hash = strchr(buf, '#');
        if (hash) *hash = '\0';
        char *t = buf;
        while (isspace((unsigned char)*t)) t++;
        if (*t) {
            rule *nv = realloc(r->v, sizeof *nv * (size_t)(r->n + 1));
            if (!nv) st = MLA_ERR_NOMEM;
            else {
                r->v = nv;
                st = parse_rule(origin, line, t, &r->v[r->n]);
                if (st == MLA_OK) r->n++;
            }
        }
        free(buf);
    }
    if (st == MLA_OK && r->n == 0) st = mla_errorf(MLA_ERR_FORMAT, "%s: no rules; expected at least a catch-all '.* .* .* ...'", origin);
    if (st != MLA_OK) {
        if (st == MLA_ERR_NOMEM) mla_errorf(st, "%s: out of memory", origin);
        mla_rules_free(r);
        return st;
    }
    *out = r;
    return MLA_OK;
}

mla_status mla_rules_load(const char *path, mla_rules **out)
{
    if (!path || !out) return mla_errorf(MLA_ERR_INVALID, "mla_rules_load: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) return mla_errorf(errno == ENOENT ? MLA_ERR_NOT_FOUND : MLA_ERR_IO, "%s: cannot open rules: %s", path, strerror(errno));
    char *text = NULL;
    mla_status st = mla_suite_read_text(f, path, &text);
    if (st != MLA_OK) return st;
    st = mla_rules_parse(text, path, out);
    free(text);
    return st;
}

const mla_rule_limits *mla_rules_match_model(const mla_rules *r, const char *tap, const char *profile,
                                             const char *check, const char *model)
{
    if (!r || !tap || !profile || !check) return NULL;
    const char *names[3] = {tap, profile, check};
    const char *base = model ? strrchr(model, '/') : NULL;
    base = base ? base + 1 : model;
    for (int i = 0; i < r->n; i++) {
        if (r->v[i].has_model && (!base || regexec(&r->v[i].model, base, 0, NULL, 0) != 0)) continue;
        int j = 0;
        while (j < 3 && regexec(&r->v[i].re[j], names[j], 0, NULL, 0) == 0) j++;
        if (j == 3) return &r->v[i].rl;
    }
    return NULL;
}

const mla_rule_limits *mla_rules_match(const mla_rules *r, const char *tap, const char *profile, const char *check)
{
    return mla_rules_match_model(r, tap, profile, check, NULL);
}
