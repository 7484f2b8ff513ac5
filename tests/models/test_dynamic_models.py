"""The zoo and its dynamic-shape variants, placed by the default HSDAG policy with no fallback.

Dynamic batch for the CNNs, dynamic batch and sequence length for BERT
(``ov_autoplace_lab.models.dynamic_models``). Each model is compiled once by
``compile_model`` (placed on its static clone, compiled dynamic) and its
outputs are compared with a plain CPU compile at every shape in
``DYNAMIC_ZOO`` (batch 1 and 4; BERT also sequence lengths 32 and 200):
within 1e-3 of the output's scale. Both testbed devices are f32 here, so a
placement changes summation order only.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ov_autoplace as oa
from tests.conftest import ZOO_MODELS, zoo_available

pytestmark = [pytest.mark.slow, pytest.mark.zoo,
              pytest.mark.skipif(not zoo_available(), reason="zoo extras not installed: pip install -e '.[zoo]'")]


def _inputs(name: str, shapes: dict[str, list[int]], rng: np.random.Generator) -> dict[str, np.ndarray]:
    if name == "bert_base":  # token ids and mask values valid for any vocabulary
        return {k: rng.integers(0, 2, size=v).astype(np.int64) for k, v in shapes.items()}
    return {k: rng.standard_normal(v).astype(np.float32) for k, v in shapes.items()}


@pytest.mark.parametrize("variant", ["static", "dynamic"])
@pytest.mark.parametrize("name", ZOO_MODELS)
def test_policy_places_without_fallback_and_outputs_match_at_every_shape(f32_testbed, caplog, name, variant):
    from ov_autoplace_lab import models as zoo
    from ov_autoplace_lab.models.dynamic_models import DYNAMIC_ZOO, load_dynamic

    core = f32_testbed.core
    model = load_dynamic(name, core) if variant == "dynamic" else zoo.load(name, core)
    shapes_to_check = DYNAMIC_ZOO[name] if variant == "dynamic" else DYNAMIC_ZOO[name][:1]
    if variant == "static" and name == "bert_base":
        shapes_to_check = [{"input_ids": [1, 128], "attention_mask": [1, 128]}]  # its traced shape
    # profile="now": measured and placed by the policy (identical f32 devices would otherwise take the
    # one-device fast path without placing anything).
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        compiled = oa.compile_model(model, f32_testbed.hetero, core=core, profile="now")
    assert "falling back" not in caplog.text, caplog.text[-2000:]
    assert "placement source: profile" in caplog.text or "placement source: cache" in caplog.text
    assert compiled.inputs[0].get_partial_shape().is_dynamic == (variant == "dynamic")
    reference = core.compile_model(model, "CPU")
    rng = np.random.default_rng(0)
    for shapes in shapes_to_check:
        inputs = _inputs(name, shapes, rng)
        got, want = compiled(inputs)[0], reference(inputs)[0]
        assert got.shape == want.shape
        scale = float(np.abs(want).max())
        assert float(np.abs(got - want).max()) <= 1e-3 * scale, f"{name} {variant} at {shapes}"


@pytest.mark.parametrize("name", ZOO_MODELS)
def test_split_placement_carried_over_to_dynamic_variant(f32_testbed, caplog, name):
    """A placement that really splits (heavy ops on one device) keeps outputs right at every shape."""
    from ov_autoplace_lab.models.dynamic_models import DYNAMIC_ZOO, load_dynamic

    core = f32_testbed.core
    model = load_dynamic(name, core)
    # Up to 16 submodels: at 8 the legalizer merges BERT's alternating heavy/light islands into one device.
    placement = oa.place(model, f32_testbed.hetero, core=core, strategy="heavy_ops", max_submodels=16)
    assert min(placement.counts_per_device().values()) > 0, placement.counts_per_device()
    with caplog.at_level(logging.WARNING, logger="ov_autoplace"):
        compiled = oa.compile_placement(model, placement, core=core)
    reference = core.compile_model(model, "CPU")
    rng = np.random.default_rng(1)
    for shapes in DYNAMIC_ZOO[name]:
        inputs = _inputs(name, shapes, rng)
        got, want = compiled(inputs)[0], reference(inputs)[0]
        assert float(np.abs(got - want).max()) <= 1e-3 * float(np.abs(want).max()), f"{name} at {shapes}"
