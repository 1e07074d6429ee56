#!/usr/bin/env python3
"""The naive (prefill) form of MLA (vLLM's forward_mha) through torch.nn.functional.scaled_dot_product_attention,
gated with mlacheck's export / judge route.

    mlacheck ops --export DIR [--suite ops-smoke|ops-full]
    python3 torch_sdpa_prefill.py DIR [--device cuda|cpu] [--backend auto|math|efficient|flash|cudnn]
                                  [--plant-scale-bug]
    mlacheck ops --judge DIR [--results RESULTS]

What it computes, per sequence b of the varlen batch (split by cu_seqlens_q; seq_lens keys each):
  latent  the sequence's latent rows [c_kv | k_pe]: its seq_len - s_q cached context rows gathered
          from the paged cache through its block-table row, then its s_q new tokens' kv_c / k_pe
  k, v    decompressed per head through kv_b_proj (w_kv_b [H * (P + V), C]: per head P rows of W_UK,
          then V rows of W_UV): k = [c_kv W_UK^T | k_pe] (d_qk = P + R, 192 for DeepSeek),
          v = c_kv W_UV^T (d_v = V, 128)
  out     scaled_dot_product_attention(q, k, v, scale=softmax_scale) with the causal mask aligned to
          the end (query i of s_q new tokens sees keys j <= seq_len - s_q + i; with no context that
          is is_causal=True), [s_q, H, V], returned as bf16
  lse     torch's public SDPA returns no log-sum-exp, so it is computed beside it in float32 from the
          same q, k, scale and mask (natural log), as vLLM's merge of context and new-token attention
          needs it
q arrives as bf16 [T, H, P + R] ([q_nope | q_pe]); k and v are kept in float32 and SDPA runs in float32:
the judge's reference decompresses k and v exactly, and a bf16 k would round every score by up to
2^-9 relative, more than lse's limit (abs 1e-6 or rel 1.2e-4) allows on short sequences. decode (mqa)
cases are marked skipped with a reason: they are torch_mqa_decode.py's.

--plant-scale-bug multiplies softmax_scale by 1.01, a 1% error the judge must catch (mha_out or lse
named in its FAIL line).

Importable without torch (python3 -m py_compile); running it needs torch >= 2.1 (SDPA's scale
argument), numpy and h5py."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mlacheck  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # a syntax check or --help on a machine without torch
    torch = F = None

from torch_kv_rows import bf16, cache_rows_f32, fp8_dtype  # noqa: E402  (beside this script)

PLANTED_SCALE_ERROR = 0.01
def unsupported(case):
    """Why this operator cannot run the case, or None."""
    if case.form != "mha":
        return "torch_sdpa_prefill implements forward_mha (naive prefill) only; mqa is torch_mqa_decode.py's"
    if case.kv_format not in ("bf16", "fp8", "fp8ds", "f32"):
        return f"torch_sdpa_prefill does not decode kv format {case.kv_format}"
    if case.kv_format in ("fp8", "fp8ds") and fp8_dtype(case) is None:
        name = "float8_e4m3fnuz" if case.fp8_fnuz else "float8_e4m3fn"
        return f"this torch ({torch.__version__}) has no torch.{name} for the case's cached fp8 rows"
    return None


def sdpa_backends(name):
    """The SDPA backend list for torch.nn.attention.sdpa_kernel, or None for torch's own choice."""
    if name == "auto":
        return None
    from torch.nn.attention import SDPBackend
    return [{"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION,
             "flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[name]]


def forward_mha(q, kv_c, k_pe, w_kv_b, cache, block_table, cu_seqlens_q, seq_lens, softmax_scale, dims):
    """q [T, H, P + R] bf16; kv_c [T, C], k_pe [T, R] bf16 (the new tokens); w_kv_b [H * (P + V), C]
    bf16; cache [num_blocks, block_size, C + R] float32; block_table [B, max_blocks] int32;
    cu_seqlens_q [B + 1], seq_lens [B] int32 (host); dims (C, R, P, V). Returns out [T, H, V] bf16 and
    lse [T, H] float32."""
    C, R, P, V = dims
    T, H, _ = q.shape
    page = cache.shape[1]
    w = w_kv_b.float().reshape(H, P + V, C)
    w_uk, w_uv = w[:, :P], w[:, P:]
    new_rows = torch.cat([kv_c.float(), k_pe.float()], dim=-1)   # [T, C + R]
    out = torch.zeros(T, H, V, dtype=torch.bfloat16, device=q.device)
    lse = torch.full((T, H), float("-inf"), dtype=torch.float32, device=q.device)
    for b in range(len(seq_lens)):
        t0, t1, n = int(cu_seqlens_q[b]), int(cu_seqlens_q[b + 1]), int(seq_lens[b])
        s = t1 - t0
        if s == 0:  # a zero-length sequence: no query rows
            continue
        ctx = n - s
        n_blocks = (ctx + page - 1) // page
        cached = cache[block_table[b, :n_blocks].long()].reshape(n_blocks * page, cache.shape[2])[:ctx]
        lat = torch.cat([cached, new_rows[t0:t1]], dim=0)            # [n, C + R]
        k_nope = torch.einsum("nc,hpc->hnp", lat[:, :C], w_uk)       # [H, n, P]
        k = torch.cat([k_nope, lat[None, :, C:].expand(H, n, R)], dim=-1)  # [H, n, P + R]
        v = torch.einsum("nc,hvc->hnv", lat[:, :C], w_uv)            # [H, n, V]
        qh = q[t0:t1].float().transpose(0, 1)                          # [H, s, P + R]
        # causal aligned to the end: the context is visible to every new token
        visible = torch.arange(n, device=q.device)[None, :] <= (ctx + torch.arange(s, device=q.device))[:, None]
        if ctx == 0:  # no context: SDPA's own (top-left) causal mask is the same one
            o = F.scaled_dot_product_attention(qh[None], k[None], v[None], is_causal=True, scale=softmax_scale)
        else:
            o = F.scaled_dot_product_attention(qh[None], k[None], v[None], attn_mask=visible, scale=softmax_scale)
        out[t0:t1] = o[0].transpose(0, 1).to(torch.bfloat16)          # [H, s, V] -> [s, H, V]
        scores = torch.einsum("hsd,hnd->hsn", qh, k) * softmax_scale
        lse[t0:t1] = torch.logsumexp(scores.masked_fill(~visible, float("-inf")), dim=-1).transpose(0, 1)
    return out, lse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="a folder written by mlacheck ops --export")
    ap.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    ap.add_argument("--backend", default="auto", choices=("auto", "math", "efficient", "flash", "cudnn"),
                    help="SDPA backend (default: torch's choice)")
    ap.add_argument("--plant-scale-bug", action="store_true",
                    help=f"multiply softmax_scale by {1 + PLANTED_SCALE_ERROR} (the judge must fail it)")
    a = ap.parse_args()
    if torch is None:
        sys.exit("torch_sdpa_prefill.py: needs torch >= 2.1 (pip install torch); the numpy route is numpy_mla_ops.py")
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.set_float32_matmul_precision("highest")  # float32 means float32: no TF32 in the einsums
    backends = sdpa_backends(a.backend)
    print(f"torch {torch.__version__} on {device}, SDPA backend {a.backend}"
          f"{': planted 1% softmax-scale error' if a.plant_scale_bug else ''}")
    n_run = n_skip = 0
    for case in mlacheck.exported_cases(a.dir):
        why = unsupported(case)
        if why:  # say so, never silently
            case.skip(why)
            n_skip += 1
            continue
        x = case.raw
        scale = case.softmax_scale * (1 + PLANTED_SCALE_ERROR if a.plant_scale_bug else 1)
        args = (bf16(x["q"], device), bf16(x["kv_c"], device), bf16(x["k_pe"], device), bf16(x["w_kv_b"], device),
                cache_rows_f32(case, device), torch.from_numpy(x["block_table"]).to(device), x["cu_seqlens_q"],
                x["seq_lens"], scale, (case.kv_lora_rank, case.rope_dim, case.nope_dim, case.v_dim))
        if backends is None:
            out, lse = forward_mha(*args)
        else:
            from torch.nn.attention import sdpa_kernel
            with sdpa_kernel(backends):
                out, lse = forward_mha(*args)
        case.write_output(out, lse)  # torch tensors on any device; checked for shape and NaN
        n_run += 1
        print(f"wrote {case.id}")
    print(f"torch_sdpa_prefill: {n_run} cases written, {n_skip} marked skipped")


if __name__ == "__main__":
    main()
