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
    """Base class of every error ov_autoplace raises on purpose.

    Example::

        try:
            compiled = ov_autoplace.compile_model(model, "HETERO:GPU,CPU")
        except ov_autoplace.OVAutoplaceError as exc:  # every deliberate error; each is also a built-in one
            print(exc)
    """


class DeviceError(OVAutoplaceError, ValueError, RuntimeError):
    """A device string is malformed, or names a device that is not present (OpenVINO: RuntimeError).

    Example::

        ov_autoplace.compile_model(model, "HETERO:GPU,XPU")  # DeviceError: XPU is not present (lists the available ones)
    """


class PropertyError(OVAutoplaceError, ValueError, RuntimeError):
    """A property (config) dict is malformed or holds a value OpenVINO rejects (OpenVINO: RuntimeError).

    Example::

        ov_autoplace.compile_model(model, "CPU", {"PERFORMANCE_HINT": "FASTEST"})  # PropertyError: the plugin rejects it
    """


class ModelLoadError(OVAutoplaceError, ValueError, RuntimeError):
    """A model argument is of the wrong type, or its file cannot be parsed (OpenVINO: RuntimeError).

    Example::

        ov_autoplace.compile_model("notes.txt", "CPU")  # ModelLoadError: OpenVINO cannot read the file
    """


class ModelNotFoundError(OVAutoplaceError, FileNotFoundError, RuntimeError):
    """A model path does not exist (OpenVINO: RuntimeError "Could not open the file").

    Example::

        ov_autoplace.compile_model("missing.xml", "CPU")  # ModelNotFoundError (a FileNotFoundError)
    """


class PlacementError(OVAutoplaceError):
    """A placement cannot be made legal (e.g. a pin contradicts device support).

    Example::

        ov_autoplace.place(model, "HETERO:GPU,CPU", strategy="fastest")  # PlacementError: names the strategies
    """


class LabNotInstalledError(PlacementError):
    """A strategy, ``search_budget`` or a command that the lab distribution provides, asked for where only the
    runtime is installed. The message names the one fix: ``pip install ov-autoplace-lab``.

    Example::

        ov_autoplace.place(model, "HETERO:GPU,CPU", strategy="placeto")  # without ov-autoplace-lab installed
    """


class PinError(PlacementError, ValueError):
    """A pin matches no node of the model, or names a device outside the device string.

    Example::

        ov_autoplace.place(model, "HETERO:GPU,CPU", pins={"NoSuchOp": "GPU"})  # PinError: lists the nearest names
    """


class ExcludedDeviceError(DeviceError, PlacementError):
    """``exclude_devices`` names a device that is not in the device string.

    Example::

        ov_autoplace.place(model, "HETERO:GPU,CPU", exclude_devices=["NPU"])  # NPU is not in the string
    """


class ShapeError(PlacementError, ValueError):
    """``shapes=`` (the shapes to place a dynamic model for) does not fit the model's inputs.

    Example::

        ov_autoplace.place(dynamic_model, "HETERO:GPU,CPU", shapes={"x": [1, 2, 3, 4, 5]})  # rank does not fit
    """


class DynamicSplitError(PlacementError):
    """HETERO cannot run a placement of a model with dynamic shapes (``compile_model`` falls back).

    Example::

        try:
            ov_autoplace.compile_placement(dynamic_model, placement)
        except ov_autoplace.DynamicSplitError as exc:  # compile_model falls back instead, naming the reason
            print(exc)
    """


class MemoryCapError(PlacementError, ValueError):
    """The model (weights and KV cache) cannot be split so every part fits its device's memory cap.

    Example::

        ov_autoplace.compile_model(model, "HETERO:GPU,CPU", memory_caps={"GPU": "1 GB", "CPU": "1 GB"})
        # MemoryCapError when the model needs more than 2 GB: says how much is missing
    """


class UnsupportedOpError(PlacementError):
    """Some operations are supported by none of the listed devices.

    Example::

        ov_autoplace.place(model, "HETERO:NPU")  # an op no listed device supports (named in the message)
    """


class PolicyFormatError(OVAutoplaceError, ValueError):
    """A policy file is not an exported HSDAG policy, or not one this version can read.

    Example::

        NumpyHSDAGPolicy.load("damaged.npz")  # PolicyFormatError (ov_autoplace.policy.numpy_policy)
    """


class FileFormatError(OVAutoplaceError, ValueError):
    """A file ov_autoplace reads (placement JSON, cost model, cache entry) is damaged or of another format.

    Example::

        ov_autoplace.Placement.load("truncated.json")  # FileFormatError names the file and what is wrong
    """


class NativeExtensionError(OVAutoplaceError, ImportError):
    """The C++ extension is missing or was built against another OpenVINO.

    Example::

        import ov_autoplace  # built for another OpenVINO: NativeExtensionError with the rebuild command
    """


class CalibrationDataError(OVAutoplaceError, ValueError):
    """A calibration row or a simulated-platform file is malformed (missing source or term, negative rate).

    Example::

        load_suite()  # ov_autoplace.costmodel.suite: a malformed platforms.json names platform, device, field
    """


__all__ = [
    "CalibrationDataError",
    "DeviceError",
    "DynamicSplitError",
    "ExcludedDeviceError",
    "FileFormatError",
    "ModelLoadError",
    "MemoryCapError",
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
