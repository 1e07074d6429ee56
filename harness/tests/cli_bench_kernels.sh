#!/bin/sh
# mlacheck bench --kernels with stand-ins for mla_gpu_bench (MLA_GPU_BENCH): its exit codes carried
# over (77 no device, 1 a failed check, 3 anything else), a table it did not write refused, --quick
# passed on, and with a table the roofline fractions and the speed targets printed (torch's part left
# out with a line where torch or a CUDA device is missing). Usage: cli_bench_kernels.sh MLACHECK WORKDIR
set -u
M=$1 D=$2
rm -rf "$D" && mkdir -p "$D" || exit 1
fail() { echo "cli_bench_kernels: $*"; exit 1; }
fake() { # fake NAME EXIT WRITE: a stand-in that records its arguments and writes a table when WRITE is 1
    cat >"$D/$1" <<EOS
#!/bin/sh
echo "\$@" >"$D/$1.args"
t=""; while [ \$# -gt 0 ]; do [ "\$1" = --tsv ] && t=\$2; shift; done
if [ $3 = 1 ]; then printf 'kernel\tkv\tb\ts_k\th\ts_q\tsplits\tmedian_us\tgbs\ttflops\trel_l2\tlse_err\tcontrol\tok\tdigest\n' >"\$t"
printf 'decode-m\tbf16\t128\t8192\t16\t1\t1\t367.072\t3309.4\t99.46\t2.371e-03\t9.537e-07\t6.679e-01\t1\tcc690c3d13be53f4\n' >>"\$t"
printf 'prefill-m\tbf16\t1\t8192\t128\t8192\t1\t6434.0\t187.9\t427.23\t2.7e-03\t9.5e-07\t1.4e+00\t1\t46a7de1c0ae9f1b5\n' >>"\$t"; fi
echo "| stand-in table |"
exit $2
EOS
    chmod +x "$D/$1"
}

MLA_GPU_BENCH="$D/none" "$M" bench --kernels --results "$D/r0" >"$D/o0" 2>&1
[ $? -eq 77 ] || fail "no mla_gpu_bench: expected exit 77"
grep -q "$D/none" "$D/o0" || fail "no mla_gpu_bench: the message does not name the path"

fake ok 0 1
MLA_GPU_BENCH="$D/ok" "$M" bench --kernels --quick --results "$D/r1" >"$D/o1" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$D/o1"; fail "a stand-in that passed: exit $rc"; }
grep -q -- "--tsv $D/r1/kernels.tsv --quick" "$D/ok.args" || fail "--tsv and --quick not passed on: $(cat "$D/ok.args")"
[ -s "$D/r1/kernels.tsv" ] || fail "no kernels.tsv"
grep -q "stand-in table" "$D/o1" || fail "mla_gpu_bench's table not shown"
grep -q "| prefill-m | bf16 | 1 | 8192 | 128 | 8192 | 2273.7 | 784 | 427.2 | 54% |" "$D/o1" ||
    { cat "$D/o1"; fail "the roofline row of the prefill is missing or wrong"; }
grep -q "| decode memory-bound >= 3,300 GB/s | bf16 b128 s_k 8192 h16 s_q 1 | 3,309 GB/s | 100.3% | met |" "$D/o1" ||
    { cat "$D/o1"; fail "the decode target's row is missing or wrong"; }
grep -q "| prefill P1 s 8k, 16k >= 500 TFLOP/s | bf16 b1 s_k 8192 h128 s_q 8192 | 427.2 TFLOP/s | 85.4% | MISSED |" "$D/o1" ||
    { cat "$D/o1"; fail "the prefill target's row is missing or wrong"; }
grep -q "targets: 1 of 2 rows met" "$D/o1" || fail "the targets' count is missing or wrong"
grep -q "torch side by side" "$D/o1" || python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null ||
    fail "torch without CUDA here, but no line saying the side by side was left out"

fake bad 1 1
MLA_GPU_BENCH="$D/bad" "$M" bench --kernels --results "$D/r2" >"$D/o2" 2>&1
[ $? -eq 1 ] || fail "a stand-in whose check failed: expected exit 1"
fake nodev 77 0
MLA_GPU_BENCH="$D/nodev" "$M" bench --kernels --results "$D/r3" >"$D/o3" 2>&1
[ $? -eq 77 ] || fail "a stand-in without a device: expected exit 77"
fake notable 0 0
MLA_GPU_BENCH="$D/notable" "$M" bench --kernels --results "$D/r4" >"$D/o4" 2>&1
[ $? -eq 3 ] || fail "a stand-in that wrote no table: expected exit 3"
grep -q "wrote no table" "$D/o4" || fail "no table: the message does not say so"
"$M" bench --kernels --tokens 5 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--kernels with a forward option: expected exit 2"
echo "cli_bench_kernels: ok"
