"""Whole-model runs with a Python attention operator: the reference model (every tap, every check of a
suite) with the user's forward_mqa and/or forward_mha as its attention core, through libmlacheck's
mlacheck_run_model (ctypes callbacks into the hybrid engine, as `mlacheck run --engine plugin:lib.so`
runs an attention-only plugin):

    r = mlacheck.run(suite="ci", mqa=my_forward_mqa, mha=None, results="results")
    print(r)            # PASS/FAIL, counts, the report folder; r.exit_code as `mlacheck run`'s

my_forward_mqa(x) gets an OpCall x with the same attributes as an operator case (x.inputs, x.raw,
x.kv_cache_f32(), x.torch(device), x.softmax_scale, x.page_size, x.out_shape, ...; the arrays are
borrowed for the call) and returns (out, lse). Where only one form is given the reference computes
the other itself (the result's .attention and <run>/attention.txt say so). The hybrid calls once per
sequence and layer (batch 1)."""
import ctypes
import os
import traceback

import numpy as np

from . import _lib
from .cases import OpData, checked_output, supports_fn

# `mlacheck run`'s exit codes (harness/cli/cli.h, cli_common.c cli_exit_for_run): mirrored here, the
# library returns statuses and counts only
EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_ENGINE, EXIT_SKIP = 0, 1, 2, 3, 77
_ENGINE_STATUSES = (-9, -1, -8)  # MLA_ERR_DEVICE, MLA_ERR_NOMEM, MLA_ERR_NONFINITE


def _exit_code(status, pass_, fail, error, first_error_status):
    if status:
        return {0: EXIT_PASS, -6: EXIT_SKIP, -10: EXIT_SKIP, -9: EXIT_ENGINE, -1: EXIT_ENGINE}.get(status, EXIT_USAGE)
    if fail and error >= fail:
        return EXIT_ENGINE if first_error_status in _ENGINE_STATUSES else EXIT_USAGE
    if fail:
        return EXIT_FAIL
    return EXIT_SKIP if pass_ == 0 else EXIT_PASS


def _view(ptr, shape, dtype):
    n = int(np.prod(shape))
    if n == 0 or not ptr:
        return np.zeros(shape, dtype)
    addr = ctypes.cast(ptr, ctypes.c_void_p).value
    buf = (ctypes.c_uint8 * (n * np.dtype(dtype).itemsize)).from_address(addr)
    return np.frombuffer(buf, dtype=dtype, count=n).reshape(shape)


class OpCall(OpData):
    """One call of the hybrid engine into the user's operator: the arguments of mla_mqa_args /
    mla_mha_args (mla/attn_op.h) as numpy views, borrowed for the call. Attributes as OpCase's:
    id ("forward_mqa call 3"), form, kv_format, fp8_fnuz, k_scale, softmax_scale, batch, num_heads,
    kv_lora_rank, rope_dim, nope_dim, v_dim (mha), total_q, page_size, num_blocks,
    max_blocks_per_seq, s_q, seq_lens_list."""

    def __init__(self, form, a, n):
        self.form, self.id = form, f"forward_{form} call {n}"
        kv = a.kv
        self.batch, self.num_heads, self.kv_lora_rank, self.rope_dim = a.batch, a.num_heads, a.kv_lora_rank, a.rope_dim
        self.total_q, self.softmax_scale = a.total_q, a.softmax_scale
        self.nope_dim = a.nope_dim if form == "mha" else None
        self.v_dim = a.v_dim if form == "mha" else None
        self.kv_format = _lib.KV_FORMATS[kv.format]
        self.fp8_fnuz, self.k_scale = int(kv.fp8_fnuz), float(kv.k_scale)
        self.page_size, self.num_blocks, self.max_blocks_per_seq = kv.page_size, kv.num_blocks, kv.max_blocks_per_seq
        B, H, C, R, T = self.batch, self.num_heads, self.kv_lora_rank, self.rope_dim, self.total_q
        cu = _view(a.cu_seqlens_q, (B + 1,), np.int32)
        lens = _view(a.seq_lens, (B,), np.int32)
        self.s_q = [int(cu[b + 1] - cu[b]) for b in range(B)]
        self.seq_lens_list = [int(x) for x in lens]
        rb = _lib.kv_row_bytes(self.kv_format, C, R)
        pool = _view(kv.data, (self.num_blocks, self.page_size, rb), np.uint8)
        native = {"bf16": pool.view(np.uint16), "fp8": pool, "fp8ds": pool, "f32": pool.view(np.float32)}
        self._arrays = {"kv_cache": native[self.kv_format],
                        "block_table": _view(kv.block_table, (B, self.max_blocks_per_seq), np.int32),
                        "seq_lens": lens, "cu_seqlens_q": cu}
        dq = C + R if form == "mqa" else self.nope_dim + R
        self._f32 = {"q": _view(a.q, (T, H, dq), np.float32)}
        if form == "mha":
            W = self.nope_dim + self.v_dim
            self._f32.update(kv_c=_view(a.kv_c, (T, C), np.float32), k_pe=_view(a.k_pe, (T, R), np.float32),
                             w_kv_b=_view(a.w_kv_b, (H * W, C), np.float32))
        for k, v in self._f32.items():  # bf16 bits where the values are bf16 (not in the fp64 profile)
            b = _bf16_or_f32(v)
            self._arrays[k] = b
        self._device = None
        self._out, self._lse = _view(a.out, self.out_shape, np.float32), _view(a.lse, self.lse_shape, np.float32)

    @property
    def who(self):
        return self.id


def _bf16_or_f32(v):
    u = np.ascontiguousarray(v).view(np.uint32)
    return (u >> 16).astype(np.uint16) if not (u & 0xFFFF).any() else v


class RunResult:
    """A whole-model run: passed, exit_code (as `mlacheck run`: 0 pass, 1 a check failed, 2 bad input,
    3 engine error, 77 nothing ran), status (the library's), pass_count, fail_count, skip_count,
    error_count, run_dir (summary.md, junit.xml, metrics.tsv, attention.txt), attention (who computed
    each form), first_failure, first_error, callback_errors (the Python exceptions the operator
    raised, as text, at most 20)."""

    def __init__(self, r, status, message, errors):
        self.status = status
        self.message = message
        self.pass_count, self.fail_count, self.skip_count, self.error_count = r.pass_, r.fail, r.skip, r.error
        self.run_dir = r.run_dir.decode(errors="replace")
        self.attention = r.attention.decode(errors="replace")
        self.first_failure = r.first_failure.decode(errors="replace")
        self.first_error = r.first_error.decode(errors="replace")
        self.callback_errors = errors
        self.exit_code = _exit_code(status, r.pass_, r.fail, r.error, r.first_error_status)
        self.passed = self.exit_code == EXIT_PASS

    def __bool__(self):
        return self.passed

    def __str__(self):
        head = {EXIT_PASS: "PASS", EXIT_FAIL: "FAIL", EXIT_SKIP: "SKIP"}.get(self.exit_code, "ERROR")
        lines = [f"{head} (exit {self.exit_code}): {self.pass_count} passed, {self.fail_count} failed, "
                 f"{self.skip_count} skipped", f"attention: {self.attention}"]
        if self.run_dir:
            lines.append(f"report: {self.run_dir}")
        if self.message:
            lines.append(f"error: {self.message}")
        if self.first_failure:
            lines.append(f"first failure: {self.first_failure}")
        if self.callback_errors:
            lines.append(f"operator raised: {self.callback_errors[0]}")
        return "\n".join(lines)

    __repr__ = __str__


class _Operator:
    """An mla_attn_ops of Python callbacks, kept alive for the run (ctypes callbacks must outlive it)."""

    def __init__(self, name, mqa, mha, supports):
        self.errors, self.calls = [], {"mqa": 0, "mha": 0}
        self._user = {"mqa": mqa, "mha": mha}
        sup = supports_fn(supports)

        def c_supports(f, v):
            try:
                name_ = _lib.FEATURES[f]
                if name_ == "kv_format":
                    v = _lib.KV_FORMATS[v] if 0 <= v < len(_lib.KV_FORMATS) else v
                return 1 if sup(name_, v) else 0
            except BaseException:  # noqa: B902: an exception cannot cross the C boundary
                self._record("supports", traceback.format_exc(limit=4))
                return 0
        self._fns = [_lib.SUPPORTS_FN(c_supports)]
        mqa_c = _lib.MQA_FN(lambda p: self._call("mqa", p)) if mqa else _lib.MQA_FN()
        mha_c = _lib.MHA_FN(lambda p: self._call("mha", p)) if mha else _lib.MHA_FN()
        self._fns += [mqa_c, mha_c]
        self._name = name.encode()
        self.ops = _lib.AttnOps(abi_version=_lib.ATTN_ABI_VERSION, name=self._name, supports=self._fns[0],
                                mqa=mqa_c, mha=mha_c)

    def _record(self, where, text):
        if len(self.errors) < 20:
            self.errors.append(f"{where}: {text}")

    def _call(self, form, p):
        self.calls[form] += 1
        try:
            x = OpCall(form, p.contents, self.calls[form])
            res = self._user[form](x)
            if not isinstance(res, (tuple, list)) or len(res) != 2:
                raise TypeError(f"{x.id}: forward_{form} returned {type(res).__name__}: expected (out, lse)")
            out = checked_output(x.who, "out", res[0], x.out_shape, x._device)
            lse = checked_output(x.who, "lse", res[1], x.lse_shape, x._device)
            x._out[...] = out
            x._lse[...] = lse
            return _lib.OK
        except BaseException as e:  # noqa: B902: reported through the library, never lost
            self._record(f"forward_{form}", traceback.format_exc(limit=6))
            msg = f"python forward_{form} raised {type(e).__name__}: {e}"
            return _lib.lib().mlacheck_set_error(_lib.ERR_INVALID, msg.encode(errors="replace"))


def run(suite="ci", mqa=None, mha=None, supports=None, results=None, name="python", only_case=None,
        suites_dir=None, golden_dir=None, progress=False):
    """Runs suite ("ci", "smoke", ...) on the reference model with mqa (decode, absorbed: out is the
    latent [T, H, C]) and/or mha (prefill, naive: out [T, H, V]) as its attention; the form given as
    None is the reference's own. supports: see cases.supports_fn (asked per profile's cache format and
    shape, as a plugin's supports() is). results: the folder the run folder is made in (default: the
    source tree's results/). Returns a RunResult; raises ValueError when neither form is given."""
    if mqa is None and mha is None:
        raise ValueError("mlacheck.run: give mqa, mha or both (the reference computes a form given as None)")
    op = _Operator(name, mqa, mha, supports)
    o = _lib.RunOpts(struct_size=ctypes.sizeof(_lib.RunOpts), suite=suite.encode(),
                     suites_dir=os.fsencode(suites_dir) if suites_dir else None,
                     golden_dir=os.fsencode(golden_dir) if golden_dir else None,
                     results_dir=os.fsencode(results) if results else None,
                     only_case=only_case.encode() if only_case else None, progress=1 if progress else 0)
    r = _lib.RunResult(struct_size=ctypes.sizeof(_lib.RunResult))
    L = _lib.lib()
    st = L.mlacheck_run_model(ctypes.byref(o), ctypes.byref(op.ops), ctypes.byref(r))
    msg = L.mlacheck_last_error().decode(errors="replace") if st else ""
    return RunResult(r, st, msg, op.errors)
