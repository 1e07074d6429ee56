/* headers_only.c: every installed contract header compiles with only mlacheck::plugin_headers. */
#include "mla/abi_check.h"
#include "mla/attn_op.h"
#include "mla/backend.h"
#include "mla/config.h"
#include "mla/plugin.h"
#include "mla/quant.h"
#include "mla/weights.h"

int headers_only_abi(void) { return MLA_ATTN_ABI_VERSION * 100 + MLA_BACKEND_ABI_VERSION; }
