#!/usr/bin/env python3
"""train.py: the trained built-in model family (issue 10 item 2). Trains two tiny byte-level MLA models
with Hugging Face transformers' own DeepseekV3 / DeepseekV2 classes on text found on the machine
(offline), with a fixed seed and step count, and writes each as an HF folder our C loader reads
(bf16 safetensors under the checkpoint names of mla-spec.md §a.3, config.json) plus TRAINING.json.

    python3 golden/trained/train.py --out DIR [--steps N] [--only trained-v3] [--smoke]

Why trained models: random tiny models amplify one bf16 rounding ~6x per layer, so every limit past
layer 0 had to be loose; a trained model amplifies ~1.5x (measured on the H200, issue 10).

Corpus: the text files of this Python's standard library (sorted paths, UTF-8, no NUL), capped at
--corpus-mb; every file is recorded with its size and sha256 in DIR/corpus-manifest.tsv. A file
goes to the held-out split when its sha256 starts with 0x00-0x0c (~5%); DIR/heldout.txt is the
first --heldout-kb of the held-out files (the prompts of the suites on these models).

Tokens: bytes 0..255 plus BOS = 256 (vocab 257) at the start of every window and prompt.
Needs torch (CUDA), transformers, safetensors; runs in a few minutes on one H200.
"""
import argparse
import hashlib
import json
import math
import os
import platform
import sys
import sysconfig
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "harness", "python"))

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import make_oracle as mo  # noqa: E402  (checkpoint_shapes: one statement of the §a.3 names)
import mlacheck_dump as md  # noqa: E402

BOS = 256
YARN = {"type": "yarn", "rope_type": "yarn", "beta_fast": 32.0, "beta_slow": 1.0}

# Dimensions pairwise distinct where the architecture allows (P != V != R, C != D, H not a power of
# two); C a multiple of 128 so fp8_ds_mla has two scale tiles; YaRN original window 256 < the
# 512-token training windows, so positions past the window are in distribution.
TRAINED_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "vocab_size": 257, "hidden_size": 224, "num_hidden_layers": 4,
    "num_attention_heads": 6, "num_key_value_heads": 6,
    "q_lora_rank": 96, "kv_lora_rank": 256,
    "qk_nope_head_dim": 40, "qk_rope_head_dim": 16, "v_head_dim": 32,
    "intermediate_size": 448, "moe_intermediate_size": 64,
    "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "n_routed_experts": 12, "n_shared_experts": 1, "num_experts_per_tok": 3,
    "n_group": 4, "topk_group": 2, "topk_method": "noaux_tc", "scoring_func": "sigmoid",
    "norm_topk_prob": True, "routed_scaling_factor": 2.5,
    "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
    "max_position_embeddings": 1024,
    "rope_scaling": dict(YARN, factor=4.0, original_max_position_embeddings=256, mscale=1.0, mscale_all_dim=1.0),
    "rope_interleave": True, "tie_word_embeddings": False, "attention_bias": False,
    "attention_dropout": 0.0, "initializer_range": 0.02, "use_cache": True,
    "bos_token_id": BOS, "eos_token_id": BOS, "torch_dtype": "bfloat16",
}

# V2-Lite style: no q_lora, softmax greedy routing, no correction bias, an expert balance loss.
# transformers requires hidden_size % num_attention_heads == 0 for DeepseekV2 (not for V3).
TRAINED_V2_LITE = {
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
    "vocab_size": 257, "hidden_size": 200, "num_hidden_layers": 4,
    "num_attention_heads": 5, "num_key_value_heads": 5,
    "q_lora_rank": None, "kv_lora_rank": 256,
    "qk_nope_head_dim": 48, "qk_rope_head_dim": 16, "v_head_dim": 40,
    "intermediate_size": 384, "moe_intermediate_size": 64,
    "first_k_dense_replace": 1, "moe_layer_freq": 1,
    "n_routed_experts": 10, "n_shared_experts": 2, "num_experts_per_tok": 3,
    "n_group": 1, "topk_group": 1, "topk_method": "greedy", "scoring_func": "softmax",
    "norm_topk_prob": False, "routed_scaling_factor": 1.0,
    "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
    "max_position_embeddings": 2048, "rope_scaling": None,
    "tie_word_embeddings": False, "attention_bias": False, "attention_dropout": 0.0,
    "initializer_range": 0.02, "use_cache": True,
    "bos_token_id": BOS, "eos_token_id": BOS, "torch_dtype": "bfloat16",
}

MODELS = (("trained-v3", TRAINED_V3, 20261201), ("trained-v2-lite", TRAINED_V2_LITE, 20261202))


# ----------------------------------------------------------------------------------------------
# corpus


def gather_corpus(cap_bytes):
    """[(path, bytes)] of the stdlib's .py files in sorted order, up to cap_bytes."""
    root = sysconfig.get_paths()["stdlib"]
    paths = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in ("site-packages", "dist-packages", "__pycache__"))
        paths += [os.path.join(d, f) for f in sorted(files) if f.endswith(".py")]
    out, total = [], 0
    for p in sorted(paths):
        try:
            with open(p, "rb") as f:
                b = f.read()
        except OSError:
            continue
        if not b or b"\0" in b:
            continue
        try:
            b.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if total + len(b) > cap_bytes:
            break
        out.append((p, b))
        total += len(b)
    return root, out


def split_corpus(files):
    train, held = [], []
    rows = []
    for p, b in files:
        h = hashlib.sha256(b).hexdigest()
        is_held = int(h[:2], 16) < 13
        (held if is_held else train).append(b)
        rows.append((p, len(b), h, "heldout" if is_held else "train"))
    return rows, train, held


def stream(docs):
    """Documents joined with BOS between them, as an int16 tensor of tokens."""
    parts = []
    for b in docs:
        parts.append(torch.tensor([BOS], dtype=torch.int16))
        parts.append(torch.frombuffer(bytearray(b), dtype=torch.uint8).to(torch.int16))
    return torch.cat(parts)


def windows(data, n, seq, gen):
    """n windows from random offsets: inputs BOS + t[:-1], targets t (seq bytes each)."""
    off = torch.randint(0, data.numel() - seq, (n,), generator=gen)
    t = data[off[:, None] + torch.arange(seq, dtype=torch.int64)[None, :]].to(torch.int64)
    x = torch.cat([torch.full((n, 1), BOS, dtype=torch.int64), t[:, :-1]], dim=1)
    return x, t


# ----------------------------------------------------------------------------------------------
# load balance: DeepSeek-V3's auxiliary-loss-free bias update (sigmoid, noaux_tc) or a
# DeepSeek-V2 expert-level balance loss (softmax, greedy), from hooks on the routers


class Balance:
    def __init__(self, model, c, gamma=1e-3, alpha=0.01):
        self.c, self.gamma, self.alpha = c, gamma, alpha
        self.routers = [m for n, m in model.named_modules() if n.endswith("mlp.gate") and hasattr(m, "weight")]
        self.loads = {}
        self.aux = []
        self.enabled = True  # off during evaluation
        self.hooks = [m.register_forward_hook(self._hook) for m in self.routers]

    def _hook(self, mod, inp, out):
        if not self.enabled:
            return
        x = inp[0].reshape(-1, inp[0].shape[-1])
        logits = torch.nn.functional.linear(x.float(), mod.weight.float())
        K, E = self.c["num_experts_per_tok"], self.c["n_routed_experts"]
        if self.c["scoring_func"] == "sigmoid":
            with torch.no_grad():
                s = torch.sigmoid(logits)
                bias = getattr(mod, "e_score_correction_bias", None)
                choice = s + bias.float() if bias is not None else s
                G = self.c["n_group"]
                if G > 1:
                    gs = choice.view(-1, G, E // G).topk(2, dim=-1).values.sum(-1)
                    keep = gs.topk(self.c["topk_group"], dim=-1).indices
                    mask = torch.ones_like(gs, dtype=torch.bool).scatter_(1, keep, False)
                    choice = choice.masked_fill(mask.repeat_interleave(E // G, dim=1), float("-inf"))
                ids = choice.topk(K, dim=-1).indices
                load = torch.bincount(ids.flatten(), minlength=E).float()
                self.loads[mod] = self.loads.get(mod, 0) + load
        else:
            p = torch.softmax(logits, dim=-1)
            ids = p.topk(K, dim=-1).indices
            f = torch.bincount(ids.flatten(), minlength=E).float() * E / (K * ids.shape[0])
            self.aux.append(self.alpha * (f.detach() * p.mean(0)).sum())

    def loss(self):
        aux = sum(self.aux) if self.aux else 0.0
        self.aux = []
        return aux

    @torch.no_grad()
    def step(self):
        for mod, load in self.loads.items():
            bias = getattr(mod, "e_score_correction_bias", None)
            if bias is not None:
                bias.add_(self.gamma * torch.sign(load.mean() - load).to(bias.dtype))
        self.loads = {}

    def imbalance(self):
        """max load / mean load per router, from the last forward (V3 only)."""
        return [round(float(l.max() / l.mean()), 3) for l in self.loads.values()]


# ----------------------------------------------------------------------------------------------
# model in and out of our checkpoint naming


def init_folder(folder, c, seed):
    """A starting checkpoint under our names: matrices N(0, initializer_range^2), norms 1,
    correction bias 0."""
    g = torch.Generator().manual_seed(seed)
    w = {}
    for name, shape in sorted(mo.checkpoint_shapes(c).items()):
        if name.endswith("e_score_correction_bias"):
            w[name] = torch.zeros(shape)
        elif len(shape) == 1:
            w[name] = torch.ones(shape)
        else:
            w[name] = torch.randn(shape, generator=g) * c["initializer_range"]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(dict(c, transformers_version=transformers.__version__), f, indent=2)
        f.write("\n")
    save_file({k: v.contiguous() for k, v in w.items()}, os.path.join(folder, "model.safetensors"),
              metadata={"format": "pt"})


def to_checkpoint(model, c):
    """{our name: tensor} from the HF model's state dict, undoing a fused-experts layout if this
    transformers version uses one (gate_up_proj [E, 2I, D] or [E, D, 2I], down_proj [E, D, I] or
    [E, I, D]). Verified afterwards by reloading the folder and comparing logits."""
    sd = {k: v.detach().float().cpu() for k, v in model.named_buffers()}
    sd.update({k: v.detach().float().cpu() for k, v in model.state_dict().items()})
    out = {}
    for name, shape in mo.checkpoint_shapes(c).items():
        if name in sd:
            out[name] = sd[name].reshape(shape)
            continue
        pre, rest = name.split(".mlp.experts.")
        e, which = rest.split(".")[0], rest.split(".")[1]
        e = int(e)
        I, D = c["moe_intermediate_size"], c["hidden_size"]
        if which in ("gate_proj", "up_proj"):
            t = sd[pre + ".mlp.experts.gate_up_proj"][e]
            if t.shape == (2 * I, D):
                t = t[:I] if which == "gate_proj" else t[I:]
            elif t.shape == (D, 2 * I):
                t = (t[:, :I] if which == "gate_proj" else t[:, I:]).T
            else:
                raise SystemExit("unexpected gate_up_proj shape %s" % (tuple(t.shape),))
        else:
            t = sd[pre + ".mlp.experts.down_proj"][e]
            t = t if t.shape == (D, I) else t.T
        out[name] = t.contiguous().reshape(shape)
    return out


def save_folder(folder, c, weights):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(dict(c, transformers_version=transformers.__version__), f, indent=2)
        f.write("\n")
    # bf16 like a real checkpoint; the correction bias stays f32 as DeepSeek-V3 ships it
    save_file({k: (v if k.endswith("e_score_correction_bias") else v.to(torch.bfloat16)).contiguous()
               for k, v in sorted(weights.items())},
              os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})


def load(cls, folder, dtype, attn, experts=None):
    extra = {"experts_implementation": experts} if experts else {}
    last = None
    for a in (attn, "eager"):
        for kw in (dict(dtype=dtype, attn_implementation=a, **extra),
                   dict(torch_dtype=dtype, attn_implementation=a, **extra)):
            try:
                return cls.from_pretrained(folder, **kw)
            except (TypeError, ValueError) as e:
                last = e
    raise SystemExit("from_pretrained(%s): %s" % (folder, last))


@torch.no_grad()
def bits_per_byte(model, xv, yv, bs=16, bal=None):
    model.eval()
    if bal:
        bal.enabled = False
    tot, n = 0.0, 0
    for i in range(0, xv.shape[0], bs):
        lg = model(input_ids=xv[i:i + bs]).logits.float()
        tot += float(torch.nn.functional.cross_entropy(lg.flatten(0, 1), yv[i:i + bs].flatten(), reduction="sum"))
        n += yv[i:i + bs].numel()
    model.train()
    if bal:
        bal.enabled = True
    return tot / n / math.log(2)


# ----------------------------------------------------------------------------------------------


def train_one(name, c, seed, args, data_tr, data_va, dev):
    t0 = time.time()
    torch.manual_seed(seed)
    work = os.path.join(args.scratch, name + "-init")
    init_folder(work, c, seed)
    cls, _ = md.hf_model_class(c["model_type"], c["architectures"][0], strict_f64=False)
    model = load(cls, work, torch.float32, "sdpa", args.experts).to(dev).train()
    print("  attn %s, experts %s" % (getattr(model.config, "_attn_implementation", "?"),
                                     getattr(model.config, "_experts_implementation", "?")))
    bal = Balance(model, c)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    other = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(seed)
    xv, yv = windows(data_va, args.val_windows, args.seq, torch.Generator().manual_seed(seed + 1))
    xv, yv = xv.to(dev), yv.to(dev)
    log = []
    steps = args.steps
    warm = max(1, steps // 20)
    for step in range(steps):
        lr = args.lr * (step + 1) / warm if step < warm else \
            args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm))))
        for gset in opt.param_groups:
            gset["lr"] = lr
        x, y = windows(data_tr, args.batch, args.seq, gen)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            lg = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(lg.float().flatten(0, 1), y.flatten())
        aux = bal.loss()
        opt.zero_grad(set_to_none=True)
        (loss + aux).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        imb = bal.imbalance()
        bal.step()
        if step % args.log_every == 0 or step == steps - 1:
            row = {"step": step, "lr": round(lr, 6), "train_bpb": round(float(loss) / math.log(2), 4),
                   "seconds": round(time.time() - t0, 1)}
            if imb:
                row["max_over_mean_load"] = imb
            if step % (args.log_every * 5) == 0 or step == steps - 1:
                row["val_bpb"] = round(bits_per_byte(model, xv, yv, bal=bal), 4)
            log.append(row)
            print("  %s %s" % (name, json.dumps(row)), flush=True)
        if time.time() - t0 > args.max_seconds:
            print("  %s: stopped at step %d by --max-seconds %d" % (name, step, args.max_seconds))
            steps = step + 1
            break
    for h in bal.hooks:
        h.remove()
    train_s = time.time() - t0
    val_f32 = bits_per_byte(model, xv, yv)

    folder = os.path.join(args.out, name)
    weights = to_checkpoint(model, c)
    save_folder(folder, c, weights)
    # the folder must mean what we trained: reload with HF's loader (float32, eager) and compare
    # logits with the trained model's weights rounded to bf16 the same way
    re = load(cls, folder, torch.float32, "eager", "eager").to(dev).eval()
    model.eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
        a = model(input_ids=xv[:4]).logits.float()
        b = re(input_ids=xv[:4]).logits.float()
    rel = float((a - b).norm() / a.norm())
    val_bf16w = bits_per_byte(re, xv, yv)
    ok = rel < 1e-3
    print("  %s: reload check rel L2 %.3g (%s); val bpb %.4f (f32 weights) %.4f (bf16 weights, reloaded)"
          % (name, rel, "ok" if ok else "FAIL", val_f32, val_bf16w))
    info = {
        "model": name, "seed": seed, "steps": steps, "batch": args.batch, "seq": args.seq, "lr": args.lr,
        "optimizer": "AdamW(0.9, 0.95), wd 0.1 on matrices, warmup 5%, cosine to 10%, clip 1.0, bf16 autocast",
        "balance": "aux-free bias update gamma 1e-3" if c["scoring_func"] == "sigmoid" else "expert balance loss alpha 0.01",
        "train_seconds": round(train_s, 1), "val_windows": args.val_windows,
        "val_bpb_f32_weights": round(val_f32, 4), "val_bpb_bf16_weights": round(val_bf16w, 4),
        "reload_rel_l2": rel, "params": sum(t.numel() for t in weights.values()),
        "torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version(),
        "device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu", "log": log,
    }
    with open(os.path.join(folder, "TRAINING.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--scratch", default="/tmp/mla-train")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--max-seconds", type=int, default=240, help="safety stop; the steps actually run are recorded")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--val-windows", type=int, default=64)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--corpus-mb", type=float, default=20.0)
    ap.add_argument("--heldout-kb", type=int, default=24)
    ap.add_argument("--only", default=None)
    ap.add_argument("--experts", default=None, help="experts_implementation for training (default: HF's)")
    ap.add_argument("--smoke", action="store_true", help="5 steps, to check the script")
    args = ap.parse_args()
    if args.smoke:
        args.steps, args.log_every, args.val_windows = 5, 1, 4
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False  # the reload check compares f32 logits
    print("python %s, torch %s, transformers %s, device %s"
          % (platform.python_version(), torch.__version__, transformers.__version__, dev))
    root, files = gather_corpus(int(args.corpus_mb * 1e6))
    rows, tr, held = split_corpus(files)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "corpus-manifest.tsv"), "w", encoding="utf-8") as f:
        f.write("# corpus of golden/trained/train.py: path (under %s), bytes, sha256, split\n" % root)
        for p, n, h, s in rows:
            f.write("%s\t%d\t%s\t%s\n" % (os.path.relpath(p, root), n, h, s))
    heldout = b"".join(held)[: args.heldout_kb * 1024]
    with open(os.path.join(args.out, "heldout.txt"), "wb") as f:
        f.write(heldout)
    data_tr, data_va = stream(tr), stream(held)
    print("corpus: %d files, %.1f MB train, %.2f MB held out (%s)"
          % (len(rows), sum(len(b) for b in tr) / 1e6, sum(len(b) for b in held) / 1e6, root))
    ok = True
    for name, c, seed in MODELS:
        if args.only and name != args.only:
            continue
        print("== %s" % name, flush=True)
        ok &= train_one(name, c, seed, args, data_tr, data_va, dev)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
