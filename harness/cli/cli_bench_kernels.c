/* cli_bench_kernels.c: `mlacheck bench --kernels`: the GPU attention kernels on the workloads of
 * performance.md in one run: mla_gpu_bench (each kernel checked against the float64 reference, then
 * timed with device events; its table and DIR/kernels.tsv), then, when torch and a CUDA device are
 * there, what users would run instead at the same shapes (gpu/bench/torch_side_by_side.py:
 * DIR/kernels-torch.tsv), then the fraction of the roofline reached (gpu/bench/roofline.py, the plot
 * DIR/kernels-roofline.svg where gnuplot is installed) and each speed target met or missed
 * (gpu/bench/targets.py). mla_gpu_bench is the one next to this mlacheck
 * (../gpu/mla_gpu_bench in the build tree) or $MLA_GPU_BENCH. Exit: mla_gpu_bench's (0; 1 a kernel
 * failed its check; 3 a device error; 77 no device, or no GPU engine built); a missing torch or gnuplot
 * leaves their parts out with a line saying so, never a failure of the kernels. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#ifndef MLA_SOURCE_DIR
#define MLA_SOURCE_DIR "."
#endif

/* Runs argv (argv[0] looked up in PATH when it has no '/'), stdout and stderr shared; its exit status,
 * or -1 when it could not be started or died by a signal. */
static int run_child(char *const argv[])
{
    pid_t pid;
    int rc = strchr(argv[0], '/') ? posix_spawn(&pid, argv[0], NULL, NULL, argv, environ)
                                   : posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (rc != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The mla_gpu_bench to run: $MLA_GPU_BENCH, else ../gpu/mla_gpu_bench beside this executable. */
static int find_bench(char *out, size_t n)
{
    const char *env = getenv("MLA_GPU_BENCH");
    if (env && *env) return snprintf(out, n, "%s", env) < (int)n ? 0 : -1;
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return -1;
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return -1;
    *slash = 0;
    return snprintf(out, n, "%s/../gpu/mla_gpu_bench", self) < (int)n ? 0 : -1;
}

int cli_bench_kernels(int quick, const char *results)
{
    char bench[PATH_MAX + 32], tsv[PATH_MAX], torch_tsv[PATH_MAX], svg[PATH_MAX];
    if (find_bench(bench, sizeof bench)) {
        fprintf(stderr, "mlacheck bench --kernels: cannot locate mla_gpu_bench (set MLA_GPU_BENCH)\n");
        return CLI_EXIT_SKIP;
    }
    if (access(bench, X_OK) != 0) {
        fprintf(stderr,
                "mlacheck bench --kernels: %s: %s (the GPU engine is not built: configure with -DMLA_GPU=cuda or "
                "-DMLA_GPU=hip, or set MLA_GPU_BENCH): skipped\n",
                bench, strerror(errno));
        return CLI_EXIT_SKIP;
    }
    if (mkdir(results, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "mlacheck bench --kernels: results folder %s: %s\n", results, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    if (snprintf(tsv, sizeof tsv, "%s/kernels.tsv", results) >= (int)sizeof tsv ||
        snprintf(torch_tsv, sizeof torch_tsv, "%s/kernels-torch.tsv", results) >= (int)sizeof torch_tsv ||
        snprintf(svg, sizeof svg, "%s/kernels-roofline.svg", results) >= (int)sizeof svg) {
        fprintf(stderr, "mlacheck bench --kernels: results folder name too long: %s\n", results);
        return CLI_EXIT_USAGE;
    }
    remove(tsv); /* a table left from an earlier run must not pass for this one's */
    fflush(stdout);
    char *bargv[] = {bench, "--tsv", tsv, quick ? "--quick" : NULL, NULL};
    int rc = run_child(bargv);
    if (rc < 0) {
        fprintf(stderr, "mlacheck bench --kernels: %s did not run to an exit (could not start, or a signal)\n", bench);
        return CLI_EXIT_ENGINE;
    }
    if (rc != 0) {
        fprintf(stderr, "mlacheck bench --kernels: %s exited %d%s\n", bench, rc,
                rc == 77 ? " (no GPU device): skipped" : rc == 1 ? " (a kernel failed its check against the reference)" : "");
        return rc == 77 ? CLI_EXIT_SKIP : rc == 1 ? CLI_EXIT_FAIL : CLI_EXIT_ENGINE;
    }
    struct stat st;
    if (stat(tsv, &st) != 0 || st.st_size == 0) {
        fprintf(stderr, "mlacheck bench --kernels: %s exited 0 but wrote no table at %s\n", bench, tsv);
        return CLI_EXIT_ENGINE;
    }
    char torch_py[PATH_MAX], roof_py[PATH_MAX], targets_py[PATH_MAX];
    snprintf(torch_py, sizeof torch_py, "%s/gpu/bench/torch_side_by_side.py", MLA_SOURCE_DIR);
    snprintf(roof_py, sizeof roof_py, "%s/gpu/bench/roofline.py", MLA_SOURCE_DIR);
    snprintf(targets_py, sizeof targets_py, "%s/gpu/bench/targets.py", MLA_SOURCE_DIR);
    fflush(stdout);
    char *targv[] = {"python3", torch_py, tsv, "--out", torch_tsv, NULL};
    int trc = run_child(targv);
    if (trc == 77) printf("\ntorch side by side: left out (no torch with a CUDA device in python3)\n");
    else if (trc != 0) printf("\ntorch side by side: left out (%s exited %d)\n", torch_py, trc);
    fflush(stdout);
    char *rargv[] = {"python3", roof_py, tsv, "--svg", svg, NULL};
    int rrc = run_child(rargv);
    if (rrc == 3) printf("roofline plot: left out (no gnuplot)\n");
    else if (rrc != 0) printf("roofline: left out (%s exited %d)\n", roof_py, rrc);
    fflush(stdout);
    char *gargv[] = {"python3", targets_py, tsv, trc == 0 ? "--torch" : NULL, torch_tsv, NULL};
    int grc = run_child(gargv);
    if (grc != 0) printf("targets: left out (%s exited %d)\n", targets_py, grc);
    printf("\nkernels: %s%s%s%s%s\n", tsv, trc == 0 ? ", " : "", trc == 0 ? torch_tsv : "", rrc == 0 ? ", " : "",
           rrc == 0 ? svg : "");
    return CLI_EXIT_PASS;
}
