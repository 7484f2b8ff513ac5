"""Hostile state: a cache file, a worker file, a blob, a layout folder or the root itself made hostile (a FIFO,
``/dev/zero``, a link out of the root, damaged JSON, a wrong mode), and the umask the files are written under.
Each expects a correct result or a heal with a WARNING."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tools.hostile_cases.context import CORRECT, HEALED, Ctx
from tools.hostile_cases.registry import case


def hostile_file(path: Path, kind: str, ctx: Ctx) -> None:
    from tests.damaged_files import JSON_DAMAGES, damage_json, make_hostile

    if kind in JSON_DAMAGES:
        damage_json(path, kind)
    else:
        make_hostile(path, kind, ctx.outside)


def _file_kinds() -> list[str]:
    from tests.damaged_files import HOSTILE_KINDS, JSON_DAMAGES

    return list(HOSTILE_KINDS) + [k for k in JSON_DAMAGES if k not in HOSTILE_KINDS]


def _cache_file_case(target: str, kind: str) -> None:
    """A hostile file in place of one the cache reads: the entry, the single-device index or a profile."""

    def fn(ctx: Ctx) -> None:
        if target == "profile":  # a stored profile is read on a miss of the placement cache
            ctx.populate(profile="now")
            shutil.rmtree(ctx.root / "placements")
            (path,) = ctx.root.glob("profiles/model-*.json")
        else:
            ctx.populate()
            (index,) = ctx.root.glob("placements/single-*.json")
            if target == "entry":  # read once the single-device index is gone
                index.unlink()
                (path,) = ctx.root.glob("placements/placement-*.json")
            else:
                path = index
        hostile_file(path, kind, ctx)
        ctx.arm()
        ctx.compile()
        ctx.stop_workers()
        ctx.heals()
        ctx.stop_workers()

    case(f"cache/{target}/{kind}", f"hostile {target} file")(fn)


def _worker_file_case(target: str, kind: str) -> None:
    """A hostile file in a model's worker folder, met when the next start spawns a worker."""

    def fn(ctx: Ctx) -> None:
        ctx.populate(profile="background")
        folder = ctx.worker_folder()
        path = folder / {"failure": "failure.json", "lock": "lock", "log": "worker.log"}[target]
        if target == "failure":
            path.write_text(json.dumps({"failures": 1, "reason": "earlier", "reported": True}))
        if target == "log" and not path.exists():
            path.write_text("earlier lines\n")
        if kind == "oversize":
            path.write_text(json.dumps({"failures": 1, "padding": "x" * (1 << 20)}))
        elif kind == "not_json":
            path.write_text("{not json")
        else:
            hostile_file(path, kind, ctx)
        ctx.arm()
        ctx.compile(profile="background")
        ctx.stop_workers()
        ctx.check(all(os.path.isfile(p) and not os.path.islink(p) for p in folder.iterdir() if p.name != "lock"),
                  f"non-regular files left in the worker folder: {sorted(p.name for p in folder.iterdir())}")

    case(f"cache/worker-{target}/{kind}", f"hostile worker {target}")(fn)


def _blob_case(kind: str) -> None:
    def fn(ctx: Ctx) -> None:
        ctx.populate(cache_blobs=True)
        blobs = list(ctx.root.glob("openvino/*.blob"))
        if not blobs:
            raise RuntimeError("probe setup: no blob was written")
        if kind == "garbage":
            os.chmod(blobs[0], 0o600)
            blobs[0].write_bytes(b"not a blob at all" * 100)
        else:
            hostile_file(blobs[0], kind, ctx)
        ctx.arm()
        ctx.compile(cache_blobs=True)
        ctx.heals(cache_blobs=True)

    case(f"cache/blob/{kind}", "hostile blob")(fn)


def _layout_case(folder: str, kind: str) -> None:
    """A layout folder of the root that is a link out of the root, a file or a FIFO."""

    def fn(ctx: Ctx) -> None:
        from tests.damaged_files import make_hostile

        ctx.root.mkdir(mode=0o700)
        path = ctx.root / folder
        if kind == "file":
            path.write_text("{}")
        else:
            make_hostile(path, {"link_out": "outside_dir", "fifo": "fifo", "dev_zero": "dev_zero"}[kind], ctx.outside)
        ctx.arm()
        kw = {"cache_blobs": True} if folder == "openvino" else {"profile": "background"} if folder == "workers" \
            else {"profile": "now"} if folder == "profiles" else {"strategy": "heavy_ops"} if folder == "support" \
            else {}  # each folder met by a call that writes it (an explicit strategy stores the support matrix)
        ctx.compile(**kw)
        ctx.stop_workers()
        ctx.check(not os.path.islink(path), f"{folder} is still a link")

    case(f"layout/{folder}/{kind}", "hostile layout folder")(fn)


def _root_case(kind: str) -> None:
    def fn(ctx: Ctx) -> None:
        expect_cache = kind in ("symlink_to_private", "missing_parents")
        if kind in ("world_writable", "group_writable", "other_owner", "read_only", "sticky_world"):
            ctx.root.mkdir(mode=0o700)
            mode = {"world_writable": 0o777, "group_writable": 0o770, "read_only": 0o500,
                    "sticky_world": 0o1777}.get(kind)
            if kind == "other_owner":
                os.chown(ctx.root, 65534, 65534)
            else:
                os.chmod(ctx.root, mode)
        elif kind == "symlink_to_private":
            real = ctx.base / "real_root"
            real.mkdir(mode=0o700)
            ctx.root.symlink_to(real)
            ctx.also_root.append(real)
        elif kind == "symlink_to_dev_zero":
            ctx.root.symlink_to("/dev/zero")
        elif kind == "file":
            ctx.root.write_text("not a folder")
        elif kind == "fifo":
            os.mkfifo(ctx.root)
        elif kind == "missing_parents":
            ctx.root = ctx.base / "deep" / "er" / "root"
            ctx.also_root.append(ctx.base / "deep")
        elif kind == "parent_is_file":
            (ctx.base / "blocker").write_text("x")
            ctx.root = ctx.base / "blocker" / "root"
        ctx.arm()
        ctx.compile(profile="background")
        ctx.stop_workers()
        if expect_cache:
            ctx.check(bool(list(Path(os.path.realpath(ctx.root)).glob("placements/*.json"))), "nothing was cached")
        if kind in ("world_writable", "group_writable", "sticky_world"):
            ctx.check(not os.path.exists(ctx.root / "placements"), "a refused root was written")
        if kind == "other_owner":
            ctx.check(not os.path.exists(ctx.root / "placements"), "another user's root was written")

    case(f"root/{kind}", "hostile root")(fn)


def _umask_case(umask: int, how: str) -> None:
    def fn(ctx: Ctx) -> None:
        os.umask(umask)
        ctx.arm()
        if how == "profile_now":
            ctx.compile(profile="now")
        elif how == "blobs":
            ctx.compile(cache_blobs=True)
            ctx.compile(ctx.model(blocks=2), cache_blobs=True)
        elif how == "background":
            ctx.compile(profile="background")
        else:
            ctx.compile()
            ctx.compile()
        ctx.stop_workers(clean=False)
        for path in [ctx.root, *ctx.root.rglob("*")]:
            mode = os.lstat(path).st_mode & 0o7777
            want = 0o700 if path.is_dir() else 0o600
            ctx.check(mode == want, f"{path.relative_to(ctx.base)} is {mode:o}, not {want:o}")

    case(f"umask/{umask:03o}/{how}", "umask", {CORRECT, HEALED})(fn)




def define() -> None:
    for target in ("entry", "index", "profile"):
        # a profile is read by the same store as an entry: its JSON damages are sampled (each case profiles, ~5 s)
        for kind in _file_kinds() if target != "profile" else [*_file_kinds()[:10], "not_json", "nested_deeply"]:
            _cache_file_case(target, kind)
    for target, kinds in (("failure", ("fifo", "dev_zero", "hard_link", "outside_file", "oversize", "not_json")),
                          ("lock", ("fifo", "dev_zero", "hard_link", "outside_file")),
                          ("log", ("fifo", "dev_zero", "hard_link", "outside_file", "mode_0666"))):
        for kind in kinds:
            _worker_file_case(target, kind)
    for kind in ("fifo", "dev_zero", "hard_link", "outside_file", "garbage"):
        _blob_case(kind)
    for folder in ("placements", "profiles", "support", "openvino", "workers"):
        for kind in ("link_out", "file", "fifo"):
            _layout_case(folder, kind)
    for kind in ("world_writable", "group_writable", "sticky_world", "read_only", "symlink_to_private",
                 "symlink_to_dev_zero", "file", "fifo", "missing_parents", "parent_is_file"):
        _root_case(kind)
    if os.geteuid() == 0:  # chown to another user needs root
        _root_case("other_owner")
    for umask in (0o000, 0o077):
        for how in ("default", "profile_now", "blobs", "background"):
            _umask_case(umask, how)

