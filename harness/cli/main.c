/* main.c: the mlacheck command line. Only this file chooses exit codes:
 *   0 pass, 1 numerical failure, 2 bad input or usage, 3 engine error, 77 skipped;
 *   with --git-bisect: 0 good, 1 bad, 125 skip (anything that is neither). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: mlacheck <command> [options]\n"
          "commands:\n"
          "  run      [--suite ci] [--engine ref|gpu|plugin:lib.so] [--case NAME] [--inject FAULT[,FAULT]]\n"
          "           [--results DIR] [--golden DIR] [--kv-splits N] [--git-bisect] [--quiet]\n"
          "  dump     --model M --tokens 3,1,4 [--path prefill|decode|chunked] [--prefill-len N] [--chunk N]\n"
          "           [--profile fp64] [--engine ref] [--inject F] --out FILE.h5\n"
          "  compare  A.h5 B.h5 [--check golden] [--profile P] [--rules FILE] [--map FILE]\n"
          "  golden   [--suite ci] [--update --reason TEXT]\n"
          "  sweep    --model M [--profile P] [--engine E] [--max-len N] [--step N] [--inject F]\n"
          "  bisect   RESULTS_DIR [--git]\n"
          "  report   RESULTS_DIR\n"
          "  list\n"
          "  ops      [--engine plugin:lib.so | --export DIR | --judge DIR] [--suite ops-smoke|ops-full] [--results DIR]\n"
          "  bench    [--model v3-layer] [--tokens 1024] [--profile fp64] [--engine ref] [--decode N] [--repeat N]\n"
          "  accuracy --model M --text FILE [--bos T] [--window N] [--windows K] [--path decode] [--prefill-len 32]\n"
          "           [--chunk N] [--engine E] [--profiles P,...] [--out DIR]\n"
          "  calibrate [--suite ci]... [--from METRICS.tsv]... [--engine E] [--case NAME] [--k 3]\n"
          "           [--out suites/calibration/SUITE.tsv] [--rules-out FILE.tol] [--results DIR]\n"
          "  write-hf --model M --out DIR   (a built-in as a Hugging Face folder: config.json, bf16 safetensors)\n"
          "  clean    --keep N [--results DIR] [--dry-run]   (all but the newest N run folders removed)\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        /* the main job: the default suite */
        char *args[] = {"run", NULL}; /* as `mlacheck run`: argv[0] is the command's name */
        return cli_run(1, args);
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "run")) return cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "dump")) return cli_dump(argc - 1, argv + 1);
    if (!strcmp(cmd, "compare")) return cli_compare(argc - 1, argv + 1);
    if (!strcmp(cmd, "golden")) return cli_golden(argc - 1, argv + 1);
    if (!strcmp(cmd, "sweep")) return cli_sweep(argc - 1, argv + 1);
    if (!strcmp(cmd, "bisect")) return cli_bisect(argc - 1, argv + 1);
    if (!strcmp(cmd, "report")) return cli_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "list")) return cli_list(argc - 1, argv + 1);
    if (!strcmp(cmd, "ops")) return cli_ops(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cli_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "accuracy")) return cli_accuracy(argc - 1, argv + 1);
    if (!strcmp(cmd, "calibrate")) return cli_calibrate(argc - 1, argv + 1);
    if (!strcmp(cmd, "write-hf")) return cli_write_hf(argc - 1, argv + 1);
    if (!strcmp(cmd, "clean")) return cli_clean(argc - 1, argv + 1);
    fprintf(stderr, "mlacheck: unknown command '%s'\n", cmd);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
