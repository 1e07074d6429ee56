"""torch_kv_rows.py: the paged latent cache of an exported mlacheck operator case as float32 rows on a
torch device, for the two torch examples beside it: bf16 rows, e4m3 rows with the per-tensor k_scale
(fn or fnuz codes), and the 656-byte fp8_ds_mla rows (C codes, a float32 scale per 128 columns, R bf16).

Importable without torch (python3 -m py_compile)."""
import numpy as np

try:
    import torch
except ImportError:  # a syntax check on a machine without torch
    torch = None

DS_TILE = 128  # fp8_ds_mla: one float32 scale per 128 latent columns


def bf16(bits, device):
    """uint16 bf16 bit patterns (numpy) -> a torch.bfloat16 tensor on device (same bits)."""
    return torch.from_numpy(np.ascontiguousarray(bits).view(np.int16)).to(device).view(torch.bfloat16)


def fp8_dtype(case):
    """torch's dtype for the case's e4m3 codes, or None when this torch lacks it."""
    return getattr(torch, "float8_e4m3fnuz" if case.fp8_fnuz else "float8_e4m3fn", None)


def cache_rows_f32(case, device):
    """The paged cache [num_blocks, block_size, C + R] as float32 rows [c_kv | k_pe] on device."""
    raw = case.raw["kv_cache"]
    C, R = case.kv_lora_rank, case.rope_dim
    if case.kv_format == "bf16":
        return bf16(raw, device).float()
    if case.kv_format == "f32":
        return torch.from_numpy(np.ascontiguousarray(raw)).to(device)
    codes = torch.from_numpy(np.ascontiguousarray(raw)).to(device)  # uint8
    if case.kv_format == "fp8":
        return codes.view(fp8_dtype(case)).float() * float(case.k_scale)
    if case.kv_format == "fp8ds":  # 656 bytes: C codes | ceil(C/128) float32 scales | R bf16
        tiles = (C + DS_TILE - 1) // DS_TILE
        lat = codes[..., :C].contiguous().view(fp8_dtype(case)).float()
        scale = codes[..., C:C + 4 * tiles].contiguous().view(torch.float32)
        pe = codes[..., C + 4 * tiles:C + 4 * tiles + 2 * R].contiguous().view(torch.bfloat16).float()
        lat = lat * scale.repeat_interleave(DS_TILE, dim=-1)[..., :C]
        return torch.cat([lat, pe], dim=-1)
    raise ValueError(f"kv format {case.kv_format}")
