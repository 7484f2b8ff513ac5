"""Tests of the model zoo (models/).

The fast tests use a tiny hand-made graph in place of the torch conversion.
The zoo builds themselves are slow (about 10-20 s each) and write to the real
cache directory on purpose, so an IR built once is reused by later runs.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import openvino as ov
import pytest

from ov_autoplace_lab import models as zoo

REPO = pathlib.Path(__file__).resolve().parents[2]

# Counts measured with torch 2.14.1 / torchvision 0.29.1 / transformers 5.23.0 /
# openvino 2026.4.1; the tolerance absorbs small converter changes.
EXPECTED_NODES = {"inception_v3": 316, "resnet50": 182, "bert_base": 559}
TOLERANCE = 0.15


def _tiny_model() -> ov.Model:
    """x -> relu -> (add(relu, relu), multiply(relu, const)) -> concat."""
    x = ov.opset13.parameter([1, 4], ov.Type.f32, name="x")
    r = ov.opset13.relu(x)
    a = ov.opset13.add(r, r)          # relu output feeds two inputs here
    c = ov.opset13.constant(np.ones((1, 4), np.float32))
    m = ov.opset13.multiply(r, c)
    cat = ov.opset13.concat([a, m], axis=1)
    return ov.Model([cat], [x], "tiny")


def test_graph_counts_on_tiny_model():
    # ops: x, relu, add, const, multiply, concat, result = 7
    # edges: x->relu, relu->add(x2), relu->multiply, const->multiply,
    #        add->concat, multiply->concat, concat->result = 8
    assert zoo.graph_counts(_tiny_model()) == (7, 8)


def test_cache_dir_default_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv(zoo.ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert zoo.cache_dir() == (tmp_path / "home" / ".cache" / "ov_autoplace" / "zoo").resolve()
    monkeypatch.setenv(zoo.ENV_VAR, str(tmp_path / "elsewhere"))
    assert zoo.cache_dir() == (tmp_path / "elsewhere").resolve()


def test_cache_dir_refuses_the_repo(monkeypatch):
    monkeypatch.setenv(zoo.ENV_VAR, str(REPO / "models" / "cache"))
    with pytest.raises(ValueError, match="inside the repository"):
        zoo.cache_dir()


@pytest.fixture
def fake_convert(monkeypatch, tmp_path):
    """Point the cache at tmp_path and replace the torch conversion."""
    monkeypatch.setenv(zoo.ENV_VAR, str(tmp_path))
    calls = []

    def convert(name):
        calls.append(name)
        return _tiny_model(), {"x": [1, 4]}, ["openvino", "torch", "transformers"]

    monkeypatch.setattr(zoo, "_convert", convert)
    return calls


def test_build_writes_ir_and_sidecar_and_reuses_it(fake_convert, tmp_path):
    xml = zoo.build("resnet50")
    assert xml == tmp_path.resolve() / "resnet50.xml"
    assert xml.with_suffix(".bin").exists()
    meta = json.loads(xml.with_suffix(".json").read_text())
    assert (meta["nodes"], meta["edges"]) == (7, 8)
    assert meta["inputs"] == {"x": [1, 4]}
    assert set(meta["versions"]) >= {"openvino", "torch", "torchvision", "transformers"}
    assert zoo.graph_counts(ov.Core().read_model(xml)) == (7, 8)

    assert zoo.build("resnet50") == xml and fake_convert == ["resnet50"]  # reused
    zoo.build("resnet50", force=True)
    assert fake_convert == ["resnet50", "resnet50"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["resnet50.bin", "resnet50.json", "resnet50.xml"]


def test_an_ir_built_by_other_library_versions_is_built_again_unless_nothing_here_can_build(fake_convert, tmp_path,
                                                                                             monkeypatch):
    xml = zoo.build("bert_base")
    meta = json.loads(xml.with_suffix(".json").read_text())
    here = meta["versions"]
    other = {**here, "transformers": "4.57.6"}  # as the LLM venv's pin would have built it
    xml.with_suffix(".json").write_text(json.dumps({**meta, "versions": other}))
    can_build = {**here, "torch": here["torch"] or "2.14.1"}
    monkeypatch.setattr(zoo, "_versions", lambda: can_build)
    assert zoo.build("bert_base") == xml and fake_convert == ["bert_base", "bert_base"]  # built again
    assert json.loads(xml.with_suffix(".json").read_text())["versions"] == can_build
    assert zoo.build("bert_base") == xml and len(fake_convert) == 2  # now current: reused
    monkeypatch.setattr(zoo, "_versions", lambda: {**can_build, "torchvision": "0.30.0"})
    assert zoo.build("bert_base") == xml and len(fake_convert) == 2  # not one of its libraries: reused
    xml.with_suffix(".json").write_text(json.dumps({**meta, "versions": other}))
    monkeypatch.setattr(zoo, "_versions", lambda: {**here, "torch": None})  # a runtime-only environment
    assert zoo.build("bert_base") == xml and len(fake_convert) == 2  # uses what is cached


def test_crashed_build_leaves_no_partial_ir(fake_convert, tmp_path, monkeypatch):
    def crash(model, path, **kwargs):
        pathlib.Path(path).write_text("<net half written")
        raise KeyboardInterrupt

    monkeypatch.setattr(zoo.ov, "save_model", crash)
    with pytest.raises(KeyboardInterrupt):
        zoo.build("bert_base")
    assert list(tmp_path.iterdir()) == []


def test_unknown_model_is_rejected():
    with pytest.raises(ValueError, match="unknown zoo model"):
        zoo.build("alexnet")


@pytest.mark.parametrize("name", zoo.ZOO)
def test_missing_torch_gives_install_hint(name, tmp_path):
    # A fresh interpreter where "import torch" fails as if it were absent.
    code = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None
        from ov_autoplace_lab import models as zoo
        try:
            zoo.build({name!r})
        except ImportError as exc:
            print("IMPORTERROR:", exc)
            sys.exit(0)
        sys.exit("build did not raise ImportError")
    """)
    env = dict(os.environ, **{zoo.ENV_VAR: str(tmp_path)})
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "'torch'" in proc.stdout and "pip install 'ov-autoplace-lab[zoo]'" in proc.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.zoo
@pytest.mark.parametrize("name", zoo.ZOO)
def test_zoo_model_builds_loads_and_infers(name):
    for module in ("torch", "torchvision", "transformers"):
        pytest.importorskip(module)
    # Default (persistent) cache on purpose: the build is reused across runs.
    xml = zoo.build(name)
    assert xml == zoo.cache_dir() / f"{name}.xml"
    model = ov.Core().read_model(xml)

    nodes, edges = zoo.graph_counts(model)
    expected = EXPECTED_NODES[name]
    assert abs(nodes - expected) <= TOLERANCE * expected, (name, nodes, expected)
    assert edges >= nodes - 1  # every op but the inputs has a producer
    meta = zoo.info(name)
    assert (meta["nodes"], meta["edges"]) == (nodes, edges)

    for port in model.inputs:
        assert port.get_partial_shape().is_static, (name, port.get_any_name())
    assert {p.get_any_name(): list(p.get_shape()) for p in model.inputs} == meta["inputs"]

    # One CPU inference with random data of the right dtype.
    rng = np.random.default_rng(0)
    feeds = {}
    for port in model.inputs:
        shape = list(port.get_shape())
        if port.get_element_type() == ov.Type.i64:
            feeds[port.get_any_name()] = rng.integers(0, 1000, shape, dtype=np.int64)
        else:
            feeds[port.get_any_name()] = rng.standard_normal(shape, dtype=np.float32)
    if "attention_mask" in feeds:
        feeds["attention_mask"][:] = 1
    result = ov.Core().compile_model(model, "CPU")(feeds)
    for value in result.values():
        assert np.isfinite(value).all()
