/* mla.h: status codes and error detail shared by every mlacheck module.
 * Library code returns an mla_status and never exits or prints to stdout;
 * only the CLI maps statuses to exit codes. */
#ifndef MLA_MLA_H
#define MLA_MLA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum name, value, message) */
#define MLA_STATUS_LIST(X)                                              \
    X(MLA_OK, 0, "ok")                                                  \
    X(MLA_ERR_NOMEM, -1, "out of memory")                               \
    X(MLA_ERR_IO, -2, "I/O error")                                      \
    X(MLA_ERR_FORMAT, -3, "malformed input")                            \
    X(MLA_ERR_SHAPE, -4, "shape mismatch")                              \
    X(MLA_ERR_INVALID, -5, "invalid argument")                          \
    X(MLA_ERR_UNSUPPORTED, -6, "not supported")                         \
    X(MLA_ERR_NOT_FOUND, -7, "not found")                               \
    X(MLA_ERR_NONFINITE, -8, "non-finite value")                        \
    X(MLA_ERR_DEVICE, -9, "device error")                               \
    X(MLA_ERR_NO_DEVICE, -10, "no GPU device")                          \
    X(MLA_ERR_VERSION, -11, "version mismatch")                         \
    X(MLA_ERR_CHECKSUM, -12, "checksum mismatch")

typedef enum {
#define MLA_STATUS_ENUM(name, value, msg) name = value,
    MLA_STATUS_LIST(MLA_STATUS_ENUM)
#undef MLA_STATUS_ENUM
} mla_status;

/* Static text for a status; never NULL. */
const char *mla_strerror(mla_status s);

/* Records a detail message for the calling thread (printf-style) and returns s,
 * so library code can write: return mla_errorf(MLA_ERR_FORMAT, "%s: field %s ...", path, f);
 * Messages should name the file, the field and what was expected. */
mla_status mla_errorf(mla_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The calling thread's last detail message ("" when none). */
const char *mla_last_error(void);
void mla_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
