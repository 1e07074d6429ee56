/* test_driver_taps.c: a tap an engine returns is checked before it is copied. A fake engine (the
 * reference with its read_tap wrapped) returns short, NULL, mis-shaped, wrongly-ranked and unknown-dtype
 * taps: the drive fails with MLA_ERR_DEVICE (the engine's error, exit 3: the input was fine) naming
 * engine, layer, tap, what came and what was expected (no overflow: the sanitizer pass runs this under
 * ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mla_model/model.h"
#include "mlacheck/driver.h"
#include "mlacheck/dumpcmp.h"
#include "mlacheck/engine_registry.h"

typedef enum { BAD_NONE, BAD_SHORT, BAD_NULL, BAD_WIDTH, BAD_RANK, BAD_DTYPE } bad_kind;

static const mla_backend_ops *real;
static bad_kind bad;
static mla_tap bad_tap;
static int bad_layer;

static mla_status bad_read_tap(void *ctx, int layer, mla_tap tap, mla_tensor **out)
{
    mla_status st = real->read_tap(ctx, layer, tap, out);
    if (st || tap != bad_tap || (mla_tap_is_layer(tap) && layer != bad_layer)) return st;
    mla_tensor *t = *out;
    switch (bad) {
    case BAD_NONE: break;
    case BAD_SHORT: { /* one row fewer than the call, allocated that short (ASan sees any over-read) */
        int64_t sh[MLA_MAX_DIMS];
        memcpy(sh, t->shape, sizeof sh);
        sh[0] -= 1;
        mla_tensor *s;
        assert_int_equal(mla_tensor_new(&s, t->dtype, t->ndim, sh, "short"), MLA_OK);
        memcpy(s->data, t->data, (size_t)mla_tensor_numel(s) * mla_dtype_size(s->dtype));
        mla_tensor_free(t);
        *out = s;
        break;
    }
    case BAD_NULL:
        mla_tensor_free(t);
        *out = NULL;
        break;
    case BAD_WIDTH: t->shape[t->ndim - 1] += 1; break;
    case BAD_RANK: t->ndim += 1; t->shape[t->ndim - 1] = 1; break;
    case BAD_DTYPE: t->dtype = (mla_dtype)99; break; /* no mla_dtype: its element size is unknown */
    }
    return MLA_OK;
}

static void drive_bad(bad_kind k, mla_tap tap, int layer, const char *want)
{
    mla_model *m;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    const mla_config *cfg = mla_model_config(m);
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.max_seqs = 2;
    o.max_seq_len = 64;
    mla_engine e;
    assert_int_equal(mla_engine_open("ref", m, &o, &e), MLA_OK);
    static mla_backend_ops wrapped;
    real = e.ops;
    wrapped = *e.ops;
    wrapped.read_tap = bad_read_tap;
    e.ops = &wrapped;
    bad = k;
    bad_tap = tap;
    bad_layer = layer;
    int32_t t0[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, t1[5] = {9, 8, 7, 6, 5};
    const int32_t *tp[2] = {t0, t1};
    int lens[2] = {9, 5};
    mla_dump *d[2] = {NULL, NULL};
    mla_drive_opts dopt = {.path = MLA_PATH_PREFILL};
    mla_status st = mla_drive(&e, cfg, 2, tp, lens, &dopt, d);
    if (!want) {
        assert_int_equal(st, MLA_OK);
        mla_dump_free(d[0]);
        mla_dump_free(d[1]);
    } else {
        assert_int_equal(st, MLA_ERR_DEVICE);
        const char *msg = mla_last_error();
        print_message("%s\n", msg);
        assert_non_null(strstr(msg, "engine ref"));
        assert_non_null(strstr(msg, mla_tap_name(tap)));
        assert_non_null(strstr(msg, want));
        assert_null(d[0]);
        assert_null(d[1]);
    }
    e.ops = real;
    mla_engine_close(&e);
    mla_model_free(m);
}

static void test_good_taps_pass(void **state)
{
    (void)state;
    drive_bad(BAD_NONE, MLA_TAP_ATTN_CORE, 1, NULL);
}

static void test_short_tap_refused(void **state)
{
    (void)state;
    drive_bad(BAD_SHORT, MLA_TAP_ATTN_CORE, 1, "layer 1 tap attn_core: expected shape [14,");
}

static void test_null_tap_refused(void **state)
{
    (void)state;
    drive_bad(BAD_NULL, MLA_TAP_ATTN_CORE, 0,
              "layer 0 tap attn_core: read_tap returned OK and no tensor, expected one of shape [14,");
}

static void test_wrong_width_refused(void **state)
{
    (void)state;
    drive_bad(BAD_WIDTH, MLA_TAP_LOGITS, 0, "global tap logits: expected shape [14,512] (14 rows, the call's new tokens), got [14,513]");
}

static void test_wrong_rank_refused(void **state)
{
    (void)state;
    drive_bad(BAD_RANK, MLA_TAP_ATTN_CORE, 0, "(rank ");
}

static void test_unknown_dtype_refused(void **state)
{
    (void)state;
    drive_bad(BAD_DTYPE, MLA_TAP_KV_C, 1,
              "layer 1 tap kv_c: read_tap returned dtype 99, expected a tensor with data of a known dtype");
}

/* Every call's taps are kept: on the decode path q_absorbed holds the decoded rows (the prefill call
 * is forward_mha, which makes none), marked so, and agrees with the absorbed prefill's same rows
 * (to 1e-12: the per-sequence absorption product's summation depends on the call's row count). */
static void test_decode_keeps_q_absorbed(void **state)
{
    (void)state;
    mla_model *m;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    const mla_config *cfg = mla_model_config(m);
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.max_seqs = 2;
    o.max_seq_len = 64;
    mla_engine e;
    assert_int_equal(mla_engine_open("ref", m, &o, &e), MLA_OK);
    int32_t t0[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, t1[5] = {9, 8, 7, 6, 5};
    const int32_t *tp[2] = {t0, t1};
    int lens[2] = {9, 5};
    mla_dump *dec[2], *abs[2];
    mla_drive_opts dd = {.path = MLA_PATH_DECODE, .prefill_len = 3}, da = {.path = MLA_PATH_PREFILL, .absorbed_only = 1};
    assert_int_equal(mla_drive(&e, cfg, 2, tp, lens, &dd, dec), MLA_OK);
    assert_int_equal(mla_drive(&e, cfg, 2, tp, lens, &da, abs), MLA_OK);
    for (int s = 0; s < 2; s++)
        for (int l = 0; l < cfg->num_hidden_layers; l++) {
            const mla_tensor *q = mla_dump_get(dec[s], l, MLA_TAP_Q_ABSORBED), *qa = mla_dump_get(abs[s], l, MLA_TAP_Q_ABSORBED);
            const unsigned char *rows = mla_dump_rows(dec[s], l, MLA_TAP_Q_ABSORBED);
            assert_non_null(q);
            assert_non_null(rows);
            assert_null(mla_dump_rows(abs[s], l, MLA_TAP_Q_ABSORBED)); /* every call made it */
            assert_null(mla_dump_rows(dec[s], l, MLA_TAP_ATTN_CORE));
            int64_t per = mla_tensor_numel(q) / lens[s];
            for (int r = 0; r < lens[s]; r++) {
                assert_int_equal(rows[r], r >= 3);
                for (int64_t i = r * per; r >= 3 && i < (r + 1) * per; i++) {
                    double x = mla_tensor_get_f64(q, i), y = mla_tensor_get_f64(qa, i);
                    if (fabs(x - y) > 1e-12 * (1 + fabs(y))) fail_msg("seq %d layer %d row %d: %.17g vs %.17g", s, l, r, x, y);
                }
            }
        }
    for (int s = 0; s < 2; s++) {
        mla_dump_free(dec[s]);
        mla_dump_free(abs[s]);
    }
    mla_engine_close(&e);
    mla_model_free(m);
}

/* The calls the staggered schedule makes, as the engine sees them. */
static int n_calls, n_mixed_ctx, n_empty, n_mha, n_mqa, n_first_empty;
static mla_status count_batch(const mla_batch *b)
{
    int lo = -1, hi = -1, empty = 0;
    for (int i = 0; i < b->n_seqs; i++) {
        if (b->n_new[i] == 0) {
            empty++;
            continue;
        }
        if (lo < 0 || b->n_past[i] < lo) lo = b->n_past[i];
        if (b->n_past[i] > hi) hi = b->n_past[i];
    }
    n_calls++;
    n_mixed_ctx += hi > lo;
    n_empty += empty > 0;
    n_first_empty += b->n_new[0] == 0;
    return MLA_OK;
}
static mla_status count_mha(void *ctx, const mla_batch *b)
{
    n_mha++;
    count_batch(b);
    return real->forward_mha(ctx, b);
}
static mla_status count_mqa(void *ctx, const mla_batch *b)
{
    n_mqa++;
    count_batch(b);
    return real->forward_mqa(ctx, b);
}

/* The staggered schedule sends what a serving scheduler sends (sequences at different context
 * lengths in one call, empty entries, prefill chunks and decodes in both forms), and each sequence's
 * taps there are bit for bit those of the sequence run alone under the same plan. */
static void test_staggered_schedule(void **state)
{
    (void)state;
    mla_model *m;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    const mla_config *cfg = mla_model_config(m);
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.max_seqs = 3;
    o.max_seq_len = 64;
    o.block_size = 4;
    o.shuffle_blocks = 1;
    mla_engine e, solo;
    assert_int_equal(mla_engine_open("ref", m, &o, &e), MLA_OK);
    o.max_seqs = 1;
    o.shuffle_blocks = 0;
    assert_int_equal(mla_engine_open("ref", m, &o, &solo), MLA_OK);
    static mla_backend_ops wrapped;
    real = e.ops;
    wrapped = *e.ops;
    wrapped.forward_mha = count_mha;
    wrapped.forward_mqa = count_mqa;
    e.ops = &wrapped;
    int32_t tk[3][40];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < 40; i++) tk[s][i] = (i * 7 + s * 13 + 1) % cfg->vocab_size;
    const int32_t *tp[3] = {tk[0], tk[1], tk[2]};
    int lens[3] = {40, 23, 31};
    mla_dump *d[3], *one;
    mla_drive_opts ds = {.path = MLA_PATH_STAGGERED, .chunk = 5, .sched_seed = 3};
    n_calls = n_mixed_ctx = n_empty = n_mha = n_mqa = n_first_empty = 0;
    assert_int_equal(mla_drive(&e, cfg, 3, tp, lens, &ds, d), MLA_OK);
    print_message("staggered: %d calls (%d mha, %d mqa), %d at mixed context lengths, %d with empty entries\n",
                  n_calls, n_mha, n_mqa, n_mixed_ctx, n_empty);
    assert_true(n_mha > 0 && n_mqa > 0);
    assert_true(n_mixed_ctx > 0);
    assert_true(n_empty > 0);
    assert_true(n_first_empty > 0); /* the first entry is not always a running sequence */
    for (int s = 0; s < 3; s++) {
        assert_int_equal(mla_drive(&solo, cfg, 1, &tp[s], &lens[s], &ds, &one), MLA_OK);
        mla_dcmp_ctx c = {.case_name = "t", .check = "batch-invariance", .profile = "fp64", .path = "staggered", .kv_len = -1};
        mla_dcmp_result r;
        assert_int_equal(mla_dcmp_bitwise(&c, d[s], one, &r), MLA_OK);
        if (r.n_failed) fail_msg("sequence %d: %s: %s", s, r.first_tap, r.first_why);
        assert_non_null(mla_dump_rows(d[s], 0, MLA_TAP_Q_ABSORBED)); /* decoded tail only */
        mla_dump_free(one);
        mla_dump_free(d[s]);
    }
    e.ops = real;
    mla_engine_close(&e);
    mla_engine_close(&solo);
    mla_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_taps_pass),     cmocka_unit_test(test_short_tap_refused),
        cmocka_unit_test(test_null_tap_refused),   cmocka_unit_test(test_wrong_width_refused),
        cmocka_unit_test(test_wrong_rank_refused), cmocka_unit_test(test_unknown_dtype_refused),
        cmocka_unit_test(test_decode_keeps_q_absorbed),
        cmocka_unit_test(test_staggered_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
