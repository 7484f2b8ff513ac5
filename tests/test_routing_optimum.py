"""optimum-intel, unchanged, through the route: it compiles on its own module-level Core, and gets ov_autoplace.

A two-layer BERT classifier with random weights, exported by optimum-intel as users export theirs. Slow tier: the
export runs torch.
"""

from __future__ import annotations

import importlib.util
import logging

import numpy as np
import pytest

import ov_autoplace as oa
from ov_autoplace import api

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("optimum") is None, reason="optimum-intel not installed "
                                 "(pip install './lab[llm]')")]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, num_labels=3)
    path = tmp_path_factory.mktemp("tiny_bert")
    BertForSequenceClassification(config).eval().save_pretrained(path)
    return path


def _logits(model_dir, device: str, **kw) -> np.ndarray:
    from optimum.intel import OVModelForSequenceClassification

    model = OVModelForSequenceClassification.from_pretrained(model_dir, export=True, device=device, **kw)
    ids = np.arange(1, 17, dtype=np.int64)[None, :] % 256
    out = model(input_ids=ids, attention_mask=np.ones_like(ids), token_type_ids=np.zeros_like(ids))
    return np.asarray(out.logits)


def test_optimum_intel_compiles_through_the_route_with_identical_outputs(bert_dir, monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path))
    routed = []
    real = api.compile_model
    monkeypatch.setattr(api, "compile_model", lambda *a, **k: routed.append(a[1]) or real(*a, **k))
    plain = _logits(bert_dir, "CPU")
    assert routed == []
    with oa.routed_openvino():
        through = _logits(bert_dir, "CPU")
    assert routed == ["CPU"], routed  # optimum's own core.compile_model reached ov_autoplace, once
    np.testing.assert_array_equal(through, plain)  # one device: exactly the plain compile


def test_optimum_intel_on_the_apps_heterogeneous_devices(bert_dir, f32_testbed, monkeypatch, tmp_path, caplog):
    """route_openvino(core=...) lends optimum's private core the app's virtual device (CPUF)."""
    monkeypatch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path))
    plain = _logits(bert_dir, "CPU", ov_config={"INFERENCE_PRECISION_HINT": "f32"})
    with caplog.at_level(logging.INFO, logger="ov_autoplace"), oa.routed_openvino(core=f32_testbed.core):
        through = _logits(bert_dir, f32_testbed.hetero)
    assert any(r.getMessage().startswith("placement source: ") for r in caplog.records)
    np.testing.assert_allclose(through, plain, rtol=1e-4, atol=1e-4)  # both f32 devices


def test_an_llm_loaded_by_optimum_intel_generates_through_the_route(f32_testbed, monkeypatch, tmp_path):
    """The one-line adoption for an LLM app: ``OVModelForCausalLM.from_pretrained(..., device=HETERO string)`` inside
    the route, unchanged. Its compile reaches ov_autoplace (a pipeline split by pins here, so both devices run) and
    ``generate()`` gives the plain compile's tokens, both f32."""
    import torch
    from optimum.intel import OVModelForCausalLM

    from tests.llm_models import export_tiny

    monkeypatch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path / "cache"))
    directory = export_tiny("llama", tmp_path)
    prompt = torch.tensor([[1, 5, 9, 33, 7]])
    greedy = dict(attention_mask=torch.ones_like(prompt), max_new_tokens=10, do_sample=False)
    reference = OVModelForCausalLM.from_pretrained(directory, device="CPU",
                                                   ov_config={"INFERENCE_PRECISION_HINT": "f32"})
    second = f32_testbed.devices[1]
    with oa.routed_openvino(core=f32_testbed.core, pins={"*layers.2.*": second, "*layers.3.*": second}):
        routed = OVModelForCausalLM.from_pretrained(directory, device=f32_testbed.hetero)
        got = routed.generate(prompt, **greedy).tolist()
    assert set(routed.request.get_compiled_model().get_property("EXECUTION_DEVICES")) == set(f32_testbed.devices)
    assert got == reference.generate(prompt, **greedy).tolist()


@pytest.mark.parametrize("options", [{}, {"profile": "now"}, {"pins": {"*decoder.block.1.*": "CPUF"}}],
                         ids=["default", "profile_now", "decoder_pins"])
def test_an_encoder_decoder_loaded_by_optimum_intel_generates_through_the_route(options, f32_testbed, monkeypatch,
                                                                              tmp_path, caplog):
    """A T5 exported by optimum-intel is two models: the encoder and a stateful decoder whose cross-attention caches
    are variables initialized from the encoder's states (9 variables for 2 layers), a ReadValue initializer that is
    a computation, not an empty cache. Both compile through the route; ``generate()`` gives the plain compile's.
    Pins naming the decoder's last block go to the decoder alone (the encoder, which has no such node, raised a
    PinError before), and they hold in the decoder."""
    import torch
    from optimum.intel import OVModelForSeq2SeqLM
    from transformers import T5Config, T5ForConditionalGeneration

    monkeypatch.setenv("OV_AUTOPLACE_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)
    config = T5Config(vocab_size=256, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    T5ForConditionalGeneration(config).eval().save_pretrained(tmp_path / "hf")
    OVModelForSeq2SeqLM.from_pretrained(tmp_path / "hf", export=True, compile=False).save_pretrained(tmp_path / "ov")
    decoder = f32_testbed.core.read_model(tmp_path / "ov" / "openvino_decoder_model.xml")
    assert len(decoder.get_variables()) > 0
    ids = torch.tensor([[5, 9, 33, 7, 12, 1]])
    greedy = dict(attention_mask=torch.ones_like(ids), max_new_tokens=10, min_new_tokens=10, do_sample=False)
    reference = OVModelForSeq2SeqLM.from_pretrained(tmp_path / "ov", device="CPU",
                                                    ov_config={"INFERENCE_PRECISION_HINT": "f32"})
    routed = []
    real = api.compile_model
    monkeypatch.setattr(api, "compile_model", lambda *a, **k: routed.append(a[1]) or real(*a, **k))
    with caplog.at_level(logging.INFO, logger="ov_autoplace"), oa.routed_openvino(core=f32_testbed.core, **options):
        app = OVModelForSeq2SeqLM.from_pretrained(tmp_path / "ov", device=f32_testbed.hetero)
        got = app.generate(ids, **greedy)
    assert routed == [f32_testbed.hetero] * 2  # the encoder and the decoder
    assert got.tolist() == reference.generate(ids, **greedy).tolist()
    if "pins" in options:
        assert "1 pin(s) name no node of this model" in caplog.text  # the encoder
        # the pinned block runs on CPUF (the legalizer may take the rest of the decoder there: its state rules)
        def devices(part):  # optimum-intel holds the encoder's CompiledModel, the decoder's InferRequest
            compiled = getattr(part.request, "get_compiled_model", lambda: part.request)()
            return compiled.get_property("EXECUTION_DEVICES")

        assert "CPUF" in devices(app.decoder) and devices(app.encoder) == ["CPU"]

