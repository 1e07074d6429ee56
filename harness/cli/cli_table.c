/* cli_table.c: every command and option of mlacheck, once. The parser (cli_args.c), `mlacheck help`,
 * `CMD --help` and the manual page (cli_help.c) all read these rows, so usage cannot drift from the
 * code. Adding a command: an options array, one row in cli_cmds and its function. */
#include "cli.h"

#include <string.h>

#define END {0, 0, 0, 0, 0, 0}
#define QUIET_VERBOSE                                                                                       \
    {"quiet", 'q', 1, CLI_FLAG, NULL, "no progress lines; the summary only when something failed"},          \
    {"verbose", 'v', 1, CLI_FLAG, NULL, "progress: every path of every check with its message, engine drive times"}

static const cli_opt run_opts[] = {
    {"suite", 's', 0, CLI_NAME, "NAME", "the suite: a name in suites/ or a path to a .suite file (default ci)"},
    {"case", 'c', 0, CLI_NAME, "NAME", "run only this case of the suite"},
    {"select", 'k', 1, CLI_TEXT, "PATTERN",
     "run only the checks whose case/check/profile matches this glob (one without '/' may match any of the "
     "three); repeat for more"},
    {"engine", 'e', 0, CLI_NAME, "ENGINE", "every case on this engine instead of the suite's: ref, gpu or plugin:PATH.so"},
    {"inject", 'i', 0, CLI_LIST, "FAULT,...", "inject these faults into the candidate engines (mlacheck list names them)"},
    {"results", 'r', 0, CLI_DIR, "DIR", "write the results folder under DIR (default results/)"},
    {"golden", 'g', 0, CLI_DIR, "DIR", "the golden files (default golden/)"},
    {"kv-splits", 'K', 0, CLI_INT, "N", "KV split count passed to the engines (default 0: the engine's own)"},
    {"reseed", 'S', 0, CLI_INT, "K",
     "another valid workload: random prompts, text windows and staggered arrivals drawn from K (the models and "
     "explicit prompts stay; golden checks skip); default 0: the suite as written"},
    {"git-bisect", 'b', 0, CLI_FLAG, NULL, "exit 0 pass, 1 fail, 125 anything else, for git bisect run"},
    QUIET_VERBOSE,
    END};

static const cli_opt golden_opts[] = {
    {"suite", 's', 0, CLI_NAME, "NAME", "the suite whose goldens are written (default ci)"},
    {"update", 'u', 0, CLI_FLAG, NULL, "copy the candidates into golden/ (needs --reason)"},
    {"reason", 'm', 0, CLI_TEXT, "TEXT", "why the goldens change, recorded in golden/MANIFEST"},
    QUIET_VERBOSE,
    END};

static const cli_opt sweep_opts[] = {
    {"model", 'm', 0, CLI_NAME, "MODEL", "a built-in model or a Hugging Face folder (default tiny-v3)"},
    {"profile", 'p', 0, CLI_NAME, "PROFILE", "numerics profile (default fp64)"},
    {"engine", 'e', 0, CLI_NAME, "ENGINE", "ref, gpu or plugin:PATH.so (default ref)"},
    {"max-len", 'n', 0, CLI_INT, "N", "the longest kv length (default 512)"},
    {"step", 't', 0, CLI_INT, "N", "kv length step (default 16)"},
    {"inject", 'i', 0, CLI_LIST, "FAULT,...", "inject these faults into the engine"},
    QUIET_VERBOSE,
    END};

static const cli_opt dump_opts[] = {
    {"model", 'm', 0, CLI_NAME, "MODEL", "a built-in model or a Hugging Face folder (required)"},
    {"tokens", 't', 0, CLI_LIST, "ID,...", "the prompt's token ids"},
    {"tokens-from", 'T', 0, CLI_FILE, "FILE.h5", "the prompt of another dump (/tokens)"},
    {"random", 'R', 0, CLI_INT, "N", "a random prompt of N tokens"},
    {"path", 'p', 0, CLI_NAME, "PATH", "prefill, decode or chunked (default prefill)"},
    {"prefill-len", 'n', 0, CLI_INT, "N", "tokens prefilled before decoding (default 1)"},
    {"chunk", 'c', 0, CLI_INT, "N", "chunk length of the chunked path (default 7)"},
    {"block-size", 'b', 0, CLI_INT, "N", "paged KV cache block size (default 64)"},
    {"profile", 'f', 0, CLI_NAME, "PROFILE", "numerics profile (default fp64)"},
    {"engine", 'e', 0, CLI_NAME, "ENGINE", "ref, gpu or plugin:PATH.so (default ref)"},
    {"inject", 'i', 0, CLI_LIST, "FAULT,...", "inject these faults"},
    {"out", 'o', 0, CLI_FILE, "FILE.h5", "the dump to write (required)"},
    END};

static const cli_opt compare_opts[] = {
    {"check", 'c', 0, CLI_NAME, "CHECK", "whose rules of rules.tol judge the taps (default golden)"},
    {"profile", 'p', 0, CLI_NAME, "PROFILE", "the profile the rules are for (default: the candidate's)"},
    {"rules", 'r', 0, CLI_FILE, "FILE", "the rules file (default suites/rules.tol)"},
    END};

static const cli_opt bisect_opts[] = {
    {"replay", 'x', 0, CLI_FLAG, NULL, "replay each saved failure through the reference under each known fault"},
    END};

static const cli_opt none_opts[] = {END};

static const cli_opt ops_opts[] = {
    {"engine", 'e', 0, CLI_NAME, "ENGINE", "the operator under test: ref or plugin:PATH.so"},
    {"export", 'x', 0, CLI_DIR, "DIR", "write the cases' inputs as HDF5 into DIR instead of running them"},
    {"judge", 'j', 0, CLI_DIR, "DIR", "judge the outputs a kernel wrote into an export folder"},
    {"suite", 's', 0, CLI_NAME, "SUITE", "ops-smoke or ops-full (default ops-smoke)"},
    {"rules", 'r', 0, CLI_FILE, "FILE", "rules file for the judgement (default: the built-in limits)"},
    {"format", 'f', 0, CLI_NAME, "FORMAT", "only the cases of this KV format (bf16, fp8, fp8ds, f32)"},
    {"filter", 'k', 1, CLI_TEXT, "SUBSTR", "only the cases whose name contains SUBSTR"},
    {"results", 'o', 0, CLI_DIR, "DIR", "write the results folder under DIR (default results/)"},
    END};

static const cli_opt bench_opts[] = {
    {"model", 'm', 0, CLI_NAME, "MODEL", "a built-in model or a Hugging Face folder (default v3-layer)"},
    {"tokens", 'n', 0, CLI_INT, "N", "prefill tokens (default 1024)"},
    {"profile", 'p', 0, CLI_NAME, "PROFILE", "numerics profile (default fp64)"},
    {"engine", 'e', 0, CLI_NAME, "ENGINE", "ref, gpu or plugin:PATH.so (default ref)"},
    {"decode", 'd', 0, CLI_INT, "N", "decode steps after the prefill (default 0)"},
    {"repeat", 'r', 0, CLI_INT, "N", "prefill runs, the median is printed (default 1)"},
    {"attn", 'a', 0, CLI_NAME, "exact|tc",
     "attention numerics (default exact); tc: the GPU engine's tensor-core kernels (P rounded to bf16 per key "
     "tile, as production kernels; refused where they cannot run), the reference emulating them"},
    {"kernels", 'K', 0, CLI_FLAG, NULL,
     "instead: the GPU attention kernels on performance.md's workloads (mla_gpu_bench, each checked against "
     "float64 first), torch eager / SDPA at the same shapes when torch is there, the roofline fractions"},
    {"quick", 'Q', 0, CLI_FLAG, NULL, "with --kernels: fewer workloads"},
    {"results", 'o', 0, CLI_DIR, "DIR", "with --kernels: write kernels.tsv, kernels-torch.tsv, kernels-roofline.svg "
                                        "under DIR (default results/)"},
    END};

static const cli_opt accuracy_opts[] = {
    {"model", 'm', 0, CLI_NAME, "MODEL", "a trained model folder or built-in (required)"},
    {"text", 't', 0, CLI_FILE, "FILE", "the text, as bytes (required)"},
    {"bos", 'b', 0, CLI_INT, "T", "a token put before each window (default none)"},
    {"window", 'w', 0, CLI_INT, "N", "tokens per window (default 256)"},
    {"windows", 'k', 0, CLI_INT, "K", "windows (default 8)"},
    {"path", 'P', 0, CLI_NAME, "PATH", "decode, prefill or chunked (default decode)"},
    {"prefill-len", 'n', 0, CLI_INT, "N", "tokens prefilled before decoding (default 32)"},
    {"chunk", 'c', 0, CLI_INT, "N", "chunk length of the chunked path (default 64)"},
    {"engine", 'e', 0, CLI_NAME, "ENGINE", "ref, gpu or plugin:PATH.so (default ref)"},
    {"profiles", 'p', 0, CLI_LIST, "PROFILE,...", "profiles against fp64 (default bf16,fp8kv,fp8ds,fp8w)"},
    {"out", 'o', 0, CLI_DIR, "DIR", "where accuracy.md, .tsv and growth.svg go (default results/accuracy-MODEL)"},
    END};

static const cli_opt calibrate_opts[] = {
    {"suite", 's', 0, CLI_NAME, "NAME", "a suite to run and measure; repeat for more (default ci)"},
    {"from", 'f', 0, CLI_FILE, "METRICS.tsv", "measure a finished run's metrics.tsv instead; repeat for more"},
    {"models", 'm', 0, CLI_NAME, "SUITE",
     "each row's model is its case's in SUITE: the lines carry model=(...) of the models measured"},
    {"engine", 'e', 0, CLI_NAME, "ENGINE", "ref, gpu or plugin:PATH.so (default: the suites')"},
    {"case", 'c', 0, CLI_NAME, "NAME", "run only this case"},
    {"kv-splits", 'K', 0, CLI_INT, "N", "KV split count passed to the engines"},
    {"k", 'k', 0, CLI_NUM, "X", "proposed limit = X times the measured maximum (default 3)"},
    {"reseeds", 'S', 0, CLI_INT, "N",
     "measure N workloads of each suite: as written and under --reseed 1 .. N-1 (default 1: as written)"},
    {"out", 'o', 0, CLI_FILE, "FILE.tsv", "the calibration table (default suites/calibration/SUITE.tsv)"},
    {"rules-out", 'R', 0, CLI_FILE, "FILE.tol", "the proposed rules.tol lines (default: the table's name, .tol)"},
    {"results", 'r', 0, CLI_DIR, "DIR", "where the runs' results folders go (default results/)"},
    {"quiet", 'q', 1, CLI_FLAG, NULL, "do not print the table"},
    END};

static const cli_opt write_hf_opts[] = {
    {"model", 'm', 0, CLI_NAME, "MODEL", "a built-in model or a Hugging Face folder (required)"},
    {"out", 'o', 0, CLI_DIR, "DIR", "the folder to write (required)"},
    END};

static const cli_opt help_opts[] = {
    {"man", 'M', 0, CLI_FLAG, NULL, "write the manual page (roff) to stdout: mlacheck help --man > mlacheck.1"},
    {"commands", 'C', 0, CLI_FLAG, NULL, "list the command names, one a line"},
    END};

static const cli_opt clean_opts[] = {
    {"keep", 'k', 0, CLI_INT, "N", "keep the newest N run folders (required)"},
    {"results", 'r', 0, CLI_DIR, "DIR", "the results folder (default results/)"},
    {"dry-run", 'n', 0, CLI_FLAG, NULL, "list what would be removed, remove nothing"},
    END};

const cli_cmd cli_cmds[] = {
    {"run", cli_run, "", "run a suite of checks into a results folder (the default command)", run_opts,
     "Progress goes to stderr: on a terminal a live line, otherwise one line per check as it finishes "
     "(verdict, case / check / profile, seconds) and a heartbeat with the elapsed time and an ETA every "
     "10 s (MLACHECK_HEARTBEAT_S sets the interval). Names (suite, case, engine, plugin path, fault, "
     "-k pattern) are checked before anything runs or any folder is written."},
    {"golden", cli_golden, "", "write golden candidates to results/golden-staging/, or update golden/", golden_opts, NULL},
    {"sweep", cli_sweep, "", "decode vs prefill along the kv length; prints the first failing length", sweep_opts, NULL},
    {"dump", cli_dump, "", "run one prompt through an engine and write every tap to an HDF5 dump", dump_opts, NULL},
    {"compare", cli_compare, "REFERENCE.h5 CANDIDATE.h5", "compare two dumps tap by tap under the rules", compare_opts,
     NULL},
    {"bisect", cli_bisect, "RESULTS_DIR", "name the first diverging layer, tap and op of each failure of a run",
     bisect_opts,
     "To bisect commits instead: git bisect run <a script that builds and runs mlacheck run --git-bisect>."},
    {"report", cli_report, "RESULTS_DIR",
     "rebuild a results folder's report: from its journal when the run did not finish (INCOMPLETE), else render it "
     "again", none_opts, NULL},
    {"list", cli_list, "", "list models, profiles, engines, faults, checks and suites", none_opts, NULL},
    {"ops", cli_ops, "", "the attention operator cases through ref, a plugin, or an export / judge folder", ops_opts,
     "Give exactly one of --engine, --export, --judge."},
    {"bench", cli_bench, "", "end-to-end forward time of one engine on one model; --kernels: the GPU kernels", bench_opts, NULL},
    {"accuracy", cli_accuracy, "", "bits per byte, KL and top-1 of each profile against fp64 on real text",
     accuracy_opts, NULL},
    {"calibrate", cli_calibrate, "", "measure the benign error of suites and propose rules.tol limits",
     calibrate_opts, NULL},
    {"write-hf", cli_write_hf, "", "write a model as a Hugging Face folder (config.json, bf16 safetensors)",
     write_hf_opts, NULL},
    {"clean", cli_clean, "", "remove all but the newest N run folders of results/", clean_opts,
     "Only folders named as runs (<UTC stamp>Z-<suite>-<4 hex>) go, newest by that stamp; other entries, "
     "symlinks and runs in progress (.tmp-) stay."},
    {"help", cli_help, "[COMMAND]", "this help, a command's help, or the manual page", help_opts, NULL},
    {0, 0, 0, 0, 0, 0}};

const cli_cmd *cli_cmd_find(const char *name)
{
    for (const cli_cmd *c = cli_cmds; c->name; c++)
        if (!strcmp(c->name, name)) return c;
    return NULL;
}
