"""A trained HSDAG policy as one ``.npz`` file that inference can read without torch.

The rest of this overview: docs/architecture.md, "Module notes".
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
HIGH_PLANE, LOW_PLANE = "__high_bytes__", "__low_bytes__"  # the byte planes of float16 weights (the high one xz)
FLOAT16_MANTISSA_BITS = 10


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
    high, low = arrays.pop(HIGH_PLANE, None), arrays.pop(LOW_PLANE, None)
    if header.get("weight_layout") == "packed_planes" and high is not None and low is not None:
        high, low = _unpacked(path, header, high, low, sum(sizes))
    if high is None or low is None or high.dtype != np.uint8 or low.dtype != np.uint8 \
            or high.shape != (sum(sizes),) or low.shape != (sum(sizes),):
        raise PolicyFormatError(f"{path}: the byte planes {HIGH_PLANE!r} and {LOW_PLANE!r} are missing or do not hold the "
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


def load_policy_file(path: str | Path) -> ExportedPolicy:
    """Read and check a policy file (written by the lab's ``export_policy``).

    Every way the file can be damaged (missing, a directory, empty, truncated,
    not a zip, a header that is not JSON or not an object, a config of the
    wrong form) raises PolicyFormatError naming the file and what was wrong.
    """
    path = Path(path)
    if path.is_dir():
        raise PolicyFormatError(f"policy file {path} is a directory; expected a .npz written by export_policy")
    if not path.is_file():
        raise FileNotFoundError(f"no policy file at {path}; export one with the lab's "
                                "ov_autoplace_lab.policy_export.export_policy")
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


__all__ = ["FLOAT16_MANTISSA_BITS", "FORMAT", "FORMAT_VERSION", "HEADER_KEY", "HIGH_PLANE", "LOW_PLANE", "WEIGHT_DTYPES",
           "ExportedPolicy", "PolicyFormatError", "expected_feature_names", "header_text", "load_policy_file"]
