/* fileio.h: copies, moves and replacements that never leave a half-written file under its final
 * name (no shell: paths are never parsed by anything but the kernel). */
#ifndef MLACHECK_FILEIO_H
#define MLACHECK_FILEIO_H

#include "mla/mla.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flush a folder's entries (after a rename into it). */
mla_status mla_fio_fsync_dir(const char *dir);
/* Copy src over dst atomically: written to a temporary name in dst's folder, fsync'd, renamed over
 * dst, the folder fsync'd. On any failure dst is untouched and the temporary removed. */
mla_status mla_fio_replace(const char *src, const char *dst);
/* Write n bytes over dst atomically, the same way. */
mla_status mla_fio_write_atomic(const char *dst, const void *data, size_t n);
/* dst's text (none when it does not exist) with n bytes appended, replaced atomically: an
 * interrupted append leaves the old file whole. */
mla_status mla_fio_append_atomic(const char *dst, const void *data, size_t n);
/* Move src to dst: rename(), or across file systems (EXDEV) mla_fio_move_copy. */
mla_status mla_fio_move(const char *src, const char *dst);
/* The cross-device move: mla_fio_replace, then unlink src (src stays when the copy failed). */
mla_status mla_fio_move_copy(const char *src, const char *dst);
/* Every regular file under src_dir (recursively) replaced into dst_dir at the same relative path,
 * each with mla_fio_replace; folders are created as needed. skip (may be NULL): a relative path
 * left out (the caller writes it last). */
mla_status mla_fio_replace_tree(const char *src_dir, const char *dst_dir, const char *skip);

#ifdef __cplusplus
}
#endif
#endif
