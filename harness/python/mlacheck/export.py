"""Exported operator cases (`mlacheck ops --export DIR`): read a case's inputs, write its outputs.

Layout of DIR (harness/python/README.md is the full description):
  cases.json          the index: suite, and per case id, file, out_file, form, features, kv_format, ...
  <id>.h5             the inputs: root attributes (schema_version 1, id, form, softmax_scale, ...) and
                      datasets q, kv_cache, block_table, seq_lens, cu_seqlens_q (+ kv_c, k_pe, w_kv_b
                      for mha), each with attributes dtype and crc32, in the kernel's native dtypes
  <id>.out.h5         written here by write_output (datasets out, lse, float32) or skip (attribute
                      skipped = reason); `mlacheck ops --judge DIR` reads them
"""
import json
import os
import zlib

import h5py
import numpy as np

from . import formats
from ._errors import CaseError  # noqa: F401 (mlacheck.export.CaseError, as before)

SCHEMA_VERSION = 1
_BF16 = ("q", "kv_c", "k_pe", "w_kv_b")


def _crc(a):
    return zlib.crc32(np.ascontiguousarray(a).tobytes()) & 0xFFFFFFFF


class ExportedCase:
    """One operator case of an export. Metadata as attributes (id, form, model, kv_format,
    fp8_fnuz, k_scale, softmax_scale, batch, num_heads, kv_lora_rank, rope_dim, nope_dim, v_dim,
    total_q, page_size, num_blocks, max_blocks_per_seq, s_q, seq_lens_list, features) and in .meta;
    the inputs through .raw (stored codes) and .inputs (bf16 decoded to float32)."""

    def __init__(self, folder, entry):
        self.folder = folder
        self.entry = entry
        self.id = entry["id"]
        self.path = os.path.join(folder, entry["file"])
        self.out_path = os.path.join(folder, entry["out_file"])
        self.features = list(entry["features"])
        with h5py.File(self.path, "r") as f:
            self.meta = {k: (v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v) for k, v in f.attrs.items()}
        if self.meta.get("schema_version") != SCHEMA_VERSION:
            raise CaseError(f"{self.path}: schema_version {self.meta.get('schema_version')}, expected {SCHEMA_VERSION}")
        if self.meta.get("id") != self.id:
            raise CaseError(f"{self.path}: id {self.meta.get('id')!r}, expected {self.id!r} (cases.json)")
        for k, v in self.meta.items():
            if k not in ("s_q", "features", "id"):  # those three come from cases.json, as lists
                setattr(self, k, v)
        self.s_q = [int(x) for x in entry["s_q"]]
        self.seq_lens_list = [int(x) for x in entry["seq_lens"]]
        self._raw = None

    def __repr__(self):
        return f"ExportedCase({self.id})"

    @property
    def out_shape(self):
        d = self.kv_lora_rank if self.form == "mqa" else self.v_dim
        return (self.total_q, self.num_heads, d)

    @property
    def lse_shape(self):
        return (self.total_q, self.num_heads)

    @property
    def raw(self):
        """Every dataset as stored: bf16 as uint16 bits, fp8 as uint8 codes, int32 tables (crc32-checked)."""
        if self._raw is None:
            raw = {}
            with h5py.File(self.path, "r") as f:
                for name, ds in f.items():
                    a = ds[()]
                    if "crc32" in ds.attrs and _crc(a) != int(ds.attrs["crc32"]):
                        raise CaseError(f"{self.path}: dataset {name}: crc32 does not match its data (export again)")
                    raw[name] = a
            self._raw = raw
        return self._raw

    @property
    def inputs(self):
        """The inputs as numpy arrays: q (and kv_c, k_pe, w_kv_b) decoded from bf16 to float32; kv_cache
        in its stored codes (kv_cache_f32() decodes it); block_table, seq_lens, cu_seqlens_q int32."""
        return {k: formats.bf16_to_f32(v) if k in _BF16 else v for k, v in self.raw.items()}

    def kv_cache_f32(self):
        """The cache pool as float32 rows [num_blocks, page_size, C + R] (unused rows are NaN)."""
        return formats.kv_rows_to_f32(self.raw["kv_cache"], self.kv_format, self.kv_lora_rank, self.rope_dim,
                                      self.k_scale, bool(self.fp8_fnuz))

    def _checked(self, name, x, shape):
        if x is None:
            raise CaseError(f"case {self.id}: {name} is missing: expected float32 {list(shape)}")
        if hasattr(x, "detach"):  # a torch tensor, on any device
            x = x.detach().float().cpu().numpy()
        a = np.asarray(x)
        if a.dtype.kind != "f":
            raise CaseError(f"case {self.id}: {name} has dtype {a.dtype}: expected a float array (float32)")
        if tuple(a.shape) != tuple(shape):
            raise CaseError(f"case {self.id}: {name} has shape {list(a.shape)}: expected {list(shape)}")
        a = np.ascontiguousarray(a, dtype=np.float32)
        bad = np.isnan(a)
        if name == "out":
            bad |= np.isinf(a)
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            raise CaseError(f"case {self.id}: {name}{list(i)} is {a[i]}: expected finite values"
                            + ("" if name == "out" else " (-inf only where a query sees no key)"))
        return a

    def _write(self, fill):
        tmp = self.out_path + ".tmp"
        with h5py.File(tmp, "w") as f:
            f.attrs["schema_version"] = np.int32(SCHEMA_VERSION)
            f.attrs["kind"] = "mlacheck-op-output"
            f.attrs["id"] = self.id
            fill(f)
        os.replace(tmp, self.out_path)

    def write_output(self, out, lse):
        """Writes out [T, H, C (mqa) | V (mha)] and lse [T, H] (float32; torch tensors accepted) to
        DIR/<id>.out.h5. Raises CaseError naming the case and tensor on a wrong shape or dtype or a NaN."""
        o = self._checked("out", out, self.out_shape)
        l = self._checked("lse", lse, self.lse_shape)

        def fill(f):
            for name, a in (("out", o), ("lse", l)):
                ds = f.create_dataset(name, data=a, dtype="<f4")
                ds.attrs["dtype"] = "f32"
                ds.attrs["crc32"] = np.uint32(_crc(a))
        self._write(fill)

    def skip(self, reason):
        """Marks the case unsupported by the kernel: the judge reports it SKIP with this reason."""
        if not reason or not str(reason).strip():
            raise CaseError(f"case {self.id}: skip needs a reason")
        self._write(lambda f: f.attrs.__setitem__("skipped", str(reason)))


def exported_cases(folder):
    """Yields the ExportedCase objects of an export folder in suite order."""
    index = os.path.join(folder, "cases.json")
    try:
        with open(index) as fp:
            root = json.load(fp)
    except (OSError, ValueError) as e:
        raise CaseError(f"{index}: cannot read the export index ({e}): expected the folder written by "
                        "mlacheck ops --export") from e
    if root.get("schema_version") != SCHEMA_VERSION:
        raise CaseError(f"{index}: schema_version {root.get('schema_version')}, expected {SCHEMA_VERSION}")
    for entry in root["cases"]:
        yield ExportedCase(folder, entry)


def export_suite(folder):
    """The suite an export folder holds ("ops-smoke" or "ops-full")."""
    with open(os.path.join(folder, "cases.json")) as fp:
        return json.load(fp)["suite"]
