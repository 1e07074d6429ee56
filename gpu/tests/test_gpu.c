/* test_gpu.c: cmocka wrapper of the GPU-vs-reference comparison (gpu_compare.c).
 * Exits 77 (skipped) when there is no GPU device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "gpu_compare.h"
#include "mla_gpu.h"
#include "mla_model/model.h"

static void test_gpu_matches_reference(void **state)
{
    (void)state;
    assert_int_equal(gpu_compare_run(stderr, NULL, NULL, GPU_COMPARE_SEED), 0);
}

static void test_gpu_rejects_fp64(void **state)
{
    (void)state;
    const mla_backend_ops *g = mla_gpu_backend();
    void *ctx = NULL;
    assert_int_equal(g->create(&ctx), MLA_OK);
    assert_int_equal(g->supports(ctx, MLA_FEAT_PROFILE_FP64), 0);
    assert_int_equal(g->supports(ctx, MLA_FEAT_PROFILE_BF16), 1);
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    mla_run_opts o;
    mla_run_opts_default(&o); /* fp64 */
    assert_int_equal(g->load(ctx, m, &o), MLA_ERR_UNSUPPORTED);
    g->destroy(ctx);
    mla_model_free(m);
}

int main(void)
{
    char desc[256];
    if (mla_gpu_probe(desc, sizeof desc) != MLA_OK) {
        fprintf(stderr, "test_gpu: %s: skipped\n", mla_last_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_rejects_fp64),
        cmocka_unit_test(test_gpu_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
