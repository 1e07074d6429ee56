/* status.c: status text and the per-thread error detail. */
#include "mla/mla.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char mla_err_buf[1024];

const char *mla_strerror(mla_status s)
{
    switch (s) {
#define MLA_STATUS_CASE(name, value, msg) \
    case name:                            \
        return msg;
        MLA_STATUS_LIST(MLA_STATUS_CASE)
#undef MLA_STATUS_CASE
    }
    return "unknown status";
}

mla_status mla_errorf(mla_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(mla_err_buf, sizeof mla_err_buf, fmt, ap);
    va_end(ap);
    return s;
}

const char *mla_last_error(void) { return mla_err_buf; }

void mla_clear_error(void) { mla_err_buf[0] = '\0'; }
