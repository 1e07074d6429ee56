/* gpu_split_plan.h: the decode's KV split plan, host code kept free of the GPU runtime so that the tests
 * run it anywhere (tests/test_split_plan.cpp). gpu_decode_plan (gpu_attn.hip) reads the switch and the
 * equal-runs count of gpu_decode_splits, then calls sp_pick. */
#ifndef MLA_GPU_SPLIT_PLAN_H
#define MLA_GPU_SPLIT_PLAN_H

#include <stdlib.h>

/* splits: every decode token's count (the combine's); split_len: 0 each token's keys cut into splits
 * equal runs, > 0 runs of split_len keys from key 0 (kv_split_rows). */
typedef struct gpu_split_plan {
    int splits, split_len;
} gpu_split_plan;

#define SP_FIXED 64         /* a block's cost beyond its keys, in keys (gpu_decode_splits' 64) */
#define SP_EMPTY 8          /* an empty block's */
#define SP_MAXBLK (1 << 16) /* blocks simulated a candidate at most (host time: ~10 ns a block) */

/* The block scheduler's makespan, in keys, of a launch's blocks in launch order (split-major, then
 * token and head group) on n_sm SMs holding one block each (the tensor-core kernels); heap: n_sm
 * slots, each SM's finish time as a min-heap. tot[t]: the keys decode token t attends. */
static inline long sp_makespan(const int *tot, int n, int groups, int n_sm, int splits, int split_len, long *heap)
{
    long end = 0;
    for (int i = 0; i < n_sm; i++) heap[i] = 0;
    for (int sp = 0; sp < splits; sp++)
        for (int t = 0; t < n; t++) {
            const int per = split_len > 0 ? split_len : (tot[t] + splits - 1) / splits;
            const int j0 = sp * per < tot[t] ? sp * per : tot[t], j1 = j0 + per < tot[t] ? j0 + per : tot[t];
            const long cost = j1 > j0 ? j1 - j0 + SP_FIXED : SP_EMPTY;
            for (int g = 0; g < groups; g++) {
                const long f = heap[0] + cost; /* the SM free first takes the next block */
                end = f > end ? f : end;
                int i = 0; /* f sifted down from the root */
                for (;;) {
                    int c = 2 * i + 1;
                    if (c >= n_sm) break;
                    if (c + 1 < n_sm && heap[c + 1] < heap[c]) c++;
                    if (heap[c] >= f) break;
                    heap[i] = heap[c];
                    i = c;
                }
                heap[i] = f;
            }
        }
    return end;
}

/* Where the decode tokens' key counts differ by a tile (64) or more: runs of one length L from key 0
 * (L a multiple of 64, at least 256 keys, splits = ceil(max / L), L from max / 2 .. max / 64) instead of
 * `equal` equal runs, when sp_makespan says 5% or more sooner. Why: equal runs leave a batch of uneven
 * lengths as slow as its longest sequence cut over a split count chosen for it alone; with one length
 * a short sequence fills fewer splits and the block scheduler packs the blocks. */
static inline gpu_split_plan sp_pick(const int *tot, int n, int groups, int n_sm, int equal)
{
    gpu_split_plan p = {equal, 0}, cand = p;
    int mx = 1, mn = 1 << 30;
    for (int i = 0; i < n; i++) {
        mx = tot[i] > mx ? tot[i] : mx;
        mn = tot[i] < mn ? tot[i] : mn;
    }
    if (n <= 0 || groups <= 0 || n_sm <= 0 || mx - mn < 64 || (long)n * groups * equal > SP_MAXBLK) return p;
    long *heap = (long *)malloc((size_t)n_sm * sizeof(long));
    if (!heap) return p;
    const long base = sp_makespan(tot, n, groups, n_sm, equal, 0, heap);
    long best = base;
    for (int s = 2; s <= 64; s *= 2) {
        const int len = ((mx + s - 1) / s + 63) / 64 * 64, splits = (mx + len - 1) / len;
        if (len < 256 || (long)n * groups * splits > SP_MAXBLK) break;
        const long m = sp_makespan(tot, n, groups, n_sm, splits, len, heap);
        if (m < best) {
            best = m;
            cand.splits = splits;
            cand.split_len = len;
        }
    }
    free(heap);
    return best * 20 <= base * 19 ? cand : p;
}

#endif
