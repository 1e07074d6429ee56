#!/usr/bin/env python3
"""Times what a user would run instead of our kernels, at the shapes of an mla_gpu_bench --tsv file, in
the same session on the same GPU, and prints both side by side with the ratio.

  decode rows (bf16 cache, fixed lengths): torch eager absorbed decode over a contiguous [b, s_k, 576]
      latent cache: bmm(q, kv^T) in bf16, softmax in fp32, bmm(p, kv[..., :512]) (no causal mask for
      s_q 2: counting ignores it too);
  prefill rows: torch.nn.functional.scaled_dot_product_attention, causal, d_qk 192 / d_v 128, with the
      cuDNN backend when torch offers it (else torch's default choice, named in the table).
Timing as mla_gpu_bench: CUDA events, median of 20 (prefill 5) after 2 warm-ups, a 256 MiB write before
each launch so inputs come from HBM. Random inputs (never zeros).

usage: torch_side_by_side.py BENCH.tsv [--out FILE.tsv]
"""
import csv
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # mlacheck bench --kernels leaves the side by side out (exit 77)
    torch = None


def timed(fn, reps, flush):
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def torch_decode(b, s_k, h, s_q, flush):
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.rand(b, s_q * h, 576, device="cuda", dtype=torch.bfloat16, generator=g) * 2 - 1
    kv = torch.rand(b, s_k, 576, device="cuda", dtype=torch.bfloat16, generator=g) * 2 - 1
    scale = 0.25 / 192 ** 0.5

    def run():
        s = torch.bmm(q, kv.transpose(1, 2))
        p = torch.softmax(s.float() * scale, dim=-1).to(torch.bfloat16)
        return torch.bmm(p, kv[:, :, :512])

    return timed(run, 20, flush), "torch eager"


def torch_prefill(b, s, h, flush):
    g = torch.Generator(device="cuda").manual_seed(2)
    q = torch.rand(b, h, s, 192, device="cuda", dtype=torch.bfloat16, generator=g) - 0.5
    k = torch.rand(b, h, s, 192, device="cuda", dtype=torch.bfloat16, generator=g) - 0.5
    v = torch.rand(b, h, s, 128, device="cuda", dtype=torch.bfloat16, generator=g) - 0.5

    def run():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return timed(run, 5, flush), "torch SDPA (cuDNN)"
    except (ImportError, RuntimeError):
        return timed(run, 5, flush), "torch SDPA (default)"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_path = argv[argv.index("--out") + 1] if "--out" in argv else None
    rows = list(csv.DictReader(open(argv[1]), delimiter="\t"))
    if torch is None:
        print("torch_side_by_side: torch is not importable", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("torch_side_by_side: no CUDA device", file=sys.stderr)
        return 77
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    cache = {}
    table = []
    for r in rows:
        b, s_k, h, s_q = int(r["b"]), int(r["s_k"]), int(r["h"]), int(r["s_q"])
        ours = float(r["median_us"])
        if r["kernel"].startswith("prefill"):
            key = ("p", b, s_k, h)
            if key not in cache:
                cache[key] = torch_prefill(b, s_k, h, flush)
        elif r["kv"] == "bf16" and not r["kernel"].endswith("/v"):
            key = ("d", b, s_k, h, s_q)
            if key not in cache:
                cache[key] = torch_decode(b, s_k, h, s_q, flush)
        else:
            key = None
        ms, who = cache[key] if key else (None, "-")
        theirs = ms * 1e3 if ms is not None else None
        table.append((r, ours, who, theirs))
        torch.cuda.empty_cache()
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}: ours vs what users run instead (median us)")
    print("| kernel | kv | b | s_k | h | s_q | ours us | ours GB/s | ours TFLOP/s | check | instead | their us | speedup |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r, ours, who, theirs in table:
        sp = f"{theirs / ours:.2f}x" if theirs else "-"
        th = f"{theirs:.1f}" if theirs else "-"
        ok = "ok" if r["ok"] == "1" else "FAIL"
        print(f"| {r['kernel']} | {r['kv']} | {r['b']} | {r['s_k']} | {r['h']} | {r['s_q']} | {ours:.1f} | "
              f"{float(r['gbs']):.0f} | {float(r['tflops']):.1f} | {ok} | {who} | {th} | {sp} |")
    if out_path:
        with open(out_path, "w") as f:
            f.write("kernel\tkv\tb\ts_k\th\ts_q\tours_us\tinstead\ttheir_us\n")
            for r, ours, who, theirs in table:
                f.write(f"{r['kernel']}\t{r['kv']}\t{r['b']}\t{r['s_k']}\t{r['h']}\t{r['s_q']}\t{ours:.3f}\t{who}\t"
                        f"{'' if theirs is None else f'{theirs:.3f}'}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
