/* child_proc.h: a child process that runs a plugin's code, and the caller's side of talking to it
 * against a deadline (private to the harness library: plugin_child.c serves a backend through it,
 * opcheck_child.c an attention operator).
 *
 * The child is forked with a socket pair; it ignores the terminal's signals (the caller decides when
 * to stop), dies with the caller, writes stdout to stderr (a plugin that prints must not mix into
 * mlacheck's output) and never returns into the caller's code (_exit). Before each entry point it
 * names it in a shared page (mla_cproc_stage), so that a crash or hang names the entry point the
 * plugin was in, the library's constructors and register function included. Every read and write
 * of the caller waits with poll() against the call's deadline: a child that stops answering is
 * found whatever it is doing. */
#ifndef MLA_CHILD_PROC_H
#define MLA_CHILD_PROC_H

#include "mla/mla.h"

#include <stddef.h>
#include <sys/types.h>

#define MLA_PCHILD_TIMEOUT_ENV "MLA_PLUGIN_TIMEOUT_S"
#define MLA_PCHILD_TIMEOUT_DEFAULT 600
#define MLA_CPROC_STAGE_MAX 128

typedef struct mla_cproc {
    char name[512];  /* the engine, for messages ("plugin:lib.so") */
    int fd;          /* the caller's end of the socket pair; -1 once closed */
    pid_t pid;
    int timeout_s;   /* per call, MLA_PLUGIN_TIMEOUT_S */
    char *stage;     /* shared with the child (MLA_CPROC_STAGE_MAX bytes): the entry point it is in */
    int dead;        /* the child is gone: dead_msg says how */
    char dead_msg[1024];
} mla_cproc;

/* The child's body: serves requests on fd, names each entry point in stage before calling it;
 * may return (the child then exits 0). */
typedef void (*mla_cproc_body)(int fd, char *stage, void *arg);

/* Forks the child running body(fd, stage, arg); the time limit from MLA_PLUGIN_TIMEOUT_S (strict:
 * whole seconds in [1, 86400], else MLA_ERR_INVALID naming the variable). */
mla_status mla_cproc_spawn(mla_cproc *p, const char *name, mla_cproc_body body, void *arg);

/* The deadline of a call starting now (monotonic seconds), and now. */
double mla_cproc_deadline(const mla_cproc *p);
double mla_cproc_now(void);

/* n bytes to (out = 1) or from the child by the deadline: 0, -1 the child is gone, -2 out of time. */
int mla_cproc_io(mla_cproc *p, void *buf, size_t n, double deadline, int out);

/* The child is gone or must go (timed_out: killed first): reaped, dead_msg set to
 * "engine NAME: ENTRY crashed: ... signal N (...)" / "... exit status N ..." / "did not return within
 * N s ...", the socket closed. entry NULL: the entry the child last named in its stage page.
 * Returns MLA_ERR_DEVICE with dead_msg. */
mla_status mla_cproc_dead(mla_cproc *p, const char *entry, int timed_out);

/* The child answered its last request and exits: wait for it, close the socket, unmap the page. */
void mla_cproc_reap(mla_cproc *p);

/* Unmaps the stage page (after mla_cproc_dead or mla_cproc_reap). */
void mla_cproc_free(mla_cproc *p);

/* The child's side: blocking send (never SIGPIPE) and receive, 0 or -1; naming the entry point. */
int mla_cproc_send(int fd, const void *buf, size_t n);
int mla_cproc_recv(int fd, void *buf, size_t n);
void mla_cproc_stage(char *stage, const char *entry);

/* In the child: loads the plugin library of engine name ("plugin:PATH") so that a crash in its
 * constructors is named "dlopen (the library's constructors)", then names the register function it
 * exports (mla_plugin_register, else mla_attn_plugin_register) as the stage; the caller then resolves
 * the engine through the registry (the same handle). */
void mla_cproc_stage_plugin(char *stage, const char *name);

#endif
