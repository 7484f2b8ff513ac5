"""ov_autoplace: learned device placement for OpenVINO HETERO.

Replace ``core.compile_model(model, "HETERO:GPU,CPU")`` with
``ov_autoplace.compile_model(model, "HETERO:GPU,CPU")`` to get a real
``openvino.CompiledModel`` whose nodes were placed across the devices.

Data flow: model -> graph arrays (``extract_graph``, C++) -> strategy proposal
-> ``legalize`` -> affinities -> HETERO compile.
"""

from .api import (
    DEFAULT_MAX_SUBMODELS,
    DEFAULT_STRATEGY,
    StrategyName,
    compile_model,
    compile_placement,
    default_core,
    load_model,
    place,
)
from .devices import available_devices, parse_device_string, register_virtual_device
from .errors import (
    DeviceError,
    ModelLoadError,
    ModelNotFoundError,
    NativeExtensionError,
    OVAutoplaceError,
    PlacementError,
    PropertyError,
    UnsupportedOpError,
)
from .graph import GraphArrays, NodeRole, extract_graph
from .legalize import Pin, legalize
from .placement import Placement
from .strategies import PlacementContext, PlacementStrategy
from .testbed import Testbed, make_testbed
from .timing import LatencyStats, measure_latency, random_inputs

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_SUBMODELS",
    "DEFAULT_STRATEGY",
    "DeviceError",
    "GraphArrays",
    "LatencyStats",
    "ModelLoadError",
    "ModelNotFoundError",
    "NativeExtensionError",
    "NodeRole",
    "OVAutoplaceError",
    "Pin",
    "Placement",
    "PlacementContext",
    "PlacementError",
    "PlacementStrategy",
    "PropertyError",
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
    "make_testbed",
    "measure_latency",
    "parse_device_string",
    "place",
    "random_inputs",
    "register_virtual_device",
]
