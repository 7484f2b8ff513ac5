"""One-way layering: the runtime path never imports training, baselines or the benchmark.

The runtime path is load -> graph -> policy inference -> legalize -> placement
-> cache -> HETERO compile. An inference app pays only for that: the check
runs ``compile_model`` with the default (HSDAG policy, measured now) in a fresh
interpreter and lists what got imported; a second check walks every import
statement of those modules (lazy ones inside functions too) and finds no
cycle through them.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import ov_autoplace
from ov_autoplace.devices.testbed import make_testbed
from ov_autoplace.devices.timing import random_inputs

FORBIDDEN = ("ov_autoplace_lab.training", "ov_autoplace_lab.baselines", "ov_autoplace_lab.bench", "ov_autoplace_lab.commands.train_command",
             "ov_autoplace.cli.main", "ov_autoplace_lab.viz", "torch")

_RUNTIME_SCRIPT = """
import json, sys
import numpy as np
import ov_autoplace as oa
from tests import synthetic_graphs as sg
tb = make_testbed(like_for_like=True)
model = sg.residual()
compiled = oa.compile_model(model, tb.hetero, core=tb.core, use_cache=False, profile="now")
dynamic = oa.compile_model(sg.dynamic_attention(), tb.hetero, core=tb.core, use_cache=False, profile="now")
compiled(random_inputs(compiled))
dynamic(np.zeros((2, 5, 32), dtype=np.float32))
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("ov_autoplace", "torch")))))
"""


def _runtime_modules() -> list[str]:
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", _RUNTIME_SCRIPT], cwd=root, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_compile_model_imports_no_training_baselines_or_bench():
    modules = _runtime_modules()
    assert "ov_autoplace.api" in modules and "ov_autoplace.policy.numpy_policy" in modules  # the policy ran
    leaked = [m for m in modules if m.startswith(FORBIDDEN)]
    assert leaked == [], f"the runtime path imported {leaked}"


def _imports_of(path: Path, module: str, is_package: bool, known: set[str]) -> set[str]:
    """Every ov_autoplace module ``module`` imports, at the top or inside functions (not under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                 for n in ast.walk(node)}
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
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
    return {m for m in found if m in known and m != module and m != "ov_autoplace"}  # the root package: re-exports


def _import_graph() -> dict[str, set[str]]:
    root = Path(ov_autoplace.__file__).resolve().parent
    files = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        files[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    known = set(files)
    return {m: _imports_of(p, m, pkg, known) for m, (p, pkg) in files.items()}


def _cycle_through(graph: dict[str, set[str]], start: str, allowed: set[str]) -> list[str] | None:
    """A path start -> ... -> start inside ``allowed``, or None."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for nxt in graph[node]:
            if nxt == start:
                return path + [start]
            if nxt in allowed and nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


def test_runtime_modules_import_nothing_forbidden_even_lazily():
    graph = _import_graph()
    runtime = {m for m in _runtime_modules() if m in graph}
    # (search_budget's door, api -> policy.search_strategy, is allowed: it is not itself a forbidden module,
    # and it reaches policy.train only from there.)
    for module in sorted(runtime):
        for dep in graph[module]:
            assert not dep.startswith(FORBIDDEN), f"{module} imports {dep}"


def test_no_import_cycles_through_api_or_legalize():
    graph = _import_graph()
    everything = set(graph)
    for start in ("ov_autoplace.api", "ov_autoplace.placement.legalizer", "ov_autoplace.costmodel.cost_terms",
                  "ov_autoplace_lab.training.env", "ov_autoplace.compile.placed_compile", "ov_autoplace.model.dynamic_placement"):
        cycle = _cycle_through(graph, start, everything)
        assert cycle is None, " -> ".join(cycle)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
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


def test_no_import_cycle_anywhere_in_the_package():
    """Every module, lazy imports included: the import graph is acyclic (modules that need each other share a
    lower module instead, e.g. ``cli_args`` for ``cli`` and ``picture_commands``)."""
    assert _cycles(_import_graph()) == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
