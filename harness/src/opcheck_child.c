/* opcheck_child.c: the operator route's plugin in a child process (opcheck.h, mla_opcheck_engine).
 *
 * The child loads and registers the plugin (child_proc.c names dlopen and the register function in
 * its stage page while it does), answers the open with the operator's name, then serves one case per
 * request:
 *   request  oc_req: the mla_opcase (plain data: the child makes the inputs from its seed itself, so
 *            the caller's copy, the one the reference reads, is never in the plugin's reach)
 *   response oc_rsp, msg_len bytes (a skip's or an error's reason), then for outputs the n_out and
 *            n_lse floats, each followed by the guard words (a write past the end shows in them)
 * The whole case, inputs included, has MLA_PLUGIN_TIMEOUT_S seconds. A child that dies or does not
 * answer makes that case an ERROR (MLA_ERR_DEVICE, the entry point it was in and the signal or exit
 * status); the next case starts a fresh child. */
#include "child_proc.h"
#include "opcheck_internal.h"
#include "plugin_child.h"

#include "mlacheck/engine_registry.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OC_CASE = 1, OC_QUIT = 2 };
enum { OC_OUT = 0, OC_SKIP = 1, OC_ERROR = 2 };

typedef struct { int32_t op, pad; mla_opcase c; } oc_req;
typedef struct { int32_t kind, status, msg_len, pad; int64_t n_out, n_lse; char name[64]; } oc_rsp;

struct mla_opcheck_engine {
    char name[512];
    const mla_attn_ops *ops; /* in this process (ref, MLA_PLUGIN_CHILD=0); NULL: the child */
    mla_cproc p;
    int live;                /* p holds a child that answered its open */
    char cand_name[64];      /* the operator's own name, from the child */
};

/* ---- the child ------------------------------------------------------------------------------- */

static void oc_reply(int fd, int kind, mla_status st, const char *msg, int64_t n_out, int64_t n_lse,
                     const char *name)
{
    oc_rsp r = {.kind = kind, .status = st, .msg_len = (int32_t)strlen(msg), .n_out = n_out, .n_lse = n_lse};
    snprintf(r.name, sizeof r.name, "%s", name ? name : "");
    if (mla_cproc_send(fd, &r, sizeof r) || mla_cproc_send(fd, msg, (size_t)r.msg_len)) _exit(0);
}

static void oc_case(int fd, char *stage, const mla_attn_ops *ops, const mla_opcase *c)
{
    const char *name = ops->name ? ops->name : "candidate";
    char why[600];
    op_inputs in;
    mla_status st = opcheck_inputs_make(c, &in);
    if (st) {
        oc_reply(fd, OC_ERROR, st, mla_last_error(), 0, 0, NULL);
        return;
    }
    mla_cproc_stage(stage, "supports");
    const char *no = opcheck_declined(c, &in, ops);
    if (no) {
        snprintf(why, sizeof why, "%s declines %s", name, no);
        oc_reply(fd, OC_SKIP, MLA_OK, why, 0, 0, NULL);
        opcheck_inputs_free(&in);
        return;
    }
    int64_t n_out, n_lse;
    opcheck_sizes(c, &in, &n_out, &n_lse);
    float *co = opcheck_buf_new(n_out), *cl = opcheck_buf_new(n_lse);
    if (!co || !cl) st = mla_errorf(MLA_ERR_NOMEM, "opcheck case %s: outputs (in the plugin's process)", c->name);
    if (!st) {
        mla_cproc_stage(stage, c->kind == MLA_OP_MQA ? "mqa" : "mha");
        mla_clear_error();
        st = opcheck_call(c, &in, ops, co, cl);
        if (st) snprintf(why, sizeof why, "%s returned %s: %s", name, mla_strerror(st), mla_last_error());
    } else {
        snprintf(why, sizeof why, "%s", mla_last_error());
    }
    if (st) {
        oc_reply(fd, OC_ERROR, st, why, 0, 0, NULL);
    } else {
        oc_reply(fd, OC_OUT, MLA_OK, "", n_out, n_lse, NULL);
        if (mla_cproc_send(fd, co, (size_t)(n_out + OPCHECK_GUARD) * sizeof(float)) ||
            mla_cproc_send(fd, cl, (size_t)(n_lse + OPCHECK_GUARD) * sizeof(float)))
            _exit(0);
    }
    free(co);
    free(cl);
    opcheck_inputs_free(&in);
}

static void oc_main(int fd, char *stage, void *arg)
{
    const char *name = arg;
    const mla_attn_ops *ops = NULL;
    mla_cproc_stage_plugin(stage, name);
    mla_status st = mla_registry_attn_ops(name, &ops);
    oc_reply(fd, OC_OUT, st, st ? mla_last_error() : "", 0, 0, st ? NULL : ops->name);
    if (st) return;
    for (;;) {
        oc_req q;
        if (mla_cproc_recv(fd, &q, sizeof q) || q.op != OC_CASE) return; /* the caller is gone or done */
        mla_clear_error();
        oc_case(fd, stage, ops, &q.c);
    }
}

/* ---- the caller ------------------------------------------------------------------------------ */

/* n bytes of text from the child into buf[cap] (the rest read and dropped). */
static int oc_text(mla_cproc *p, int32_t n, char *buf, size_t cap, double deadline)
{
    buf[0] = '\0';
    if (n < 0 || n > 1 << 20) return -1;
    for (int32_t got = 0; got < n;) {
        char junk[1024];
        int32_t k = n - got < (int32_t)sizeof junk ? n - got : (int32_t)sizeof junk;
        int e = mla_cproc_io(p, junk, (size_t)k, deadline, 0);
        if (e) return e;
        if ((size_t)got < cap - 1) {
            size_t keep = (size_t)k < cap - 1 - (size_t)got ? (size_t)k : cap - 1 - (size_t)got;
            memcpy(buf + got, junk, keep);
            buf[(size_t)got + keep] = '\0';
        }
        got += k;
    }
    return 0;
}

/* A fresh child: loaded, registered, its name known. MLA_ERR_DEVICE when it died or hung doing so. */
static mla_status oc_spawn(mla_opcheck_engine *e)
{
    mla_status st = mla_cproc_spawn(&e->p, e->name, oc_main, e->name);
    if (st) return st;
    double deadline = mla_cproc_deadline(&e->p);
    oc_rsp r;
    char msg[1024];
    int io = mla_cproc_io(&e->p, &r, sizeof r, deadline, 0);
    if (!io) io = oc_text(&e->p, r.msg_len, msg, sizeof msg, deadline);
    if (io) {
        st = mla_cproc_dead(&e->p, NULL, io == -2); /* the stage names dlopen or the register function */
        mla_cproc_free(&e->p);
        return st;
    }
    if (r.status) {
        mla_cproc_reap(&e->p);
        mla_cproc_free(&e->p);
        return mla_errorf((mla_status)r.status, "%s", msg[0] ? msg : "the plugin refused to load (no message)");
    }
    r.name[sizeof r.name - 1] = '\0';
    snprintf(e->cand_name, sizeof e->cand_name, "%s", r.name[0] ? r.name : "candidate");
    e->live = 1;
    return MLA_OK;
}

/* The child is gone (or must go): the case is the engine's error, the next case gets a fresh child. */
static mla_status oc_lost(mla_opcheck_engine *e, int timed_out, const char *entry, mla_opcase_result *r)
{
    mla_cproc_dead(&e->p, entry, timed_out);
    mla_cproc_free(&e->p);
    e->live = 0;
    r->verdict = MLA_OPCASE_ERROR;
    r->status = MLA_ERR_DEVICE;
    snprintf(r->why, sizeof r->why, "%.*s", (int)sizeof r->why - 1, e->p.dead_msg);
    return MLA_OK;
}

/* The candidate's step through the child (opcheck_cand_fn). */
static mla_status cand_child(void *u, const mla_opcase *c, const op_inputs *in, float *co, float *cl,
                             mla_opcase_result *r)
{
    mla_opcheck_engine *e = u;
    if (!e->live) {
        mla_status st = oc_spawn(e);
        if (st) { /* the plugin loaded before: that it does not now is the engine's error */
            r->verdict = MLA_OPCASE_ERROR;
            r->status = st;
            snprintf(r->why, sizeof r->why, "%.*s", (int)sizeof r->why - 1, mla_last_error());
            return MLA_OK;
        }
    }
    double deadline = mla_cproc_deadline(&e->p);
    oc_req q;
    memset(&q, 0, sizeof q);
    q.op = OC_CASE;
    q.c = *c;
    oc_rsp rs;
    char msg[sizeof r->why];
    int io = mla_cproc_io(&e->p, &q, sizeof q, deadline, 1);
    if (!io) io = mla_cproc_io(&e->p, &rs, sizeof rs, deadline, 0);
    if (!io) io = oc_text(&e->p, rs.msg_len, msg, sizeof msg, deadline);
    if (io) return oc_lost(e, io == -2, NULL, r);
    if (rs.kind == OC_SKIP || rs.kind == OC_ERROR) {
        r->verdict = rs.kind == OC_SKIP ? MLA_OPCASE_SKIP : MLA_OPCASE_ERROR;
        r->status = rs.kind == OC_SKIP ? MLA_OK : rs.status ? (mla_status)rs.status : MLA_ERR_DEVICE;
        snprintf(r->why, sizeof r->why, "%s", msg);
        return MLA_OK;
    }
    int64_t n_out, n_lse;
    opcheck_sizes(c, in, &n_out, &n_lse);
    if (rs.kind != OC_OUT || rs.n_out != n_out || rs.n_lse != n_lse) {
        /* the plugin shares the child's memory and may have written anything to the socket */
        oc_lost(e, 1, c->kind == MLA_OP_MQA ? "mqa" : "mha", r);
        snprintf(r->why, sizeof r->why, "engine %.120s: %s: the plugin process sent a malformed answer (kind %d, "
                 "%lld and %lld floats, expected %lld and %lld); the process was stopped", e->name,
                 c->kind == MLA_OP_MQA ? "mqa" : "mha", (int)rs.kind, (long long)rs.n_out, (long long)rs.n_lse,
                 (long long)n_out, (long long)n_lse);
        return MLA_OK;
    }
    io = mla_cproc_io(&e->p, co, (size_t)(n_out + OPCHECK_GUARD) * sizeof(float), deadline, 0);
    if (!io) io = mla_cproc_io(&e->p, cl, (size_t)(n_lse + OPCHECK_GUARD) * sizeof(float), deadline, 0);
    if (io) return oc_lost(e, io == -2, NULL, r);
    return MLA_OK;
}

mla_status mla_opcheck_engine_open(const char *engine, mla_opcheck_engine **out)
{
    *out = NULL;
    if (!engine) return mla_errorf(MLA_ERR_INVALID, "operator engine: NULL name");
    mla_opcheck_engine *e = calloc(1, sizeof *e);
    if (!e) return mla_errorf(MLA_ERR_NOMEM, "operator engine %s", engine);
    snprintf(e->name, sizeof e->name, "%s", engine);
    mla_status st;
    if (strncmp(engine, "plugin:", 7) != 0 || !mla_pchild_wanted()) st = mla_opcheck_open(engine, &e->ops);
    else st = oc_spawn(e);
    if (st) {
        free(e);
        return st;
    }
    *out = e;
    return MLA_OK;
}

mla_status mla_opcheck_run_engine(const char *which, mla_opcheck_engine *e, const mla_opcheck_opts *o,
                                  mla_opcheck_summary *summary, mla_opcase_result **results)
{
    if (!e) {
        memset(summary, 0, sizeof *summary);
        if (results) *results = NULL;
        return mla_errorf(MLA_ERR_INVALID, "opcheck %s: engine is NULL", which ? which : "");
    }
    if (e->ops) return mla_opcheck_run_suite(which, e->ops, o, summary, results);
    return opcheck_run_suite_with(which, cand_child, e, e->cand_name, o, summary, results);
}

void mla_opcheck_engine_close(mla_opcheck_engine *e)
{
    if (!e) return;
    if (e->live) {
        /* a child that does not take its leave within 30 s is killed */
        int save = e->p.timeout_s;
        e->p.timeout_s = save < 30 ? save : 30;
        oc_req q;
        memset(&q, 0, sizeof q);
        q.op = OC_QUIT;
        char keep[1024];
        snprintf(keep, sizeof keep, "%s", mla_last_error());
        if (mla_cproc_io(&e->p, &q, sizeof q, mla_cproc_deadline(&e->p), 1)) mla_cproc_dead(&e->p, "quit", 1);
        else mla_cproc_reap(&e->p);
        mla_errorf(MLA_OK, "%s", keep); /* the run's last error survives the close */
        mla_cproc_free(&e->p);
    }
    free(e);
}
