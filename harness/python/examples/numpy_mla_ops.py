#!/usr/bin/env python3
"""A numpy MLA attention operator, gated with mlacheck's export / judge route (no C library, no torch).

    mlacheck ops --export DIR [--suite ops-smoke|ops-full]
    python3 numpy_mla_ops.py DIR [--scale-error 0.01]
    mlacheck ops --judge DIR

The two forms of vLLM's MLA layer (mla/attn_op.h, /work/shared/docs/mla-spec.md), computed in float32
with an fp32 softmax:
  mqa  absorbed decode: q [T, H, C+R] against the paged latent rows [c_kv | k_pe] (one kv head);
       out = softmax(scale * q . row) @ c_kv, the LATENT output [T, H, C] (before W_UV).
  mha  naive prefill: keys k = [c_kv W_UK^T | k_pe], values v = c_kv W_UV^T per head (w_kv_b rows:
       per head P rows of W_UK then V rows of W_UV); the context rows come from the cache, the new
       tokens' rows from kv_c / k_pe; out [T, H, V].
Query i of a sequence with s_q new tokens and seq_len keys sees keys j < seq_len - s_q + i + 1.
lse is the natural-log log-sum-exp of the scaled scores. --scale-error plants a bug (the softmax scale
multiplied by 1 + e) to show the judge catching it."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mlacheck  # noqa: E402

SUPPORTED_KV = ("bf16", "fp8", "fp8ds", "f32")


def gather_rows(rows, table, b, n, page):
    """Logical keys 0..n-1 of sequence b from the pool rows [blocks, page, L]."""
    j = np.arange(n)
    return rows[table[b, j // page], j % page]


def attend(q, k, v, ctx, scale):
    """q [s, H, D], k [H or 1, N, D], v [H or 1, N, Dv]; query i sees keys j <= ctx + i."""
    s_q, n = q.shape[0], k.shape[1]
    sc = np.einsum("ihd,hnd->hin", q, k).astype(np.float32) * np.float32(scale)
    visible = np.arange(n)[None, :] <= (ctx + np.arange(s_q))[:, None]
    sc = np.where(visible[None], sc, np.float32(-np.inf))
    m = sc.max(axis=-1, keepdims=True)
    p = np.exp(sc - m)
    denom = p.sum(axis=-1, keepdims=True)
    out = np.einsum("hin,hnv->ihv", p, v) / np.transpose(denom, (1, 0, 2))
    lse = (m + np.log(denom))[..., 0].T
    return out.astype(np.float32), lse.astype(np.float32)


def forward_mqa(case, scale):
    x = case.inputs
    q, table, cu, lens = x["q"], x["block_table"], x["cu_seqlens_q"], x["seq_lens"]
    C, page = case.kv_lora_rank, case.page_size
    rows = case.kv_cache_f32()
    out = np.zeros(case.out_shape, np.float32)
    lse = np.full(case.lse_shape, -np.inf, np.float32)
    for b in range(case.batch):
        t0, t1, n = int(cu[b]), int(cu[b + 1]), int(lens[b])
        if t1 == t0:
            continue
        kv = gather_rows(rows, table, b, n, page)[None]  # one kv head
        out[t0:t1], lse[t0:t1] = attend(q[t0:t1], kv, kv[..., :C], n - (t1 - t0), scale)
    return out, lse


def forward_mha(case, scale):
    x = case.inputs
    q, table, cu, lens = x["q"], x["block_table"], x["cu_seqlens_q"], x["seq_lens"]
    C, R, P, V, H, page = case.kv_lora_rank, case.rope_dim, case.nope_dim, case.v_dim, case.num_heads, case.page_size
    w = x["w_kv_b"].reshape(H, P + V, C)
    rows = case.kv_cache_f32()
    out = np.zeros(case.out_shape, np.float32)
    lse = np.full(case.lse_shape, -np.inf, np.float32)
    for b in range(case.batch):
        t0, t1, n = int(cu[b]), int(cu[b + 1]), int(lens[b])
        if t1 == t0:
            continue
        ctx = n - (t1 - t0)
        lat = np.concatenate([gather_rows(rows, table, b, ctx, page),
                              np.concatenate([x["kv_c"][t0:t1], x["k_pe"][t0:t1]], axis=1)])
        k_nope = np.einsum("nc,hpc->hnp", lat[:, :C], w[:, :P])
        k = np.concatenate([k_nope, np.broadcast_to(lat[None, :, C:], (H, n, R))], axis=-1)
        v = np.einsum("nc,hvc->hnv", lat[:, :C], w[:, P:])
        out[t0:t1], lse[t0:t1] = attend(q[t0:t1], k, v, ctx, scale)
    return out, lse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="a folder written by mlacheck ops --export")
    ap.add_argument("--scale-error", type=float, default=0.0, help="plant a relative softmax-scale error")
    a = ap.parse_args()
    for case in mlacheck.exported_cases(a.dir):
        if case.kv_format not in SUPPORTED_KV:  # say so, never silently
            case.skip(f"numpy_mla_ops decodes {', '.join(SUPPORTED_KV)}, not {case.kv_format}")
            print(f"skip  {case.id}: kv format {case.kv_format}")
            continue
        scale = case.softmax_scale * (1.0 + a.scale_error)
        out, lse = (forward_mqa if case.form == "mqa" else forward_mha)(case, scale)
        case.write_output(out, lse)
        print(f"wrote {case.id}")


if __name__ == "__main__":
    main()
