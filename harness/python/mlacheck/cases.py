"""The operator cases of `mlacheck ops` in process, through libmlacheck (no export folder):

    import mlacheck
    for case in mlacheck.op_cases("ops-full", supports=my_supports):
        if case.skip_reason:                       # declined by my_supports: say so, never silently
            print("skip", case.id, case.skip_reason); continue
        x = case.torch("cuda")                     # bf16 q / cache, uint8 fp8 rows, int32 tables
        out, lse = my_kernel(x, case.softmax_scale, case.page_size)
        v = case.judge(out, lse)                   # the judging of `mlacheck ops`
        print(v)                                   # PASS / FAIL case: tensor metric value > limit

A case has the metadata and arrays of an exported case (export.ExportedCase: id, form, kv_format,
softmax_scale, ..., .raw, .inputs, .kv_cache_f32()), so code written for one serves the other."""
import ctypes

import numpy as np

from . import _lib
from ._errors import CaseError

_NP = {0: np.float32, 1: np.uint16, 2: np.uint8, 3: np.int32}  # mlacheck_dtype
_BF16 = ("q", "kv_c", "k_pe", "w_kv_b")
_VERDICTS = ("PASS", "FAIL", "SKIP", "ERROR")


def _s(b):
    return b.decode() if isinstance(b, bytes) else str(b)


# ---- what a kernel supports ---------------------------------------------------------------------

def feature_pairs(form, kv_format, fp8_fnuz, page_size, num_heads, C, R, s_q, seq_lens):
    """The (feature, value) pairs a case asks of a kernel, in the order `mlacheck ops` asks its
    supports() (opcheck.c feature_list): feature names are _lib.FEATURES, kv_format's value its name."""
    mqa = form == "mqa"
    q = [(form, 0), ("kv_format", kv_format)]
    if fp8_fnuz:
        q.append(("fp8_fnuz", 1))
    q += [("page_size", page_size), ("num_heads", num_heads), ("kv_lora_rank", C), ("rope_dim", R)]
    if mqa and any(s > 1 for s in s_q):
        q.append(("multi_token_decode", 1))
    if not mqa and any(s > 0 and n > s for s, n in zip(s_q, seq_lens)):
        q.append(("mha_context", 1))
    return q


def supports_fn(supports):
    """supports as a callable (feature, value) -> bool. Accepted: None (everything), a callable, an
    object with a .supports callable (an ops object), or a dict {feature: allowed} where allowed is a
    bool or a collection of values (e.g. {"kv_format": {"bf16"}, "page_size": {64}, "mha": False});
    a feature the dict does not name is supported."""
    if supports is None:
        return lambda f, v: True
    if isinstance(supports, dict):
        unknown = set(supports) - set(_lib.FEATURES)
        if unknown:
            raise ValueError(f"supports: unknown features {sorted(unknown)}: expected some of {list(_lib.FEATURES)}")

        def from_dict(f, v):
            if f not in supports:
                return True
            allowed = supports[f]
            if isinstance(allowed, bool):
                return allowed
            return v in allowed
        return from_dict
    fn = getattr(supports, "supports", supports)
    if not callable(fn):
        raise TypeError(f"supports: expected None, a callable (feature, value) -> bool or a dict, got {supports!r}")
    return fn


def declined(pairs, names, supports, who="kernel"):
    """The reason the first declined feature gives ("kernel declines kv format fp8ds"), or None.
    names: the case's feature names as `mlacheck ops` prints them (case.features)."""
    fn = supports_fn(supports)
    for (f, v), name in zip(pairs, names):
        if not fn(f, v):
            return f"{who} declines {name}"
    return None


# ---- tensors in and out -------------------------------------------------------------------------

def _bf16_bits(a):
    """float32 holding bf16-representable values -> their uint16 bits (exact), or None if not exact."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    if (u & 0xFFFF).any():
        return None
    return (u >> 16).astype(np.uint16)


def _torch():
    try:
        import torch  # optional: only .torch() and torch outputs need it
    except ImportError as e:
        raise ImportError("mlacheck: .torch() needs PyTorch (pip install torch); numpy arrays are in .inputs") from e
    return torch


def _to_torch(torch, a, device):
    """A numpy array in the kernel's native dtype as a torch tensor on device (uint16 -> bfloat16)."""
    if a.dtype == np.uint16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def _same_device(want, got):
    if want is None:
        return True
    if want.type != got.type:
        return False
    return want.index is None or got.index is None or want.index == got.index


def checked_output(who, name, x, shape, device=None):
    """x as a contiguous float32 numpy array of shape, or CaseError naming who, name and what was
    expected: missing, not a float32 (torch: float32 or bfloat16, widened exactly), wrong shape, on
    another device than the inputs were given on, a NaN (out: also an infinity; lse: -inf only)."""
    if x is None:
        raise CaseError(f"{who}: {name} is missing: expected float32 {list(shape)}")
    if hasattr(x, "detach") and hasattr(x, "device"):  # a torch tensor
        torch = _torch()
        if not _same_device(device, x.device):
            raise CaseError(f"{who}: {name} is on {x.device}: expected {device} (the device the inputs were given on)")
        if x.dtype not in (torch.float32, torch.bfloat16):
            raise CaseError(f"{who}: {name} has dtype {x.dtype}: expected torch.float32 (or torch.bfloat16, "
                            "widened exactly)")
        x = x.detach().float().cpu().numpy()
    elif device is not None and device.type != "cpu":
        raise CaseError(f"{who}: {name} is a {type(x).__name__}: expected a torch tensor on {device} (the device "
                        "the inputs were given on)")
    a = np.asarray(x)
    if a.dtype != np.float32:
        raise CaseError(f"{who}: {name} has dtype {a.dtype}: expected float32 (a bf16 kernel widens its result)")
    if tuple(a.shape) != tuple(shape):
        raise CaseError(f"{who}: {name} has shape {list(a.shape)}: expected float32 {list(shape)}")
    a = np.ascontiguousarray(a)
    bad = np.isnan(a) | (np.isinf(a) if name == "out" else np.isposinf(a))
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise CaseError(f"{who}: {name}{list(i)} is {a[i]}: expected finite values"
                        + ("" if name == "out" else " (-inf only where a query sees no key)"))
    return a


class OpData:
    """What a kernel is given, as numpy arrays (see OpCase; the whole-model route's calls are OpCall).
    Subclasses set the metadata attributes and _arrays (native: bf16 as uint16 bits) and _f32."""

    def __repr__(self):
        return f"{type(self).__name__}({self.id})"

    @property
    def out_shape(self):
        return (self.total_q, self.num_heads, self.kv_lora_rank if self.form == "mqa" else self.v_dim)

    @property
    def lse_shape(self):
        return (self.total_q, self.num_heads)

    @property
    def raw(self):
        """The inputs in the kernel's native dtypes: q (and kv_c, k_pe, w_kv_b) as bf16 uint16 bits,
        kv_cache in its format's encoding, block_table, seq_lens, cu_seqlens_q int32."""
        return self._arrays

    @property
    def inputs(self):
        """The inputs with q (and kv_c, k_pe, w_kv_b) as float32; the rest as in .raw."""
        return {**self._arrays, **self._f32}

    def kv_cache_f32(self):
        """The cache pool as float32 rows [num_blocks, page_size, C + R], decoded as the reference does
        (unused rows NaN)."""
        raw = np.ascontiguousarray(self._arrays["kv_cache"])
        rows = self.num_blocks * self.page_size
        L = self.kv_lora_rank + self.rope_dim
        out = np.empty((self.num_blocks, self.page_size, L), np.float32)
        _lib.call("mlacheck_kv_decode", _lib.KV_FORMATS.index(self.kv_format), int(self.fp8_fnuz),
                  self.kv_lora_rank, self.rope_dim, float(self.k_scale), raw.ctypes.data_as(ctypes.c_void_p), rows,
                  out.ctypes.data_as(_lib.c_float_p))
        return out

    def torch(self, device="cuda"):
        """The inputs as torch tensors on device in the kernel's native dtypes: q, kv_c, k_pe, w_kv_b
        bfloat16 (float32 where the values are not bf16, as in the fp64 profile of a whole-model run);
        kv_cache bfloat16 [blocks, page, C+R] (vLLM kv_c_and_k_pe_cache), uint8 codes for fp8, uint8
        656-byte rows for fp8ds, float32 for f32; block_table, seq_lens, cu_seqlens_q int32. judge()
        then expects the outputs on that device."""
        torch = _torch()
        self._device = torch.device(device)
        out = {}
        for k, v in self._arrays.items():
            out[k] = _to_torch(torch, v, self._device)
        return out

    @property
    def who(self):
        return f"case {self.id}"


class JudgeFailure(AssertionError):
    """A case judged FAIL (OpCase.check); the message names the case, the tensor and the metric
    against its limit; .verdict holds the Verdict."""

    def __init__(self, verdict):
        super().__init__(verdict.message())
        self.verdict = verdict


class Verdict:
    """The judge's verdict on one case: passed, verdict ("PASS" "FAIL" "SKIP"), tensor (the first
    failing one: "mqa_out" "mha_out" "lse"), metric ("allclose" "nonfinite" "nmse" "cos_diff" "rel_l2"
    "ulp_p99"), value, limit, why (the line `mlacheck ops` prints), out_metrics / lse_metrics (dicts:
    max_abs max_rel nmse cos_diff rel_l2 headroom n n_mismatch nonfinite_mismatch worst_coord worst_ref
    worst_cand pass)."""

    def __init__(self, case_id, v=None, skip_reason=None):
        self.case = case_id
        if v is None:
            self.verdict, self.passed, self.why = "SKIP", False, skip_reason
            self.tensor = self.metric = ""
            self.value = self.limit = self.max_abs_limit = self.max_rel_limit = 0.0
            self.out_metrics = self.lse_metrics = None
            return
        self.verdict = _VERDICTS[v.verdict]
        self.passed = v.verdict == 0
        self.tensor, self.metric, self.why = _s(v.tensor), _s(v.metric), _s(v.why)
        self.value, self.limit = v.value, v.limit
        self.max_abs_limit, self.max_rel_limit = v.max_abs_limit, v.max_rel_limit
        self.out_metrics, self.lse_metrics = self._metrics(v.out), self._metrics(v.lse)

    @staticmethod
    def _metrics(m):
        d = {k: getattr(m, k) for k in ("n", "n_mismatch", "nonfinite_mismatch", "max_abs", "max_rel", "nmse",
                                        "cos_diff", "rel_l2", "headroom", "worst_ref", "worst_cand")}
        d["worst_coord"] = tuple(m.worst_coord)
        d["pass"] = bool(m.pass_)
        return d

    @property
    def skipped(self):
        return self.verdict == "SKIP"

    def __bool__(self):
        return self.passed

    def message(self):
        """One line naming the case, the tensor and the metric against its limit."""
        if self.verdict == "PASS":
            o, l_ = self.out_metrics, self.lse_metrics
            return (f"PASS {self.case}: out max_abs {o['max_abs']:.3g} cos_diff {o['cos_diff']:.3g}, "
                    f"lse max_abs {l_['max_abs']:.3g}")
        if self.verdict == "SKIP":
            return f"SKIP {self.case}: {self.why}"
        if self.metric == "allclose":
            m = self.out_metrics if self.tensor != "lse" else self.lse_metrics
            what = (f"{m['n_mismatch']} of {m['n']} elements over max_abs {self.max_abs_limit:g} and max_rel "
                    f"{self.max_rel_limit:g} (fraction {self.value:.3g} > allowed {self.limit:g}; max_abs "
                    f"{m['max_abs']:.3g}, max_rel {m['max_rel']:.3g})")
        else:
            what = f"{self.metric} {self.value:.3g} > limit {self.limit:.3g}"
        return f"FAIL {self.case}: {self.tensor}: {what} [{self.why}]"

    __str__ = message

    def __repr__(self):
        return f"Verdict({self.message()})"


class OpCase(OpData):
    """One operator case of a suite, its inputs generated by libmlacheck from the case's seed (the same
    bytes `mlacheck ops` feeds a plugin). Metadata: id, suite, form ("mqa" decode / "mha" prefill),
    model, kv_format, fp8_fnuz, k_scale, softmax_scale, batch, num_heads, kv_lora_rank, rope_dim,
    nope_dim, v_dim, total_q, page_size, num_blocks, max_blocks_per_seq, row_bytes, s_q,
    seq_lens_list, features (named as `mlacheck ops` names a declined one), feature_pairs (the
    (feature, value) pairs supports() is asked), skip_reason (None, or why supports declined it)."""

    def __init__(self, suite_handle, index, suite_name, supports=None, who="kernel"):
        self._case = ctypes.c_void_p()
        _lib.call("mlacheck_case_make", suite_handle, index, ctypes.byref(self._case))
        info = _lib.CaseInfo(struct_size=ctypes.sizeof(_lib.CaseInfo))
        _lib.call("mlacheck_case_get_info", self._case, ctypes.byref(info))
        self.suite = suite_name
        self.index = index
        self.id = _s(info.name)
        self.model, self.form, self.kv_format, self.profile = (_s(info.model), _s(info.form), _s(info.kv_format),
                                                                _s(info.profile))
        for k in ("fp8_fnuz", "batch", "num_heads", "kv_lora_rank", "rope_dim", "nope_dim", "v_dim", "total_q",
                  "page_size", "num_blocks", "max_blocks_per_seq", "row_bytes", "realistic"):
            setattr(self, k, int(getattr(info, k)))
        self.k_scale, self.softmax_scale = float(info.k_scale), float(info.softmax_scale)
        self.s_q = [int(info.s_q[b]) for b in range(self.batch)]
        self.seq_lens_list = [int(info.seq_lens[b]) for b in range(self.batch)]
        self.features = [_s(info.features[i].value) for i in range(info.n_features)]
        self.feature_pairs = feature_pairs(self.form, self.kv_format, self.fp8_fnuz, self.page_size, self.num_heads,
                                           self.kv_lora_rank, self.rope_dim, self.s_q, self.seq_lens_list)
        if len(self.feature_pairs) != len(self.features):
            raise RuntimeError(f"case {self.id}: {len(self.feature_pairs)} feature pairs for {len(self.features)} "
                               "features: mlacheck/cases.py feature_pairs and opcheck.c feature_list disagree")
        self._device = None
        self._arrays, self._f32 = self._load()
        self.skip_reason = declined(self.feature_pairs, self.features, supports, who) if supports is not None else None

    def _array(self, name):
        a = _lib.Array(struct_size=ctypes.sizeof(_lib.Array))
        _lib.call("mlacheck_case_array", self._case, name.encode(), ctypes.byref(a))
        shape = tuple(a.shape[k] for k in range(a.ndim))
        n = int(np.prod(shape)) if shape else 0
        dt = _NP[a.dtype]
        if n == 0:
            return np.zeros(shape, dt)
        buf = (ctypes.c_uint8 * a.nbytes).from_address(a.data)
        return np.frombuffer(buf, dtype=dt, count=n).reshape(shape).copy()  # owned: outlives the handle

    def _load(self):
        names = ["q", "kv_cache", "block_table", "seq_lens", "cu_seqlens_q"]
        if self.form == "mha":
            names += ["kv_c", "k_pe", "w_kv_b"]
        native, f32 = {}, {}
        for n in names:
            if n in _BF16:
                native[n] = self._array(n + "_bf16")
                f32[n] = self._array(n)
            else:
                native[n] = self._array(n)
        return native, f32

    def declined(self, supports, who="kernel"):
        """Why supports (see supports_fn) declines this case, or None."""
        return declined(self.feature_pairs, self.features, supports, who)

    def judge(self, out, lse):
        """Judges the kernel's out [T, H, C] (mqa: the latent before W_UV) or [T, H, V] (mha) and lse
        [T, H] (natural log) as `mlacheck ops` does: a Verdict. Bad input raises CaseError naming the
        case, the tensor and what was expected (see checked_output)."""
        if self._case is None:
            raise CaseError(f"case {self.id}: closed")
        o = checked_output(self.who, "out", out, self.out_shape, self._device)
        l_ = checked_output(self.who, "lse", lse, self.lse_shape, self._device)
        v = _lib.Verdict(struct_size=ctypes.sizeof(_lib.Verdict))
        _lib.call("mlacheck_case_judge", self._case, o.ctypes.data_as(_lib.c_float_p), o.size,
                  l_.ctypes.data_as(_lib.c_float_p), l_.size, ctypes.byref(v))
        return Verdict(self.id, v)

    def check(self, out, lse):
        """judge(), raising JudgeFailure (an AssertionError, for pytest) when the verdict is FAIL."""
        v = self.judge(out, lse)
        if not v.passed:
            raise JudgeFailure(v)
        return v

    def close(self):
        if getattr(self, "_case", None):
            _lib.lib().mlacheck_case_free(self._case)
            self._case = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


class OpSuite:
    """An operator suite opened in libmlacheck: len(), names, case(i). rules: a rules file (None:
    $MLACHECK_RULES, else the source tree's suites/rules.tol, the "op" lines of `mlacheck ops`)."""

    def __init__(self, suite="ops-smoke", rules=None):
        import os
        rules = rules or os.environ.get("MLACHECK_RULES")
        self.name = suite
        self._h = ctypes.c_void_p()
        _lib.call("mlacheck_ops_open", suite.encode(), rules.encode() if rules else None, ctypes.byref(self._h))
        L = _lib.lib()
        self.rules_path = _s(L.mlacheck_ops_rules_path(self._h))
        self.names = [_s(L.mlacheck_ops_case_name(self._h, i)) for i in range(L.mlacheck_ops_count(self._h))]

    def __len__(self):
        return len(self.names)

    def case(self, i, supports=None, who="kernel"):
        if isinstance(i, str):
            if i not in self.names:
                raise KeyError(f"operator suite {self.name}: no case {i!r}")
            i = self.names.index(i)
        return OpCase(self._h, i, self.name, supports, who)

    def close(self):
        if getattr(self, "_h", None):
            _lib.lib().mlacheck_ops_close(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def op_cases(suite="ops-smoke", supports=None, name=None, kv_format=None, rules=None, who="kernel"):
    """Yields the cases of an operator suite ("ops-smoke", "ops-full") one at a time (each generated on
    demand; ops-full's largest prefill cases hold 64 MB of weights). supports (see supports_fn) sets
    each case's skip_reason; name: a substring of case ids; kv_format: only that format."""
    s = OpSuite(suite, rules)
    try:
        for i, n in enumerate(s.names):
            if name and name not in n:
                continue
            c = s.case(i, supports, who)
            if kv_format and c.kv_format != kv_format:
                c.close()
                continue
            yield c
    finally:
        s.close()


def check_ops(suite="ops-smoke", mqa=None, mha=None, supports=None, name=None, kv_format=None, rules=None,
              who="kernel"):
    """Runs a kernel over a suite in process: mqa(case) / mha(case) -> (out, lse) for the cases of its
    form (a form given as None is declined; a torch kernel calls case.torch(device) itself). Returns
    [(case_id, Verdict)] with SKIP verdicts for declined cases."""
    sup = supports_fn(supports)

    def both(f, v):
        if f == "mqa" and mqa is None or f == "mha" and mha is None:
            return False
        return sup(f, v)
    results = []
    for c in op_cases(suite, both, name, kv_format, rules, who):
        if c.skip_reason:
            results.append((c.id, Verdict(c.id, skip_reason=c.skip_reason)))
            continue
        fn = mqa if c.form == "mqa" else mha
        out, lse = fn(c)
        results.append((c.id, c.judge(out, lse)))
        c.close()
    return results
