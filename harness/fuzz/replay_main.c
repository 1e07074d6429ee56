/* replay_main.c: main() of fuzz_replay_<target>: runs the target's LLVMFuzzerTestOneInput on every
 * file named or inside a named folder (the committed corpus and crash files), so that each input a
 * fuzzer once crashed on stays a regression test in every build, gcc included (under the sanitizer
 * build, memory errors too). Fails when a path is missing or no input was run. */
#include "fuzz_common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            buf = realloc(buf, cap);
            if (!buf) abort();
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        if (k == 0) break;
        n += k;
    }
    fclose(f);
    fprintf(stderr, "replay %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int name_cmp(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int main(int argc, char **argv)
{
    int ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (run_file(argv[i])) return 1;
            ran++;
            continue;
        }
        struct dirent **ents;
        int n = scandir(argv[i], &ents, NULL, name_cmp);
        if (n < 0) {
            perror(argv[i]);
            return 1;
        }
        for (int k = 0; k < n; k++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], ents[k]->d_name);
            if (ents[k]->d_name[0] != '.' && stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
                if (run_file(p)) return 1;
                ran++;
            }
            free(ents[k]);
        }
        free(ents);
    }
    printf("fuzz_replay: %d inputs, no crash\n", ran);
    return ran > 0 ? 0 : 1;
}
