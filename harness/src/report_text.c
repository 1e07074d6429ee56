/* report_text.c: the text outputs of a results folder for people and CI tools: summary.md (GitHub
 * step summaries), junit.xml (strict JUnit: harness/tests/junit.xsd) and index.html, with the
 * failing checks grouped by first divergence (one root cause, one group). */
#include "report_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MD_MAX_ROWS 500 /* GitHub step summaries are capped at 1 MiB */

/* ---- failures grouped by first divergence ---------------------------------------------------- */

/* The root-cause key of a failing check: its first divergence (layer and tap), or for a failure
 * that names none (an error) its message, so one cause makes one group. */
static void group_key(const rep_check *c, char *out, size_t n)
{
    if (c->first_layer >= 0 && *c->first_tap) snprintf(out, n, "layer %d tap %s", c->first_layer, c->first_tap);
    else if (*c->first_tap) snprintf(out, n, "tap %s", c->first_tap);
    else snprintf(out, n, "%.160s", *c->message ? c->message : "no divergence located");
}

/* Failing checks in groups: order[] holds check indices group by group (groups in order of first
 * appearance), start[g] the first index of group g in order[], *n_groups. Caller frees both. */
static int failure_groups(const mla_rep_run *r, size_t **order_out, size_t **start_out, size_t *n_groups)
{
    size_t *order = malloc((r->n_checks + 1) * sizeof *order), *start = malloc((r->n_checks + 2) * sizeof *start);
    if (!order || !start) {
        free(order);
        free(start);
        return -1;
    }
    size_t k = 0, g = 0;
    char ki[200], kj[200];
    for (size_t i = 0; i < r->n_checks; i++) {
        if (r->checks[i].v != MLA_REP_FAIL) continue;
        group_key(&r->checks[i], ki, sizeof ki);
        int seen = 0; /* this key's group already emitted? */
        for (size_t q = 0; q < k && !seen; q++) {
            group_key(&r->checks[order[q]], kj, sizeof kj);
            seen = !strcmp(ki, kj);
        }
        if (seen) continue;
        start[g++] = k;
        for (size_t j = i; j < r->n_checks; j++) {
            if (r->checks[j].v != MLA_REP_FAIL) continue;
            group_key(&r->checks[j], kj, sizeof kj);
            if (!strcmp(ki, kj)) order[k++] = j;
        }
    }
    start[g] = k;
    *order_out = order;
    *start_out = start;
    *n_groups = g;
    return 0;
}

/* ---- summary.md ------------------------------------------------------------------------------ */

static void fmt_g(char *buf, size_t n, double x)
{
    if (isnan(x)) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.3g", x);
}

static void md_check_row(FILE *f, const rep_check *c, int with_detail)
{
    char wv[32], hr[32];
    fmt_g(wv, sizeof wv, c->worst_value);
    fmt_g(hr, sizeof hr, c->headroom);
    fputs("| ", f); mla_rep_md_escape(f, c->case_name);
    fputs(" | ", f); mla_rep_md_escape(f, c->check);
    fputs(" | ", f); mla_rep_md_escape(f, c->profile);
    fputs(" | ", f); mla_rep_md_escape(f, c->path);
    fprintf(f, " | %s | ", c->v == MLA_REP_PASS ? "pass" : c->v == MLA_REP_FAIL ? "**FAIL**" : "skip");
    if (*c->worst) { mla_rep_md_escape(f, c->worst); fprintf(f, " %s", wv); }
    fprintf(f, " | %s |", hr);
    if (with_detail) {
        fputc(' ', f);
        mla_rep_md_escape(f, c->message);
        fputs(" |", f);
    }
    fputc('\n', f);
}

#define LIMIT_USE_DEF "limit use = measured / limit of the metric nearest its limit (0 exact, 1 at the limit, above 1 fails)"

mla_status mla_rep_write_md(const mla_rep_run *r, const char *dir)
{
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/summary.md", dir)) return MLA_ERR_INVALID;
    size_t *order = NULL, *start = NULL, ng = 0;
    if (failure_groups(r, &order, &start, &ng)) return mla_errorf(MLA_ERR_NOMEM, "summary.md: out of memory");
    FILE *f = fopen(path, "w");
    if (!f) {
        free(order);
        free(start);
        return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    int pass, fail, skip;
    mla_rep_counts(r, &pass, &fail, &skip);
    fprintf(f, "## mlacheck %s: %s\n\n", r->suite, r->incomplete ? "INCOMPLETE" : fail ? "FAIL" : "PASS");
    if (r->incomplete) {
        fputs("**Incomplete run**: ", f);
        mla_rep_md_escape(f, r->incomplete);
        fputs(". The checks below are the ones that finished; the rest never ran.\n\n", f);
    }
    fprintf(f, "%s**%d failed**, %d passed, %d skipped of %zu checks in %d cases; %zu tensors compared; wall %.1f s; "
               "git `%s`; run `%s`\n\n",
            fail ? ":x: " : ":white_check_mark: ", fail, pass, skip, r->n_checks, mla_rep_n_cases(r), r->n_rows, r->wall,
            r->git_sha, r->run_id);
    if (*r->note) {
        fputs("> ", f);
        mla_rep_md_escape(f, r->note);
        fputs("\n\n", f);
    }
    fputs("| provenance | |\n|---|---|\n", f);
    for (size_t i = 0; i < r->n_props; i++) {
        fputs("| ", f);
        mla_rep_md_escape(f, r->props[i].key);
        fputs(" | ", f);
        mla_rep_md_escape(f, r->props[i].value);
        fputs(" |\n", f);
    }
    fputc('\n', f);
    if (fail) {
        fprintf(f, "### Failures by first divergence: %zu cause%s, %d failing checks\n\n", ng, ng == 1 ? "" : "s", fail);
        char key[200];
        for (size_t g = 0; g < ng; g++) {
            group_key(&r->checks[order[start[g]]], key, sizeof key);
            size_t n = start[g + 1] - start[g];
            fprintf(f, "#### %zu. ", g + 1);
            mla_rep_md_escape(f, key);
            fprintf(f, " (%zu check%s)\n\n| case | check | profile | path | result | worst | limit use | message |\n"
                       "|---|---|---|---|---|---|---|---|\n", n, n == 1 ? "" : "s");
            for (size_t q = start[g]; q < start[g + 1]; q++) md_check_row(f, &r->checks[order[q]], 1);
            fputc('\n', f);
        }
    }
    fprintf(f, "<details><summary>All checks (%zu)</summary>\n\n| case | check | profile | path | result | worst | limit use |\n"
               "|---|---|---|---|---|---|---|\n", r->n_checks);
    for (size_t i = 0; i < r->n_checks && i < MD_MAX_ROWS; i++) md_check_row(f, &r->checks[i], 0);
    if (r->n_checks > MD_MAX_ROWS) fprintf(f, "\n%zu more checks in summary.json\n", r->n_checks - MD_MAX_ROWS);
    fputs("\n</details>\n\n" LIMIT_USE_DEF ".\n", f);
    free(order);
    free(start);
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    return MLA_OK;
}

/* ---- junit.xml ------------------------------------------------------------------------------- */

/* One line of s (newlines and tabs as spaces), escaped. */
static void xml_line(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        char c = *s == '\n' || *s == '\r' || *s == '\t' ? ' ' : *s;
        char one[2] = {c, 0};
        mla_rep_xml_escape(f, one);
    }
}

static void xml_prop(FILE *f, const char *name, const char *value)
{
    fputs("      <property name=\"", f);
    mla_rep_xml_escape(f, name);
    fputs("\" value=\"", f);
    xml_line(f, value);
    fputs("\"/>\n", f);
}

/* The failure's type attribute: what kind of failure, for reporters that group by it. */
static const char *failure_type(const rep_check *c)
{
    if (!strncmp(c->message, "error:", 6)) return "error";
    if (*c->first_tap) return "divergence";
    return "failure";
}

static double secs0(double s) { return isfinite(s) && s > 0 ? s : 0.0; }

mla_status mla_rep_write_junit(const mla_rep_run *r, const char *dir)
{
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/junit.xml", dir)) return MLA_ERR_INVALID;
    FILE *f = fopen(path, "w");
    if (!f) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    int pass, fail, skip;
    mla_rep_counts(r, &pass, &fail, &skip);
    /* The JUnit schema's timestamp is ISO 8601 without a zone: ours is UTC. */
    char stamp[32];
    snprintf(stamp, sizeof stamp, "%.19s", r->created);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mlacheck ", f);
    mla_rep_xml_escape(f, r->suite);
    const int inc = r->incomplete != NULL;
    fprintf(f, "\" tests=\"%zu\" failures=\"%d\" skipped=\"%d\" errors=\"0\" time=\"%.3f\" timestamp=\"%s\">\n",
            r->n_checks + inc, fail + inc, skip, secs0(r->wall), stamp);
    /* One testsuite per case, in order of first appearance. */
    int id = 0;
    if (inc) { /* an incomplete run is one more failing testcase, so that no junit reader takes it for a pass */
        fprintf(f, "  <testsuite name=\"run\" id=\"%d\" package=\"", id++);
        mla_rep_xml_escape(f, r->suite);
        fputs("\" hostname=\"", f);
        mla_rep_xml_escape(f, r->hostname);
        fprintf(f, "\" timestamp=\"%s\" tests=\"1\" failures=\"1\" skipped=\"0\" errors=\"0\" time=\"%.3f\">\n"
                   "    <properties>\n", stamp, secs0(r->wall));
        xml_prop(f, "git_sha", r->git_sha);
        xml_prop(f, "run_id", r->run_id);
        fputs("    </properties>\n    <testcase classname=\"", f);
        mla_rep_xml_escape(f, r->suite);
        fputs(".run\" name=\"complete\" time=\"0.000\">\n      <failure type=\"incomplete\" message=\"", f);
        xml_line(f, r->incomplete);
        fputs("\">the run stopped before every check finished</failure>\n    </testcase>\n"
              "    <system-out/>\n    <system-err/>\n  </testsuite>\n", f);
    }
    for (size_t i = 0; i < r->n_checks; i++) {
        const char *cname = r->checks[i].case_name;
        size_t j = 0;
        while (j < i && strcmp(r->checks[j].case_name, cname) != 0) j++;
        if (j < i) continue;
        int t = 0, cf = 0, cs = 0;
        double secs = 0;
        char profiles[256] = "";
        for (size_t k = i; k < r->n_checks; k++)
            if (strcmp(r->checks[k].case_name, cname) == 0) {
                t++;
                cf += r->checks[k].v == MLA_REP_FAIL;
                cs += r->checks[k].v == MLA_REP_SKIP;
                secs += secs0(r->checks[k].seconds);
                const char *pf = r->checks[k].profile;
                size_t pl = strlen(profiles), n = strlen(pf);
                int have = 0;
                for (const char *q = profiles; (q = strstr(q, pf)) != NULL; q += n)
                    have |= (q == profiles || q[-1] == ' ') && (q[n] == '\0' || q[n] == ',');
                if (!have && strcmp(pf, "-") && pl + n + 3 < sizeof profiles)
                    snprintf(profiles + pl, sizeof profiles - pl, "%s%s", pl ? ", " : "", pf);
            }
        fputs("  <testsuite name=\"", f);
        mla_rep_xml_escape(f, cname);
        fprintf(f, "\" id=\"%d\" package=\"", id++);
        mla_rep_xml_escape(f, r->suite);
        fputs("\" hostname=\"", f);
        mla_rep_xml_escape(f, r->hostname);
        fprintf(f, "\" timestamp=\"%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" errors=\"0\" time=\"%.3f\">\n"
                   "    <properties>\n", stamp, t, cf, cs, secs);
        xml_prop(f, "git_sha", r->git_sha);
        xml_prop(f, "run_id", r->run_id);
        xml_prop(f, "profile", profiles);
        for (size_t q = 0; q < r->n_props; q++)
            if (strcmp(r->props[q].key, "git")) xml_prop(f, r->props[q].key, r->props[q].value);
        fputs("    </properties>\n", f);
        for (size_t k = i; k < r->n_checks; k++) {
            const rep_check *c = &r->checks[k];
            if (strcmp(c->case_name, cname) != 0) continue;
            fputs("    <testcase classname=\"", f);
            mla_rep_xml_escape(f, r->suite);
            fputc('.', f);
            mla_rep_xml_escape(f, cname);
            fputs("\" name=\"", f);
            mla_rep_xml_escape(f, c->check);
            fputc('/', f);
            mla_rep_xml_escape(f, c->profile);
            fputc('/', f);
            mla_rep_xml_escape(f, c->path);
            fprintf(f, "\" time=\"%.3f\"", secs0(c->seconds));
            if (c->v == MLA_REP_PASS) {
                fputs("/>\n", f);
                continue;
            }
            if (c->v == MLA_REP_SKIP) {
                fputs(">\n      <skipped message=\"", f);
                xml_line(f, c->message);
                fputs("\"/>\n    </testcase>\n", f);
                continue;
            }
            fprintf(f, ">\n      <failure type=\"%s\" message=\"", failure_type(c));
            xml_line(f, c->message);
            fputs("\">", f);
            fprintf(f, "worst %s = %.6g, limit use %.6g", c->worst, c->worst_value, c->headroom);
            if (c->first_layer >= 0) fprintf(f, "; first diverging: layer %d", c->first_layer);
            if (*c->first_tap) {
                fputs(c->first_layer >= 0 ? " tap " : "; first diverging tap ", f);
                mla_rep_xml_escape(f, c->first_tap);
            }
            /* The failing tensors of this check, in the order of computation. */
            int shown = 0;
            for (size_t q = 0; q < r->n_rows && shown < 20; q++) {
                const rep_row *w = &r->rows[q];
                if (w->pass || strcmp(w->case_name, c->case_name) || strcmp(w->check, c->check) ||
                    strcmp(w->profile, c->profile) || strcmp(w->path, c->path))
                    continue;
                fprintf(f, "\nlayer %d ", w->layer);
                mla_rep_xml_escape(f, w->tap);
                if (w->kv_len >= 0) fprintf(f, " kv_len %d", w->kv_len);
                fprintf(f, ": max_abs %.3g max_rel %.3g nmse %.1f dB cos_diff %.3g rel_l2 %.3g ulp_p99 %.3g limit use %.3g ",
                        w->max_abs, w->max_rel, w->nmse_db, w->cos_diff, w->rel_l2, w->ulp_p99, w->headroom);
                mla_rep_xml_escape(f, w->why);
                shown++;
            }
            fputs("</failure>\n    </testcase>\n", f);
        }
        fputs("    <system-out/>\n    <system-err/>\n  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    return MLA_OK;
}

/* ---- index.html ------------------------------------------------------------------------------ */

static void html_cell(FILE *f, const char *s)
{
    fputs("<td>", f);
    mla_rep_xml_escape(f, s);
    fputs("</td>", f);
}

static void html_check_row(FILE *f, const rep_check *c)
{
    char wv[48], hr[32], fl[128], num[32];
    fmt_g(hr, sizeof hr, c->headroom);
    fmt_g(num, sizeof num, c->worst_value);
    snprintf(wv, sizeof wv, "%s %s", c->worst, *c->worst ? num : "");
    if (c->first_layer >= 0) snprintf(fl, sizeof fl, "layer %d %s", c->first_layer, c->first_tap);
    else snprintf(fl, sizeof fl, "%s", c->first_tap);
    fprintf(f, "<tr class=\"%s\">", mla_rep_verdict_names[c->v]);
    html_cell(f, c->case_name); html_cell(f, c->check); html_cell(f, c->profile); html_cell(f, c->path);
    html_cell(f, mla_rep_verdict_names[c->v]); html_cell(f, wv); html_cell(f, hr); html_cell(f, fl);
    html_cell(f, c->message);
    fputs("</tr>\n", f);
}

#define HTML_CHECK_HEAD "<table><tr><th>case</th><th>check</th><th>profile</th><th>path</th><th>result</th>" \
    "<th>worst</th><th>limit use</th><th>first divergence</th><th>message</th></tr>\n"

mla_status mla_rep_write_html(const mla_rep_run *r, const char *dir)
{
    char path[4200];
    if (mla_rep_pathf(path, sizeof path, "%s/index.html", dir)) return MLA_ERR_INVALID;
    size_t *order = NULL, *start = NULL, ng = 0;
    if (failure_groups(r, &order, &start, &ng)) return mla_errorf(MLA_ERR_NOMEM, "index.html: out of memory");
    FILE *f = fopen(path, "w");
    if (!f) {
        free(order);
        free(start);
        return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    int pass, fail, skip;
    mla_rep_counts(r, &pass, &fail, &skip);
    fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>mlacheck ", f);
    mla_rep_xml_escape(f, r->run_id);
    /* Plots take the page's width (at least 600 px, at most their 1200 px); a click opens the SVG. */
    fputs("</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}tr.fail{background:#fdd}tr.skip{color:#888}"
          "figure.plot{display:block;margin:1.5em 0}figure.plot img{display:block;width:100%;min-width:600px;"
          "max-width:1200px;border:1px solid #eee}figcaption{font-size:90%;color:#444}</style></head><body>\n<h1>mlacheck ", f);
    mla_rep_xml_escape(f, r->suite);
    fprintf(f, ": %s</h1>\n", r->incomplete ? "INCOMPLETE" : fail ? "FAIL" : "PASS");
    if (r->incomplete) {
        fputs("<p><strong>Incomplete run</strong>: ", f);
        mla_rep_xml_escape(f, r->incomplete);
        fputs(". The checks below are the ones that finished; the rest never ran.</p>\n", f);
    }
    fprintf(f, "<p>%d failed, %d passed, %d skipped of %zu checks; %zu tensors compared; wall %.1f s; git <code>", fail,
            pass, skip, r->n_checks, r->n_rows, r->wall);
    mla_rep_xml_escape(f, r->git_sha);
    fputs("</code>; run <code>", f);
    mla_rep_xml_escape(f, r->run_id);
    fputs("</code>; <a href=\"summary.json\">summary.json</a>, <a href=\"metrics.tsv\">metrics.tsv</a>, "
          "<a href=\"junit.xml\">junit.xml</a>, <a href=\"summary.md\">summary.md</a></p>\n", f);
    if (*r->note) {
        fputs("<p><em>", f);
        mla_rep_xml_escape(f, r->note);
        fputs("</em></p>\n", f);
    }
    fputs("<table class=\"provenance\">", f);
    for (size_t i = 0; i < r->n_props; i++) {
        fputs("<tr><th>", f);
        mla_rep_xml_escape(f, r->props[i].key);
        fputs("</th>", f);
        html_cell(f, r->props[i].value);
        fputs("</tr>", f);
    }
    fputs("</table>\n<p>" LIMIT_USE_DEF ".</p>\n", f);
    if (fail) {
        fprintf(f, "<h2>Failures by first divergence: %zu cause%s, %d failing checks</h2>\n", ng, ng == 1 ? "" : "s", fail);
        char key[200];
        for (size_t g = 0; g < ng; g++) {
            group_key(&r->checks[order[start[g]]], key, sizeof key);
            size_t n = start[g + 1] - start[g];
            fprintf(f, "<h3>%zu. ", g + 1);
            mla_rep_xml_escape(f, key);
            fprintf(f, " (%zu check%s)</h3>\n" HTML_CHECK_HEAD, n, n == 1 ? "" : "s");
            for (size_t q = start[g]; q < start[g + 1]; q++) html_check_row(f, &r->checks[order[q]]);
            fputs("</table>\n", f);
        }
    }
    fputs("<h2>Plots</h2>\n", f);
    char lpath[4300];
    FILE *lf = mla_rep_pathf(lpath, sizeof lpath, "%s/plots/%s", dir, MLA_REP_PLOT_LIST) ? NULL : fopen(lpath, "r");
    int shown = 0;
    if (lf) {
        char line[512];
        while (fgets(line, sizeof line, lf)) {
            line[strcspn(line, "\r\n")] = '\0';
            char *tab = strchr(line, '\t');
            if (!tab) continue;
            *tab = '\0';
            fputs("<figure class=\"plot\"><a href=\"plots/", f);
            mla_rep_xml_escape(f, line);
            fputs(".svg\"><img src=\"plots/", f);
            mla_rep_xml_escape(f, line);
            fputs(".svg\" alt=\"", f);
            mla_rep_xml_escape(f, tab + 1);
            fputs("\"></a><figcaption>", f);
            mla_rep_xml_escape(f, tab + 1);
            fputs(" (<a href=\"plots/", f);
            mla_rep_xml_escape(f, line);
            fputs(".png\">PNG</a>)</figcaption></figure>\n", f);
            shown++;
        }
        fclose(lf);
    }
    if (!shown) fputs("<p>No plots.</p>\n", f);
    fprintf(f, "<h2>All checks (%zu)</h2>\n" HTML_CHECK_HEAD, r->n_checks);
    for (size_t i = 0; i < r->n_checks; i++) html_check_row(f, &r->checks[i]);
    fputs("</table>\n</body></html>\n", f);
    free(order);
    free(start);
    if (fclose(f) != 0) return mla_errorf(MLA_ERR_IO, "%s: write error", path);
    return MLA_OK;
}

