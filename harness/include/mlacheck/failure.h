/* failure.h: the saved inputs of a failing comparison (results/<run-id>/failures/<name>.txt), written
 * by the runner and read back by bisect --replay through one key table, as "key = value" lines:
 *
 *   # comment lines (a replay command for a person)
 *   suite = ci
 *   case = tiny-v3-golden
 *   check = golden               the check name as reported (may carry "@engine")
 *   profile = fp64
 *   path = prefill               the verdict's path (prefill, decode, chunked, decoded)
 *   model = tiny-v3
 *   block_size = 64
 *   prefill_len = 5
 *   chunk = 0                    the case's chunk (0: not set; the runner then uses 7)
 *   faults = 0x0                 the injected faults (bits of mla/faults.h MLA_FAULT_LIST)
 *   tokens = 3,1,4,1,5
 *
 * Every key appears once, in this order when written; a reader accepts any order. */
#ifndef MLACHECK_FAILURE_H
#define MLACHECK_FAILURE_H

#include <stdint.h>

#include "mla/mla.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(key, mla_failure field, kind) in file order. kind: TEXT, INT, HEX (unsigned), TOKENS. */
#define MLA_FAILURE_KEY_LIST(X)                                                                      \
    X("suite", suite, TEXT) X("case", case_name, TEXT) X("check", check, TEXT)                       \
    X("profile", profile, TEXT) X("path", path, TEXT) X("model", model, TEXT)                        \
    X("block_size", block_size, INT) X("prefill_len", prefill_len, INT) X("chunk", chunk, INT)       \
    X("faults", faults, HEX) X("tokens", tokens, TOKENS)

/* One failure's inputs. A caller's struct only borrows its strings and tokens (owned_* NULL);
 * one filled by mla_failure_parse owns them until mla_failure_free. */
typedef struct mla_failure {
    const char *suite, *case_name, *check, *profile, *path, *model;
    int block_size, prefill_len, chunk;
    unsigned faults;
    const int32_t *tokens;
    int64_t n_tokens;
    char *owned_text;
    int32_t *owned_tokens;
} mla_failure;

/* The file's text into *out (NUL-terminated; caller frees). MLA_ERR_INVALID when a text field is
 * NULL or holds a line break. */
mla_status mla_failure_format(const mla_failure *f, char **out);

/* Parses text (origin names it in messages) into *out (caller frees with mla_failure_free).
 * MLA_ERR_FORMAT naming origin:line for an unknown, repeated or missing key or a bad value. */
mla_status mla_failure_parse(const char *text, const char *origin, mla_failure *out);
/* mla_failure_parse of a file; MLA_ERR_NOT_FOUND when it is missing. */
mla_status mla_failure_load(const char *path, mla_failure *out);
void mla_failure_free(mla_failure *f); /* leaves *f empty; NULL is fine */

#ifdef __cplusplus
}
#endif
#endif
