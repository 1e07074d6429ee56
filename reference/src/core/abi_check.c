/* abi_check.c: the vtable rules of abi_check.h, for the attention operator and the backend. */
#include "mla/abi_check.h"

mla_status mla_attn_ops_check(const mla_attn_ops *o, mla_attn_use use, const char *who)
{
    if (!who) who = "attention operator";
    if (!o) return mla_errorf(MLA_ERR_INVALID, "%s: no attention operator (NULL vtable)", who);
    if (o->abi_version != MLA_ATTN_ABI_VERSION)
        return mla_errorf(MLA_ERR_VERSION, "%s: attention ABI version %u, expected %d (rebuild it against this "
                          "mla/attn_op.h)", who, (unsigned)o->abi_version, MLA_ATTN_ABI_VERSION);
    if (use == MLA_ATTN_USE_MODEL) {
        if (!o->supports || !o->mqa || !o->mha)
            return mla_errorf(MLA_ERR_FORMAT, "%s: a whole-model run needs the operator's supports, mqa and mha "
                              "(%s is NULL)", who, !o->supports ? "supports" : !o->mqa ? "mqa" : "mha");
    } else if (!o->supports || (!o->mqa && !o->mha)) {
        return mla_errorf(MLA_ERR_FORMAT, "%s: mla_attn_ops needs supports and at least one of mqa, mha", who);
    }
    return MLA_OK;
}

mla_status mla_backend_ops_check(const mla_backend_ops *o, const char *who)
{
    if (!who) who = "backend";
    if (!o) return mla_errorf(MLA_ERR_INVALID, "%s: no backend (NULL vtable)", who);
    if (o->abi_version != MLA_BACKEND_ABI_VERSION)
        return mla_errorf(MLA_ERR_VERSION, "%s: ABI version %u, expected %d (rebuild it against this mla/backend.h)",
                          who, (unsigned)o->abi_version, MLA_BACKEND_ABI_VERSION);
    const char *null = !o->create ? "create" : !o->supports ? "supports" : !o->load ? "load" : !o->reset ? "reset"
                     : !o->forward_mha ? "forward_mha" : !o->forward_mqa ? "forward_mqa" : !o->read_tap ? "read_tap"
                     : !o->destroy ? "destroy" : NULL;
    if (null) return mla_errorf(MLA_ERR_FORMAT, "%s: vtable entry %s is NULL (required)", who, null);
    return MLA_OK;
}
