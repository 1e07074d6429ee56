/* rules.h: tolerance rules (suites/rules.tol), data rather than code.
 *
 *   # tap-regex   profile-regex   check-regex   key=value ...
 *   attn_.*       fp64            golden        rel_l2=1e-13 cos_diff=1e-14
 *   .*            .*              .*            rel_l2=1e-12
 *
 * Regexes are POSIX extended, anchored at both ends (written "x" means "^(x)$"), and hold no spaces.
 * The FIRST matching line wins, so specific lines go before general ones and a catch-all goes last.
 * Keys are the fields of compare.h's mla_cmp_limits (MLA_CMP_LIMIT_LIST, and ulp_dtype), documented
 * there: a is the reference, b the candidate, and relative measures divide by the reference. A limit
 * <= 0 means "not checked"; ulp_dtype is a dtype name (bf16, e4m3fn, ...) and is required with ulp_p99.
 * model=REGEX is a fourth matcher, not a limit: the line applies only to comparisons on a model whose
 * name (a built-in, or an HF folder's last component) matches, e.g. model=trained-.* for the trained
 * family, whose low-precision noise is several fold below the random models'. */
#ifndef MLACHECK_RULES_H
#define MLACHECK_RULES_H

#include "mla/mla.h"
#include "mlacheck/compare.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One rule's limits: the comparison's limits (compare.h documents each field) and where they were
 * written. */
typedef struct mla_rule_limits {
    mla_cmp_limits lim;
    int line; /* line of the rule in its file (for messages) */
} mla_rule_limits;

typedef struct mla_rules mla_rules;

/* Reads a rules file; every error is MLA_ERR_FORMAT naming path:line. */
mla_status mla_rules_load(const char *path, mla_rules **out);
mla_status mla_rules_parse(const char *text, const char *origin, mla_rules **out);
void mla_rules_free(mla_rules *r);

/* The limits of the first rule matching all three names; NULL when none matches (the caller treats
 * that as an error: every compared tensor must be budgeted). Valid while r lives. */
const mla_rule_limits *mla_rules_match(const mla_rules *r, const char *tap, const char *profile, const char *check);
/* The same for a comparison on model (NULL: lines with a model= matcher never match). */
const mla_rule_limits *mla_rules_match_model(const mla_rules *r, const char *tap, const char *profile,
                                             const char *check, const char *model);
int mla_rules_count(const mla_rules *r);
const char *mla_rules_origin(const mla_rules *r);

#ifdef __cplusplus
}
#endif
#endif
