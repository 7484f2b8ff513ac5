"""A mistake in the user's own request is raised (library and CLI), never hidden by the fallback."""

from __future__ import annotations

import logging

import openvino as ov
import pytest

import ov_autoplace as oa
from ov_autoplace.cli.main import main
from tests import synthetic_graphs as sg

# (keyword arguments, error class, text the message must contain: the bad value and what would be right)
MISTAKES = [
    (dict(pins={"nope": "CPUF"}), oa.PinError, "pin name 'nope' -> CPUF matches no node"),
    (dict(pins={"stm": "CPUF"}), oa.PinError, "nearest names: ['stem'"),
    (dict(pins={"type:Convolutoin": "CPUF"}), oa.PinError, "no 'Convolutoin' op; op types it has include ['Convolution'"),
    (dict(pins={"stem": "GPU"}), oa.PinError, "names device 'GPU', which is not in the device string's devices "
                                              "['CPU', 'CPUF']"),
    (dict(pins={"stem": "CPU"}, exclude_devices=["CPU"]), oa.PinError, "which exclude_devices=['CPU'] excludes; "
                                                                       "pin to one of ['CPUF']"),
    (dict(exclude_devices=["GPU"]), oa.ExcludedDeviceError, "exclude_devices names ['GPU'], which are not in"),
    # a str is one device name, not its letters ('G', 'P', 'U')
    (dict(exclude_devices="GPU"), oa.ExcludedDeviceError, "exclude_devices names ['GPU'], which are not in"),
    (dict(shapes=[1, 3, 32, 32]), oa.ShapeError, "axis 2 is 32, but the input is [1,3,16,16]"),
]


@pytest.mark.parametrize("kwargs, error, text", MISTAKES)
def test_compile_model_raises_instead_of_falling_back(f32_testbed, caplog, kwargs, error, text):
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        with pytest.raises(error) as err:
            oa.compile_model(sg.residual(), f32_testbed.hetero, core=f32_testbed.core, strategy="heavy_ops",
                             use_cache=False, **kwargs)
    assert text in str(err.value)
    assert isinstance(err.value, oa.PlacementError)
    assert "falling back" not in caplog.text


@pytest.fixture()
def ir_path(tmp_path):
    path = tmp_path / "residual.xml"
    ov.save_model(sg.residual(), path)
    return path


@pytest.fixture()
def dynamic_ir_path(tmp_path):
    path = tmp_path / "dynamic_attention.xml"
    ov.save_model(sg.dynamic_attention(), path)
    return path


@pytest.mark.parametrize("args, text", [
    (["--pin-node", "nope=CPUF"], "'nope' -> CPUF matches no node"),
    (["--pin-node", "stem=GPU"], "names device 'GPU'"),
    (["--pin-node", "stem=CPU", "--exclude", "CPU"], "which exclude_devices=['CPU'] excludes"),
    (["--exclude", "GPU"], "exclude_devices names ['GPU']"),
    (["--shape", "[1,3,32,32]"], "axis 2 is 32"),
    (["--shape", "input[1,3"], "cannot parse shapes"),
])
def test_cli_prints_one_line_and_exits_2(ir_path, capsys, args, text):
    assert main(["place", "-m", str(ir_path), "--testbed", "--strategy", "heavy_ops", "--no-measure", *args]) == 2
    err = capsys.readouterr().err
    assert text in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_places_and_times_a_dynamic_model_at_the_given_shape(dynamic_ir_path, capsys):
    assert main(["place", "-m", str(dynamic_ir_path), "--testbed", "--strategy", "heavy_ops", "-niter", "3",
                 "--shape", "x[2,24,32]"]) == 0
    out = capsys.readouterr().out
    assert "measured latency" in out or "ms" in out
    assert main(["place", "-m", str(dynamic_ir_path), "--testbed", "--no-measure", "--shape", "x[2,24,16]"]) == 2
    assert "axis 2 is 16" in capsys.readouterr().err
