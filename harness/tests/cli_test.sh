#!/usr/bin/env bash
# cli_test.sh MLACHECK NAME: end-to-end tests of the mlacheck command line (exit codes, messages,
# external oracle, reproducibility, injected faults, git bisect). Run from the source root by ctest.
set -u
MLA=$1
NAME=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_code() { # expect_code CODE CMD...
    local want=$1; shift
    "$@" >"$TMP/out" 2>&1
    local got=$?
    [ "$got" = "$want" ] || { cat "$TMP/out"; fail "'$*' exited $got, expected $want"; }
}

case "$NAME" in
oracle)
    # the reference against the float64 transformers oracle (golden/oracle), relative L2 < 1e-6 per tap
    n=0
    for h5 in golden/oracle/*/oracle-*.h5; do
        dir=$(dirname "$h5")
        model=$dir # a folder with BUILTIN holds a built-in's oracle (the folder was mlacheck write-hf's)
        [ -f "$dir/BUILTIN" ] && model=$(cat "$dir/BUILTIN")
        expect_code 0 "$MLA" dump --model "$model" --tokens-from "$h5" --out "$TMP/ours.h5"
        expect_code 0 "$MLA" compare "$h5" "$TMP/ours.h5" --check oracle --profile fp64
        grep -q PASS "$TMP/out" || fail "no PASS for $h5"
        sed -n 2p "$TMP/out"
        n=$((n + 1))
    done
    [ $n -ge 2 ] || fail "expected oracle files under golden/oracle"
    ;;
blas-threads)
    # the fp64 reference is bitwise reproducible, run after run and with 1 or 2 BLAS threads
    for m in tiny-v3 tiny-v2-lite; do
        OPENBLAS_NUM_THREADS=1 MLA_REF_THREADS=1 "$MLA" dump --model $m --random 200 --out "$TMP/a.h5" >/dev/null || fail "dump $m"
        OPENBLAS_NUM_THREADS=2 MLA_REF_THREADS=2 "$MLA" dump --model $m --random 200 --out "$TMP/b.h5" >/dev/null || fail "dump $m"
        OPENBLAS_NUM_THREADS=2 MLA_REF_THREADS=3 "$MLA" dump --model $m --random 200 --path decode --prefill-len 150 --out "$TMP/c.h5" >/dev/null || fail "dump $m"
        OPENBLAS_NUM_THREADS=1 MLA_REF_THREADS=1 "$MLA" dump --model $m --random 200 --path decode --prefill-len 150 --out "$TMP/d.h5" >/dev/null || fail "dump $m"
        expect_code 0 "$MLA" compare "$TMP/a.h5" "$TMP/b.h5" --check determinism --profile fp64
        expect_code 0 "$MLA" compare "$TMP/c.h5" "$TMP/d.h5" --check determinism --profile fp64
    done
    # and a one-element change is caught by the same check (the check can fail)
    OPENBLAS_NUM_THREADS=1 "$MLA" dump --model tiny-v3 --random 20 --out "$TMP/e.h5" >/dev/null
    OPENBLAS_NUM_THREADS=1 "$MLA" dump --model tiny-v3 --random 20 --inject no-mscale --out "$TMP/f.h5" >/dev/null
    expect_code 1 "$MLA" compare "$TMP/e.h5" "$TMP/f.h5" --check determinism --profile fp64
    ;;
blas-kernels)
    # batch invariance holds under every OpenBLAS kernel family this CPU can run (each chooses its
    # kernels by shape differently; the AVX-512 ones broke it before 2026-12-01, NUMERICS.md)
    cores="Haswell Zen"
    grep -qw avx512f /proc/cpuinfo && cores="$cores SkylakeX Cooperlake"
    grep -qw avx2 /proc/cpuinfo || cores=""
    for core in $cores; do
        OPENBLAS_CORETYPE=$core expect_code 0 "$MLA" run --suite ci --case tiny-v3-batch --quiet --results "$TMP/r-$core"
        echo "batch invariance with OpenBLAS core $core: pass"
    done
    ;;
many-prompts)
    # a batch of 70 sequences (past the runner's old fixed 64) is run and compared whole: the
    # determinism rows of 70 prompts are 70 times those of one prompt, and batch invariance passes
    for n in 1 70; do
        { echo "[suite]"; echo "description = $n prompts in one batch"; echo "[case many]"
          echo "model = tiny-v3"; echo "engines = ref"; echo "profiles = fp64"; echo "paths = prefill"
          echo "batch = $n"; echo "checks = determinism, batch-invariance"
          printf "prompts = random:len=4,seed=1"; for i in $(seq 2 $n); do printf " ; random:len=%d,seed=%d" $((3 + i % 5)) $i; done; echo
        } >"$TMP/many$n.suite"
        expect_code 0 "$MLA" run --suite "$TMP/many$n.suite" --quiet --results "$TMP/r$n"
    done
    one=$(awk -F'\t' '$2 == "determinism"' "$TMP"/r1/*/metrics.tsv | wc -l)
    all=$(awk -F'\t' '$2 == "determinism"' "$TMP"/r70/*/metrics.tsv | wc -l)
    bi=$(awk -F'\t' '$2 == "batch-invariance"' "$TMP"/r70/*/metrics.tsv | wc -l)
    echo "determinism rows: 1 prompt $one, 70 prompts $all; batch-invariance rows $bi"
    [ "$one" -gt 0 ] && [ "$all" = $((70 * one)) ] || fail "expected 70 x $one determinism rows, got $all"
    [ "$bi" = $((70 * one)) ] || fail "expected 70 x $one batch-invariance rows, got $bi"
    ;;
dump-schema)
    # dump writes /tokens, /logits (every position on the decode path), /final_norm, /layers/<i>/<tap> as f64
    expect_code 0 "$MLA" dump --model tiny-v3 --tokens 3,1,4,1,5 --path decode --prefill-len 2 --profile fp64 --out "$TMP/d.h5"
    h5dump -H "$TMP/d.h5" >"$TMP/h" || fail "h5dump cannot read the dump"
    for ds in tokens logits final_norm embed layers/0/attn_out layers/0/ffn_out layers/0/out layers/2/topk_ids; do
        grep -q "DATASET \"$(basename $ds)\"" "$TMP/h" || fail "dataset $ds missing"
    done
    h5dump -d /logits -H "$TMP/d.h5" | grep -q "( 5, 512 )" || fail "/logits must hold all 5 positions"
    h5dump -d /layers/0/out -H "$TMP/d.h5" | grep -q "H5T_IEEE_F64LE" || fail "fp64 taps must be float64"
    # all-decode (no prefill call): the absorbed query is recorded too
    expect_code 0 "$MLA" dump --model tiny-v3 --tokens 3,1,4 --path decode --prefill-len 0 --out "$TMP/q.h5"
    h5dump -H "$TMP/q.h5" | grep -q 'DATASET "q_absorbed"' || fail "q_absorbed missing on the all-decode path"
    ;;
bad-input)
    expect_code 2 "$MLA" run --suite no-such-suite
    printf '[case x]\nmodel = tiny-v3\nprompts = tokens:1,2\nprofils = fp64\nchecks = determinism\n' >"$TMP/typo.suite"
    expect_code 2 "$MLA" run --suite "$TMP/typo.suite"
    grep -q "profils" "$TMP/out" || fail "the typo is not named: $(cat $TMP/out)"
    printf '[case x]\nmodel = tiny-v3\nprompts = tokens:1,2\nprofiles = fp64\nchecks = determinism\nschedule = stagered\n' >"$TMP/sched.suite"
    expect_code 2 "$MLA" run --suite "$TMP/sched.suite"
    grep -q "did you mean 'staggered'" "$TMP/out" || fail "the schedule typo is not named: $(cat $TMP/out)"
    expect_code 2 "$MLA" dump --model tiny-v3 --tokens 1,x --out "$TMP/x.h5"
    expect_code 2 "$MLA" dump --model /nonexistent --tokens 1 --out "$TMP/x.h5"
    expect_code 2 "$MLA" dump --model tiny-v3 --tokens 1 --profile fp16 --out "$TMP/x.h5"
    expect_code 2 "$MLA" frobnicate
    # numeric options are parsed whole and in range, the option named (harness/BAD_INPUT.md)
    for bad in "--chunk 0" "--chunk 7x" "--block-size -1" "--prefill-len abc" "--random 0"; do
        expect_code 2 "$MLA" dump --model tiny-v3 --tokens 1,2 $bad --out "$TMP/x.h5"
        grep -q -- "${bad%% *} '" "$TMP/out" || fail "$bad: option not named: $(cat $TMP/out)"
    done
    expect_code 2 "$MLA" run --suite ci --kv-splits 2x
    expect_code 2 "$MLA" bench --tokens 0
    expect_code 2 "$MLA" bench --attn fast
    grep -q -- "--attn fast: expected exact or tc" "$TMP/out" || fail "bench --attn: $(cat "$TMP/out")"
    expect_code 0 "$MLA" bench --model tiny-v3 --profile bf16 --attn tc --tokens 8 --decode 1
    grep -q "attention tc" "$TMP/out" || fail "bench --attn tc not reported: $(cat "$TMP/out")"
    expect_code 2 "$MLA" sweep --step abc
    for t in "1,2," "1,,2" ",1" "+1" " 1"; do expect_code 2 "$MLA" dump --model tiny-v3 --tokens "$t" --out "$TMP/x.h5"; done
    # a prefill covering the whole prompt would run no decode step under a dump saying "decode"
    expect_code 2 "$MLA" dump --model tiny-v3 --tokens 1,2,3 --path decode --prefill-len 3 --out "$TMP/x.h5"
    grep -q "at least one decode step" "$TMP/out" || fail "prefill-len >= prompt not explained: $(cat $TMP/out)"
    expect_code 0 "$MLA" dump --model tiny-v3 --tokens 1,2,3 --path decode --prefill-len 2 --out "$TMP/x.h5"
    # config.json: a missing dimension, an unsupported value, a size past the bound: exit 2 (not 77)
    badcfg() { # badcfg NAME PYTHON-EDIT-OF-d "expected text"
        rm -rf "$TMP/$1" && cp -r golden/oracle/tiny-v3-hf "$TMP/$1" && rm -f "$TMP/$1"/*.h5
        python3 -c "import json; p='$TMP/$1/config.json'; d=json.load(open(p)); $2; json.dump(d, open(p, 'w'))"
        expect_code 2 "$MLA" dump --model "$TMP/$1" --tokens 1,2 --out "$TMP/x.h5"
        grep -q "$3" "$TMP/out" || fail "$1: expected '$3': $(cat $TMP/out)"
    }
    badcfg no-hidden "del d['hidden_size']" "config.json: field hidden_size: required"
    badcfg no-kv-rank "del d['kv_lora_rank']" "field kv_lora_rank: required"
    badcfg no-layers "del d['num_hidden_layers']" "field num_hidden_layers: required"
    badcfg llama "d['model_type']='llama'" "field model_type: expected deepseek_v2"
    badcfg linear-rope "d['rope_scaling']={'type':'linear','factor':2}" "rope_scaling.type"
    badcfg awq "d['quantization_config']={'quant_method':'awq'}" "quant_method"
    badcfg gelu "d['hidden_act']='gelu'" "field hidden_act: expected \"silu\""
    badcfg half-split "d['rope_interleave']=False" "interleaved GPT-J rope pairing"
    badcfg huge "d['num_hidden_layers']=1000000" "parameters in .* expected at most"
    badcfg more-layers "d['num_hidden_layers']=61" "config.json: field num_hidden_layers: 61 layers .* expected about what the safetensors files hold"
    # a failed write (a full disk, here a 16 KiB file size limit) is exit 2 with the file named, not a
    # segfault at exit, and leaves neither the file nor its temporary behind
    mkdir -p "$TMP/full"
    (trap '' XFSZ; ulimit -f 16; exec "$MLA" dump --model tiny-v3 --random 100 --out "$TMP/full/x.h5") >"$TMP/out" 2>&1
    rc=$?
    [ $rc = 2 ] || { cat "$TMP/out"; fail "failed write exited $rc, expected 2"; }
    grep -q "full/x.h5: cannot write" "$TMP/out" || fail "failed write not explained: $(cat $TMP/out)"
    [ -z "$(ls -A "$TMP/full")" ] || fail "failed write left $(ls "$TMP/full")"
    # weights: NaN / Inf named with the tensor and the first index, F8_E5M2 refused
    badst() { # badst NAME PYTHON-EDIT(h: header dict, b: bytearray of the data) "expected text"
        rm -rf "$TMP/$1" && cp -r golden/oracle/tiny-v3-hf "$TMP/$1" && rm -f "$TMP/$1"/*.h5
        python3 - "$TMP/$1/model.safetensors" <<EOS
import json, struct, sys
p = sys.argv[1]; raw = open(p, 'rb').read(); n = struct.unpack('<Q', raw[:8])[0]
h = json.loads(raw[8:8 + n]); b = bytearray(raw[8 + n:]); o = h['model.norm.weight']['data_offsets'][0]
$2
hj = json.dumps(h).encode(); open(p, 'wb').write(struct.pack('<Q', len(hj)) + hj + bytes(b))
EOS
        expect_code 2 "$MLA" dump --model "$TMP/$1" --tokens 1,2 --out "$TMP/x.h5"
        grep -q "$3" "$TMP/out" || fail "$1: expected '$3': $(cat $TMP/out)"
    }
    badst nan "b[o + 2 * 5:o + 2 * 5 + 2] = b'\\xc0\\x7f'" "tensor model.norm.weight: NaN at flat index 5"
    badst inf "b[o + 2 * 9:o + 2 * 9 + 2] = b'\\x80\\x7f'" "tensor model.norm.weight: Inf at flat index 9"
    badst e5m2 "h['model.norm.weight']['dtype'] = 'F8_E5M2'; s = h['model.norm.weight']['shape'][0]; h['model.norm.weight']['data_offsets'][1] = o + s" "F8_E5M2 is not supported"
    # a checkpoint with every tensor but one (within the config-size bound, which a one-tensor file
    # trips first) is refused naming the file and the tensor
    badst missing-one "del h['model.layers.1.self_attn.kv_b_proj.weight']" "missing-one/model.safetensors: tensor model.layers.1.self_attn.kv_b_proj.weight: missing (required by .*missing-one/config.json)"
    "$MLA" dump --model tiny-v3 --tokens 3,1,4 --out "$TMP/g.h5" >/dev/null || fail dump
    head -c 3000 "$TMP/g.h5" >"$TMP/trunc.h5"
    expect_code 2 "$MLA" compare "$TMP/g.h5" "$TMP/trunc.h5"
    grep -q "trunc.h5" "$TMP/out" || fail "truncated file not named: $(cat $TMP/out)"
    printf 'not hdf5' >"$TMP/junk.h5"
    expect_code 2 "$MLA" compare "$TMP/junk.h5" "$TMP/g.h5"
    # a golden of another model, or of another path, standing in for the case's is refused, naming
    # the file and the /meta field
    cp -r golden "$TMP/gold"
    cp golden/tiny-v3/fp64/prefill-8-1897097a.h5 "$TMP/gold/tiny-v2-lite/fp64/prefill-8-1897097a.h5"
    expect_code 2 "$MLA" run --suite smoke --golden "$TMP/gold" --quiet --results "$TMP/res"
    grep -q "gold/tiny-v2-lite/fp64/prefill-8-1897097a.h5: /meta model: 'tiny-v3', expected 'tiny-v2-lite'" "$TMP/out" ||
        fail "model-mismatch golden not refused: $(cat $TMP/out)"
    cp golden/tiny-v2-lite/fp64/decode-8-1897097a.h5 "$TMP/gold/tiny-v2-lite/fp64/prefill-8-1897097a.h5"
    expect_code 2 "$MLA" run --suite smoke --golden "$TMP/gold" --quiet --results "$TMP/res"
    grep -q "prefill-8-1897097a.h5: /meta path: 'decode', expected 'prefill'" "$TMP/out" ||
        fail "path-mismatch golden not refused: $(cat $TMP/out)"
    # ... and so is one made under another fp8 kv_scale or e4m3 kind (asym-v3's are at 0.37)
    printf '[case k]\nmodel = asym-v3\nprompts = tokens:3,1,4,1,5,9,2,6,5,3\nengines = ref\nprofiles = fp8kv\nkv_scale = 1.7\nchecks = golden\n' >"$TMP/k.suite"
    expect_code 2 "$MLA" run --suite "$TMP/k.suite" --quiet --results "$TMP/res"
    grep -q "fp8kv/prefill-10-a526b9ac.h5: /meta kv_scale: 0.37, expected 1.7" "$TMP/out" ||
        fail "kv_scale-mismatch golden not refused: $(cat $TMP/out)"
    printf '[case e]\nmodel = asym-v3\nprompts = tokens:1,4,1,4,2,1,3,5,6\nengines = ref\nprofiles = fp8kv\nkv_scale = 0.37\nchecks = golden\n' >"$TMP/e.suite"
    expect_code 2 "$MLA" run --suite "$TMP/e.suite" --quiet --results "$TMP/res"
    grep -q "fp8kv/prefill-9-b3d74746.h5: /meta e4m3: 'e4m3fnuz', expected 'e4m3fn'" "$TMP/out" ||
        fail "e4m3-mismatch golden not refused: $(cat $TMP/out)"
    PY=""
    for p in python3 /usr/bin/python3; do "$p" -c 'import h5py' 2>/dev/null && { PY=$p; break; }; done
    if [ -n "$PY" ]; then
        # a file written by another schema version (a fresh, consistent file; not an edit in place)
        "$PY" -c "import h5py,numpy; s=h5py.File('$TMP/g.h5','r'); d=h5py.File('$TMP/v.h5','w'); [s.copy(k, d) for k in s]; d['meta'].attrs['schema_version']=numpy.int32(99)"
        expect_code 2 "$MLA" compare "$TMP/g.h5" "$TMP/v.h5"
        grep -qi "version" "$TMP/out" || fail "schema version not named: $(cat $TMP/out)"
        cp "$TMP/g.h5" "$TMP/c.h5"
        "$PY" -c "import h5py; f=h5py.File('$TMP/c.h5','r+'); d=f['layers/1/out']; a=d[...]; a[0,0]+=1; d[...]=a"
        expect_code 2 "$MLA" compare "$TMP/g.h5" "$TMP/c.h5"
        grep -qi "crc32 of the data" "$TMP/out" || fail "checksum not reported: $(cat $TMP/out)"
    else
        echo "no h5py: the schema-version and checksum cases were not run"
    fi
    ;;
faults)
    # every injected fault is caught by the default suite, with the right first diverging layer and tap
    check_fault() { # fault "expected text"
        expect_code 1 "$MLA" run --suite ci --inject "$1" --quiet --results "$TMP/results"
        grep -q "$2" "$TMP/out" || { cat "$TMP/out"; fail "fault $1: expected '$2'"; }
        echo "caught $1: $2"
    }
    check_fault rope-pairing "golden | fp64 | prefill | \*\*FAIL\*\* .* layer 0 q_pe"
    check_fault causal-off-by-one "golden | fp64 | prefill | \*\*FAIL\*\* .* layer 0 attn_core"
    check_fault no-mscale "tiny-v3-golden | golden | fp64 | prefill | \*\*FAIL\*\* .* layer 0 attn_core"
    check_fault fp8-q-saturation "golden | fp64 | decode | \*\*FAIL\*\* .* layer 0 attn_core"
    check_fault routed-scaling "tiny-v3-golden | golden | fp64 | prefill | \*\*FAIL\*\* .* layer 1 topk_weights"
    check_fault lse-bf16 "chunked-vs-whole | fp64 | chunked | \*\*FAIL\*\* .* layer 0 attn_core"
    # and without a fault the same suite passes
    expect_code 0 "$MLA" run --suite ci --quiet --results "$TMP/results"
    # bisect names the first divergence from the stored metrics of a failing run
    expect_code 1 "$MLA" run --suite ci --inject no-mscale --quiet --results "$TMP/r2"
    expect_code 1 "$MLA" bisect "$(ls -d "$TMP"/r2/*/ | head -1)"
    grep -q "first diverging: layer 0 tap attn_core" "$TMP/out" || { cat "$TMP/out"; fail "bisect did not name layer 0 attn_core"; }
    grep -q "softmax scale" "$TMP/out" || fail "bisect did not name the op"
    # replaying the saved failing inputs through the reference names the fault behind them
    expect_code 1 "$MLA" bisect "$(ls -d "$TMP"/r2/*/ | head -1)" --replay
    grep -q "reproduced by the reference with fault 'no-mscale'" "$TMP/out" || { cat "$TMP/out"; fail "replay did not name no-mscale"; }
    ;;
decoded-window)
    # cross-engine on the decode path judges the decoded rows on their own: after a 190-token prefill
    # an error confined to the absorbed decode (fp8 query saturation) is ~6x larger there than in the
    # whole-prompt statistic. Candidate: the reference wrapped as a plugin ($MLA_REF_PLUGIN).
    [ -n "${MLA_REF_PLUGIN:-}" ] || fail "MLA_REF_PLUGIN not set"
    cat >"$TMP/dec.suite" <<EOS
[suite]
description = decoded rows judged alone
[case long-prefill]
model = tiny-v3
engines = plugin:$MLA_REF_PLUGIN
against = ref
prompts = random:len=200,seed=9
prefill_len = 190
paths = decode
profiles = bf16
checks = cross-engine
EOS
    expect_code 0 "$MLA" run --suite "$TMP/dec.suite" --results "$TMP/r1" --quiet
    grep -q "| cross-engine@plugin | bf16 | decoded | pass" "$TMP"/r1/*/summary.md || fail "no passing decoded verdict"
    expect_code 1 "$MLA" run --suite "$TMP/dec.suite" --inject fp8-q-saturation --results "$TMP/r2" --quiet
    sm=$(ls "$TMP"/r2/*/summary.md)
    whole=$(grep -m1 "| decode | \*\*FAIL" "$sm" | grep -o "attn_core: rel_l2 [0-9.e+-]*" | awk '{print $3}')
    dec=$(grep -m1 "| decoded | \*\*FAIL" "$sm" | grep -o "attn_core: rel_l2 [0-9.e+-]*" | awk '{print $3}')
    [ -n "$dec" ] || { cat "$sm"; fail "decoded rows did not fail at layer 0 attn_core"; }
    awk -v d="$dec" -v w="${whole:-0}" 'BEGIN { exit !(d > 4 * w) }' ||
        { cat "$sm"; fail "decoded rows ($dec) not clearly worse than the whole prompt (${whole:-pass})"; }
    echo "fp8-q-saturation, layer 0 attn_core: whole prompt ${whole:-pass}, decoded rows $dec"
    ;;
git-bisect)
    # git bisect run over a scripted history where one commit introduces an error finds that commit
    command -v git >/dev/null || { echo "no git: skipped"; exit 77; }
    repo="$TMP/repo"
    mkdir -p "$repo" && cd "$repo" && git init -q && git config user.email t@t && git config user.name t
    for i in 1 2 3 4 5 6 7 8; do
        fault=none; [ $i -ge 6 ] && fault=no-mscale
        echo "$fault" >fault && echo "$i" >version && git add fault version && git commit -qm "commit $i"
    done
    bad=$(git rev-list HEAD --reverse | sed -n 6p)
    cat >check.sh <<EOS
#!/bin/sh
exec "$MLA" run --suite smoke --inject "\$(cat fault)" --git-bisect --quiet --results "$TMP/bisect-results"
EOS
    chmod +x check.sh
    git bisect start HEAD "$(git rev-list HEAD --reverse | head -1)" >/dev/null
    mv check.sh "$TMP/check.sh"
    git bisect run "$TMP/check.sh" >"$TMP/bisect.log" 2>&1
    grep -q "^$bad is the first bad commit" "$TMP/bisect.log" || { cat "$TMP/check.sh"; cat "$TMP/bisect.log"; fail "git bisect did not find $bad"; }
    echo "git bisect found commit 6 ($bad)"
    git bisect reset >/dev/null 2>&1
    ;;
golden-files)
    # file moves and golden updates go through no shell: a --results path with a quote and a command
    # substitution is just a name, and the failure's candidate dump is moved into the report
    # (on /dev/shm when that is another file system than /tmp, where candidates are written: the
    # cross-device copy is the path that once went through the shell)
    base="$TMP"
    if [ -d /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d /tmp)" ]; then
        SHM=$(mktemp -d -p /dev/shm) && trap 'rm -rf "$TMP" "$SHM"' EXIT && base="$SHM"
    fi
    res="$base/it's \$(touch PWNED)"
    (cd "$TMP" && expect_code 1 "$MLA" run --suite smoke --inject no-mscale --results "$res" --quiet)
    [ -e "$TMP/PWNED" ] || [ -e PWNED ] && fail "a quote in --results ran a command"
    ls "$res"/*/failures/*.h5 >/dev/null 2>&1 || fail "no failure inputs moved into $res"
    grep -q "tiny-v3-prefill | golden | fp64 | prefill | \*\*FAIL" "$res"/*/summary.md || fail "no normal report in $res"
    # golden --update on a copy of golden/ (the command takes golden/ and results/ from the working
    # folder): every staged file lands whole and opens, MANIFEST gains exactly one line, last
    work="$TMP/work"
    mkdir -p "$work/results" && cp -r golden "$work/golden"
    lines=$(wc -l <"$work/golden/MANIFEST")
    (cd "$work" && expect_code 0 "$MLA" golden --suite smoke --update --reason "test: it's \$(touch PWNED)" &&
        sed -n 's/^golden\/ updated from \(.*\); MANIFEST records: .*/\1/p' "$TMP/out" >"$TMP/stage")
    stage="$work/$(cat "$TMP/stage")"
    [ -d "$stage" ] || { cat "$TMP/out"; fail "no staging folder named by golden --update"; }
    (cd "$work" && expect_code 0 "$MLA" golden --suite smoke) # same second: its own staging folder
    [ "$(ls "$work/results/golden-staging" | wc -l)" = 2 ] || fail "two golden runs shared a staging folder"
    [ -e "$work/PWNED" ] && fail "a quote in --reason ran a command"
    [ "$(wc -l <"$work/golden/MANIFEST")" = $((lines + 1)) ] || fail "MANIFEST not appended once"
    tail -1 "$work/golden/MANIFEST" | grep -qF "suite=smoke" || fail "MANIFEST's last line is not this update"
    tail -1 "$work/golden/MANIFEST" | grep -qF "reason=test: it's \$(touch PWNED)" || fail "MANIFEST reason"
    n=0
    for f in $(cd "$stage" && find . -name '*.h5'); do
        cmp -s "$stage/$f" "$work/golden/$f" || fail "golden $f differs from its staged candidate"
        expect_code 0 "$MLA" compare "$work/golden/$f" "$stage/$f" --check golden --profile fp64
        n=$((n + 1))
    done
    [ $n -ge 2 ] || fail "expected staged goldens, found $n"
    [ -z "$(find "$work/golden" -name '*.tmp-*')" ] || fail "temporary files left in golden/"
    for f in $(cd "$work/golden" && find . -name '*.h5' -not -path './oracle/*'); do # every golden opens
        expect_code 0 "$MLA" compare "$work/golden/$f" "$work/golden/$f" --check determinism --profile fp64
    done
    echo "golden --update replaced $n goldens atomically; MANIFEST $lines -> $((lines + 1)) lines"
    ;;
accuracy)
    # the accuracy report on a trained model: fp64 is its own baseline (KL 0, top-1 1), bf16 costs a
    # measurable but small KL, fp8kv (per-tensor scale 1) more; files written; bad options refused
    out="$TMP/acc"
    expect_code 0 "$MLA" accuracy --model golden/trained/trained-v2-lite --text golden/trained/heldout.txt --bos 256 \
        --window 40 --windows 2 --prefill-len 8 --profiles bf16,fp8kv --out "$out"
    for f in accuracy.tsv accuracy.md growth.dat growth.gp; do [ -s "$out/$f" ] || fail "accuracy: no $f"; done
    awk -F'\t' 'NR==2 && !($2=="fp64" && $4==0 && $6==1) {exit 1}
                NR==3 && !($2=="bf16" && $4>0 && $4<1e-2) {exit 1}
                NR==4 && !($2=="fp8kv" && $4>0) {exit 1} END {if (NR!=4) exit 1}' "$out/accuracy.tsv" ||
        { cat "$out/accuracy.tsv"; fail "accuracy.tsv rows are not fp64 (exact), bf16 (small KL), fp8kv"; }
    expect_code 2 "$MLA" accuracy --model golden/trained/trained-v2-lite --text golden/trained/heldout.txt --window 0
    grep -q -- "--window '0': expected an integer" "$TMP/out" || { cat "$TMP/out"; fail "no message for --window 0"; }
    expect_code 2 "$MLA" accuracy --model golden/trained/trained-v2-lite --text golden/trained/heldout.txt --profiles bf61
    expect_code 2 "$MLA" accuracy --model golden/trained/trained-v2-lite --text /nonexistent/text
    grep -q "/nonexistent/text" "$TMP/out" || { cat "$TMP/out"; fail "the missing text file is not named"; }
    ;;
usage)
    # every command of the table answers --help (and help CMD, the same text) with exit 0, and every
    # option its help lists is accepted by its parser: `CMD --OPT ARG --help` stops at --help with 0
    # (an option listed but not parsed, or parsed but not handled, fails here)
    cmds=$("$MLA" help --commands) || fail "help --commands"
    [ "$(echo "$cmds" | wc -l)" -ge 14 ] || fail "help --commands lists $(echo "$cmds" | wc -l) commands"
    expect_code 0 "$MLA" --help
    for c in $cmds; do grep -q "^  $c " "$TMP/out" || fail "mlacheck --help does not list $c"; done
    nopt=0
    for c in $cmds; do
        expect_code 0 "$MLA" "$c" --help
        head -1 "$TMP/out" | grep -q "^usage: mlacheck $c " || fail "$c --help: $(head -1 "$TMP/out")"
        cp "$TMP/out" "$TMP/help-$c"
        expect_code 0 "$MLA" help "$c"
        cmp -s "$TMP/out" "$TMP/help-$c" || fail "mlacheck help $c differs from $c --help"
        expect_code 0 "$MLA" "$c" -h
        grep -q -- "--help" "$TMP/help-$c" || fail "$c --help does not list --help"
        grep -E '^  (-[a-zA-Z], )?--[a-z]' "$TMP/help-$c" | sed -E 's/^  (-[a-zA-Z], )?--([a-z0-9-]+)( ([^ ]+))?.*/\2 \4/' >"$TMP/opts-$c"
        while read -r opt meta; do
            [ "$opt" = help ] && continue
            case "$meta" in
            "") arg="" ;; N|K|T|X) arg=2 ;; FAULT,...) arg=none ;; PROFILE) arg=fp64 ;; PROFILE,...) arg=bf16 ;;
            PATH) arg=decode ;; FORMAT) arg=bf16 ;; *) arg=x ;;
            esac
            if [ -z "$meta" ]; then expect_code 0 "$MLA" "$c" "--$opt" --help
            else expect_code 0 "$MLA" "$c" "--$opt" "$arg" --help; fi
            grep -q "^usage: mlacheck $c" "$TMP/out" || fail "$c --$opt $arg --help: $(cat "$TMP/out")"
            nopt=$((nopt + 1))
        done <"$TMP/opts-$c"
    done
    [ $nopt -ge 70 ] || fail "only $nopt options found in the help texts (the table has 79 on 2026-12-01)"
    # short options are the listed ones only; an unknown option names the closest
    expect_code 0 "$MLA" run -k golden -q -v --help
    expect_code 2 "$MLA" run --sute ci
    grep -q "unknown option --sute (did you mean --suite?)" "$TMP/out" || fail "no suggestion: $(cat "$TMP/out")"
    expect_code 2 "$MLA" bisect --frobnicate
    expect_code 2 "$MLA" run --suite
    grep -q "needs an argument" "$TMP/out" || fail "missing argument not named: $(cat "$TMP/out")"
    expect_code 2 "$MLA" lst
    grep -q "did you mean 'list'" "$TMP/out" || fail "no command suggestion: $(cat "$TMP/out")"
    # the version with the git id
    expect_code 0 "$MLA" --version
    grep -Eq '^mlacheck [0-9]+\.[0-9]+\.[0-9]+ \(git [^)]+\)$' "$TMP/out" || fail "--version: $(cat "$TMP/out")"
    # the manual page, from the same table: every command and option, and roff that groff accepts
    "$MLA" help --man >"$TMP/mlacheck.1" || fail "help --man"
    grep -q '^\.TH MLACHECK 1' "$TMP/mlacheck.1" || fail "no .TH in the manual page"
    for c in $cmds; do
        grep -q "^\.SS \"$(echo "$c" | sed 's/-/\\\\-/g')" "$TMP/mlacheck.1" || fail "manual page lacks $c"
        while read -r opt meta; do
            grep -qF "\\-\\-$(echo "$opt" | sed 's/-/\\-/g')\\fR" "$TMP/mlacheck.1" || fail "manual page lacks $c --$opt"
        done <"$TMP/opts-$c"
    done
    if command -v groff >/dev/null; then
        groff -man -ww -z "$TMP/mlacheck.1" 2>"$TMP/groff" || fail "groff refused the manual page"
        [ ! -s "$TMP/groff" ] || fail "groff warnings: $(cat "$TMP/groff")"
        echo "groff -man -ww accepts the manual page"
    fi
    if command -v man >/dev/null; then
        man -l "$TMP/mlacheck.1" 2>/dev/null | grep -q "mlacheck run" || echo "man -l could not render (no pager setup?)"
    fi
    echo "$(echo "$cmds" | wc -l) commands, $nopt options: help, parser and manual page agree"
    ;;
names)
    # a mistyped name fails with 2 and the closest name before any work: no results folder is written
    res="$TMP/res"
    expect_code 2 "$MLA" run --case tiny-v3-goldn --results "$res"
    grep -q "did you mean 'tiny-v3-golden'" "$TMP/out" || fail "mistyped --case: $(cat "$TMP/out")"
    expect_code 125 "$MLA" run --case tiny-v3-goldn --git-bisect --results "$res"
    expect_code 2 "$MLA" run --engine cuda --results "$res"
    grep -q "expected ref, gpu or plugin:PATH.so" "$TMP/out" || fail "--engine cuda: $(cat "$TMP/out")"
    expect_code 2 "$MLA" run --engine plugin:"$TMP/no-such.so" --results "$res"
    grep -q "no-such.so' is not a readable file" "$TMP/out" || fail "missing plugin: $(cat "$TMP/out")"
    expect_code 2 "$MLA" run --suite smok --results "$res"
    grep -q "did you mean 'smoke'" "$TMP/out" || fail "mistyped --suite: $(cat "$TMP/out")"
    expect_code 2 "$MLA" run --suite smoke --inject no-mscal --results "$res"
    grep -q "did you mean 'no-mscale'" "$TMP/out" || fail "mistyped --inject: $(cat "$TMP/out")"
    expect_code 2 "$MLA" run --suite smoke -k goldne --results "$res"
    grep -q "selects no check of suite smoke (did you mean 'golden'?)" "$TMP/out" || fail "mistyped -k: $(cat "$TMP/out")"
    expect_code 2 "$MLA" --engine cuda --results "$res" # no command: run, with the same checks
    [ ! -e "$res" ] || fail "a results folder was written: $(ls -R "$res")"
    expect_code 2 "$MLA" dump --model tiny-v3 --tokens 1 --profile bf61 --out "$TMP/x.h5"
    grep -q "did you mean 'bf16'" "$TMP/out" || fail "mistyped --profile: $(cat "$TMP/out")"
    expect_code 2 "$MLA" dump --model tiny-v33 --tokens 1 --out "$TMP/x.h5"
    grep -q "did you mean 'tiny-v3'" "$TMP/out" || fail "mistyped --model: $(cat "$TMP/out")"
    expect_code 2 "$MLA" dump --model tiny-v3 --tokens 1 --path decod --out "$TMP/x.h5"
    grep -q "did you mean 'decode'" "$TMP/out" || fail "mistyped --path: $(cat "$TMP/out")"
    expect_code 2 "$MLA" bench --engine cuda
    expect_code 2 "$MLA" ops --engine plugin:"$TMP/no-such.so" --results "$res"
    expect_code 2 "$MLA" ops --engine ref --suite ops-smok --results "$res"
    grep -q "did you mean 'ops-smoke'" "$TMP/out" || fail "mistyped ops --suite: $(cat "$TMP/out")"
    [ ! -e "$res" ] || fail "a results folder was written: $(ls -R "$res")"
    "$MLA" dump --model tiny-v3 --tokens 3,1,4 --out "$TMP/g.h5" >/dev/null || fail dump
    expect_code 2 "$MLA" compare "$TMP/g.h5" "$TMP/g.h5" --check goldn
    grep -q "did you mean 'golden'" "$TMP/out" || fail "mistyped --check: $(cat "$TMP/out")"
    # -k selects: a glob over case/check/profile, several allowed; the report holds only those
    expect_code 0 "$MLA" run --suite ci -k 'tiny-v3-golden/golden/fp8*' -k 'tiny-v3-fp64/determinism/*' --quiet --results "$TMP/k"
    n=$(grep -c '| pass |' "$TMP"/k/*/summary.md)
    grep '| pass |' "$TMP"/k/*/summary.md | grep -v 'tiny-v3-golden | golden | fp8\|tiny-v3-fp64 | determinism' &&
        fail "-k ran checks it did not select"
    [ "$n" -ge 4 ] || { cat "$TMP"/k/*/summary.md; fail "-k: expected fp8kv, fp8ds, fp8w goldens and determinism, got $n rows"; }
    echo "-k: $n verdicts, all selected"
    # no command is `mlacheck run`, options included
    expect_code 0 "$MLA" -k 'tiny-v3-golden/golden/fp64' --quiet --results "$TMP/nocmd"
    [ "$(grep -c '| pass |' "$TMP"/nocmd/*/summary.md)" -ge 1 ] || fail "no command did not run the ci suite"
    ;;
progress)
    # stderr not a terminal: one line per check as it finishes (verdict, case / check / profile,
    # seconds) and heartbeats with elapsed time and an ETA; --quiet silences them
    MLACHECK_HEARTBEAT_S=0.05 "$MLA" run --suite smoke --results "$TMP/r" >"$TMP/stdout" 2>"$TMP/err" || fail "smoke run"
    cat "$TMP/err"
    grep -Eq '^\[0:[0-9]{2} +[0-9]+%\] PASS  tiny-v3-prefill / golden / fp64  [0-9]+\.[0-9]{2} s$' "$TMP/err" ||
        fail "no per-check line for tiny-v3-prefill golden"
    lines=$(grep -Ec '\] (PASS|FAIL|SKIP|ERROR) ' "$TMP/err")
    checks=$(grep -Eo '[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$TMP/stdout" | awk '{print $1 + $3 + $5}')
    [ "$lines" -ge 4 ] || fail "expected a line per check, got $lines (run: $checks verdicts)"
    grep -Eq 'heartbeat: 0:[0-9]{2} elapsed, [0-9]+ of 5 check calls done, ETA ([0-9:]+|unknown); running ' "$TMP/err" ||
        fail "no heartbeat"
    grep -q ' 100%\] ' "$TMP/err" || fail "the last line is not at 100%"
    # a failing check: FAIL with its path and first divergence, -v adds the per-path lines
    expect_code 1 "$MLA" run --suite smoke --inject no-mscale -v --results "$TMP/r"
    grep -Eq '\] FAIL  tiny-v3-prefill / golden / fp64  [0-9.]+ s  prefill: first divergence: layer 0 tap attn_core' "$TMP/out" ||
        fail "no FAIL line naming the divergence: $(cat "$TMP/out")"
    grep -Eq '^        prefill  FAIL  first divergence' "$TMP/out" || fail "-v: no per-path line"
    grep -q '(engine drives)' "$TMP/out" || fail "-v: no drive time"
    expect_code 0 "$MLA" run --suite smoke --quiet --results "$TMP/r"
    [ ! -s "$TMP/out" ] || fail "--quiet printed: $(cat "$TMP/out")"
    MLACHECK_HEARTBEAT_S=abc expect_code 2 "$MLA" run --suite smoke --results "$TMP/r"
    ;;
reseed)
    # run --reseed K: another valid workload under the same limits. A small suite of random and text
    # prompts (and a staggered batch) passes under K = 3 with other prompts (other metrics than K = 0),
    # the same K twice is the same run, and K is in the summary line and the provenance (the
    # same checks and paths; which rows they compare, and over how many elements, depends on the
    # tokens: K = 3 has one q_absorbed row fewer and other final_norm counts here)
    for i in $(seq 1 40); do printf 'line %02d of the held-out text, bytes to draw windows from.\n' "$i"; done >"$TMP/t.txt"
    cat >"$TMP/r.suite" <<'SUITE'
[suite]
description = reseed: random and text prompts, a staggered batch
[defaults]
model    = tiny-v3
engines  = ref
profiles = bf16
[case single]
prompts     = random:len=9,seed=5 ; text:t.txt,offset=0,len=12,bos=256
paths       = prefill, decode
prefill_len = 4
checks      = decode-vs-prefill, determinism
[case staggered]
prompts  = random:len=30,seed=1 ; random:len=25,seed=2
batch    = 2
schedule = staggered
chunk    = 3
paths    = prefill, chunked
checks   = batch-invariance, chunked-vs-whole
SUITE
    expect_code 0 "$MLA" run --suite "$TMP/r.suite" --results "$TMP/k0"
    expect_code 0 "$MLA" run --suite "$TMP/r.suite" --reseed 3 --results "$TMP/k3"
    grep -q "^mlacheck run: suite r --reseed 3: [0-9]* passed, 0 failed" "$TMP/out" || fail "no --reseed 3 in the summary line: $(cat "$TMP/out")"
    expect_code 0 "$MLA" run --suite "$TMP/r.suite" --reseed 3 --results "$TMP/k3b"
    m0=$(ls "$TMP"/k0/*/metrics.tsv) m3=$(ls "$TMP"/k3/*/metrics.tsv) m3b=$(ls "$TMP"/k3b/*/metrics.tsv)
    cmp -s "$m0" "$m3" && fail "--reseed 3 gave the metrics of the suite as written: the prompts did not change"
    cmp -s "$m3" "$m3b" || fail "--reseed 3 twice gave different metrics: a reseeded failure could not be reproduced"
    for c in single staggered; do
        cut -f1-4 "$m0" | grep "^$c	" | sort -u >"$TMP/a"; cut -f1-4 "$m3" | grep "^$c	" | sort -u >"$TMP/b"
        [ -s "$TMP/a" ] && cmp -s "$TMP/a" "$TMP/b" || fail "case $c: K = 3 ran other checks or paths"
        awk -F'\t' -v c=$c '$1 == c {print $9, $13}' "$m0" >"$TMP/a"; awk -F'\t' -v c=$c '$1 == c {print $9, $13}' "$m3" >"$TMP/b"
        cmp -s "$TMP/a" "$TMP/b" && fail "case $c: the same errors under K = 3: its prompts did not change"
    done
    grep -q '"reseed": "3"' "$(ls "$TMP"/k3/*/summary.json)" || fail "summary.json provenance has no reseed 3"
    grep -q '| reseed | 3 |' "$(ls "$TMP"/k3/*/summary.md)" || fail "summary.md provenance has no reseed 3"
    grep -q '<property name="reseed" value="3"/>' "$(ls "$TMP"/k3/*/junit.xml)" || fail "junit.xml has no reseed property"
    grep -q '"reseed": "0"' "$(ls "$TMP"/k0/*/summary.json)" || fail "summary.json provenance has no reseed 0"
    # golden checks compare against dumps of the suite's own prompts: under K a skip with the reason,
    # never a pass; a run of golden checks only is all skips (77, as any run with nothing checked)
    expect_code 0 "$MLA" run --suite smoke --reseed 3 --results "$TMP/g"
    python3 - "$(ls "$TMP"/g/*/summary.json)" <<'PY' || fail "golden checks under --reseed 3 are not skips with the reason"
import json, sys
checks = json.load(open(sys.argv[1]))["checks"]
golden = [c for c in checks if c["check"] == "golden"]
assert golden, "no golden verdicts"
for c in golden:
    assert c["verdict"] == "skip", c
    assert c["message"] == "--reseed 3 changes the prompts the goldens were made from", c
assert any(c["verdict"] == "pass" for c in checks), "the other checks did not run"
PY
    expect_code 77 "$MLA" run --suite smoke --case tiny-v2-lite-prefill --reseed 3 --results "$TMP/g"
    grep -q "0 passed, 0 failed, 1 skipped" "$TMP/out" || fail "golden-only case under --reseed: $(cat "$TMP/out")"
    expect_code 2 "$MLA" run --suite smoke --reseed -1 --results "$TMP/g"
    grep -q -- "--reseed '-1': expected an integer" "$TMP/out" || fail "bad --reseed not named: $(cat "$TMP/out")"
    expect_code 2 "$MLA" run --suite smoke --reseed x --results "$TMP/g"
    ;;
reseed-zero)
    # --reseed 0 is the suite as written, bit for bit: the ci suite's metrics.tsv is the same file
    expect_code 0 "$MLA" run --suite ci --quiet --results "$TMP/a"
    expect_code 0 "$MLA" run --suite ci --quiet --reseed 0 --results "$TMP/b"
    a=$(ls "$TMP"/a/*/metrics.tsv) b=$(ls "$TMP"/b/*/metrics.tsv)
    echo "ci metrics.tsv: $(wc -l <"$a") lines without --reseed, $(wc -l <"$b") with --reseed 0"
    cmp "$a" "$b" || fail "--reseed 0 changed the ci suite's metrics"
    ;;
*)
    fail "unknown test $NAME"
    ;;
esac
echo "PASS: $NAME"
