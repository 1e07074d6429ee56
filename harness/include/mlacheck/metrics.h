/* metrics.h: a run's metrics.tsv, one row per compared tensor (mla_rep_row), written and read
 * through one column table, so that the report, its re-render and bisect agree on the schema.
 *
 * The first line is the header (the column names, tab-separated); each further line is one row, in
 * the order the rows were added (computation order within a check). Text fields have tabs and
 * newlines replaced by spaces; numbers are printed with %d, %lld or %.17g (exact round trip). */
#ifndef MLACHECK_METRICS_H
#define MLACHECK_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "mla/mla.h"
#include "mlacheck/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(column name, mla_rep_row field, kind) in file order. kind: TEXT (a string), INT (int),
 * I64 (int64_t), F64 (double). */
#define MLA_METRICS_COLUMN_LIST(X)                                                               \
    X("case", case_name, TEXT) X("check", check, TEXT) X("profile", profile, TEXT)               \
    X("path", path, TEXT) X("layer", layer, INT) X("tap", tap, TEXT) X("kv_len", kv_len, INT)    \
    X("n", n, I64) X("max_abs", max_abs, F64) X("max_rel", max_rel, F64)                         \
    X("nmse_db", nmse_db, F64) X("cos_diff", cos_diff, F64) X("rel_l2", rel_l2, F64)             \
    X("ulp_p99", ulp_p99, F64) X("limit_use", headroom, F64) X("pass", pass, INT)                \
    X("worst", worst, TEXT) X("why", why, TEXT)

/* Writes rows[0..n) under the header to path (created or truncated). A NULL text field is written
 * empty. Errors: MLA_ERR_IO naming the path. */
mla_status mla_metrics_write(const char *path, const mla_rep_row *rows, size_t n);
/* The same lines to an open stream (the header first when header is 1): the run journal appends
 * its rows with this, so journal.tsv and metrics.tsv are one format. Errors show in ferror(f). */
void mla_metrics_put(FILE *f, const mla_rep_row *rows, size_t n, int header);

/* The rows of a metrics.tsv. The strings point into text, which the struct owns. */
typedef struct mla_metrics {
    mla_rep_row *rows;
    size_t n_rows;
    char *text;
} mla_metrics;

/* Reads path into *out (caller frees with mla_metrics_free). MLA_ERR_NOT_FOUND when the file is
 * missing, MLA_ERR_FORMAT naming path:line for another header, a wrong column count or a number
 * that does not parse, MLA_ERR_IO, MLA_ERR_NOMEM. */
mla_status mla_metrics_load(const char *path, mla_metrics *out);
void mla_metrics_free(mla_metrics *m); /* leaves *m empty; NULL is fine */

#ifdef __cplusplus
}
#endif
#endif
