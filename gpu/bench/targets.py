#!/usr/bin/env python3
"""The speed targets of the GPU engine (issue 14, H200), judged on one mla_gpu_bench --tsv file and,
for the prefill ratio, the torch_side_by_side.py --out file of the same run: one line per target and
row with the measured figure, the share of the target and met / MISSED, then a count. Rows of the
tensor-core kernels only (decode-m, prefill-m); a target whose rows are absent says so.

  decode, memory-bound: bf16, b 128, s_q 1, h 16-64, s_k 4096-8192: >= 3,300 GB/s
  decode, compute-bound: bf16, b 128, h 128, s_q 1 and 2: >= 400 TFLOP/s
  fp8 decode: each fp8 / fp8_ds_mla row at a memory-bound shape: >= 1.6x the tokens/s of the bf16 row
              of the same shape (tokens/s ratio = bf16 us / fp8 us)
  prefill P1: b 1, h 128, s 8192 and 16384: >= 500 TFLOP/s
  prefill P1: every prefill-m row: >= 0.8x torch SDPA (cuDNN) of the same run (SDPA us / ours us)

usage: targets.py BENCH.tsv [--torch TORCH.tsv]
exit: 0 (the verdicts are printed, not an exit status: a benchmark reports, CI gates correctness),
      2 bad usage or an unreadable file
"""
import csv
import sys

GBS, TFLOPS, FP8X, P1_TFLOPS, SDPA_X = 3300.0, 400.0, 1.6, 500.0, 0.8


def key(r):
    return (r["kernel"], r["kv"], int(r["b"]), int(r["s_k"]), int(r["h"]), int(r["s_q"]))


def shape(r):
    return f"{r['kv']} b{r['b']} s_k {r['s_k']} h{r['h']} s_q {r['s_q']}"


def judge(rows, torch_rows):
    """[(target, row, measured, share)], [targets without rows]"""
    out, absent = [], []
    dec = [r for r in rows if r["kernel"] == "decode-m" and r["ok"] == "1"]
    mem = lambda r: int(r["b"]) == 128 and int(r["s_q"]) == 1 and 16 <= int(r["h"]) <= 64 and int(r["s_k"]) in (4096, 8192)
    t = f"decode memory-bound >= {GBS:,.0f} GB/s"
    sel = [r for r in dec if r["kv"] == "bf16" and mem(r)]
    out += [(t, shape(r), f"{float(r['gbs']):,.0f} GB/s", float(r["gbs"]) / GBS) for r in sel]
    absent += [] if sel else [t]
    t = f"decode compute-bound >= {TFLOPS:.0f} TFLOP/s"
    sel = [r for r in dec if r["kv"] == "bf16" and int(r["b"]) == 128 and int(r["h"]) == 128 and int(r["s_q"]) in (1, 2)]
    out += [(t, shape(r), f"{float(r['tflops']):.1f} TFLOP/s", float(r["tflops"]) / TFLOPS) for r in sel]
    absent += [] if sel else [t]
    t = f"fp8 decode >= {FP8X}x the bf16 tokens/s"
    bf = {key(r)[2:]: r for r in dec if r["kv"] == "bf16"}
    sel = [(r, bf[key(r)[2:]]) for r in dec if r["kv"] in ("fp8", "fp8ds") and mem(r) and key(r)[2:] in bf]
    out += [(t, shape(r), f"{float(b['median_us']) / float(r['median_us']):.2f}x ({float(r['median_us']):.1f} us, "
             f"bf16 {float(b['median_us']):.1f})", float(b["median_us"]) / float(r["median_us"]) / FP8X) for r, b in sel]
    absent += [] if sel else [t]
    pre = [r for r in rows if r["kernel"] == "prefill-m" and r["ok"] == "1"]
    t = f"prefill P1 s 8k, 16k >= {P1_TFLOPS:.0f} TFLOP/s"
    sel = [r for r in pre if int(r["b"]) == 1 and int(r["h"]) == 128 and int(r["s_k"]) in (8192, 16384)]
    out += [(t, shape(r), f"{float(r['tflops']):.1f} TFLOP/s", float(r["tflops"]) / P1_TFLOPS) for r in sel]
    absent += [] if sel else [t]
    t = f"prefill P1 >= {SDPA_X}x torch SDPA"
    sdpa = {key(r): r for r in torch_rows if r["instead"].startswith("torch SDPA")}
    sel = [(r, sdpa[key(r)]) for r in pre if key(r) in sdpa]
    out += [(t, shape(r), f"{float(s['their_us']) / float(r['median_us']):.2f}x ({float(r['median_us']):.1f} us, "
             f"{s['instead']} {float(s['their_us']):.1f})", float(s["their_us"]) / float(r["median_us"]) / SDPA_X)
            for r, s in sel]
    absent += [] if sel else [t + (" (no torch file)" if not torch_rows else "")]
    return out, absent


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-") or ("--torch" in argv and argv.index("--torch") + 1 >= len(argv)):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        rows = read(argv[1])
        torch_rows = read(argv[argv.index("--torch") + 1]) if "--torch" in argv else []
        out, absent = judge(rows, torch_rows)
    except (OSError, KeyError, ValueError) as e:
        print(f"targets.py: {e}", file=sys.stderr)
        return 2
    print("\n| target | row | measured | share of target | verdict |")
    print("|---|---|---|---|---|")
    for t, row, meas, share in out:
        print(f"| {t} | {row} | {meas} | {100 * share:.1f}% | {'met' if share >= 1 else 'MISSED'} |")
    for t in absent:
        print(f"| {t} | (no row in this run) | - | - | not measured |")
    met = sum(1 for *_, s in out if s >= 1)
    print(f"\ntargets: {met} of {len(out)} rows met; {len(absent)} target(s) without rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
