"""The exceptions ov_autoplace raises, re-exported at the top level.

Every message names what was wrong (the node, device or property), what was
expected, what was got, and how to fix it. Each class also derives from the
built-in exception a caller would naturally catch (ValueError, ImportError,
FileNotFoundError) so existing ``except`` clauses keep working. Where plain
OpenVINO raises ``RuntimeError`` for the same condition (a missing or unknown
device, a malformed device string, a property value a plugin rejects, a model
file it cannot open or read), the class is a ``RuntimeError`` too: an app's
``try: core.compile_model(...) except RuntimeError:`` fallback keeps catching
it after the import is swapped (docs/call-forms.md).
"""

from __future__ import annotations


class OVAutoplaceError(Exception):
    """Base class of every error ov_autoplace raises on purpose."""


class DeviceError(OVAutoplaceError, ValueError, RuntimeError):
    """A device string is malformed, or names a device that is not present (OpenVINO: RuntimeError)."""


class PropertyError(OVAutoplaceError, ValueError, RuntimeError):
    """A property (config) dict is malformed or holds a value OpenVINO rejects (OpenVINO: RuntimeError)."""


class ModelLoadError(OVAutoplaceError, ValueError, RuntimeError):
    """A model argument is of the wrong type, or its file cannot be parsed (OpenVINO: RuntimeError)."""


class ModelNotFoundError(OVAutoplaceError, FileNotFoundError, RuntimeError):
    """A model path does not exist (OpenVINO: RuntimeError "Could not open the file")."""


class PlacementError(OVAutoplaceError):
    """A placement cannot be made legal (e.g. a pin contradicts device support)."""


class LabNotInstalledError(PlacementError):
    """A strategy, ``search_budget`` or a command that the lab distribution provides, asked for where only the
    runtime is installed. The message names the one fix: ``pip install ov-autoplace-lab``."""


class PinError(PlacementError, ValueError):
    """A pin matches no node of the model, or names a device outside the device string."""


class ExcludedDeviceError(DeviceError, PlacementError):
    """``exclude_devices`` names a device that is not in the device string."""


class ShapeError(PlacementError, ValueError):
    """``shapes=`` (the shapes to place a dynamic model for) does not fit the model's inputs."""


class DynamicSplitError(PlacementError):
    """HETERO cannot run a placement of a model with dynamic shapes (``compile_model`` falls back)."""


class UnsupportedOpError(PlacementError):
    """Some operations are supported by none of the listed devices."""


class PolicyFormatError(OVAutoplaceError, ValueError):
    """A policy file is not an exported HSDAG policy, or not one this version can read."""


class FileFormatError(OVAutoplaceError, ValueError):
    """A file ov_autoplace reads (placement JSON, cost model, cache entry) is damaged or of another format."""


class NativeExtensionError(OVAutoplaceError, ImportError):
    """The C++ extension is missing or was built against another OpenVINO."""


class CalibrationDataError(OVAutoplaceError, ValueError):
    """A calibration row or a simulated-platform file is malformed (missing source or term, negative rate)."""


__all__ = [
    "CalibrationDataError",
    "DeviceError",
    "DynamicSplitError",
    "ExcludedDeviceError",
    "FileFormatError",
    "ModelLoadError",
    "ModelNotFoundError",
    "NativeExtensionError",
    "OVAutoplaceError",
    "PinError",
    "PlacementError",
    "PolicyFormatError",
    "PropertyError",
    "ShapeError",
    "UnsupportedOpError",
]
