/* engine_registry.c: engines by name, one opener for ref, gpu and both plugin kinds
 * (mlacheck/engine_registry.h). Plugin libraries are kept in a small table by path, dlopen'd once. */
#include "mlacheck/engine_registry.h"

#include "mla/plugin.h"
#include "mla_ref/ref.h"
#include "mlacheck/driver.h"
#include "plugin_child.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MLA_HAVE_GPU
#include "mla_gpu.h"
#endif

/* One dlopen'd plugin library. */
typedef struct reg_lib {
    char *path;
    void *handle;
    int accepted; /* some use accepted it: it stays loaded, its vtables may be in use */
} reg_lib;

static reg_lib *reg_libs;
static int reg_n, reg_cap;

/* The library at path, opened on first use: its index in reg_libs. */
static mla_status lib_get(const char *path, int *index)
{
    for (int i = 0; i < reg_n; i++)
        if (!strcmp(reg_libs[i].path, path)) {
            *index = i;
            return MLA_OK;
        }
    if (reg_n == reg_cap) {
        int cap = reg_cap ? 2 * reg_cap : 8;
        reg_lib *v = realloc(reg_libs, (size_t)cap * sizeof *v);
        if (!v) return mla_errorf(MLA_ERR_NOMEM, "engine registry: %d plugin libraries", cap);
        reg_libs = v;
        reg_cap = cap;
    }
    char *p = strdup(path);
    if (!p) return mla_errorf(MLA_ERR_NOMEM, "engine registry: plugin path %s", path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        free(p);
        return mla_errorf(MLA_ERR_NOT_FOUND, "plugin %s: cannot load: %s", path, dlerror());
    }
    reg_libs[reg_n] = (reg_lib){.path = p, .handle = h, .accepted = 0};
    *index = reg_n++;
    return MLA_OK;
}

/* A use refused library i: unless an earlier use accepted it, it is closed and forgotten. Returns st;
 * the caller forms the message first (its arguments, read from the library, are evaluated before
 * this call), so nothing reads unmapped memory. */
static mla_status lib_refuse(int i, mla_status st)
{
    if (reg_libs[i].accepted) return st;
    dlclose(reg_libs[i].handle);
    free(reg_libs[i].path);
    reg_libs[i] = reg_libs[--reg_n];
    return st;
}

static mla_status lib_accept(int i)
{
    reg_libs[i].accepted = 1;
    return MLA_OK;
}

/* The attention operator library i exports, checked for use; NOT_FOUND names `wanted`. */
static mla_status lib_attn(int i, mla_attn_use use, const char *wanted, const mla_attn_ops **out)
{
    const char *path = reg_libs[i].path;
    mla_attn_plugin_register_fn reg;
    *(void **)&reg = dlsym(reg_libs[i].handle, MLA_ATTN_PLUGIN_SYMBOL);
    if (!reg) return lib_refuse(i, mla_errorf(MLA_ERR_NOT_FOUND, "plugin %s: missing symbol %s", path, wanted));
    const mla_attn_ops *o = reg(MLA_ATTN_ABI_VERSION);
    if (!o)
        return lib_refuse(i, mla_errorf(MLA_ERR_VERSION, "plugin %s: %s refused host attention ABI version %d", path,
                                        MLA_ATTN_PLUGIN_SYMBOL, MLA_ATTN_ABI_VERSION));
    char who[600];
    snprintf(who, sizeof who, "plugin %s", path);
    mla_status st = mla_attn_ops_check(o, use, who);
    if (st) return lib_refuse(i, st);
    *out = o;
    return lib_accept(i);
}

/* Whole-model plugin: *ops. Attention-only plugin: *ops = the reference, *attn = its operator. */
static mla_status plugin_backend(const char *path, const mla_backend_ops **ops, const mla_attn_ops **attn)
{
    int i;
    mla_status st = lib_get(path, &i);
    if (st) return st;
    mla_plugin_register_fn reg;
    *(void **)&reg = dlsym(reg_libs[i].handle, MLA_PLUGIN_SYMBOL);
    if (!reg) {
        st = lib_attn(i, MLA_ATTN_USE_MODEL,
                      MLA_PLUGIN_SYMBOL " (whole model, plugin.h) or " MLA_ATTN_PLUGIN_SYMBOL
                                        " (attention operator, attn_op.h)",
                      attn);
        if (!st) *ops = mla_ref_backend();
        return st;
    }
    const mla_backend_ops *o = reg(MLA_BACKEND_ABI_VERSION);
    if (!o)
        return lib_refuse(i, mla_errorf(MLA_ERR_VERSION, "plugin %s: refused host ABI version %d", path,
                                        MLA_BACKEND_ABI_VERSION));
    char who[600];
    snprintf(who, sizeof who, "plugin %s", path);
    if ((st = mla_backend_ops_check(o, who))) return lib_refuse(i, st);
    *ops = o;
    return lib_accept(i);
}

/* The in-process operator (one at a time: the Python route registers it for one run). */
#define REG_INPROC "plugin:inproc:"
static char reg_inproc_name[64];
static const mla_attn_ops *reg_inproc_ops;

mla_status mla_registry_add_inproc(const char *name, const mla_attn_ops *ops)
{
    if (!name || !name[0] || strlen(name) >= sizeof reg_inproc_name)
        return mla_errorf(MLA_ERR_INVALID, "engine registry: in-process operator name '%s': expected 1..63 bytes",
                          name ? name : "(null)");
    if (reg_inproc_ops)
        return mla_errorf(MLA_ERR_INVALID, "engine registry: in-process operator %s is registered already",
                          reg_inproc_name);
    char who[128];
    snprintf(who, sizeof who, "in-process operator %s", name);
    mla_status st = mla_attn_ops_check(ops, MLA_ATTN_USE_OPS, who); /* one form is enough: ref computes the other */
    if (st) return st;
    snprintf(reg_inproc_name, sizeof reg_inproc_name, "%s", name);
    reg_inproc_ops = ops;
    return MLA_OK;
}

void mla_registry_remove_inproc(void)
{
    reg_inproc_ops = NULL;
    reg_inproc_name[0] = '\0';
}

mla_status mla_registry_backend(const char *name, const mla_backend_ops **ops, const mla_attn_ops **attn)
{
    *ops = NULL;
    *attn = NULL;
    if (strcmp(name, "ref") == 0) {
        *ops = mla_ref_backend();
        return MLA_OK;
    }
    if (strcmp(name, "gpu") == 0) {
#ifdef MLA_HAVE_GPU
        *ops = mla_gpu_backend();
        return MLA_OK;
#else
        return mla_errorf(MLA_ERR_NO_DEVICE,
                          "engine gpu: this build has no GPU engine (configure with -DMLA_GPU=cuda or hip)");
#endif
    }
    if (strncmp(name, REG_INPROC, strlen(REG_INPROC)) == 0) {
        if (!reg_inproc_ops || strcmp(name + strlen(REG_INPROC), reg_inproc_name) != 0)
            return mla_errorf(MLA_ERR_NOT_FOUND, "engine %s: no in-process operator of that name is registered", name);
        *ops = mla_ref_backend();
        *attn = reg_inproc_ops;
        return MLA_OK;
    }
    if (strncmp(name, "plugin:", 7) == 0) return plugin_backend(name + 7, ops, attn);
    return mla_errorf(MLA_ERR_INVALID, "engine '%s': expected ref, gpu or plugin:<path.so>", name);
}

mla_status mla_registry_attn_ops(const char *name, const mla_attn_ops **out)
{
    *out = NULL;
    if (name && !strcmp(name, "ref")) {
        *out = mla_ref_attn_ops();
        return MLA_OK;
    }
    if (!name || strncmp(name, "plugin:", 7) != 0)
        return mla_errorf(MLA_ERR_INVALID, "attention engine '%s': expected ref or plugin:<path.so>",
                          name ? name : "(null)");
    int i;
    mla_status st = lib_get(name + 7, &i);
    if (st) return st;
    return lib_attn(i, MLA_ATTN_USE_OPS, MLA_ATTN_PLUGIN_SYMBOL " (see reference/include/mla/attn_op.h)", out);
}

int mla_registry_libraries(void) { return reg_n; }

void mla_registry_close_all(void)
{
    for (int i = 0; i < reg_n; i++) {
        dlclose(reg_libs[i].handle);
        free(reg_libs[i].path);
    }
    free(reg_libs);
    reg_libs = NULL;
    reg_n = reg_cap = 0;
}

mla_status mla_engine_open(const char *name, mla_model *model, const mla_run_opts *opts, mla_engine *out)
{
    memset(out, 0, sizeof *out);
    const mla_attn_ops *attn = NULL; /* set: hybrid engine, the reference with this attention core */
    /* the registry applies the rule of the route: a library plugin has both forms, an in-process
     * operator may have one (the reference computes the other) */
    int partial = strncmp(name, REG_INPROC, strlen(REG_INPROC)) == 0;
    /* a library plugin, whole-model or hybrid, is loaded and runs in a child process
     * (plugin_child.h): its crash, exit or hang, from its constructors on, is this engine's error,
     * not the end of the run */
    int child = !partial && strncmp(name, "plugin:", 7) == 0 && mla_pchild_wanted();
    mla_status st = child ? MLA_OK : mla_registry_backend(name, &out->ops, &attn);
    if (st) return st;
    snprintf(out->name, sizeof out->name, "%s", name);
    if (child) {
        if ((st = mla_pchild_open(name, model, &out->ops, &out->ctx))) return st;
    } else {
        if ((st = out->ops->create(&out->ctx))) return st;
        if (attn && (st = partial ? mla_ref_set_attn_ops_partial(out->ctx, attn) : mla_ref_set_attn_ops(out->ctx, attn))) {
            out->ops->destroy(out->ctx);
            out->ctx = NULL;
            return st;
        }
    }
    int feat = MLA_FEAT_PROFILE_FP64 + (int)opts->profile;
    if (!out->ops->supports(out->ctx, (mla_feature)feat)) {
        st = child ? mla_pchild_status(out->ctx) : MLA_OK; /* a dead child answers 0 too */
        char why[1024];
        snprintf(why, sizeof why, "%s", mla_last_error());
        out->ops->destroy(out->ctx);
        out->ctx = NULL;
        if (st) return mla_errorf(st, "%s", why);
        return mla_errorf(MLA_ERR_UNSUPPORTED, "engine %s: profile %s not supported", name,
                          mla_profile_name(opts->profile));
    }
    if ((st = out->ops->load(out->ctx, model, opts))) {
        out->ops->destroy(out->ctx);
        out->ctx = NULL;
        return st;
    }
    return MLA_OK;
}

void mla_engine_close(mla_engine *e)
{
    if (e->ops && e->ctx) e->ops->destroy(e->ctx);
    e->ctx = NULL;
}
