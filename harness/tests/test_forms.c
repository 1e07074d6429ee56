/* test_forms.c: the fp64 reference agrees with itself across paths and forms (issue 2):
 * full prefill, prefill-then-decode (one token at a time, and s_q = 3), chunked prefill (chunks of 7),
 * and the absorbed form used for prefill, for prompts of 1 to 300 tokens on tiny-v3 and
 * tiny-v2-lite; every tap and the logits within relative L2 1e-12. Also batches of sequences of
 * different lengths with shuffled block tables, and paged-cache block sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mlacheck/compare.h"
#include "mlacheck/driver.h"
#include "mla_model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define LIMIT 1e-12

/* ||b - a|| / ||a|| through the harness's comparison (INFINITY when the shapes differ). */
static double rel_l2(const mla_tensor *a, const mla_tensor *b)
{
    mla_cmp_result r;
    return mla_cmp_tensor(a, b, NULL, &r) == MLA_OK ? r.rel_l2 : INFINITY;
}

/* Every tap present in both dumps agrees; returns the number of taps compared. */
static int assert_dumps_agree(const mla_dump *a, const mla_dump *b, const char *what, int n)
{
    int compared = 0;
    for (int l = -1; l < a->n_layers; l++)
        for (int t = 0; t < MLA_TAP_COUNT; t++) {
            if ((l < 0) == mla_tap_is_layer((mla_tap)t)) continue;
            const mla_tensor *x = mla_dump_get(a, l < 0 ? 0 : l, (mla_tap)t);
            const mla_tensor *y = mla_dump_get(b, l < 0 ? 0 : l, (mla_tap)t);
            if (!x || !y) continue;
            assert_true(mla_tensor_same_shape(x, y));
            double e = rel_l2(x, y);
            if (!(e < LIMIT))
                fail_msg("%s (n=%d): layer %d tap %s rel L2 %.3e >= %.0e", what, n, l, mla_tap_name((mla_tap)t), e,
                         LIMIT);
            compared++;
        }
    return compared;
}

static void tokens_for(int n, int vocab, unsigned seed, int32_t *t)
{
    uint64_t s = seed * 2654435761u + 1;
    for (int i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        t[i] = (int32_t)((s >> 33) % (uint64_t)vocab);
    }
}

static void run_paths(const char *model, const int *lengths, int nl, int block)
{
    mla_model *m;
    assert_int_equal(mla_model_open(model, &m), MLA_OK);
    const mla_config *cfg = mla_model_config(m);
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.max_seqs = 1;
    o.max_seq_len = 320;
    o.block_size = block;
    mla_engine e;
    assert_int_equal(mla_engine_open("ref", m, &o, &e), MLA_OK);
    int32_t tok[320];
    for (int li = 0; li < nl; li++) {
        int n = lengths[li];
        tokens_for(n, cfg->vocab_size, (unsigned)n, tok);
        const int32_t *tp[1] = {tok};
        mla_dump *pre, *dec, *spec, *chk, *abs_;
        mla_drive_opts d = {.path = MLA_PATH_PREFILL};
        assert_int_equal(mla_drive(&e, cfg, 1, tp, &n, &d, &pre), MLA_OK);
        d = (mla_drive_opts){.path = MLA_PATH_DECODE, .prefill_len = n / 3};
        assert_int_equal(mla_drive(&e, cfg, 1, tp, &n, &d, &dec), MLA_OK);
        d = (mla_drive_opts){.path = MLA_PATH_DECODE, .prefill_len = 1, .decode_step = 3};
        assert_int_equal(mla_drive(&e, cfg, 1, tp, &n, &d, &spec), MLA_OK);
        d = (mla_drive_opts){.path = MLA_PATH_CHUNKED, .chunk = 7};
        assert_int_equal(mla_drive(&e, cfg, 1, tp, &n, &d, &chk), MLA_OK);
        d = (mla_drive_opts){.path = MLA_PATH_PREFILL, .absorbed_only = 1};
        assert_int_equal(mla_drive(&e, cfg, 1, tp, &n, &d, &abs_), MLA_OK);
        assert_true(assert_dumps_agree(pre, dec, "decode vs prefill", n) >= 10);
        assert_true(assert_dumps_agree(pre, spec, "decode s_q=3 vs prefill", n) >= 10);
        assert_true(assert_dumps_agree(pre, chk, "chunked(7) vs prefill", n) >= 10);
        assert_true(assert_dumps_agree(pre, abs_, "absorbed vs naive", n) >= 10);
        /* the decode path recorded the absorbed query, the prefill path did not */
        if (n > 1 && n / 3 == 0) assert_non_null(mla_dump_get(dec, 0, MLA_TAP_Q_ABSORBED));
        assert_null(mla_dump_get(pre, 0, MLA_TAP_Q_ABSORBED));
        mla_dump_free(pre);
        mla_dump_free(dec);
        mla_dump_free(spec);
        mla_dump_free(chk);
        mla_dump_free(abs_);
    }
    mla_engine_close(&e);
    mla_model_free(m);
}

static const int lengths[] = {1, 2, 7, 8, 63, 64, 65, 130, 300};

static void test_tiny_v3_paths(void **state)
{
    (void)state;
    run_paths("tiny-v3", lengths, (int)(sizeof lengths / sizeof lengths[0]), 64);
}

static void test_tiny_v2_lite_paths(void **state)
{
    (void)state;
    run_paths("tiny-v2-lite", lengths, (int)(sizeof lengths / sizeof lengths[0]), 64);
}

static void test_block_sizes(void **state)
{
    (void)state;
    static const int l2[] = {37};
    run_paths("tiny-v3", l2, 1, 1);
    run_paths("tiny-v3", l2, 1, 16);
    run_paths("tiny-v3", l2, 1, 128);
}

/* A batch of four sequences of different lengths with shuffled block tables gives, per sequence,
 * the same taps as each sequence alone (the paged cache keeps sequences apart). */
static void test_batch_matches_single(void **state)
{
    (void)state;
    mla_model *m;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    const mla_config *cfg = mla_model_config(m);
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.max_seqs = 4;
    o.max_seq_len = 140;
    o.block_size = 16;
    o.shuffle_blocks = 1;
    mla_engine e;
    assert_int_equal(mla_engine_open("ref", m, &o, &e), MLA_OK);
    int lens[4] = {9, 64, 130, 17};
    int32_t tok[4][140];
    const int32_t *tp[4];
    for (int s = 0; s < 4; s++) {
        tokens_for(lens[s], cfg->vocab_size, 100u + (unsigned)s, tok[s]);
        tp[s] = tok[s];
    }
    mla_dump *batch[4], *one;
    mla_drive_opts d = {.path = MLA_PATH_DECODE, .prefill_len = 5};
    assert_int_equal(mla_drive(&e, cfg, 4, tp, lens, &d, batch), MLA_OK);
    for (int s = 0; s < 4; s++) {
        mla_drive_opts p = {.path = MLA_PATH_PREFILL};
        assert_int_equal(mla_drive(&e, cfg, 1, &tp[s], &lens[s], &p, &one), MLA_OK);
        assert_true(assert_dumps_agree(one, batch[s], "batched decode vs single prefill", lens[s]) >= 10);
        mla_dump_free(one);
        mla_dump_free(batch[s]);
    }
    mla_engine_close(&e);
    mla_model_free(m);
}

/* A bad batch is refused with a message, not a crash. */
static void test_bad_batch(void **state)
{
    (void)state;
    mla_model *m;
    assert_int_equal(mla_model_open("tiny-v2-lite", &m), MLA_OK);
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.max_seqs = 1;
    o.max_seq_len = 8;
    mla_engine e;
    assert_int_equal(mla_engine_open("ref", m, &o, &e), MLA_OK);
    int32_t ids[1] = {0}, past[1] = {3}, nnew[1] = {1}, tok[1] = {1};
    mla_batch b = {.n_seqs = 1, .seq_ids = ids, .n_past = past, .n_new = nnew, .tokens = tok};
    assert_int_equal(e.ops->forward_mqa(e.ctx, &b), MLA_ERR_INVALID); /* cache holds 0, not 3 */
    past[0] = 0;
    tok[0] = 99999;
    assert_int_equal(e.ops->forward_mha(e.ctx, &b), MLA_ERR_INVALID);
    tok[0] = 1;
    nnew[0] = 9;
    assert_int_equal(e.ops->forward_mha(e.ctx, &b), MLA_ERR_INVALID); /* exceeds max_seq_len */
    mla_engine_close(&e);
    mla_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_v3_paths),
        cmocka_unit_test(test_tiny_v2_lite_paths),
        cmocka_unit_test(test_block_sizes),
        cmocka_unit_test(test_batch_matches_single),
        cmocka_unit_test(test_bad_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
