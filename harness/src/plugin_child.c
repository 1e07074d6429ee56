/* plugin_child.c: a plugin engine in a child process (plugin_child.h).
 *
 * The protocol on the socket pair, one request then one response at a time:
 *   request  pc_req, then len payload bytes (load: the run options; forward: the batch arrays)
 *   response pc_rsp, then msg_len bytes of mla_last_error() text, then for a tensor a pc_tens and
 *            its nbytes of data
 * The process, its deadlines and how a death is named are child_proc.c's; the library is dlopen'd
 * and registered in the child (the caller never maps the plugin), each entry point named in the
 * stage page before it is called. */
#include "plugin_child.h"

#include "child_proc.h"
#include "mla_ref/ref.h"
#include "mlacheck/engine_registry.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { PC_CREATE, PC_SUPPORTS, PC_LOAD, PC_RESET, PC_MHA, PC_MQA, PC_TAP, PC_KV, PC_DESTROY } pc_op;
static const char *const pc_entry[] = {"create", "supports", "load", "reset", "forward_mha", "forward_mqa",
                                       "read_tap", "read_kv", "destroy"};

typedef struct { int32_t op, a, b, pad; int64_t len; } pc_req;
/* has_tensor: 0 none (NULL with MLA_OK, or an error), 1 a pc_tens follows, 2 the plugin returned a
 * tensor that cannot be sent (the message says what was wrong with it) */
typedef struct { int32_t status, ival, msg_len, has_tensor; } pc_rsp;
typedef struct { int32_t dtype, ndim; int64_t shape[MLA_MAX_DIMS]; int64_t nbytes; char name[MLA_NAME_MAX]; } pc_tens;

#define PC_MAX_BYTES ((int64_t)1 << 40) /* no tap of any MLA checkpoint comes near a TiB */

typedef struct pc_ctx {
    mla_cproc p;       /* p.dead: the child is gone, every call answers p.dead_msg */
    const mla_model *model;
} pc_ctx;

/* ---- the child ------------------------------------------------------------------------------- */

static void c_reply(int fd, mla_status st, int ival, const mla_tensor *t, int has_tensor)
{
    const char *msg = st ? mla_last_error() : "";
    pc_rsp r = {.status = st, .ival = ival, .msg_len = (int32_t)strlen(msg), .has_tensor = has_tensor};
    if (mla_cproc_send(fd, &r, sizeof r) || mla_cproc_send(fd, msg, (size_t)r.msg_len)) _exit(0);
    if (has_tensor != 1) return;
    pc_tens h;
    memset(&h, 0, sizeof h);
    h.dtype = (int32_t)t->dtype;
    h.ndim = t->ndim;
    memcpy(h.shape, t->shape, sizeof h.shape);
    h.nbytes = mla_tensor_numel(t) * (int64_t)mla_dtype_size(t->dtype);
    memcpy(h.name, t->name, sizeof h.name - 1);
    /* the bytes the shape promises are read here, in the plugin's process: a short buffer crashes
     * the child (an engine error naming read_tap), never the caller */
    if (mla_cproc_send(fd, &h, sizeof h) || mla_cproc_send(fd, t->data, (size_t)h.nbytes)) _exit(0);
}

/* A tensor the plugin returned, before it is sent: what the caller could not rebuild is refused
 * as the engine's error (MLA_ERR_DEVICE: the plugin misbehaved, the input was fine), naming what
 * (e.g. "read_tap of layer 0 tap attn_core"), what came and what was expected (shape and rows are
 * the driver's check_tap, against the call). */
static void c_reply_tensor(int fd, mla_status st, mla_tensor *t, const char *what)
{
    if (st || !t) {
        c_reply(fd, st, 0, NULL, 0);
        return;
    }
    const char *bad = NULL;
    int64_t numel = 1;
    if ((unsigned)t->dtype >= MLA_DTYPE_COUNT) bad = "an unknown dtype";
    else if (t->ndim < 0 || t->ndim > MLA_MAX_DIMS) bad = "a rank outside 0..6";
    for (int i = 0; !bad && i < t->ndim; i++) {
        if (t->shape[i] < 0) bad = "a negative dimension";
        else if (t->shape[i] && numel > PC_MAX_BYTES / t->shape[i]) bad = "more than 2^40 elements";
        else numel *= t->shape[i];
    }
    if (!bad && numel * (int64_t)mla_dtype_size(t->dtype) > PC_MAX_BYTES) bad = "more than 2^40 bytes";
    if (!bad && numel && !t->data) bad = "no data";
    if (bad) {
        mla_status e = mla_errorf(MLA_ERR_DEVICE, "%s returned OK and a tensor with %s (dtype %d, rank %d), expected "
                                  "a known dtype, rank 0..6, dimensions >= 0 and its data", what, bad, (int)t->dtype,
                                  t->ndim);
        c_reply(fd, e, 0, NULL, 2);
        return; /* not freed: a malformed tensor may not be the plugin's to free either */
    }
    c_reply(fd, MLA_OK, 0, t, 1);
    mla_tensor_free(t);
}

/* A batch from the payload: n, flags (bit k: array k present), then the arrays. */
static mla_status c_batch(const char *p, int64_t len, mla_batch *b, int32_t **store)
{
    int32_t head[2];
    if (len < (int64_t)sizeof head) return mla_errorf(MLA_ERR_INVALID, "plugin child: short batch");
    memcpy(head, p, sizeof head);
    int n = head[0], flags = head[1];
    int64_t words = (len - (int64_t)sizeof head) / 4;
    int32_t *w = malloc((size_t)(words > 0 ? words : 1) * 4);
    if (!w) return mla_errorf(MLA_ERR_NOMEM, "plugin child: batch");
    memcpy(w, p + sizeof head, (size_t)words * 4);
    *store = w;
    memset(b, 0, sizeof *b);
    b->n_seqs = n;
    int64_t at = 0, nn = n > 0 ? n : 0;
    const int32_t **arr[3] = {&b->seq_ids, &b->n_past, &b->n_new};
    for (int k = 0; k < 3; k++)
        if (flags & (1 << k)) {
            *arr[k] = w + at;
            at += nn;
        }
    if (flags & 8) b->tokens = w + at;
    return MLA_OK;
}

static void c_serve(int fd, char *stage, const mla_backend_ops *ops, void *ctx)
{
    for (;;) {
        pc_req q;
        if (mla_cproc_recv(fd, &q, sizeof q)) _exit(0); /* the caller is gone */
        char *p = NULL;
        if (q.len > 0) {
            if (!(p = malloc((size_t)q.len)) || mla_cproc_recv(fd, p, (size_t)q.len)) _exit(0);
        }
        if (q.op >= 0 && q.op <= PC_DESTROY) mla_cproc_stage(stage, pc_entry[q.op]);
        mla_clear_error();
        mla_status st = MLA_OK;
        mla_tensor *t = NULL;
        int32_t *store = NULL;
        mla_batch b;
        switch ((pc_op)q.op) {
        case PC_SUPPORTS: c_reply(fd, MLA_OK, ops->supports(ctx, (mla_feature)q.a), NULL, 0); break;
        case PC_LOAD: {
            mla_run_opts o;
            uint64_t model;
            memcpy(&o, p, sizeof o);
            memcpy(&model, p + sizeof o, sizeof model);
            c_reply(fd, ops->load(ctx, (mla_model *)(uintptr_t)model, &o), 0, NULL, 0);
            break;
        }
        case PC_RESET: c_reply(fd, ops->reset(ctx), 0, NULL, 0); break;
        case PC_MHA:
        case PC_MQA:
            st = c_batch(p, q.len, &b, &store);
            if (!st) st = q.op == PC_MHA ? ops->forward_mha(ctx, &b) : ops->forward_mqa(ctx, &b);
            free(store);
            c_reply(fd, st, 0, NULL, 0);
            break;
        case PC_TAP: {
            char what[96];
            if (q.a < 0) snprintf(what, sizeof what, "read_tap of global tap %s", mla_tap_name((mla_tap)q.b));
            else snprintf(what, sizeof what, "read_tap of layer %d tap %s", q.a, mla_tap_name((mla_tap)q.b));
            st = ops->read_tap(ctx, q.a, (mla_tap)q.b, &t);
            c_reply_tensor(fd, st, t, what);
            break;
        }
        case PC_KV: {
            char what[96];
            snprintf(what, sizeof what, "read_kv of layer %d sequence %d", q.a, q.b);
            st = ops->read_kv ? ops->read_kv(ctx, q.a, q.b, &t)
                              : mla_errorf(MLA_ERR_UNSUPPORTED, "the plugin has no read_kv");
            c_reply_tensor(fd, st, t, what);
            break;
        }
        case PC_DESTROY:
            ops->destroy(ctx);
            c_reply(fd, MLA_OK, 0, NULL, 0);
            _exit(0);
        default: c_reply(fd, mla_errorf(MLA_ERR_INVALID, "plugin child: request %d", q.op), 0, NULL, 0);
        }
        free(p);
    }
}

/* The child's life (child_proc.c set up the process): the library loaded and registered here, so
 * that its constructors and register function cannot take the caller down either, then the engine
 * created and served. */
static void c_main(int fd, char *stage, void *arg)
{
    const char *name = arg;
    const mla_backend_ops *inner = NULL;
    const mla_attn_ops *attn = NULL;
    void *ctx = NULL;
    mla_cproc_stage_plugin(stage, name);
    mla_status st = mla_registry_backend(name, &inner, &attn);
    if (!st) {
        mla_cproc_stage(stage, pc_entry[PC_CREATE]);
        st = inner->create(&ctx);
        if (!st && attn && (st = mla_ref_set_attn_ops(ctx, attn))) inner->destroy(ctx);
    }
    c_reply(fd, st, 0, NULL, 0);
    if (st) _exit(0);
    c_serve(fd, stage, inner, ctx);
    _exit(0);
}

/* ---- the caller ------------------------------------------------------------------------------ */

/* One call: the request, its payload, the response (*ival, *out for tensors). */
static mla_status p_call(pc_ctx *c, pc_op op, int a, int b, const void *payload, int64_t len, int *ival,
                         mla_tensor **out)
{
    if (out) *out = NULL;
    if (c->p.dead) return mla_errorf(MLA_ERR_DEVICE, "%s (the engine is gone; %s)", c->p.dead_msg, pc_entry[op]);
    double deadline = mla_cproc_deadline(&c->p);
    pc_req q = {.op = op, .a = a, .b = b, .len = len};
    pc_rsp r;
    int e = mla_cproc_io(&c->p, &q, sizeof q, deadline, 1);
    if (!e && len) e = mla_cproc_io(&c->p, (void *)payload, (size_t)len, deadline, 1);
    if (!e) e = mla_cproc_io(&c->p, &r, sizeof r, deadline, 0);
    char msg[1024] = "";
    if (!e && (r.msg_len < 0 || r.msg_len > 1 << 20)) e = -1;
    for (int32_t got = 0; !e && got < r.msg_len;) {
        char junk[1024];
        int32_t k = r.msg_len - got < (int32_t)sizeof junk ? r.msg_len - got : (int32_t)sizeof junk;
        e = mla_cproc_io(&c->p, junk, (size_t)k, deadline, 0);
        if (!e && got < (int32_t)sizeof msg - 1) {
            int32_t keep = k < (int32_t)sizeof msg - 1 - got ? k : (int32_t)sizeof msg - 1 - got;
            memcpy(msg + got, junk, (size_t)keep);
        }
        got += k;
    }
    mla_tensor *t = NULL;
    if (!e && r.has_tensor == 1) {
        pc_tens h;
        e = mla_cproc_io(&c->p, &h, sizeof h, deadline, 0);
        /* the child checked the tensor; the caller checks the header again (the plugin shares the
         * child's memory and could have written anything to the socket) */
        int64_t numel = 1;
        int ok = !e && (unsigned)h.dtype < MLA_DTYPE_COUNT && h.ndim >= 0 && h.ndim <= MLA_MAX_DIMS;
        for (int i = 0; ok && i < h.ndim; i++) {
            ok = h.shape[i] >= 0 && (!h.shape[i] || numel <= PC_MAX_BYTES / h.shape[i]);
            if (ok) numel *= h.shape[i];
        }
        if (!e && (!ok || numel * (int64_t)mla_dtype_size((mla_dtype)h.dtype) != h.nbytes || h.nbytes > PC_MAX_BYTES)) {
            mla_cproc_dead(&c->p, pc_entry[op], 1);
            return mla_errorf(MLA_ERR_DEVICE, "engine %s: %s: the plugin process sent a malformed tensor header "
                              "(dtype %d, rank %d, %lld bytes); the engine was stopped", c->p.name, pc_entry[op],
                              (int)h.dtype, (int)h.ndim, (long long)h.nbytes);
        }
        if (!e) {
            h.name[sizeof h.name - 1] = '\0';
            mla_status st = mla_tensor_new(&t, (mla_dtype)h.dtype, h.ndim, h.shape, h.name);
            if (st) {
                /* the stream still holds the bytes: this engine cannot go on */
                mla_cproc_dead(&c->p, pc_entry[op], 1);
                return mla_errorf(st, "engine %s: %s: a tensor of %lld bytes: %s", c->p.name, pc_entry[op],
                                  (long long)h.nbytes, "cannot hold it");
            }
            e = mla_cproc_io(&c->p, t->data, (size_t)h.nbytes, deadline, 0);
            if (e) {
                mla_tensor_free(t);
                t = NULL;
            }
        }
    }
    if (e) return mla_cproc_dead(&c->p, pc_entry[op], e == -2);
    if (ival) *ival = r.ival;
    if (r.status) {
        msg[sizeof msg - 1] = '\0';
        if (!msg[0]) /* "first error: device error: " and nothing after it told no one anything */
            return mla_errorf((mla_status)r.status, "engine %s: %s returned '%s' and set no message", c->p.name,
                              pc_entry[op], mla_strerror((mla_status)r.status));
        if (r.has_tensor == 2) /* a tensor the child refused: the message is the child's, the engine ours */
            return mla_errorf((mla_status)r.status, "engine %s: %s", c->p.name, msg);
        return mla_errorf((mla_status)r.status, "%s", msg);
    }
    if (out) *out = t;
    else mla_tensor_free(t);
    return MLA_OK;
}

static mla_status p_create(void **ctx)
{
    (void)ctx;
    return mla_errorf(MLA_ERR_INVALID, "plugin child: create is mla_pchild_open's");
}

static int p_supports(void *ctx, mla_feature f)
{
    int v = 0;
    if (p_call(ctx, PC_SUPPORTS, (int)f, 0, NULL, 0, &v, NULL)) return 0;
    return v;
}

static mla_status p_load(void *vc, mla_model *model, const mla_run_opts *o)
{
    pc_ctx *c = vc;
    if (model != c->model)
        return mla_errorf(MLA_ERR_INVALID, "engine %s: load: a model other than the one the engine was opened with", c->p.name);
    char p[sizeof *o + sizeof(uint64_t)];
    uint64_t m = (uint64_t)(uintptr_t)model;
    memcpy(p, o, sizeof *o);
    memcpy(p + sizeof *o, &m, sizeof m);
    return p_call(c, PC_LOAD, 0, 0, p, (int64_t)sizeof p, NULL, NULL);
}

static mla_status p_reset(void *ctx) { return p_call(ctx, PC_RESET, 0, 0, NULL, 0, NULL, NULL); }

/* The batch as the child rebuilds it (c_batch); NULL arrays stay NULL, for the plugin to refuse. */
static mla_status p_forward(pc_ctx *c, pc_op op, const mla_batch *b)
{
    if (!b) return mla_errorf(MLA_ERR_INVALID, "engine %s: %s: NULL batch", c->p.name, pc_entry[op]);
    int64_t n = b->n_seqs > 0 ? b->n_seqs : 0, ntok = 0;
    if (b->n_new)
        for (int64_t i = 0; i < n; i++) ntok += b->n_new[i] > 0 ? b->n_new[i] : 0;
    if (!b->tokens) ntok = 0;
    int flags = (b->seq_ids ? 1 : 0) | (b->n_past ? 2 : 0) | (b->n_new ? 4 : 0) | (b->tokens ? 8 : 0);
    int64_t words = 2 + n * (!!b->seq_ids + !!b->n_past + !!b->n_new) + ntok;
    int32_t *w = malloc((size_t)words * 4);
    if (!w) return mla_errorf(MLA_ERR_NOMEM, "engine %s: a batch of %lld tokens", c->p.name, (long long)ntok);
    w[0] = b->n_seqs;
    w[1] = flags;
    int64_t at = 2;
    const int32_t *arr[3] = {b->seq_ids, b->n_past, b->n_new};
    for (int k = 0; k < 3; k++)
        if (arr[k]) {
            memcpy(w + at, arr[k], (size_t)n * 4);
            at += n;
        }
    if (ntok) memcpy(w + at, b->tokens, (size_t)ntok * 4);
    mla_status st = p_call(c, op, 0, 0, w, words * 4, NULL, NULL);
    free(w);
    return st;
}

static mla_status p_mha(void *ctx, const mla_batch *b) { return p_forward(ctx, PC_MHA, b); }
static mla_status p_mqa(void *ctx, const mla_batch *b) { return p_forward(ctx, PC_MQA, b); }

static mla_status p_tap(void *ctx, int layer, mla_tap tap, mla_tensor **out)
{
    return p_call(ctx, PC_TAP, layer, (int)tap, NULL, 0, NULL, out);
}

static mla_status p_kv(void *ctx, int layer, int seq, mla_tensor **out)
{
    return p_call(ctx, PC_KV, layer, seq, NULL, 0, NULL, out);
}

static void p_destroy(void *vc)
{
    pc_ctx *c = vc;
    if (!c) return;
    /* destroy runs after a failed call too (the driver evicts the engine): the caller's message
     * of that failure must survive it */
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", mla_last_error());
    if (!c->p.dead) {
        int save = c->p.timeout_s;
        c->p.timeout_s = save < 30 ? save : 30; /* a destroy that hangs is not waited for long */
        mla_status st = p_call(c, PC_DESTROY, 0, 0, NULL, 0, NULL, NULL);
        if (!st) mla_cproc_reap(&c->p); /* the child exits after answering */
        /* else p_call reaped it (dead) and its error is dropped: nothing reads a closed engine */
    }
    mla_errorf(MLA_OK, "%s", keep);
    mla_cproc_free(&c->p);
    free(c);
}

mla_status mla_pchild_status(const void *ctx)
{
    const pc_ctx *c = ctx;
    return c && c->p.dead ? mla_errorf(MLA_ERR_DEVICE, "%s", c->p.dead_msg) : MLA_OK;
}

static const mla_backend_ops pc_ops = {
    .abi_version = MLA_BACKEND_ABI_VERSION,
    .name = "plugin-child",
    .create = p_create,
    .supports = p_supports,
    .load = p_load,
    .reset = p_reset,
    .forward_mha = p_mha,
    .forward_mqa = p_mqa,
    .read_tap = p_tap,
    .read_kv = p_kv,
    .destroy = p_destroy,
};

int mla_pchild_wanted(void)
{
    const char *s = getenv("MLA_PLUGIN_CHILD");
    return !(s && !strcmp(s, "0"));
}

mla_status mla_pchild_open(const char *name, const mla_model *model, const mla_backend_ops **ops, void **ctx)
{
    *ops = NULL;
    *ctx = NULL;
    pc_ctx *c = calloc(1, sizeof *c);
    if (!c) return mla_errorf(MLA_ERR_NOMEM, "engine %s: engine", name);
    c->model = model;
    mla_status st = mla_cproc_spawn(&c->p, name, c_main, (void *)name);
    if (st) {
        free(c);
        return st;
    }
    /* create's answer, the first response: loading, registering and creating (a call's time limit) */
    pc_rsp r;
    double deadline = mla_cproc_deadline(&c->p);
    int e = mla_cproc_io(&c->p, &r, sizeof r, deadline, 0);
    char msg[1024] = "";
    if (!e && r.msg_len > 0) e = mla_cproc_io(&c->p, msg, (size_t)(r.msg_len < (int)sizeof msg - 1 ? r.msg_len : (int)sizeof msg - 1), deadline, 0);
    if (e) {
        st = mla_cproc_dead(&c->p, NULL, e == -2); /* the stage names dlopen, the register function or create */
        mla_cproc_free(&c->p);
        free(c);
        return st;
    }
    if (r.status) {
        mla_cproc_reap(&c->p);
        mla_cproc_free(&c->p);
        free(c);
        if (!msg[0]) return mla_errorf((mla_status)r.status, "engine %s: create returned '%s' and set no message", name,
                                       mla_strerror((mla_status)r.status));
        return mla_errorf((mla_status)r.status, "%s", msg);
    }
    *ops = &pc_ops;
    *ctx = c;
    return MLA_OK;
}
