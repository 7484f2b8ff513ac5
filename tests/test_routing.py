"""Routing OpenVINO's compile through ov_autoplace: placed, recursion-free from any thread, reversible, and a launcher."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace import api, routing
from ov_autoplace.devices.timing import random_inputs
from tests import synthetic_graphs as sg

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _unrouted():
    """Every test starts and ends with OpenVINO's own compile_model."""
    oa.unroute_openvino()
    yield
    oa.unroute_openvino()
    assert ov.Core.compile_model is routing.OPENVINO_COMPILE_MODEL


@pytest.fixture()
def counted(monkeypatch):
    """Calls that reached ov_autoplace.compile_model through the route (a recursion would count more than one)."""
    calls = _Calls()
    real = api.compile_model

    def count(*args, **kwargs):
        calls.append(args[1] if len(args) > 1 else kwargs.get("device_name"))
        count.cores.append(kwargs.get("core"))
        return real(*args, **kwargs)

    count.cores = []
    monkeypatch.setattr(api, "compile_model", count)
    calls.cores = count.cores
    return calls


class _Calls(list):
    """The device strings routed, and the core each was compiled on (``cores``)."""


def _source(caplog) -> str:
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("placement source: ")]
    return lines[-1] if lines else ""


def test_a_routed_core_compile_is_placed_once_and_computes_as_the_plain_call(distinct_testbed, tmp_path, counted,
                                                                            caplog, monkeypatch):
    """The default path compiles the plain call ahead on a thread of its own: that compile and the final one reach
    OpenVINO's method, not the route again (one call counted)."""
    monkeypatch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path))
    model = sg.residual()
    oa.route_openvino()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = distinct_testbed.core.compile_model(model, distinct_testbed.hetero)
    assert counted == [distinct_testbed.hetero], counted
    assert _source(caplog), "the compile was not placed by ov_autoplace"
    oa.unroute_openvino()
    plain = distinct_testbed.core.compile_model(model, distinct_testbed.hetero)
    inputs = random_inputs(plain)
    np.testing.assert_allclose(compiled(inputs)[0], plain(inputs)[0], rtol=0.05, atol=0.05)
    assert counted == [distinct_testbed.hetero], "unrouted: OpenVINO's own compile again"


def test_openvino_compile_model_is_routed_with_the_binding_model(counted):
    """openvino.compile_model hands Core.compile_model the binding's Model; ov_autoplace accepts it as OpenVINO does."""
    model = sg.residual()
    with oa.routed_openvino():
        compiled = ov.compile_model(model, "CPU")
    assert counted == ["CPU"] and isinstance(compiled, ov.CompiledModel)
    inputs = random_inputs(compiled)
    np.testing.assert_array_equal(compiled(inputs)[0], ov.Core().compile_model(model, "CPU")(inputs)[0])


def test_routing_twice_replaces_the_options_and_undoing_it_twice_is_harmless(caplog):
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.route_openvino(profile="stored")
        oa.route_openvino(use_cache=False)
        assert oa.routing.is_routed() and routing._options == {"use_cache": False}
        oa.unroute_openvino()
        oa.unroute_openvino()
    assert "already routed" in caplog.text and "nothing to undo" in caplog.text
    assert ov.Core.compile_model is routing.OPENVINO_COMPILE_MODEL


def test_a_block_restores_what_was_before_it():
    oa.route_openvino(seed=3)
    with oa.routed_openvino(seed=4):
        assert routing._options == {"seed": 4}
        with oa.routed_openvino(seed=5):
            assert routing._options == {"seed": 5}
        assert routing._options == {"seed": 4}
    assert routing._options == {"seed": 3} and ov.Core.compile_model is routing._routed_compile_model
    oa.unroute_openvino()
    with oa.routed_openvino():
        pass
    assert not routing.is_routed() and ov.Core.compile_model is routing.OPENVINO_COMPILE_MODEL


def test_an_option_compile_model_does_not_take_is_refused_before_anything_is_patched():
    with pytest.raises(TypeError, match="not options of ov_autoplace.compile_model.*profile"):
        oa.route_openvino(profil="now")
    with pytest.raises(TypeError, match="must be an openvino.Core"):
        oa.route_openvino(core="CPU")
    assert not routing.is_routed() and ov.Core.compile_model is routing.OPENVINO_COMPILE_MODEL


def test_a_route_core_serves_its_virtual_devices_to_a_librarys_core(testbed, counted):
    """A library compiling on its own Core() reaches the app's virtual devices through route_openvino(core=...)."""
    model = sg.residual()
    library_core = ov.Core()  # knows no CPUF
    with oa.routed_openvino(core=testbed.core):
        compiled = library_core.compile_model(model, testbed.hetero)
    assert counted == [testbed.hetero] and counted.cores == [testbed.core] and isinstance(compiled, ov.CompiledModel)
    with oa.routed_openvino():
        library_core.compile_model(model, "CPU")
    assert counted.cores[-1] is library_core  # no route core: the call's own


def test_two_app_threads_are_both_routed(counted):
    model = sg.residual()
    results, errors = [], []

    def app_thread():
        try:
            results.append(ov.Core().compile_model(model, "CPU"))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    with oa.routed_openvino():
        threads = [threading.Thread(target=app_thread) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert not errors and len(results) == 2 and counted == ["CPU", "CPU"]


def test_the_launcher_runs_an_unchanged_app_routed(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(
        "import sys, openvino as ov, ov_autoplace\n"
        "from tests import synthetic_graphs as sg\n"
        "compiled = ov.compile_model(sg.residual(), 'CPU')\n"
        "print('routed', ov_autoplace.routing.is_routed(), type(compiled).__name__, sys.argv[1:])\n")
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "OV_AUTOPLACE_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-m", "ov_autoplace.run", "--", "python", str(app), "--flag", "x"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "routed True CompiledModel ['--flag', 'x']" in run.stdout


def test_ov_autoplace_run_passes_its_options_to_every_routed_compile(tmp_path):
    """The CLI's run: options before the app, the app's own arguments untouched."""
    app = tmp_path / "app.py"
    app.write_text("import sys, ov_autoplace\n"
                   "print('options', ov_autoplace.routing._options, sys.argv[1:])\n")
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "ov_autoplace.cli.main", "run", "--profile", "background", "--",
                          "python", str(app), "--profile", "x"], capture_output=True, text=True, timeout=300, env=env,
                         cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "options {'profile': 'background'} ['--profile', 'x']" in run.stdout


def test_the_launcher_names_a_script_that_does_not_exist(tmp_path):
    run = subprocess.run([sys.executable, "-m", "ov_autoplace.run", str(tmp_path / "missing.py")],
                         capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"})
    assert run.returncode == 2 and run.stderr.strip().count("\n") == 0
    assert "no such script" in run.stderr and "missing.py" in run.stderr


def test_a_routes_pins_apply_to_the_models_that_have_what_they_name(f32_testbed, tmp_path, monkeypatch, caplog):
    """An app that compiles two models (an encoder-decoder's encoder and decoder) through a route with pins naming
    the second's layers: the first compiled with a PinError before (its nodes are not the pins'); now each model
    gets the pins that name its nodes, and the route's end says nothing, every pin having matched."""
    monkeypatch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path))
    core, hetero = f32_testbed.core, f32_testbed.hetero
    first, second = sg.residual(), sg.shape_value_layers()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        with oa.routed_openvino(core=core, pins={"layer2/*": "CPUF", "head": "CPUF"}):
            compiled_first = ov.Core().compile_model(first, hetero)
            compiled_second = ov.Core().compile_model(second, hetero)
    assert "2 pin(s) name no node of this model" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert compiled_first.get_property("EXECUTION_DEVICES") == ["CPU"]
    assert sorted(compiled_second.get_property("EXECUTION_DEVICES")) == ["CPU", "CPUF"]  # the pins held
    ids = np.random.default_rng(0).integers(0, 16, (1, 5))
    np.testing.assert_allclose(compiled_second(ids)[0], core.compile_model(second, "CPU")(ids)[0], rtol=1e-5,
                               atol=1e-5)


def test_a_route_pin_that_names_nothing_in_any_model_is_a_warning_when_the_route_ends(f32_testbed, tmp_path,
                                                                                     monkeypatch, caplog):
    monkeypatch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path))
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.route_openvino(core=f32_testbed.core, pins={"no_such_layer/*": "CPUF"})
        compiled = ov.Core().compile_model(sg.residual(), f32_testbed.hetero)
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        oa.unroute_openvino()
    assert isinstance(compiled, ov.CompiledModel)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "no_such_layer/*" in warned[0] and "any model compiled through the route" in warned[0]
    with pytest.raises(oa.PinError, match="no_such_layer"):  # called directly, one model: its own mistake, as before
        oa.compile_model(sg.residual(), f32_testbed.hetero, core=f32_testbed.core, pins={"no_such_layer/*": "CPUF"})
