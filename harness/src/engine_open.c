/* engine_open.c: engines by name: "ref", "gpu" (when built) and "plugin:<path.so>" (dlopen). A plugin
 * with only the attention-operator symbol (attn_op.h) runs as a hybrid: the reference engine with
 * that operator as its attention core (mla/ref_hook.h). */
#include "mla/plugin.h"
#include "mla/ref_hook.h"
#include "mlacheck/driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#ifdef MLA_HAVE_GPU
#include "mla_gpu.h"
#endif

/* Unloads a refused plugin and passes the status on; the message is formed first (its arguments,
 * read from the library, are evaluated before the call), so nothing reads unmapped memory. */
static mla_status unload(void *h, mla_status st)
{
    dlclose(h);
    return st;
}

/* An attention-only plugin (attn_op.h): its operator, ABI-checked, for a hybrid engine. */
static mla_status plugin_attn_ops(void *h, const char *path, const mla_attn_ops **attn)
{
    mla_attn_plugin_register_fn reg;
    *(void **)&reg = dlsym(h, MLA_ATTN_PLUGIN_SYMBOL);
    if (!reg) {
        return unload(h, mla_errorf(MLA_ERR_NOT_FOUND, "plugin %s: missing symbol %s (whole model, plugin.h) or %s "
                          "(attention operator, attn_op.h)", path, MLA_PLUGIN_SYMBOL, MLA_ATTN_PLUGIN_SYMBOL));
    }
    const mla_attn_ops *o = reg(MLA_ATTN_ABI_VERSION);
    if (!o) {
        return unload(h, mla_errorf(MLA_ERR_VERSION, "plugin %s: refused host attention ABI version %d", path,
                          MLA_ATTN_ABI_VERSION));
    }
    if (o->abi_version != MLA_ATTN_ABI_VERSION) {
        unsigned v = o->abi_version; /* read before dlclose unmaps it */
        return unload(h, mla_errorf(MLA_ERR_VERSION, "plugin %s: attention ABI version %u, expected %d", path, v,
                          MLA_ATTN_ABI_VERSION));
    }
    if (!o->supports || !o->mqa || !o->mha) {
        return unload(h, mla_errorf(MLA_ERR_FORMAT, "plugin %s: a hybrid engine needs the operator's supports, mqa "
                          "and mha (one is NULL)", path));
    }
    *attn = o; /* the library stays loaded for the life of the process */
    return MLA_OK;
}

/* Whole-model plugin: *ops. Attention-only plugin: *ops = the reference, *attn = its operator. */
static mla_status plugin_ops(const char *path, const mla_backend_ops **ops, const mla_attn_ops **attn)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return mla_errorf(MLA_ERR_NOT_FOUND, "plugin %s: cannot load: %s", path, dlerror());
    mla_plugin_register_fn reg;
    *(void **)&reg = dlsym(h, MLA_PLUGIN_SYMBOL);
    if (!reg) {
        mla_status st = plugin_attn_ops(h, path, attn);
        if (!st) *ops = mla_ref_backend();
        return st;
    }
    const mla_backend_ops *o = reg(MLA_BACKEND_ABI_VERSION);
    if (!o) {
        return unload(h, mla_errorf(MLA_ERR_VERSION, "plugin %s: refused host ABI version %d", path,
                          MLA_BACKEND_ABI_VERSION));
    }
    if (o->abi_version != MLA_BACKEND_ABI_VERSION) {
        unsigned v = o->abi_version; /* read before dlclose unmaps it */
        return unload(h, mla_errorf(MLA_ERR_VERSION, "plugin %s: ABI version %u, expected %d", path, v,
                          MLA_BACKEND_ABI_VERSION));
    }
    if (!o->create || !o->supports || !o->load || !o->reset || !o->forward_mha || !o->forward_mqa ||
        !o->read_tap || !o->destroy) {
        return unload(h, mla_errorf(MLA_ERR_FORMAT, "plugin %s: vtable has a NULL required entry", path));
    }
    *ops = o; /* the library stays loaded for the life of the process */
    return MLA_OK;
}

mla_status mla_engine_open(const char *name, mla_model *model, const mla_run_opts *opts, mla_engine *out)
{
    memset(out, 0, sizeof *out);
    mla_status st;
    const mla_attn_ops *attn = NULL; /* set: hybrid engine, the reference with this attention core */
    if (strcmp(name, "ref") == 0) {
        out->ops = mla_ref_backend();
    } else if (strcmp(name, "gpu") == 0) {
#ifdef MLA_HAVE_GPU
        out->ops = mla_gpu_backend();
#else
        return mla_errorf(MLA_ERR_NO_DEVICE, "engine gpu: this build has no GPU engine (configure with -DMLA_GPU=cuda or hip)");
#endif
    } else if (strncmp(name, "plugin:", 7) == 0) {
        if ((st = plugin_ops(name + 7, &out->ops, &attn))) return st;
    } else {
        return mla_errorf(MLA_ERR_INVALID, "engine '%s': expected ref, gpu or plugin:<path.so>", name);
    }
    snprintf(out->name, sizeof out->name, "%s", name);
    if ((st = out->ops->create(&out->ctx))) return st;
    if (attn && (st = mla_ref_set_attn_ops(out->ctx, attn))) {
        out->ops->destroy(out->ctx);
        out->ctx = NULL;
        return st;
    }
    int feat = MLA_FEAT_PROFILE_FP64 + (int)opts->profile;
    if (!out->ops->supports(out->ctx, (mla_feature)feat)) {
        out->ops->destroy(out->ctx);
        out->ctx = NULL;
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
