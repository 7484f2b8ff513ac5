"""Writing the runtime's policy file (``ov_autoplace/policy/policy_file.py`` reads it and defines the format):
a trained ``HSDAGPolicy`` exported, float32 weights written, a file converted to float16. Only training writes
policies, so the writer is the lab's; numpy + json, never torch (``export_policy`` only calls ``.detach().cpu()
.numpy()`` on the module's tensors). The layout field by field: docs/policy.md, "The policy file".
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import numpy as np

import ov_autoplace
from ov_autoplace.errors import PolicyFormatError
from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace.policy.policy_file import (FLOAT16_MANTISSA_BITS, FORMAT, FORMAT_VERSION, HEADER_KEY, HIGH_PLANE,
                                             LOW_PLANE, WEIGHT_DTYPES, expected_feature_names, load_policy_file)

#: The high plane (sign, exponent, top mantissa bits: few distinct values) as xz with no literal context, which
#: models it better than the wheel's deflate; the low plane's zeroed bits are dropped rather than compressed.
_XZ_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "lc": 0, "lp": 0, "pb": 0}]


def export_policy(policy, path: str | Path, *, metadata: dict[str, Any] | None = None,
                  weight_dtype: str = "float32", mantissa_bits: int | None = None) -> Path:
    """Write ``policy`` (an ``HSDAGPolicy``) to ``path`` (``.npz`` is appended by numpy if missing).

    ``weight_dtype="float16"`` stores the weights at half size (the shipped policy's form); a weight beyond
    float16's range raises PolicyFormatError rather than being stored as infinity; ``mantissa_bits`` (float16
    only) rounds them further, to that many of float16's 10 mantissa bits.
    """
    config: HSDAGConfig = policy.config
    weights = {name: t.detach().cpu().numpy().astype(np.float32) for name, t in policy.state_dict().items()}
    return write_policy_file(path, config, weights, metadata=metadata, weight_dtype=weight_dtype,
                             mantissa_bits=mantissa_bits)


def rounded_mantissa(weight: np.ndarray, bits: int) -> np.ndarray:
    """float16 ``weight`` rounded to ``bits`` mantissa bits, to nearest with ties to even: on the bit pattern,
    as sign and magnitude, so a carry out of the mantissa steps the exponent exactly as rounding should."""
    drop = FLOAT16_MANTISSA_BITS - bits
    if drop == 0:
        return weight
    pattern = weight.astype("<f2").view(np.uint16).astype(np.uint32)
    pattern = (pattern + (1 << (drop - 1)) - 1 + ((pattern >> drop) & 1)) & ~np.uint32((1 << drop) - 1)
    return pattern.astype(np.uint16).view("<f2").reshape(weight.shape)


def write_policy_file(path: str | Path, config: HSDAGConfig, weights: dict[str, np.ndarray], *,
                      metadata: dict[str, Any] | None = None, weight_dtype: str = "float32",
                      mantissa_bits: int | None = None) -> Path:
    """Write float32 ``weights`` (state-dict name -> array) of a policy with ``config``, stored as ``weight_dtype``
    (float16: rounded to ``mantissa_bits`` of its mantissa bits if given)."""
    if weight_dtype not in WEIGHT_DTYPES:
        raise PolicyFormatError(f"weight_dtype {weight_dtype!r} is not one a policy file stores; "
                                f"expected one of {WEIGHT_DTYPES}")
    if mantissa_bits is not None and (weight_dtype != "float16" or type(mantissa_bits) is not int
                                      or not 1 <= mantissa_bits <= FLOAT16_MANTISSA_BITS):
        raise PolicyFormatError(f"mantissa_bits={mantissa_bits!r} with weight_dtype {weight_dtype!r}: only float16 "
                                f"weights are rounded further, to 1-{FLOAT16_MANTISSA_BITS} mantissa bits")
    reserved = sorted({HEADER_KEY, HIGH_PLANE, LOW_PLANE} & set(weights))
    if reserved:
        raise PolicyFormatError(f"a parameter is named {reserved[0]!r}, which the file format reserves")
    with np.errstate(over="ignore"):  # an overflow is reported below, by name
        stored = {name: np.asarray(w, dtype=np.float32).astype(weight_dtype) for name, w in weights.items()}
        if mantissa_bits is not None:
            stored = {name: rounded_mantissa(w, mantissa_bits) for name, w in stored.items()}
    for name, w in stored.items():
        if not np.isfinite(w).all() and np.isfinite(weights[name]).all():
            largest = float(np.abs(np.asarray(weights[name], dtype=np.float32)).max())
            raise PolicyFormatError(f"weight {name!r} holds values up to {largest:g}, beyond {weight_dtype}'s "
                                    f"range (max {float(np.finfo(weight_dtype).max):g}); store it as float32")
    # the low byte holds float16's 8 lowest mantissa bits: rounding to ``mantissa_bits`` zeroes the last ones
    dropped = min(FLOAT16_MANTISSA_BITS - (mantissa_bits or FLOAT16_MANTISSA_BITS), 8)
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "ov_autoplace_version": ov_autoplace.__version__,
        "config": config.to_dict(),
        "feature_names": expected_feature_names(config),
        "parameters": {name: list(w.shape) for name, w in stored.items()},
        "weight_dtype": weight_dtype,
        "weight_layout": "arrays" if weight_dtype != "float16" else "byte_planes" if dropped == 0 else "packed_planes",
        **({"mantissa_bits": mantissa_bits} if mantissa_bits is not None else {}),
        "metadata": metadata or {},
    }
    if weight_dtype == "float16":  # little-endian pairs: byte 1 is the high byte
        pairs = np.concatenate([w.astype("<f2").reshape(-1) for w in stored.values()]).view(np.uint8).reshape(-1, 2)
        stored = {HIGH_PLANE: pairs[:, 1].copy(), LOW_PLANE: pairs[:, 0].copy()}
        if dropped:
            high = lzma.compress(stored[HIGH_PLANE].tobytes(), filters=_XZ_FILTERS)
            stored = {HIGH_PLANE: np.frombuffer(high, np.uint8),
                      LOW_PLANE: np.packbits(np.unpackbits(stored[LOW_PLANE][:, None], axis=1)[:, :8 - dropped])}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez(f, **{HEADER_KEY: np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)}, **stored)
    return path


def convert_policy_file(source: str | Path, destination: str | Path, *, weight_dtype: str,
                        mantissa_bits: int | None = None) -> Path:
    """Rewrite the policy file ``source`` to ``destination`` with its weights stored as ``weight_dtype``
    (float16: rounded to ``mantissa_bits`` if given).

    Config and metadata are kept; the header records the conversion (``metadata["converted_from"]``: the
    source's stored dtype). How the shipped float16 policy was made from the trained float32 export.
    """
    exported = load_policy_file(source)
    metadata = dict(exported.header.get("metadata") or {})
    metadata.setdefault("converted_from", exported.header.get("weight_dtype", "float32"))
    return write_policy_file(destination, exported.config, exported.weights, metadata=metadata,
                             weight_dtype=weight_dtype, mantissa_bits=mantissa_bits)


__all__ = ["convert_policy_file", "export_policy", "write_policy_file"]
