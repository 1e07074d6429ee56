/* backend_common.c: defaults and names shared by every engine. */
#include "mla/backend.h"

#include <string.h>

static const char *const fault_names[MLA_FAULT_COUNT] = {
#define MLA_FAULT_NAME(e, n, d) n,
    MLA_FAULT_LIST(MLA_FAULT_NAME)
#undef MLA_FAULT_NAME
};

static const char *const fault_descriptions[MLA_FAULT_COUNT] = {
#define MLA_FAULT_DESC(e, n, d) d,
    MLA_FAULT_LIST(MLA_FAULT_DESC)
#undef MLA_FAULT_DESC
};

const char *mla_fault_description(int bit)
{
    return bit >= 0 && bit < MLA_FAULT_COUNT ? fault_descriptions[bit] : "?";
}

const char *mla_fault_name(int bit) { return bit >= 0 && bit < MLA_FAULT_COUNT ? fault_names[bit] : "?"; }

int mla_fault_from_name(const char *name, unsigned *mask)
{
    for (int i = 0; i < MLA_FAULT_COUNT; i++)
        if (strcmp(fault_names[i], name) == 0) {
            *mask |= 1u << i;
            return 0;
        }
    return -1;
}

void mla_run_opts_default(mla_run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->profile = MLA_PROFILE_FP64;
    o->block_size = 64;
    o->max_seqs = 8;
    o->max_seq_len = 4096;
    o->fp8_kind = MLA_FP8_FN;
    o->kv_scale = 1.0;
    o->q_scale = 1.0;
    o->seed = 1234;
}

int64_t mla_batch_tokens(const mla_batch *b)
{
    int64_t n = 0;
    for (int i = 0; i < b->n_seqs; i++) n += b->n_new[i];
    return n;
}

static const char *const profile_names[MLA_PROFILE_COUNT] = {
#define MLA_PROFILE_NAME(e, n) n,
    MLA_PROFILE_LIST(MLA_PROFILE_NAME)
#undef MLA_PROFILE_NAME
};

const char *mla_profile_name(mla_profile p) { return (unsigned)p < MLA_PROFILE_COUNT ? profile_names[p] : "?"; }

int mla_profile_from_name(const char *name, mla_profile *out)
{
    for (int i = 0; i < MLA_PROFILE_COUNT; i++)
        if (strcmp(profile_names[i], name) == 0) {
            *out = (mla_profile)i;
            return 0;
        }
    return -1;
}
