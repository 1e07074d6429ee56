#!/usr/bin/env python3
"""Achieved vs roofline for each row of an mla_gpu_bench --tsv file: prints each workload's arithmetic
intensity, its roof min(intensity x copy bandwidth, bf16 GEMM rate) from the ceilings measured on the
H200 (performance.md: 4,144 GB/s, 784 TFLOP/s) and the fraction of the roof reached; with --svg FILE,
draws the roofline (log-log) with one point per row through gnuplot.

usage: roofline.py BENCH.tsv [--svg FILE] [--gbs 4144] [--tflops 784]
"""
import csv
import shutil
import subprocess
import sys


def arg(argv, name, default):
    return argv[argv.index(name) + 1] if name in argv else default


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    bw, peak = float(arg(argv, "--gbs", 4144)), float(arg(argv, "--tflops", 784))
    svg = arg(argv, "--svg", None)
    rows = list(csv.DictReader(open(argv[1]), delimiter="\t"))
    pts = []
    print(f"| kernel | kv | b | s_k | h | s_q | FLOP/byte | roof TFLOP/s | achieved TFLOP/s | of roof |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        gbs, tf = float(r["gbs"]), float(r["tflops"])
        if gbs <= 0 or tf <= 0:
            continue
        inten = tf * 1e12 / (gbs * 1e9)
        roof = min(inten * bw / 1e3, peak)
        pts.append((inten, tf, f"{r['kernel']} {r['kv']} h{r['h']} s_q{r['s_q']} b{r['b']} s{r['s_k']}"))
        print(f"| {r['kernel']} | {r['kv']} | {r['b']} | {r['s_k']} | {r['h']} | {r['s_q']} | {inten:.1f} | "
              f"{roof:.0f} | {tf:.1f} | {100 * tf / roof:.0f}% |")
    if not svg:
        return 0
    if not shutil.which("gnuplot"):
        print("roofline.py: gnuplot not found: no plot", file=sys.stderr)
        return 3
    data = "\n".join(f'{i:.4g} {t:.4g} "{lab}"' for i, t, lab in pts)
    ridge = peak * 1e3 / bw
    script = f"""set terminal svg size 1100,700 dynamic font 'sans,11'
set output '{svg}'
set logscale xy
set grid
set key top left
set xlabel 'arithmetic intensity (FLOP / byte of device memory)'
set ylabel 'TFLOP/s'
set title 'Achieved vs roofline (copy {bw:.0f} GB/s, bf16 GEMM {peak:.0f} TFLOP/s, measured ceilings)'
roof(x) = x < {ridge:.6g} ? x * {bw / 1e3:.6g} : {peak:.6g}
set xrange [1:10000]
set yrange [1:1500]
$pts << EOD
{data}
EOD
plot roof(x) with lines lw 2 lc rgb '#444444' title 'roofline', \\
     $pts using 1:2 with points pt 7 ps 1.2 lc rgb '#1f77b4' title 'kernels', \\
     $pts using 1:2:3 with labels left offset 0.6,0 font 'sans,8' notitle
"""
    subprocess.run(["gnuplot"], input=script.encode(), check=True)
    print(f"roofline: {svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
