/* check_example.c: a template for the next check, compiled but not in the table.
 *
 * To add a check "prefill-twice-batched" (say):
 *   1. one row in MLA_SUITE_CHECK_LIST (harness/include/mlacheck/suite.h), where it should run:
 *        X(MLA_CHECK_EXAMPLE, "example", "what it compares, in one line",
 *          MLA_CHECK_NEEDS_PREFILL, chk_example)
 *      The name is what suites write in `checks = ...` and what rules.tol's check column matches
 *      ("example" for the reference engine, "example@gpu" and "example@plugin" for the others), so
 *      the rules file needs a line for it before suites can use it (the runner fails a tap that no
 *      rule covers). The needs column asks the runner for the group's dumps along those paths.
 *   2. one file like this one, with the function. It receives a chk_ctx (checks.h):
 *        c->engine, c->prof, c->g      the engine under test, the profile, the prompt group
 *        c->pre, c->dec, c->chk        the group's dumps the row asked for (NULL: not driven)
 *        c->dp, c->dd, c->dc           the drive options that made them
 *        c->check                      the verdict name for this engine
 *      It gets other dumps with chk_dumps (made once per key and shared with the other checks;
 *      borrowed: never free or change them) or chk_drive_fresh (a new run; the caller frees), compares
 *      with chk_compare_group (metric rows, verdict, failing inputs kept), and records errors and
 *      skips with chk_verdict_error and chk_verdict_skip. Nothing else is needed: the loop, the
 *      report and the exit code come from the runner and the CLI.
 *
 * The example: the engine's prefill of the group against the reference's prefill of the same
 * profile and prompts, without injected faults on the reference side (what cross-engine does for
 * the prefill path alone). */
#include "checks.h"

#include <string.h>

void chk_example(chk_ctx *c)
{
    if (!strcmp(c->engine, "ref")) {
        chk_verdict_skip(c->r, c->check, "prefill", "the reference against itself proves nothing");
        return;
    }
    mla_dump **ref;
    mla_status st = chk_dumps(c->r, "ref", c->prof, 0, c->g, &c->dp, &ref);
    if (st) {
        chk_verdict_error(c->r, c->check, "prefill", st);
        return;
    }
    chk_compare_group(c->r, c->check, "prefill", ref, c->pre, c->g->n, 0);
}
