/* test_batch.c: the batch contract of backend.h. Each numbered rule refuses a batch that breaks it
 * with MLA_ERR_INVALID and a detail naming the field; a batch that keeps them all passes; and the
 * reference engine refuses through the same function (the GPU engine calls it too, gpu_forward.hip). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mla/backend.h"
#include "mla_model/model.h"
#include "mla_ref/ref.h"

/* Three slots holding 0, 5 and 2 tokens; room for 8 tokens per slot; vocabulary of 10. */
typedef struct fixture {
    int32_t cached[3];
    int32_t ids[2], past[2], nnew[2], tok[8];
    mla_batch b;
    mla_batch_limits lim;
} fixture;

/* A valid two-sequence batch: slot 1 decodes 1 token after 5, slot 0 prefills 3. */
static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->cached[0] = 0;
    f->cached[1] = 5;
    f->cached[2] = 2;
    f->ids[0] = 1;
    f->past[0] = 5;
    f->nnew[0] = 1;
    f->ids[1] = 0;
    f->past[1] = 0;
    f->nnew[1] = 3;
    for (int i = 0; i < 8; i++) f->tok[i] = i;
    f->b = (mla_batch){.n_seqs = 2, .seq_ids = f->ids, .n_past = f->past, .n_new = f->nnew, .tokens = f->tok};
    f->lim = (mla_batch_limits){.max_seqs = 3, .max_seq_len = 8, .vocab_size = 10, .cached = f->cached};
}

/* The batch is refused, and the detail holds every one of the NULL-terminated words. */
static void assert_refused(const fixture *f, const char *const *words)
{
    mla_clear_error();
    mla_status st = mla_batch_validate("test", &f->b, &f->lim);
    if (st != MLA_ERR_INVALID) fail_msg("expected MLA_ERR_INVALID, got %s (%s)", mla_strerror(st), mla_last_error());
    const char *msg = mla_last_error();
    if (strncmp(msg, "test: batch: ", 13)) fail_msg("detail does not name the engine and the batch: %s", msg);
    for (int i = 0; words[i]; i++)
        if (!strstr(msg, words[i])) fail_msg("detail \"%s\" lacks \"%s\"", msg, words[i]);
}

static void test_valid_batch_passes(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    assert_int_equal(mla_batch_validate("test", &f.b, &f.lim), MLA_OK);
    /* the limits themselves are reachable: 5 + 3 == max_seq_len, token vocab_size - 1 */
    f.nnew[0] = 3;
    f.tok[3] = 9;
    assert_int_equal(mla_batch_validate("test", &f.b, &f.lim), MLA_OK);
}

/* rule 1: at least one sequence, every array set */
static void test_rule1_shape(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.b.n_seqs = 0;
    assert_refused(&f, (const char *[]){"n_seqs = 0", NULL});
    fixture_init(&f);
    f.b.n_past = NULL;
    assert_refused(&f, (const char *[]){"n_past is NULL", NULL});
    fixture_init(&f);
    f.b.tokens = NULL;
    assert_refused(&f, (const char *[]){"tokens is NULL", NULL});
}

/* rule 2: slots in range and distinct */
static void test_rule2_seq_ids(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.ids[1] = 3;
    assert_refused(&f, (const char *[]){"seq_ids[1] = 3", "max_seqs", NULL});
    fixture_init(&f);
    f.ids[0] = -1;
    assert_refused(&f, (const char *[]){"seq_ids[0] = -1", NULL});
    fixture_init(&f);
    f.ids[1] = 1; /* both entries name slot 1, each with the right n_past */
    f.past[1] = 5;
    f.nnew[1] = 1;
    assert_refused(&f, (const char *[]){"seq_ids[1] = 1", "repeats seq_ids[0]", NULL});
}

/* rule 3: n_past is exactly the cached length: no rewind, no gap */
static void test_rule3_n_past(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.past[0] = 4; /* a rewind by one */
    assert_refused(&f, (const char *[]){"n_past[0] = 4", "expected 5", "slot 1", NULL});
    fixture_init(&f);
    f.past[1] = 1; /* a gap */
    assert_refused(&f, (const char *[]){"n_past[1] = 1", "expected 0", "slot 0", NULL});
}

/* rule 4: n_new >= 0; an empty entry is legal (a no-op), and drop_empty removes it */
static void test_rule4_n_new(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.nnew[1] = 0;
    assert_int_equal(mla_batch_validate("test", &f.b, &f.lim), MLA_OK);
    mla_batch c;
    int32_t *buf = NULL;
    assert_int_equal(mla_batch_drop_empty(&f.b, &c, &buf), MLA_OK);
    assert_non_null(buf);
    assert_int_equal(c.n_seqs, 1);
    assert_int_equal(c.seq_ids[0], 1);
    assert_int_equal(c.n_past[0], 5);
    assert_int_equal(c.n_new[0], 1);
    free(buf);
    f.nnew[0] = 0; /* every entry empty: nothing left */
    assert_int_equal(mla_batch_validate("test", &f.b, &f.lim), MLA_OK);
    assert_int_equal(mla_batch_drop_empty(&f.b, &c, &buf), MLA_OK);
    assert_int_equal(c.n_seqs, 0);
    free(buf);
    fixture_init(&f); /* nothing to drop: the batch itself, no buffer */
    assert_int_equal(mla_batch_drop_empty(&f.b, &c, &buf), MLA_OK);
    assert_null(buf);
    assert_ptr_equal(c.n_new, f.b.n_new);
    fixture_init(&f);
    f.nnew[1] = 0; /* rule 3 still holds for an empty entry */
    f.past[1] = 1;
    assert_refused(&f, (const char *[]){"n_past[1] = 1", NULL});
    fixture_init(&f);
    f.nnew[0] = -2;
    assert_refused(&f, (const char *[]){"n_new[0] = -2", NULL});
}

/* rule 5: the slot's blocks cover n_past + n_new tokens */
static void test_rule5_max_seq_len(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.nnew[0] = 4; /* 5 + 4 > 8 */
    assert_refused(&f, (const char *[]){"n_past[0] + n_new[0] = 9", "max_seq_len", NULL});
    fixture_init(&f);
    f.nnew[1] = INT32_MAX; /* no int overflow in the sum */
    assert_refused(&f, (const char *[]){"n_past[1] + n_new[1] = 2147483647", "max_seq_len", NULL});
}

/* rule 6: token ids inside the vocabulary */
static void test_rule6_tokens(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    f.tok[3] = 10;
    assert_refused(&f, (const char *[]){"tokens[3] = 10", "vocab_size", NULL});
    fixture_init(&f);
    f.tok[0] = -1;
    assert_refused(&f, (const char *[]){"tokens[0] = -1", NULL});
}

/* The reference engine applies the same contract: a repeated slot is refused; an empty sequence is a
 * no-op (its slot does not advance, the taps hold the other sequences' rows only). */
static void test_reference_engine_follows(void **state)
{
    (void)state;
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v2-lite", &m), MLA_OK);
    const mla_backend_ops *ops = mla_ref_backend();
    void *ctx = NULL;
    mla_run_opts o;
    mla_run_opts_default(&o);
    o.max_seqs = 2;
    o.max_seq_len = 8;
    assert_int_equal(ops->create(&ctx), MLA_OK);
    assert_int_equal(ops->load(ctx, m, &o), MLA_OK);
    int32_t ids[2] = {0, 0}, past[2] = {0, 0}, nnew[2] = {1, 1}, tok[2] = {1, 2};
    mla_batch b = {.n_seqs = 2, .seq_ids = ids, .n_past = past, .n_new = nnew, .tokens = tok};
    assert_int_equal(ops->forward_mha(ctx, &b), MLA_ERR_INVALID);
    assert_non_null(strstr(mla_last_error(), "reference: batch: seq_ids[1] = 0 repeats"));
    ids[1] = 1;
    nnew[0] = nnew[1] = 0; /* every entry empty: nothing computed, no tap */
    assert_int_equal(ops->forward_mqa(ctx, &b), MLA_OK);
    mla_tensor *t = NULL;
    assert_int_equal(ops->read_tap(ctx, 0, MLA_TAP_OUT, &t), MLA_ERR_UNSUPPORTED);
    nnew[0] = 1; /* slot 1 empty: one row, slot 1 stays at 0 */
    assert_int_equal(ops->forward_mqa(ctx, &b), MLA_OK);
    assert_int_equal(ops->read_tap(ctx, 0, MLA_TAP_OUT, &t), MLA_OK);
    assert_int_equal(t->shape[0], 1);
    mla_tensor_free(t);
    nnew[1] = 1;
    past[0] = 1;
    assert_int_equal(ops->forward_mha(ctx, &b), MLA_OK);
    past[0] = 2; /* the cache advanced by n_new: slot 0 holds 2, slot 1 holds 1 */
    past[1] = 1;
    assert_int_equal(ops->forward_mqa(ctx, &b), MLA_OK);
    past[1] = 1; /* a rewind of slot 1 to 1 after 2 cached tokens */
    past[0] = 3;
    assert_int_equal(ops->forward_mqa(ctx, &b), MLA_ERR_INVALID);
    assert_non_null(strstr(mla_last_error(), "n_past[1] = 1, expected 2"));
    ops->destroy(ctx);
    mla_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_batch_passes), cmocka_unit_test(test_rule1_shape),
        cmocka_unit_test(test_rule2_seq_ids),      cmocka_unit_test(test_rule3_n_past),
        cmocka_unit_test(test_rule4_n_new),        cmocka_unit_test(test_rule5_max_seq_len),
        cmocka_unit_test(test_rule6_tokens),       cmocka_unit_test(test_reference_engine_follows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
