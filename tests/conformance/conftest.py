"""The conformance suite's one fixture: a way to compile, so every behaviour runs both plain and routed.

The behaviours are those OpenVINO's own Python API tests check for ``compile_model``, ``CompiledModel``,
``InferRequest`` and ``AsyncInferQueue`` (read to learn what they check; the tests here are the project's own).
Each test takes ``via`` and runs once per way of compiling:

* ``plain-CPU``, ``plain-HETERO``: ``core.compile_model`` as OpenVINO ships it;
* ``routed-CPU``, ``routed-HETERO``: the same call with ``ov_autoplace.routed_openvino()`` on, so it reaches
  ``ov_autoplace.compile_model`` through the route an app would use;
* ``split-HETERO``: routed with the model's last compute op pinned to the second device, so the compiled model
  is a real HETERO split (or, for a one-op model, the whole model on HETERO's second device): the default
  path keeps these small models on one device, and a behaviour must hold on what a placement produces too.

Calls whose device is not a testbed string (no device, ``openvino.compile_model`` on its own new Core) take
``via_cpu``: plain and routed only.

HETERO is the testbed's ``HETERO:CPU,CPUF`` (``ov_autoplace.devices.testbed``) with both devices in f32
(``like_for_like``), so a split's outputs match the plain call's to f32 rounding on every machine. Every module is
in the slow tier (``pytestmark``): each variant compiles real models on real plugins.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Iterator

import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace.devices.testbed import Testbed, shared_testbed

#: Op types that are not compute: pinning one of them would not split anything.
NOT_COMPUTE = ("Parameter", "Result", "Constant", "ReadValue", "Assign")
SECOND_DEVICE = "CPUF"


def split_pins(model: ov.Model) -> list[oa.Pin]:
    """The model's last compute op on HETERO's second device: a split where the model has two or more."""
    compute = [op for op in model.get_ordered_ops() if op.get_type_name() not in NOT_COMPUTE]
    return [oa.Pin(SECOND_DEVICE, name=compute[-1].get_friendly_name())] if compute else []


@dataclasses.dataclass(frozen=True)
class Via:
    """One way of compiling: ``how`` (plain, routed, split) on ``device`` of ``core``."""

    how: str
    device: str
    core: ov.Core

    @property
    def routed(self) -> bool:
        return self.how != "plain"

    @contextlib.contextmanager
    def routing(self, model: ov.Model | None = None) -> Iterator[None]:
        """The route on for the block (nothing for plain); ``split`` pins ``model``'s last compute op."""
        if not self.routed:
            yield
            return
        options: dict[str, Any] = {}
        if self.how == "split":
            if model is None:
                raise ValueError("the split variant needs the model it compiles, to pin its last compute op")
            options["pins"] = split_pins(model)
        with oa.routed_openvino(**options):
            yield

    def compile(self, model: ov.Model, config: dict | None = None, core: ov.Core | None = None) -> ov.CompiledModel:
        """``core.compile_model(model, device, config)`` this way (on the testbed's core unless ``core``)."""
        core = self.core if core is None else core
        with self.routing(model):
            return core.compile_model(model, self.device, {} if config is None else config)


VARIANTS = [("plain", "CPU"), ("routed", "CPU"), ("plain", "HETERO"), ("routed", "HETERO"), ("split", "HETERO")]


@pytest.fixture(scope="session")
def f32_testbed() -> Testbed:
    return shared_testbed(True)


@pytest.fixture(params=VARIANTS, ids=[f"{how}-{device}" for how, device in VARIANTS])
def via(request, f32_testbed) -> Via:
    how, device = request.param
    return Via(how, f32_testbed.hetero if device == "HETERO" else device, f32_testbed.core)


@pytest.fixture(params=["plain", "routed"], ids=["plain-CPU", "routed-CPU"])
def via_cpu(request, f32_testbed) -> Via:
    """For calls whose device is not a testbed string: no device (AUTO's pick) and ``openvino.compile_model``."""
    return Via(request.param, "CPU", f32_testbed.core)

