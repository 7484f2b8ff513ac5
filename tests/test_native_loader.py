import json
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ov_autoplace import NativeExtensionError
from ov_autoplace._native_loader import (
    built_openvino_version,
    check_openvino_version,
    load_native,
    runtime_openvino_version,
)


def test_built_matches_running():
    assert built_openvino_version() == runtime_openvino_version()
    assert load_native().BUILT_OPENVINO_VERSION == runtime_openvino_version()


def test_mismatch_message_says_how_to_rebuild():
    with pytest.raises(NativeExtensionError) as info:
        check_openvino_version(built="2025.1.0", running="2026.4.1")
    message = str(info.value)
    assert "2025.1.0" in message and "2026.4.1" in message and "pip install" in message
    assert isinstance(info.value, ImportError)
    # The rebuild must use the OpenVINO installed here: no build isolation (an isolated build would fetch the
    # pinned release again), no dependency changes; or put back the release the extension was built for.
    assert "pip install --force-reinstall --no-deps --no-build-isolation" in message
    assert "scikit-build-core" in message and "pybind11" in message  # needed when building without isolation
    assert "pip install openvino==2025.1.0" in message


def _pins() -> dict[str, str]:
    """Where the OpenVINO release is pinned: the dependency, the build requirement and run.sh."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = Path(__file__).resolve().parents[1]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    found = {}
    for where, requirements in (("dependencies", pyproject["project"]["dependencies"]),
                                ("build-system.requires", pyproject["build-system"]["requires"])):
        (req,) = [r for r in requirements if r.startswith("openvino")]
        found[where] = req
    (run_sh,) = re.findall(r'"(openvino[^"]*)"', (root / "run.sh").read_text())
    found["run.sh"] = run_sh
    return found


def test_openvino_pinned_to_the_exact_release_the_extension_needs():
    """The metadata accepts only the release the extension loads with (it links libopenvino.so.<release>)."""
    pins = _pins()
    # the dependency may take any build of that release (==X.Y.Z.*: post-releases keep libopenvino.so.<XYZ>)
    assert pins.pop("dependencies") in (f"openvino=={built_openvino_version()}", f"openvino=={built_openvino_version()}.*")
    assert set(pins.values()) == {f"openvino=={built_openvino_version()}"}, pins
    assert built_openvino_version() == runtime_openvino_version()


def test_import_fails_clearly_on_mismatch():
    """A package whose build info names another release refuses to import, saying why."""
    code = (
        "import sys, types; info = types.ModuleType('ov_autoplace._build_info');"
        "info.BUILT_OPENVINO_VERSION = '2024.6.0'; sys.modules['ov_autoplace._build_info'] = info\n"
        "try:\n import ov_autoplace\nexcept ImportError as e:\n print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("ERR") and "2024.6.0" in out and "rebuild" in out


def _openvino_manylinux_tag() -> str:
    """The platform tag of the installed ``openvino`` wheel (``manylinux_2_28_x86_64`` for 2026.4.1)."""
    from importlib.metadata import distribution

    tags = [line.split(":", 1)[1].strip() for line in distribution("openvino").read_text("WHEEL").splitlines()
            if line.startswith("Tag:")]
    return tags[0].split("-")[-1]


@pytest.mark.skipif(not (sys.platform == "linux" and platform.machine() == "x86_64"), reason="x86-64 Linux build")
def test_extension_needs_no_newer_glibc_or_libstdcxx_than_the_openvino_wheel():
    """The built extension's symbol versions are within the manylinux policy of the openvino wheel it links, so it
    loads wherever that wheel does (csrc/manylinux_compat.*), and it exports nothing but its init function."""
    elffile = pytest.importorskip("elftools.elf.elffile")
    pytest.importorskip("auditwheel")
    from importlib.resources import files

    tag = _openvino_manylinux_tag()
    assert re.fullmatch(r"manylinux_2_\d+_x86_64", tag), tag
    policies = json.loads((files("auditwheel") / "policy" / "manylinux-policy.json").read_text())
    (policy,) = [p for p in policies if p["name"] == tag.removesuffix("_x86_64")]
    allowed = policy["symbol_versions"]["x86_64"]  # {"GLIBC": [...], "GLIBCXX": [...], "CXXABI": [...], ...}
    with open(load_native().__file__, "rb") as f:
        elf = elffile.ELFFile(f)
        needed = {(aux.name.rsplit("_", 1)[0], aux.name.rsplit("_", 1)[1])
                  for verneed, auxes in elf.get_section_by_name(".gnu.version_r").iter_versions()
                  for aux in auxes}
        symbols = list(elf.get_section_by_name(".dynsym").iter_symbols())
        exported = [s.name for s in symbols if s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["bind"] != "STB_LOCAL"
                    and s.name]
        imported = {s.name for s in symbols if s["st_shndx"] == "SHN_UNDEF"}
    beyond = sorted(f"{family}_{version}" for family, version in needed
                    if family in allowed and version not in allowed[family])
    assert {family for family, _ in needed} >= {"GLIBC", "GLIBCXX", "CXXABI"}, needed  # the check sees them
    assert not beyond, f"the extension needs {beyond}, beyond openvino's {tag}: see csrc/manylinux_compat.hpp"
    assert exported == ["PyInit__native"], exported
    # the local exception_ptr reference counting calls libstdc++'s own functions (bound to a local copy, an exception
    # crossing the extension would loop forever): tests/devices/test_timing.py raises through it
    defined = {s.name for s in symbols if s["st_shndx"] != "SHN_UNDEF"}
    if "_ZNSt15__exception_ptr13exception_ptr9_M_addrefEv" in defined:
        libstdcxx_calls = {"_ZNSt15__exception_ptr13exception_ptrC1EPv", "_ZNSt15__exception_ptr13exception_ptraSERKS0_"}
        assert libstdcxx_calls <= imported, libstdcxx_calls - imported
