/* fuzz_safetensors.c: the safetensors header and the shard index of a Hugging Face folder
 * (reference/src/model/safetensors.c), through mla_model_open as the CLI opens a checkpoint.
 * Input: byte 0 picks which file the rest becomes. Even: model.safetensors of a folder holding the
 * micro config.json. Odd: model.safetensors.index.json of a folder holding the micro config and the
 * micro model in two shards. Whatever the bytes, the open either succeeds, and then every tensor
 * converts to f64 and hashes (its view lies inside its file), or fails with a message naming the
 * folder (its config.json, a file in it, or a field of the index) and no model. */
#include "fuzz_common.h"

#include "mla/mla.h"
#include "mla_model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_open(const char *dir)
{
    mla_model *m = NULL;
    mla_clear_error();
    mla_status st = mla_model_open(dir, &m);
    if (getenv("MLA_FUZZ_VERBOSE")) fprintf(stderr, "  status %d: %s\n", (int)st, st ? mla_last_error() : "ok");
    if (st != MLA_OK) {
        if (m || !strstr(mla_last_error(), dir)) {
            fprintf(stderr, "fuzz_safetensors: status %d, model %p, message \"%s\" does not name %s\n", (int)st,
                    (void *)m, mla_last_error(), dir);
            abort();
        }
        return;
    }
    for (int i = 0; i < mla_model_tensor_count(m); i++) {
        double *v = NULL;
        int64_t n = 0;
        if (mla_model_tensor_f64(m, mla_model_tensor_name(m, i), &v, &n) != MLA_OK) {
            fprintf(stderr, "fuzz_safetensors: an opened model's tensor %s: %s\n", mla_model_tensor_name(m, i),
                    mla_last_error());
            abort();
        }
        free(v);
    }
    char h[17];
    if (mla_model_weights_hash(m, h) != MLA_OK) abort();
    mla_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *single, *sharded;
    if (!single) {
        single = strdup(fuzz_dir("single"));
        sharded = strdup(fuzz_dir("sharded"));
        fuzz_write(single, "config.json", fuzz_micro_config, strlen(fuzz_micro_config));
        fuzz_write(sharded, "config.json", fuzz_micro_config, strlen(fuzz_micro_config));
        for (int p = 0; p < 2; p++) {
            size_t n;
            uint8_t *b = fuzz_micro_safetensors(p, 2, &n);
            char fn[64];
            fuzz_shard_name(fn, sizeof fn, p, 2);
            fuzz_write(sharded, fn, b, n);
            free(b);
        }
    }
    if (size < 1) return 0;
    if (data[0] % 2 == 0) {
        fuzz_write(single, "model.safetensors", data + 1, size - 1);
        check_open(single);
    } else {
        fuzz_write(sharded, "model.safetensors.index.json", data + 1, size - 1);
        check_open(sharded);
    }
    return 0;
}
