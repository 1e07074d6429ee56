/* test_progress.c: the progress lines of a run (progress.h) into a file, as in CI: a line per
 * check with verdict and seconds, once, the worst path's verdict; heartbeats with an ETA from the
 * work done; and -k selection (mla_runner_selected). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlacheck/progress.h"
#include "mlacheck/report.h"
#include "mlacheck/runner.h"

/* Everything written to f so far, NUL-terminated (caller frees). */
static char *slurp(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    char *s = calloc((size_t)n + 1, 1);
    rewind(f);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    fseek(f, 0, SEEK_END);
    return s;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

static void test_lines(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    mla_progress_opts o = {.mode = MLA_PROGRESS_LINES, .heartbeat_s = 3600, .out = f};
    mla_progress *p;
    assert_int_equal(mla_progress_new(&o, &p), MLA_OK);
    mla_progress_begin(p, 4);
    mla_progress_unit(p, "case-a", "bf16", 4);
    mla_progress_enter(p, "golden");
    mla_progress_leave(p, 1);
    /* two paths, the second fails: one line, FAIL, naming the failing path */
    mla_progress_verdict(p, "golden", "prefill", MLA_REP_PASS, 0, "worst headroom 0.1");
    mla_progress_verdict(p, "golden", "decode", MLA_REP_FAIL, 0, "first divergence: layer 1 tap kv");
    mla_progress_flush(p);
    mla_progress_flush(p); /* nothing new: no second line */
    mla_progress_enter(p, "determinism");
    mla_progress_leave(p, 1);
    mla_progress_verdict(p, "determinism", "prefill", MLA_REP_PASS, 0, "");
    mla_progress_unit_end(p); /* the unprinted check is printed here, the work reaches the plan */
    char *s = slurp(f);
    assert_int_equal(count(s, "FAIL  case-a / golden / bf16  "), 1);
    assert_non_null(strstr(s, " s  decode: first divergence: layer 1 tap kv\n"));
    assert_int_equal(count(s, "PASS  case-a / determinism / bf16  "), 1);
    assert_int_equal(count(s, "golden"), 1);
    assert_non_null(strstr(s, "[0:00  25%] FAIL"));
    assert_null(strstr(s, "heartbeat"));
    free(s);
    mla_progress_free(p);
    fclose(f);
}

static void test_heartbeat(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    mla_progress_opts o = {.mode = MLA_PROGRESS_LINES, .heartbeat_s = 0.05, .out = f};
    mla_progress *p;
    assert_int_equal(mla_progress_new(&o, &p), MLA_OK);
    mla_progress_begin(p, 10);
    mla_progress_unit(p, "slow-case", "fp64", 10);
    sleep_s(0.4); /* nothing done yet: no ETA */
    mla_progress_enter(p, "golden");
    mla_progress_leave(p, 5);
    mla_progress_enter(p, "determinism");
    sleep_s(0.5); /* half done: an ETA, and the running check named */
    char *s = slurp(f);
    assert_true(count(s, "heartbeat: ") >= 3);
    assert_non_null(strstr(s, "0 of 10 check calls done, ETA unknown; running slow-case / fp64"));
    assert_non_null(strstr(s, "5 of 10 check calls done, ETA 0:00; running slow-case / fp64 / determinism for "));
    free(s);
    mla_progress_free(p);
    fclose(f);
}

static void test_off(void **state)
{
    (void)state;
    mla_progress_opts o = {.mode = MLA_PROGRESS_OFF};
    mla_progress *p = (mla_progress *)&o;
    assert_int_equal(mla_progress_new(&o, &p), MLA_OK);
    assert_null(p);
    mla_progress_unit(NULL, "x", "y", 1); /* every call is a no-op on NULL */
    mla_progress_free(NULL);
}

static void test_select(void **state)
{
    (void)state;
    const char *glob[] = {"tiny-v3-*/golden/fp8*"};
    assert_true(mla_runner_selected(glob, 1, "tiny-v3-golden", "golden", "fp8kv"));
    assert_false(mla_runner_selected(glob, 1, "tiny-v3-golden", "golden", "bf16"));
    assert_false(mla_runner_selected(glob, 1, "asym-v3-golden", "golden", "fp8kv"));
    const char *word[] = {"determinism"}; /* no '/': any one component */
    assert_true(mla_runner_selected(word, 1, "tiny-v3-fp64", "determinism", "fp64"));
    assert_false(mla_runner_selected(word, 1, "tiny-v3-fp64", "golden", "fp64"));
    const char *eng[] = {"*/cross-engine/*"}; /* the check's name before its '@engine' */
    assert_true(mla_runner_selected(eng, 1, "c", "cross-engine@gpu", "bf16"));
    const char *two[] = {"fp8w", "asym-*"};
    assert_true(mla_runner_selected(two, 2, "tiny", "golden", "fp8w"));
    assert_true(mla_runner_selected(two, 2, "asym-v3", "golden", "fp64"));
    assert_false(mla_runner_selected(two, 2, "tiny", "golden", "fp64"));
    assert_true(mla_runner_selected(NULL, 0, "any", "thing", "at-all"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_lines), cmocka_unit_test(test_heartbeat),
                                       cmocka_unit_test(test_off), cmocka_unit_test(test_select)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
