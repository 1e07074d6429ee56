#!/usr/bin/env python3
"""capi_checks.py [ops|model]: the libmlacheck route of the Python package, with numpy only (no torch,
no GPU). ctest runs it through run_python.sh with MLACHECK_LIB set to the built library.

ops:   the library's version and struct sizes; the numpy operator (examples/numpy_mla_ops.py) passes
       ops-smoke through the C API; a planted 1% softmax-scale error fails naming the case and
       mqa_out / lse with the metric against its limit; declined cases carry their reason; bad input
       (wrong shape, dtype, device, NaN in out, a missing lse) raises CaseError naming the case, the
       tensor and what was expected; the C API's own refusals (unknown suite, wrong struct size).
model: mlacheck.run on the smoke suite with the numpy forward_mqa only (the reference supplies mha,
       and says so), with forward_mha only, with both; a planted scale error in forward_mqa fails
       (exit code 1, the failing check and tap named); an operator that raises is an error naming
       the exception; neither form is a ValueError."""
import ctypes
import os
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import numpy as np  # noqa: E402

import mlacheck  # noqa: E402
from mlacheck import _lib  # noqa: E402
import numpy_mla_ops as npo  # noqa: E402

FAILS = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILS.append(what)


def raises(fn, exc, *needles):
    try:
        fn()
    except exc as e:
        msg = str(e)
        missing = [n for n in needles if n not in msg]
        return msg if not missing else f"message lacks {missing}: {msg}"
    except Exception as e:  # noqa: BLE001
        return f"raised {type(e).__name__}: {e}"
    return "did not raise"


def mqa_np(x, err=0.0):
    return npo.forward_mqa(x, x.softmax_scale * (1.0 + err))


def mha_np(x, err=0.0):
    return npo.forward_mha(x, x.softmax_scale * (1.0 + err))


def test_ops():
    check(_lib.lib().mlacheck_capi_version() == _lib.CAPI_VERSION, f"capi version {_lib.CAPI_VERSION}")
    print("      library:", mlacheck.library_path())
    # 1. the numpy operator passes ops-smoke
    res = mlacheck.check_ops("ops-smoke", mqa=mqa_np, mha=mha_np, who="numpy")
    for _, v in res:
        print("     ", v)
    check(len(res) == 10 and all(v.passed for _, v in res), "numpy operator: 10 of 10 ops-smoke cases pass")
    # 2. a planted 1% softmax-scale error fails, naming the case, the tensor and the metric
    res = dict(mlacheck.check_ops("ops-smoke", mqa=lambda x: mqa_np(x, 0.01), mha=None, who="numpy"))
    v = res["mqa-v3-h128-p1-fp8kv-real-bc"]
    print("     ", v)
    check(not v.passed and v.tensor == "mqa_out" and v.metric == "allclose" and v.value > v.limit
          and "mqa-v3-h128-p1-fp8kv-real-bc: mqa_out: " in v.message() and "over max_abs 0.0008" in v.message(),
          "planted scale error: mqa-v3-h128-p1-fp8kv-real-bc fails on mqa_out (allclose vs max_abs 8e-4)")
    v = res["mqa-v3-h128-p64-bf16-small-ba"]
    check(not v.passed and v.tensor == "lse" and v.lse_metrics["max_abs"] > v.max_abs_limit == 1e-6,
          "planted scale error: mqa-v3-h128-p64-bf16-small-ba fails on lse (max_abs over 1e-6)")
    skipped = [v for v in res.values() if v.skipped]
    check(len(skipped) == 4 and all(v.why == "numpy declines mha" for v in skipped),
          "mha=None: the 4 prefill cases are SKIP with 'numpy declines mha'")
    # 3. supports as a dict and as a callable: the declined feature is named as `mlacheck ops` names it
    reasons = {c.id: c.skip_reason for c in mlacheck.op_cases("ops-smoke", supports={"kv_format": {"bf16"}},
                                                              who="k")}
    check(reasons["mqa-k2-h64-p16-fp8ds-small-bb"] == "k declines kv format fp8ds"
          and reasons["mqa-v3-h128-p64-bf16-small-ba"] is None, "supports dict: 'k declines kv format fp8ds'")
    reasons = {c.id: c.skip_reason for c in mlacheck.op_cases(
        "ops-smoke", supports=lambda f, v: not (f == "page_size" and v == 16), who="k")}
    check(reasons["mha-v3-h128-p16-fp8kv-real-ba"] == "k declines page size 16"
          and reasons["mha-v3-h16-p1-bf16-real-bc"] is None, "supports callable: 'k declines page size 16'")
    # 4. bad input names the case, the tensor and what was expected
    case = mlacheck.OpSuite("ops-smoke").case("mqa-v3-h128-p64-bf16-small-ba")
    out, lse = mqa_np(case)
    cid = "case mqa-v3-h128-p64-bf16-small-ba"
    for what, fn, needles in (
        ("wrong shape", lambda: case.judge(out[:, :, :500], lse), (cid, "out has shape [3, 128, 500]",
                                                                  "expected float32 [3, 128, 512]")),
        ("wrong dtype", lambda: case.judge(out.astype(np.float16), lse), (cid, "out has dtype float16",
                                                                          "expected float32")),
        ("missing lse", lambda: case.judge(out, None), (cid, "lse is missing: expected float32 [3, 128]")),
        ("NaN in out", lambda: case.judge(np.where(np.arange(512) == 7, np.float32(np.nan), out), lse),
         (cid, "out[0, 0, 7] is nan: expected finite values")),
        ("lse +inf", lambda: case.judge(out, np.full_like(lse, np.inf)), (cid, "lse[0, 0] is inf")),
    ):
        msg = raises(fn, mlacheck.CaseError, *needles)
        check(msg.startswith("case "), f"bad input, {what}: {msg}")
    case._device = types.SimpleNamespace(type="cuda", index=0)  # as after case.torch("cuda:0")
    msg = raises(lambda: case.judge(out, lse), mlacheck.CaseError, cid, "out is a ndarray",
                 "expected a torch tensor on")
    check(msg.startswith("case "), f"bad input, wrong device: {msg}")
    case._device = None
    check(case.judge(out, lse).passed, "the same case with good outputs passes")
    # the native encodings: bf16 bits decode to the f32 inputs; the decoded cache matches formats.py
    raw, x = case.raw, case.inputs
    check(raw["q"].dtype == np.uint16 and np.array_equal(mlacheck.bf16_to_f32(raw["q"]), x["q"]),
          "q: bf16 bits (uint16) decode exactly to the float32 inputs")
    ref_rows = mlacheck.kv_rows_to_f32(raw["kv_cache"], "bf16", case.kv_lora_rank, case.rope_dim)
    check(np.array_equal(case.kv_cache_f32(), ref_rows, equal_nan=True), "kv_cache_f32 (mla/kv.h) = formats.py")
    check(raw["block_table"].dtype == np.int32 and list(raw["cu_seqlens_q"]) == [0, 1, 2, 2, 3],
          "int32 block table and cu_seqlens_q [0, 1, 2, 2, 3]")
    case.close()
    msg = raises(lambda: case.judge(out, lse), mlacheck.CaseError, "closed")
    check(msg.startswith("case "), "a closed case refuses to judge")
    # 5. the C API's own refusals, as statuses with their detail
    msg = raises(lambda: mlacheck.OpSuite("ops-nope"), mlacheck.CapiError, "operator suite 'ops-nope'",
                 "expected ops-smoke or ops-full")
    check(msg.startswith("mlacheck_ops_open"), f"unknown suite: {msg}")
    info = _lib.CaseInfo(struct_size=1)
    h = ctypes.c_void_p()
    _lib.call("mlacheck_ops_open", b"ops-smoke", None, ctypes.byref(h))
    msg = raises(lambda: _lib.call("mlacheck_ops_case_info", h, 0, ctypes.byref(info)), mlacheck.CapiError,
                 "struct_size 1, expected")
    check(msg.startswith("mlacheck_ops_case_info"), f"wrong struct_size: {msg}")
    _lib.lib().mlacheck_ops_close(h)
    try:
        import torch  # noqa: F401
    except ImportError:
        c = mlacheck.OpSuite("ops-smoke").case(0)
        msg = raises(lambda: c.torch("cpu"), ImportError, "needs PyTorch")
        check(msg.startswith(".torch() needs") or "needs PyTorch" in msg, f"no torch: {msg}")


def test_model():
    res = tempfile.mkdtemp(prefix="mlacheck-py-")
    r = mlacheck.run(suite="smoke", mqa=mqa_np, mha=None, results=res, name="numpy")
    print(r)
    check(r.passed and r.exit_code == 0 and r.pass_count == 5, "smoke with forward_mqa only: 5 passed, exit 0")
    check(r.attention == "mqa (decode): numpy; mha (prefill): the reference (none given)",
          f"the report says who computed each form: {r.attention}")
    with open(os.path.join(r.run_dir, "attention.txt")) as f:
        txt = f.read()
    check("mha (prefill): the reference (none given)" in txt and "plugin:inproc:numpy" in txt,
          "attention.txt in the run folder names the reference for mha")
    check(all(os.path.exists(os.path.join(r.run_dir, n)) for n in ("summary.md", "junit.xml", "metrics.tsv")),
          "the run folder has summary.md, junit.xml, metrics.tsv")
    r = mlacheck.run(suite="smoke", mqa=None, mha=mha_np, results=res, name="numpy")
    check(r.passed and r.pass_count == 5 and "mqa (decode): the reference" in r.attention,
          f"smoke with forward_mha only: {r.pass_count} passed")
    r = mlacheck.run(suite="smoke", mqa=mqa_np, mha=mha_np, results=res, name="numpy")
    check(r.passed and r.pass_count == 5, "smoke with both forms: 5 passed")
    r = mlacheck.run(suite="smoke", mqa=lambda x: mqa_np(x, 0.01), results=res, name="numpy")
    print(r)
    check(not r.passed and r.exit_code == 1 and r.fail_count >= 1 and "@plugin" in r.first_failure
          and "decode" in r.first_failure, f"planted 1% scale error in forward_mqa: exit {r.exit_code}")

    def broken(x):
        raise RuntimeError("kernel exploded")
    r = mlacheck.run(suite="smoke", mqa=broken, results=res, name="numpy")
    check(not r.passed and r.exit_code == 2 and r.callback_errors and "kernel exploded" in r.first_failure,
          f"an operator that raises: exit {r.exit_code}, '{r.first_failure[:120]}'")
    r = mlacheck.run(suite="smoke", mqa=lambda x: (np.zeros((1, 1), np.float32), None), results=res, name="numpy")
    check(not r.passed and "forward_mqa call 1: out has shape [1, 1]: expected float32" in r.first_failure,
          f"bad outputs from forward_mqa are named: '{r.first_failure[:160]}'")
    r = mlacheck.run(suite="smoke", mqa=mqa_np, supports={"kv_format": {"bf16"}}, results=res, name="numpy")
    check(r.exit_code == 77 and r.skip_count == 3 and r.pass_count == 0,
          f"a kernel declining the fp64 profile's f32 cache: every check skipped, exit {r.exit_code}")
    msg = raises(lambda: mlacheck.run(suite="smoke"), ValueError, "give mqa, mha or both")
    check(msg.startswith("mlacheck.run"), "neither form: ValueError")


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "ops"
    {"ops": test_ops, "model": test_model}[what]()
    if FAILS:
        print(f"{len(FAILS)} checks failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
