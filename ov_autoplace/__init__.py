"""ov_autoplace: learned device placement for OpenVINO HETERO.

Replace ``core.compile_model(model, "HETERO:GPU,CPU")`` with
``ov_autoplace.compile_model(model, "HETERO:GPU,CPU")`` to get a real
``openvino.CompiledModel`` whose nodes were placed across the devices.

Data flow: model -> graph arrays (``extract_graph``, C++) -> strategy proposal
-> ``legalize`` -> affinities -> HETERO compile.
"""

from ov_autoplace._native_loader import check_openvino_version as _check_openvino_version

_check_openvino_version()  # a mismatched build fails here, with the command that fixes it

from ov_autoplace.api import (  # noqa: E402
    DEFAULT_MAX_SUBMODELS,
    DEFAULT_STRATEGY,
    Profiling,
    StrategyName,
    compile_model,
    compile_placement,
    default_core,
    load_model,
    place,
)
from ov_autoplace.devices.device_strings import available_devices, parse_device_string, register_virtual_device  # noqa: E402
from ov_autoplace.errors import (  # noqa: E402
    CalibrationDataError,
    DeviceError,
    DynamicSplitError,
    ExcludedDeviceError,
    FileFormatError,
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
from ov_autoplace.graph.arrays import GraphArrays, NodeRole, extract_graph  # noqa: E402
from ov_autoplace.placement.legalizer import Pin, legalize  # noqa: E402
from ov_autoplace.placement.assignment import Placement, PlacementCoverageError  # noqa: E402
from ov_autoplace.compile.saved_model import load_placed, save_model  # noqa: E402
from ov_autoplace.strategies import PlacementContext, PlacementStrategy  # noqa: E402
from ov_autoplace.devices.testbed import Testbed, make_testbed  # noqa: E402
from ov_autoplace.devices.timing import LatencyStats, measure_latency, random_inputs  # noqa: E402

from ov_autoplace._version import __version__  # noqa: E402

__all__ = [
    "CalibrationDataError",
    "DEFAULT_MAX_SUBMODELS",
    "DEFAULT_STRATEGY",
    "DeviceError",
    "DynamicSplitError",
    "ExcludedDeviceError",
    "FileFormatError",
    "GraphArrays",
    "LatencyStats",
    "ModelLoadError",
    "ModelNotFoundError",
    "NativeExtensionError",
    "NodeRole",
    "OVAutoplaceError",
    "Pin",
    "PinError",
    "Placement",
    "PlacementContext",
    "PlacementCoverageError",
    "PlacementError",
    "PlacementStrategy",
    "PolicyFormatError",
    "Profiling",
    "PropertyError",
    "ShapeError",
    "StrategyName",
    "Testbed",
    "UnsupportedOpError",
    "__version__",
    "available_devices",
    "compile_model",
    "compile_placement",
    "default_core",
    "extract_graph",
    "legalize",
    "load_model",
    "load_placed",
    "make_testbed",
    "measure_latency",
    "parse_device_string",
    "place",
    "random_inputs",
    "register_virtual_device",
    "save_model",
]
