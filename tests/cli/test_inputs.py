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
