"""The stateful decoders built with OpenVINO opsets (``models/decoder_models.py``): shaped like optimum-intel's
exports, compiled and generated from on the CPU plugin; the slow test compares one with an optimum-intel export."""

from __future__ import annotations

import collections

import numpy as np
import openvino as ov
import pytest

from ov_autoplace.costmodel.memory_need import memory_need
from ov_autoplace.model.generation import is_generative
from ov_autoplace_lab.models.decoder_models import DECODERS, TINY, DecoderSpec, build_decoder, load_decoder
from tests.llm_models import generate

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def _histogram(model: ov.Model) -> collections.Counter:
    return collections.Counter(op.get_type_name() for op in model.get_ordered_ops())


@pytest.fixture(scope="module")
def tiny():
    return build_decoder(TINY)


def test_the_tiny_decoder_is_stateful_as_an_optimum_intel_export(tiny):
    assert is_generative(tiny)
    assert {p.get_any_name(): (str(p.get_partial_shape()), p.get_element_type()) for p in tiny.inputs} == {
        "input_ids": ("[?,?]", ov.Type.i64), "attention_mask": ("[?,?]", ov.Type.i64),
        "position_ids": ("[?,?]", ov.Type.i64), "beam_idx": ("[?]", ov.Type.i32)}
    assert str(tiny.output("logits").get_partial_shape()) == f"[?,?,{TINY.vocab}]"
    # per layer a K and a V variable [?, kv_heads, ?, head_size], read, reordered by beam_idx, extended, assigned
    infos = [v.get_info() for v in tiny.get_variables()]
    assert len(infos) == 2 * TINY.layers
    assert all(str(i.data_shape) == f"[?,{TINY.kv_heads},?,{TINY.head_size}]" for i in infos)
    for read in (op for op in tiny.get_ordered_ops() if op.get_type_name() == "ReadValue"):
        (gather,) = [t.get_node() for t in read.output(0).get_target_inputs()]
        assert gather.get_type_name() == "Gather" and gather.input_value(1).get_any_name() == "beam_idx"
    counts = _histogram(tiny)
    assert counts["ScaledDotProductAttention"] == TINY.layers and counts["Swish"] == TINY.layers
    assert counts["ReadValue"] == counts["Assign"] == 2 * TINY.layers


def test_the_tiny_decoder_generates_on_the_cpu_and_its_kv_cache_holds_the_past(tiny):
    compiled = ov.Core().compile_model(tiny, "CPU", F32)
    tokens, logits = generate(compiled, [3, 1, 4, 1, 5], 6)  # a prefill of 5 tokens, then 5 decode steps
    assert len(tokens) == 11 and all(0 <= t < TINY.vocab for t in tokens)
    # one prefill of the same tokens gives the logits the decode steps gave from the cache
    request = compiled.create_infer_request()
    request.reset_state()
    n = len(tokens) - 1
    full = request.infer({"input_ids": np.array([tokens[:n]]), "attention_mask": np.ones((1, n), np.int64),
                          "position_ids": np.arange(n)[None], "beam_idx": np.zeros(1, np.int32)})["logits"][0]
    for step, got in enumerate(logits):
        np.testing.assert_allclose(got, full[4 + step], atol=1e-4)


def test_two_builds_of_a_decoder_name_their_nodes_alike():
    """The decode clones ``generation_costs`` matches by name come from the same model; a placement carries over."""
    names = [[op.get_friendly_name() for op in build_decoder(TINY).get_ordered_ops()] for _ in range(2)]
    assert names[0] == names[1] and len(set(names[0])) == len(names[0])


def test_the_decoder_set_has_two_families_three_sizes_each_and_one_beyond_a_quarter_gigabyte():
    by_family = collections.Counter(spec.family for spec in DECODERS.values())
    assert by_family == {"llama": 3, "qwen2": 3}
    assert any(spec.parameters() * 4 > 0.25 * 2 ** 30 for spec in DECODERS.values())
    assert all(spec.kv_heads < spec.heads and spec.hidden % spec.heads == 0 for spec in DECODERS.values())
    with pytest.raises(ValueError, match="unknown decoder 'x'.*llama_dec_s"):
        load_decoder("x")


def test_the_qwen2_family_has_biased_qkv_and_the_parameter_count_is_the_graphs():
    spec = DecoderSpec("qwen2", layers=2, hidden=32, heads=4, kv_heads=2, intermediate=64, vocab=97)
    model = build_decoder(spec)
    weights = sum(int(np.prod(op.get_output_shape(0))) for op in model.get_ordered_ops()
                  if op.get_type_name() == "Constant" and op.get_friendly_name().startswith(("model.", "lm_head")))
    assert weights == spec.parameters()
    assert sum(op.get_friendly_name().endswith("_proj.bias") for op in model.get_ordered_ops()) == 3 * spec.layers


def test_the_memory_a_decoder_holds_is_its_weights_and_its_kv_cache(tiny):
    from ov_autoplace_lab.paper_bench.decoder_rows import prefill_graph

    need = memory_need(prefill_graph(tiny), tiny, 256)
    kv = 2 * TINY.layers * TINY.kv_heads * 256 * TINY.head_size * 4
    assert sum(need.state.values()) == kv
    weights = need.unique_bytes - kv  # the f32 weights, plus a few small constants (RoPE frequencies, shapes)
    assert 4 * TINY.parameters() <= weights <= 1.05 * 4 * TINY.parameters()


#: Op types a builder's decoder and optimum-intel's export must have in the same number: the compute, the state,
#: the attention and its mask (shape-only ops - Reshape, Unsqueeze, ShapeOf, Convert - are left to differ).
SAME_COUNT = ("MatMul", "ScaledDotProductAttention", "Swish", "ReadValue", "Assign", "Power", "ReduceMean", "Sqrt",
              "Divide", "Slice", "Sin", "Cos", "LessEqual", "Select", "Parameter", "Result")


@pytest.mark.slow
@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_the_builder_matches_an_optimum_intel_export_of_the_same_geometry(family, tmp_path):
    """In the LLM venv (``. .venv-llm/bin/activate``): optimum-intel 2.2.0's export of
    ``tests/llm_models.export_tiny``'s geometry and the builder's decoder of it have the same compute, state and
    attention ops."""
    pytest.importorskip("optimum.intel")
    from tests.llm_models import LAYERS, export_tiny

    exported = ov.Core().read_model(export_tiny(family, tmp_path) / "openvino_model.xml")
    built = build_decoder(DecoderSpec(family, layers=LAYERS, hidden=64, heads=4, kv_heads=2, intermediate=128,
                                      vocab=512, max_positions=256))
    theirs, ours = _histogram(exported), _histogram(built)
    assert {t: theirs[t] for t in SAME_COUNT} == {t: ours[t] for t in SAME_COUNT}
    assert [str(p.get_partial_shape()) for p in exported.inputs] == [str(p.get_partial_shape()) for p in built.inputs]
    assert sorted(str(v.get_info().data_shape) for v in exported.get_variables()) == sorted(
        str(v.get_info().data_shape) for v in built.get_variables())
    assert abs(len(exported.get_ordered_ops()) - len(built.get_ordered_ops())) <= 0.1 * len(exported.get_ordered_ops())
