"""Ways a file on disk can be damaged, shared by the tests of every loader.

Each JSON damage is a function ``text -> text`` (or bytes) applied to a good
file; :func:`damaged_policy` writes a damaged copy of the shipped policy.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

JSON_DAMAGES = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "not_json": lambda text: "{not json",
    "a_list": lambda text: "[1, 2, 3]",
    "null": lambda text: "null",
    "nested_deeply": lambda text: "[" * 200_000 + "]" * 200_000,
    "nested_object": lambda text: '{"a": ' * 100_000 + "1" + "}" * 100_000,
    "not_utf8": lambda text: b"\xff\xfe\x00garbage\x80",
    "wrong_field_types": lambda text: json.dumps({k: 5 for k in json.loads(text)}),
    "missing_fields": lambda text: "{}",
}


def damage_json(path: Path, kind: str) -> None:
    """Apply one of :data:`JSON_DAMAGES` (or ``"directory"``: replace the file by a directory) to ``path``."""
    if kind == "directory":
        path.unlink()
        path.mkdir()
        return
    damaged = JSON_DAMAGES[kind](path.read_text())
    if isinstance(damaged, bytes):
        path.write_bytes(damaged)
    else:
        path.write_text(damaged)


POLICY_DAMAGES = ("truncated", "empty", "not_zip", "header_not_json", "header_a_list", "header_nested",
                  "config_missing", "config_wrong_type", "directory")


def damaged_policy(tmp_path: Path, kind: str) -> Path:
    """A copy of the shipped policy damaged in one of :data:`POLICY_DAMAGES` ways."""
    from ov_autoplace.policy.policy_file import HEADER_KEY, header_text
    from ov_autoplace.policy.pretrained import PRETRAINED_POLICY

    path = tmp_path / f"policy_{kind}.npz"
    data = PRETRAINED_POLICY.read_bytes()
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "not_zip":
        path.write_bytes(b"this is not a zip file at all")
    elif kind == "directory":
        path.mkdir()
    else:
        with np.load(PRETRAINED_POLICY, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        header = json.loads(header_text(arrays[HEADER_KEY]))
        text = {
            "header_not_json": "{not json",
            "header_a_list": "[1, 2]",
            "header_nested": "[" * 100_000 + "]" * 100_000,
            "config_missing": json.dumps({k: v for k, v in header.items() if k != "config"}),
            "config_wrong_type": json.dumps({**header, "config": 5}),
        }[kind]
        arrays[HEADER_KEY] = np.array(text)
        with open(path, "wb") as f:
            np.savez(f, **arrays)
    return path


#: Hostile things in place of a file ov_autoplace reads or writes (``make_hostile``): reads that block, never end,
#: or land outside the cache root, and modes no file of ours has.
HOSTILE_KINDS = ("fifo", "dev_zero", "etc_passwd", "outside_file", "outside_dir", "hard_link", "oversize",
                 "mode_0666", "mode_0000", "directory")


def make_hostile(path: Path, kind: str, outside: Path, *, oversize_bytes: int = 17 << 20) -> None:
    """Replace ``path`` by one of :data:`HOSTILE_KINDS`; ``outside`` is a folder outside the cache root holding
    ``precious.txt`` (what a link points at; it must stay as it is)."""
    import os

    old = path.read_bytes() if path.is_file() and not path.is_symlink() else b"{}"
    if os.path.lexists(path):
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path)
        else:
            path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev_zero":
        path.symlink_to("/dev/zero")
    elif kind == "etc_passwd":
        path.symlink_to("/etc/passwd")
    elif kind == "outside_file":
        path.symlink_to(outside / "precious.txt")
    elif kind == "outside_dir":
        path.symlink_to(outside)
    elif kind == "hard_link":
        os.link(outside / "precious.txt", path)
    elif kind == "oversize":  # valid JSON past every cap of a file of ours (16 MiB for the largest read whole)
        path.write_text(json.dumps({"padding": "x" * oversize_bytes}))
    elif kind in ("mode_0666", "mode_0000"):
        path.write_bytes(old)
        os.chmod(path, 0o666 if kind == "mode_0666" else 0)
    elif kind == "directory":
        path.mkdir()
        (path / "inside").write_text("{}")
    else:
        raise ValueError(f"unknown hostile kind {kind!r}; expected one of {HOSTILE_KINDS}")
