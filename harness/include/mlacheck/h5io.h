/* h5io.h: golden dumps as HDF5 files, schema version 1 (golden/README.md is the full schema).
 * Lossless: f64/f32/i32/i64 as native HDF5 types, bf16/f16 as raw bits in uint16, fp8/ue8m0/u8 as
 * uint8; every dataset carries a `dtype` name and a zlib-compatible `crc32` of its stored bytes.
 * Only the HDF5 1.10 C API is used (no high-level library). */
#ifndef MLACHECK_H5IO_H
#define MLACHECK_H5IO_H

#include "mlacheck/dump.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes d to path (to path.tmp.<pid> first, sealed, then renamed over path when complete, so a
 * crash never leaves a half-written file under the final name). The model config is written as
 * mla_config_to_json(&d->cfg); every present tensor is checked against the config's tap shapes first
 * (MLA_ERR_SHAPE), so a written file always reads back. If d->meta.created is empty the current UTC
 * time is stored. Statuses: MLA_ERR_IO, MLA_ERR_SHAPE, MLA_ERR_INVALID, MLA_ERR_NOMEM. */
mla_status mla_h5_write(const char *path, const mla_dump *d);

/* Reads a whole dump; *out is NULL on error, else free with mla_dump_free. Checks the schema version
 * (MLA_ERR_VERSION), every crc32 (MLA_ERR_CHECKSUM), dtype names and stored types (MLA_ERR_FORMAT),
 * ranks and shapes against the config and the token count (MLA_ERR_SHAPE). A missing or unreadable
 * file is MLA_ERR_IO, a file that is not HDF5 or is truncated/corrupted MLA_ERR_FORMAT or MLA_ERR_IO;
 * the detail always names the file. A sealed file (see mla_h5_seal) whose seal does not match is
 * MLA_ERR_CHECKSUM (structure) or MLA_ERR_FORMAT (size). Datasets with unknown names are ignored. */
mla_status mla_h5_read(const char *path, mla_dump **out);

/* Reads only /meta: provenance into *meta (meta->model_config_json malloc'd, caller frees) and the
 * parsed config into *cfg (either may be NULL). Same version/format checks as mla_h5_read. */
mla_status mla_h5_read_meta(const char *path, mla_dump_meta *meta, mla_config *cfg);

/* Re-computes the whole-file seal (user block: file size + CRC-32 of the HDF5 structure outside the
 * datasets' raw data) of a file written by mla_h5_write, after it was edited in place with HDF5
 * tools. Readers check the seal before HDF5 parses the file, so damaged metadata is MLA_ERR_CHECKSUM
 * instead of a crash inside libhdf5. MLA_ERR_FORMAT when the file has no user block. */
mla_status mla_h5_seal(const char *path);

/* zlib-compatible CRC-32 (reflected polynomial 0xEDB88320): start with crc = 0 and chain calls,
 * exactly like zlib's crc32(crc, buf, len). */
uint32_t mla_h5_crc32(uint32_t crc, const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
