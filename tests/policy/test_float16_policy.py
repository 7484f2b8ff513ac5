"""The shipped policy stores its weights as float16 rounded to 8 mantissa bits: it places as the float32 weights do.

``tests/policy/data/hsdag_v4_float32.npz`` is the shipped policy as training exported it (float32, byte for byte).
The shipped ``hsdag_v4.npz`` must be exactly that file's weights rounded to float16 and then to 8 of its 10 mantissa
bits (``convert_policy_file(..., weight_dtype="float16", mantissa_bits=8)``: the wheel's largest file, deflated
below the first policy's at two and a half times the weights). The forward pass on the upcast weights is compared
with the float32 one on the zoo-like synthetic graphs, on members of the lab's graph family (the held-out seeds
and every fortieth training seed), under the test stand-in cost model and under the simulated suite platforms
(their cost models are what the prior hands the policy on real devices).

Its placer runs four passes, each reading where the last one put the groups, so a rounding that tips one group
at a near-tie (its two best logits closer than the rounding moves them) can move others in the passes after
it: placements are not identical by construction, as the one-pass v1's were. What is required is what a user
would see: almost every case identical (measured for hsdag_v4: 160 of 161 graph-family and synthetic cases, the
other 1.007x; 19 of 21 zoo cases, both others BERT-base, 4 and 10 of its 501 nodes moved, 1.008x and 1.000x; 58 of
60 rows of the headroom table after legalising, one 1.024x and one 0.989x: docs/bench/policy_precision.md), and no
case that differs slower by more than 2 % on the cost model it was placed on (the headroom rows are not in this
test: they are the precision bench's). The count allows two cases in a set (v3 had one: 160 of 161, 21 of 21):
what a user would feel is the latency bound, and v4's BERT-base sits at a near-tie on two platforms, where the
next mantissa bit would cost the wheel 16 KB it does not have.
"""

from __future__ import annotations

import lzma

from pathlib import Path

import numpy as np
import pytest

from ov_autoplace.costmodel.simulator import Simulator
from ov_autoplace.costmodel.suite import load_suite
from ov_autoplace.errors import PolicyFormatError
from ov_autoplace.policy import NumpyHSDAGPolicy
from ov_autoplace.policy.policy_file import load_policy_file
from ov_autoplace_lab.policy_export import rounded_mantissa, convert_policy_file, write_policy_file
from ov_autoplace.policy.pretrained import PRETRAINED_POLICY
from tests import synthetic_graphs
from tests.stand_in_costs import prepared_graph, stand_in_cost_model

FLOAT32_REFERENCE = Path(__file__).resolve().parent / "data" / "hsdag_v4_float32.npz"
#: Cases whose placement may differ from the float32 one (a near-tie tipped; two cases in any set, else this share),
#: and how much slower one may be.
MAX_DIFFERING, MAX_DIFFERING_SHARE, MAX_SLOWER = 2, 0.03, 1.02


@pytest.fixture(scope="module")
def twins() -> tuple[NumpyHSDAGPolicy, NumpyHSDAGPolicy]:
    """(the float32 reference, the shipped float16 policy)."""
    return NumpyHSDAGPolicy.load(FLOAT32_REFERENCE), NumpyHSDAGPolicy.load(PRETRAINED_POLICY)


def _cost_models(graph, suite):
    yield "stand-in CPU,CPUF", stand_in_cost_model(graph, ("CPU", "CPUF"))
    yield "stand-in CPU,CPUF,NPU", stand_in_cost_model(graph, ("CPU", "CPUF", "NPU"))
    for name, platform in suite.items():
        yield name, platform.cost_model(graph)


def _placement_differences(twins, graphs) -> tuple[int, list[str], list[str]]:
    """(cases compared, a line per case whose placement differs, the lines of those slower beyond MAX_SLOWER)."""
    reference, shipped = twins
    compared, differences, slower, suite = 0, [], [], load_suite()
    for name, graph in graphs:
        for cost_name, cost in _cost_models(graph, suite):
            want = reference.forward(reference.inputs(graph, cost)).node_placement()
            got = shipped.forward(shipped.inputs(graph, cost)).node_placement()
            compared += 1
            if np.array_equal(want, got):
                continue
            simulator = Simulator(cost, graph)
            ratio = simulator.feasible_ms(got) / simulator.feasible_ms(want)
            line = (f"{name} under {cost_name}: {int((want != got).sum())} of {graph.num_nodes} nodes on another "
                    f"device, {ratio:.3f}x the float32 placement's latency")
            differences.append(line)
            if not ratio <= MAX_SLOWER:
                slower.append(line)
    return compared, differences, slower


def _assert_places_alike(twins, graphs):
    compared, differences, slower = _placement_differences(twins, graphs)
    assert compared == 7 * len(graphs)
    assert len(differences) <= max(MAX_DIFFERING, MAX_DIFFERING_SHARE * compared) and slower == [], differences


def test_the_shipped_file_is_the_float32_weights_rounded_to_8_mantissa_bits(tmp_path):
    from ov_autoplace_lab.training import SHIPPED_MANTISSA_BITS, write_shipped_policy

    reference, shipped = load_policy_file(FLOAT32_REFERENCE), load_policy_file(PRETRAINED_POLICY)
    with np.load(PRETRAINED_POLICY, allow_pickle=False) as stored:  # float16 as two packed byte planes
        assert stored.files == ["__header__", "__high_bytes__", "__low_bytes__"]
        assert stored["__high_bytes__"].dtype == np.uint8 and stored["__high_bytes__"].size < 0.75 * 131_970  # xz
        assert stored["__low_bytes__"].size == 131_970 * 6 // 8 + 1  # 6 of each low byte's 8 bits kept
    patterns = np.concatenate([w.astype("<f2").view(np.uint16).reshape(-1) for w in shipped.weights.values()])
    assert not (patterns & 0b11).any()  # the two mantissa bits dropped
    assert reference.header["weight_dtype"] == "float32" and "mantissa_bits" not in reference.header
    assert shipped.header["weight_dtype"] == "float16" and shipped.header["weight_layout"] == "packed_planes"
    assert shipped.header["mantissa_bits"] == SHIPPED_MANTISSA_BITS
    assert shipped.config == reference.config
    # the metadata is training's (its start named as the recipe named it then: "pretrained", the v3 shipped when it
    # trained; the lab keeps that file as V3_POLICY), without its curve of one-pass misses per 500 steps, which the
    # float32 export keeps and the wheel has no room for: what the recipe's write_shipped_policy writes, byte for
    # byte the file rule 3 chose (benchmarks/pretrain.py --amortise)
    assert reference.header["metadata"]["init"] == shipped.header["metadata"]["init"] == "pretrained"
    curve = reference.header["metadata"]["one_pass_misses"]
    assert len(curve) == 13 and "one_pass_misses" not in shipped.header["metadata"]
    trained = {k: v for k, v in reference.header["metadata"].items() if k != "one_pass_misses"}
    assert shipped.header["metadata"] == {**trained, "converted_from": "float32"}
    recipe = write_shipped_policy(FLOAT32_REFERENCE, tmp_path / "recipe.npz")
    assert recipe.read_bytes() == PRETRAINED_POLICY.read_bytes()
    recipe = load_policy_file(recipe)
    assert recipe.header["mantissa_bits"] == SHIPPED_MANTISSA_BITS == 8
    assert all(np.array_equal(recipe.weights[name], w) for name, w in shipped.weights.items())
    converted = load_policy_file(convert_policy_file(FLOAT32_REFERENCE, tmp_path / "again.npz", weight_dtype="float16",
                                                     mantissa_bits=SHIPPED_MANTISSA_BITS))
    assert set(shipped.weights) == set(reference.weights) == set(converted.weights)
    for name, weight in converted.weights.items():
        assert shipped.weights[name].dtype == np.float32
        assert np.array_equal(shipped.weights[name], weight), name
    # half the float32 weights' bytes, and the header: the file is not the export with its curve (2 KB) kept
    weights_bytes = 4 * sum(w.size for w in reference.weights.values())
    assert PRETRAINED_POLICY.stat().st_size < 0.5 * weights_bytes + 8_000 < FLOAT32_REFERENCE.stat().st_size / 2 + 8_000


def test_the_shipped_policy_places_the_synthetic_graphs_and_the_graph_family_as_float32_does(twins):
    from ov_autoplace_lab.training.graph_family import HELD_OUT_SEEDS, TRAIN_SEEDS, build

    synthetic = {**synthetic_graphs.PLACEMENT_GRAPHS, "long_chain": lambda: synthetic_graphs.long_chain(60),
                 "dynamic_attention": synthetic_graphs.dynamic_attention, "gather_model": synthetic_graphs.gather_model}
    graphs = [(name, prepared_graph(make())[1]) for name, make in synthetic.items()]
    graphs += [(f"graph_family seed {seed}", prepared_graph(build(seed))[1])
               for seed in (*HELD_OUT_SEEDS, *TRAIN_SEEDS[::40])]
    _assert_places_alike(twins, graphs)


@pytest.mark.slow
@pytest.mark.zoo
def test_the_shipped_policy_places_the_zoo_as_float32_does(twins):
    from tests.conftest import zoo_available

    if not zoo_available():
        pytest.skip("zoo extras not installed: pip install -e './lab[zoo]'")
    from ov_autoplace_lab import models as zoo

    _assert_places_alike(twins, [(name, prepared_graph(zoo.load(name))[1]) for name in zoo.ZOO])


def test_conversion_round_trips_and_refuses_what_float16_cannot_hold(tmp_path):
    exported = load_policy_file(FLOAT32_REFERENCE)
    half = convert_policy_file(FLOAT32_REFERENCE, tmp_path / "half.npz", weight_dtype="float16")
    back = load_policy_file(convert_policy_file(half, tmp_path / "back.npz", weight_dtype="float32"))
    assert back.header["weight_dtype"] == "float32" and back.header["metadata"]["converted_from"] == "float32"
    for name, weight in load_policy_file(half).weights.items():
        assert np.array_equal(back.weights[name], weight)
    too_big = {**exported.weights, "placer.out.bias": np.array([1e5], dtype=np.float32)}
    with pytest.raises(PolicyFormatError, match="placer.out.bias.*float16's range"):
        write_policy_file(tmp_path / "big.npz", exported.config, too_big, weight_dtype="float16")
    with pytest.raises(PolicyFormatError, match="weight_dtype 'int8'"):
        write_policy_file(tmp_path / "int8.npz", exported.config, exported.weights, weight_dtype="int8")


def test_fewer_mantissa_bits_round_to_nearest_even_and_deflate_smaller(tmp_path):
    import zlib

    exported = load_policy_file(FLOAT32_REFERENCE)
    half = write_policy_file(tmp_path / "half.npz", exported.config, exported.weights, weight_dtype="float16")
    short = write_policy_file(tmp_path / "m8.npz", exported.config, exported.weights, weight_dtype="float16",
                              mantissa_bits=8)
    rounded = load_policy_file(short)
    assert rounded.header["mantissa_bits"] == 8 and "mantissa_bits" not in load_policy_file(half).header
    for name, weight in load_policy_file(half).weights.items():  # the float16 values, rounded once more
        mantissa, exponent = np.frexp(weight.astype(np.float64))  # |mantissa| in [0.5, 1): 9 significant bits
        want = np.ldexp(np.round(mantissa * 2 ** 9), exponent - 9)  # np.round: ties to even
        normal = np.abs(weight) >= 2.0 ** -14  # subnormals keep float16's fixed spacing; checked below
        assert np.array_equal(rounded.weights[name][normal], want[normal]), name
    tiny = {**exported.weights, "placer.out.bias": np.array([3 * 2.0 ** -24, 1.0 + 3 * 2.0 ** -10], np.float32)}
    tiny_file = write_policy_file(tmp_path / "tiny.npz", exported.config, tiny, weight_dtype="float16", mantissa_bits=8)
    # 3 units of 2**-24 -> 4 (ties to even on a spacing of 4 units); 1 + 3/1024 -> 1 + 4/1024 (spacing 1/256)
    assert load_policy_file(tiny_file).weights["placer.out.bias"].tolist() == [4 * 2.0 ** -24, 1.0 + 2.0 ** -8]
    assert len(zlib.compress(short.read_bytes(), 6)) < 0.9 * len(zlib.compress(half.read_bytes(), 6))
    for dtype, bits in (("float16", 0), ("float16", 11), ("float16", 8.0), ("float32", 8)):
        with pytest.raises(PolicyFormatError, match=f"mantissa_bits={bits!r} with weight_dtype '{dtype}'"):
            write_policy_file(tmp_path / "bad.npz", exported.config, exported.weights, weight_dtype=dtype,
                              mantissa_bits=bits)


def test_a_missing_or_short_byte_plane_is_refused_by_name(tmp_path):
    with np.load(PRETRAINED_POLICY, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    short = {**arrays, "__low_bytes__": arrays["__low_bytes__"][:-1]}
    missing = {name: a for name, a in arrays.items() if name != "__high_bytes__"}
    extra = {**arrays, "stray": np.zeros(3, np.uint8)}
    for kind, damaged, message in (("short", short, "do not hold the 131970 float16"),
                                   ("missing", missing, "'__high_bytes__'"), ("extra", extra, "'stray'")):
        path = tmp_path / f"{kind}.npz"
        np.savez(path, **damaged)
        with pytest.raises(PolicyFormatError, match=message):
            load_policy_file(path)


def test_packed_planes_hold_the_byte_planes_exactly_and_refuse_damage_by_name(tmp_path):
    """Rounded float16 weights are packed (the high plane as xz, the low plane without its zeroed bits); the
    weights read back are those of the unpacked byte planes, bit for bit, and a damaged plane is named."""
    exported = load_policy_file(FLOAT32_REFERENCE)
    for bits in (1, 5, 8, 9):
        packed = load_policy_file(write_policy_file(tmp_path / f"m{bits}.npz", exported.config, exported.weights,
                                                    weight_dtype="float16", mantissa_bits=bits))
        rounded = {name: np.asarray(w, np.float32).astype(np.float16) for name, w in exported.weights.items()}
        rounded = {name: rounded_mantissa(w, bits).astype(np.float32) for name, w in rounded.items()}
        assert packed.header["weight_layout"] == "packed_planes"
        assert all(np.array_equal(packed.weights[name], w) for name, w in rounded.items()), bits
    with np.load(PRETRAINED_POLICY, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    longer = np.frombuffer(lzma.compress(bytes(131_971)), np.uint8)
    for kind, high, message in (("not_xz", arrays["__high_bytes__"][::-1], "not xz data"),
                                ("inflates_past_its_weights", longer, "holds more .or less. than the 131970")):
        path = tmp_path / f"{kind}.npz"
        np.savez(path, **{**arrays, "__high_bytes__": high})
        with pytest.raises(PolicyFormatError, match=message):
            load_policy_file(path)


def test_weights_of_another_dtype_are_refused_by_name(tmp_path):
    with np.load(FLOAT32_REFERENCE, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays["input_proj.bias"] = arrays["input_proj.bias"].astype(np.float64)
    path = tmp_path / "float64.npz"
    np.savez(path, **arrays)
    with pytest.raises(PolicyFormatError, match=r"\['input_proj.bias'\] are stored as float64"):
        load_policy_file(path)
