"""run.sh refuses to start a new venv on a disk without room for it, naming the space and the fix.

A CI run once died in pip with "No space left on device" after the machine's disk had filled with old
clones' venvs (torch with its CUDA wheels is ~6 GB a venv). ``df`` is replaced by a script on PATH that
reports the free space under test, so nothing here depends on the real disk.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run_sh_with_free_space(tmp_path: Path, free_gb: int, venv: Path) -> subprocess.CompletedProcess:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    df = fake_bin / "df"
    # POSIX `df -Pk` output: the fourth column of the second line is the free space in KiB.
    df.write_text("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
                  f"echo 'fake 999999999 1 {free_gb * 1048576} 1% /'\n")
    df.chmod(0o755)
    env = dict(os.environ, PATH=f"{fake_bin}{os.pathsep}{os.environ['PATH']}", OV_AUTOPLACE_VENV=str(venv))
    # `test --co` goes through setup first: a refused check stops before pip or pytest run.
    return subprocess.run(["bash", str(REPO / "run.sh"), "test", "--co", "-q"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_new_venv_on_a_full_disk_is_refused_before_pip_runs(tmp_path):
    venv = tmp_path / "no" / "such" / ".venv"
    done = _run_sh_with_free_space(tmp_path, 3, venv)
    assert done.returncode == 1
    assert "3 GB free where the venv goes" in done.stderr and "needs about 8 GB" in done.stderr
    assert "OV_AUTOPLACE_VENV" in done.stderr
    assert not venv.exists()  # nothing was created or half-installed


def test_low_space_with_an_existing_venv_only_warns(tmp_path):
    """An existing venv needs no new space; the warning names what the tests still need."""
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    # A stand-in venv whose python is a stub that fails: the check passed if setup got as far as running it.
    stub = venv / "bin" / "python"
    stub.write_text("#!/bin/sh\nexit 42\n")
    stub.chmod(0o755)
    (venv / "bin" / "activate").write_text(f"PATH={venv / 'bin'}:$PATH\n")
    done = _run_sh_with_free_space(tmp_path, 7, venv)
    assert "warning: 7 GB free" in done.stderr and "wheel-install test" in done.stderr
    assert done.returncode == 42  # went on past the check into setup
