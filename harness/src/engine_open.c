/* engine_open.c: engines by name: "ref", "gpu" (when built) and "plugin:<path.so>" (dlopen). */
#include "mla/plugin.h"
#include "mlacheck/driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#ifdef MLA_HAVE_GPU
#include "mla_gpu.h"
#endif

static mla_status plugin_ops(const char *path, const mla_backend_ops **ops)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return mla_errorf(MLA_ERR_NOT_FOUND, "plugin %s: cannot load: %s", path, dlerror());
    mla_plugin_register_fn reg;
    *(void **)&reg = dlsym(h, MLA_PLUGIN_SYMBOL);
    if (!reg) {
        dlclose(h);
        return mla_errorf(MLA_ERR_NOT_FOUND, "plugin %s: missing symbol %s (see reference/include/mla/plugin.h)",
                          path, MLA_PLUGIN_SYMBOL);
    }
    const mla_backend_ops *o = reg(MLA_BACKEND_ABI_VERSION);
    if (!o) {
        dlclose(h);
        return mla_errorf(MLA_ERR_VERSION, "plugin %s: refused host ABI version %d", path,
                          MLA_BACKEND_ABI_VERSION);
    }
    if (o->abi_version != MLA_BACKEND_ABI_VERSION) {
        unsigned v = o->abi_version; /* read before dlclose unmaps it */
        dlclose(h);
        return mla_errorf(MLA_ERR_VERSION, "plugin %s: ABI version %u, expected %d", path, v,
                          MLA_BACKEND_ABI_VERSION);
    }
    if (!o->create || !o->supports || !o->load || !o->reset || !o->forward_mha || !o->forward_mqa ||
        !o->read_tap || !o->destroy) {
        dlclose(h);
        return mla_errorf(MLA_ERR_FORMAT, "plugin %s: vtable has a NULL required entry", path);
    }
    *ops = o; /* the library stays loaded for the life of the process */
    return MLA_OK;
}

mla_status mla_engine_open(const char *name, mla_model *model, const mla_run_opts *opts, mla_engine *out)
{
    memset(out, 0, sizeof *out);
    mla_status st;
    if (strcmp(name, "ref") == 0) {
        out->ops = mla_ref_backend();
    } else if (strcmp(name, "gpu") == 0) {
#ifdef MLA_HAVE_GPU
        out->ops = mla_gpu_backend();
#else
        return mla_errorf(MLA_ERR_NO_DEVICE, "engine gpu: this build has no GPU engine (configure with -DMLA_GPU=cuda or hip)");
#endif
    } else if (strncmp(name, "plugin:", 7) == 0) {
        if ((st = plugin_ops(name + 7, &out->ops))) return st;
    } else {
        return mla_errorf(MLA_ERR_INVALID, "engine '%s': expected ref, gpu or plugin:<path.so>", name);
    }
    snprintf(out->name, sizeof out->name, "%s", name);
    if ((st = out->ops->create(&out->ctx))) return st;
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
