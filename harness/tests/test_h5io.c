/* test_h5io.c: golden HDF5 round trip (bit-exact), damaged files, version and checksum checks,
 * plus the in-memory dump API. Files go to a fresh folder under /tmp, removed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <hdf5.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <unistd.h>

#include "mlacheck/dump.h"
#include "mlacheck/h5io.h"

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

/* Tiny MoE config: layer 0 dense, layer 1 MoE (4 experts, top-2). */
static mla_config test_config(void)
{
    mla_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.model_type, sizeof c.model_type, "deepseek_v2");
    c.vocab_size = 16;
    c.hidden_size = 8;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 2;
    c.q_lora_rank = 0;
    c.kv_lora_rank = 8;
    c.qk_nope_head_dim = 4;
    c.qk_rope_head_dim = 2;
    c.v_head_dim = 4;
    c.intermediate_size = 16;
    c.moe_intermediate_size = 8;
    c.first_k_dense_replace = 1;
    c.moe_layer_freq = 1;
    c.n_routed_experts = 4;
    c.n_shared_experts = 1;
    c.num_experts_per_tok = 2;
    c.n_group = 1;
    c.topk_group = 1;
    c.scoring_func = MLA_SCORE_SOFTMAX;
    c.topk_method = MLA_TOPK_GREEDY;
    c.routed_scaling_factor = 1.0;
    c.rms_norm_eps = 1e-6;
    c.rope_theta = 10000.0;
    c.max_position_embeddings = 64;
    c.weight_block_size = 128;
    return c;
}

#define NTOK 3

static mla_tensor *new_tap(mla_dtype dt, mla_tap tap, const mla_config *c)
{
    int64_t shape[MLA_MAX_DIMS];
    int nd = mla_tap_shape(tap, c, NTOK, shape);
    mla_tensor *t = NULL;
    assert_int_equal(mla_tensor_new(&t, dt, nd, shape, mla_tap_name(tap)), MLA_OK);
    return t;
}

/* A dump with f64, f32, bf16 (incl. NaN payload, -0, inf bit patterns), e4m3fn and i32 taps. */
static mla_dump *make_dump(void)
{
    mla_config c = test_config();
    mla_dump *d = NULL;
    assert_int_equal(mla_dump_new(&d, &c), MLA_OK);
    snprintf(d->meta.producer, sizeof d->meta.producer, "mlacheck dump --model test \"quoted\"");
    snprintf(d->meta.engine, sizeof d->meta.engine, "ref");
    snprintf(d->meta.profile, sizeof d->meta.profile, "bf16");
    snprintf(d->meta.path, sizeof d->meta.path, "decode");
    d->meta.prefill_len = 2;
    d->meta.chunk = 0;
    snprintf(d->meta.git_sha, sizeof d->meta.git_sha, "0123456789abcdef0123456789abcdef01234567");
    d->meta.seed = 4000000000u; /* above INT32_MAX: uint32 must survive */
    snprintf(d->meta.model, sizeof d->meta.model, "tiny-test");
    snprintf(d->meta.weights_hash, sizeof d->meta.weights_hash, "00ff00ff00ff00ff");
    snprintf(d->meta.created, sizeof d->meta.created, "2025-01-02T03:04:05Z");

    int64_t s = NTOK;
    assert_int_equal(mla_tensor_new(&d->tokens, MLA_I32, 1, &s, "tokens"), MLA_OK);
    int32_t *tok = d->tokens->data;
    tok[0] = 1, tok[1] = 15, tok[2] = 7;

    mla_tensor *e = new_tap(MLA_F64, MLA_TAP_EMBED, &c);
    double *ev = e->data;
    for (int64_t i = 0; i < mla_tensor_numel(e); i++) ev[i] = (double)(i + 1) / 3.0 - 2.0;
    ev[0] = -0.0;
    ev[1] = 4.9e-324; /* smallest subnormal */
    ev[2] = 1.2345678901234567e300;
    mla_dump_set(d, 0, MLA_TAP_EMBED, e);

    mla_tensor *n = new_tap(MLA_BF16, MLA_TAP_ATTN_NORM, &c);
    uint16_t *nv = n->data;
    for (int64_t i = 0; i < mla_tensor_numel(n); i++) nv[i] = (uint16_t)(0x3F80 + 37 * i);
    nv[0] = 0x7FC1; /* NaN with a payload */
    nv[1] = 0x8000; /* -0 */
    nv[2] = 0xFF80; /* -inf */
    nv[3] = 0x0001; /* subnormal */
    mla_dump_set(d, 0, MLA_TAP_ATTN_NORM, n);

    mla_tensor *kv = new_tap(MLA_E4M3FN, MLA_TAP_KV_C, &c);
    uint8_t *kvv = kv->data;
    for (int64_t i = 0; i < mla_tensor_numel(kv); i++) kvv[i] = (uint8_t)(i * 11 + 3);
    mla_dump_set(d, 0, MLA_TAP_KV_C, kv);

    mla_tensor *ids = new_tap(MLA_I32, MLA_TAP_TOPK_IDS, &c);
    int32_t *iv = ids->data;
    for (int64_t i = 0; i < mla_tensor_numel(ids); i++) iv[i] = (int32_t)(i % 4);
    mla_dump_set(d, 1, MLA_TAP_TOPK_IDS, ids);

    mla_tensor *rl = new_tap(MLA_F32, MLA_TAP_ROUTER_LOGITS, &c);
    float *rv = rl->data;
    for (int64_t i = 0; i < mla_tensor_numel(rl); i++) rv[i] = 0.1f * (float)i - 0.55f;
    mla_dump_set(d, 1, MLA_TAP_ROUTER_LOGITS, rl);

    mla_tensor *lg = new_tap(MLA_F64, MLA_TAP_LOGITS, &c);
    double *lv = lg->data;
    for (int64_t i = 0; i < mla_tensor_numel(lg); i++) lv[i] = sin((double)i);
    mla_dump_set(d, 0, MLA_TAP_LOGITS, lg);
    return d;
}

static void assert_same_tensor(const mla_tensor *x, const mla_tensor *y)
{
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(x->dtype, y->dtype);
    assert_int_equal(x->ndim, y->ndim);
    for (int i = 0; i < x->ndim; i++) assert_int_equal(x->shape[i], y->shape[i]);
    assert_int_equal(mla_tensor_nbytes(x), mla_tensor_nbytes(y));
    assert_memory_equal(x->data, y->data, mla_tensor_nbytes(x));
}

static void assert_error_names(const char *needle)
{
    const char *msg = mla_last_error();
    if (!strstr(msg, needle)) fail_msg("error detail \"%s\" does not contain \"%s\"", msg, needle);
}

static void write_sample(const char *path)
{
    mla_dump *d = make_dump();
    mla_status st = mla_h5_write(path, d);
    if (st) fail_msg("write %s: %s", path, mla_last_error());
    mla_dump_free(d);
}

/* ---- tests ---- */

static void test_crc32_known_vector(void **state)
{
    (void)state;
    assert_int_equal(mla_h5_crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(mla_h5_crc32(0, "", 0), 0u);
    /* chaining equals one pass, like zlib */
    assert_int_equal(mla_h5_crc32(mla_h5_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
}

static void test_dump_slots(void **state)
{
    (void)state;
    mla_config c = test_config();
    mla_dump *d = NULL;
    assert_int_equal(mla_dump_new(&d, &c), MLA_OK);
    assert_int_equal(d->n_layers, 2);
    assert_int_equal(d->meta.schema_version, MLA_DUMP_SCHEMA_VERSION);
    assert_null(mla_dump_slot(d, 2, MLA_TAP_KV_C));
    assert_null(mla_dump_slot(d, -1, MLA_TAP_KV_C));
    assert_ptr_equal(mla_dump_slot(d, 7, MLA_TAP_LOGITS), &d->global[MLA_TAP_LOGITS]);
    mla_tensor *t = new_tap(MLA_F32, MLA_TAP_KV_C, &c);
    mla_dump_set(d, 1, MLA_TAP_KV_C, t);
    assert_ptr_equal(mla_dump_get(d, 1, MLA_TAP_KV_C), t);
    assert_null(mla_dump_get(d, 0, MLA_TAP_KV_C));
    mla_dump_set(d, 1, MLA_TAP_KV_C, new_tap(MLA_F64, MLA_TAP_KV_C, &c)); /* replaces, frees t */
    assert_int_equal(mla_dump_get(d, 1, MLA_TAP_KV_C)->dtype, MLA_F64);
    mla_dump_set(d, 9, MLA_TAP_KV_C, new_tap(MLA_F64, MLA_TAP_KV_C, &c)); /* no slot: freed */
    mla_dump_free(d);
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *path = tmp_path("round.h5");
    mla_dump *d = make_dump();
    assert_int_equal(mla_h5_write(path, d), MLA_OK);
    char tmpname[64];
    snprintf(tmpname, sizeof tmpname, "round.h5.tmp.%ld", (long)getpid());
    assert_int_equal(access(tmp_path(tmpname), F_OK), -1); /* renamed into place */
    mla_dump *r = NULL;
    mla_status st = mla_h5_read(path, &r);
    if (st) fail_msg("read: %s", mla_last_error());
    assert_non_null(r);
    assert_int_equal(r->meta.schema_version, 1);
    assert_string_equal(r->meta.producer, d->meta.producer);
    assert_string_equal(r->meta.engine, "ref");
    assert_string_equal(r->meta.profile, "bf16");
    assert_string_equal(r->meta.path, "decode");
    assert_string_equal(r->meta.git_sha, d->meta.git_sha);
    assert_string_equal(r->meta.model, "tiny-test");
    assert_string_equal(r->meta.weights_hash, "00ff00ff00ff00ff");
    assert_string_equal(r->meta.created, "2025-01-02T03:04:05Z");
    assert_int_equal(r->meta.seed, 4000000000u);
    assert_int_equal(r->meta.prefill_len, 2);
    assert_int_equal(r->meta.chunk, 0);
    assert_non_null(r->meta.model_config_json);
    assert_non_null(strstr(r->meta.model_config_json, "\"kv_lora_rank\""));
    /* the config came back through mla_config_from_json */
    assert_string_equal(r->cfg.model_type, "deepseek_v2");
    assert_int_equal(r->cfg.hidden_size, 8);
    assert_int_equal(r->cfg.num_hidden_layers, 2);
    assert_int_equal(r->cfg.kv_lora_rank, 8);
    assert_int_equal(r->cfg.n_routed_experts, 4);
    assert_int_equal(r->cfg.num_experts_per_tok, 2);
    assert_int_equal(r->cfg.q_lora_rank, 0);
    assert_true(r->cfg.rms_norm_eps == 1e-6);
    assert_int_equal(r->n_layers, 2);

    assert_same_tensor(r->tokens, d->tokens);
    for (int l = 0; l < 2; l++)
        for (int t = 0; t < MLA_TAP_COUNT; t++) {
            const mla_tensor *x = mla_dump_get(d, l, (mla_tap)t), *y = mla_dump_get(r, l, (mla_tap)t);
            if (!x) {
                assert_null(y);
                continue;
            }
            assert_same_tensor(x, y);
        }
    /* bf16 raw bits, one by one, to be explicit */
    const uint16_t *bits = mla_dump_get(r, 0, MLA_TAP_ATTN_NORM)->data;
    assert_int_equal(bits[0], 0x7FC1);
    assert_int_equal(bits[1], 0x8000);
    assert_int_equal(bits[2], 0xFF80);
    assert_int_equal(bits[3], 0x0001);
    const double *ev = mla_dump_get(r, 0, MLA_TAP_EMBED)->data;
    assert_true(ev[0] == 0.0 && signbit(ev[0]));
    assert_true(ev[1] == 4.9e-324);

    mla_dump_meta m;
    mla_config c;
    assert_int_equal(mla_h5_read_meta(path, &m, &c), MLA_OK);
    assert_string_equal(m.engine, "ref");
    assert_int_equal(c.vocab_size, 16);
    free(m.model_config_json);
    mla_dump_free(r);
    mla_dump_free(d);
}

static void test_write_rejects_bad_shape(void **state)
{
    (void)state;
    mla_dump *d = make_dump();
    int64_t shape[2] = {NTOK, 9}; /* D is 8 */
    mla_tensor *t = NULL;
    assert_int_equal(mla_tensor_new(&t, MLA_F32, 2, shape, "out"), MLA_OK);
    mla_dump_set(d, 1, MLA_TAP_OUT, t);
    const char *path = tmp_path("badshape.h5");
    assert_int_equal(mla_h5_write(path, d), MLA_ERR_SHAPE);
    assert_error_names("/layers/1/out");
    assert_error_names("[3, 8]");
    assert_int_equal(access(path, F_OK), -1);
    mla_dump_free(d);
}

/* The whole file (caller frees) and its size. */
static unsigned char *slurp(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    unsigned char *buf = malloc((size_t)*size);
    assert_non_null(buf);
    fseek(f, 0, SEEK_SET);
    assert_int_equal(fread(buf, 1, (size_t)*size, f), (size_t)*size);
    fclose(f);
    return buf;
}

static void test_truncated_file(void **state)
{
    (void)state;
    const char *path = tmp_path("trunc.h5");
    write_sample(path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_true(size > 1000);
    assert_int_equal(truncate(path, size / 2), 0);
    mla_dump *r = (mla_dump *)0x1;
    mla_status st = mla_h5_read(path, &r);
    assert_true(st == MLA_ERR_IO || st == MLA_ERR_FORMAT);
    assert_null(r);
    assert_error_names(path);
    /* a file cut inside the superblock as well */
    assert_int_equal(truncate(path, 40), 0);
    st = mla_h5_read(path, &r);
    assert_true(st == MLA_ERR_IO || st == MLA_ERR_FORMAT);
    assert_error_names(path);
}

static void test_flipped_byte(void **state)
{
    (void)state;
    const char *path = tmp_path("flip.h5");
    write_sample(path);
    /* find the embed data (f64 little-endian bytes of element 2) and flip one bit in it */
    double marker = 1.2345678901234567e300;
    long size;
    unsigned char *buf = slurp(path, &size);
    unsigned char *hit = memmem(buf, (size_t)size, &marker, sizeof marker);
    assert_non_null(hit);
    long off = (long)(hit - buf) + 3;
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, off, SEEK_SET);
    fputc(buf[off] ^ 0x10, f);
    fclose(f);
    free(buf);
    mla_dump *r = NULL;
    assert_int_equal(mla_h5_read(path, &r), MLA_ERR_CHECKSUM);
    assert_null(r);
    assert_error_names(path);
    assert_error_names("/embed");
}

/* Every single-byte corruption of the file must give a status naming the file (never a crash
 * inside libhdf5): the seal covers the HDF5 structure, the crc32 attributes the data. */
static void test_corrupt_every_byte(void **state)
{
    (void)state;
    const char *path = tmp_path("every.h5"), *bad = tmp_path("every-bad.h5");
    write_sample(path);
    long size;
    unsigned char *buf = slurp(path, &size);
    unsigned long long ub = 0;
    assert_int_equal(sscanf((const char *)buf, "mlacheck-h5 1\nuserblock %llu", &ub), 1);
    assert_true(ub >= 512 && (long)ub < size);
    int n_checksum = 0;
    for (long off = 0; off < size; off += 3) {
        buf[off] ^= 0x5A;
        FILE *g = fopen(bad, "wb");
        assert_non_null(g);
        assert_int_equal(fwrite(buf, 1, (size_t)size, g), (size_t)size);
        fclose(g);
        buf[off] ^= 0x5A;
        mla_dump *r = NULL;
        mla_status st = mla_h5_read(bad, &r);
        mla_dump_free(r);
        /* a flip in the user block's zero padding is harmless; anything else must be caught */
        if (st == MLA_OK) {
            if (off >= (long)ub || buf[off] != 0) fail_msg("flip at %ld not detected", off);
            continue;
        }
        assert_true(st == MLA_ERR_CHECKSUM || st == MLA_ERR_FORMAT);
        assert_error_names(bad);
        n_checksum += st == MLA_ERR_CHECKSUM;
    }
    assert_true(n_checksum > size / 3 / 2);
    free(buf);
}

static void set_schema_version(const char *path, int v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t g = H5Gopen2(f, "meta", H5P_DEFAULT);
    assert_true(g >= 0);
    hid_t a = H5Aopen(g, "schema_version", H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, H5T_NATIVE_INT, &v) >= 0);
    H5Aclose(a);
    H5Gclose(g);
    H5Fclose(f);
}

static void test_schema_version(void **state)
{
    (void)state;
    const char *path = tmp_path("v99.h5");
    write_sample(path);
    set_schema_version(path, 99);
    mla_dump *r = NULL;
    /* an in-place edit breaks the whole-file seal ... */
    assert_int_equal(mla_h5_read(path, &r), MLA_ERR_CHECKSUM);
    assert_error_names(path);
    assert_error_names("metadata");
    /* ... and once re-sealed the version check itself speaks */
    assert_int_equal(mla_h5_seal(path), MLA_OK);
    assert_int_equal(mla_h5_read(path, &r), MLA_ERR_VERSION);
    assert_null(r);
    assert_error_names(path);
    assert_error_names("99");
    assert_error_names("expected 1");
    assert_error_names("regenerate with mlacheck golden");
    assert_int_equal(mla_h5_read_meta(path, NULL, NULL), MLA_ERR_VERSION);
}

static void test_missing_file(void **state)
{
    (void)state;
    const char *path = tmp_path("does-not-exist.h5");
    mla_dump *r = NULL;
    assert_int_equal(mla_h5_read(path, &r), MLA_ERR_IO);
    assert_null(r);
    assert_error_names(path);
}

static void test_not_hdf5(void **state)
{
    (void)state;
    const char *path = tmp_path("text.h5");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 200; i++) fputs("this is not an HDF5 file\n", f);
    fclose(f);
    mla_dump *r = NULL;
    assert_int_equal(mla_h5_read(path, &r), MLA_ERR_FORMAT);
    assert_null(r);
    assert_error_names(path);
}

/* Replaces /embed with a dataset of another shape, with a valid dtype and crc32. */
static void replace_embed(const char *path, hsize_t cols)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Ldelete(f, "embed", H5P_DEFAULT) >= 0);
    hsize_t dims[2] = {NTOK, cols};
    double v[NTOK * 16] = {0};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t ds = H5Dcreate2(f, "embed", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(ds >= 0);
    assert_true(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    uint32_t crc = mla_h5_crc32(0, v, (size_t)(NTOK * cols) * 8);
    hid_t s1 = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(ds, "crc32", H5T_STD_U32LE, s1, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_UINT32, &crc);
    H5Aclose(a);
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, 3);
    a = H5Acreate2(ds, "dtype", st, s1, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, st, "f64");
    H5Aclose(a);
    H5Tclose(st);
    /* unknown names must be ignored */
    hid_t g = H5Gopen2(f, "layers/0", H5P_DEFAULT);
    hid_t x = H5Dcreate2(g, "my_extra_probe", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    H5Dclose(x);
    H5Gclose(g);
    g = H5Gcreate2(f, "notes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(g);
    H5Sclose(s1);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(f);
}

static void test_shape_check_on_read(void **state)
{
    (void)state;
    const char *path = tmp_path("shape.h5");
    write_sample(path);
    replace_embed(path, 8); /* right shape (fixed-length dtype string, extra names): reads */
    assert_int_equal(mla_h5_seal(path), MLA_OK);
    mla_dump *r = NULL;
    mla_status st = mla_h5_read(path, &r);
    if (st) fail_msg("read: %s", mla_last_error());
    assert_int_equal(mla_dump_get(r, 0, MLA_TAP_EMBED)->shape[1], 8);
    mla_dump_free(r);

    write_sample(path);
    replace_embed(path, 7);
    assert_int_equal(mla_h5_seal(path), MLA_OK);
    assert_int_equal(mla_h5_read(path, &r), MLA_ERR_SHAPE);
    assert_null(r);
    assert_error_names(path);
    assert_error_names("/embed");
    assert_error_names("[3, 7]");
    assert_error_names("[3, 8]");
}

/* Every tap dataset names its axes (the dimension-scale labels h5py shows as ds.dims[i].label) and
 * carries a one-line description; /meta says which build wrote the file. */
static void test_axis_labels_and_provenance(void **state)
{
    (void)state;
    const char *path = tmp_path("labels.h5");
    write_sample(path);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t ds = H5Dopen2(f, "logits", H5P_DEFAULT);
    assert_true(ds >= 0);
    hid_t a = H5Aopen(ds, "DIMENSION_LABELS", H5P_DEFAULT);
    assert_true(a >= 0);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    char *labels[2] = {NULL, NULL};
    assert_true(H5Aread(a, t, labels) >= 0);
    assert_string_equal(labels[0], "tokens");
    assert_string_equal(labels[1], "vocab");
    hid_t sp = H5Aget_space(a);
    H5Dvlen_reclaim(t, sp, H5P_DEFAULT, labels);
    H5Sclose(sp);
    H5Aclose(a);
    assert_true(H5Aexists(ds, "description") > 0);
    H5Dclose(ds);
    hid_t g = H5Gopen2(f, "meta", H5P_DEFAULT);
    assert_true(g >= 0);
    const char *keys[] = {"build_git_id", "compiler", "blas", "hdf5_version"};
    for (int i = 0; i < 4; i++) {
        if (H5Aexists(g, keys[i]) <= 0) fail_msg("/meta has no %s", keys[i]);
    }
    H5Gclose(g);
    H5Tclose(t);
    H5Fclose(f);
}

static void test_unknown_dtype(void **state)
{
    (void)state;
    const char *path = tmp_path("dtype.h5");
    write_sample(path);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t ds = H5Dopen2(f, "logits", H5P_DEFAULT);
    assert_true(H5Adelete(ds, "dtype") >= 0);
    hid_t s1 = H5Screate(H5S_SCALAR), t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 4);
    hid_t a = H5Acreate2(ds, "dtype", t, s1, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, "f128");
    H5Aclose(a);
    H5Tclose(t);
    H5Sclose(s1);
    H5Dclose(ds);
    H5Fclose(f);
    assert_int_equal(mla_h5_seal(path), MLA_OK);
    mla_dump *r = NULL;
    assert_int_equal(mla_h5_read(path, &r), MLA_ERR_FORMAT);
    assert_error_names("/logits");
    assert_error_names("f128");
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mla_h5io_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

/* nftw callback: files and folders, deepest first (no shell for rm -rf). */
static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* One byte damaged at many offsets of a copy of f (an h5py-written oracle file, or a sealed golden):
 * reading either succeeds or fails with a message naming the copy, never crashes or hangs this
 * process (issue 12 item 5). Offsets: every 13th byte of the first 4 KiB (superblock, root group,
 * /meta and its global heap of variable-length strings) and 48 spread over the rest. */
static void mutate_file(const char *src, int *n_ok, int *n_err)
{
    FILE *f = fopen(src, "rb");
    if (!f) fail_msg("%s: cannot open (tests run from the source root)", src);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    const char *dst = tmp_path("mutant.h5");
    for (long k = 0; k < 4096 / 13 + 48; k++) {
        long at = k < 4096 / 13 ? k * 13 : 4096 + (k - 4096 / 13) * ((n - 4096) / 48);
        if (at >= n) continue;
        b[at] ^= 0x5a;
        FILE *o = fopen(dst, "wb");
        if (!o) fail_msg("%s byte %ld: cannot write the copy: %s", src, at, strerror(errno));
        assert_int_equal(fwrite(b, 1, (size_t)n, o), (size_t)n);
        assert_int_equal(fclose(o), 0);
        b[at] ^= 0x5a;
        mla_dump *d = NULL;
        mla_clear_error();
        mla_status st = mla_h5_read(dst, &d);
        if (st == MLA_OK) {
            assert_non_null(d);
            mla_dump_free(d);
            (*n_ok)++;
        } else {
            if (!strstr(mla_last_error(), "mutant.h5"))
                fail_msg("%s byte %ld: status %d with message \"%s\" not naming the file", src, at, st,
                         mla_last_error());
            (*n_err)++;
        }
        ssize_t left = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
        if (left != 0) fail_msg("%s byte %ld: %zd HDF5 objects left open after reading", src, at, left);
        mla_dump_meta m;
        st = mla_h5_read_meta(dst, &m, NULL);
        if (st == MLA_OK) free(m.model_config_json);
        else if (!strstr(mla_last_error(), "mutant.h5"))
            fail_msg("%s byte %ld: read_meta message \"%s\" not naming the file", src, at, mla_last_error());
        left = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
        if (left != 0) fail_msg("%s byte %ld: %zd HDF5 objects left open after reading /meta", src, at, left);
    }
    free(b);
}

static void test_damaged_bytes(void **state)
{
    (void)state;
    int ok = 0, err = 0;
    mutate_file("golden/oracle/tiny-v3-hf/oracle-37.h5", &ok, &err);
    printf("oracle-37.h5: %d damaged copies read, %d refused with a message\n", ok, err);
    assert_true(err > 0);
    int ok2 = 0, err2 = 0;
    mutate_file("golden/tiny-v3/fp64/prefill-8-1897097a.h5", &ok2, &err2);
    printf("prefill-8 (sealed): %d damaged copies read, %d refused with a message\n", ok2, err2);
    assert_true(err2 > 0);
}

static int group_teardown(void **state)
{
    (void)state;
    if (getenv("MLA_TEST_KEEP")) { /* for inspecting the files with h5dump / h5py */
        fprintf(stderr, "kept %s\n", tmpdir);
        return 0;
    }
    return nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32_known_vector),
        cmocka_unit_test(test_dump_slots),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_write_rejects_bad_shape),
        cmocka_unit_test(test_truncated_file),
        cmocka_unit_test(test_flipped_byte),
        cmocka_unit_test(test_corrupt_every_byte),
        cmocka_unit_test(test_schema_version),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_not_hdf5),
        cmocka_unit_test(test_shape_check_on_read),
        cmocka_unit_test(test_unknown_dtype),
        cmocka_unit_test(test_axis_labels_and_provenance),
        cmocka_unit_test(test_damaged_bytes),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
