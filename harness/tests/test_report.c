/* test_report.c: results folders (atomic, complete, well-formed), re-rendering, gnuplot on/off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlacheck/report.h"

/* snprintf that must fit (the return value is checked, which also keeps -Wformat-truncation quiet). */
#define PJOIN(buf, ...) assert_true(snprintf(buf, sizeof buf, __VA_ARGS__) < (int)sizeof buf)

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static void rm_rf(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static int exists(const char *dir, const char *name)
{
    char p[4096];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) return 0;
    return stat(p, &st) == 0 && st.st_size > 0;
}

static char *slurp(const char *dir, const char *name)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) return NULL;
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    assert_non_null(t);
    assert_int_equal(fread(t, 1, (size_t)n, f), (size_t)n);
    t[n] = '\0';
    fclose(f);
    return t;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Minimal XML well-formedness: tags balance and nest, attribute values are quoted, no raw '<' or
 * '&' in text except as entity starts. Returns 0 when well formed. */
static int xml_check(const char *s)
{
    char stack[64][64];
    int depth = 0, roots = 0;
    while (*s) {
        if (*s == '&') {
            const char *semi = strchr(s, ';');
            if (!semi || semi - s > 8) return -1;
            s = semi + 1;
            continue;
        }
        if (*s != '<') {
            if (*s == '>') return -2;
            s++;
            continue;
        }
        if (s[1] == '?') {
            s = strstr(s, "?>");
            if (!s) return -3;
            s += 2;
            continue;
        }
        int closing = s[1] == '/';
        const char *name = s + 1 + closing;
        size_t nl = strcspn(name, " \t\n/>");
        if (nl == 0 || nl >= 64) return -4;
        const char *p = name + nl;
        while (*p && *p != '>') { /* attributes */
            if (*p == '"') {
                const char *q = strchr(p + 1, '"');
                if (!q) return -5;
                for (const char *c = p + 1; c < q; c++)
                    if (*c == '<') return -6;
                p = q + 1;
                continue;
            }
            p++;
        }
        if (!*p) return -7;
        int self = p[-1] == '/';
        if (closing) {
            if (depth == 0 || strncmp(stack[depth - 1], name, nl) != 0 || stack[depth - 1][nl]) return -8;
            depth--;
        } else if (!self) {
            if (depth == 64) return -9;
            if (depth == 0) roots++;
            memcpy(stack[depth], name, nl);
            stack[depth++][nl] = '\0';
        }
        s = p + 1;
    }
    return depth == 0 && roots == 1 ? 0 : -10;
}

typedef struct {
    char results[256];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->results, sizeof f->results, "/tmp/mla-test-report-XXXXXX");
    if (!mkdtemp(f->results)) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    rm_rf(f->results);
    free(f);
    return 0;
}

/* A run with two cases: per-layer rows for several taps, an fp8 check, a sweep, KL values, and a
 * failing check whose message needs escaping in every format. */
static mla_rep_run *make_run(const char *results)
{
    mla_rep_run *r = NULL;
    assert_int_equal(mla_rep_new(results, "ci", &r), MLA_OK);
    assert_int_equal(mla_rep_set_git_sha(r, "0123abcd"), MLA_OK);
    const char *taps[] = {"kv_c", "attn_core", "out"};
    for (int layer = 0; layer < 4; layer++)
        for (int t = 0; t < 3; t++) {
            mla_rep_row w = {.case_name = "tiny-v3", .check = "golden", .profile = "bf16", .path = "prefill",
                             .layer = layer, .tap = taps[t], .kv_len = -1, .n = 1000, .max_abs = 1e-3 * (layer + 1),
                             .max_rel = 1e-2, .nmse_db = -60, .cos_diff = 1e-7, .rel_l2 = 1e-7 * (layer + 1) * (t + 1),
                             .ulp_p99 = 1, .headroom = 0.1 * (layer + 1) * (t + 1) / 2, .worst = "rel_l2", .pass = 1, .why = "",
                             .lim_rel_l2 = 1e-6, .lim_cos_diff = 1e-5};
            if (layer == 3 && t == 2) { /* the single failing tensor */
                w.pass = 0;
                w.headroom = 2.5;
                w.rel_l2 = 2.5e-6;
                w.why = "rel_l2 2.5e-06 > 1e-06 at [3,7] & <tab>\there";
            }
            assert_int_equal(mla_rep_add_metric(r, &w), MLA_OK);
            w.check = "fp8-vs-bf16";
            w.profile = "fp8kv";
            w.pass = 1;
            w.headroom = 0.5;
            w.rel_l2 = 1e-2 * (layer + 1);
            w.lim_rel_l2 = layer ? 0.05 : 0.02; /* a layer-0 rule of its own: the limit steps */
            w.why = "";
            assert_int_equal(mla_rep_add_metric(r, &w), MLA_OK);
        }
    for (int kv = 64; kv <= 512; kv += 64) {
        mla_rep_row w = {.case_name = "tiny-v3-sweep", .check = "sweep", .profile = "fp64", .path = "decode",
                         .layer = 0, .tap = "attn_out", .kv_len = kv, .n = 64, .rel_l2 = 1e-15 * kv, .headroom = 1e-3 * kv / 512,
                         .pass = 1, .lim_rel_l2 = 1e-12};
        assert_int_equal(mla_rep_add_metric(r, &w), MLA_OK);
    }
    for (int i = 0; i < 200; i++) assert_int_equal(mla_rep_add_kl(r, pow(10.0, -9 + 6.0 * i / 200)), MLA_OK);
    assert_int_equal(mla_rep_add_kl(r, 0.0), MLA_OK);
    assert_int_equal(mla_rep_add_check(r, "tiny-v3", "golden", "bf16", "prefill", MLA_REP_FAIL,
                                       "rel_l2 over limit <x> & \"quoted\" | piped", 3, "out"),
                     MLA_OK);
    mla_rep_set_check_seconds(r, 1.25);
    assert_int_equal(mla_rep_add_prop(r, "engine", "ref"), MLA_OK);
    assert_int_equal(mla_rep_add_prop(r, "engine", "gpu"), MLA_OK);
    assert_int_equal(mla_rep_add_prop(r, "engine", "ref"), MLA_OK); /* not repeated */
    assert_int_equal(mla_rep_add_prop(r, "bad key", "x"), MLA_ERR_INVALID);
    assert_int_equal(mla_rep_add_check(r, "tiny-v3", "fp8-vs-bf16", "fp8kv", "prefill", MLA_REP_PASS, "", -1, NULL), MLA_OK);
    assert_int_equal(mla_rep_add_check(r, "tiny-v3", "determinism", "bf16", "prefill", MLA_REP_SKIP, "no GPU device", -1, NULL),
                     MLA_OK);
    assert_int_equal(mla_rep_add_check(r, "tiny-v3-sweep", "sweep", "fp64", "decode", MLA_REP_PASS, "", -1, NULL), MLA_OK);
    assert_int_equal(mla_rep_add_check(r, "tiny-v3", "golden", "bf16", "bogus", (mla_rep_verdict)7, "", -1, NULL),
                     MLA_ERR_INVALID);
    int p, fl, sk;
    mla_rep_counts(r, &p, &fl, &sk);
    assert_int_equal(p, 2);
    assert_int_equal(fl, 1);
    assert_int_equal(sk, 1);
    return r;
}

static void assert_no_tmp_left(const char *results)
{
    DIR *d = opendir(results);
    assert_non_null(d);
    struct dirent *de;
    int runs = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        assert_null(strstr(de->d_name, ".tmp-"));
        runs++;
    }
    closedir(d);
    assert_true(runs >= 1);
}

static void test_report_complete(void **state)
{
    fixture *fx = *state;
    mla_rep_run *r = make_run(fx->results);
    char out[4096];
    assert_int_equal(mla_rep_finish(r, 12.5, out, sizeof out), MLA_OK);
    /* The run id: UTC stamp, suite, 4 hex; the folder is results/<id>. */
    regex_t re;
    assert_int_equal(regcomp(&re, "^[0-9]{8}T[0-9]{6}Z-ci-[0-9a-f]{4}$", REG_EXTENDED | REG_NOSUB), 0);
    assert_int_equal(regexec(&re, mla_rep_run_id(r), 0, NULL, 0), 0);
    regfree(&re);
    char want[4096];
    PJOIN(want, "%s/%s", fx->results, mla_rep_run_id(r));
    assert_string_equal(out, want);
    assert_no_tmp_left(fx->results);
    const char *files[] = {"summary.json", "summary.md", "junit.xml", "metrics.tsv", "index.html"};
    for (int i = 0; i < 5; i++) assert_true(exists(out, files[i]));

    /* junit: well formed, one testsuite per case, one testcase per check, escaped message. */
    char *x = slurp(out, "junit.xml");
    assert_non_null(x);
    int xc = xml_check(x);
    if (xc) fprintf(stderr, "junit.xml not well formed (%d):\n%s\n", xc, x);
    assert_int_equal(xc, 0);
    assert_int_equal(count_of(x, "<testsuite "), 2);
    assert_int_equal(count_of(x, "<testcase "), 4);
    assert_int_equal(count_of(x, "<failure "), 1);
    assert_int_equal(count_of(x, "<skipped "), 1);
    assert_non_null(strstr(x, "tests=\"4\" failures=\"1\" skipped=\"1\""));
    assert_non_null(strstr(x, "&lt;x&gt; &amp; &quot;quoted&quot;"));
    assert_non_null(strstr(x, "first diverging: layer 3 tap out"));
    /* what strict schemas want: times, timestamp, hostname, typed failures, properties */
    assert_int_equal(count_of(x, "<testcase classname=\"ci.tiny-v3\" name=\"golden/bf16/prefill\" time=\"1.250\""), 1);
    assert_int_equal(count_of(x, " hostname=\""), 2);
    assert_int_equal(count_of(x, " timestamp=\""), 3);
    assert_int_equal(count_of(x, "<failure type=\"divergence\" message=\""), 1);
    assert_int_equal(count_of(x, "<property name=\"git_sha\" value=\"0123abcd\"/>"), 2);
    assert_int_equal(count_of(x, "<property name=\"engine\" value=\"ref, gpu\"/>"), 2);
    assert_null(strstr(x, "headroom"));
    free(x);

    /* summary.json: counts, the failing check's worst metric is its worst row. */
    char p[4096];
    PJOIN(p, "%s/summary.json", out);
    json_error_t je;
    json_t *j = json_load_file(p, 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "verdict")), "fail");
    assert_string_equal(json_string_value(json_object_get(j, "git_sha")), "0123abcd");
    assert_string_equal(json_string_value(json_object_get(j, "suite")), "ci");
    json_t *counts = json_object_get(j, "counts");
    assert_int_equal(json_integer_value(json_object_get(counts, "fail")), 1);
    assert_int_equal(json_integer_value(json_object_get(counts, "cases")), 2);
    assert_int_equal(json_integer_value(json_object_get(counts, "metrics")), 12 * 2 + 8);
    assert_int_equal(json_integer_value(json_object_get(counts, "metrics_failed")), 1);
    json_t *c0 = json_array_get(json_object_get(j, "checks"), 0);
    assert_true(json_real_value(json_object_get(c0, "limit_use")) == 2.5);
    assert_null(json_object_get(c0, "headroom")); /* one name: no alias is written */
    assert_true(json_real_value(json_object_get(c0, "worst_value")) == 2.5e-6);
    assert_string_equal(json_string_value(json_object_get(c0, "worst_metric")), "rel_l2");
    assert_int_equal(json_integer_value(json_object_get(c0, "first_layer")), 3);
    assert_string_equal(json_string_value(json_object_get(c0, "first_tap")), "out");
    json_t *c2 = json_array_get(json_object_get(j, "checks"), 2); /* skipped: no rows, null limit use */
    assert_true(json_is_null(json_object_get(c2, "limit_use")));
    /* provenance: the git id given, and what the library knows itself */
    json_t *prov = json_object_get(j, "provenance");
    assert_string_equal(json_string_value(json_object_get(prov, "git")), "0123abcd");
    assert_non_null(json_string_value(json_object_get(prov, "compiler")));
    assert_non_null(json_string_value(json_object_get(prov, "blas")));
    assert_non_null(json_string_value(json_object_get(prov, "hdf5")));
    assert_non_null(json_string_value(json_object_get(prov, "host")));
    assert_string_equal(json_string_value(json_object_get(prov, "engine")), "ref, gpu");
    assert_int_equal(json_array_size(json_object_get(j, "logits_kl")), 201);
    assert_true(json_real_value(json_object_get(j, "wall_seconds")) == 12.5);
    json_decref(j);

    /* metrics.tsv: header + one row per tensor, 18 columns, no tab leaked from 'why'. */
    char *t = slurp(out, "metrics.tsv");
    assert_int_equal(count_of(t, "\n"), 1 + 32);
    assert_int_equal(count_of(t, "\t"), 17 * 33);
    assert_non_null(strstr(t, "tiny-v3\tgolden\tbf16\tprefill\t3\tout\t-1\t1000\t"));
    free(t);

    /* summary.md: totals line, failing table before the full table, pipes escaped. */
    char *md = slurp(out, "summary.md");
    assert_non_null(strstr(md, "**1 failed**, 2 passed, 1 skipped of 4 checks in 2 cases"));
    char *failing = strstr(md, "### Failures by first divergence: 1 cause, 1 failing checks"),
         *all = strstr(md, "<details><summary>All checks (4)</summary>");
    assert_true(failing && all && failing < all);
    assert_non_null(strstr(md, "#### 1. layer 3 tap out (1 check)"));
    assert_non_null(strstr(md, "\\| piped"));
    assert_non_null(strstr(md, "| limit use |"));
    assert_null(strstr(md, "headroom"));
    assert_non_null(strstr(md, "| compiler | "));
    free(md);

    /* Plots, when gnuplot exists. */
    if (mla_rep_find_gnuplot()) {
        const char *plots[] = {"plots/layers-golden-bf16", "plots/layers-fp8-vs-bf16-fp8kv", "plots/fp8_vs_bf16",
                               "plots/sweep_kv_len", "plots/logits_kl"};
        for (int i = 0; i < 5; i++) {
            char n[256];
            PJOIN(n, "%s.png", plots[i]);
            if (!exists(out, n)) fprintf(stderr, "missing %s (note: %s)\n", n, mla_rep_note(r));
            assert_true(exists(out, n));
            PJOIN(n, "%s.svg", plots[i]);
            assert_true(exists(out, n));
        }
        assert_string_equal(mla_rep_note(r), "");
        char *html = slurp(out, "index.html");
        assert_non_null(strstr(html, "plots/sweep_kv_len.svg"));
        assert_non_null(strstr(html, "plots/logits_kl.png"));
        assert_non_null(strstr(html, "<tr class=\"fail\">"));
        free(html);
    } else {
        fprintf(stderr, "gnuplot not found: plot files not checked\n");
    }
    mla_rep_free(r);
}

static void test_report_without_gnuplot(void **state)
{
    fixture *fx = *state;
    char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("MLA_GNUPLOT", "/nonexistent/gnuplot", 1);
    setenv("PATH", "/nonexistent-bin", 1);
    assert_null(mla_rep_find_gnuplot());
    mla_rep_run *r = make_run(fx->results);
    char out[4096];
    mla_status st = mla_rep_finish(r, 1.0, out, sizeof out);
    if (old_path) setenv("PATH", old_path, 1);
    free(old_path);
    assert_int_equal(st, MLA_OK);
    assert_string_equal(mla_rep_note(r), "gnuplot not found: plots skipped");
    assert_false(exists(out, "plots/logits_kl.png"));
    assert_true(exists(out, "plots/logits_kl.gp")); /* scripts kept for later */
    assert_true(exists(out, "plots/logits_kl.dat"));
    char *md = slurp(out, "summary.md");
    assert_non_null(strstr(md, "gnuplot not found: plots skipped"));
    free(md);
    char *html = slurp(out, "index.html");
    assert_non_null(strstr(html, "No plots."));
    free(html);

    /* Re-render with gnuplot back (when the machine has it): plots appear, md and html are rebuilt. */
    unsetenv("MLA_GNUPLOT");
    char p[4096];
    PJOIN(p, "%s/summary.md", out);
    assert_int_equal(unlink(p), 0);
    PJOIN(p, "%s/index.html", out);
    assert_int_equal(unlink(p), 0);
    char note[256] = "unset";
    assert_int_equal(mla_rep_render(out, note, sizeof note), MLA_OK);
    assert_true(exists(out, "summary.md"));
    assert_true(exists(out, "index.html"));
    md = slurp(out, "summary.md");
    assert_non_null(strstr(md, "**1 failed**, 2 passed, 1 skipped of 4 checks in 2 cases; 32 tensors compared"));
    assert_non_null(strstr(md, "| tiny-v3 | golden | bf16 | prefill | **FAIL** | rel_l2 2.5e-06 | 2.5 |"));
    assert_non_null(strstr(md, "| engine | ref, gpu |")); /* provenance survives a re-render */
    free(md);
    if (mla_rep_find_gnuplot()) {
        assert_string_equal(note, "");
        assert_true(exists(out, "plots/logits_kl.png"));
        assert_true(exists(out, "plots/layers-golden-bf16.svg"));
    } else {
        assert_string_equal(note, "gnuplot not found: plots skipped");
    }
    mla_rep_free(r);
    assert_no_tmp_left(fx->results);
}

/* What the plots draw: the metric with its limit, failures ringed, the first divergence marked,
 * exact zeros on their own tick, integer layer ticks, bars for a one-layer model, and the sweep's
 * metric itself (not its limit use). */
static void test_plot_scripts(void **state)
{
    fixture *fx = *state;
    mla_rep_run *r = make_run(fx->results);
    const char *taps[] = {"attn_norm", "kv_c", "out"};
    for (int t = 0; t < 3; t++) { /* a one-layer model: bars */
        mla_rep_row w = {.case_name = "v3-layer", .check = "absorbed-vs-naive", .profile = "fp64", .path = "prefill",
                         .layer = 0, .tap = taps[t], .kv_len = -1, .n = 10, .rel_l2 = t ? 1e-14 * t : 0,
                         .headroom = t ? 1e-2 * t : 0, .worst = "rel_l2", .pass = 1, .why = "",
                         .lim_rel_l2 = 1e-12, .lim_max_abs = 1e-300};
        assert_int_equal(mla_rep_add_metric(r, &w), MLA_OK);
    }
    assert_int_equal(mla_rep_add_check(r, "v3-layer", "absorbed-vs-naive", "fp64", "prefill", MLA_REP_FAIL,
                                       "first divergence: layer 0 tap kv_c", 0, "kv_c"),
                     MLA_OK);
    char out[4096];
    assert_int_equal(mla_rep_finish(r, 1.0, out, sizeof out), MLA_OK);
    mla_rep_free(r);
    char *gp = slurp(out, "plots/layers-golden-bf16.gp");
    assert_non_null(gp);
    assert_non_null(strstr(gp, "set ylabel \"rel_l2\""));
    assert_non_null(strstr(gp, "set xtics 1\n"));
    assert_non_null(strstr(gp, "set format x \"%.0f\""));
    assert_non_null(strstr(gp, "title \"fails its limit\""));
    assert_non_null(strstr(gp, "\"first divergence: layer 3 out\""));
    assert_non_null(strstr(gp, "title \"limit: rel_l2 = 1e-06\"")); /* one rule for every tap: one line */
    free(gp);
    gp = slurp(out, "plots/layers-fp8-vs-bf16-fp8kv.gp");
    assert_non_null(strstr(gp, "dashed: each line's rel_l2 limit")); /* 0.02 at layer 0, 0.05 after */
    free(gp);
    char *dat = slurp(out, "plots/layers-golden-bf16.dat");
    const char *out_block = strstr(dat, "# out:"); /* layer 3 of tap out: failed, limit 1e-6 */
    double y = 0, lim = 0;
    int failed = -1;
    assert_non_null(out_block);
    const char *l3 = strstr(out_block, "\n3 ");
    assert_non_null(l3);
    assert_int_equal(sscanf(l3, "%*d %lf %d %lf", &y, &failed, &lim), 3);
    assert_true(y == 2.5e-6 && failed == 1 && fabs(lim - 1e-6) < 1e-18);
    free(dat);
    gp = slurp(out, "plots/layers-absorbed-vs-naive-fp64.gp");
    assert_non_null(gp);
    assert_non_null(strstr(gp, "with boxes"));
    assert_non_null(strstr(gp, "set ytics add (\"0 (exact)\" 1"));
    assert_non_null(strstr(gp, "title \"limit (rel_l2)\""));
    assert_non_null(strstr(gp, "set arrow from 1, graph 0 to 1, graph 1")); /* kv_c's bar, the second */
    free(gp);
    gp = slurp(out, "plots/sweep_kv_len.gp");
    assert_non_null(strstr(gp, "set ylabel \"rel_l2\""));
    free(gp);
    dat = slurp(out, "plots/sweep_kv_len.dat");
    const char *l512 = strstr(dat, "\n512 "); /* rel_l2 itself (5.12e-13), then its limit */
    if (!l512) fprintf(stderr, "%s\n", dat);
    assert_non_null(l512);
    assert_int_equal(sscanf(l512, "%*d %lf %d %lf", &y, &failed, &lim), 3);
    assert_true(fabs(y - 5.12e-13) < 1e-25 && failed == 0 && lim == 1e-12);
    free(dat);
    /* a re-render from the folder (limits.tsv) draws the same limits */
    assert_true(exists(out, "limits.tsv"));
    assert_int_equal(mla_rep_render(out, NULL, 0), MLA_OK);
    gp = slurp(out, "plots/layers-golden-bf16.gp");
    assert_non_null(strstr(gp, "title \"limit: rel_l2 = 1e-06\""));
    free(gp);
    dat = slurp(out, "plots/sweep_kv_len.dat");
    free(dat);
}

static void test_render_errors(void **state)
{
    fixture *fx = *state;
    assert_int_equal(mla_rep_render("/nonexistent-run", NULL, 0), MLA_ERR_NOT_FOUND);
    /* A folder whose metrics.tsv is damaged. */
    mla_rep_run *r = make_run(fx->results);
    char out[4096], p[4200];
    assert_int_equal(mla_rep_finish(r, 1.0, out, sizeof out), MLA_OK);
    mla_rep_free(r);
    PJOIN(p, "%s/metrics.tsv", out);
    FILE *f = fopen(p, "a");
    fputs("short\trow\n", f);
    fclose(f);
    assert_int_equal(mla_rep_render(out, NULL, 0), MLA_ERR_FORMAT);
    assert_non_null(strstr(mla_last_error(), "metrics.tsv:34: 2 columns; expected 18"));
}

static void test_escapers(void **state)
{
    (void)state;
    char buf[256] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    mla_rep_xml_escape(f, "a<b>&\"'\x01z");
    fclose(f);
    assert_string_equal(buf, "a&lt;b&gt;&amp;&quot;&apos;&#xFFFD;z");
    memset(buf, 0, sizeof buf);
    f = fmemopen(buf, sizeof buf, "w");
    mla_rep_md_escape(f, "a|b\nc<d");
    fclose(f);
    assert_string_equal(buf, "a\\|b c&lt;d");
}

static void test_two_runs_distinct(void **state)
{
    fixture *fx = *state;
    mla_rep_run *a = NULL, *b = NULL;
    assert_int_equal(mla_rep_new(fx->results, "we ird/suite", &a), MLA_OK);
    assert_non_null(strstr(mla_rep_run_id(a), "-we-ird-suite-"));
    assert_null(strchr(mla_rep_run_id(a), '/'));
    assert_int_equal(mla_rep_add_check(a, "c", "golden", "fp64", "prefill", MLA_REP_PASS, "", -1, NULL), MLA_OK);
    char out[4096];
    assert_int_equal(mla_rep_finish(a, 0.1, out, sizeof out), MLA_OK);
    char *x = slurp(out, "junit.xml");
    assert_int_equal(xml_check(x), 0);
    free(x);
    mla_rep_free(a);
    /* Results folder created on demand, nested. */
    char nested[512];
    PJOIN(nested, "%s/a/b", fx->results);
    assert_int_equal(mla_rep_new(nested, "smoke", &b), MLA_OK);
    assert_int_equal(mla_rep_finish(b, 0, out, sizeof out), MLA_OK);
    assert_true(exists(out, "summary.json"));
    mla_rep_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plot_scripts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_without_gnuplot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_render_errors, setup, teardown),
        cmocka_unit_test(test_escapers),
        cmocka_unit_test_setup_teardown(test_two_runs_distinct, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
