/* tensor.h: a typed n-d array. Shapes are outermost-first (HDF5/PyTorch order), strides are
 * in elements. A tensor with owner == 0 is a view: mla_tensor_free releases only the struct. */
#ifndef MLA_TENSOR_H
#define MLA_TENSOR_H

#include "mla/dtype.h"
#include "mla/mla.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_MAX_DIMS 6
#define MLA_NAME_MAX 128

typedef struct mla_tensor {
    mla_dtype dtype;
    int ndim;
    int64_t shape[MLA_MAX_DIMS];
    int64_t strides[MLA_MAX_DIMS];
    void *data;
    int owner; /* 1: data is malloc'd and freed with the tensor */
    char name[MLA_NAME_MAX];
} mla_tensor;

/* New contiguous, zero-filled tensor. Caller frees with mla_tensor_free. */
mla_status mla_tensor_new(mla_tensor **out, mla_dtype dtype, int ndim, const int64_t *shape,
                          const char *name);
/* New non-owning contiguous view of data. */
mla_status mla_tensor_view(mla_tensor **out, mla_dtype dtype, int ndim, const int64_t *shape,
                           void *data, const char *name);
void mla_tensor_free(mla_tensor *t);

int64_t mla_tensor_numel(const mla_tensor *t);
size_t mla_tensor_nbytes(const mla_tensor *t); /* numel * element size */
int mla_tensor_is_contiguous(const mla_tensor *t);
int mla_tensor_same_shape(const mla_tensor *a, const mla_tensor *b);
/* "[4, 16, 128]" into buf. */
const char *mla_tensor_shape_str(const mla_tensor *t, char *buf, size_t n);

/* Element i (row-major over the logical shape, strides honoured) widened to double. */
double mla_tensor_get_f64(const mla_tensor *t, int64_t i);
/* All elements, row-major, widened to double into out[numel]. */
void mla_tensor_to_f64(const mla_tensor *t, double *out);
/* A new contiguous copy (owner) with the same dtype. */
mla_status mla_tensor_clone(const mla_tensor *t, mla_tensor **out);
/* A new contiguous f64 copy. */
mla_status mla_tensor_to_f64_new(const mla_tensor *t, mla_tensor **out);

/* Returns MLA_ERR_NONFINITE (with detail naming the tensor and the first index) when a
 * float tensor holds NaN or Inf. */
mla_status mla_tensor_check_finite(const mla_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
