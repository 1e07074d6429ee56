/* hash.c: 64-bit FNV-1a (mla/hash.h). */
#include "mla_core/hash.h"

#define FNV1A_PRIME 0x100000001b3ull

uint64_t mla_fnv1a(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV1A_PRIME;
    return h;
}

uint64_t mla_fnv1a_str(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (uint8_t)*s) * FNV1A_PRIME;
    return h;
}

uint64_t mla_fnv1a_u32(uint64_t h, uint32_t x)
{
    for (int i = 0; i < 4; i++) h = (h ^ ((x >> (8 * i)) & 0xff)) * FNV1A_PRIME;
    return h;
}

uint64_t mla_fnv1a_u64(uint64_t h, uint64_t x)
{
    for (int i = 0; i < 8; i++) h = (h ^ ((x >> (8 * i)) & 0xff)) * FNV1A_PRIME;
    return h;
}
