/* probe_harness.c: the installed harness library loads the installed smoke suite. */
#include "mlacheck/suite.h"

#include <stdio.h>

int main(void)
{
    mla_suite *s = NULL;
    if (mla_suite_load(MLACHECK_SUITES, "smoke", &s) != MLA_OK) {
        fprintf(stderr, "probe_harness: %s\n", mla_last_error());
        return 1;
    }
    printf("suite %s: %d cases\n", s->name, s->n_cases);
    int ok = s->n_cases > 0;
    mla_suite_free(s);
    return ok ? 0 : 1;
}
