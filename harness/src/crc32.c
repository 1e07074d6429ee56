/* crc32.c: CRC-32 (IEEE 802.3) of dataset bytes, zlib's own, so python's zlib.crc32(dataset_bytes)
 * checks the `crc32` attribute of a golden dataset by definition. zlib takes uInt lengths: larger
 * buffers go in chunks. */
#include "mlacheck/h5io.h"

#include <zlib.h>

uint32_t mla_h5_crc32(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    uLong c = crc;
    while (n > 0) {
        uInt k = n > 0x40000000u ? 0x40000000u : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}
