/* abi_mismatch_plugin.c: a test-only plugin built as if against headers one ABI version ahead:
 * both vtables report abi_version + 1, so the loaders must refuse them with MLA_ERR_VERSION
 * (exit code 2) before calling any entry. Its entries are NULL: calling one would crash the test. */
#include "mla/attn_op.h"
#include "mla/plugin.h"

static const mla_backend_ops future_ops = {.abi_version = MLA_BACKEND_ABI_VERSION + 1, .name = "future"};
static const mla_attn_ops future_attn = {.abi_version = MLA_ATTN_ABI_VERSION + 1, .name = "future"};

MLA_PLUGIN_EXPORT const mla_backend_ops *mla_plugin_register(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &future_ops;
}

MLA_PLUGIN_EXPORT const mla_attn_ops *mla_attn_plugin_register(uint32_t host_attn_abi_version)
{
    (void)host_attn_abi_version;
    return &future_attn;
}
