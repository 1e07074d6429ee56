/* dump.c: the in-memory dump: one engine's taps for one sequence, plus provenance.
 * Ownership: the dump owns every tensor put in it and meta.model_config_json. */
#include "mlacheck/dump.h"

#include <stdlib.h>
#include <string.h>

mla_status mla_dump_new(mla_dump **out, const mla_config *cfg)
{
    *out = NULL;
    if (!cfg) return mla_errorf(MLA_ERR_INVALID, "mla_dump_new: config is NULL");
    if (cfg->num_hidden_layers < 0)
        return mla_errorf(MLA_ERR_INVALID, "mla_dump_new: num_hidden_layers %d, expected >= 0",
                          cfg->num_hidden_layers);
    mla_dump *d = calloc(1, sizeof *d);
    if (!d) return mla_errorf(MLA_ERR_NOMEM, "mla_dump_new: dump struct");
    d->meta.schema_version = MLA_DUMP_SCHEMA_VERSION;
    d->cfg = *cfg;
    d->n_layers = cfg->num_hidden_layers;
    size_t nslots = (size_t)d->n_layers * MLA_TAP_COUNT;
    d->layer = calloc(nslots ? nslots : 1, sizeof *d->layer);
    d->rows = calloc(nslots + MLA_TAP_COUNT, sizeof *d->rows);
    if (!d->layer || !d->rows) {
        free(d->layer);
        free(d->rows);
        free(d);
        return mla_errorf(MLA_ERR_NOMEM, "mla_dump_new: %zu layer slots", nslots);
    }
    *out = d;
    return MLA_OK;
}

void mla_dump_free(mla_dump *d)
{
    if (!d) return;
    mla_tensor_free(d->tokens);
    for (int t = 0; t < MLA_TAP_COUNT; t++) mla_tensor_free(d->global[t]);
    if (d->layer)
        for (size_t i = 0; i < (size_t)d->n_layers * MLA_TAP_COUNT; i++) mla_tensor_free(d->layer[i]);
    free(d->layer);
    if (d->rows)
        for (size_t i = 0; i < (size_t)(d->n_layers + 1) * MLA_TAP_COUNT; i++) free(d->rows[i]);
    free(d->rows);
    free(d->meta.model_config_json);
    free(d);
}

/* NULL when the tap or the layer is out of range. */
mla_tensor **mla_dump_slot(mla_dump *d, int layer, mla_tap tap)
{
    if (!d || (unsigned)tap >= MLA_TAP_COUNT) return NULL;
    if (!mla_tap_is_layer(tap)) return &d->global[tap];
    if (layer < 0 || layer >= d->n_layers) return NULL;
    return &d->layer[(size_t)layer * MLA_TAP_COUNT + (size_t)tap];
}

const mla_tensor *mla_dump_get(const mla_dump *d, int layer, mla_tap tap)
{
    mla_tensor **s = mla_dump_slot((mla_dump *)d, layer, tap);
    return s ? *s : NULL;
}

/* Takes ownership of t even when the slot does not exist (t is freed then), so callers never leak. */
void mla_dump_set(mla_dump *d, int layer, mla_tap tap, mla_tensor *t)
{
    mla_tensor **s = mla_dump_slot(d, layer, tap);
    if (!s) {
        mla_tensor_free(t);
        return;
    }
    if (*s != t) mla_tensor_free(*s);
    *s = t;
    mla_dump_set_rows(d, layer, tap, NULL);
}

/* The index of (layer, tap) in d->rows, -1 when the slot does not exist. */
static long rows_index(const mla_dump *d, int layer, mla_tap tap)
{
    if (!d || !d->rows || (unsigned)tap >= MLA_TAP_COUNT) return -1;
    if (!mla_tap_is_layer(tap)) return tap;
    if (layer < 0 || layer >= d->n_layers) return -1;
    return (long)(layer + 1) * MLA_TAP_COUNT + tap;
}

const unsigned char *mla_dump_rows(const mla_dump *d, int layer, mla_tap tap)
{
    long i = rows_index(d, layer, tap);
    return i < 0 ? NULL : d->rows[i];
}

void mla_dump_set_rows(mla_dump *d, int layer, mla_tap tap, unsigned char *rows)
{
    long i = rows_index(d, layer, tap);
    if (i < 0) {
        free(rows);
        return;
    }
    if (d->rows[i] != rows) free(d->rows[i]);
    d->rows[i] = rows;
}
