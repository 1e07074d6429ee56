/* fuzz_suite.c: the suite parser (harness/src/suite.c, mla_suite_parse). Every input parses to a
 * suite whose cases each have a model, a prompt and a check, or fails with MLA_ERR_FORMAT, a message
 * located in the origin, and no suite. (Was harness/tests/fuzz_suite.c, which fuzzed this and the
 * rules parser together outside the build.) */
#include "fuzz_common.h"

#include "mlacheck/suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    mla_suite *s = NULL;
    mla_clear_error();
    mla_status st = mla_suite_parse(text, "fuzz.suite", &s);
    free(text);
    if (st == MLA_OK) {
        for (int i = 0; i < s->n_cases; i++)
            if (!s->cases[i].model || s->cases[i].n_prompts < 1 || s->cases[i].n_checks < 1) abort();
        mla_suite_free(s);
    } else if (st != MLA_ERR_FORMAT || strncmp(mla_last_error(), "fuzz.suite:", 11) != 0 || s != NULL) {
        fprintf(stderr, "fuzz_suite: status %d, message \"%s\"\n", (int)st, mla_last_error());
        abort();
    }
    return 0;
}
