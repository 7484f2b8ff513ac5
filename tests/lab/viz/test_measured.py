"""The measured timeline: HETERO's PERF_COUNT per submodel, from a real run on the testbed."""

from __future__ import annotations

import numpy as np
import pytest

import ov_autoplace
from ov_autoplace.graph.arrays import extract_graph
from ov_autoplace.model.prepare import prepare_model
from ov_autoplace.strategies.random_strategy import RandomStrategy
from ov_autoplace_lab.viz.measured import measured_timeline, submodel_times
from ov_autoplace_lab.viz.placed_graph import analyze
from tests import synthetic_graphs as sg


def test_perf_count_entries_are_summed_per_submodel(sim_case):
    case = sim_case(sg.residual(blocks=3))
    placed = analyze(case.graph, case.alternating(6))
    named = [case.graph.names[i] for i in np.flatnonzero(placed.active)]
    first, last = named[0], named[-1]
    times, seen = submodel_times(placed, {f"subgraph0: {first}": 1.5, "subgraph0: inserted_reorder": 0.25,
                                          f"subgraph1: {last}": 2.0})
    assert seen == 2
    assert times[placed.submodel[case.graph.names.index(first)]] == 1.75  # the reorder joins its subgraph's owner
    assert times[placed.submodel[case.graph.names.index(last)]] == 2.0


def test_hetero_partition_replaces_the_estimated_one(sim_case):
    from ov_autoplace_lab.viz.measured import hetero_partition
    from ov_autoplace_lab.viz.placed_graph import repartition

    case = sim_case(sg.residual(blocks=3))
    placed = analyze(case.graph, case.alternating(6))
    active = np.flatnonzero(placed.active)
    # PERF_COUNT names every op in its estimated submodel, except that a later subgraph names the last op of
    # submodel 0 (as when HETERO splits an island): the measured partition must follow HETERO
    first = placed.submodel_nodes(0)
    assert first.size >= 2
    entries = {f"subgraph{placed.submodel[i]}: {case.graph.names[i]}": 1.0 for i in active if i != first[-1]}
    entries[f"subgraph{placed.num_submodels}: {case.graph.names[first[-1]]}"] = 1.0
    known = hetero_partition(placed, entries)
    assert known[first[-1]] == placed.num_submodels
    split = repartition(placed, case.alternating(6), known)
    assert split.num_submodels == placed.num_submodels + 1
    assert split.submodel[first[-1]] == split.num_submodels - 1


def test_measured_timeline_on_the_testbed(f32_testbed):
    model = sg.residual(blocks=3)
    placement = ov_autoplace.place(model, f32_testbed.hetero, core=f32_testbed.core,
                                   strategy=RandomStrategy(seed=1, mode="contiguous"))
    graph = extract_graph(prepare_model(model))
    placed = analyze(graph, placement)
    assert placed.num_submodels >= 2
    timeline = measured_timeline(placed, placement, model, f32_testbed.core, iterations=6)
    assert timeline.measured and "PERF_COUNT" in timeline.source
    assert f"({len(timeline.bars)} HETERO subgraph(s))" in timeline.source  # the bars are HETERO's subgraphs
    # a tiny subgraph can read 0 us in the plugin's whole-microsecond averages
    assert all(bar.ms >= 0 for bar in timeline.bars) and sum(bar.ms for bar in timeline.bars) > 0
    # the end-to-end median is the total; what the bars and transfers do not cover is "other" (it is negative when
    # the per-op means of a loaded machine exceed the median: the drawing then extends its axis to the last bar)
    assert timeline.total_ms > 0
    covered = sum(bar.ms for bar in timeline.bars) + timeline.transfer_ms
    assert timeline.other_ms == pytest.approx(timeline.total_ms - covered)
    starts = [bar.start_ms for bar in timeline.bars]
    assert starts == sorted(starts) and [bar.index for bar in timeline.bars] == list(range(len(timeline.bars)))


def test_a_subgraph_reported_not_run_is_still_drawn_in_its_place(f32_testbed, monkeypatch):
    """The CPU plugin reports an op whose mean rounds to 0 us as NOT_RUN, and the profiler keeps EXECUTED
    nodes only: under load, a one-Relu subgraph dropped out of PERF_COUNT's times (seen in CI: 7 HETERO
    subgraphs counted, 8 drawn, that Relu's bar last instead of in HETERO's order). Its time is 0; it stays."""
    import ov_autoplace_lab.viz.measured as measured

    model = sg.residual(blocks=3)
    placement = ov_autoplace.place(model, f32_testbed.hetero, core=f32_testbed.core,
                                   strategy=RandomStrategy(seed=1, mode="contiguous"))
    placed = analyze(extract_graph(prepare_model(model)), placement)
    assert placed.num_submodels >= 3
    profile_runs = measured.profile_runs

    def middle_subgraph_not_run(*args, **kwargs):
        node_ms, e2e = profile_runs(*args, **kwargs)
        return {k: v for k, v in node_ms.items() if not k.startswith("subgraph1: ")}, e2e

    monkeypatch.setattr(measured, "profile_runs", middle_subgraph_not_run)
    timeline = measured_timeline(placed, placement, model, f32_testbed.core, iterations=3)
    assert f"({placed.num_submodels} HETERO subgraph(s))" in timeline.source
    assert len(timeline.bars) == placed.num_submodels and timeline.bars[1].ms == 0.0
    # HETERO's order: subgraph1 holds the ops of the second submodel of the placement
    assert (timeline.submodel_of_node == placed.submodel).all()
