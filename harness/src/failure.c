/* failure.c: the writer and the reader of saved failure inputs (format in failure.h), both expanded
 * from MLA_FAILURE_KEY_LIST. */
#include "mlacheck/failure.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const key_names[] = {
#define X(key, field, kind) key,
    MLA_FAILURE_KEY_LIST(X)
#undef X
};
#define N_KEYS ((int)(sizeof key_names / sizeof key_names[0]))

/* A growing text buffer; on a failed allocation it is freed and stays NULL. */
typedef struct {
    char *s;
    size_t n, cap;
} text_buf;

static void put(text_buf *b, const char *fmt, ...)
{
    if (!b->s) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) {
            free(b->s);
            b->s = NULL;
            return;
        }
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        char *ns = realloc(b->s, 2 * b->cap + (size_t)k);
        if (!ns) {
            free(b->s);
            b->s = NULL;
            return;
        }
        b->s = ns;
        b->cap = 2 * b->cap + (size_t)k;
    }
}

static void put_TEXT(text_buf *b, const mla_failure *f, const char *v) { (void)f; put(b, "%s", v); }
static void put_INT(text_buf *b, const mla_failure *f, int v) { (void)f; put(b, "%d", v); }
static void put_HEX(text_buf *b, const mla_failure *f, unsigned v) { (void)f; put(b, "0x%x", v); }
static void put_TOKENS(text_buf *b, const mla_failure *f, const int32_t *v)
{
    for (int64_t i = 0; i < f->n_tokens; i++) put(b, "%s%d", i ? "," : "", (int)v[i]);
}

/* Values the line format cannot hold: a text field must exist and stay on its line. */
static int bad_TEXT(const char *s) { return !s || strpbrk(s, "\r\n") != NULL; }
static int bad_INT(int v) { return (void)v, 0; }
static int bad_HEX(unsigned v) { return (void)v, 0; }
static int bad_TOKENS(const int32_t *v) { return (void)v, 0; }

/* The dump command that recomputes the candidate's taps, for a person reading the file; the path of
 * a "decoded" verdict is the decode drive. */
static const char *drive_path(const char *path)
{
    if (!strcmp(path, "chunked")) return "chunked";
    return !strcmp(path, "decode") || !strcmp(path, "decoded") ? "decode" : "prefill";
}

mla_status mla_failure_format(const mla_failure *f, char **out)
{
    *out = NULL;
#define X(key, field, kind) \
    if (bad_##kind(f->field)) return mla_errorf(MLA_ERR_INVALID, "failure inputs: %s is NULL or holds a line break", key);
    MLA_FAILURE_KEY_LIST(X)
#undef X
    if (f->n_tokens < 0 || (f->n_tokens && !f->tokens))
        return mla_errorf(MLA_ERR_INVALID, "failure inputs: %lld tokens; expected a token array",
                          (long long)f->n_tokens);
    text_buf b = {.cap = 1024 + (size_t)f->n_tokens * 12};
    if (!(b.s = malloc(b.cap))) return mla_errorf(MLA_ERR_NOMEM, "failure inputs: %zu bytes", b.cap);
    put(&b, "# mlacheck failing inputs (key = value, harness/include/mlacheck/failure.h); "
            "mlacheck bisect --replay reads them\n");
    put(&b, "# replay: mlacheck dump --model %s --profile %s --path %s --prefill-len %d --block-size %d "
            "--tokens $(sed -n 's/^tokens = //p' THIS_FILE) --out x.h5\n",
        f->model, f->profile, drive_path(f->path), f->prefill_len, f->block_size);
#define X(key, field, kind)  \
    put(&b, "%s = ", key);   \
    put_##kind(&b, f, f->field); \
    put(&b, "\n");
    MLA_FAILURE_KEY_LIST(X)
#undef X
    if (!b.s) return mla_errorf(MLA_ERR_NOMEM, "failure inputs: out of memory");
    *out = b.s;
    return MLA_OK;
}

/* Value parsers: 0 on success. */
static int get_TEXT(mla_failure *f, char *v, const char **out)
{
    (void)f;
    *out = v;
    return 0;
}

static int get_INT(mla_failure *f, char *v, int *out)
{
    (void)f;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < -2147483647L - 1 || x > 2147483647L) return -1;
    *out = (int)x;
    return 0;
}

static int get_HEX(mla_failure *f, char *v, unsigned *out)
{
    (void)f;
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 16);
    if (!*v || *v == '-' || *end || errno || x > 0xffffffffUL) return -1;
    *out = (unsigned)x;
    return 0;
}

static int get_TOKENS(mla_failure *f, char *v, const int32_t **out)
{
    int64_t n = *v ? 1 : 0;
    for (const char *p = v; *p; p++) n += *p == ',';
    int32_t *t = malloc((size_t)(n ? n : 1) * sizeof *t);
    if (!t) return -2;
    for (int64_t i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (end == v || errno || x < 0 || x > 2147483647L || (*end != ',' && *end != '\0')) {
            free(t);
            return -1;
        }
        t[i] = (int32_t)x;
        v = end + (*end == ',');
    }
    free(f->owned_tokens);
    f->owned_tokens = t;
    f->n_tokens = n;
    *out = t;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

mla_status mla_failure_parse(const char *text, const char *origin, mla_failure *out)
{
    memset(out, 0, sizeof *out);
    if (!origin) origin = "<failure>";
    if (!text || !(out->owned_text = strdup(text))) return mla_errorf(MLA_ERR_NOMEM, "%s: out of memory", origin);
    mla_status st = MLA_OK;
    int line = 0, seen[N_KEYS] = {0};
    for (char *at = out->owned_text; *at && !st;) {
        char *l = at;
        size_t len = strcspn(at, "\n");
        at += len + (at[len] == '\n');
        l[len] = '\0';
        line++;
        l = trim(l);
        if (!*l || *l == '#') continue;
        char *eq = strchr(l, '=');
        if (!eq) {
            st = mla_errorf(MLA_ERR_FORMAT, "%s:%d: '%s'; expected key = value", origin, line, l);
            break;
        }
        *eq = '\0';
        char *key = trim(l), *val = trim(eq + 1);
        int k = 0;
        while (k < N_KEYS && strcmp(key_names[k], key)) k++;
        if (k == N_KEYS) {
            st = mla_errorf(MLA_ERR_FORMAT, "%s:%d: unknown key '%s' (failure.h lists the keys)", origin, line, key);
            break;
        }
        if (seen[k]++) {
            st = mla_errorf(MLA_ERR_FORMAT, "%s:%d: key '%s' given twice", origin, line, key);
            break;
        }
        int i = 0, rc = 0;
#define X(key_, field, kind) \
    if (i++ == k) rc = get_##kind(out, val, &out->field);
        MLA_FAILURE_KEY_LIST(X)
#undef X
        if (rc == -2) st = mla_errorf(MLA_ERR_NOMEM, "%s:%d: out of memory", origin, line);
        else if (rc) st = mla_errorf(MLA_ERR_FORMAT, "%s:%d: %s = '%s': not a valid value", origin, line, key, val);
    }
    for (int k = 0; k < N_KEYS && !st; k++)
        if (!seen[k]) st = mla_errorf(MLA_ERR_FORMAT, "%s: key '%s' missing", origin, key_names[k]);
    if (st) mla_failure_free(out);
    return st;
}

mla_status mla_failure_load(const char *path, mla_failure *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return mla_errorf(errno == ENOENT ? MLA_ERR_NOT_FOUND : MLA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *text = NULL;
    size_t n = 0, cap = 0;
    mla_status st = MLA_OK;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *nt = realloc(text, cap = 2 * cap + 4096 + 1);
            if (!nt) {
                st = mla_errorf(MLA_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            text = nt;
        }
        size_t k = fread(text + n, 1, 4096, f);
        n += k;
        if (k < 4096) {
            if (ferror(f)) st = mla_errorf(MLA_ERR_IO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (!st) {
        text[n] = '\0';
        st = mla_failure_parse(text, path, out);
    }
    free(text);
    return st;
}

void mla_failure_free(mla_failure *f)
{
    if (!f) return;
    free(f->owned_text);
    free(f->owned_tokens);
    memset(f, 0, sizeof *f);
}
