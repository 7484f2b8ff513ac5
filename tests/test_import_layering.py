"""The architecture as the code draws it: rooms in layers, one direction, no cycles, the runtime without the lab.

The import graph is read from the source (every ``import`` statement, lazy ones inside functions included,
``TYPE_CHECKING`` blocks excluded) of both packages: the runtime ``ov_autoplace`` and the lab
``ov_autoplace_lab``. The runtime's modules sit in rooms (its subpackages, or a top-level module) and the rooms
in layers, from the facade (``ov_autoplace/__init__.py``) down to ``graph`` / ``devices`` and the base
(``errors``, the native loader). The checks:

* no import cycle between modules, anywhere in either package;
* every import goes down (or stays in its room; type-only imports too): 0 imports from a lower layer back up, and the two rooms of
  the lowest shared layer (``graph``, ``devices``) do not import each other;
* every runtime module is in a room of ``LAYERS`` (a new room must be given its place here);
* the runtime never imports the lab (the lab plugs in through entry points), and ``compile_model`` in a fresh
  interpreter imports neither the lab nor torch;
* every runtime module is reachable from the runtime's entry points (nothing ships that no app can reach).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import ov_autoplace
import ov_autoplace_lab

RUNTIME, LAB = "ov_autoplace", "ov_autoplace_lab"

#: Top to bottom. A room is a subpackage of ov_autoplace or a top-level module; imports only go down a layer
#: (or stay in their room). The facade re-exports the public API and may import anything.
LAYERS: list[tuple[str, ...]] = [
    ("<facade>", "run"),
    ("cli",),
    ("api", "saved_model", "call_request", "routing"),
    ("decision",),
    ("compile",),
    ("strategies",),
    ("policy",),
    ("measuring", "search"),
    ("costmodel",),
    ("cache",),
    ("placement",),
    ("model",),
    ("graph", "devices"),
    ("progress", "_version", "_build_info", "_native_loader", "errors", "reentry"),
]
#: Rooms of one layer that may import each other (the base: the loader raises the typed errors).
SHARED_LAYER_OK = {"progress", "_version", "_build_info", "_native_loader", "errors", "reentry", "api", "saved_model",
                   "call_request", "routing"}

#: What an app or the CLI starts from: the package, the commands, the background worker (run as a process).
RUNTIME_ENTRY_POINTS = (RUNTIME, f"{RUNTIME}.cli.main", f"{RUNTIME}.decision.background_worker", f"{RUNTIME}.run")


def _modules(package) -> dict[str, tuple[Path, bool]]:
    root = Path(package.__file__).resolve().parent
    found = {}
    for path in root.rglob("*.py"):
        parts = [package.__name__, *path.relative_to(root).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imports_of(path: Path, module: str, is_package: bool, known: set[str], type_checking: bool) -> set[str]:
    """The modules of either package that ``module`` imports (under TYPE_CHECKING too when ``type_checking``)."""
    tree = ast.parse(path.read_text())
    type_only = set() if type_checking else {
        id(n) for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = module.split(".") if is_package else module.split(".")[:-1]
            base = parts[:len(parts) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            submodules = {f"{target}.{a.name}" for a in node.names} & known
            found.update(submodules)
            if len(submodules) < len(node.names):  # names that are not modules come from the package itself
                found.add(target)
    return {m for m in found if m in known and m != module}


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports. Cycles are run-time matters (``type_checking=False``); the direction
    of the layers holds for the imports only type checkers read too (``True``)."""
    files = {**_modules(ov_autoplace), **_modules(ov_autoplace_lab)}
    known = set(files)
    return {m: _imports_of(p, m, pkg, known, type_checking) for m, (p, pkg) in files.items()}


def room_of(module: str) -> str:
    """``ov_autoplace.placement.legalizer`` -> ``placement``; ``ov_autoplace`` -> ``<facade>``; the lab: ``<lab>``."""
    parts = module.split(".")
    if parts[0] == LAB:
        return "<lab>"
    return parts[1] if len(parts) > 1 else "<facade>"


def _layer_index() -> dict[str, int]:
    return {room: i for i, layer in enumerate(LAYERS) for room in layer}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every runtime import that goes up a layer, or sideways between two rooms of one layer."""
    layer = _layer_index()
    bad = []
    for module, deps in graph.items():
        if room_of(module) == "<lab>":
            continue
        for dep in deps:
            a, b = room_of(module), room_of(dep)
            if a == b or a == "<facade>":
                continue
            if b == "<lab>":
                bad.append(f"{module} -> {dep} (the runtime never imports the lab)")
            elif layer[b] < layer[a]:
                bad.append(f"{module} -> {dep} (layer {layer[a]} {a} imports layer {layer[b]} {b})")
            elif layer[b] == layer[a] and not {a, b} <= SHARED_LAYER_OK:
                bad.append(f"{module} -> {dep} ({a} and {b} share a layer and do not import each other)")
    return sorted(bad)


def test_no_import_cycle_anywhere_in_either_package():
    assert cycles(import_graph()) == []


def test_every_runtime_room_has_a_layer():
    layer = _layer_index()
    rooms = {room_of(m) for m in import_graph() if room_of(m) != "<lab>"}
    assert sorted(rooms - set(layer)) == [], "give the new room its place in LAYERS (docs/architecture.md)"


def test_runtime_imports_only_go_down_and_never_into_the_lab():
    """Type-only imports included: ``costmodel`` names no strategy even for a type checker."""
    assert upward_imports(import_graph(type_checking=True)) == []


def test_every_runtime_module_is_reachable_from_the_runtime_entry_points():
    graph = import_graph()
    seen, todo = set(), list(RUNTIME_ENTRY_POINTS)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # importing a.b.c imports a and a.b
        todo.extend(graph.get(module, ()))
    runtime = {m for m in graph if room_of(m) != "<lab>"}
    assert sorted(runtime - seen) == [], "modules no app or command reaches belong in the lab"


def test_the_checks_find_what_they_look_for():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    drawn = {"ov_autoplace.graph.arrays": {"ov_autoplace.api"}, "ov_autoplace.api": {"ov_autoplace_lab.viz"},
             "ov_autoplace.graph.op_kinds": {"ov_autoplace.devices.timing"}, "ov_autoplace.devices.timing": set(),
             "ov_autoplace_lab.viz": {"ov_autoplace.api"}}
    found = upward_imports(drawn)
    assert len(found) == 3 and "never imports the lab" in found[0] and "layer 12 graph imports layer 2 api" in found[1]


_RUNTIME_SCRIPT = """
import json, sys
import numpy as np
import ov_autoplace as oa
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.devices.timing import random_inputs
from tests import synthetic_graphs as sg
tb = make_testbed(like_for_like=True)
compiled = oa.compile_model(sg.residual(), tb.hetero, core=tb.core, use_cache=False, profile="now")
dynamic = oa.compile_model(sg.dynamic_attention(), tb.hetero, core=tb.core, use_cache=False, profile="now")
compiled(random_inputs(compiled))
dynamic(np.zeros((2, 5, 32), dtype=np.float32))
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("ov_autoplace", "torch")))))
"""


def test_compile_model_imports_neither_the_lab_nor_torch():
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", _RUNTIME_SCRIPT], cwd=root, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "ov_autoplace.api" in modules and "ov_autoplace.policy.numpy_policy" in modules  # the policy ran
    leaked = [m for m in modules if m.startswith((LAB, "torch"))]
    assert leaked == [], f"the runtime path imported {leaked}"
