"""Decoders of the kernel-native element formats of an exported operator case (numpy only).

bf16 is stored as its uint16 bit pattern; e4m3fn / e4m3fnuz as uint8 codes; fp8_ds_mla rows as 656
(C + 4*ceil(C/128) + 2*R) raw bytes: C e4m3 codes | the f32 scale of each 128-wide tile | R bf16.
The rules are mla/kv.h's (the one row codec of the C library)."""
import numpy as np

DS_TILE = 128


def bf16_to_f32(bits):
    """uint16 bf16 bit patterns -> float32 (exact)."""
    b = np.asarray(bits)
    if b.dtype != np.uint16:
        raise TypeError(f"bf16 bits: expected uint16, got {b.dtype}")
    return (b.astype(np.uint32) << 16).view(np.float32)


def _e4m3_table(fnuz):
    t = np.empty(256, dtype=np.float32)
    bias = 8 if fnuz else 7
    for code in range(256):
        s, e, m = code >> 7, (code >> 3) & 15, code & 7
        if fnuz and code == 0x80:
            v = np.nan
        elif not fnuz and e == 15 and m == 7:
            v = np.nan
        elif e == 0:
            v = (m / 8.0) * 2.0 ** (1 - bias)
        else:
            v = (1 + m / 8.0) * 2.0 ** (e - bias)
        t[code] = -v if s and not np.isnan(v) else v
    return t


E4M3FN = _e4m3_table(False)
E4M3FNUZ = _e4m3_table(True)


def e4m3_to_f32(codes, fnuz=False):
    """uint8 e4m3fn (or e4m3fnuz, MI300) codes -> float32."""
    c = np.asarray(codes)
    if c.dtype != np.uint8:
        raise TypeError(f"e4m3 codes: expected uint8, got {c.dtype}")
    return (E4M3FNUZ if fnuz else E4M3FN)[c]


def kv_rows_to_f32(raw, kv_format, C, R, k_scale=1.0, fnuz=False):
    """The cache pool [num_blocks, page_size, row] in kv_format ("bf16", "fp8", "fp8ds", "f32") as
    float32 rows [num_blocks, page_size, C + R] = [c_kv | k_pe], decoded as the reference does."""
    if kv_format == "bf16":
        return bf16_to_f32(raw)
    if kv_format == "f32":
        return np.asarray(raw, dtype=np.float32)
    if kv_format == "fp8":
        return e4m3_to_f32(raw, fnuz) * np.float32(k_scale)
    if kv_format == "fp8ds":
        tiles = (C + DS_TILE - 1) // DS_TILE
        codes = raw[..., :C]
        scales = np.ascontiguousarray(raw[..., C:C + 4 * tiles]).view("<f4")
        pe = np.ascontiguousarray(raw[..., C + 4 * tiles:C + 4 * tiles + 2 * R]).view("<u2")
        per = np.repeat(scales, DS_TILE, axis=-1)[..., :C]
        lat = e4m3_to_f32(codes, fnuz) * per
        return np.concatenate([lat, bf16_to_f32(pe)], axis=-1).astype(np.float32)
    raise ValueError(f"kv format {kv_format!r}: expected bf16, fp8, fp8ds or f32")
