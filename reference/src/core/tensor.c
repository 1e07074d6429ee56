/* tensor.c: allocation, views, element access and finiteness checks. */
#include "mla/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mla_status tensor_init(mla_tensor *t, mla_dtype dtype, int ndim, const int64_t *shape,
                              const char *name)
{
    if (ndim < 0 || ndim > MLA_MAX_DIMS || dtype >= MLA_DTYPE_COUNT)
        return mla_errorf(MLA_ERR_INVALID, "tensor %s: rank %d or dtype %d out of range",
                          name ? name : "?", ndim, (int)dtype);
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return mla_errorf(MLA_ERR_SHAPE, "tensor %s: negative dimension %d",
                              name ? name : "?", i);
        t->shape[i] = shape[i];
    }
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t->strides[i] = s;
        s *= shape[i];
    }
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    return MLA_OK;
}

mla_status mla_tensor_new(mla_tensor **out, mla_dtype dtype, int ndim, const int64_t *shape,
                          const char *name)
{
    *out = NULL;
    mla_tensor *t = malloc(sizeof *t);
    if (!t) return mla_errorf(MLA_ERR_NOMEM, "tensor %s: struct", name ? name : "?");
    mla_status st = tensor_init(t, dtype, ndim, shape, name);
    if (st) {
        free(t);
        return st;
    }
    size_t nb = mla_tensor_nbytes(t);
    t->data = calloc(nb ? nb : 1, 1);
    if (!t->data) {
        free(t);
        return mla_errorf(MLA_ERR_NOMEM, "tensor %s: %zu bytes", name ? name : "?", nb);
    }
    t->owner = 1;
    *out = t;
    return MLA_OK;
}

mla_status mla_tensor_view(mla_tensor **out, mla_dtype dtype, int ndim, const int64_t *shape,
                           void *data, const char *name)
{
    *out = NULL;
    mla_tensor *t = malloc(sizeof *t);
    if (!t) return mla_errorf(MLA_ERR_NOMEM, "tensor %s: struct", name ? name : "?");
    mla_status st = tensor_init(t, dtype, ndim, shape, name);
    if (st) {
        free(t);
        return st;
    }
    t->data = data;
    *out = t;
    return MLA_OK;
}

void mla_tensor_free(mla_tensor *t)
{
    if (!t) return;
    if (t->owner) free(t->data);
    free(t);
}

int64_t mla_tensor_numel(const mla_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

size_t mla_tensor_nbytes(const mla_tensor *t)
{
    return (size_t)mla_tensor_numel(t) * mla_dtype_size(t->dtype);
}

int mla_tensor_is_contiguous(const mla_tensor *t)
{
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != s) return 0;
        s *= t->shape[i];
    }
    return 1;
}

int mla_tensor_same_shape(const mla_tensor *a, const mla_tensor *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

const char *mla_tensor_shape_str(const mla_tensor *t, char *buf, size_t n)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n > k ? n - k : 0, "[");
    for (int i = 0; i < t->ndim; i++)
        k += (size_t)snprintf(buf + k, n > k ? n - k : 0, "%s%lld", i ? ", " : "",
                              (long long)t->shape[i]);
    snprintf(buf + k, n > k ? n - k : 0, "]");
    return buf;
}

static int64_t tensor_offset(const mla_tensor *t, int64_t i)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t n = t->shape[d] ? t->shape[d] : 1;
        off += (i % n) * t->strides[d];
        i /= n;
    }
    return off;
}

double mla_tensor_get_f64(const mla_tensor *t, int64_t i)
{
    const char *p = (const char *)t->data + (size_t)tensor_offset(t, i) * mla_dtype_size(t->dtype);
    return mla_load_f64(t->dtype, p);
}

void mla_tensor_to_f64(const mla_tensor *t, double *out)
{
    int64_t n = mla_tensor_numel(t);
    if (mla_tensor_is_contiguous(t)) {
        size_t es = mla_dtype_size(t->dtype);
        const char *p = t->data;
        if (t->dtype == MLA_F64) {
            memcpy(out, p, (size_t)n * sizeof(double));
            return;
        }
        for (int64_t i = 0; i < n; i++) out[i] = mla_load_f64(t->dtype, p + (size_t)i * es);
        return;
    }
    for (int64_t i = 0; i < n; i++) out[i] = mla_tensor_get_f64(t, i);
}

mla_status mla_tensor_clone(const mla_tensor *t, mla_tensor **out)
{
    mla_status st = mla_tensor_new(out, t->dtype, t->ndim, t->shape, t->name);
    if (st) return st;
    size_t es = mla_dtype_size(t->dtype);
    if (mla_tensor_is_contiguous(t)) {
        memcpy((*out)->data, t->data, mla_tensor_nbytes(t));
        return MLA_OK;
    }
    int64_t n = mla_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)(*out)->data + (size_t)i * es,
               (const char *)t->data + (size_t)tensor_offset(t, i) * es, es);
    return MLA_OK;
}

mla_status mla_tensor_to_f64_new(const mla_tensor *t, mla_tensor **out)
{
    mla_status st = mla_tensor_new(out, MLA_F64, t->ndim, t->shape, t->name);
    if (st) return st;
    mla_tensor_to_f64(t, (*out)->data);
    return MLA_OK;
}

mla_status mla_tensor_check_finite(const mla_tensor *t)
{
    if (t->dtype == MLA_I32 || t->dtype == MLA_I64 || t->dtype == MLA_U8) return MLA_OK;
    int64_t n = mla_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v = mla_tensor_get_f64(t, i);
        if (!isfinite(v))
            return mla_errorf(MLA_ERR_NONFINITE, "tensor %s: %s at flat index %lld",
                              t->name[0] ? t->name : "(unnamed)", isnan(v) ? "NaN" : "Inf",
                              (long long)i);
    }
    return MLA_OK;
}
