"""A trained HSDAG policy as one ``.npz`` file that inference can read without torch.

Every parameter as a float32 or float16 array under its state-dict name, plus a JSON ``__header__`` (format
version, the writing ov_autoplace version, the :class:`HSDAGConfig`, feature names, parameter shapes, metadata, and
how the weights are stored). float16 weights are stored as two byte planes, optionally rounded to fewer mantissa bits;
rounded ones are packed (the high plane xz-compressed, the low plane without its always-zero bits) so the wheel
carries only what the weights hold. The loader upcasts them to float32. Pure numpy + json at load, read with
``allow_pickle=False`` so a policy file cannot run code. The layout field by field: docs/policy.md, "The policy
file".
"""

from __future__ import annotations

import dataclasses
import json
import lzma
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ov_autoplace.errors import PolicyFormatError
from ov_autoplace.policy.config import HSDAGConfig
from ov_autoplace.policy.features import DEVICE_FEATURE_NAMES, node_feature_names
from ov_autoplace.policy.inputs import COARSE_EXTRA_NAMES

FORMAT = "ov_autoplace.hsdag_policy"
FORMAT_VERSION = 1
HEADER_KEY = "__header__"
#: The dtypes a file may store its weights in (a reader of version 1 that predates float16 upcasts it the same way).
WEIGHT_DTYPES = ("float32", "float16")
_HIGH, _LOW = "__high_bytes__", "__low_bytes__"  # the byte planes of float16 weights
FLOAT16_MANTISSA_BITS = 10
#: The high plane (sign, exponent, top mantissa bits: few distinct values) as xz with no literal context, which
#: models it better than the wheel's deflate; the low plane's zeroed bits are dropped rather than compressed.
_XZ_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME, "lc": 0, "lp": 0, "pb": 0}]


@dataclasses.dataclass(frozen=True, eq=False)
class ExportedPolicy:
    """The contents of a policy file: its header, its config and its weights by state-dict name (float32,
    whatever dtype the file stores them in)."""

    header: dict[str, Any]
    config: HSDAGConfig
    weights: dict[str, np.ndarray]

    def __repr__(self) -> str:
        count = sum(int(w.size) for w in self.weights.values())
        return f"ExportedPolicy(parameters={count}, config={self.config})"


def expected_feature_names(config: HSDAGConfig) -> dict[str, list[str]]:
    return {
        "node": node_feature_names(config.vocab, config.pos_dim) + list(COARSE_EXTRA_NAMES),
        "device": list(DEVICE_FEATURE_NAMES),
        "pair": config.pair_feature_names,
    }


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
    from ov_autoplace._version import __version__

    if weight_dtype not in WEIGHT_DTYPES:
        raise PolicyFormatError(f"weight_dtype {weight_dtype!r} is not one a policy file stores; "
                                f"expected one of {WEIGHT_DTYPES}")
    if mantissa_bits is not None and (weight_dtype != "float16" or type(mantissa_bits) is not int
                                      or not 1 <= mantissa_bits <= FLOAT16_MANTISSA_BITS):
        raise PolicyFormatError(f"mantissa_bits={mantissa_bits!r} with weight_dtype {weight_dtype!r}: only float16 "
                                f"weights are rounded further, to 1-{FLOAT16_MANTISSA_BITS} mantissa bits")
    reserved = sorted({HEADER_KEY, _HIGH, _LOW} & set(weights))
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
        "ov_autoplace_version": __version__,
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
        stored = {_HIGH: pairs[:, 1].copy(), _LOW: pairs[:, 0].copy()}
        if dropped:
            stored = {_HIGH: np.frombuffer(lzma.compress(stored[_HIGH].tobytes(), filters=_XZ_FILTERS), np.uint8),
                      _LOW: np.packbits(np.unpackbits(stored[_LOW][:, None], axis=1)[:, :8 - dropped])}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        np.savez(f, **{HEADER_KEY: np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)}, **stored)
    return path


def header_text(entry: np.ndarray) -> str:
    """The JSON text of a file's ``__header__`` entry: UTF-8 bytes, or a numpy unicode string in older files."""
    if entry.dtype == np.uint8 and entry.ndim == 1:
        return entry.tobytes().decode("utf-8")  # not UTF-8: UnicodeDecodeError, a ValueError
    return str(entry)


def _joined_planes(path: Path, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float16 weights of a ``byte_planes`` file, from its high and low byte planes."""
    parameters = header.get("parameters")
    shapes_ok = isinstance(parameters, dict) and all(
        isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape) for shape in parameters.values())
    if not shapes_ok:
        raise PolicyFormatError(f"{path}: the header's 'parameters' are not name -> shape; expected a file written "
                                "by export_policy")
    sizes = [int(np.prod(shape)) for shape in parameters.values()]
    high, low = arrays.pop(_HIGH, None), arrays.pop(_LOW, None)
    if header.get("weight_layout") == "packed_planes" and high is not None and low is not None:
        high, low = _unpacked(path, header, high, low, sum(sizes))
    if high is None or low is None or high.dtype != np.uint8 or low.dtype != np.uint8 \
            or high.shape != (sum(sizes),) or low.shape != (sum(sizes),):
        raise PolicyFormatError(f"{path}: the byte planes {_HIGH!r} and {_LOW!r} are missing or do not hold the "
                                f"{sum(sizes)} float16 weights its header lists; re-export the policy with export_policy")
    if arrays:
        raise PolicyFormatError(f"{path}: entries {sorted(arrays)[:3]} are not the byte planes of its weights")
    values = np.stack([low, high], axis=1).reshape(-1).view("<f2")
    ends = np.cumsum(sizes)
    return {name: values[end - size:end].reshape(shape)
            for (name, shape), size, end in zip(parameters.items(), sizes, ends)}


def _unpacked(path: Path, header: dict[str, Any], high: np.ndarray, low: np.ndarray, count: int):
    """The byte planes of a ``packed_planes`` file: the high plane xz-decompressed (at most ``count`` bytes, so a
    damaged file cannot inflate without end), the low plane's kept bits back in place, the dropped ones zero."""
    bits = header.get("mantissa_bits")
    if type(bits) is not int or not 1 <= bits < FLOAT16_MANTISSA_BITS or high.dtype != np.uint8 or low.dtype != np.uint8:
        raise PolicyFormatError(f"{path}: packed byte planes need float16 'mantissa_bits' below "
                                f"{FLOAT16_MANTISSA_BITS} and uint8 planes; re-export the policy with export_policy")
    kept = 8 - min(FLOAT16_MANTISSA_BITS - bits, 8)
    try:
        decompressor = lzma.LZMADecompressor()
        high = np.frombuffer(decompressor.decompress(high.tobytes(), max_length=count), np.uint8)
    except lzma.LZMAError as exc:
        raise PolicyFormatError(f"{path}: the packed high byte plane is not xz data ({exc}); re-export the "
                                "policy with export_policy") from exc
    if not decompressor.eof:
        raise PolicyFormatError(f"{path}: the packed high byte plane holds more (or less) than the {count} float16 "
                                "weights its header lists; re-export the policy with export_policy")
    lows = np.unpackbits(low)[:count * kept]
    if lows.size != count * kept:
        return high, low[:0]  # too short: the caller names the mismatch
    return high, np.packbits(np.pad(lows.reshape(count, kept), ((0, 0), (0, 8 - kept))), axis=1).reshape(-1)


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


def load_policy_file(path: str | Path) -> ExportedPolicy:
    """Read and check a file written by :func:`export_policy`.

    Every way the file can be damaged (missing, a directory, empty, truncated,
    not a zip, a header that is not JSON or not an object, a config of the
    wrong form) raises PolicyFormatError naming the file and what was wrong.
    """
    path = Path(path)
    if path.is_dir():
        raise PolicyFormatError(f"policy file {path} is a directory; expected a .npz written by export_policy")
    if not path.is_file():
        raise FileNotFoundError(f"no policy file at {path}; export one with ov_autoplace.policy.policy_file.export_policy")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:  # empty/truncated: EOF/BadZip
        raise PolicyFormatError(f"{path} is not a readable .npz policy file ({type(exc).__name__}: {exc}); "
                                "expected a file written by export_policy (reinstall or re-export it)") from exc
    if HEADER_KEY not in arrays:
        raise PolicyFormatError(f"{path} has no {HEADER_KEY!r} entry; expected a file written by export_policy")
    try:
        header = json.loads(header_text(arrays.pop(HEADER_KEY)))
    except (ValueError, RecursionError) as exc:
        raise PolicyFormatError(f"{path}: the {HEADER_KEY!r} entry is not valid UTF-8 JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise PolicyFormatError(f"{path}: the {HEADER_KEY!r} entry must be a JSON object, got "
                                f"{type(header).__name__}")
    return _checked(path, header, arrays)


def _checked(path: Path, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> ExportedPolicy:
    if header.get("format") != FORMAT:
        raise PolicyFormatError(f"{path} has format {header.get('format')!r}, expected {FORMAT!r}")
    if header.get("format_version") != FORMAT_VERSION:
        raise PolicyFormatError(
            f"{path} is policy format version {header.get('format_version')}, this ov_autoplace reads version "
            f"{FORMAT_VERSION}; re-export the policy with this version")
    try:
        config = HSDAGConfig.from_dict(header["config"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PolicyFormatError(f"{path}: the header's 'config' is missing or malformed "
                                f"({type(exc).__name__}: {exc})") from exc
    wanted = expected_feature_names(config)
    if header.get("feature_names") != wanted:
        raise PolicyFormatError(
            f"{path} was trained on other input features than this ov_autoplace computes "
            f"(written by ov_autoplace {header.get('ov_autoplace_version')}); retrain or re-export it")
    if header.get("weight_layout", "arrays") in ("byte_planes", "packed_planes"):
        arrays = _joined_planes(path, header, arrays)
    shapes = {name: list(a.shape) for name, a in arrays.items()}
    if shapes != header.get("parameters"):
        raise PolicyFormatError(f"{path}: the stored weights do not match the shapes its header lists")
    odd = sorted(name for name, a in arrays.items() if a.dtype.name not in WEIGHT_DTYPES)
    if odd:
        raise PolicyFormatError(f"{path}: weights {odd[:3]} are stored as {arrays[odd[0]].dtype}, expected one of "
                                f"{WEIGHT_DTYPES}; re-export the policy with export_policy")
    return ExportedPolicy(header=header, config=config,
                          weights={name: a.astype(np.float32, copy=False) for name, a in arrays.items()})


__all__ = ["FLOAT16_MANTISSA_BITS", "FORMAT", "FORMAT_VERSION", "WEIGHT_DTYPES", "ExportedPolicy", "PolicyFormatError",
           "convert_policy_file", "export_policy", "header_text", "load_policy_file", "write_policy_file"]
