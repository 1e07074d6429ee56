/* write_hf.c: writes a built-in model as a Hugging Face folder with the project's HF writer
 * (mla_model_write_hf, reference/src/model/hf_writer.c), each tensor in its source dtype (bf16
 * weights, f32 e_score_correction_bias), so the folder holds exactly the built-in's weights and an
 * oracle made on it (make_oracle.py --from-folder) speaks for the built-in too. Not part of the build:
 *
 *   cc -std=c11 -O2 -Ireference/include golden/oracle/write_hf.c build/reference/libmla_model.a \
 *      build/reference/libmla_core.a -ljansson -lm -lpthread -o /tmp/write_hf
 *   /tmp/write_hf asym-v3 golden/oracle/asym-v3-hf */
#include "mla/mla.h"
#include "mla_model/model.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: write_hf BUILTIN DIR\n");
        return 2;
    }
    mla_model *m;
    mla_status st = mla_model_open(argv[1], &m);
    if (!st) st = mla_model_write_hf(m, argv[2], MLA_F64, 0);
    if (st) {
        fprintf(stderr, "write_hf: %s\n", mla_last_error());
        return 1;
    }
    char h[17];
    mla_model_weights_hash(m, h);
    printf("%s -> %s: %d tensors, weights_hash %s\n", argv[1], argv[2], mla_model_tensor_count(m), h);
    mla_model_free(m);
    return 0;
}
