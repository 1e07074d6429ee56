/* fuzz_suite.c: libFuzzer target for the suite and rules parsers (clang only; not part of ctest).
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iharness/include -Ireference/include \
 *     harness/tests/fuzz_suite.c harness/src/suite.c harness/src/rules.c reference/src/core/{status,backend_common,dtype}.c -lm -o fuzz_suite
 *   cp -r suites corpus && ./fuzz_suite -max_total_time=60 corpus   (the shipped files seed it)
 * Every input must parse to MLA_OK or fail with MLA_ERR_FORMAT and a located message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlacheck/rules.h"
#include "mlacheck/suite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* an embedded NUL just ends the text, as it would for a file read */
    mla_suite *s = NULL;
    mla_status st = mla_suite_parse(text, "fuzz.suite", &s);
    if (st == MLA_OK) {
        for (int i = 0; i < s->n_cases; i++)
            if (!s->cases[i].model || s->cases[i].n_prompts < 1 || s->cases[i].n_checks < 1) abort();
        mla_suite_free(s);
    } else if (st != MLA_ERR_FORMAT || strncmp(mla_last_error(), "fuzz.suite:", 11) != 0 || s != NULL) {
        abort();
    }
    /* The same bytes as a rules file. */
    mla_rules *r = NULL;
    st = mla_rules_parse(text, "fuzz.tol", &r);
    if (st == MLA_OK) {
        (void)mla_rules_match(r, "attn_out", "fp64", "golden");
        mla_rules_free(r);
    } else if (st != MLA_ERR_FORMAT || r != NULL) {
        abort();
    }
    free(text);
    return 0;
}
