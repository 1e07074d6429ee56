/* bisect.c: the first divergence of each failing check from a run's metrics, and the replay of saved
 * failures through the reference under each fault hypothesis (bisect.h). */
#include "mlacheck/bisect.h"

#include "mla/taps.h"
#include "mlacheck/driver.h"
#include "mlacheck/dumpcmp.h"
#include "mlacheck/failure.h"
#include "mlacheck/h5io.h"
#include "mla_model/model.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int same_check(const mla_rep_row *a, const mla_rep_row *b)
{
    return !strcmp(a->case_name, b->case_name) && !strcmp(a->check, b->check) && !strcmp(a->profile, b->profile) &&
           !strcmp(a->path, b->path);
}

mla_status mla_bisect_first_failures(const mla_metrics *m, mla_bisect_hit **hits, size_t *n)
{
    *hits = NULL;
    *n = 0;
    size_t cap = 0;
    for (size_t i = 0; i < m->n_rows; i++) {
        const mla_rep_row *w = &m->rows[i];
        if (w->pass) continue;
        size_t j = 0;
        while (j < *n && !same_check((*hits)[j].row, w)) j++;
        if (j < *n) continue; /* not the first failing row of its check */
        if (*n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            mla_bisect_hit *nh = realloc(*hits, nc * sizeof *nh);
            if (!nh) {
                free(*hits);
                *hits = NULL;
                *n = 0;
                return mla_errorf(MLA_ERR_NOMEM, "bisect: %zu failing checks", nc);
            }
            *hits = nh;
            cap = nc;
        }
        (*hits)[(*n)++] = (mla_bisect_hit){.row = w, .op = mla_bisect_tap_op(w->tap)};
    }
    return MLA_OK;
}

const char *mla_bisect_tap_op(const char *tap)
{
    mla_tap t;
    if (tap && mla_tap_from_name(tap, &t) == 0) return mla_tap_op(t);
    if (tap && !strcmp(tap, "worst")) return "sweep (see the kv length)";
    return "?";
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void mla_bisect_names_free(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

mla_status mla_bisect_saved_failures(const char *run_dir, char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    char dir[4200];
    if (snprintf(dir, sizeof dir, "%s/failures", run_dir) >= (int)sizeof dir)
        return mla_errorf(MLA_ERR_INVALID, "%s: path too long", run_dir);
    DIR *d = opendir(dir);
    if (!d) return mla_errorf(errno == ENOENT ? MLA_ERR_NOT_FOUND : MLA_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    mla_status st = MLA_OK;
    size_t cap = 0;
    for (struct dirent *de; !st && (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        if (l < 4 || strcmp(de->d_name + l - 3, ".h5")) continue;
        if (*n == cap) {
            char **nn = realloc(*names, (cap = cap ? 2 * cap : 16) * sizeof *nn);
            if (!nn) {
                st = mla_errorf(MLA_ERR_NOMEM, "%s: %zu names", dir, cap);
                break;
            }
            *names = nn;
        }
        if (!((*names)[*n] = strndup(de->d_name, l - 3))) st = mla_errorf(MLA_ERR_NOMEM, "%s: names", dir);
        else (*n)++;
    }
    closedir(d);
    if (st) {
        mla_bisect_names_free(*names, *n);
        *names = NULL;
        *n = 0;
        return st;
    }
    if (*n) qsort(*names, *n, sizeof **names, cmp_names);
    return MLA_OK;
}

/* The reference's dump of the candidate's tokens under faults (bits), into *out (caller frees). */
static mla_status replay_drive(mla_model *m, const mla_failure *in, mla_profile prof, mla_path path,
                               const mla_tensor *tokens, unsigned faults, mla_dump **out)
{
    int n = (int)tokens->shape[0];
    const int32_t *tp[1] = {tokens->data};
    mla_drive_opts d = {.path = path, .prefill_len = in->prefill_len, .chunk = in->chunk};
    mla_run_opts ro;
    mla_run_opts_default(&ro);
    ro.profile = prof;
    ro.max_seqs = 1;
    ro.max_seq_len = n + 1;
    ro.block_size = in->block_size;
    ro.faults = faults;
    mla_engine e;
    mla_status st = mla_engine_open("ref", m, &ro, &e);
    if (st) return st;
    st = mla_drive(&e, mla_model_config(m), 1, tp, &n, &d, out);
    mla_engine_close(&e);
    return st;
}

mla_status mla_bisect_replay(const char *run_dir, const char *name, const mla_rules *rules, int *fault)
{
    *fault = MLA_BISECT_NOT_REPRODUCED;
    char txt[4400], h5[4400];
    if (snprintf(txt, sizeof txt, "%s/failures/%s.txt", run_dir, name) >= (int)sizeof txt ||
        snprintf(h5, sizeof h5, "%s/failures/%s.h5", run_dir, name) >= (int)sizeof h5)
        return mla_errorf(MLA_ERR_INVALID, "%s: path too long", run_dir);
    mla_failure in;
    mla_dump *cand = NULL;
    mla_model *m = NULL;
    mla_path pth;
    mla_profile prof;
    mla_status st = mla_failure_load(txt, &in);
    if (!st && mla_path_from_name(in.path, &pth))
        st = mla_errorf(MLA_ERR_FORMAT, "%s: path '%s'; expected prefill, decode or chunked", txt, in.path);
    if (!st && mla_profile_from_name(in.profile, &prof))
        st = mla_errorf(MLA_ERR_FORMAT, "%s: profile '%s' is not a known profile", txt, in.profile);
    if (!st) st = mla_h5_read(h5, &cand);
    if (!st && !cand->tokens) st = mla_errorf(MLA_ERR_FORMAT, "%s: the dump holds no tokens", h5);
    if (!st) st = mla_model_open(in.model, &m);
    char check[128];
    snprintf(check, sizeof check, "%s", st ? "" : in.check);
    char *at = strchr(check, '@');
    if (at) *at = '\0'; /* replay against the reference's own budget for this check */
    for (int h = -1; !st && h < MLA_FAULT_COUNT && *fault == MLA_BISECT_NOT_REPRODUCED; h++) {
        mla_dump *ref = NULL;
        st = replay_drive(m, &in, prof, pth, cand->tokens, h < 0 ? 0 : 1u << h, &ref);
        mla_dcmp_ctx c = {.rules = rules, .model = m, .check = check, .profile = in.profile, .path = in.path, .kv_len = -1};
        mla_dcmp_result res;
        if (!st && mla_dcmp(&c, ref, cand, &res) == MLA_OK && res.n_failed == 0 && res.n_compared > 0)
            *fault = h < 0 ? MLA_BISECT_NO_FAULT : h;
        mla_dump_free(ref);
    }
    mla_dump_free(cand);
    mla_model_free(m);
    mla_failure_free(&in);
    return st;
}
