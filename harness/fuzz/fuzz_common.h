/* fuzz_common.h: what the fuzz targets share (harness/fuzz/README.md): the libFuzzer entry, a scratch
 * folder on tmpfs, and a micro MLA model (a config.json and its safetensors bytes) small enough for a
 * seed corpus. Each target is one fuzz_<name>.c; the same file links into a libFuzzer binary (the
 * MLA_FUZZ build, clang) and into fuzz_replay_<name> (every build), which replays the committed
 * corpus and crash files under ctest. */
#ifndef MLA_FUZZ_COMMON_H
#define MLA_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A private scratch folder (/dev/shm when writable, else $TMPDIR or /tmp), made on first call and
 * removed at exit; sub (may be "") names a folder inside it, made too. Returns a static path. */
const char *fuzz_dir(const char *sub);
/* Writes n bytes to dir/name (replacing it); aborts on failure (the harness, not the input, failed). */
void fuzz_write(const char *dir, const char *name, const void *p, size_t n);
/* Removes dir/name if present. */
void fuzz_remove(const char *dir, const char *name);
/* data[0..size) as a malloc'd NUL-terminated string (an embedded NUL ends it, as in a file read). */
char *fuzz_text(const uint8_t *data, size_t size);

/* The micro model's config.json (deepseek_v2, 2 layers: one dense, one MoE with 2 experts). */
extern const char fuzz_micro_config[];
/* Its tensors as one safetensors file holding the tensors of part `part` of `parts` (in name order;
 * part 0 of 1 is the whole model), bf16 ones; malloc'd, *n bytes. Aborts on failure. */
uint8_t *fuzz_micro_safetensors(int part, int parts, size_t *n);

/* model.safetensors.index.json for the model split into `parts` shards (fuzz_shard_name); malloc'd. */
char *fuzz_micro_index(int parts);
/* "model-0000<part+1>-of-0000<parts>.safetensors" */
void fuzz_shard_name(char *buf, size_t n, int part, int parts);

#endif
