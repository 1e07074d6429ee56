/* fuzz_config.c: config.json (reference/src/model/config_json.c, mla_config_from_json). Every input
 * parses or fails with a message starting with its origin; a config that parses validates, writes
 * back (mla_config_to_json) to a text that parses again and writes back to the same text, and
 * answers tensor-shape queries. */
#include "fuzz_common.h"

#include "mla/mla.h"
#include "mla_model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ORIGIN "fuzz/config.json"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    mla_config c;
    mla_clear_error();
    mla_status st = mla_config_from_json(text, ORIGIN, &c);
    free(text);
    if (st != MLA_OK) {
        if (strncmp(mla_last_error(), ORIGIN ":", sizeof ORIGIN)) {
            fprintf(stderr, "fuzz_config: status %d, message \"%s\" does not start with the origin\n", (int)st,
                    mla_last_error());
            abort();
        }
        return 0;
    }
    if (mla_config_validate(&c, ORIGIN) != MLA_OK) {
        fprintf(stderr, "fuzz_config: parsed but does not validate: %s\n", mla_last_error());
        abort();
    }
    char *j1 = mla_config_to_json(&c);
    mla_config c2;
    if (!j1 || mla_config_from_json(j1, "written", &c2) != MLA_OK) {
        fprintf(stderr, "fuzz_config: the written config does not parse: %s\n%s\n", mla_last_error(),
                j1 ? j1 : "(null)");
        abort();
    }
    char *j2 = mla_config_to_json(&c2);
    if (!j2 || strcmp(j1, j2)) {
        fprintf(stderr, "fuzz_config: write, read, write differs:\n%s\n---\n%s\n", j1, j2 ? j2 : "(null)");
        abort();
    }
    static const char *names[] = {"model.embed_tokens.weight", "model.layers.0.self_attn.kv_b_proj.weight",
                                  "model.layers.1.mlp.experts.0.down_proj.weight_scale_inv",
                                  "model.layers.99999999.mlp.gate.weight", "lm_head.weight_scale_inv"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int nd;
        int64_t sh[MLA_MAX_DIMS];
        if (mla_config_tensor_shape(&c, names[i], &nd, sh) == 0 && (nd < 1 || nd > 2 || sh[0] < 0)) abort();
    }
    free(j1);
    free(j2);
    return 0;
}
