/* test_split_plan.cpp: the decode's KV split plan (gpu/src/gpu_split_plan.h) and kv_split_rows (gpu_kv.h),
 * on the host: every plan's splits cover each token's keys [0, tot) once, in order (a plan one split
 * short must fail the same check); batches of one length keep the equal runs; a batch of uneven
 * lengths takes runs of one length when the simulated makespan says 5% sooner; the simulation itself
 * against its two closed forms (one SM: the sum of the blocks; as many SMs as blocks: the largest). */
#include <stdio.h>

#include <vector>

#include "gpu_kv.h"
#include "gpu_split_plan.h"

namespace {

int fails = 0;

void expect(bool ok, const char *what)
{
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    fails += !ok;
}

uint64_t rng = 0x243f6a8885a308d3ull;
int uniform_int(int lo, int hi) /* [lo, hi) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (int)((rng >> 33) % (uint64_t)(hi - lo));
}

/* Whether splits [0, p.splits) of kv_split_rows cover [0, tot) of every token once, in order. */
bool covers(const std::vector<int> &tot, gpu_split_plan p)
{
    for (size_t t = 0; t < tot.size(); t++) {
        const gpu_seq s = {.slot = 0, .n_past = tot[t] - 1, .n_new = 1, .tok0 = (int)t, .ws0 = 0};
        int at = 0;
        for (int sp = 0; sp < p.splits; sp++) {
            int j0, j1;
            kv_split_rows(s, (int)t, 0, p.splits, p.split_len, sp, &j0, &j1);
            if (j0 != at || j1 < j0) return false;
            at = j1;
        }
        if (at != tot[t]) return false;
    }
    return true;
}

long makespan(const std::vector<int> &tot, int groups, int n_sm, gpu_split_plan p)
{
    std::vector<long> heap(n_sm);
    return sp_makespan(tot.data(), (int)tot.size(), groups, n_sm, p.splits, p.split_len, heap.data());
}

} // namespace

int main()
{
    /* coverage: random batches under the plans sp_pick makes and under fixed ones */
    bool all = true;
    for (int trial = 0; trial < 200; trial++) {
        std::vector<int> tot(uniform_int(1, 40));
        for (int &v : tot) v = uniform_int(1, 9000);
        const gpu_split_plan picked = sp_pick(tot.data(), (int)tot.size(), uniform_int(1, 5), 132, uniform_int(1, 9));
        int mx = 1;
        for (int v : tot) mx = v > mx ? v : mx;
        const int len = uniform_int(1, 700);
        all = all && covers(tot, picked) && covers(tot, gpu_split_plan{(mx + len - 1) / len, len}) &&
              covers(tot, gpu_split_plan{uniform_int(1, 70), 0});
    }
    expect(all, "200 random batches: every split plan covers each token's keys once, in order");
    {
        const std::vector<int> tot = {100, 700, 300};
        expect(!covers(tot, gpu_split_plan{2, 256}), "a plan one split short (2 x 256 < 700) fails the coverage check");
    }

    /* batches of one length, or lengths within a tile: the equal runs */
    const std::vector<int> same(128, 8192);
    gpu_split_plan p = sp_pick(same.data(), 128, 1, 132, 1);
    expect(p.splits == 1 && p.split_len == 0, "b128 of 8192 keys: the equal runs (1 split)");
    std::vector<int> near(128);
    for (int i = 0; i < 128; i++) near[i] = 4096 + i % 2; /* s_q 2: consecutive tokens */
    p = sp_pick(near.data(), 128, 2, 132, 2);
    expect(p.splits == 2 && p.split_len == 0, "key counts within one tile: the equal runs");

    /* uneven lengths: the bench's varlen shape, lengths over [2048, 6144), one block a token */
    std::vector<int> var(128);
    for (int &v : var) v = uniform_int(2048, 6144);
    p = sp_pick(var.data(), 128, 1, 132, 1);
    const long eq = makespan(var, 1, 132, gpu_split_plan{1, 0}), bal = makespan(var, 1, 132, p);
    printf("     varlen b128 [2048, 6144): %d splits of %d keys, makespan %ld against %ld keys (%.2fx)\n", p.splits,
           p.split_len, bal, eq, (double)eq / (double)bal);
    expect(p.split_len > 0 && p.split_len % 64 == 0 && p.split_len >= 256 && bal * 20 <= eq * 19 && covers(var, p),
           "varlen b128: runs of one length, a multiple of 64 of at least 256 keys, >= 5% sooner, covering");

    /* the simulation against its closed forms */
    const std::vector<int> tot = {500, 1000, 64};
    const gpu_split_plan two = {2, 0};
    const long sum = (250 + 64) * 2 + (500 + 64) * 2 + (32 + 64) * 2; /* per split: ceil(tot / 2) keys + SP_FIXED */
    expect(makespan(tot, 1, 1, two) == sum, "one SM: the makespan is the sum of the blocks");
    expect(makespan(tot, 3, 64, two) == 500 + 64, "as many SMs as blocks: the largest block");
    return fails ? 1 : 0;
}
