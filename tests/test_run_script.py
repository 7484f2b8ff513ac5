"""run.sh puts a new venv where there is room for it, or refuses before pip runs, naming the space and the fix.

A CI run once died in pip with "No space left on device" after the machine's disk had filled with old
clones' venvs (torch with its CUDA wheels is ~6 GB a venv), and a CI machine came with 5 GB free. ``df`` is
replaced by a script on PATH that reports the free space under test (per path: the checkout's disk, the
memory-backed directory), so nothing here depends on the real disk.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _fake_bin(tmp_path: Path, free_gb: int, shm_free_gb: int = 0) -> Path:
    """A ``df`` reporting ``free_gb`` everywhere but under ``tmp_path/shm`` (``shm_free_gb``), and a ``python3``
    that exits 42: a run that got as far as creating its venv stops there."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    df = fake_bin / "df"
    # POSIX `df -Pk` output: the fourth column of the second line is the free space in KiB.
    df.write_text("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
                  f"case \"$2\" in {tmp_path / 'shm'}*) kib={shm_free_gb * 1048576} ;; *) kib={free_gb * 1048576} ;; esac\n"
                  "echo \"fake 999999999 1 $kib 1% /\"\n")
    df.chmod(0o755)
    python3 = fake_bin / "python3"
    python3.write_text("#!/bin/sh\nexit 42\n")
    python3.chmod(0o755)
    return fake_bin


def _run_sh_with_free_space(tmp_path: Path, free_gb: int, venv: Path | None, shm_free_gb: int = 0,
                            ) -> subprocess.CompletedProcess:
    """run.sh, copied into ``tmp_path`` (its checkout: ./.venv is ``tmp_path/.venv``), run as ``test --co``: setup
    comes first, so a refused check stops before pip or pytest run."""
    (tmp_path / "shm").mkdir(exist_ok=True)
    (tmp_path / "run.sh").write_text((REPO / "run.sh").read_text())
    env = dict(os.environ, PATH=f"{_fake_bin(tmp_path, free_gb, shm_free_gb)}{os.pathsep}{os.environ['PATH']}",
               OV_AUTOPLACE_SHM=str(tmp_path / "shm"))
    env.pop("OV_AUTOPLACE_VENV", None)
    if venv is not None:
        env["OV_AUTOPLACE_VENV"] = str(venv)
    return subprocess.run(["bash", str(tmp_path / "run.sh"), "test", "--co", "-q"], cwd=tmp_path, env=env,
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
    done = _run_sh_with_free_space(tmp_path, 2, venv)
    assert "warning: 2 GB free" in done.stderr and "wheel-install test" in done.stderr
    assert done.returncode == 42  # went on past the check into setup


def test_a_short_checkout_disk_puts_the_new_venv_in_memory_backed_space(tmp_path):
    """No OV_AUTOPLACE_VENV, 5 GB on the checkout's disk (a CI machine's), 20 GB in the memory-backed directory:
    the venv is created there, one per checkout, and the run says where and why."""
    done = _run_sh_with_free_space(tmp_path, 5, None, shm_free_gb=20)
    assert done.returncode == 42, done.stderr  # got to `python3 -m venv`
    assert "5 GB free on the checkout's disk" in done.stderr
    assert f"the venv goes to {tmp_path / 'shm'}/ov_autoplace-venv-" in done.stderr
    assert not (tmp_path / ".venv").exists()


def test_a_venv_made_in_memory_backed_space_is_found_by_the_next_run(tmp_path):
    """The next run of the same checkout finds that venv (a stub python exiting 42) without a new one or a note."""
    import hashlib

    shm_venv = tmp_path / "shm" / f"ov_autoplace-venv-{hashlib.md5(str(tmp_path).encode()).hexdigest()[:12]}"
    (shm_venv / "bin").mkdir(parents=True)
    (shm_venv / "bin" / "python").write_text("#!/bin/sh\nexit 42\n")
    (shm_venv / "bin" / "python").chmod(0o755)
    (shm_venv / "bin" / "activate").write_text(f"PATH={shm_venv / 'bin'}:$PATH\n")
    done = _run_sh_with_free_space(tmp_path, 5, None, shm_free_gb=0)
    assert done.returncode == 42, done.stderr
    assert "the venv goes to" not in done.stderr and "needs about" not in done.stderr


@pytest.mark.parametrize("shm_free_gb", [0, 12])
def test_no_room_on_the_disk_nor_in_memory_backed_space_is_refused(tmp_path, shm_free_gb):
    """Too little memory-backed room (12 GB would leave the tests too little memory) keeps the refusal."""
    done = _run_sh_with_free_space(tmp_path, 5, None, shm_free_gb=shm_free_gb)
    assert done.returncode == 1
    assert "5 GB free where the venv goes (.venv)" in done.stderr and "OV_AUTOPLACE_VENV" in done.stderr
    assert not (tmp_path / ".venv").exists()


def test_the_callers_venv_path_is_kept_even_where_memory_backed_space_has_room(tmp_path):
    venv = tmp_path / "disk" / ".venv"
    done = _run_sh_with_free_space(tmp_path, 3, venv, shm_free_gb=20)
    assert done.returncode == 1 and "3 GB free where the venv goes" in done.stderr
