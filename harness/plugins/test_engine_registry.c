/* test_engine_registry.c: the one opener (mlacheck/engine_registry.h). A plugin opened for many
 * drives is dlopen'd once (one close unloads it), a refused plugin is unloaded at once, one library
 * serves both uses through one handle, and the vtable rule depends on the use (mla/abi_check.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "mla_ref/ref.h"
#include "mlacheck/driver.h"
#include "mlacheck/engine_registry.h"
#include "mlacheck/opcheck.h"
#include "mla_model/model.h"

#define ENGINE(path) "plugin:" path

/* 1 when the library at path is mapped in this process (RTLD_NOLOAD loads nothing). */
static int is_loaded(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h) return 0;
    dlclose(h); /* the reference NOLOAD just took */
    return 1;
}

/* Five open/close rounds in this process (MLA_PLUGIN_CHILD=0, as under a debugger), as five drives
 * of a check: one handle, one reference. */
static void test_reopen_reuses_the_handle(void **state)
{
    (void)state;
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    mla_run_opts o;
    mla_run_opts_default(&o);
    assert_false(is_loaded(MLA_REF_PLUGIN));
    setenv("MLA_PLUGIN_CHILD", "0", 1);
    const mla_backend_ops *first = NULL;
    for (int k = 0; k < 5; k++) {
        mla_engine e;
        if (mla_engine_open(ENGINE(MLA_REF_PLUGIN), m, &o, &e)) fail_msg("open %d: %s", k, mla_last_error());
        if (k == 0) first = e.ops;
        assert_ptr_equal(e.ops, first);
        mla_engine_close(&e);
    }
    unsetenv("MLA_PLUGIN_CHILD");
    /* the same library as an attention operator: the same handle again */
    const mla_attn_ops *ops = NULL;
    assert_int_equal(mla_opcheck_open(ENGINE(MLA_REF_PLUGIN), &ops), MLA_OK);
    assert_true(is_loaded(MLA_REF_PLUGIN));
    assert_int_equal(mla_registry_libraries(), 1); /* six opens, one dlopen */
    mla_registry_close_all();
    assert_false(is_loaded(MLA_REF_PLUGIN)); /* a second dlopen anywhere would keep it mapped */
    mla_model_free(m);
}

/* By default an engine loads its plugin in its child process (plugin_child.h), never in this one:
 * a constructor or register function that crashes cannot take the caller down. */
static void test_child_loads_it_there(void **state)
{
    (void)state;
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    mla_run_opts o;
    mla_run_opts_default(&o);
    for (int k = 0; k < 2; k++) {
        mla_engine e;
        if (mla_engine_open(ENGINE(MLA_REF_PLUGIN), m, &o, &e)) fail_msg("open %d: %s", k, mla_last_error());
        assert_false(is_loaded(MLA_REF_PLUGIN));
        mla_engine_close(&e);
    }
    mla_opcheck_engine *oe = NULL;
    if (mla_opcheck_engine_open(ENGINE(MLA_ATTN_ONLY_PLUGIN), &oe)) fail_msg("ops open: %s", mla_last_error());
    assert_false(is_loaded(MLA_ATTN_ONLY_PLUGIN));
    mla_opcheck_engine_close(oe);
    assert_int_equal(mla_registry_libraries(), 0);
    /* a refusal in the child keeps its status and message */
    mla_engine e;
    assert_int_equal(mla_engine_open(ENGINE(MLA_MISMATCH_PLUGIN), m, &o, &e), MLA_ERR_VERSION);
    assert_non_null(strstr(mla_last_error(), MLA_MISMATCH_PLUGIN));
    assert_int_equal(mla_opcheck_engine_open(ENGINE(MLA_ATTN_ONLY_MISMATCH_PLUGIN), &oe), MLA_ERR_VERSION);
    assert_null(oe);
    mla_model_free(m);
}

/* A refused library is closed at once, for either use. */
static void test_refused_is_unloaded(void **state)
{
    (void)state;
    mla_model *m = NULL;
    assert_int_equal(mla_model_open("tiny-v3", &m), MLA_OK);
    mla_run_opts o;
    mla_run_opts_default(&o);
    mla_engine e;
    assert_int_equal(mla_engine_open(ENGINE(MLA_MISMATCH_PLUGIN), m, &o, &e), MLA_ERR_VERSION);
    assert_false(is_loaded(MLA_MISMATCH_PLUGIN));
    assert_int_equal(mla_registry_libraries(), 0);
    const mla_attn_ops *ops = NULL;
    assert_int_equal(mla_opcheck_open(ENGINE(MLA_MISMATCH_PLUGIN), &ops), MLA_ERR_VERSION);
    assert_null(ops);
    assert_false(is_loaded(MLA_MISMATCH_PLUGIN));
    assert_int_equal(mla_engine_open(ENGINE(MLA_ATTN_ONLY_MISMATCH_PLUGIN), m, &o, &e), MLA_ERR_VERSION);
    assert_false(is_loaded(MLA_ATTN_ONLY_MISMATCH_PLUGIN));
    mla_model_free(m);
}

/* An attention-only plugin runs as a hybrid engine: the reference's vtable, loaded once. */
static void test_attn_only_is_hybrid(void **state)
{
    (void)state;
    const mla_backend_ops *b = NULL;
    const mla_attn_ops *a = NULL;
    assert_int_equal(mla_registry_backend(ENGINE(MLA_ATTN_ONLY_PLUGIN), &b, &a), MLA_OK);
    assert_ptr_equal(b, mla_ref_backend());
    assert_non_null(a);
    const mla_backend_ops *b2 = NULL;
    const mla_attn_ops *a2 = NULL;
    assert_int_equal(mla_registry_backend(ENGINE(MLA_ATTN_ONLY_PLUGIN), &b2, &a2), MLA_OK);
    assert_ptr_equal(a2, a);
    assert_int_equal(mla_registry_libraries(), 1);
    mla_registry_close_all();
    assert_false(is_loaded(MLA_ATTN_ONLY_PLUGIN));
    assert_int_equal(mla_registry_backend("nonsense", &b, &a), MLA_ERR_INVALID);
    assert_non_null(strstr(mla_last_error(), "expected ref, gpu or plugin:<path.so>"));
}

static int no_supports(mla_attn_feature f, int64_t v)
{
    (void)f;
    (void)v;
    return 1;
}

static mla_status no_mqa(const mla_mqa_args *a)
{
    (void)a;
    return MLA_OK;
}

/* The rule depends on the use: ops needs one form, a whole-model run both. */
static void test_attn_rule_by_use(void **state)
{
    (void)state;
    mla_attn_ops o = {.abi_version = MLA_ATTN_ABI_VERSION, .name = "mqa-only", .supports = no_supports, .mqa = no_mqa};
    assert_int_equal(mla_attn_ops_check(&o, MLA_ATTN_USE_OPS, "t"), MLA_OK);
    assert_int_equal(mla_attn_ops_check(&o, MLA_ATTN_USE_MODEL, "t"), MLA_ERR_FORMAT);
    assert_non_null(
        strstr(mla_last_error(), "t: a whole-model run needs the operator's supports, mqa and mha (mha is NULL)"));
    o.mqa = NULL;
    assert_int_equal(mla_attn_ops_check(&o, MLA_ATTN_USE_OPS, "t"), MLA_ERR_FORMAT);
    assert_non_null(strstr(mla_last_error(), "at least one of mqa, mha"));
    o.mqa = no_mqa;
    o.abi_version = MLA_ATTN_ABI_VERSION + 1;
    assert_int_equal(mla_attn_ops_check(&o, MLA_ATTN_USE_OPS, "t"), MLA_ERR_VERSION);
    assert_non_null(strstr(mla_last_error(), "attention ABI version 2, expected 1"));
    /* the reference's hybrid hook applies the whole-model rule */
    o.abi_version = MLA_ATTN_ABI_VERSION;
    void *ctx = NULL;
    assert_int_equal(mla_ref_backend()->create(&ctx), MLA_OK);
    assert_int_equal(mla_ref_set_attn_ops(ctx, &o), MLA_ERR_FORMAT);
    assert_non_null(strstr(mla_last_error(), "reference: attention operator mqa-only: a whole-model run needs"));
    mla_ref_backend()->destroy(ctx);
}

static void test_backend_rule(void **state)
{
    (void)state;
    mla_backend_ops o = *mla_ref_backend();
    assert_int_equal(mla_backend_ops_check(&o, "t"), MLA_OK);
    o.read_kv = NULL; /* optional */
    assert_int_equal(mla_backend_ops_check(&o, "t"), MLA_OK);
    o.read_tap = NULL;
    assert_int_equal(mla_backend_ops_check(&o, "t"), MLA_ERR_FORMAT);
    assert_non_null(strstr(mla_last_error(), "vtable entry read_tap is NULL"));
    o = *mla_ref_backend();
    o.abi_version = MLA_BACKEND_ABI_VERSION + 1;
    assert_int_equal(mla_backend_ops_check(&o, "t"), MLA_ERR_VERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reopen_reuses_the_handle),
        cmocka_unit_test(test_child_loads_it_there), cmocka_unit_test(test_refused_is_unloaded),
        cmocka_unit_test(test_attn_only_is_hybrid),      cmocka_unit_test(test_attn_rule_by_use),
        cmocka_unit_test(test_backend_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
