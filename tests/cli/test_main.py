import json

import openvino as ov
import pytest

from ov_autoplace.cli.main import build_parser, main
from tests import synthetic_graphs as sg


@pytest.fixture()
def ir_path(tmp_path):
    path = tmp_path / "residual.xml"
    ov.save_model(sg.residual(), path)
    return path


def test_place_prints_summary_and_writes_json(ir_path, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["place", "-m", str(ir_path), "--testbed", "-niter", "3", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Placement on HETERO:CPU,CPUF" in text and "CPU-only latency" in text and "measured latency" in text
    data = json.loads(out.read_text())
    assert set(data["devices"]) == {"CPU", "CPUF"} and data["assignment"]


def test_place_with_pins_no_measure(ir_path, capsys):
    assert main(["place", "-m", str(ir_path), "--testbed", "--no-measure", "--pin-node", "type:Convolution=CPUF"]) == 0
    captured = capsys.readouterr()
    assert "measured latency" not in captured.out and "CPUF " in captured.out and "deprecated" not in captured.err


def test_deprecated_pin_still_pins_with_one_warning_line(ir_path, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["place", "-m", str(ir_path), "--testbed", "--no-measure", "--pin", "type:Convolution=CPUF",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("deprecated") == 1 and "--pin-node" in err
    data = json.loads(out.read_text())
    convolutions = [n for n in data["assignment"] if n.startswith("Convolution")]
    assert convolutions and all(data["assignment"][n] == "CPUF" for n in convolutions)


def test_errors_are_reported_not_raised(ir_path, capsys):
    assert main(["place", "-m", str(ir_path), "-d", "HETERO:GPU,CPU", "--no-measure"]) == 2
    assert "not available" in capsys.readouterr().err
    assert main(["place", "-m", "/does/not/exist.xml", "--testbed", "--no-measure"]) == 2
    assert main(["place", "-m", str(ir_path), "--testbed", "--pin-node", "nodevice"]) == 2
    assert "--pin-node expects NODE=DEVICE" in capsys.readouterr().err


def test_cache_list_and_clear(tmp_path, capsys):
    assert main(["cache", "list", "--cache-dir", str(tmp_path)]) == 0
    assert "0 placement(s)" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert "removed 0" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["place", "show", "profile", "cache"])
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([command, "--help"])
    assert info.value.code == 0
    assert "usage: ov-autoplace " + command in capsys.readouterr().out


def test_show_writes_svg_html_png(ir_path, tmp_path, capsys):
    prefix = tmp_path / "out" / "residual"
    assert main(["show", "-m", str(ir_path), "--testbed", "-niter", "3", "-o", str(prefix)]) == 0
    svg = prefix.with_suffix(".svg").read_text()
    assert svg.startswith("<svg") and "CPUF" in svg and "<rect" in svg
    page = prefix.with_suffix(".html").read_text()
    assert "<svg" in page and "measured latency" in page and "compute ops in" in page
    assert prefix.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    dot = prefix.with_suffix(".dot").read_text()
    assert dot.startswith("digraph placement {") and "->" in dot and dot.rstrip().endswith("}")
    assert dot.count("fillcolor") >= 26  # every compute node, filled by its device


def test_show_a_saved_placement(ir_path, tmp_path):
    saved = tmp_path / "p.json"
    assert main(["place", "-m", str(ir_path), "--testbed", "--no-measure", "-o", str(saved)]) == 0
    prefix = tmp_path / "again"
    assert main(["show", "-m", str(ir_path), "--testbed", "--placement", str(saved), "--no-measure",
                 "--no-png", "-o", str(prefix)]) == 0
    assert prefix.with_suffix(".svg").exists() and not prefix.with_suffix(".png").exists()


def test_profile_prints_per_op_types_and_writes_json(ir_path, tmp_path, capsys):
    out = tmp_path / "profile.json"
    assert main(["profile", "-m", str(ir_path), "--testbed", "-niter", "2", "--profile-dir", str(tmp_path / "store"),
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    # the quick profile (default): per-op times measured, links from the prior, so the model says "simulated"
    assert "simulated (quick profile on CPU,CPUF (prior (simulated) links)" in text
    assert "Convolution" in text and "total" in text
    data = json.loads(out.read_text())
    assert data["cost_model"]["devices"] == ["CPU", "CPUF"]
    assert all(r["isolated_nodes"] == 0 for r in data["reports"]), "no fused op compiled alone"


def test_profile_of_a_decoder_stores_its_decode_steps_for_the_next_start(ir_path, tmp_path, capsys, caplog,
                                                                          monkeypatch):
    """On a stateful decoder ``profile`` measures the prefill clone ``compile_model`` places (at the generation's
    prompt) and each decode step of the generation, all stored: the next start's profile path places on the whole
    generation. Before, it stored the prefill alone, and the next start placed on the prefill's costs (said at
    INFO)."""
    import logging

    import ov_autoplace as oa
    from ov_autoplace.devices.testbed import make_testbed

    path = tmp_path / "llm.xml"
    ov.save_model(sg.llm_like(layers=2, positions=None), path)
    monkeypatch.setenv("OV_AUTOPLACE_PROFILE_DIR", str(tmp_path / "profiles"))
    assert main(["profile", "-m", str(path), "--testbed", "-niter", "2", "--generation", "16,8"]) == 0
    out = capsys.readouterr().out
    assert "decode steps at past lengths [16, 19, 22] profiled and stored" in out and "(16 + 8 tokens)" in out
    testbed = make_testbed()  # what --testbed makes: the profiles' keys name its devices and properties
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.place(str(path), testbed.hetero, core=testbed.core, generation=(16, 8))
    assert "placement source: profile" in caplog.text and "has no decode steps" not in caplog.text
    assert "Generation(prompt_tokens=16, new_tokens=8)" in caplog.text  # the costs the profile path placed on
    # --generation on a model no generation drives: the API's ShapeError, said before anything is measured
    assert main(["profile", "-m", str(ir_path), "--testbed", "--generation", "16,8"]) != 0
    assert "applies to a stateful decoder" in capsys.readouterr().err


def test_profile_keys_a_dynamic_model_by_the_shapes_compile_model_places_at(tmp_path, capsys, caplog, monkeypatch):
    """``profile`` profiles the clone compile_model places (``shapes.placement_clone``): a dynamic model that rejects
    the default 128 is profiled at the halved default it takes, and the next placement finds that profile. Before,
    ``profile`` reshaped to the default alone and exited 2 on this model, which compile_model places at 32."""
    import logging

    import ov_autoplace as oa
    from ov_autoplace.devices.testbed import make_testbed
    from tests.model.test_shapes import _position_table

    path = tmp_path / "table.xml"
    ov.save_model(_position_table(32), path)
    monkeypatch.setenv("OV_AUTOPLACE_PROFILE_DIR", str(tmp_path / "profiles"))
    assert main(["profile", "-m", str(path), "--testbed", "-niter", "2"]) == 0
    testbed = make_testbed()
    with caplog.at_level(logging.INFO, logger="ov_autoplace"):
        oa.place(str(path), testbed.hetero, core=testbed.core)
    assert "placement source: profile" in caplog.text


@pytest.mark.slow
def test_profile_full_measures_links(ir_path, tmp_path, capsys):
    assert main(["profile", "-m", str(ir_path), "--testbed", "--full", "-niter", "2",
                 "--profile-dir", str(tmp_path / "store")]) == 0
    assert "measured (profiled on CPU,CPUF" in capsys.readouterr().out


def test_train_subcommand_hands_over_to_the_trainer(capsys):
    with pytest.raises(SystemExit) as info:
        main(["train", "--help"])
    assert info.value.code == 0
    assert "ov_autoplace_lab.commands.train_command" in capsys.readouterr().out



def test_missing_extra_is_named_in_one_line(ir_path, tmp_path, monkeypatch, capsys):
    """Without matplotlib (the lab's pictures extra), `show` still writes SVG and HTML and names the extra for the PNG in one line."""
    import sys as _sys

    monkeypatch.setitem(_sys.modules, "matplotlib", None)  # what an install without matplotlib looks like
    assert main(["show", "-m", str(ir_path), "--testbed", "--no-measure", "-o", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "matplotlib" in line]
    assert len(lines) == 1 and "ov-autoplace-lab[pictures]" in lines[0]
    assert (tmp_path / "p.svg").is_file() and (tmp_path / "p.html").is_file() and not (tmp_path / "p.png").exists()


def test_version_names_the_package_and_openvino(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("ov-autoplace 0.") and ov.get_version().split("-")[0] in out


def test_defaults_are_the_librarys_device_and_strategy(ir_path, capsys):
    """No -d: this machine's devices (here CPU alone, compiled on CPU as compile_model(model) does), not the
    testbed; the label says what was compiled."""
    args = build_parser().parse_args(["place", "-m", str(ir_path)])
    assert args.device is None and args.strategy is None and not args.testbed
    assert main(["place", "-m", str(ir_path), "--no-measure"]) == 0
    out = capsys.readouterr().out
    assert "Placement on CPU (" in out and "CPUF" not in out


@pytest.mark.parametrize("hint", ["latency", "throughput", "tput", "cumulative_throughput", "ctput", "none"])
def test_every_openvino_hint_is_accepted(hint):
    assert build_parser().parse_args(["place", "-m", "x.xml", "-hint", hint]).hint == hint


def test_bare_auto_and_hetero_place_over_their_devices(ir_path, tmp_path, capsys):
    assert main(["place", "-m", str(ir_path), "--testbed", "-d", "AUTO", "--no-measure"]) == 0
    assert "Placement on HETERO:CPU,CPUF" in capsys.readouterr().out
    # benchmark_app's -load_config: a HETERO section is the compile config of -d HETERO (its priorities)
    config = tmp_path / "hetero.json"
    config.write_text(json.dumps({"HETERO": {"MULTI_DEVICE_PRIORITIES": "CPUF,CPU"}}))
    assert main(["place", "-m", str(ir_path), "--testbed", "-d", "HETERO", "-load_config", str(config),
                 "--no-measure"]) == 0
    assert "Placement on HETERO:CPUF,CPU" in capsys.readouterr().out
    assert main(["place", "-m", str(ir_path), "--testbed", "-d", "HETERO", "--no-measure"]) == 2
    assert "MULTI_DEVICE_PRIORITIES" in capsys.readouterr().err


def test_time_nireq_nstreams_dump_and_load_config(ir_path, tmp_path, capsys):
    dumped = tmp_path / "dump.json"
    assert main(["place", "-m", str(ir_path), "--testbed", "-t", "0.2", "-nireq", "2", "-hint", "ctput",
                 "-nstreams", "CPU:1,CPUF:2", "-pin", "NO", "-dump_config", str(dumped)]) == 0
    out = capsys.readouterr().out
    # -hint ctput: benchmark_app's async API, the 2 requests in flight; its closing throughput line
    assert "(API async, 2 request(s))" in out and "Throughput:" in out and "CPUF-only latency" in out
    config = json.loads(dumped.read_text())
    assert config["CPU"] == {"NUM_STREAMS": "1", "PERFORMANCE_HINT": "CUMULATIVE_THROUGHPUT",
                             "ENABLE_CPU_PINNING": "NO", "PERFORMANCE_HINT_NUM_REQUESTS": "2"}
    assert config["CPUF"]["NUM_STREAMS"] == "2"
    again = tmp_path / "again.json"  # benchmark_app's round trip: the dumped file loads back to the same config
    assert main(["place", "-m", str(ir_path), "--testbed", "--no-measure", "-hint", "ctput", "-nstreams",
                 "CPU:1,CPUF:2", "-pin", "NO", "-nireq", "2", "-load_config", str(dumped), "-dump_config",
                 str(again)]) == 0
    assert json.loads(again.read_text()) == config
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"CPU": 3}))
    assert main(["place", "-m", str(ir_path), "--testbed", "--no-measure", "-load_config", str(bad)]) == 2
    assert "-load_config" in capsys.readouterr().err


def test_reports_csv_counters_and_json(ir_path, tmp_path, capsys):
    folder = tmp_path / "reports"
    assert main(["place", "-m", str(ir_path), "--testbed", "-niter", "3", "-report_type", "average_counters",
                 "-report_folder", str(folder), "-cdir", str(tmp_path / "blobs")]) == 0
    report = (folder / "benchmark_report.csv").read_text()
    assert "Command line parameters" in report and "Execution results" in report and "median latency (ms)" in report
    assert "CACHE_DIR" in report
    counters = (folder / "benchmark_average_counters_report.csv").read_text().splitlines()
    assert counters[0].startswith("layerName;execStatus;layerType") and any(";Convolution;" in c for c in counters)
    assert main(["place", "-m", str(ir_path), "--testbed", "-niter", "4", "-api", "async", "-nireq", "2",
                 "-report_type", "detailed_counters", "-json_stats", "-report_folder", str(folder)]) == 0
    data = json.loads((folder / "benchmark_report.json").read_text())
    assert data["execution_results"]["device"] == "HETERO:CPU,CPUF"
    detailed = json.loads((folder / "benchmark_detailed_counters_report.json").read_text())
    assert detailed["report_type"] == "detailed" and len(detailed["detailed_performance"]) == 2  # each request's
    assert {"name", "node_type", "status", "real_time", "cpu_time", "exec_type"} == \
        set(detailed["detailed_performance"][0]["nodes"][0])


def test_place_save_model_writes_an_ir_that_carries_the_placement(ir_path, tmp_path, capsys):
    from ov_autoplace.saved_model import load_placed
    from ov_autoplace.devices.testbed import make_testbed

    saved, placed_ir = tmp_path / "p.json", tmp_path / "placed.xml"
    assert main(["place", "-m", str(ir_path), "--testbed", "--no-measure", "--pin-node", "type:Convolution=CPUF",
                 "-o", str(saved), "--save-model", str(placed_ir)]) == 0
    assert f"written to {placed_ir}" in capsys.readouterr().out
    _, stored = load_placed(placed_ir, core=make_testbed().core)
    placed = json.loads(saved.read_text())["assignment"]
    # stored as verified against the plain call (pins are not stored: saved, the pinned split is a proposal like
    # any other): the split itself or a single device that measured faster (kept), or, when neither won or the
    # machine was too noisy to decide (abstained), the plain call's placement; a win on a loaded machine is stored
    # as provisional
    decision, chosen = stored.verification["decision"], stored.verification["chosen"]
    assert decision in ("kept", "plain", "abstained", "provisional")
    won = decision in ("kept", "provisional")
    if chosen.startswith("single:"):  # a bf16 CPU beside the f32 CPUF: two really different devices
        assert won and set(stored.assignment.values()) == {chosen.split(":", 1)[1]}
    else:
        assert (stored.assignment == placed) == won


@pytest.mark.parametrize("command", ["show", "compare", "whatif", "bench", "train"])
def test_a_lab_command_without_the_lab_is_one_line_and_exit_2(command, monkeypatch, capsys):
    """Where only the runtime is installed no distribution registers commands: one line naming the install."""
    from ov_autoplace.cli import main as cli_main

    monkeypatch.setattr(cli_main, "lab_commands", lambda: {})
    assert cli_main.main([command, "--help"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"`ov-autoplace {command}`" in err[0] and "pip install ov-autoplace-lab" in err[0]


def test_a_lab_strategy_without_the_lab_is_one_line_and_exit_2(ir_path, monkeypatch, capsys):
    from ov_autoplace.strategies import registry

    monkeypatch.setattr(registry, "_entry_points", lambda group: [])  # what a runtime-only install registers
    registry.plugin_strategies.cache_clear()
    try:
        assert main(["place", "-m", str(ir_path), "--testbed", "--strategy", "rnn_placer", "--no-measure"]) == 2
    finally:
        registry.plugin_strategies.cache_clear()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'rnn_placer' is part of the lab" in err[0] and "pip install ov-autoplace-lab" in err[0]


# --- bad input: one `error:` line and exit 2, within a second, nothing touched --------------------------------


def _one_error_line(err: str) -> None:
    """One line saying ``error:`` (argparse's usage lines may precede it), no traceback."""
    assert len([line for line in err.splitlines() if "error:" in line]) == 1 and "Traceback" not in err, err


def test_load_config_with_an_unknown_property_is_one_error_line(ir_path, tmp_path, capsys):
    """It printed OpenVINO's RuntimeError traceback and exited 1."""
    from tests.hostile import FAST_S, bounded

    config = tmp_path / "c.json"
    config.write_text(json.dumps({"CPU": {"NOT_A_PROPERTY": 1}}))
    assert bounded(lambda: main(["place", "-m", str(ir_path), "-d", "CPU", "--no-measure", "-load_config",
                                 str(config)]), FAST_S) == 2
    err = capsys.readouterr().err
    _one_error_line(err)
    assert "NOT_A_PROPERTY" in err and str(config) in err


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "dev_zero_link", "bin_fifo"])
def test_place_refuses_a_model_path_that_is_not_a_regular_file(ir_path, tmp_path, capsys, kind):
    """`ov-autoplace place -m fifo` hung in OpenVINO's read (killed at 50-60 s)."""
    from tests.hostile import FAST_S, bounded, plant_model_path

    model = plant_model_path(kind, tmp_path, ir_path)
    assert bounded(lambda: main(["place", "-m", str(model), "-d", "CPU", "--no-measure"]), FAST_S) == 2
    err = capsys.readouterr().err
    _one_error_line(err)
    assert "not a regular file" in err


@pytest.mark.parametrize("flag", [["cache", "clear", "--cache-dir", ""], ["cache", "list", "--cache-dir", ""],
                                  ["profile", "-m", "x.xml", "--profile-dir", ""]])
def test_an_empty_directory_flag_is_refused_not_read_as_the_current_directory(tmp_path, monkeypatch, capsys, flag):
    """`cache clear --cache-dir ""` cleared the layout folders of whatever directory it ran in."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "placements").mkdir()
    (tmp_path / "placements" / "mine.json").write_text("{}")
    with pytest.raises(SystemExit) as info:
        main(flag)
    assert info.value.code == 2
    _one_error_line(capsys.readouterr().err)
    assert (tmp_path / "placements" / "mine.json").exists()


@pytest.mark.parametrize("text", ["0", "-3", "1e9", "1000000000", "10001", "86400.5", "inf", "nan", "30", "60.0",
                                  "10000", "86400.0", "1e2"])
def test_search_budget_flag_and_api_share_one_rule(text):
    """The CLI refused `--search-budget 1e9` (by its spelling) while compile_model(search_budget=1e9) ran for
    1e9 seconds; the same values are refused by both now, by one function."""
    from ov_autoplace.call_request import check_search_budget
    from ov_autoplace.errors import PlacementError

    value = float(text) if any(c in text for c in ".eEn") else int(text)
    try:
        check_search_budget(value)
        api_accepts = True
    except PlacementError:
        api_accepts = False
    try:
        build_parser().parse_args(["place", "-m", "x.xml", "--search-budget", text])
        cli_accepts = True
    except SystemExit:
        cli_accepts = False
    assert cli_accepts == api_accepts
    assert api_accepts == (text in ("30", "60.0", "10000", "86400.0", "1e2"))


@pytest.fixture
def stateful_ir(tmp_path):
    path = tmp_path / "stateful.xml"
    ov.save_model(sg.stateful_layers(4, 64), str(path))  # 4 layers of 16 KB weights + 64 KB KV cache (256 tokens)
    return path


def test_memory_caps_split_place_and_are_checked_before_profiling(stateful_ir, tmp_path, capsys):
    caps = ["--memory-cap", "CPU=200KB", "--memory-cap", "CPUF=200 KB"]
    assert main(["place", "-m", str(stateful_ir), "--testbed", "--no-measure", *caps]) == 0
    out = capsys.readouterr().out
    assert "memory caps: CPU" in out and "of 200 KB" in out
    assert main(["profile", "-m", str(stateful_ir), "--testbed", "-niter", "2", "--profile-dir",
                 str(tmp_path / "store"), *caps]) == 0
    assert "memory: the model needs weights" in capsys.readouterr().out
    for bad, said in ((["--memory-cap", "CPU=100KB", "--memory-cap", "CPUF=100KB"], "missing"),
                      (["--memory-cap", "CPU"], "DEVICE=SIZE"), (["--memory-cap", "GPU=1GB"], "'GPU'")):
        for command in ("place", "profile"):
            assert main([command, "-m", str(stateful_ir), "--testbed", "--no-measure" if command == "place" else
                         "--no-store", *bad]) == 2
            assert said in capsys.readouterr().err
