"""The plan of the package holds: the import contracts of pyproject.toml, and no import cycle."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative): each is
    a set of modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
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


def _edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def test_no_import_cycle_between_any_two_modules() -> None:
    """No two modules of hmsengine import each other, even through others, lazily or only for
    type checking (package __init__ modules included); a planted cycle is found."""
    graph = grimp.build_graph("hmsengine")
    assert len(graph.modules) > 80
    assert cycles(_edges(graph)) == []
    # Positive control: storage importing the engine's face closes a loop through the engine.
    graph.add_import(importer="hmsengine.storage.codec", imported="hmsengine.engine")
    found = cycles(_edges(graph))
    assert len(found) == 1 and {"hmsengine.storage.codec", "hmsengine.engine"} <= set(found[0])


def test_cycle_finder_on_small_graphs() -> None:
    """The component finder reports exactly the loops of a graph (self-check of the test)."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"c"}}) == [["c", "d"], ["a", "b"]]


def test_import_contracts_hold() -> None:
    """lint-imports keeps every contract of pyproject.toml: layers, never-trio, kernels alone,
    only the engine's public face above it, no cycles between siblings."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 kept, 0 broken" in done.stdout
