"""The public API is small and documented: ``ov_autoplace.__all__`` and nothing else at the top level."""

from __future__ import annotations

import inspect

import ov_autoplace
from ov_autoplace import errors

PUBLIC = {"compile_model", "place", "compile_placement", "save_model", "load_placed", "Placement", "Pin", "Profiling",
          "Generation", "StrategyName", "register_virtual_device", "available_devices", "__version__", "route_openvino",
          "routed_openvino", "unroute_openvino"}


def test_all_is_the_dozen_names_and_every_error():
    error_classes = {n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, errors.OVAutoplaceError)}
    assert set(ov_autoplace.__all__) == PUBLIC | error_classes


def test_nothing_else_is_re_exported():
    """Other names are importable from their modules (e.g. ov_autoplace.devices.testbed.make_testbed), not here."""
    names = {n for n, v in vars(ov_autoplace).items() if not n.startswith("_") and not inspect.ismodule(v)}
    assert names <= set(ov_autoplace.__all__), sorted(names - set(ov_autoplace.__all__))


def test_every_public_name_has_an_example():
    for name in ov_autoplace.__all__:
        if name != "__version__":
            doc = inspect.getdoc(getattr(ov_autoplace, name)) or ""
            assert "Example::" in doc, f"{name} has no example in its docstring"
