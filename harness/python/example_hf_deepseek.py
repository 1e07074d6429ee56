#!/usr/bin/env python3
"""example_hf_deepseek.py: dump a Hugging Face DeepSeek-V2/V3 checkpoint's taps for mlacheck.

    python3 example_hf_deepseek.py [HF_FOLDER] [OUT.h5]

defaults: golden/oracle/tiny-v3-hf and /tmp/example-tiny-v3-hf.h5. Then, from the repo root:

    mlacheck compare OUT.h5 golden/oracle/tiny-v3-hf/oracle-37.h5

The same steps as `mlacheck_dump.py --model F --tokens ... --out X --strict-f64`, spelled out:
load the model in float64 from a float64 copy of the modeling module (HF upcasts to float32 inside
RMSNorm, rotary, router and softmax even in a float64 model), hook the modules, run one prompt,
write the golden schema, re-read it. A second part shows a name map for a model that is not
DeepSeek-shaped (only the taps it maps are written).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mlacheck_dump as md  # noqa: E402


def main():
    root = os.path.join(HERE, "..", "..")
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "golden", "oracle", "tiny-v3-hf")
    out = sys.argv[2] if len(sys.argv) > 2 else "/tmp/example-tiny-v3-hf.h5"
    import torch
    import transformers

    cfg_text = open(os.path.join(folder, "config.json"), encoding="utf-8").read()
    cfg = json.loads(cfg_text)
    cls, edited = md.hf_model_class(cfg["model_type"], cfg["architectures"][0], strict_f64=True)
    print("float64 copy: %d lines edited" % len(edited))
    model = md.load_hf(cls, folder, "float64")

    # The oracle's first prompt uses torch.randint(seed*1000+37); here a fixed short one.
    tokens = [3, 1, 4, 1, 5, 9, 2, 6]
    with md.TapRecorder(model) as rec:  # DEEPSEEK_NAME_MAP + router taps
        taps = rec.record(tokens)
        for (layer, tap), t in sorted(taps.items(), key=lambda kv: (kv[0][0] is not None, kv[0][0] or 0, kv[0][1])):
            print("  %-8s %-14s %-18s %s" % ("" if layer is None else "layer %d" % layer, tap,
                                            tuple(t.shape), t.dtype))
        rec.write(out, {
            "producer": "harness/python/example_hf_deepseek.py %s %s" % (folder, out),
            "engine": "hf-transformers-%s" % transformers.__version__,
            "profile": "fp64", "model": os.path.basename(os.path.normpath(folder)),
            "model_config": cfg_text, "git_sha": md.git_sha_here(),
        }, dtype="float64")
    print("%s: %d datasets, crc32s ok" % (out, len(md.verify_dump(out))))

    # A generic name map: regex over module paths (fullmatch), group 1 = layer index.
    generic = (
        (r"model\.embed_tokens", "embed"),
        (r"model\.layers\.(\d+)", "out"),
        (r"lm_head", "logits"),
    )
    with md.TapRecorder(model, name_map=generic, router_re=None) as rec:
        taps = rec.record(tokens)
    print("generic map: %d taps (%s)" % (len(taps), ", ".join(sorted({k[1] for k in taps}))))
    del torch
    return 0


if __name__ == "__main__":
    sys.exit(main())
