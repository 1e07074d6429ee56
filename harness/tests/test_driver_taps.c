/* test_driver_taps.c: a tap an engine returns is checked before it is copied. A fake engine (the
 * reference with its read_tap wrapped) returns short, NULL, mis-shaped and wrongly-ranked taps: the
 * drive fails with MLA_ERR_FORMAT naming engine, layer, tap and the expected shape (no overflow:
 * the sanitizer pass runs this under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mla_model/model.h"
#include "mlacheck/driver.h"
#include "mlacheck/engine_registry.h"

typedef enum { BAD_NONE, BAD_SHORT, BAD_NULL, BAD_WIDTH, BAD_RANK } bad_kind;

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
        assert_int_equal(st, MLA_ERR_FORMAT);
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
    drive_bad(BAD_NULL, MLA_TAP_ATTN_CORE, 0, "layer 0 tap attn_core: read_tap returned OK and no tensor");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_taps_pass),     cmocka_unit_test(test_short_tap_refused),
        cmocka_unit_test(test_null_tap_refused),   cmocka_unit_test(test_wrong_width_refused),
        cmocka_unit_test(test_wrong_rank_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
