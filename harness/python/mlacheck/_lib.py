"""libmlacheck through ctypes: finding the library, the mirrors of the structs of
harness/include/mlacheck/capi.h and reference/include/mla/attn_op.h, and the version / size check
that refuses a library this package was not written for.

The library is searched, first hit wins:
  1. $MLACHECK_LIB (a path to libmlacheck.so);
  2. libmlacheck.so next to this package (a copy put there by hand or by a wheel);
  3. $MLACHECK_BUILD/harness/capi/ (a CMake build folder);
  4. the build folder of the source tree this package sits in (<repo>/build/harness/capi/);
  5. the system's library path (ctypes.util.find_library: an installed libmlacheck.so.1)."""
import ctypes
import ctypes.util
import os

CAPI_VERSION = 1  # MLACHECK_CAPI_VERSION this module mirrors
ATTN_ABI_VERSION = 1  # MLA_ATTN_ABI_VERSION (mla/attn_op.h)

MAX_BATCH = 8
MAX_FEATURES = 10
KV_FORMATS = ("bf16", "fp8", "fp8ds", "f32")  # mla_kv_format order (mla/kv.h MLA_KV_FORMAT_LIST)
# mla_attn_feature order (mla/attn_op.h)
FEATURES = ("mqa", "mha", "kv_format", "fp8_fnuz", "page_size", "num_heads", "kv_lora_rank", "rope_dim",
            "multi_token_decode", "mha_context")

# mla_status (mla/mla.h)
OK, ERR_INVALID, ERR_UNSUPPORTED = 0, -5, -6


class LibraryError(RuntimeError):
    """libmlacheck could not be found, or is not the version this package was written for."""


class CapiError(RuntimeError):
    """A libmlacheck call failed; the message is the library's detail."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


c_int32_p = ctypes.POINTER(ctypes.c_int32)
c_float_p = ctypes.POINTER(ctypes.c_float)


class AttnCache(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int), ("fp8_fnuz", ctypes.c_int32), ("data", ctypes.c_void_p),
                ("num_blocks", ctypes.c_int32), ("page_size", ctypes.c_int32), ("k_scale", ctypes.c_float),
                ("block_table", c_int32_p), ("max_blocks_per_seq", ctypes.c_int32)]


class MqaArgs(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int32), ("num_heads", ctypes.c_int32), ("kv_lora_rank", ctypes.c_int32),
                ("rope_dim", ctypes.c_int32), ("total_q", ctypes.c_int32), ("cu_seqlens_q", c_int32_p),
                ("seq_lens", c_int32_p), ("softmax_scale", ctypes.c_double), ("q", c_float_p), ("kv", AttnCache),
                ("out", c_float_p), ("lse", c_float_p)]


class MhaArgs(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int32), ("num_heads", ctypes.c_int32), ("kv_lora_rank", ctypes.c_int32),
                ("rope_dim", ctypes.c_int32), ("nope_dim", ctypes.c_int32), ("v_dim", ctypes.c_int32),
                ("total_q", ctypes.c_int32), ("cu_seqlens_q", c_int32_p), ("seq_lens", c_int32_p),
                ("softmax_scale", ctypes.c_double), ("q", c_float_p), ("kv_c", c_float_p), ("k_pe", c_float_p),
                ("w_kv_b", c_float_p), ("kv", AttnCache), ("out", c_float_p), ("lse", c_float_p)]


SUPPORTS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int64)
MQA_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(MqaArgs))
MHA_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(MhaArgs))


class AttnOps(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("name", ctypes.c_char_p), ("supports", SUPPORTS_FN),
                ("mqa", MQA_FN), ("mha", MHA_FN)]


class Sizes(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32)] + [(n, ctypes.c_uint32) for n in (
        "attn_ops", "mqa_args", "mha_args", "attn_cache", "case_info", "array", "metrics", "verdict", "run_opts",
        "run_result")]


class CaseInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("name", ctypes.c_char * 96), ("model", ctypes.c_char * 24),
                ("form", ctypes.c_char * 4), ("kv_format", ctypes.c_char * 8), ("profile", ctypes.c_char * 8),
                ("kv_format_id", ctypes.c_int32), ("fp8_fnuz", ctypes.c_int32)] + \
               [(n, ctypes.c_int32) for n in ("batch", "num_heads", "kv_lora_rank", "rope_dim", "nope_dim", "v_dim",
                                               "total_q", "page_size", "num_blocks", "max_blocks_per_seq",
                                               "row_bytes", "realistic")] + \
               [("k_scale", ctypes.c_float), ("softmax_scale", ctypes.c_double),
                ("s_q", ctypes.c_int32 * MAX_BATCH), ("seq_lens", ctypes.c_int32 * MAX_BATCH),
                ("out_dim", ctypes.c_int32), ("n_features", ctypes.c_int32),
                ("features", (ctypes.c_char * 48) * MAX_FEATURES)]


class Array(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("shape", ctypes.c_int64 * 4), ("nbytes", ctypes.c_int64),
                ("data", ctypes.c_void_p)]


class Metrics(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("n_mismatch", ctypes.c_int64), ("nonfinite_mismatch", ctypes.c_int64)] + \
               [(n, ctypes.c_double) for n in ("max_abs", "max_rel", "nmse", "cos_diff", "rel_l2", "headroom")] + \
               [("worst_coord", ctypes.c_int64 * 3), ("worst_ref", ctypes.c_double),
                ("worst_cand", ctypes.c_double), ("pass_", ctypes.c_int32), ("reserved", ctypes.c_int32)]


class Verdict(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("verdict", ctypes.c_int32), ("tensor", ctypes.c_char * 16),
                ("metric", ctypes.c_char * 24), ("value", ctypes.c_double), ("limit", ctypes.c_double),
                ("max_abs_limit", ctypes.c_double), ("max_rel_limit", ctypes.c_double), ("out", Metrics),
                ("lse", Metrics), ("why", ctypes.c_char * 320)]


class RunOpts(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("suite", ctypes.c_char_p), ("suites_dir", ctypes.c_char_p),
                ("golden_dir", ctypes.c_char_p), ("results_dir", ctypes.c_char_p), ("only_case", ctypes.c_char_p),
                ("progress", ctypes.c_int32), ("reserved", ctypes.c_int32)]


class RunResult(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("status", ctypes.c_int32), ("pass_", ctypes.c_int32),
                ("fail", ctypes.c_int32), ("skip", ctypes.c_int32), ("error", ctypes.c_int32),
                ("first_error_status", ctypes.c_int32), ("run_dir", ctypes.c_char * 1024),
                ("attention", ctypes.c_char * 256), ("first_failure", ctypes.c_char * 768),
                ("first_error", ctypes.c_char * 512)]


_P = ctypes.c_void_p
_SIGNATURES = {
    "mlacheck_capi_version": (ctypes.c_uint32, []),
    "mlacheck_last_error": (ctypes.c_char_p, []),
    "mlacheck_status_text": (ctypes.c_char_p, [ctypes.c_int32]),
    "mlacheck_set_error": (ctypes.c_int32, [ctypes.c_int32, ctypes.c_char_p]),
    "mlacheck_capi_sizes": (ctypes.c_int32, [ctypes.POINTER(Sizes)]),
    "mlacheck_kv_row_bytes": (ctypes.c_int64, [ctypes.c_int32, ctypes.c_int32, ctypes.c_int32]),
    "mlacheck_kv_decode": (ctypes.c_int32, [ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                                            ctypes.c_float, _P, ctypes.c_int64, c_float_p]),
    "mlacheck_ops_open": (ctypes.c_int32, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "mlacheck_ops_close": (None, [_P]),
    "mlacheck_ops_count": (ctypes.c_int32, [_P]),
    "mlacheck_ops_rules_path": (ctypes.c_char_p, [_P]),
    "mlacheck_ops_case_info": (ctypes.c_int32, [_P, ctypes.c_int32, ctypes.POINTER(CaseInfo)]),
    "mlacheck_ops_case_name": (ctypes.c_char_p, [_P, ctypes.c_int32]),
    "mlacheck_case_get_info": (ctypes.c_int32, [_P, ctypes.POINTER(CaseInfo)]),
    "mlacheck_case_make": (ctypes.c_int32, [_P, ctypes.c_int32, ctypes.POINTER(_P)]),
    "mlacheck_case_free": (None, [_P]),
    "mlacheck_case_array": (ctypes.c_int32, [_P, ctypes.c_char_p, ctypes.POINTER(Array)]),
    "mlacheck_case_judge": (ctypes.c_int32, [_P, c_float_p, ctypes.c_int64, c_float_p, ctypes.c_int64,
                                             ctypes.POINTER(Verdict)]),
    "mlacheck_run_model": (ctypes.c_int32, [ctypes.POINTER(RunOpts), ctypes.POINTER(AttnOps),
                                            ctypes.POINTER(RunResult)]),
}

_lib = None
_lib_path = None


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("MLACHECK_LIB")
    if env:
        return [("MLACHECK_LIB", env)]
    out = [("next to the package", os.path.join(here, "libmlacheck.so"))]
    if os.environ.get("MLACHECK_BUILD"):
        out.append(("MLACHECK_BUILD", os.path.join(os.environ["MLACHECK_BUILD"], "harness", "capi", "libmlacheck.so")))
    # harness/python/mlacheck -> the repository root
    out.append(("the source tree's build", os.path.join(here, "..", "..", "..", "build", "harness", "capi",
                                                        "libmlacheck.so")))
    found = ctypes.util.find_library("mlacheck")
    if found:
        out.append(("the system library path", found))
    return out


def library_path():
    """The path of the libmlacheck in use (loading it)."""
    lib()
    return _lib_path


def lib():
    """The loaded, checked libmlacheck (LibraryError when none fits)."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    tried = []
    for how, path in _candidates():
        if how != "the system library path" and not os.path.exists(path):
            tried.append(f"{path} ({how}: no such file)")
            continue
        try:
            L = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({how}: {e})")
            continue
        _check(L, path)
        _lib, _lib_path = L, os.path.realpath(path) if os.path.exists(path) else path
        return _lib
    raise LibraryError("libmlacheck not found: build it (cmake -S . -B build && cmake --build build makes "
                       "build/harness/capi/libmlacheck.so) and set MLACHECK_LIB=/path/to/libmlacheck.so; tried "
                       + "; ".join(tried))


def _check(L, path):
    for name, (res, args) in _SIGNATURES.items():
        try:
            f = getattr(L, name)
        except AttributeError:
            raise LibraryError(f"{path}: missing symbol {name}: not a libmlacheck for capi version {CAPI_VERSION}")
        f.restype, f.argtypes = res, args
    v = L.mlacheck_capi_version()
    if v != CAPI_VERSION:
        raise LibraryError(f"{path}: capi version {v}, this package expects {CAPI_VERSION} (rebuild the library "
                           "from the same checkout as the package)")
    s = Sizes(struct_size=ctypes.sizeof(Sizes))
    if L.mlacheck_capi_sizes(ctypes.byref(s)) != OK:
        raise LibraryError(f"{path}: {L.mlacheck_last_error().decode()}")
    for field, mirror in (("attn_ops", AttnOps), ("mqa_args", MqaArgs), ("mha_args", MhaArgs),
                          ("attn_cache", AttnCache), ("case_info", CaseInfo), ("array", Array), ("metrics", Metrics),
                          ("verdict", Verdict), ("run_opts", RunOpts), ("run_result", RunResult)):
        if getattr(s, field) != ctypes.sizeof(mirror):
            raise LibraryError(f"{path}: struct {field} is {getattr(s, field)} bytes, the ctypes mirror "
                               f"{ctypes.sizeof(mirror)}: mlacheck/_lib.py and capi.h disagree")


def call(name, *args):
    """Calls a status-returning function; CapiError with the library's detail when it fails."""
    L = lib()
    st = getattr(L, name)(*args)
    if st != OK:
        detail = L.mlacheck_last_error().decode(errors="replace")
        raise CapiError(st, f"{name}: {L.mlacheck_status_text(st).decode()}: {detail}")
    return st


def kv_row_bytes(fmt, C, R):
    return int(lib().mlacheck_kv_row_bytes(KV_FORMATS.index(fmt), C, R))
