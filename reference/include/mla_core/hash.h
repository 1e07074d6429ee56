/* mla_core/hash.h: the one non-cryptographic hash of mlacheck, 64-bit FNV-1a (Fowler, Noll, Vo). It names
 * built-in weight streams (builtin.c), fingerprints a model's weights (mla_model_weights_hash) and
 * golden file names, so its output is part of stored data: never change it.
 * Start from MLA_FNV1A_INIT and feed bytes in order; integers go in little-endian. */
#ifndef MLA_HASH_H
#define MLA_HASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_FNV1A_INIT 0xcbf29ce484222325ull

uint64_t mla_fnv1a(uint64_t h, const void *p, size_t n);
uint64_t mla_fnv1a_str(uint64_t h, const char *s); /* the bytes of s, without its NUL */
uint64_t mla_fnv1a_u32(uint64_t h, uint32_t x);    /* 4 bytes, little-endian */
uint64_t mla_fnv1a_u64(uint64_t h, uint64_t x);    /* 8 bytes, little-endian */

#ifdef __cplusplus
}
#endif
#endif
