"""The import graph of ``acksim``: no cycles, and the layers import one way.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import`` of
an ``acksim`` module anywhere in a module (at the top, inside functions, under
``if TYPE_CHECKING:``) is an edge, a relative import resolved against its package, an
imported package its ``__init__``. The layers, bottom to top::

    acksim (the package), acksim.history, acksim.outcome, acksim.printable, acksim.collector,
        acksim.invariant_names, acksim.interrupts, acksim.model.* (the code under test),
        acksim.scenarios (the bundled scenario files)
    acksim.scenario
    acksim.world | acksim.judges      (side by side: neither imports the other)
    acksim.report
    acksim.search, acksim.capacity, acksim.live, acksim.pytest_plugin
    acksim.cli, acksim.__main__

A module imports modules of its own layer or lower only.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# where each part of the ``acksim`` namespace lives (pyproject.toml's ``package-dir``)
FOLDERS = {"acksim": ROOT / "sim", "acksim.model": ROOT / "model", "acksim.scenarios": ROOT / "scenarios"}

BOTTOM = ("acksim", "acksim.history", "acksim.outcome", "acksim.printable", "acksim.collector",
          "acksim.invariant_names", "acksim.interrupts", "acksim.model", "acksim.scenarios")
LAYERS: tuple[tuple[str, ...], ...] = (
    BOTTOM,
    ("acksim.scenario",),
    ("acksim.world", "acksim.judges"),
    ("acksim.report",),
    ("acksim.search", "acksim.capacity", "acksim.live", "acksim.pytest_plugin"),
    ("acksim.cli", "acksim.__main__"),
)
# layers side by side that must not import each other
APART = (("acksim.judges", "acksim.world"), ("acksim.world", "acksim.judges"))
# the packages that must never import the command line
NOT_CLI = ("acksim.search", "acksim.pytest_plugin", "acksim.judges")

# edges the rules above allow by name (none today: keep it so)
KNOWN_UPWARD_EDGES: frozenset[tuple[str, str]] = frozenset()
KNOWN_CYCLE_EDGES: frozenset[tuple[str, str]] = frozenset()


def modules() -> dict[str, Path]:
    """Every module of the namespace by dotted name (a package by its own name) -> its file."""
    found = {}
    for prefix, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join((prefix, *parts))
            found[name] = path
    return found


MODULES = modules()


def _known(name: str) -> str | None:
    """``name`` if it is a module, else its nearest enclosing module (an attribute's owner)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, path: Path) -> set[str]:
    """The acksim modules that module ``name`` (file ``path``) imports anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            # ``from acksim.world import core`` imports a module; ``from acksim.x import f`` an attribute of one
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "acksim" or target.startswith("acksim."):
                module = _known(target)
                if module is not None and module != name:
                    found.add(module)
    return found


GRAPH: dict[str, set[str]] = {name: imports_of(name, path) for name, path in MODULES.items()}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer(name: str) -> int:
    """The layer of module ``name`` (0 the bottom): its longest matching prefix in ``LAYERS``."""
    best, depth = 0, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if _within(name, prefix) and prefix.count(".") > depth:
                best, depth = i, prefix.count(".")
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module (Tarjan's
    algorithm, iterative), each sorted; sorted by their first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
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
    return sorted(found)


def _describe(component: list[str], graph: dict[str, set[str]]) -> str:
    members = set(component)
    return "\n".join(f"  {m} -> {', '.join(sorted(graph[m] & members))}" for m in component)


def test_the_graph_is_read_from_every_module():
    assert {"acksim", "acksim.outcome", "acksim.world.core", "acksim.judges.summary", "acksim.cli.main",
            "acksim.model.processor"} <= set(MODULES)
    assert "acksim.outcome" in GRAPH["acksim.judges.invariants"]
    assert "acksim.world.sandbox.supervised" in GRAPH["acksim.world.core"]  # an import inside a function counts


def test_the_cycle_finder_names_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle():
    graph = {m: {t for t in targets if (m, t) not in KNOWN_CYCLE_EDGES} for m, targets in GRAPH.items()}
    found = cycles(graph)
    assert not found, "import cycles (each edge listed within its cycle):\n" + "\n\n".join(
        _describe(c, graph) for c in found)


def test_the_known_edges_still_exist():
    """An edge listed as known that is gone must leave its list, so the lists only shrink."""
    edges = {(m, t) for m, targets in GRAPH.items() for t in targets}
    assert KNOWN_UPWARD_EDGES <= edges, KNOWN_UPWARD_EDGES - edges
    assert KNOWN_CYCLE_EDGES <= edges, KNOWN_CYCLE_EDGES - edges


def test_layers_import_one_way():
    upward = sorted((m, t) for m, targets in GRAPH.items() for t in targets
                    if (layer(t) > layer(m) or any(_within(m, a) and _within(t, b) for a, b in APART))
                    and (m, t) not in KNOWN_UPWARD_EDGES)
    assert not upward, "imports against the layers:\n" + "\n".join(
        f"  {m} (layer {layer(m)}) -> {t} (layer {layer(t)})" for m, t in upward)


def test_search_plugin_and_judges_never_import_the_command_line():
    found = sorted((m, t) for m, targets in GRAPH.items() for t in targets
                   if any(_within(m, p) for p in NOT_CLI) and _within(t, "acksim.cli")
                   and (m, t) not in KNOWN_UPWARD_EDGES)
    assert not found, found


def test_the_judges_load_without_the_world():
    code = ("import acksim.judges.invariants, acksim.judges.summary, acksim.judges.fanout, sys; "
            "assert not {'simpy','greenlet','time_machine'} & set(sys.modules) "
            "and not any(m.startswith('acksim.world') for m in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=540)
    assert result.returncode == 0, result.stderr


def test_every_judge_module_loads_without_the_world_or_the_command_line():
    code = ("import sys, importlib\n"
            "for name in ('acksim.judges', 'acksim.judges.invariants', 'acksim.judges.summary', 'acksim.judges.slo',\n"
            "             'acksim.judges.series', 'acksim.judges.hazards', 'acksim.judges.fanout'):\n"
            "    importlib.import_module(name)\n"
            "heavy = sorted({'simpy', 'greenlet', 'time_machine'} & set(sys.modules))\n"
            "ours = sorted(m for m in sys.modules if m.startswith(('acksim.world', 'acksim.cli')))\n"
            "print(heavy, ours)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=540)
    assert (result.returncode, result.stdout) == (0, "[] []\n"), result.stderr
