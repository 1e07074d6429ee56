#!/usr/bin/env python3
"""torch_smoke.py [--suite ops-smoke|ops-full] [--device cuda]: the libmlacheck route with torch tensors
on a GPU (the H200 machine; not in ctest: no torch there). Exit 77 without torch or the device.

A small absorbed decode in plain torch (fp32 math over the paged cache, bf16 / f32 caches; fp8 ones
declined, prefill declined) is gated with:
  1. op_cases + case.torch(device) + case.judge: every mqa case with a bf16 / f32 cache passes, the
     others are skipped with their reason; the inputs have the kernel's native dtypes on the device;
  2. a planted 1% softmax-scale error fails with mqa_out or lse named;
  3. a bf16 output tensor is accepted (widened exactly), an output on the CPU is refused (CaseError
     naming the case, the tensor and the device);
  4. mlacheck.run(suite="smoke", mqa=...) with the torch decode (the reference computes prefill) passes,
     and with the planted error fails (exit code 1)."""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

FAILS = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def torch_mqa(torch, x, device, err=0.0):
    """Absorbed decode over the paged latent cache (one kv head), fp32 softmax; x: OpCase or OpCall."""
    t = x.torch(device)
    q, rows, table = t["q"].float(), t["kv_cache"].float(), t["block_table"].long()
    C, page, scale = x.kv_lora_rank, x.page_size, x.softmax_scale * (1.0 + err)
    cu, lens = x.raw["cu_seqlens_q"], x.raw["seq_lens"]
    out = torch.zeros(x.out_shape, dtype=torch.float32, device=device)
    lse = torch.full(x.lse_shape, float("-inf"), dtype=torch.float32, device=device)
    for b in range(x.batch):
        t0, t1, n = int(cu[b]), int(cu[b + 1]), int(lens[b])
        if t1 == t0:
            continue
        j = torch.arange(n, device=device)
        kv = rows[table[b, j // page], j % page]                         # [n, C+R]
        s = torch.einsum("thd,nd->thn", q[t0:t1], kv) * scale            # [s, H, n]
        i = torch.arange(t1 - t0, device=device)
        visible = j[None, :] <= (n - (t1 - t0) + i)[:, None]             # query i sees keys j <= ctx + i
        s = s.masked_fill(~visible[:, None, :], float("-inf"))
        l_ = torch.logsumexp(s, dim=-1)
        out[t0:t1] = torch.einsum("thn,nc->thc", torch.exp(s - l_[..., None]), kv[:, :C])
        lse[t0:t1] = l_
    return out, lse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="ops-smoke")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: no torch")
        return 77
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 77
    import mlacheck
    dev = torch.device(a.device)
    print("library:", mlacheck.library_path(), "torch", torch.__version__, "device", dev)
    sup = {"kv_format": {"bf16", "f32"}, "mha": False}
    n_pass = n_skip = 0
    for case in mlacheck.op_cases(a.suite, supports=sup, who="torch-mqa"):
        if case.skip_reason:
            n_skip += 1
            print(f"SKIP {case.id}: {case.skip_reason}")
            continue
        t = case.torch(dev)
        native = (t["q"].dtype == torch.bfloat16 and t["block_table"].dtype == torch.int32
                  and t["kv_cache"].dtype == (torch.bfloat16 if case.kv_format == "bf16" else torch.float32)
                  and t["kv_cache"].device.type == dev.type and tuple(t["kv_cache"].shape[-1:]) == (576,))
        check(native, f"{case.id}: native dtypes on {dev}: q {t['q'].dtype}, kv_cache {t['kv_cache'].dtype} "
                      f"{list(t['kv_cache'].shape)}")
        v = case.judge(*torch_mqa(torch, case, dev))
        print(v)
        check(v.passed, f"{case.id}: torch decode passes")
        n_pass += v.passed
        bad = case.judge(*torch_mqa(torch, case, dev, 0.01))
        print(bad)
        check(not bad.passed and bad.tensor in ("mqa_out", "lse"), f"{case.id}: 1% scale error fails on {bad.tensor}")
        out, lse = torch_mqa(torch, case, dev)
        check(case.judge(out.bfloat16(), lse).passed, f"{case.id}: a bf16 out is accepted and passes")
        try:
            case.judge(out.cpu(), lse)
            check(False, f"{case.id}: an out on the cpu is refused")
        except mlacheck.CaseError as e:
            check(f"case {case.id}: out is on cpu: expected {dev}" in str(e), f"device refused: {e}")
        case.close()
    check(n_pass > 0, f"{n_pass} cases passed, {n_skip} skipped with reasons")
    res = tempfile.mkdtemp(prefix="mlacheck-torch-")
    r = mlacheck.run(suite="smoke", mqa=lambda x: torch_mqa(torch, x, dev), results=res, name="torch-mqa")
    print(r)
    check(r.passed and "mha (prefill): the reference" in r.attention, "whole model, smoke, torch decode: PASS")
    r = mlacheck.run(suite="smoke", mqa=lambda x: torch_mqa(torch, x, dev, 0.01), results=res, name="torch-mqa")
    print(r)
    check(r.exit_code == 1, f"whole model, planted 1% scale error: exit {r.exit_code}, expected 1")
    print(f"{len(FAILS)} checks failed" if FAILS else "all checks passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
