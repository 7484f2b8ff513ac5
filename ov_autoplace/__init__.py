"""ov_autoplace: learned device placement for OpenVINO HETERO.

Replace ``core.compile_model(model, "HETERO:GPU,CPU")`` with
``ov_autoplace.compile_model(model, "HETERO:GPU,CPU")`` to get a real
``openvino.CompiledModel`` whose nodes were placed across the devices.

Data flow, one room each: model in (``model/``) -> graph arrays (``graph/``, C++) on the devices
(``devices/``) -> strategy proposal and legalizer (``strategies/``, ``policy/``, ``costmodel/``,
``placement/``) -> decision and verification (``decision/``) -> cache (``cache/``) -> HETERO compile
(``compile/``, ``api``). The lab (``ov_autoplace_lab``, distribution ``ov-autoplace-lab``) plugs in through
entry points; this package never imports it.
"""

from ov_autoplace._native_loader import check_openvino_version as _check_openvino_version

_check_openvino_version()  # a mismatched build fails here, with the command that fixes it

from ov_autoplace.api import Profiling, StrategyName, compile_model, compile_placement, place  # noqa: E402
from ov_autoplace.saved_model import load_placed, save_model  # noqa: E402
from ov_autoplace.routing import route_openvino, routed_openvino, unroute_openvino  # noqa: E402
from ov_autoplace.devices.device_strings import available_devices, register_virtual_device  # noqa: E402
from ov_autoplace.errors import (  # noqa: E402
    CalibrationDataError,
    DeviceError,
    DynamicSplitError,
    ExcludedDeviceError,
    FileFormatError,
    LabNotInstalledError,
    MemoryCapError,
    ModelLoadError,
    ModelNotFoundError,
    NativeExtensionError,
    OVAutoplaceError,
    PinError,
    PlacementError,
    PolicyFormatError,
    PropertyError,
    ShapeError,
    UnsupportedOpError,
)
from ov_autoplace.placement.assignment import Placement  # noqa: E402
from ov_autoplace.placement.pins import Pin  # noqa: E402
from ov_autoplace.model.generation import Generation  # noqa: E402

from ov_autoplace._version import __version__  # noqa: E402

#: The public API: what an inference app calls. Everything else is importable from its module (the rooms:
#: docs/architecture.md) and is not re-exported here.
__all__ = [
    # placing and compiling
    "compile_model",
    "place",
    "compile_placement",
    "save_model",
    "load_placed",
    "Placement",
    "Pin",
    "Generation",
    "Profiling",
    "StrategyName",
    # adopting it where the compile call is a library's
    "route_openvino",
    "routed_openvino",
    "unroute_openvino",
    # devices
    "register_virtual_device",
    "available_devices",
    "__version__",
    # errors (docs: README, "Errors")
    "OVAutoplaceError",
    "CalibrationDataError",
    "DeviceError",
    "DynamicSplitError",
    "ExcludedDeviceError",
    "FileFormatError",
    "LabNotInstalledError",
    "MemoryCapError",
    "ModelLoadError",
    "ModelNotFoundError",
    "NativeExtensionError",
    "PinError",
    "PlacementError",
    "PolicyFormatError",
    "PropertyError",
    "ShapeError",
    "UnsupportedOpError",
]
