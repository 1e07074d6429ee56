/* crc32.c: zlib-compatible CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), table-driven, so
 * python's zlib.crc32(dataset_bytes) checks the `crc32` attribute of a golden dataset. */
#include "mlacheck/h5io.h"

/* The table is built by the compiler (8 shift/xor steps per entry), so there is no lazy init
 * and no data race between threads. */
#define CRC_STEP(c) (((c) & 1u) ? (0xEDB88320u ^ ((c) >> 1)) : ((c) >> 1))
#define CRC_ENTRY(i)                                                                              \
    CRC_STEP(CRC_STEP(CRC_STEP(CRC_STEP(CRC_STEP(CRC_STEP(CRC_STEP(CRC_STEP((uint32_t)(i)))))))))
#define CRC_R4(i) CRC_ENTRY(i), CRC_ENTRY((i) + 1), CRC_ENTRY((i) + 2), CRC_ENTRY((i) + 3)
#define CRC_R16(i) CRC_R4(i), CRC_R4((i) + 4), CRC_R4((i) + 8), CRC_R4((i) + 12)
#define CRC_R64(i) CRC_R16(i), CRC_R16((i) + 16), CRC_R16((i) + 32), CRC_R16((i) + 48)

static const uint32_t crc_table[256] = {CRC_R64(0), CRC_R64(64), CRC_R64(128), CRC_R64(192)};

uint32_t mla_h5_crc32(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}
