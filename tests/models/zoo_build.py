"""A zoo architecture built by name into a fresh zoo directory, checked as every zoo IR must be (static inputs, a
connected graph of more than a given size)."""

from __future__ import annotations

import openvino as ov
import pytest

from ov_autoplace_lab import models as zoo


def built_static(name: str, tmp_path, monkeypatch, *, min_nodes: int) -> tuple[ov.Model, int]:
    """``(model, nodes)`` of ``name`` built under ``tmp_path`` (skipped without torch)."""
    pytest.importorskip("torch")
    monkeypatch.setenv(zoo.ENV_VAR, str(tmp_path))
    model = zoo.load(name)
    assert all(p.get_partial_shape().is_static for p in model.inputs)
    nodes, edges = zoo.graph_counts(model)
    assert nodes > min_nodes and edges >= nodes - 1
    return model, nodes
