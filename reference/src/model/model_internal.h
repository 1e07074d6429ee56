/* model_internal.h: the mla_model struct and the helpers shared by the files of src/model/.
 * Not installed; only the files of src/model include it. */
#ifndef MLA_MODEL_INTERNAL_H
#define MLA_MODEL_INTERNAL_H

#include "mla_model/model.h"

#include <pthread.h>

/* One memory-mapped safetensors file. */
typedef struct st_file {
    char *path;
    void *map;   /* [size] bytes, PROT_READ */
    size_t size;
} st_file;

/* One named tensor. t is a view into a mapping (HF folders) or into owned (built-ins, generated on
 * first request, and HF tensors whose mapped bytes are not aligned to their element size). */
typedef struct model_entry {
    char *name;
    mla_tensor t;
    int ready;   /* built-ins: 1 once generated */
    void *owned; /* malloc'd data, or NULL */
    int file;    /* index into files, -1 for built-ins */
} model_entry;

struct mla_model {
    mla_config cfg;
    char *source;
    int builtin;
    uint64_t seed;
    model_entry *entries; /* [n_entries], sorted by name (strcmp) */
    int n_entries;
    st_file *files;       /* [n_files] */
    int n_files;
    pthread_mutex_t lock; /* built-ins generate lazily; engines may ask from several threads */
    char weights_hash[17]; /* mla_model_weights_hash, once computed (weights never change after open) */
};

/* Growable list of owned strings. */
typedef struct name_list {
    char **v;
    int n, cap;
} name_list;

void name_list_free(name_list *l);
/* Every tensor name the config needs (sorted, no _scale_inv). lm_head.weight is left out when
 * tie_word_embeddings is set. */
mla_status model_required_names(const mla_config *c, name_list *out);

/* Parameters and tensors (no _scale_inv) the config implies, in checked 64-bit arithmetic
 * (config_json.c); *params is UINT64_MAX on overflow. */
mla_status config_param_count(const mla_config *c, uint64_t *params, uint64_t *tensors);

/* Entry by exact name (bsearch), or NULL. */
model_entry *model_find(const mla_model *m, const char *name);
mla_model *model_alloc(const char *source);
int model_entry_cmp(const void *a, const void *b);

/* Built-ins (builtin.c). */
int builtin_lookup(const char *name, mla_config *cfg, uint64_t *seed); /* 0 found, -1 not */
mla_status builtin_open(const char *name, mla_model **out);
/* Fill e->t.data with the seeded values (caller holds m->lock). */
mla_status builtin_generate(mla_model *m, model_entry *e);

/* HF folders (safetensors.c). */
mla_status hf_open(const char *dir, mla_model **out);
/* safetensors dtype string <-> mla dtype; NULL / -1 when there is none. */
const char *st_dtype_name(mla_dtype t);
int st_dtype_from_name(const char *s, mla_dtype *out);

#endif
