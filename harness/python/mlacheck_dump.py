#!/usr/bin/env python3
"""mlacheck_dump.py: record a Hugging Face model's per-layer tensors ("taps") with PyTorch forward
hooks and write them in mlacheck's golden HDF5 schema (golden/README.md, schema_version 1).

Only h5py and numpy are needed to write; torch (and transformers for the CLI) are imported where a
model is involved, so the writer can be used on arrays alone.

Schema written (one sequence, batch dimension dropped):
  /meta                 group, attributes schema_version (int32 1), producer, engine, profile, path,
                        prefill_len (int32), chunk (int32), git_sha, seed (uint32), model,
                        weights_hash, created (ISO-8601 UTC), model_config (config.json text)
  /tokens               int32 [S]
  /embed /final_norm /logits
  /layers/<i>/<tap>     attn_norm attn_out ffn_norm router_logits topk_ids topk_weights ffn_out out
Every dataset has attributes dtype ("f64", "f32", "bf16" raw uint16 bits, "f16", "i32") and crc32
(uint32, zlib.crc32 of the little-endian bytes as stored).

Tap meanings for DeepseekV2/V3 (HF module names):
  embed = model.embed_tokens out, attn_norm = input_layernorm out, attn_out = self_attn out (after
  o_proj), ffn_norm = post_attention_layernorm out, ffn_out = mlp out (MoE incl. shared experts),
  out = decoder layer out (residual stream), final_norm = model.norm out, logits = lm_head out,
  router_logits = x.W_gate^T before sigmoid/softmax, topk_ids [S,K] (a set per row), topk_weights
  [S,K] in the order of topk_ids.

Attention-internal taps (reference/include/mla/taps.h), per layer, for one sequence of S tokens:
  q_nope [S,H,P] (query projection, nope part), q_pe [S,H,R] (query rope part after RoPE),
  kv_c [S,C] (kv_a_layernorm out: the cached latent), k_pe [S,R] (shared rope key after RoPE),
  attn_core [S,H,V] (attention output per head after W_UV, the input of o_proj), lse [S,H]
  (natural-log log-sum-exp of the scaled scores).

From your own model code (vLLM-style, a flat batch of T tokens of several sequences), TokenBatchDump
takes every tap as the model holds it, [T, ...] (k_pe as [T, 1, R], attn_core as [T, H*V], lse as
[H, T] accepted too), and writes one golden file per sequence, split by cu_seqlens (vLLM's
query_start_loc) or per-sequence lengths:
    d = TokenBatchDump(input_ids, cu_seqlens=[0, 5, 12])
    d.add("embed", h)                       # in the model's forward, where the tensors are
    d.add("q_nope", q_nope, layer=i) ...    # numpy arrays or torch tensors (bf16 kept as bf16)
    d.write(["seq0.h5", "seq1.h5"], meta={"model": "tiny-v3", "profile": "bf16"})
Each file then compares with `mlacheck compare REF.h5 seqN.h5` tap by tap.

CLI:
  python3 mlacheck_dump.py --model HF_FOLDER --tokens 3,1,4,1,5 --out x.h5 [--dtype float64]
                           [--strict-f64] [--seed N] [--git-sha SHA]
"""
import argparse
import datetime
import importlib
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
import types
import zlib

import h5py
import numpy as np

SCHEMA_VERSION = 1

# Tap names in computation order (reference/include/mla/taps.h); the writer accepts these only.
LAYER_TAPS = ("attn_norm", "q_nope", "q_pe", "kv_c", "k_pe", "q_absorbed", "attn_core", "lse",
              "attn_out", "ffn_norm", "router_logits", "topk_ids", "topk_weights", "ffn_out", "out")
GLOBAL_TAPS = ("embed", "final_norm", "logits")

# (module path regex, tap). A regex with a group captures the layer index; fullmatch is used.
DEEPSEEK_NAME_MAP = (
    (r"model\.embed_tokens", "embed"),
    (r"model\.layers\.(\d+)\.input_layernorm", "attn_norm"),
    (r"model\.layers\.(\d+)\.self_attn", "attn_out"),
    (r"model\.layers\.(\d+)\.post_attention_layernorm", "ffn_norm"),
    (r"model\.layers\.(\d+)\.mlp", "ffn_out"),
    (r"model\.layers\.(\d+)", "out"),
    (r"model\.norm", "final_norm"),
    (r"lm_head", "logits"),
)
# Modules whose router (a `gate` child) gives router_logits / topk_ids / topk_weights.
DEEPSEEK_ROUTER_RE = r"model\.layers\.(\d+)\.mlp"

META_STR = ("producer", "engine", "profile", "path", "git_sha", "model", "weights_hash", "created",
            "model_config")
META_I32 = ("schema_version", "prefill_len", "chunk")


class DumpError(RuntimeError):
    pass


# ----------------------------------------------------------------------------------------------
# arrays -> schema dtype


def crc32_of(arr):
    """zlib.crc32 of the little-endian C-order bytes of arr, as an unsigned 32-bit int."""
    a = np.ascontiguousarray(arr)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return zlib.crc32(a.tobytes()) & 0xFFFFFFFF


_NP_TO_TAG = {np.dtype("<f8"): "f64", np.dtype("<f4"): "f32", np.dtype("<f2"): "f16",
              np.dtype("<i4"): "i32"}


def to_stored(arr, tag=None):
    """Return (little-endian C-order array, dtype tag) as the schema stores it. Integer arrays are
    narrowed to int32 (values checked); tag 'bf16' means arr already holds the raw uint16 bits."""
    a = np.asarray(arr)
    if tag == "bf16":
        if a.dtype != np.uint16:
            raise DumpError("bf16 data must be raw uint16 bits, got %s" % a.dtype)
        return np.ascontiguousarray(a.astype("<u2")), "bf16"
    if a.dtype.kind in "iu":
        if a.size and (a.min() < -2**31 or a.max() >= 2**31):
            raise DumpError("integer tap out of int32 range")
        a = a.astype("<i4")
    elif a.dtype.kind == "f":
        a = a.astype(a.dtype.newbyteorder("<"))
    elif a.dtype.kind == "b":
        a = a.astype("<i4")
    a = np.ascontiguousarray(a)
    t = _NP_TO_TAG.get(a.dtype)
    if t is None:
        raise DumpError("no schema dtype for numpy dtype %s" % a.dtype)
    if tag is not None and tag != t:
        raise DumpError("dtype tag %s does not match data %s" % (tag, t))
    return a, t


def torch_to_numpy(t, dtype=None):
    """torch tensor -> (numpy array, tag). dtype: None keeps the tensor's own precision, else one
    of 'float64', 'float32', 'bfloat16' for floating tensors (integers stay integers)."""
    import torch
    t = t.detach().to("cpu")
    if t.is_floating_point():
        if dtype is not None:
            t = t.to(getattr(torch, dtype))
        if t.dtype == torch.bfloat16:
            bits = t.contiguous().view(torch.int16).numpy().view(np.uint16)
            return bits, "bf16"
        return t.contiguous().numpy(), None
    return t.contiguous().numpy(), None


def f32_to_bf16_bits(arr):
    """float values -> the uint16 bit patterns of their bf16 rounding (nearest, ties to even; NaN
    kept a quiet NaN), for writing a bf16 tap from numpy (tag 'bf16')."""
    f = np.ascontiguousarray(np.asarray(arr, dtype=np.float32))
    u = f.view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        bits[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return bits


def _set_dataset(f, name, arr, tag=None):
    a, t = to_stored(arr, tag)
    ds = f.create_dataset(name, data=a)
    ds.attrs["dtype"] = t
    ds.attrs["crc32"] = np.uint32(crc32_of(a))
    return ds


def now_iso_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_sha_here():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def complete_meta(meta):
    """Fill schema defaults and check types; returns a new dict."""
    m = {"schema_version": SCHEMA_VERSION, "producer": "", "engine": "", "profile": "fp64",
         "path": "prefill", "prefill_len": 0, "chunk": 0, "git_sha": "", "seed": 0, "model": "",
         "weights_hash": "", "created": now_iso_utc(), "model_config": ""}
    for k, v in (meta or {}).items():
        if k not in m:
            raise DumpError("unknown /meta attribute %r" % k)
        m[k] = v
    for k in META_STR:
        if not isinstance(m[k], str):
            raise DumpError("/meta %s must be str, got %r" % (k, type(m[k])))
    if m["model_config"]:
        json.loads(m["model_config"])  # must be JSON text (the C reader parses it)
    return m


def write_dump(path, meta, tokens, global_taps, layer_taps):
    """Write one golden file. tokens: int sequence [S]. global_taps: {tap: array or (array, tag)}.
    layer_taps: {layer: {tap: array or (array, tag)}}. Written to path + '.tmp' then renamed, so a
    reader never sees a half-written file."""
    m = complete_meta(meta)
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        g = f.create_group("meta")
        for k in META_I32:
            g.attrs[k] = np.int32(m[k])
        g.attrs["seed"] = np.uint32(m["seed"])
        for k in META_STR:
            g.attrs[k] = m[k]  # h5py: variable-length UTF-8
        _set_dataset(f, "tokens", np.asarray(tokens, dtype=np.int64))
        for tap, v in global_taps.items():
            if tap not in GLOBAL_TAPS:
                raise DumpError("not a global tap: %r" % tap)
            arr, tag = v if isinstance(v, tuple) else (v, None)
            _set_dataset(f, tap, arr, tag)
        lg = f.create_group("layers")
        for layer in sorted(layer_taps):
            gl = lg.create_group(str(int(layer)))
            for tap, v in layer_taps[layer].items():
                if tap not in LAYER_TAPS:
                    raise DumpError("not a layer tap: %r" % tap)
                arr, tag = v if isinstance(v, tuple) else (v, None)
                _set_dataset(gl, tap, arr, tag)
    os.replace(tmp, path)


def verify_dump(path):
    """Re-read a file: every dataset's crc32 and dtype tag must match its bytes, /meta must hold the
    schema attributes. Returns {dataset path: numpy array}; raises DumpError on a mismatch."""
    want_np = {"f64": "<f8", "f32": "<f4", "f16": "<f2", "i32": "<i4", "bf16": "<u2"}
    out = {}
    with h5py.File(path, "r") as f:
        if "meta" not in f:
            raise DumpError("%s: no /meta" % path)
        a = f["meta"].attrs
        for k in META_I32 + ("seed",) + META_STR:
            if k not in a:
                raise DumpError("%s: /meta lacks %s" % (path, k))
        if int(a["schema_version"]) != SCHEMA_VERSION:
            raise DumpError("%s: schema_version %r" % (path, a["schema_version"]))

        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            arr = obj[()]
            tag = obj.attrs.get("dtype")
            if isinstance(tag, bytes):
                tag = tag.decode()
            if tag not in want_np or arr.dtype != np.dtype(want_np[tag]):
                raise DumpError("%s:/%s dtype tag %r vs data %s" % (path, name, tag, arr.dtype))
            crc = int(obj.attrs.get("crc32", -1))
            if crc != crc32_of(arr):
                raise DumpError("%s:/%s crc32 %08x vs %08x" % (path, name, crc, crc32_of(arr)))
            out["/" + name] = arr
        f.visititems(visit)
    return out


# ----------------------------------------------------------------------------------------------
# flat token batches (vLLM-style model code)

# Rank of each tap for one call (taps.h): [T, H, *] for the per-head ones, [T, *] for the rest.
_RANK3 = ("q_nope", "q_pe", "q_absorbed", "attn_core")


def _as_array(x):
    """A numpy array, a torch tensor (any device; bf16 kept as bf16 bits) or an (array, tag) pair
    -> (numpy array, tag)."""
    if isinstance(x, tuple):
        return x
    if hasattr(x, "detach"):
        return torch_to_numpy(x)
    return np.asarray(x), None


class TokenBatchDump:
    """The taps of one forward over a vLLM-style flat batch: B sequences' tokens concatenated, every
    tensor [T, ...] with T = sum of the sequences' lengths, split by cu_seqlens (vLLM's
    query_start_loc, [B + 1], starting at 0) or seq_lens ([B]). write() gives one golden file per
    sequence, each a prefill of that sequence's tokens, so `mlacheck compare` lines it up with a
    reference dump of the same model and prompt tap by tap.

    add() takes a tap as the model code holds it and checks it against the batch: [T, ...] rows; the
    rank taps.h gives (q_nope, q_pe, q_absorbed, attn_core [T, H, *]; the rest [T, *]); k_pe also as
    [T, 1, R] (vLLM keeps a kv-head axis of 1), attn_core also as [T, H*V] (o_proj's input; with
    num_heads, or after a q_nope / q_pe of the layer gave H), lse also as [H, T] (flash-attn's varlen
    layout) with heads_first=True. Mistakes raise DumpError naming the tap, the layer and what was
    expected."""

    def __init__(self, input_ids, cu_seqlens=None, seq_lens=None):
        ids, _ = _as_array(input_ids)
        self.tokens = np.asarray(ids).reshape(-1).astype(np.int64)
        self.T = int(self.tokens.shape[0])
        if (cu_seqlens is None) == (seq_lens is None):
            raise DumpError("TokenBatchDump: give one of cu_seqlens or seq_lens")
        if seq_lens is not None:
            lens = [int(v) for v in np.asarray(_as_array(seq_lens)[0]).reshape(-1)]
            cu = [0]
            for n in lens:
                cu.append(cu[-1] + n)
        else:
            cu = [int(v) for v in np.asarray(_as_array(cu_seqlens)[0]).reshape(-1)]
        if len(cu) < 2 or cu[0] != 0 or cu[-1] != self.T:
            raise DumpError("TokenBatchDump: cu_seqlens %s: expected [0, ..., %d] (the %d tokens of input_ids)"
                            % (cu, self.T, self.T))
        for b in range(len(cu) - 1):
            if cu[b + 1] <= cu[b]:
                raise DumpError("TokenBatchDump: sequence %d has %d tokens (cu_seqlens %s): a dump needs at least one"
                                % (b, cu[b + 1] - cu[b], cu))
        self.cu = cu
        self.global_taps = {}
        self.layer_taps = {}

    @property
    def num_sequences(self):
        return len(self.cu) - 1

    def _heads(self, layer):
        for t in ("q_nope", "q_pe", "q_absorbed", "lse"):
            v = self.layer_taps.get(layer, {}).get(t)
            if v is not None:
                return v[0].shape[1]
        return None

    def add(self, tap, x, layer=None, heads_first=False, num_heads=None):
        """Records tap (layer None: a global tap) from the flat batch; see the class doc for shapes."""
        where = "tap %s" % tap if layer is None else "layer %s tap %s" % (layer, tap)
        if layer is None and tap not in GLOBAL_TAPS:
            raise DumpError("%s: not a global tap (%s); give layer= for a layer tap" % (where, ", ".join(GLOBAL_TAPS)))
        if layer is not None and tap not in LAYER_TAPS:
            raise DumpError("%s: not a layer tap (%s)" % (where, ", ".join(LAYER_TAPS)))
        a, tag = _as_array(x)
        a = np.asarray(a)
        if tap == "lse" and heads_first:
            if a.ndim != 2 or a.shape[1] != self.T:
                raise DumpError("%s: shape %s with heads_first: expected [H, %d]" % (where, list(a.shape), self.T))
            a = a.T
        if tap == "k_pe" and a.ndim == 3 and a.shape[1] == 1:
            a = a[:, 0]
        if tap == "attn_core" and a.ndim == 2:
            h = num_heads or self._heads(layer)
            if not h or a.shape[1] % h:
                raise DumpError("%s: shape %s is [T, H*V]: give num_heads= (or add the layer's q_nope first)%s"
                                % (where, list(a.shape), "" if not h else "; %d columns do not split into %d heads"
                                   % (a.shape[1], h)))
            a = a.reshape(a.shape[0], h, a.shape[1] // h)
        rank = 3 if tap in _RANK3 else 2
        if a.ndim != rank or a.shape[0] != self.T:
            raise DumpError("%s: shape %s: expected %d dimensions, the first the batch's %d tokens (cu_seqlens %s)"
                            % (where, list(a.shape), rank, self.T, self.cu))
        taps = self.global_taps if layer is None else self.layer_taps.setdefault(int(layer), {})
        if tap in taps:
            raise DumpError("%s: added twice" % where)
        taps[tap] = (np.ascontiguousarray(a), tag)

    def sequence(self, b):
        """(tokens, global taps, layer taps) of sequence b, as write_dump takes them."""
        t0, t1 = self.cu[b], self.cu[b + 1]
        g = {tap: (a[t0:t1], tag) for tap, (a, tag) in self.global_taps.items()}
        layers = {i: {tap: (a[t0:t1], tag) for tap, (a, tag) in taps.items()} for i, taps in self.layer_taps.items()}
        return self.tokens[t0:t1], g, layers

    def write(self, paths, meta=None):
        """One golden file per sequence: paths is a list of B paths or a pattern with {seq}
        ("dump-{seq}.h5"). meta (the /meta attributes, write_dump's) applies to every file; path
        defaults to "prefill"; model_config (the model's config.json text) is required. Returns the
        paths written."""
        if isinstance(paths, str):
            if "{seq}" not in paths:
                raise DumpError("TokenBatchDump.write: pattern %r lacks {seq}" % paths)
            paths = [paths.format(seq=b) for b in range(self.num_sequences)]
        paths = list(paths)
        if len(paths) != self.num_sequences:
            raise DumpError("TokenBatchDump.write: %d paths for %d sequences" % (len(paths), self.num_sequences))
        m = {"producer": "mlacheck_dump.TokenBatchDump", "path": "prefill"}
        m.update(meta or {})
        if not m.get("model_config"):  # mlacheck's reader builds the tap shapes from it
            raise DumpError("TokenBatchDump.write: meta model_config: expected the model's config.json text")
        for b, path in enumerate(paths):
            write_dump(path, m, *self.sequence(b))
        return paths


# ----------------------------------------------------------------------------------------------
# float64 copies of transformers modeling modules

F64_RULES = (("torch.float32", "torch.float64"), (".float()", ".double()"),
             ("dtype=torch.float)", "dtype=torch.float64)"),
             ("dtype=torch.float,", "dtype=torch.float64,"))


def float64_module(modname):
    """A copy of the modeling module `modname` whose hard-coded float32 upcasts (RMSNorm variance,
    rotary cos/sin, router logits, softmax dtype) read float64, so that a float64 model really
    computes in float64. The original module is left untouched. Returns (module, report) where
    report lists (line number, original line) of every edited line. Line numbers are preserved,
    so tracebacks point into the original file."""
    orig = importlib.import_module(modname)
    src = inspect.getsource(orig)
    report = []
    lines = src.split("\n")
    for i, line in enumerate(lines):
        new = line
        for a, b in F64_RULES:
            new = new.replace(a, b)
        if new != line:
            report.append((i + 1, line.strip()))
            lines[i] = new
    mod = types.ModuleType(orig.__name__)  # same __name__: docstring helpers find the file
    mod.__file__ = orig.__file__
    mod.__package__ = orig.__package__
    mod.__spec__ = orig.__spec__
    exec(compile("\n".join(lines), orig.__file__, "exec"), mod.__dict__)
    return mod, report


def hf_model_class(model_type, arch, strict_f64):
    """The CausalLM class for a config's model_type/architecture, optionally from a float64 copy."""
    modname = "transformers.models.%s.modeling_%s" % (model_type, model_type)
    if strict_f64:
        mod, report = float64_module(modname)
    else:
        mod, report = importlib.import_module(modname), []
    return getattr(mod, arch), report


def load_hf(cls, folder, dtype, output_loading_info=False):
    """from_pretrained with eager attention and eager experts (the grouped MoE kernel rejects
    float64), across transformers versions (dtype vs torch_dtype, experts_implementation)."""
    import torch
    td = getattr(torch, dtype)
    tries = (dict(dtype=td, attn_implementation="eager", experts_implementation="eager"),
             dict(torch_dtype=td, attn_implementation="eager", experts_implementation="eager"),
             dict(torch_dtype=td, attn_implementation="eager"))
    last = None
    for kw in tries:
        try:
            res = cls.from_pretrained(folder, output_loading_info=output_loading_info, **kw)
            break
        except (TypeError, ValueError) as e:  # an unknown keyword in this version
            last = e
    else:
        raise DumpError("from_pretrained(%s) failed: %s" % (folder, last))
    model = res[0] if output_loading_info else res
    if hasattr(model, "set_experts_implementation"):
        try:
            model.set_experts_implementation("eager")
        except Exception as e:  # noqa: BLE001 - report, the config attribute below still applies
            print("note: set_experts_implementation: %s" % e, file=sys.stderr)
    for attr in ("_experts_implementation", "experts_implementation"):
        if hasattr(model.config, attr):
            try:
                setattr(model.config, attr, "eager")
            except (AttributeError, TypeError, ValueError):
                pass
    model = model.to(td).eval()
    return (model, res[1]) if output_loading_info else model


# ----------------------------------------------------------------------------------------------
# hooks


def _first_tensor(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)):
        for v in x:
            if isinstance(v, torch.Tensor):
                return v
    if hasattr(x, "to_tuple"):
        return _first_tensor(x.to_tuple())
    return None


def _find_topk(objs, n_experts):
    """(ids, weights) among tensors: ids is an integer tensor, weights a float tensor of the same
    shape; None where absent."""
    import torch
    flat = []
    for o in objs:
        if isinstance(o, torch.Tensor):
            flat.append(o)
        elif isinstance(o, (tuple, list)):
            flat.extend(v for v in o if isinstance(v, torch.Tensor))
    ids = next((t for t in flat if not t.is_floating_point() and t.dim() >= 1), None)
    w = None
    if ids is not None:
        w = next((t for t in flat if t.is_floating_point() and t.shape == ids.shape), None)
    return ids, w


class TapRecorder:
    """Forward hooks that keep each mapped module's output for one forward pass.

    name_map: sequence of (module path regex, tap) pairs (fullmatch; a group captures the layer),
    default DEEPSEEK_NAME_MAP. router_re: modules with a `gate` child whose routing is recorded as
    router_logits/topk_ids/topk_weights (None: no router taps). Use as a context manager or call
    close() to remove the hooks."""

    def __init__(self, model, name_map=None, router_re=DEEPSEEK_ROUTER_RE):
        self.model = model
        self.name_map = [(re.compile(p), tap) for p, tap in (name_map or DEEPSEEK_NAME_MAP)]
        self.handles = []
        self.wrapped = []  # modules whose route_tokens_to_experts we shadowed
        self.taps = {}     # (layer or None, tap) -> torch tensor
        self.tokens = None
        self.n_mapped = 0
        for path, mod in model.named_modules():
            for rx, tap in self.name_map:
                mt = rx.fullmatch(path)
                if mt:
                    layer = int(mt.group(1)) if mt.groups() else None
                    self.handles.append(mod.register_forward_hook(self._out_hook(layer, tap)))
                    self.n_mapped += 1
                    break
            if router_re is not None:
                mt = re.fullmatch(router_re, path)
                if mt and hasattr(mod, "gate"):
                    self._hook_router(int(mt.group(1)), mod)

    # -- hooks ---------------------------------------------------------------------------------
    def _put(self, layer, tap, t, overwrite=False):
        key = (layer, tap)
        if key in self.taps and not overwrite:
            raise DumpError("tap %s of layer %s recorded twice in one forward" % (tap, layer))
        self.taps[key] = t.detach().to("cpu").clone()

    def _out_hook(self, layer, tap):
        def hook(module, args, output):
            t = _first_tensor(output)
            if t is None:
                raise DumpError("module for tap %s gave no tensor" % tap)
            self._put(layer, tap, t)
        return hook

    def _hook_router(self, layer, moe):
        n_exp = getattr(getattr(moe, "gate", None), "weight", None)
        n_exp = n_exp.shape[0] if n_exp is not None else None
        if hasattr(moe, "route_tokens_to_experts"):
            # transformers 5: gate gives logits, route_tokens_to_experts(logits) gives (ids, w)
            orig = moe.route_tokens_to_experts

            def wrapped(*args, **kwargs):
                res = orig(*args, **kwargs)
                logits = args[0] if args else next(iter(kwargs.values()))
                self._put(layer, "router_logits", logits.reshape(-1, logits.shape[-1]))
                ids, w = _find_topk([res], n_exp)
                if ids is not None:
                    self._put(layer, "topk_ids", ids.reshape(-1, ids.shape[-1]))
                if w is not None:
                    self._put(layer, "topk_weights", w.reshape(-1, w.shape[-1]))
                return res
            moe.route_tokens_to_experts = wrapped
            self.wrapped.append(moe)
            return

        # the gate returns logits (ids/weights then reach the experts), or a tuple holding
        # logits and/or (ids, weights) (transformers 5.17: (router_logits, weights, ids)).
        def gate_hook(module, args, output):
            import torch
            outs = list(output) if isinstance(output, (tuple, list)) else [output]
            logits = next((t for t in outs if isinstance(t, torch.Tensor) and t.is_floating_point()
                           and t.dim() >= 1 and t.shape[-1] == n_exp), None)
            if logits is None:  # logits internal to the gate: recompute them from its input
                x = args[0]
                logits = torch.nn.functional.linear(x.reshape(-1, x.shape[-1]), module.weight.to(x.dtype))
            self._put(layer, "router_logits", logits.reshape(-1, n_exp))
            if isinstance(output, torch.Tensor):
                return
            ids, w = _find_topk([t for t in outs if t is not logits], n_exp)
            if ids is not None:
                self._put(layer, "topk_ids", ids.reshape(-1, ids.shape[-1]))
            if w is not None:
                self._put(layer, "topk_weights", w.reshape(-1, w.shape[-1]))
        self.handles.append(moe.gate.register_forward_hook(gate_hook))

        experts = getattr(moe, "experts", None)
        if experts is not None and hasattr(experts, "register_forward_pre_hook"):
            def experts_hook(module, args, kwargs):
                if (layer, "topk_ids") in self.taps:
                    return
                ids, w = _find_topk(list(args) + list(kwargs.values()), n_exp)
                if ids is not None and ids.dim() == 2:
                    self._put(layer, "topk_ids", ids)
                    if w is not None:
                        self._put(layer, "topk_weights", w)
            try:
                self.handles.append(experts.register_forward_pre_hook(experts_hook, with_kwargs=True))
            except TypeError:
                pass

    # -- use -----------------------------------------------------------------------------------
    def close(self):
        for h in self.handles:
            h.remove()
        self.handles = []
        for moe in self.wrapped:
            del moe.route_tokens_to_experts
        self.wrapped = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def record(self, input_ids, **forward_kwargs):
        """One forward over one sequence; returns {(layer or None, tap): torch tensor} with the
        batch dimension dropped (router taps are [S, E] / [S, K])."""
        import torch
        ids = torch.as_tensor(list(input_ids) if not isinstance(input_ids, torch.Tensor) else input_ids)
        ids = ids.reshape(1, -1).long()
        dev = next(self.model.parameters()).device
        self.taps = {}
        forward_kwargs.setdefault("use_cache", False)
        with torch.no_grad():
            self.model(input_ids=ids.to(dev), **forward_kwargs)
        s = ids.shape[1]
        out = {}
        for (layer, tap), t in self.taps.items():
            if tap in ("router_logits", "topk_ids", "topk_weights"):
                if t.shape[0] != s:
                    raise DumpError("layer %s %s has %d rows for %d tokens" % (layer, tap, t.shape[0], s))
            else:
                if t.dim() < 2 or t.shape[0] != 1 or t.shape[1] != s:
                    raise DumpError("layer %s %s shape %s, expected [1, %d, ...]" % (layer, tap, tuple(t.shape), s))
                t = t[0]
            out[(layer, tap)] = t
        self.taps = out
        self.tokens = ids[0].tolist()
        return out

    def arrays(self, dtype=None):
        """(global {tap: (array, tag)}, layers {i: {tap: (array, tag)}}) of the last record()."""
        g, layers = {}, {}
        for (layer, tap), t in sorted(self.taps.items(), key=lambda kv: (kv[0][0] is not None, kv[0][0] or 0, kv[0][1])):
            a, tag = torch_to_numpy(t, dtype)
            if layer is None:
                g[tap] = (a, tag)
            else:
                layers.setdefault(layer, {})[tap] = (a, tag)
        return g, layers

    def write(self, path, meta, dtype=None):
        """Write the last record() as a golden file (schema above)."""
        if self.tokens is None:
            raise DumpError("write() before record()")
        g, layers = self.arrays(dtype)
        write_dump(path, meta, self.tokens, g, layers)


# ----------------------------------------------------------------------------------------------
# CLI


def _parse_tokens(s):
    try:
        return [int(x) for x in s.replace(" ", "").split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError("tokens must be comma-separated integers: %r" % s)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="Hugging Face checkpoint folder")
    ap.add_argument("--tokens", required=True, type=_parse_tokens, help="comma-separated token ids")
    ap.add_argument("--out", required=True, help="output .h5")
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32", "bfloat16"))
    ap.add_argument("--strict-f64", action="store_true",
                    help="float64 copy of the modeling module (no hard-coded float32 upcasts)")
    ap.add_argument("--seed", type=int, default=0, help="recorded in /meta seed")
    ap.add_argument("--git-sha", default=None)
    ap.add_argument("--profile", default=None, help="default: fp64 for float64, bf16 for bfloat16")
    args = ap.parse_args(argv)

    import torch
    import transformers
    cfg_text = open(os.path.join(args.model, "config.json"), encoding="utf-8").read()
    cfg = json.loads(cfg_text)
    arch = (cfg.get("architectures") or ["AutoModelForCausalLM"])[0]
    if args.strict_f64 and args.dtype != "float64":
        ap.error("--strict-f64 needs --dtype float64")
    if arch == "AutoModelForCausalLM" and not args.strict_f64:
        cls = transformers.AutoModelForCausalLM
    else:
        cls, report = hf_model_class(cfg["model_type"], arch, args.strict_f64)
        if report:
            print("strict-f64: %d lines edited" % len(report), file=sys.stderr)
    model = load_hf(cls, args.model, args.dtype)
    profile = args.profile or {"float64": "fp64", "bfloat16": "bf16"}.get(args.dtype, "fp32")
    meta = {
        "producer": shlex.join([sys.argv[0]] + (argv if argv is not None else sys.argv[1:]))
        + " (torch %s)" % torch.__version__,
        "engine": "hf-transformers-%s" % transformers.__version__,
        "profile": profile, "path": "prefill", "prefill_len": 0, "chunk": 0,
        "git_sha": args.git_sha if args.git_sha is not None else git_sha_here(),
        "seed": args.seed, "model": os.path.basename(os.path.normpath(args.model)),
        "weights_hash": "", "model_config": cfg_text,
    }
    with TapRecorder(model) as rec:
        taps = rec.record(args.tokens)
        rec.write(args.out, meta)  # each tap in its own precision (HF router logits are fp32)
    verify_dump(args.out)
    print("%s: %d taps, %d tokens" % (args.out, len(taps), len(args.tokens)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
