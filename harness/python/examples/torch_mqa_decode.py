#!/usr/bin/env python3
"""An absorbed-form MLA decode (vLLM's forward_mqa) in plain torch, gated with mlacheck's export / judge route.

    mlacheck ops --export DIR [--suite ops-smoke|ops-full]
    python3 torch_mqa_decode.py DIR [--device cuda|cpu] [--plant-scale-bug]
    mlacheck ops --judge DIR [--results RESULTS]

What it computes, per sequence b of the varlen batch (cu_seqlens_q, seq_lens, block_table), as vLLM's
MLA decode backends do over kv_c_and_k_pe_cache:
  rows   the sequence's latent rows [c_kv | k_pe] gathered page by page from the paged cache
         [num_blocks, block_size, C + R] through its block-table row (bf16; fp8 e4m3 with the
         per-tensor k_scale; fp8_ds_mla 656-byte rows: e4m3 codes, a float32 scale per 128 columns,
         bf16 k_pe; or float32)
  scores einsum over the C + R columns of the bf16 query [s, H, C + R] (q_nope absorbed through
         W_UK, then q_pe) and the rows, in float32, times softmax_scale; query i of s new tokens sees
         the keys j <= seq_len - s + i
  out    fp32 softmax @ c_kv: the latent output [s, H, C] (before W_UV), returned as bf16
  lse    logsumexp of the scaled scores (natural log, float32), as the backends return it
Inputs arrive in the kernel's native dtypes (bf16 bits, uint8 fp8 codes, int32 tables) and go to the
device as torch tensors. mha cases (the prefill form) are marked skipped with a reason: they are
torch_sdpa_prefill.py's; an fp8 cache needs torch's float8_e4m3fn / float8_e4m3fnuz dtypes, and a
torch without the one a case uses skips it, saying so.

--plant-scale-bug multiplies softmax_scale by 1.01, a 1% error the judge must catch (mqa_out or lse
named in its FAIL line).

Importable without torch (python3 -m py_compile); running it needs torch, numpy and h5py."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mlacheck  # noqa: E402

try:
    import torch
except ImportError:  # a syntax check or --help on a machine without torch
    torch = None

from torch_kv_rows import bf16, cache_rows_f32, fp8_dtype  # noqa: E402  (beside this script)

PLANTED_SCALE_ERROR = 0.01
def unsupported(case):
    """Why this operator cannot run the case, or None."""
    if case.form != "mqa":
        return "torch_mqa_decode implements forward_mqa (absorbed decode) only; mha is torch_sdpa_prefill.py's"
    if case.kv_format not in ("bf16", "fp8", "fp8ds", "f32"):
        return f"torch_mqa_decode does not decode kv format {case.kv_format}"
    if case.kv_format in ("fp8", "fp8ds") and fp8_dtype(case) is None:
        name = "float8_e4m3fnuz" if case.fp8_fnuz else "float8_e4m3fn"
        return f"this torch ({torch.__version__}) has no torch.{name} for the case's fp8 rows"
    return None


def forward_mqa(q, cache, block_table, cu_seqlens_q, seq_lens, softmax_scale, kv_lora_rank):
    """q [T, H, C + R] bf16; cache [num_blocks, block_size, C + R] float32; block_table [B, max_blocks]
    int32; cu_seqlens_q [B + 1], seq_lens [B] int32 (host). Returns out [T, H, C] bf16, lse [T, H] f32."""
    T, H, _ = q.shape
    C, page = kv_lora_rank, cache.shape[1]
    out = torch.zeros(T, H, C, dtype=torch.bfloat16, device=q.device)
    lse = torch.full((T, H), float("-inf"), dtype=torch.float32, device=q.device)
    for b in range(len(seq_lens)):
        t0, t1, n = int(cu_seqlens_q[b]), int(cu_seqlens_q[b + 1]), int(seq_lens[b])
        s = t1 - t0
        if s == 0:  # a zero-length sequence: no query rows
            continue
        n_blocks = (n + page - 1) // page
        pages = cache[block_table[b, :n_blocks].long()]        # [n_blocks, block_size, C + R]
        rows = pages.reshape(n_blocks * page, pages.shape[2])[:n]          # the sequence's n keys, in order
        scores = torch.einsum("shl,nl->hsn", q[t0:t1].float(), rows) * softmax_scale
        ctx = n - s                                             # keys before the first new token
        visible = torch.arange(n, device=q.device)[None, :] <= (ctx + torch.arange(s, device=q.device))[:, None]
        scores = scores.masked_fill(~visible, float("-inf"))
        p = torch.softmax(scores, dim=-1)                       # float32 softmax
        out[t0:t1] = torch.einsum("hsn,nc->shc", p, rows[:, :C]).to(torch.bfloat16)
        lse[t0:t1] = torch.logsumexp(scores, dim=-1).transpose(0, 1)
    return out, lse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="a folder written by mlacheck ops --export")
    ap.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    ap.add_argument("--plant-scale-bug", action="store_true",
                    help=f"multiply softmax_scale by {1 + PLANTED_SCALE_ERROR} (the judge must fail it)")
    a = ap.parse_args()
    if torch is None:
        sys.exit("torch_mqa_decode.py: needs torch (pip install torch); the numpy route is numpy_mla_ops.py")
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.set_float32_matmul_precision("highest")  # float32 means float32: no TF32 in the einsums
    print(f"torch {torch.__version__} on {device}{': planted 1% softmax-scale error' if a.plant_scale_bug else ''}")
    n_run = n_skip = 0
    for case in mlacheck.exported_cases(a.dir):
        why = unsupported(case)
        if why:  # say so, never silently
            case.skip(why)
            n_skip += 1
            continue
        x = case.raw
        scale = case.softmax_scale * (1 + PLANTED_SCALE_ERROR if a.plant_scale_bug else 1)
        out, lse = forward_mqa(bf16(x["q"], device), cache_rows_f32(case, device),
                               torch.from_numpy(x["block_table"]).to(device), x["cu_seqlens_q"], x["seq_lens"],
                               scale, case.kv_lora_rank)
        case.write_output(out, lse)  # torch tensors on any device; checked for shape and NaN
        n_run += 1
        print(f"wrote {case.id}")
    print(f"torch_mqa_decode: {n_run} cases written, {n_skip} marked skipped")


if __name__ == "__main__":
    main()
