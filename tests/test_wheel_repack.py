"""``tools/wheels.py``'s ``repack``: the wheel it rewrites holds the same files (names, order, bytes, times, modes)
with no directory entries, each file deflated tighter than zlib's level 9 or stored when deflate cannot shrink it.

A small wheel-like archive written the way auditwheel writes one (a directory entry per directory, deflate level 9);
the size bound on the real wheels is tests/test_wheel_install.py's (slow tier).
"""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from tools.wheels import repack

pytest.importorskip("zopfli", reason="repack needs zopfli (the dev dependency group: pip install --group dev)")

SOURCE = ('"""A module whose docstring explains what it does and why, as the runtime\'s do."""\n\n'
          + "".join(f"def f{i}(x):\n    \"\"\"Return x plus {i}: the {i}th of many alike.\"\"\"\n    return x + {i}\n\n"
                    for i in range(200))).encode()
RANDOM = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()  # deflate cannot shrink it
FILES = {  # name -> (bytes, unix mode)
    "pkg/__init__.py": (SOURCE, 0o644),
    "pkg/weights.bin": (RANDOM, 0o644),
    "pkg/empty.py": (b"", 0o644),
    "pkg/sub/n\u00e4me.py": (b"# a name outside ASCII\n" * 10, 0o644),
    "pkg/_native.so": (SOURCE[::-1] + RANDOM[:100], 0o755),
    "pkg-0.1.dist-info/RECORD": (b"pkg/__init__.py,sha256=x,1\n" * 20, 0o664),
}


def _auditwheel_like(path) -> dict[str, zipfile.ZipInfo]:
    written = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for directory in ("pkg/", "pkg/sub/", "pkg-0.1.dist-info/"):
            archive.writestr(zipfile.ZipInfo(directory), b"")  # what auditwheel writes for each directory
        for name, (data, mode) in FILES.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 12, 2, 6, 14, 42))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data, compresslevel=9)
            written[name] = archive.getinfo(name)
    return written


def test_repack_keeps_every_file_and_packs_them_tighter(tmp_path):
    wheel = tmp_path / "pkg-0.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    before = _auditwheel_like(wheel)
    size_before = wheel.stat().st_size

    assert repack(wheel) == wheel
    with zipfile.ZipFile(wheel) as archive:
        assert archive.testzip() is None  # every file's CRC checks
        infos = archive.infolist()
        assert [i.filename for i in infos] == list(FILES)  # the files in their order; the directory entries gone
        for info in infos:
            data, mode = FILES[info.filename]
            assert archive.read(info) == data
            assert info.external_attr >> 16 == 0o100000 | mode and info.date_time == (2026, 12, 2, 6, 14, 42)
        by_name = {i.filename: i for i in infos}
    # what deflate cannot shrink is stored; the sources are deflated tighter than auditwheel's level 9
    assert by_name["pkg/weights.bin"].compress_type == zipfile.ZIP_STORED
    assert by_name["pkg/empty.py"].compress_size == 0
    source = by_name["pkg/__init__.py"]
    assert source.compress_type == zipfile.ZIP_DEFLATED
    assert source.compress_size < before["pkg/__init__.py"].compress_size
    assert wheel.stat().st_size < size_before
    assert not list(tmp_path.glob("*.part"))
