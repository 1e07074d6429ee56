/* cli_write_hf.c: `mlacheck write-hf --model M --out DIR`: a model (a built-in, or an HF folder
 * re-written) as a Hugging Face folder with the project's HF writer, every tensor in its source
 * dtype (bf16 weights, f32 e_score_correction_bias), so transformers (golden/oracle/make_oracle.py),
 * vLLM or any other engine can load exactly the weights the suites use. */
#include "cli.h"

#include "mla_model/model.h"

#include <getopt.h>
#include <stdio.h>

int cli_write_hf(int argc, char **argv)
{
    const char *model = NULL, *out = NULL;
    cli_parser p;
    cli_parser_init(&p, "write-hf", argc, argv);
    for (int c; (c = cli_next(&p));) {
        if (c < 0) return p.exit;
        if (c == 'm') model = optarg;
        else if (c == 'o') out = optarg;
        else return cli_unhandled(&p, c);
    }
    if (optind < argc || !model || !out) {
        fprintf(stderr, "usage: mlacheck write-hf --model M --out DIR\n");
        return CLI_EXIT_USAGE;
    }
    mla_model *m = NULL;
    mla_status st = mla_model_open(model, &m);
    if (!st) st = mla_model_write_hf(m, out, MLA_F64, 0);
    if (st) {
        fprintf(stderr, "mlacheck write-hf: %s\n", mla_last_error());
        mla_model_free(m);
        return cli_exit_for(st);
    }
    char h[17];
    mla_model_weights_hash(m, h);
    printf("%s -> %s: %d tensors, weights_hash %s\n", model, out, mla_model_tensor_count(m), h);
    mla_model_free(m);
    return CLI_EXIT_PASS;
}
