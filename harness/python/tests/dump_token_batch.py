#!/usr/bin/env python3
"""dump_token_batch.py OUT_PATTERN [--perturb] REF.h5...: a vLLM-style dump written from numpy.

The reference dumps (one per prompt, `mlacheck dump`) stand in for a model's activations: their taps
are concatenated into one flat token batch [T, ...] as a vLLM forward holds them (k_pe [T, 1, R],
attn_core [T, H*V] as o_proj's input, lse [H, T] float32 as flash-attn's varlen lse, the other float
taps in bf16), and
mlacheck_dump.TokenBatchDump splits them back by cu_seqlens into one golden file per sequence
(OUT_PATTERN with {seq}). --perturb scales head 3 of layer 0's attn_core of the LAST sequence by 1.10
(a planted attention bug that `mlacheck compare` must place there). Also checks that bad input
raises DumpError naming the tap and what was expected."""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import mlacheck_dump as md  # noqa: E402


def read(path):
    with h5py.File(path, "r") as f:
        g = {t: f[t][()] for t in md.GLOBAL_TAPS if t in f}
        layers = {int(i): {t: f["layers"][i][t][()] for t in f["layers"][i]} for i in f["layers"]}
        return f["tokens"][()], g, layers, dict(f["meta"].attrs)


def as_model_holds(a):
    """A float tap as a bf16 model holds it (uint16 bits, tag bf16); integer taps as they are."""
    return (md.f32_to_bf16_bits(a), "bf16") if a.dtype.kind == "f" else a


def refused(fn, want):
    try:
        fn()
    except md.DumpError as e:
        assert want in str(e), "message %r lacks %r" % (str(e), want)
        return
    raise AssertionError("accepted; expected an error with %r" % want)


def main():
    args = sys.argv[1:]
    perturb = "--perturb" in args
    args = [a for a in args if a != "--perturb"]
    pattern, refs = args[0], args[1:]
    seqs = [read(p) for p in refs]
    ref_meta = seqs[0][3]
    lens = [len(s[0]) for s in seqs]
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    T = int(cu[-1])
    flat = lambda get: np.concatenate([get(s) for s in seqs], axis=0)  # noqa: E731

    d = md.TokenBatchDump(flat(lambda s: s[0]), cu_seqlens=cu)
    assert md.TokenBatchDump(flat(lambda s: s[0]), seq_lens=lens).cu == d.cu
    for tap in seqs[0][1]:
        d.add(tap, as_model_holds(flat(lambda s: s[1][tap])))
    for layer in sorted(seqs[0][2]):
        for tap in md.LAYER_TAPS:  # computation order, as a forward would add them
            if tap not in seqs[0][2][layer]:
                continue
            a = flat(lambda s: s[2][layer][tap])
            if tap == "k_pe":
                d.add(tap, as_model_holds(a[:, None, :]), layer=layer)          # [T, 1, R]
            elif tap == "attn_core":
                if perturb and layer == 0:
                    a = a.copy()
                    a[cu[-2]:, 3] *= 1.10
                d.add(tap, as_model_holds(a.reshape(T, -1)), layer=layer)       # [T, H*V]
            elif tap == "lse":
                d.add(tap, np.ascontiguousarray(a.T, dtype=np.float32), layer=layer, heads_first=True)  # [H, T] f32
            else:
                d.add(tap, as_model_holds(a), layer=layer)
    refused(lambda: d.write(pattern, meta={"model": ref_meta["model"]}), "meta model_config")
    paths = d.write(pattern, meta={"model": ref_meta["model"], "model_config": ref_meta["model_config"],
                                   "profile": "bf16", "engine": "vllm-style-numpy"})
    for p in paths:
        md.verify_dump(p)

    # bad input is refused with the tap, the layer and what was expected
    x = np.zeros((T, 8, 32), np.float32)
    refused(lambda: d.add("q_nope", x[:-1], layer=5), "layer 5 tap q_nope: shape [%d, 8, 32]" % (T - 1))
    refused(lambda: d.add("attn_core", x.reshape(T, -1), layer=7), "give num_heads=")
    refused(lambda: d.add("lse", np.zeros((T, 8)), layer=7, heads_first=True), "expected [H, %d]" % T)
    refused(lambda: d.add("attn_out", x[:, 0]), "not a global tap")
    refused(lambda: d.add("q_nope", x, layer=0), "added twice")
    refused(lambda: md.TokenBatchDump(np.arange(T), cu_seqlens=[0, 2, 2, T]), "sequence 1 has 0 tokens")
    refused(lambda: md.TokenBatchDump(np.arange(T), cu_seqlens=[0, T - 1]), "expected [0, ..., %d]" % T)
    print("wrote %s (%d sequences, %d tokens, %d layers)" % (", ".join(paths), len(paths), T, len(seqs[0][2])))


if __name__ == "__main__":
    main()
