/* test_reseed.c: the workloads of `run --reseed K` (reseed.h): K = 0 is the suite as written, other
 * K give other seeds and other text windows, a window never leaves its file, explicit prompts stay. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mla_core/rng.h"
#include "mlacheck/reseed.h"
#include "mlacheck/runner.h"
#include "mlacheck/suite.h"

#include <unistd.h>

/* K = 0 returns the seed itself; other K give seeds that differ from it and from each other, the
 * same ones on every call. */
static void test_seed(void **state)
{
    (void)state;
    const unsigned seeds[] = {0, 1, 7, 42, 0xffffffffu};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        unsigned s = seeds[i], got[21];
        assert_int_equal(mla_reseed_seed(s, 0), s);
        for (unsigned k = 1; k <= 20; k++) {
            got[k] = mla_reseed_seed(s, k);
            assert_int_equal(got[k], mla_reseed_seed(s, k));
            assert_int_not_equal(got[k], s);
            for (unsigned j = 1; j < k; j++) assert_int_not_equal(got[k], got[j]);
        }
    }
    /* two suite seeds stay two seeds under the same K */
    assert_int_not_equal(mla_reseed_seed(1, 3), mla_reseed_seed(2, 3));
}

/* Every window start keeps the window inside the file, for spans from 1 byte to the whole file;
 * the starts vary with K; K = 0 and a window that cannot fit keep the suite's offset. */
static void test_offset_inside(void **state)
{
    (void)state;
    const long sizes[] = {1, 2, 9, 300, 19607, 1L << 31};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        long size = sizes[i];
        const long spans[] = {1, size / 3 > 0 ? size / 3 : 1, size - 1 > 0 ? size - 1 : 1, size};
        for (size_t j = 0; j < sizeof spans / sizeof spans[0]; j++) {
            long span = spans[j];
            for (long off = 0; off <= size - span; off += (size - span) / 3 + 1) {
                assert_int_equal(mla_reseed_offset(off, span, size, 0), off);
                long lo = size, hi = -1;
                for (unsigned k = 1; k <= 64; k++) {
                    long o = mla_reseed_offset(off, span, size, k);
                    assert_true(o >= 0);
                    assert_true(o + span <= size);
                    lo = o < lo ? o : lo;
                    hi = o > hi ? o : hi;
                }
                /* 64 draws over more than 16 starts: all equal would be a derivation that ignores K */
                if (size - span + 1 > 16) assert_true(hi > lo);
                if (span == size) assert_int_equal(hi, 0);
            }
        }
    }
    assert_int_equal(mla_reseed_offset(5, 10, 9, 3), 5);  /* too long for the file: the reader's error */
    assert_int_equal(mla_reseed_offset(5, -1, 9, 3), 5);
    assert_int_equal(mla_reseed_offset(100, 4, 9, 0), 100); /* K = 0: as written, even past the end */
}

/* Through the runner's prompt reader: random prompts are drawn from the reseeded seed, text prompts
 * read another window of the same file (same length, the same BOS first), tokens: prompts stay. */
static void test_prompt_tokens(void **state)
{
    (void)state;
    char dir[] = "/tmp/mla-reseed-XXXXXX", path[64], suite[80];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/p.txt", dir);
    snprintf(suite, sizeof suite, "%s/x.suite", dir);
    char text[300];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('!' + (i * 7919) % 90);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, sizeof text, f), sizeof text);
    fclose(f);
    mla_suite *s = NULL;
    assert_int_equal(mla_suite_parse("[case a]\nmodel = m\nprompts = random:len=12,seed=5 ; "
                                     "text:p.txt,offset=40,len=20,bos=256 ; tokens:3,1,4\n"
                                     "engines = ref\nprofiles = fp64\nchecks = determinism\n",
                                     suite, &s), MLA_OK);
    const mla_suite_prompt *rnd = &s->cases[0].prompts[0], *txt = &s->cases[0].prompts[1];
    const mla_suite_prompt *tok = &s->cases[0].prompts[2];
    int32_t *t = NULL, *t0 = NULL;
    int n = 0, n0 = 0;

    /* random: K = 0 is the seed's own stream, K = 3 that of mla_reseed_seed(5, 3) */
    for (unsigned k = 0; k <= 3; k += 3) {
        assert_int_equal(mla_runner_prompt_tokens(rnd, suite, 512, k, &t, &n), MLA_OK);
        assert_int_equal(n, 12);
        uint64_t st = k ? mla_reseed_seed(5, k) : 5;
        for (int i = 0; i < n; i++) assert_int_equal(t[i], (int32_t)mla_rng_below(&st, 512));
        if (k == 0) {
            t0 = t;
        } else {
            assert_memory_not_equal(t, t0, 12 * sizeof *t);
            free(t);
        }
        t = NULL;
    }
    free(t0);
    t0 = NULL;

    /* text: K = 0 reads bytes [40, 60); each K a window of the same 20 bytes inside the file */
    assert_int_equal(mla_runner_prompt_tokens(txt, suite, 257, 0, &t0, &n0), MLA_OK);
    assert_int_equal(n0, 21);
    assert_int_equal(t0[0], 256);
    for (int i = 1; i < n0; i++) assert_int_equal(t0[i], (unsigned char)text[40 + i - 1]);
    int moved = 0;
    for (unsigned k = 1; k <= 20; k++) {
        assert_int_equal(mla_runner_prompt_tokens(txt, suite, 257, k, &t, &n), MLA_OK);
        assert_int_equal(n, 21);
        assert_int_equal(t[0], 256);
        long o = mla_reseed_offset(40, 20, (long)sizeof text, k);
        assert_true(o >= 0 && o + 20 <= (long)sizeof text);
        for (int i = 1; i < n; i++) assert_int_equal(t[i], (unsigned char)text[o + i - 1]);
        moved += memcmp(t, t0, (size_t)n * sizeof *t) != 0;
        free(t);
        t = NULL;
    }
    assert_true(moved >= 19); /* 281 starts: at most a rare draw lands on offset 40 again */
    free(t0);

    /* tokens: explicit, the same under any K */
    assert_int_equal(mla_runner_prompt_tokens(tok, suite, 512, 7, &t, &n), MLA_OK);
    assert_int_equal(n, 3);
    assert_int_equal(t[0], 3);
    assert_int_equal(t[1], 1);
    assert_int_equal(t[2], 4);
    free(t);
    mla_suite_free(s);
    remove(path);
    rmdir(dir);
}

static void test_golden_why(void **state)
{
    (void)state;
    char b[96];
    assert_string_equal(mla_reseed_golden_why(3, b, sizeof b),
                        "--reseed 3 changes the prompts the goldens were made from");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed),
        cmocka_unit_test(test_offset_inside),
        cmocka_unit_test(test_prompt_tokens),
        cmocka_unit_test(test_golden_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
