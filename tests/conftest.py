"""Shared fixtures: one testbed per session (registering plugins and setting
properties costs time), and the zoo models when their extras are installed."""

from __future__ import annotations

import importlib.util

import pytest

from ov_autoplace.devices.testbed import Testbed, shared_testbed

ZOO_MODELS = ("inception_v3", "resnet50", "bert_base")


@pytest.fixture(autouse=True, scope="session")
def _isolated_caches(tmp_path_factory):
    """Keep the tests' placement cache and profiles out of the user's ~/.cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path_factory.mktemp("placement_cache")))
    patch.setenv("OV_AUTOPLACE_PROFILE_DIR", str(tmp_path_factory.mktemp("profiles")))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def testbed() -> Testbed:
    """The standard testbed: CPU bf16 + CPUF f32, all cores each (f32 both without bf16)."""
    return shared_testbed(False)


@pytest.fixture(scope="module")
def thread_core():
    """Two devices the prior can tell apart: the CPU plugin on one thread (CPUS) and on all cores (CPU)."""
    import openvino as ov

    from ov_autoplace.devices.device_strings import register_virtual_device

    core = ov.Core()
    register_virtual_device(core, "CPUS", base_device="CPU", properties={"INFERENCE_NUM_THREADS": 1})
    return core


@pytest.fixture(scope="session")
def f32_testbed() -> Testbed:
    """Both testbed devices in f32, so any placement's outputs match an f32 reference."""
    return shared_testbed(True)


def zoo_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision", "transformers"))


@pytest.fixture(scope="session", params=ZOO_MODELS)
def zoo_model(request):
    """Each zoo model as an ov.Model (built once, then read from the IR cache)."""
    if not zoo_available():
        pytest.skip("zoo extras not installed: pip install -e '.[zoo]'")
    from ov_autoplace_lab import models as zoo

    return request.param, zoo.load(request.param)
