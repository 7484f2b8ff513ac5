"""``--inputs FILE.npz`` on ``place`` and ``profile``: a sample the model takes is measured with, one it rejects
exits 2 naming the LLM rule (docs/llm.md)."""

import numpy as np
import openvino as ov

from ov_autoplace.cli.main import main
from tests.synthetic_graphs import llm_like


def test_inputs_sample_is_measured_with_and_a_bad_one_is_reported(tmp_path, capsys):
    ir = tmp_path / "llm_like.xml"
    ov.save_model(llm_like(), ir)
    good, bad = tmp_path / "good.npz", tmp_path / "bad.npz"
    np.savez(good, input_ids=np.array([[1, 5, 9, 3]]), beam_idx=np.zeros(1, np.int32))
    np.savez(bad, input_ids=np.array([[1, 5, 9, 3]]), beam_idx=np.array([2], np.int32))
    assert main(["profile", "-m", str(ir), "--testbed", "--inputs", str(good), "--no-store", "-niter", "3"]) == 0
    assert main(["place", "-m", str(ir), "--testbed", "--inputs", str(good), "-niter", "3"]) == 0
    capsys.readouterr()
    assert main(["place", "-m", str(ir), "--testbed", "--inputs", str(bad), "--no-measure"]) == 2
    assert "beam_idx picks rows of the batch, each in [0, 1)" in capsys.readouterr().err
    assert main(["profile", "-m", str(ir), "--testbed", "--inputs", str(tmp_path / "none.npz"), "--no-store"]) == 2
    assert "not a numpy .npz" in capsys.readouterr().err


def test_generation_is_placed_for_and_a_bad_one_is_reported(tmp_path, capsys):
    """``--generation PROMPT,NEW``: a stateful decoder's generation (docs/llm.md); one past its position table, or
    not two counts, exits 2 naming the fix."""
    ir = tmp_path / "llm_like.xml"
    ov.save_model(llm_like(positions=64), ir)
    assert main(["place", "-m", str(ir), "--testbed", "--generation", "16,8", "--no-measure"]) == 0
    capsys.readouterr()
    assert main(["place", "-m", str(ir), "--testbed", "--generation", "60,10", "--no-measure"]) == 2
    assert "prompt_tokens + new_tokens <= 65" in capsys.readouterr().err
    try:
        code = main(["place", "-m", str(ir), "--testbed", "--generation", "128", "--no-measure"])
    except SystemExit as exc:  # argparse's own exit for a malformed option
        code = exc.code
    assert code == 2 and "PROMPT,NEW" in capsys.readouterr().err


def test_a_generation_past_an_export_s_declared_positions_is_reported(tmp_path, capsys):
    """A RoPE decoder has no position table; optimum-intel's ``config.json`` beside it declares its positions, and
    ``place`` and ``profile`` read it as ``compile_model`` does (exit 2 before anything is measured)."""
    (tmp_path / "config.json").write_text('{"model_type": "llama", "max_position_embeddings": 40}')
    ir = tmp_path / "openvino_model.xml"
    ov.save_model(llm_like(positions=None), ir)
    for command, quick in (("place", "--no-measure"), ("profile", "--no-store")):
        assert main([command, "-m", str(ir), "--testbed", "--generation", "40,10", quick]) == 2
        err = capsys.readouterr().err
        assert "max_position_embeddings" in err and "prompt_tokens + new_tokens <= 41" in err, err
