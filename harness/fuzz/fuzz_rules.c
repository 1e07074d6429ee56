/* fuzz_rules.c: the rules.tol parser (harness/src/rules.c, mla_rules_parse): parses, then matches
 * taps against it (the compiled regexes run), or fails with MLA_ERR_FORMAT, a message located in the
 * origin, and no rules. Inputs that only time out (a slow regex) are findings too: -timeout. */
#include "fuzz_common.h"

#include "mlacheck/rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    mla_rules *r = NULL;
    mla_clear_error();
    mla_status st = mla_rules_parse(text, "fuzz.tol", &r);
    free(text);
    if (st == MLA_OK) {
        static const char *taps[] = {"L0/attn_out", "L12/moe/expert_out", "logits", "", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa!"};
        static const char *profiles[] = {"fp64", "bf16", "fp8ds", ""};
        for (size_t i = 0; i < sizeof taps / sizeof taps[0]; i++)
            for (size_t k = 0; k < sizeof profiles / sizeof profiles[0]; k++) {
                (void)mla_rules_match(r, taps[i], profiles[k], "golden");
                (void)mla_rules_match_model(r, taps[i], profiles[k], "cross", "tiny-v3");
            }
        if (mla_rules_count(r) < 0) abort();
        mla_rules_free(r);
    } else if (st != MLA_ERR_FORMAT || strncmp(mla_last_error(), "fuzz.tol:", 9) != 0 || r != NULL) {
        fprintf(stderr, "fuzz_rules: status %d, message \"%s\"\n", (int)st, mla_last_error());
        abort();
    }
    return 0;
}
